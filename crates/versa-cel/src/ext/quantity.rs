//! Kubernetes' quantity library: `quantity(string)`, `isQuantity(string)` and the members
//! `sign` (a global function), `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub` (with a quantity or an
//! int), `compareTo`, `isGreaterThan`, `isLessThan`.
//!
//! Parsing is apimachinery's `resource.ParseQuantity`: an optional sign, digits with an optional
//! fraction, and a suffix — binary (`Ki` … `Ei`), decimal SI (`n u m k M G T P E`) or a decimal
//! exponent (`e3`, `E-2`); its three error texts. The value is kept exactly, in nano units:
//! like Kubernetes, values are rounded up (away from zero) to the nearest nano, and binary-SI
//! and exponent quantities are capped at 2^63-1. Numbers too large for that representation
//! (beyond about 10^29) are refused as not numeric. Parsing charges 0.1 per code point; the
//! members charge 1.

use std::cmp::Ordering;
use std::fmt;

use super::{Opaque, QUANTITY_TYPE, Res, as_opaque, charged, opaque, parse_string, text};
use crate::eval::{EvalError, Interp, no_overload};
use crate::types::Type;
use crate::value::Value;

const NANO: i128 = 1_000_000_000;
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

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let q = || Type::Opaque(QUANTITY_TYPE);
    add("quantity", false, vec![Type::String], q());
    add("isQuantity", false, vec![Type::String], Type::Bool);
    // Kubernetes declares `sign` as a global function, not a member: `sign(quantity('-1'))`.
    add("sign", false, vec![q()], Type::Int);
    add("isInteger", true, vec![q()], Type::Bool);
    add("asInteger", true, vec![q()], Type::Int);
    add("asApproximateFloat", true, vec![q()], Type::Double);
    for f in ["add", "sub"] {
        add(f, true, vec![q(), q()], q());
        add(f, true, vec![q(), Type::Int], q());
    }
    add("isGreaterThan", true, vec![q(), q()], Type::Bool);
    add("isLessThan", true, vec![q(), q()], Type::Bool);
    add("compareTo", true, vec![q(), q()], Type::Int);
}

fn quantity_of(v: &Value<'_>) -> Option<Quantity> {
    match as_opaque(v) {
        Some(Opaque::Quantity(q)) => Some(*q),
        _ => None,
    }
}

pub(crate) fn call<'a>(
    interp: &mut Interp<'a, '_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    match (function, member) {
        ("quantity" | "isQuantity", false) => {
            let s = args.first().and_then(text)?;
            Some(parse_string(interp, &args[0], function == "isQuantity", || parse(s), Opaque::Quantity))
        }
        ("sign", false) => {
            let q = args.first().and_then(quantity_of)?;
            Some(charged(interp, 1, || member_call(function, q, &[])))
        }
        (
            "isInteger" | "asInteger" | "asApproximateFloat" | "add" | "sub" | "isGreaterThan" | "isLessThan"
            | "compareTo",
            true,
        ) => {
            let q = args.first().and_then(quantity_of)?;
            Some(charged(interp, 1, || member_call(function, q, &args[1..])))
        }
        _ => None,
    }
}

fn member_call<'a>(function: &str, q: Quantity, rest: &[Value<'a>]) -> Res<'a> {
    let overflow = || EvalError::new("quantity overflow");
    let as_int = |q: Quantity| (q.nanos % NANO == 0).then(|| i64::try_from(q.nanos / NANO).ok()).flatten();
    let other = |v: &Value<'_>| match v {
        Value::Int(i) => i128::from(*i).checked_mul(NANO).map(|nanos| Quantity { nanos }),
        v => quantity_of(v),
    };
    match (function, rest) {
        ("sign", []) => Ok(Value::Int(q.nanos.signum() as i64)),
        ("isInteger", []) => Ok(Value::Bool(as_int(q).is_some())),
        ("asInteger", []) => as_int(q).map(Value::Int).ok_or_else(|| EvalError::new("cannot convert value to integer")),
        ("asApproximateFloat", []) => Ok(Value::Double(q.nanos as f64 / NANO as f64)),
        ("add" | "sub", [v]) => {
            let o = other(v).ok_or_else(|| no_overload(function))?;
            let r = if function == "add" { q.nanos.checked_add(o.nanos) } else { q.nanos.checked_sub(o.nanos) };
            Ok(opaque(Opaque::Quantity(Quantity { nanos: r.ok_or_else(overflow)? })))
        }
        ("isGreaterThan" | "isLessThan" | "compareTo", [v]) => {
            let o = quantity_of(v).ok_or_else(|| no_overload(function))?;
            let ord = q.cmp(&o);
            Ok(match function {
                "isGreaterThan" => Value::Bool(ord == Ordering::Greater),
                "isLessThan" => Value::Bool(ord == Ordering::Less),
                _ => Value::Int(ord as i64),
            })
        }
        _ => Err(no_overload(function)),
    }
}
