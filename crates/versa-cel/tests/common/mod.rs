//! What several of the data-driven test binaries share.

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

use serde_json::{Value as Json, json};
use versa_cel::Value;

/// The JSON form of a result, for comparison with a case's `expect`.
pub fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Uint(u) => json!(u),
        Value::Double(d) => json!(d),
        Value::String(s) => json!(&**s),
        Value::List(l) => Json::Array(l.to_vec().unwrap().iter().map(to_json).collect()),
        other => json!(other.to_string()),
    }
}
