//! The CEL standard library at runtime: operators, `size`, the string functions, conversions,
//! timestamp and duration accessors, and the optional-value functions, each with cel-go's
//! semantics and error texts (`integer overflow`, `division by zero`, `no such key: k`,
//! `index out of bounds: 3`), and each charged its cel-go runtime cost before it runs.
//!
//! Dispatch is on the runtime values of the (already evaluated) arguments: the checker has
//! proved that an overload exists for the static types, and `dyn` values (int-or-string)
//! pick theirs here. A call no overload accepts is `no such overload`.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::ast::MAP_INSERT;
use crate::runtime::{CallContext, EvalError, no_overload};
use crate::time::{self, Timestamp};
use crate::value::{Map, MapKey, Value, comparable, compare, equals};

const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;

type Res<'a> = Result<Value<'a>, EvalError>;

fn scaled(size: u64, factor: f64) -> u64 {
    let c = (size as f64 * factor).ceil();
    if c >= u64::MAX as f64 { u64::MAX } else { c as u64 }
}

/// The standard operators and string functions, which the evaluator dispatches without a
/// name lookup (resolved per call node when the expression is compiled, see `plan`). No
/// Kubernetes library function has one of these names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    Not,
    Negate,
    Equals,
    NotEquals,
    Less,
    LessEquals,
    Greater,
    GreaterEquals,
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Index,
    OptIndex,
    In,
    /// `@in` on a constant list of scalars, which cel-go's planner turns into a set lookup
    /// that the cost tracker does not charge.
    InSet,
    Size,
    Contains,
    StartsWith,
    EndsWith,
    Matches,
}

impl Builtin {
    pub(crate) fn of(function: &str) -> Option<Builtin> {
        Some(match function {
            "!_" => Builtin::Not,
            "-_" => Builtin::Negate,
            "_==_" => Builtin::Equals,
            "_!=_" => Builtin::NotEquals,
            "_<_" => Builtin::Less,
            "_<=_" => Builtin::LessEquals,
            "_>_" => Builtin::Greater,
            "_>=_" => Builtin::GreaterEquals,
            "_+_" => Builtin::Add,
            "_-_" => Builtin::Subtract,
            "_*_" => Builtin::Multiply,
            "_/_" => Builtin::Divide,
            "_%_" => Builtin::Modulo,
            "_[_]" => Builtin::Index,
            "_[?_]" => Builtin::OptIndex,
            "@in" => Builtin::In,
            "size" => Builtin::Size,
            "contains" => Builtin::Contains,
            "startsWith" => Builtin::StartsWith,
            "endsWith" => Builtin::EndsWith,
            "matches" => Builtin::Matches,
            _ => return None,
        })
    }

    /// The function's name, as errors show it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Builtin::Not => "!_",
            Builtin::Negate => "-_",
            Builtin::Equals => "_==_",
            Builtin::NotEquals => "_!=_",
            Builtin::Less => "_<_",
            Builtin::LessEquals => "_<=_",
            Builtin::Greater => "_>_",
            Builtin::GreaterEquals => "_>=_",
            Builtin::Add => "_+_",
            Builtin::Subtract => "_-_",
            Builtin::Multiply => "_*_",
            Builtin::Divide => "_/_",
            Builtin::Modulo => "_%_",
            Builtin::Index => "_[_]",
            Builtin::OptIndex => "_[?_]",
            Builtin::In | Builtin::InSet => "@in",
            Builtin::Size => "size",
            Builtin::Contains => "contains",
            Builtin::StartsWith => "startsWith",
            Builtin::EndsWith => "endsWith",
            Builtin::Matches => "matches",
        }
    }
}

