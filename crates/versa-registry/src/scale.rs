//! The `scale` subresource's paths: reading and writing the fields a definition names
//! (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`), and the rule every write of
//! such an object keeps (replica counts are non-negative 32-bit integers, the selector a string).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresourceScale;
use serde_json::{Value, json};
use versa_schema::field::{go_type, go_v};
use versa_schema::{Error as FieldError, ErrorList, Path};

/// The segments of a simple JSON path such as `.spec.replicas`.
fn segments(path: &str) -> Vec<&str> {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).collect()
}

pub fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    segments(path).into_iter().try_fold(obj, |v, s| v.get(s))
}

pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let segs = segments(path);
    let Some((last, parents)) = segs.split_last() else { return };
    let mut cur = obj;
    for s in parents {
        let Some(o) = cur.as_object_mut() else { return };
        let next = o.entry(*s).or_insert_with(|| json!({}));
        if !next.is_object() {
            *next = json!({});
        }
        cur = next;
    }
    if let Some(o) = cur.as_object_mut() {
        o.insert((*last).to_owned(), value);
    }
}

/// kube's `unstructured.NestedFieldNoCopy` and its typed accessors on a definition's path: the
/// value (`None` when a step is missing or null), or the accessor's error text.
fn nested<'a>(
    obj: &'a Value,
    path: &str,
    expected: &str,
    fits: fn(&Value) -> bool,
) -> Result<Option<&'a Value>, String> {
    let fields = segments(path);
    let json_path = |n: usize| format!(".{}", fields[..n].join("."));
    let mut value = obj;
    for (i, field) in fields.iter().enumerate() {
        match value {
            Value::Null => return Ok(None),
            Value::Object(map) => match map.get(*field) {
                Some(v) => value = v,
                None => return Ok(None),
            },
            other => {
                return Err(format!(
                    "{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                    json_path(i + 1),
                    go_v(other),
                    go_type(other)
                ));
            }
        }
    }
    if fits(value) {
        Ok(Some(value))
    } else {
        Err(format!(
            "{} accessor error: {} is of the type {}, expected {expected}",
            json_path(fields.len()),
            go_v(value),
            go_type(value)
        ))
    }
}

/// The replica fields must be integers in `0..=MaxInt32`, the selector a string — checked as
/// kube's custom-resource validator checks them: the path as the definition spells it (leading
/// dot included), the bad value as the accessor's `int64` (`0` when it is not one), and
/// `unstructured`'s accessor error texts.
pub fn validate_replica_paths(obj: &Value, spec: &CustomResourceSubresourceScale) -> ErrorList {
    let mut errs = ErrorList::new();
    for path in [&spec.spec_replicas_path, &spec.status_replicas_path] {
        let field = || Path::new(path);
        match nested(obj, path, "int64", |v| v.as_i64().is_some()) {
            Err(e) => errs.push(FieldError::invalid(field(), 0_i64, e)),
            Ok(None) => {}
            Ok(Some(v)) => match v.as_i64() {
                Some(n) if n < 0 => errs.push(FieldError::invalid(field(), n, "should be a non-negative integer")),
                Some(n) if n > i64::from(i32::MAX) => {
                    errs.push(FieldError::invalid(field(), n, "should be less than or equal to 2147483647"))
                }
                _ => {}
            },
        }
    }
    if let Some(path) = &spec.label_selector_path
        && let Err(e) = nested(obj, path, "string", Value::is_string)
    {
        errs.push(FieldError::invalid(Path::new(path), "", e));
    }
    errs
}

/// The `autoscaling/v1` `Scale` of an object (`None` when its spec replicas field is missing).
pub fn to_scale(obj: &Value, spec: &CustomResourceSubresourceScale) -> Option<Value> {
    let replicas = lookup(obj, &spec.spec_replicas_path).and_then(Value::as_i64)?;
    let status_replicas = lookup(obj, &spec.status_replicas_path).and_then(Value::as_i64).unwrap_or(0);
    let selector =
        spec.label_selector_path.as_deref().and_then(|p| lookup(obj, p)).and_then(Value::as_str).unwrap_or("");
    let m = obj.get("metadata").cloned().unwrap_or(json!({}));
    let mut meta = json!({});
    for f in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = m.get(f) {
            meta[f] = v.clone();
        }
    }
    let mut status = json!({"replicas": status_replicas});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Some(
        json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta, "spec": {"replicas": replicas}, "status": status}),
    )
}
