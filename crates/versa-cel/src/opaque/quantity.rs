//! `kubernetes.Quantity` values (kube's `pkg/cel/quantity.go`): resource quantities parsed as
//! `resource.ParseQuantity` parses them, compared by value, written in canonical form.

use std::fmt;

pub(crate) const NANO: i128 = 1_000_000_000;
const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// A quantity's exact value, in units of 10^-9.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity {
    pub nanos: i128,
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
    Ok(Quantity { nanos: if positive { magnitude } else { -magnitude } })
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