/// cel-go's `CostTracker.costCall` for the standard overloads.
fn call_cost(function: &str, args: &[Value<'_>]) -> u64 {
    let size = |i: usize| args.get(i).map_or(1, Value::cost_size);
    let is_text = |i: usize| matches!(args.get(i), Some(Value::String(_) | Value::Bytes(_)));
    if let Some(b) = Builtin::of(function) {
        return builtin_cost(b, args);
    }
    match function {
        "bytes" if is_text(0) => scaled(size(0), STRING_TRAVERSAL_COST_FACTOR),
        "string" if matches!(args.first(), Some(Value::Bytes(_))) => scaled(size(0), STRING_TRAVERSAL_COST_FACTOR),
        _ => 1,
    }
}

/// The cost of traversing a string of `size` code points (equality, ordering, `startsWith`).
pub(crate) fn traversal_cost(size: u64) -> u64 {
    scaled(size, STRING_TRAVERSAL_COST_FACTOR)
}

/// The cost of `s.matches(re)` for sizes of `s` and of the pattern.
pub(crate) fn matches_cost(size: u64, pattern_size: u64) -> u64 {
    scaled(1 + size, STRING_TRAVERSAL_COST_FACTOR).saturating_mul(scaled(pattern_size, REGEX_STRING_LENGTH_COST_FACTOR))
}

/// The cost of `s.contains(sub)`.
pub(crate) fn contains_cost(size: u64, sub_size: u64) -> u64 {
    scaled(size, STRING_TRAVERSAL_COST_FACTOR).saturating_mul(scaled(sub_size, STRING_TRAVERSAL_COST_FACTOR))
}

/// [`call_cost`] of a builtin.
fn builtin_cost(b: Builtin, args: &[Value<'_>]) -> u64 {
    let size = |i: usize| args.get(i).map_or(1, Value::cost_size);
    let is_text = |i: usize| matches!(args.get(i), Some(Value::String(_) | Value::Bytes(_)));
    match b {
        Builtin::StartsWith | Builtin::EndsWith => traversal_cost(size(0)),
        Builtin::InSet => 0,
        Builtin::In if matches!(args.get(1), Some(Value::List(_))) => size(1),
        // Kubernetes charges equality of its library types 1 (`_!=_` keeps cel-go's rule).
        Builtin::Equals if matches!(args.first(), Some(Value::Opaque(_))) => 1,
        Builtin::Equals | Builtin::NotEquals => traversal_cost(size(0).min(size(1))),
        Builtin::Less | Builtin::LessEquals | Builtin::Greater | Builtin::GreaterEquals if is_text(0) && is_text(1) => {
            traversal_cost(size(0).min(size(1)))
        }
        Builtin::Add if is_text(0) && is_text(1) => traversal_cost(size(0).saturating_add(size(1))),
        Builtin::Matches => matches_cost(size(0), size(1)),
        Builtin::Contains => contains_cost(size(0), size(1)),
        _ => 1,
    }
}

fn overflow() -> EvalError {
    EvalError::new("integer overflow")
}

fn uint_overflow() -> EvalError {
    EvalError::new("unsigned integer overflow")
}

fn conversion_error(from: &Value<'_>, to: &str) -> EvalError {
    EvalError::new(format!("type conversion error from '{}' to '{to}'", &*from.type_name()))
}

/// `cel.@mapInsert(map, key, value)` or `cel.@mapInsert(map, entries)`: the map with the new
/// entries, or cel-go's error for a key already present.
pub(crate) fn map_insert<'a>(map: Map<'a>, args: Vec<Value<'a>>, mut seen: Option<&mut HashSet<MapKey>>) -> Res<'a> {
    let mut args = args.into_iter();
    match (args.next(), args.next()) {
        (Some(Value::Map(entries)), None) => {
            let entries = entries.entry_refs();
            let mut out = map;
            for i in 0..entries.len() {
                let (k, v) = entries.get(i)?;
                out = out.insert(k, v, seen.as_deref_mut())?;
            }
            Ok(Value::Map(out))
        }
        (Some(k), Some(v)) => map.insert(k, v, seen).map(Value::Map),
        _ => Err(no_overload(MAP_INSERT)),
    }
}

/// Calls `function` (a member call when `member`: `args[0]` is the receiver).
pub(crate) fn call<'a>(calls: &mut CallContext<'_>, function: &str, member: bool, args: Vec<Value<'a>>) -> Res<'a> {
    // The Kubernetes libraries charge their own costs (some depend on the result).
    if let Some(result) = crate::ext::call(calls, function, member, &args) {
        return result;
    }
    if let Some(b) = Builtin::of(function) {
        return call_builtin(calls, b, &args);
    }
    calls.charge(call_cost(function, &args))?;
    let nso = || no_overload(function);
    if function == MAP_INSERT
        && let Some(Value::Map(m)) = args.first()
    {
        let map = m.clone();
        return map_insert(map, args.into_iter().skip(1).collect(), None);
    }
    match (function, args.as_slice()) {
        ("int" | "uint" | "double" | "string" | "bytes" | "bool" | "timestamp" | "duration", [v]) if !member => {
            convert(function, v)
        }
        ("dyn", [v]) => Ok(v.clone()),
        ("type", [v]) => Ok(Value::Type(v.type_name())),
        ("optional.of", [v]) => Ok(Value::Optional(Some(Arc::new(v.clone())))),
        ("optional.ofNonZeroValue", [v]) => {
            Ok(Value::Optional(if v.is_zero() { None } else { Some(Arc::new(v.clone())) }))
        }
        ("optional.none", []) => Ok(Value::Optional(None)),
        ("value", [Value::Optional(o)]) => match o {
            Some(v) => Ok((**v).clone()),
            None => Err(EvalError::new("optional.none() dereference")),
        },
        ("hasValue", [Value::Optional(o)]) => Ok(Value::Bool(o.is_some())),
        ("optional.unwrap" | "unwrapOpt", [Value::List(items)]) if member == (function == "unwrapOpt") => {
            let mut present = Vec::with_capacity(items.len());
            for i in 0..items.len() {
                match items.get(i)? {
                    Value::Optional(Some(v)) => present.push((*v).clone()),
                    Value::Optional(None) => {}
                    _ => return Err(nso()),
                }
            }
            Ok(Value::list(present))
        }
        (
            "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours"
            | "getMinutes" | "getSeconds" | "getMilliseconds",
            [Value::Timestamp(t), rest @ ..],
        ) if member && rest.len() <= 1 => {
            let offset = match rest {
                [Value::String(tz)] => time::zone_offset(tz, *t).map_err(|e| EvalError::new(e.to_string()))?,
                [] => 0,
                _ => return Err(nso()),
            };
            Ok(Value::Int(timestamp_field(function, *t, offset)))
        }
        ("getHours" | "getMinutes" | "getSeconds" | "getMilliseconds", [Value::Duration(d)]) if member => {
            let per = match function {
                "getHours" => 3_600_000_000_000,
                "getMinutes" => 60_000_000_000,
                "getSeconds" => 1_000_000_000,
                _ => 1_000_000,
            };
            Ok(Value::Int(d / per))
        }
        _ => Err(nso()),
    }
}

/// Calls a builtin on its evaluated operands (the receiver first for member calls), charging
/// its cost first.
pub(crate) fn call_builtin<'a>(calls: &mut CallContext<'_>, builtin: Builtin, args: &[Value<'a>]) -> Res<'a> {
    calls.charge(builtin_cost(builtin, args))?;
    let nso = || no_overload(builtin.name());
    match (builtin, args) {
        (Builtin::Not, [Value::Bool(b)]) => Ok(Value::Bool(!b)),
        (Builtin::Negate, [v]) => negate(v).ok_or_else(nso)?,
        (Builtin::Equals, [a, b]) => equals(a, b).map(Value::Bool),
        (Builtin::NotEquals, [a, b]) => equals(a, b).map(|e| Value::Bool(!e)),
        (Builtin::Less | Builtin::LessEquals | Builtin::Greater | Builtin::GreaterEquals, [a, b]) => {
            if !comparable(a, b) {
                return Err(nso());
            }
            let ord = compare(a, b);
            Ok(Value::Bool(match (builtin, ord) {
                (_, None) => false,
                (Builtin::Less, Some(o)) => o == Ordering::Less,
                (Builtin::LessEquals, Some(o)) => o != Ordering::Greater,
                (Builtin::Greater, Some(o)) => o == Ordering::Greater,
                (_, Some(o)) => o != Ordering::Less,
            }))
        }
        (Builtin::Add, [a, b]) => add(a, b).ok_or_else(nso)?,
        (Builtin::Subtract, [a, b]) => subtract(a, b).ok_or_else(nso)?,
        (Builtin::Multiply, [a, b]) => multiply(a, b).ok_or_else(nso)?,
        (Builtin::Divide, [a, b]) => divide(a, b).ok_or_else(nso)?,
        (Builtin::Modulo, [a, b]) => modulo(a, b).ok_or_else(nso)?,
        (Builtin::Index, [c, k]) => index(c, k, false),
        (Builtin::OptIndex, [c, k]) => index(c, k, true),
        (Builtin::In | Builtin::InSet, [v, Value::List(l)]) => {
            for i in 0..l.len() {
                if equals(v, &l.get(i)?)? {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }
        (Builtin::In | Builtin::InSet, [k, Value::Map(m)]) => Ok(Value::Bool(m.get(k)?.is_some())),
        (Builtin::Size, [v]) => match v {
            Value::String(_) | Value::Bytes(_) | Value::List(_) | Value::Map(_) => Ok(Value::Int(v.cost_size() as i64)),
            _ => Err(nso()),
        },
        (Builtin::Contains, [Value::String(s), Value::String(sub)]) => Ok(Value::Bool(s.contains(&**sub))),
        (Builtin::StartsWith, [Value::String(s), Value::String(p)]) => Ok(Value::Bool(s.starts_with(&**p))),
        (Builtin::EndsWith, [Value::String(s), Value::String(p)]) => Ok(Value::Bool(s.ends_with(&**p))),
        (Builtin::Matches, [Value::String(s), Value::String(p)]) => {
            let re = calls.regex(p).map_err(|e| EvalError::new(e.to_string()))?;
            Ok(Value::Bool(re.is_match(s)))
        }
        _ => Err(nso()),
    }
}

fn timestamp_field(function: &str, t: Timestamp, offset: i64) -> i64 {
    let c = time::civil(t, offset);
    match function {
        "getFullYear" => c.year,
        "getMonth" => i64::from(c.month) - 1,
        "getDayOfYear" => i64::from(c.day_of_year),
        "getDayOfMonth" => i64::from(c.day) - 1,
        "getDate" => i64::from(c.day),
        "getDayOfWeek" => i64::from(c.day_of_week),
        "getHours" => i64::from(c.hour),
        "getMinutes" => i64::from(c.minute),
        "getSeconds" => i64::from(c.second),
        _ => i64::from(c.millis),
    }
}

fn negate<'a>(v: &Value<'a>) -> Option<Res<'a>> {
    Some(match v {
        Value::Int(i) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
        Value::Double(d) => Ok(Value::Double(-d)),
        Value::Duration(d) => d.checked_neg().map(Value::Duration).ok_or_else(overflow),
        _ => return None,
    })
}

fn duration_overflow() -> EvalError {
    EvalError::new("duration overflow")
}

fn timestamp_overflow() -> EvalError {
    EvalError::new("timestamp overflow")
}

fn shift(t: Timestamp, d: i64) -> Res<'static> {
    Timestamp::from_nanos(t.as_nanos() + i128::from(d)).map(Value::Timestamp).ok_or_else(timestamp_overflow)
}

/// `_+_`, `_-_`, `_*_`, `_/_` or `_%_` on two values; `None` when no overload applies.
pub(crate) fn arithmetic<'a>(op: Builtin, a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    match op {
        Builtin::Add => add(a, b),
        Builtin::Subtract => subtract(a, b),
        Builtin::Multiply => multiply(a, b),
        Builtin::Divide => divide(a, b),
        Builtin::Modulo => modulo(a, b),
        _ => None,
    }
}

