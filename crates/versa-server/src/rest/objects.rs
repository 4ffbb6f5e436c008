//! Objects between their two forms. The storage form is JSON at the version it was written at,
//! without `metadata.resourceVersion` (the store's revision is the resourceVersion, never
//! stored). The request form is at the request version, with `resourceVersion` set.
//!
//! Reading: parse → (custom resources) coerce metadata, prune and default with the schema of
//! the version it is stored at → convert to the request version (the resource's converter: one
//! call for a whole batch, so a LIST page makes at most one webhook call) → set
//! `resourceVersion`. A read that answers with JSON asks the converter for text where it has
//! it ([`Converted::Json`]: objects a webhook converted), and writes that as it is. Writing:
//! convert to the storage version → drop `resourceVersion` → serialise. Conversion happens
//! here and nowhere else (DESIGN.md: only at the storage boundary). A conversion failure is a
//! 500 with the converter's message, and nothing is written.

use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use versa_conversion::Converted;
use versa_schema::pipeline;
use versa_storage::KeyValue;

use super::Ctx;
use crate::registry::{Builtin, Flavor, Resource};
use crate::status::Status;

/// Parses a stored object and applies the read-side schema steps at the version it is stored
/// at (custom resources); `resourceVersion` set. Not yet converted.
fn decode_stored(res: &Resource, kv: &KeyValue) -> Result<Value, Status> {
    let mut obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| Status::internal(format!("stored object {} is not JSON: {e}", kv.key)))?;
    match res.flavor {
        // events.k8s.io/v1 Events are the core v1 Events, their fields named anew.
        Flavor::Custom if res.builtin == Some(Builtin::EventV1) => super::core::event_from_core(&mut obj),
        Flavor::Custom => {
            let stored_at = stored_version(res, &obj).to_owned();
            if let Some(schema) = res.version(&stored_at).and_then(|v| v.schema.as_deref()) {
                pipeline::on_read(&mut obj, schema);
            }
        }
        // The definitions API has one version per face: the object takes the face's type.
        Flavor::Definitions => set_type_meta(&mut obj, &res.api_version(&res.storage_version), &res.kind),
    }
    set_resource_version(&mut obj, kv.mod_revision);
    Ok(obj)
}

/// The version an object is at, from its `apiVersion`.
fn stored_version<'a>(res: &Resource, obj: &'a Value) -> &'a str {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match api_version.split_once('/') {
        Some((g, v)) if g == res.group => v,
        // The core group's objects say only their version (`v1`).
        None if res.group.is_empty() => api_version,
        _ => "",
    }
}

/// Converts a batch of objects to `version` with the resource's converter, recording the
/// conversion metrics. Definitions (one version) are returned as they are.
pub async fn convert(ctx: &Ctx, objects: Vec<Value>, version: &str) -> Result<Vec<Value>, Status> {
    values(convert_as(ctx, objects, version, false).await?)
}

/// Converted objects as values (those converted without text asked for are values already).
pub fn values(converted: Vec<Converted>) -> Result<Vec<Value>, Status> {
    converted.into_iter().map(|c| c.into_value().map_err(|e| Status::internal(e.to_string()))).collect()
}

/// [`convert`], with objects as text where the converter has them (`text`).
async fn convert_as(ctx: &Ctx, objects: Vec<Value>, version: &str, text: bool) -> Result<Vec<Converted>, Status> {
    let res = &ctx.res;
    if res.flavor != Flavor::Custom || objects.iter().all(|o| stored_version(res, o) == version) {
        return Ok(objects.into_iter().map(Converted::Value).collect());
    }
    let converter = match &res.converter {
        Ok(c) => c,
        Err(message) => return Err(Status::unknown(message.clone())),
    };
    let started = Instant::now();
    let result = if text {
        converter.convert_for_reading(objects, version).await
    } else {
        converter.convert(objects, version).await.map(|all| all.into_iter().map(Converted::Value).collect())
    };
    let metrics = &ctx.state.metrics;
    metrics.conversion(res.definition.name(), converter.strategy(), result.is_ok(), started.elapsed().as_secs_f64());
    result.map_err(|e| Status::unknown(e.message))
}

/// The request form of a stored object.
pub async fn from_storage(ctx: &Ctx, kv: &KeyValue) -> Result<Value, Status> {
    let mut all = from_storage_batch(ctx, std::slice::from_ref(kv)).await?;
    all.pop().ok_or_else(|| Status::internal("the converter returned no object"))
}

/// The request forms of stored objects, converted in one batch.
pub async fn from_storage_batch(ctx: &Ctx, kvs: &[KeyValue]) -> Result<Vec<Value>, Status> {
    values(from_storage_as(ctx, kvs, false).await?)
}

