//! Validation ratcheting (KEP-4008, GA in Kubernetes 1.30): on an update, an OpenAPI schema
//! error is not reported when the value it is about did not change, so that tightening a
//! schema never traps the objects written before (a finalizer could otherwise not be removed
//! from an object the new schema refuses, and a namespace deletion would hang on it).
//!
//! kube-openapi's ratcheting validator turns a node's errors into warnings when the node is
//! deep-equal to the value it correlates with in the old object; a node's errors include those
//! of the nodes below it. Correlation follows kube's rules: object properties and map entries by
//! key, items of `x-kubernetes-list-type: map` lists by their map keys; items of other lists
//! (atomic, set) do not correlate one by one — such a list is unchanged only as a whole. So an
//! error is ratcheted when the node at its path, or any node above it that correlates, is
//! unchanged. (A `Required` error is about its parent object, which is above its path.)
//!
//! Only value validations are ratcheted here, as in Kubernetes; metadata, embedded-resource
//! and list-type errors are not.

use serde_json::Value;

use crate::field::{ErrorList, Path};
use crate::structural::Structural;

/// The errors of `errs` that stand on an update from `old` to `new`, and how many were
/// ratcheted away.
pub fn ratchet(errs: ErrorList, new: &Value, old: &Value, schema: &Structural) -> (ErrorList, usize) {
    if errs.is_empty() {
        return (errs, 0);
    }
    let mut unchanged = Vec::new();
    collect(new, old, Some(schema), &Path::none(), &mut unchanged);
    let before = errs.0.len();
    let kept: Vec<_> = errs
        .0
        .into_iter()
        .filter(|e| {
            let path = e.field.to_string();
            !unchanged.iter().any(|u| u.is_empty() || covers(u, &path))
        })
        .collect();
    let ratcheted = before - kept.len();
    (ErrorList(kept), ratcheted)
}

/// Whether the node at `node` is `path` or above it.
fn covers(node: &str, path: &str) -> bool {
    path == node || (path.starts_with(node) && matches!(path.as_bytes().get(node.len()), Some(b'.' | b'[')))
}

/// The paths of the topmost correlated nodes of `new` that equal their old values (`""` for the
/// whole object), printed as field errors print paths.
fn collect(new: &Value, old: &Value, schema: Option<&Structural>, at: &Path, out: &mut Vec<String>) {
    if new == old {
        out.push(if at.is_none() { String::new() } else { at.to_string() });
        return;
    }
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            for (k, v) in n {
                let Some(ov) = o.get(k) else { continue };
                let declared = schema.and_then(|s| s.properties.get(k));
                let (child, path) = match declared {
                    Some(p) => (Some(p), at.child(k)),
                    None => match schema.and_then(|s| s.additional_properties.as_ref()).and_then(|a| a.schema()) {
                        Some(a) => (Some(a), at.key(k)),
                        None => (None, at.child(k)),
                    },
                };
                collect(v, ov, child, &path, out);
            }
        }
        (Value::Array(n), Value::Array(o)) => {
            let Some(s) = schema.filter(|s| s.list_type.as_deref() == Some("map") && !s.list_map_keys.is_empty())
            else {
                return;
            };
            let items = s.items.as_deref();
            let keys = |v: &Value| -> Vec<Value> {
                s.list_map_keys.iter().map(|k| v.get(k).cloned().unwrap_or(Value::Null)).collect()
            };
            for (i, item) in n.iter().enumerate() {
                let key = keys(item);
                if let Some(old_item) = o.iter().find(|x| keys(x) == key) {
                    collect(item, old_item, items, &at.index(i), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::field::{Error, ErrorType};

    fn schema(v: Value) -> Structural {
        let props: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps =
            serde_json::from_value(v).unwrap();
        Structural::lower(&props).unwrap()
    }

    fn err(path: &str) -> Error {
        Error::new(ErrorType::Invalid, Path::new(path), "x", "bad")
    }

    /// (what, new, old, error paths) → the paths that stand.
    #[test]
    fn unchanged_values_are_ratcheted() {
        let s = schema(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "set": {"type": "array", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        }}}}));
        let old = json!({"metadata": {"resourceVersion": "1"}, "spec": {"a": "x", "b": "y", "m": {"k": "v", "j": "w"},
            "set": ["p", "q"], "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53}]}});
        let cases: &[(&str, Value, &[&str], &[&str])] = &[
            (
                "only metadata changed: every value error ratcheted",
                json!({"metadata": {"resourceVersion": "2", "finalizers": []}, "spec": old["spec"].clone()}),
                &["spec.a", "spec.ports[0].port", "spec"],
                &[],
            ),
            (
                "a changed: its error stands, b's does not",
                json!({"spec": {"a": "z", "b": "y", "m": old["spec"]["m"].clone(), "set": ["p", "q"], "ports": old["spec"]["ports"].clone()}}),
                &["spec.a", "spec.b"],
                &["spec.a"],
            ),
            (
                "map entries by key",
                json!({"spec": {"a": "x", "b": "y", "m": {"k": "v", "j": "changed"}, "set": ["p", "q"], "ports": old["spec"]["ports"].clone()}}),
                &["spec.m[k]", "spec.m[j]", "spec.m"],
                &["spec.m[j]", "spec.m"],
            ),
            (
                "map-list items by key, in any order",
                json!({"spec": {"a": "x", "b": "y", "m": old["spec"]["m"].clone(), "set": ["p", "q"],
                             "ports": [{"name": "dns", "port": 53}, {"name": "http", "port": 8080}]}}),
                &["spec.ports[0].port", "spec.ports[1].port"],
                &["spec.ports[1].port"],
            ),
            (
                "atomic/set lists only as a whole",
                json!({"spec": {"a": "x", "b": "y", "m": old["spec"]["m"].clone(), "set": ["p", "r"], "ports": old["spec"]["ports"].clone()}}),
                &["spec.set[0]", "spec.ports[0].port"],
                &["spec.set[0]"],
            ),
            (
                "a new field is not ratcheted",
                json!({"spec": {"a": "x", "b": "y", "c": "new", "m": old["spec"]["m"].clone(), "set": ["p", "q"], "ports": old["spec"]["ports"].clone()}}),
                &["spec.c", "spec"],
                &["spec.c", "spec"],
            ),
        ];
        for (what, new, errors, want) in cases {
            let errs = ErrorList(errors.iter().map(|p| err(p)).collect());
            let (kept, n) = ratchet(errs, new, &old, &s);
            let got: Vec<String> = kept.0.iter().map(|e| e.field.to_string()).collect();
            assert_eq!(got, *want, "{what}");
            assert_eq!(n, errors.len() - want.len(), "{what}");
        }
    }
}
