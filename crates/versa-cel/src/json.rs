//! A CEL value written back as JSON: what a conversion rule's result becomes in the converted
//! object (versa's declarative conversion, `versa-conversion`).
//!
//! The mapping is the inverse of [`Value::from_json`] (Kubernetes' `UnstructuredToVal`):
//! numbers, strings, bools and null as they are; timestamps as RFC 3339 (`date-time`),
//! durations in Go's syntax (`duration`), bytes as base64 (`byte`); lists and maps element by
//! element, and views of the input (`self.spec`, `self.spec.toppings`) copied as they are.
//! `optional.none()` is *no value*: [`to_json`] returns `None` at the top, and a map entry or
//! field holding it is left out. What JSON cannot hold — NaN and infinities, type values, the
//! Kubernetes library types (IPs, quantities, ...: write `string(x)`), map keys that are not
//! strings — is an error naming it. Nesting is bounded by the input's and the expression's
//! (the parser bounds the AST), so the recursion is too.

use base64::Engine;
use serde_json::{Map as JsonMap, Number, Value as Json};

use crate::runtime::EvalError;
use crate::time;
use crate::value::{Map, Value};

/// The JSON of `v`, or `None` for `optional.none()`.
pub fn to_json(v: &Value<'_>) -> Result<Option<Json>, EvalError> {
    Ok(Some(match v {
        Value::Optional(None) => return Ok(None),
        Value::Optional(Some(inner)) => return to_json(inner),
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Uint(u) => Json::from(*u),
        Value::Double(d) => Json::Number(
            Number::from_f64(*d).ok_or_else(|| EvalError::new(format!("{d} cannot be written as a JSON number")))?,
        ),
        Value::String(s) => Json::String(s.to_string()),
        Value::Bytes(b) => Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::Timestamp(t) => Json::String(time::format_rfc3339(*t)),
        Value::Duration(d) => Json::String(time::format_duration(*d)),
        Value::List(l) => {
            if let Some((items, _)) = l.json_view() {
                return Ok(Some(Json::Array(items.clone())));
            }
            let mut out = Vec::with_capacity(l.len());
            for item in l.to_vec()? {
                // A list has no place to leave out: an absent element is an error.
                let json = to_json(&item)?.ok_or_else(|| EvalError::new("a list element is optional.none()"))?;
                out.push(json);
            }
            Json::Array(out)
        }
        Value::Map(Map::Json(m, _)) => Json::Object((*m).clone()),
        Value::Map(m) => {
            let mut out = JsonMap::new();
            for key in m.keys() {
                let Value::String(name) = &key else {
                    return Err(EvalError::new(format!(
                        "a map key of type {} cannot be a JSON field name",
                        &*key.type_name()
                    )));
                };
                if let Some(value) = m.get(&key)?
                    && let Some(json) = to_json(&value)?
                {
                    out.insert(name.to_string(), json);
                }
            }
            Json::Object(out)
        }
        Value::Object(o) => Json::Object(o.json.clone()),
        Value::Type(_) | Value::Opaque(_) => {
            return Err(EvalError::new(format!("a value of type {} cannot be written to JSON", &*v.type_name())));
        }
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::eval::{Activation, eval_expr};
    use crate::runtime::CostTracker;
    use serde_json::json;

    fn run(source: &str) -> Result<Option<Json>, EvalError> {
        let ast = crate::parse(source).unwrap();
        let v = eval_expr(&ast.expr, &Activation::new(), &mut CostTracker::default())?;
        to_json(&v)
    }

    #[test]
    fn values_become_json() {
        let cases = [
            ("1 + 2", Some(json!(3))),
            ("'a' + 'b'", Some(json!("ab"))),
            ("[1, 2].map(x, {'n': x, 'twice': x * 2})", Some(json!([{"n": 1, "twice": 2}, {"n": 2, "twice": 4}]))),
            ("optional.none()", None),
            ("optional.of('x')", Some(json!("x"))),
            ("{'a': 1, ?'b': optional.none()}", Some(json!({"a": 1}))),
            ("duration('90s')", Some(json!("90s"))),
            ("timestamp('2024-01-02T03:04:05Z')", Some(json!("2024-01-02T03:04:05Z"))),
            ("b'hi'", Some(json!("aGk="))),
            ("null", Some(json!(null))),
            ("1.5", Some(json!(1.5))),
        ];
        for (source, want) in cases {
            assert_eq!(run(source).unwrap(), want, "{source}");
        }
    }

    #[test]
    fn what_json_cannot_hold_is_an_error() {
        for (source, want) in [
            ("{1: 'a'}", "a map key of type int cannot be a JSON field name"),
            ("int", "a value of type type cannot be written to JSON"),
            ("1.0 / 0.0", "inf cannot be written as a JSON number"),
            ("[optional.none()]", "a list element is optional.none()"),
        ] {
            assert_eq!(run(source).unwrap_err().to_string(), want, "{source}");
        }
    }
}
