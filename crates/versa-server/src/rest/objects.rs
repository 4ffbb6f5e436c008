//! Objects between their two forms. The storage form is JSON at the version it was written at,
//! without `metadata.resourceVersion` (the store's revision is the resourceVersion, never
//! stored). The request form is at the request version, with `resourceVersion` set.
//!
//! Reading: parse → (custom resources) coerce metadata, prune and default with the schema of
//! the stored version → convert to the request version → set `resourceVersion`. Writing:
//! convert to the storage version → drop `resourceVersion` → serialise. Conversion with the
//! `None` strategy changes `apiVersion` and prunes with the target version's schema, exactly
//! as kube-apiserver does (a field renamed between versions is dropped; see docs).

use bytes::Bytes;
use serde_json::Value;
use versa_schema::pipeline;
use versa_schema::prune::prune_unknown;
use versa_storage::KeyValue;

use crate::registry::{Flavor, Resource};
use crate::status::Status;

/// The request form of a stored object at `version`.
pub fn from_storage(res: &Resource, kv: &KeyValue, version: &str) -> Result<Value, Status> {
    let mut obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| Status::internal(format!("stored object {} is not JSON: {e}", kv.key)))?;
    if res.flavor == Flavor::Custom {
        let stored_at = stored_version(res, &obj).to_owned();
        if let Some(schema) = res.version(&stored_at).and_then(|v| v.schema.as_ref()) {
            pipeline::on_read(&mut obj, schema);
        }
        convert(res, &mut obj, &stored_at, version)?;
    }
    set_resource_version(&mut obj, kv.mod_revision);
    Ok(obj)
}

/// The version an object is at, from its `apiVersion`.
fn stored_version<'a>(res: &Resource, obj: &'a Value) -> &'a str {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match api_version.split_once('/') {
        Some((g, v)) if g == res.group => v,
        _ => "",
    }
}

/// Converts `obj` (at `from`) to `to`.
pub fn convert(res: &Resource, obj: &mut Value, from: &str, to: &str) -> Result<(), Status> {
    if from == to {
        return Ok(());
    }
    let strategy = res.definition.spec.conversion.as_ref().map(|c| c.strategy.as_str()).unwrap_or("None");
    if strategy != "None" {
        return Err(Status::internal(format!(
            "conversion webhook for {}/{}, Kind={} failed: the {strategy} conversion strategy is not available in this version of versa",
            res.group, to, res.kind
        )));
    }
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".to_owned(), Value::String(res.api_version(to)));
    }
    if let Some(schema) = res.version(to).and_then(|v| v.schema.as_ref()) {
        prune_unknown(obj, schema, true);
    }
    Ok(())
}

/// The storage form of a request-form object at `version`.
pub fn to_storage(res: &Resource, obj: &Value, version: &str) -> Result<Bytes, Status> {
    let mut stored = obj.clone();
    if res.flavor == Flavor::Custom {
        convert(res, &mut stored, version, &res.storage_version)?;
    }
    if let Some(meta) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    serde_json::to_vec(&stored).map(Bytes::from).map_err(|e| Status::internal(e.to_string()))
}

/// Sets `metadata.resourceVersion` to the store revision.
pub fn set_resource_version(obj: &mut Value, revision: i64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), Value::String(revision.to_string()));
    }
}

/// The object's kind-qualified name for messages: `metadata.name`.
pub fn name_of(obj: &Value) -> &str {
    obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("")
}