fn add<'a>(a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_add(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => x.checked_add(*y).map(Value::Uint).ok_or_else(uint_overflow),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x + y)),
        (Value::String(x), Value::String(y)) => Ok(Value::string(format!("{}{}", &**x, &**y))),
        (Value::Bytes(x), Value::Bytes(y)) => Ok(Value::Bytes([&x[..], &y[..]].concat().into())),
        (Value::List(x), Value::List(y)) => x.concat(y).map(Value::List),
        (Value::Duration(x), Value::Duration(y)) => {
            x.checked_add(*y).map(Value::Duration).ok_or_else(duration_overflow)
        }
        (Value::Timestamp(t), Value::Duration(d)) | (Value::Duration(d), Value::Timestamp(t)) => shift(*t, *d),
        _ => return None,
    })
}

fn subtract<'a>(a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_sub(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => x.checked_sub(*y).map(Value::Uint).ok_or_else(uint_overflow),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x - y)),
        (Value::Duration(x), Value::Duration(y)) => {
            x.checked_sub(*y).map(Value::Duration).ok_or_else(duration_overflow)
        }
        (Value::Timestamp(t), Value::Duration(d)) => match d.checked_neg() {
            Some(n) => shift(*t, n),
            None => Err(timestamp_overflow()),
        },
        (Value::Timestamp(x), Value::Timestamp(y)) => {
            i64::try_from(x.as_nanos() - y.as_nanos()).map(Value::Duration).map_err(|_| duration_overflow())
        }
        _ => return None,
    })
}

