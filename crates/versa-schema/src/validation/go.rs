//! JSON values as kube-openapi's Go code sees them: numbers as `int64` or `float64` ([`Kind`]),
//! the numeric type and format a value's range is checked against ([`Numeric`]), Go's
//! conversions and comparisons behind `multipleOf`, `enum` and `uniqueItems`.

use serde_json::{Map, Value};

use super::node::Node;
use crate::field::BadValue;

/// A JSON value seen the way Go's unstructured decoding sees it: integral numbers that fit an
/// `int64` are `int64`, every other number is a `float64`.
#[derive(Clone, Copy)]
pub(super) enum Kind<'v> {
    Null,
    Bool,
    Int(i64),
    Float(f64),
    Str(&'v str),
    Array(&'v [Value]),
    Object(&'v Map<String, Value>),
}

#[inline]
pub(super) fn kind(v: &Value) -> Kind<'_> {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) => match n.as_i64() {
            Some(i) => Kind::Int(i),
            None => Kind::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Kind::Str(s),
        Value::Array(a) => Kind::Array(a),
        Value::Object(o) => Kind::Object(o),
    }
}

/// The bad value of a numeric error: the number as Go holds it.
pub(super) fn number_value(k: Kind<'_>) -> BadValue {
    match k {
        Kind::Int(i) => BadValue::Json(Value::from(i)),
        Kind::Float(f) => BadValue::Json(Value::from(f)),
        _ => BadValue::Json(Value::Null),
    }
}

/// The numeric type and format kube-openapi's number validator checks a value's range against:
/// only an unambiguous `integer` (with format `int32` or `int64`) or `number` (with `float` or
/// `double`); any other format counts as none, any other type as no check.
#[derive(Clone, Copy)]
pub(super) struct Numeric<'s> {
    type_: &'static str,
    format: &'s str,
}

impl<'s> Numeric<'s> {
    pub(super) fn of<N: Node>(node: &'s N) -> Numeric<'s> {
        let format = node.vv().map_or("", |vv| vv.format.as_str());
        match node.type_name() {
            "integer" => {
                Numeric { type_: "integer", format: if matches!(format, "int32" | "int64") { format } else { "" } }
            }
            "number" => {
                Numeric { type_: "number", format: if matches!(format, "float" | "double") { format } else { "" } }
            }
            _ => Numeric { type_: "", format: "" },
        }
    }

    /// kube-openapi's `IsValueValidAgainstRange`: the value (as Go holds it: an `int64`, or a
    /// `float64` printed with all its digits and no exponent) must parse as the type and format
    /// — an `integer` as `int64` (`int32` with that format), a `number` with format `float` as a
    /// finite `float32`. The error text, with `prefix` and the validator's path, otherwise.
    pub(super) fn range_error(self, k: Kind<'_>, prefix: &str, path: &str) -> Option<String> {
        let text = match k {
            Kind::Int(i) => i.to_string(),
            Kind::Float(f) => format!("{f}"),
            _ => return None,
        };
        let fits = match (self.type_, self.format) {
            ("integer", "int32") => text.parse::<i32>().is_ok(),
            ("integer", _) => text.parse::<i64>().is_ok(),
            (_, "float") => !text.parse::<f32>().is_ok_and(f32::is_infinite),
            _ => true,
        };
        if fits {
            return None;
        }
        let type_ = self.type_;
        Some(if self.format.is_empty() {
            format!("{prefix} value must be of type {type_} (default format) in {path}")
        } else {
            format!("{prefix} value must be of type {type_} with format {} in {path}", self.format)
        })
    }
}

pub(super) fn as_f64(k: Kind<'_>) -> f64 {
    match k {
        Kind::Int(i) => i as f64,
        Kind::Float(f) => f,
        _ => 0.0,
    }
}

/// Go's `int64(f)`: truncation toward zero. Go leaves out-of-range results to the platform;
/// Rust's saturation is as good a choice and never panics.
pub(super) fn go_f64_to_i64(f: f64) -> i64 {
    f as i64
}

/// go-openapi `swag.IsFloat64AJSONInteger` (v0.23, the version Kubernetes vendors): an
/// integer within ±(2^53−1), allowing a relative error of 1e-9 above a positive integer.
pub(super) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f.trunc() == f {
        return true;
    }
    // Go compares with `float64(uint64(f))`: for negative non-integers that is 0 or a huge
    // number, and the comparison fails.
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    if g == 0.0 {
        return false;
    }
    (f - g) / (f + g) < 1e-9
}

/// kube-openapi's enum test: `data` converted to the enum value's Go type, then deep-equal.
/// Numbers convert between `int64` and `float64` (truncating), an `int64` converts to a
/// one-rune string, `null` data never matches, a `null` enum value is skipped.
pub(super) fn enum_matches(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(a), Value::Number(b)) => match (kind(data), kind(e)) {
            (Kind::Int(x), Kind::Int(y)) => x == y,
            (Kind::Int(x), Kind::Float(y)) => x as f64 == y,
            (Kind::Float(x), Kind::Int(y)) => go_f64_to_i64(x) == y,
            (Kind::Float(x), Kind::Float(y)) => x == y,
            _ => a == b,
        },
        (Value::Number(n), Value::String(s)) => match n.as_i64() {
            Some(i) => {
                let c = u32::try_from(i).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                s.as_str() == c.encode_utf8(&mut buf)
            }
            None => false,
        },
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => a == b,
        (Value::Object(a), Value::Object(b)) => a == b,
        _ => false,
    }
}

/// uniqueItems: any two items deep-equal (Go `reflect.DeepEqual`, so `1` and `1.0` differ).
pub(super) fn has_duplicates(items: &[Value]) -> bool {
    for (i, a) in items.iter().enumerate() {
        if items[..i].iter().any(|b| a == b) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::go_json;
    use serde_json::json;

    #[test]
    fn json_integers_and_floats() {
        assert!(is_json_integer(1.0));
        assert!(is_json_integer(3.0000000000000004));
        assert!(!is_json_integer(2.9999999999999996));
        assert!(!is_json_integer(-1.5));
        assert!(!is_json_integer(0.5));
        assert_eq!(go_json(&json!([1.0, 1e21, 1e-7, 0.000001])), "[1,1e+21,1e-7,0.000001]");
        assert_eq!(go_json(&json!({"b": [1.0, "<"], "a": null})), r#"{"a":null,"b":[1,"\u003c"]}"#);
    }

    #[test]
    fn enum_conversions_follow_go() {
        assert!(enum_matches(&json!(1.0), &json!(1)));
        assert!(enum_matches(&json!(1.5), &json!(1)));
        assert!(!enum_matches(&json!(1), &json!(1.5)));
        assert!(enum_matches(&json!(65), &json!("A")));
        assert!(!enum_matches(&json!("1"), &json!(1)));
        assert!(!enum_matches(&Value::Null, &Value::Null));
    }
}