/// The request forms of stored objects, converted in one batch, for an answer in JSON: as text
/// where the converter has it; and for each, whether it may be kept across requests.
///
/// An object may be kept when it depends only on its stored bytes and the compiled resource:
/// when it needed no conversion, or its conversion is the definition's own (`None`). What a
/// webhook answers may change at any time — a fixed webhook rolled out under the same URL must
/// be seen at once — so objects a webhook converted are never kept (issue 15, defect 2).
pub async fn from_storage_for_json(ctx: &Ctx, kvs: &[KeyValue]) -> Result<(Vec<Converted>, Vec<bool>), Status> {
    let decoded = decode_all(ctx, kvs)?;
    let deterministic = match &ctx.res.converter {
        Ok(c) => c.is_deterministic(),
        Err(_) => false,
    };
    let keep = decoded
        .iter()
        .map(|o| deterministic || ctx.res.flavor != Flavor::Custom || stored_version(&ctx.res, o) == ctx.version)
        .collect();
    Ok((finish(ctx, kvs, decoded, true).await?, keep))
}

/// The request forms of stored objects, converted in one batch: as text where the converter
/// has it, if `text`.
pub async fn from_storage_as(ctx: &Ctx, kvs: &[KeyValue], text: bool) -> Result<Vec<Converted>, Status> {
    let decoded = decode_all(ctx, kvs)?;
    finish(ctx, kvs, decoded, text).await
}

fn decode_all(ctx: &Ctx, kvs: &[KeyValue]) -> Result<Vec<Value>, Status> {
    kvs.iter().map(|kv| decode_stored(&ctx.res, kv)).collect()
}

/// Converts decoded stored objects to the request version and sets their `resourceVersion`.
async fn finish(ctx: &Ctx, kvs: &[KeyValue], decoded: Vec<Value>, text: bool) -> Result<Vec<Converted>, Status> {
    let mut converted = convert_as(ctx, decoded, &ctx.version, text).await?;
    // The converter keeps metadata, but resourceVersion is ours to say.
    for (obj, kv) in converted.iter_mut().zip(kvs) {
        match obj {
            Converted::Value(v) => set_resource_version(v, kv.mod_revision),
            // Text carries the metadata it was read with, resourceVersion set; should it not,
            // it becomes a value again.
            Converted::Json { metadata, .. } => {
                let rv = metadata.get("resourceVersion").and_then(Value::as_str);
                if rv.is_none_or(|rv| rv.parse() != Ok(kv.mod_revision)) {
                    let mut v = std::mem::replace(obj, Converted::Value(Value::Null))
                        .into_value()
                        .map_err(|e| Status::internal(e.to_string()))?;
                    set_resource_version(&mut v, kv.mod_revision);
                    *obj = Converted::Value(v);
                }
            }
        }
    }
    Ok(converted)
}

/// Whether a write at the request version is stored at another version (then the answer is
/// the stored object converted back, as kube answers).
pub fn stored_elsewhere(ctx: &Ctx) -> bool {
    ctx.res.flavor == Flavor::Custom && ctx.res.storage_version != ctx.version
}

/// The storage form of a request-form object.
pub async fn to_storage(ctx: &Ctx, obj: &Value) -> Result<Bytes, Status> {
    let mut stored = obj.clone();
    if ctx.res.flavor == Flavor::Custom {
        let storage = ctx.res.storage_version.clone();
        // On writes kube reports a failed conversion as an internal error (the storage
        // encoder's), unlike reads, which pass the converter's message through.
        let converted = convert(ctx, vec![stored], &storage).await.map_err(|s| Status::internal(s.message))?;
        stored = converted
            .into_iter()
            .next()
            .ok_or_else(|| Status::internal("the converter returned no object; nothing was written"))?;
    }
    if ctx.res.builtin == Some(Builtin::EventV1) {
        super::core::event_to_core(&mut stored);
    }
    if ctx.res.flavor == Flavor::Definitions {
        // Whatever face it came through, a definition is kept as a ResourceDefinition.
        set_type_meta(&mut stored, versa_apiextensions::types::API_VERSION, versa_apiextensions::types::KIND);
    }
    if let Some(meta) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    serde_json::to_vec(&stored).map(Bytes::from).map_err(|e| Status::internal(e.to_string()))
}

/// Sets `apiVersion` and `kind`.
pub fn set_type_meta(obj: &mut Value, api_version: &str, kind: &str) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".to_owned(), Value::String(api_version.to_owned()));
        o.insert("kind".to_owned(), Value::String(kind.to_owned()));
    }
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