fn multiply<'a>(a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_mul(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => x.checked_mul(*y).map(Value::Uint).ok_or_else(uint_overflow),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x * y)),
        _ => return None,
    })
}

fn divide<'a>(a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    let zero = || EvalError::new("division by zero");
    Some(match (a, b) {
        (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => Err(zero()),
        (Value::Int(x), Value::Int(y)) => x.checked_div(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => Ok(Value::Uint(x / y)),
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x / y)),
        _ => return None,
    })
}

fn modulo<'a>(a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    let zero = || EvalError::new("modulus by zero");
    Some(match (a, b) {
        (Value::Int(_), Value::Int(0)) | (Value::Uint(_), Value::Uint(0)) => Err(zero()),
        (Value::Int(x), Value::Int(y)) => x.checked_rem(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => Ok(Value::Uint(x % y)),
        _ => return None,
    })
}

/// A list index as an `i64`: ints, uints and integral doubles (cel-go's heterogeneous index).
fn as_index(k: &Value<'_>) -> Option<i64> {
    match k {
        Value::Int(i) => Some(*i),
        Value::Uint(u) => i64::try_from(*u).ok(),
        Value::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => Some(*d as i64),
        _ => None,
    }
}

/// `c[k]`, or `c[?k]` when `optional`; an optional container makes the result optional.
pub(crate) fn index<'a>(c: &Value<'a>, k: &Value<'a>, optional: bool) -> Res<'a> {
    match c {
        Value::Optional(None) => Ok(Value::Optional(None)),
        Value::Optional(Some(inner)) => index(inner, k, true),
        Value::List(l) => {
            let Some(i) = as_index(k) else {
                return Err(no_overload("_[_]"));
            };
            match usize::try_from(i).ok().filter(|&i| i < l.len()) {
                Some(i) => {
                    let v = l.get(i)?;
                    Ok(if optional { Value::Optional(Some(Arc::new(v))) } else { v })
                }
                None if optional => Ok(Value::Optional(None)),
                None => Err(EvalError::new(format!("index out of bounds: {i}"))),
            }
        }
        Value::Map(m) => {
            let found = match (m.get(k)?, k) {
                (Some(v), _) => Some(v),
                // Numeric keys match across int, uint and double.
                (None, Value::Double(d)) if d.fract() == 0.0 => match as_index(k) {
                    Some(i) => m.get(&Value::Int(i))?,
                    None => None,
                },
                (None, _) => None,
            };
            match found {
                Some(v) if optional => Ok(Value::Optional(Some(Arc::new(v)))),
                Some(v) => Ok(v),
                None if optional => Ok(Value::Optional(None)),
                None => Err(EvalError::new(format!("no such key: {}", key_display(k)))),
            }
        }
        Value::Object(o) => match k {
            Value::String(f) => {
                let v = o.field(f)?;
                match (v, optional) {
                    (Some(v), true) => Ok(Value::Optional(Some(Arc::new(v)))),
                    (Some(v), false) => Ok(v),
                    (None, true) => Ok(Value::Optional(None)),
                    (None, false) => Err(EvalError::new(format!("no such key: {}", &**f))),
                }
            }
            _ => Err(no_overload("_[_]")),
        },
        _ => Err(no_overload("_[_]")),
    }
}

