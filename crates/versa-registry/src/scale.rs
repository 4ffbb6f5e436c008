//! The `scale` subresource's paths: reading and writing the fields a definition names
//! (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`), and the rule every write of
//! such an object keeps (replica counts are non-negative 32-bit integers, the selector a string).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresourceScale;
use serde_json::{Value, json};
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

/// The replica fields must be integers in `0..=MaxInt32`, the selector a string.
pub fn validate_replica_paths(obj: &Value, spec: &CustomResourceSubresourceScale) -> ErrorList {
    let mut errs = ErrorList::new();
    for path in [&spec.spec_replicas_path, &spec.status_replicas_path] {
        let Some(v) = lookup(obj, path) else { continue };
        let field = Path::new(path.trim_start_matches('.'));
        match v.as_i64() {
            Some(n) if n < 0 => errs.push(FieldError::invalid(field, n, "should be a non-negative integer")),
            Some(n) if n > i64::from(i32::MAX) => {
                errs.push(FieldError::invalid(field, n, "should be less than or equal to 2147483647"))
            }
            Some(_) => {}
            None => errs.push(FieldError::invalid(field, v, "should be an integer")),
        }
    }
    if let Some(path) = &spec.label_selector_path
        && let Some(v) = lookup(obj, path)
        && !v.is_string()
    {
        errs.push(FieldError::invalid(Path::new(path.trim_start_matches('.')), v, "should be a string"));
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
