//! `kubernetes.Quantity` values (kube's `pkg/cel/quantity.go`): resource quantities parsed as
//! `resource.ParseQuantity` parses them, compared by value, written in canonical form.

use std::fmt;

pub(crate) const NANO: i128 = 1_000_000_000;
const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// A quantity's exact value, in units of 10^-9, and how Kubernetes would hold it.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    pub nanos: i128,
    /// apimachinery's `int64Amount` (value × 10^scale) when Kubernetes holds the quantity in one,
    /// `None` when it holds an `inf.Dec`. Only `AsInt64` (CEL's `asInteger`/`isInteger`) looks at
    /// it: it refuses every `inf.Dec` and every negative scale, even of a whole value (`1000m`).
    pub int: Option<(i64, i32)>,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Quantity {
    /// A whole number as `resource.NewQuantity` makes it.
    pub fn from_int(i: i64) -> Quantity {
        Quantity { nanos: i128::from(i) * NANO, int: Some((i, 0)) }
    }

    /// apimachinery's `Quantity.AsInt64`.
    pub fn as_int64(&self) -> Option<i64> {
        match self.int? {
            (value, 0) => Some(value),
            (_, scale) if scale < 0 => None,
            (value, scale) => value.checked_mul(10i64.checked_pow(scale as u32)?),
        }
    }

    /// apimachinery's `Quantity.Add` (`negate` for `Sub`): exact, held as an `int64Amount` while
    /// `int64Amount.Add` manages, else as an `inf.Dec`.
    pub fn add(&self, other: &Quantity, negate: bool) -> Option<Quantity> {
        let nanos = if negate { self.nanos.checked_sub(other.nanos)? } else { self.nanos.checked_add(other.nanos)? };
        let int = match (self.int, other.int) {
            (Some(a), Some((v, s))) => int_add(a, (if negate { v.wrapping_neg() } else { v }, s)),
            _ => None,
        };
        Some(Quantity { nanos, int })
    }
}

/// apimachinery's `int64Amount.Add`.
fn int_add((av, asc): (i64, i32), (bv, bsc): (i64, i32)) -> Option<(i64, i32)> {
    let scaled = |v: i64, by: i32| v.checked_mul(10i64.checked_pow(u32::try_from(by).ok()?)?);
    if bv == 0 {
        Some((av, asc))
    } else if av == 0 {
        Some((bv, bsc))
    } else if asc == bsc {
        Some((av.checked_add(bv)?, asc))
    } else if asc > bsc {
        Some((scaled(av, asc - bsc)?.checked_add(bv)?, bsc))
    } else {
        Some((av.checked_add(scaled(bv, bsc - asc)?)?, asc))
    }
}

/// Whether `ParseQuantity` takes its fast path (an `int64Amount`), and with what.
fn parsed_int(positive: bool, num: &str, denom: &str, exponent: i64, format: Format) -> Option<(i64, i32)> {
    let (precision, mut scale, mantissa) = match format {
        Format::BinarySi if exponent >= 0 && denom.is_empty() => {
            let mantissa = 1i64.checked_shl(u32::try_from(exponent).ok()?)?;
            (15 - num.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1, 0, mantissa)
        }
        Format::BinarySi => (-1, 0, 1),
        _ => (18 - (num.len() + denom.len()) as i64, exponent, 1),
    };
    if precision < 0 {
        return None;
    }
    scale -= denom.len() as i64;
    if scale < -9 {
        return None;
    }
    let digits = format!("{num}{denom}");
    let value: i64 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let result = value.checked_mul(mantissa)?;
    Some((if positive { result } else { -result }, i32::try_from(scale).ok()?))
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.nanos / NANO, (self.nanos % NANO).abs());
        if frac == 0 {
            write!(f, "{whole}")
        } else {
            let sign = if self.nanos < 0 && whole == 0 { "-" } else { "" };
            let frac = format!("{frac:09}");
            write!(f, "{sign}{whole}.{}", frac.trim_end_matches('0'))
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// apimachinery's `ParseQuantity`.
pub fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(ERR_FORMAT_WRONG);
    }
    let (positive, num, denom, suffix) = split(s)?;
    let (base, exponent, format) = interpret_suffix(suffix).ok_or(ERR_SUFFIX)?;
    let digits: String = format!("{num}{denom}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return Err(ERR_NUMERIC);
    }
    let d: i128 = if digits.is_empty() { 0 } else { digits.parse().map_err(|_| ERR_NUMERIC)? };
    let cap = (i128::from(i64::MAX)) * NANO;
    let capped = matches!(format, Format::BinarySi | Format::DecimalExponent);
    let overflow = || if capped { Ok(cap) } else { Err(ERR_NUMERIC) };
    // magnitude in nanos = ceil(d × base^exponent × 10^9 / 10^len(denom))
    let magnitude = if base == 2 {
        let scaled = d.checked_mul(1i128 << exponent.clamp(0, 60)).and_then(|v| v.checked_mul(NANO));
        match scaled {
            Some(v) => ceil_div_pow10(v, denom.len() as i64),
            None => overflow()?,
        }
    } else {
        let power = exponent + 9 - denom.len() as i64;
        if power >= 0 {
            match pow10(power).and_then(|p| d.checked_mul(p)) {
                Some(v) => v,
                None if d == 0 => 0,
                None => overflow()?,
            }
        } else {
            ceil_div_pow10(d, -power)
        }
    };
    let magnitude = if capped { magnitude.min(cap) } else { magnitude };
    let int = parsed_int(positive, num, denom, exponent, format);
    Ok(Quantity { nanos: if positive { magnitude } else { -magnitude }, int })
}

fn pow10(p: i64) -> Option<i128> {
    if !(0..=38).contains(&p) {
        return None;
    }
    10i128.checked_pow(p as u32)
}

/// `ceil(v / 10^p)` for `v >= 0`.
fn ceil_div_pow10(v: i128, p: i64) -> i128 {
    if p <= 0 {
        return v;
    }
    match pow10(p) {
        Some(div) => (v + div - 1) / div,
        None => i128::from(v > 0),
    }
}

/// apimachinery's `parseQuantityString`: sign, numerator, denominator and suffix.
fn split(s: &str) -> Result<(bool, &str, &str, &str), &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok((positive, "0", "", ""));
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = &s[num_start..pos];
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT_WRONG);
    }
    Ok((positive, num, denom, &s[suffix_start..]))
}

fn interpret_suffix(s: &str) -> Option<(u32, i64, Format)> {
    Some(match s {
        "" => (10, 0, Format::DecimalSi),
        "n" => (10, -9, Format::DecimalSi),
        "u" => (10, -6, Format::DecimalSi),
        "m" => (10, -3, Format::DecimalSi),
        "k" => (10, 3, Format::DecimalSi),
        "M" => (10, 6, Format::DecimalSi),
        "G" => (10, 9, Format::DecimalSi),
        "T" => (10, 12, Format::DecimalSi),
        "P" => (10, 15, Format::DecimalSi),
        "E" => (10, 18, Format::DecimalSi),
        "Ki" => (2, 10, Format::BinarySi),
        "Mi" => (2, 20, Format::BinarySi),
        "Gi" => (2, 30, Format::BinarySi),
        "Ti" => (2, 40, Format::BinarySi),
        "Pi" => (2, 50, Format::BinarySi),
        "Ei" => (2, 60, Format::BinarySi),
        _ => {
            let rest = s.strip_prefix('e').or_else(|| s.strip_prefix('E'))?;
            let e: i64 = rest.parse().ok()?;
            i32::try_from(e).ok()?;
            (10, e, Format::DecimalExponent)
        }
    })
}