fn key_display(k: &Value<'_>) -> String {
    match k {
        Value::String(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// Go's `strconv.FormatFloat(d, 'g', -1, 64)`, which cel-go's `string(double)` uses — the
/// same as Go's `%v`, which versa-schema already prints for field errors.
pub use versa_schema::field::go_float as format_double;

fn convert<'a>(to: &str, v: &Value<'a>) -> Res<'a> {
    let fail = || conversion_error(v, to);
    match (to, v) {
        ("int", Value::Int(_)) | ("uint", Value::Uint(_)) | ("double", Value::Double(_)) => Ok(v.clone()),
        ("string", Value::String(_)) | ("bytes", Value::Bytes(_)) | ("bool", Value::Bool(_)) => Ok(v.clone()),
        ("timestamp", Value::Timestamp(_)) | ("duration", Value::Duration(_)) => Ok(v.clone()),
        ("int", Value::Uint(u)) => i64::try_from(*u).map(Value::Int).map_err(|_| overflow()),
        ("int", Value::Double(d)) => {
            if d.is_nan() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                Err(overflow())
            } else {
                Ok(Value::Int(*d as i64))
            }
        }
        ("int", Value::String(s)) => s.parse().map(Value::Int).map_err(|_| fail()),
        ("int", Value::Timestamp(t)) => Ok(Value::Int(t.seconds)),
        ("uint", Value::Int(i)) => u64::try_from(*i).map(Value::Uint).map_err(|_| uint_overflow()),
        ("uint", Value::Double(d)) => {
            if d.is_nan() || *d < 0.0 || *d >= 1.844_674_407_370_955_2e19 {
                Err(uint_overflow())
            } else {
                Ok(Value::Uint(*d as u64))
            }
        }
        ("uint", Value::String(s)) => s.parse().map(Value::Uint).map_err(|_| fail()),
        ("double", Value::Int(i)) => Ok(Value::Double(*i as f64)),
        ("double", Value::Uint(u)) => Ok(Value::Double(*u as f64)),
        ("double", Value::String(s)) => s.parse().map(Value::Double).map_err(|_| fail()),
        ("string", Value::Int(i)) => Ok(Value::string(i.to_string())),
        ("string", Value::Uint(u)) => Ok(Value::string(u.to_string())),
        ("string", Value::Double(d)) => Ok(Value::string(format_double(*d))),
        ("string", Value::Bool(b)) => Ok(Value::string(b.to_string())),
        ("string", Value::Bytes(b)) => match std::str::from_utf8(b) {
            Ok(s) => Ok(Value::string(s)),
            Err(_) => Err(EvalError::new("invalid UTF-8 in bytes, cannot convert to string")),
        },
        ("string", Value::Timestamp(t)) => Ok(Value::string(time::format_rfc3339(*t))),
        ("string", Value::Duration(d)) => Ok(Value::string(time::format_duration(*d))),
        ("bytes", Value::String(s)) => Ok(Value::Bytes(s.as_bytes().into())),
        ("bool", Value::String(s)) => match &**s {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
            _ => Err(fail()),
        },
        // cel-go's texts for a string that does not parse (`String.ConvertToType`), the type
        // named as cel-go names it.
        ("timestamp", Value::String(s)) => {
            time::parse_rfc3339(s).map(Value::Timestamp).ok_or_else(|| conversion_error(v, "google.protobuf.Timestamp"))
        }
        ("timestamp", Value::Int(i)) => Timestamp::new(*i, 0).map(Value::Timestamp).ok_or_else(timestamp_overflow),
        ("duration", Value::String(s)) => {
            time::parse_duration(s).map(Value::Duration).map_err(|_| conversion_error(v, "google.protobuf.Duration"))
        }
        _ => Err(no_overload(to)),
    }
}

#[cfg(test)]
mod tests {
    use super::format_double;

    #[test]
    fn doubles_format_like_go() {
        for (d, s) in [
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (-2.5e10, "-2.5e+10"),
            (1e21, "1e+21"),
            (1234567.0, "1.234567e+06"),
        ] {
            assert_eq!(format_double(d), s, "{d}");
        }
    }
}
