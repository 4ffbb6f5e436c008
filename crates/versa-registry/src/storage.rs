//! The storage boundary: objects between their two forms, and the only place they cross.
//!
//! The storage form is JSON at the version it was written at, without
//! `metadata.resourceVersion` (the store's revision is the resourceVersion, never stored). The
//! request form is at a served version, with `resourceVersion` set.
//!
//! Reading: parse → (custom resources) coerce metadata, prune and default with the schema of
//! the version it is stored at → convert to the wanted version (the resource's converter: one
//! call for a whole batch, so a LIST page makes at most one webhook call) → set
//! `resourceVersion`. A read that answers with JSON may ask for text where the converter has it
//! ([`Converted::Json`]: objects a webhook converted), to be written as it is. Writing: convert
//! to the storage version → drop `resourceVersion` → serialise. Conversion happens here and
//! nowhere else (DESIGN.md: only at the storage boundary): the REST verbs, storage migration and
//! the controllers all go through a [`Boundary`].
//!
//! A failed conversion on a read is [`Error::Conversion`] with the converter's message (kube
//! passes it through); on a write it is [`Error::Internal`] (kube's storage encoder's error),
//! and nothing is written.

use std::time::Instant;

use bytes::Bytes;
use serde_json::Value;
use versa_conversion::Converted;
use versa_storage::KeyValue;

use crate::error::{Error, Result};
use crate::kinds;
use crate::meta::set_resource_version;
use crate::resource::Resource;

/// Who hears of each conversion (the server's metrics); `()` hears nothing.
pub trait Observer: Send + Sync {
    /// One converter call: the definition, its strategy, whether it succeeded, how long it took.
    fn conversion(&self, definition: &str, strategy: &str, ok: bool, seconds: f64);
}

impl Observer for () {
    fn conversion(&self, _: &str, _: &str, _: bool, _: f64) {}
}

/// One resource's storage boundary, for objects wanted at `version`.
#[derive(Clone, Copy)]
pub struct Boundary<'a> {
    res: &'a Resource,
    version: &'a str,
    observer: &'a dyn Observer,
}

impl std::fmt::Debug for Boundary<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Boundary").field("resource", &self.res.plural).field("version", &self.version).finish()
    }
}

impl<'a> Boundary<'a> {
    pub fn new(res: &'a Resource, version: &'a str, observer: &'a dyn Observer) -> Boundary<'a> {
        Boundary { res, version, observer }
    }

    /// The resource whose objects cross here.
    pub fn resource(&self) -> &'a Resource {
        self.res
    }

    /// The version objects are wanted at.
    pub fn version(&self) -> &'a str {
        self.version
    }

    /// The same boundary for objects wanted at another version.
    pub fn at(self, version: &'a str) -> Boundary<'a> {
        Boundary { version, ..self }
    }

    /// Parses a stored object and applies the read-side schema steps at the version it is
    /// stored at (custom resources); `resourceVersion` set. Not yet converted.
    fn decode(&self, kv: &KeyValue) -> Result<Value> {
        let mut obj: Value = serde_json::from_slice(&kv.value)
            .map_err(|e| Error::internal(format!("stored object {} is not JSON: {e}", kv.key)))?;
        self.on_read(&mut obj);
        set_resource_version(&mut obj, kv.mod_revision);
        Ok(obj)
    }

    /// The read-side steps of an object as stored, at the version it is stored at (the kind's:
    /// custom resources coerced, pruned and defaulted with that version's schema).
    fn on_read(&self, obj: &mut Value) {
        kinds::of(self.res).on_read(self.res, obj);
    }

    /// Objects read as if they were stored as they are (`versa convert`): each through the
    /// read-side steps at its own version, then converted to the wanted version in one batch.
    pub async fn read_objects(&self, mut objects: Vec<Value>) -> Result<Vec<Value>> {
        for obj in &mut objects {
            self.on_read(obj);
        }
        self.convert(objects, self.version).await
    }

    fn decode_all(&self, kvs: &[KeyValue]) -> Result<Vec<Value>> {
        kvs.iter().map(|kv| self.decode(kv)).collect()
    }

    /// Converts a batch of objects to `version` with the resource's converter, telling the
    /// observer. Definitions (one version) and objects already there are returned as they are.
    pub async fn convert(&self, objects: Vec<Value>, version: &str) -> Result<Vec<Value>> {
        values(self.convert_as(objects, version, false).await?)
    }

    /// [`Boundary::convert`], with objects as text where the converter has them (`text`).
    async fn convert_as(&self, objects: Vec<Value>, version: &str, text: bool) -> Result<Vec<Converted>> {
        let res = self.res;
        if !kinds::of(res).converts() || objects.iter().all(|o| res.version_of(o) == version) {
            return Ok(objects.into_iter().map(Converted::Value).collect());
        }
        let converter = match res.converter() {
            Ok(c) => c,
            Err(message) => return Err(Error::Conversion(message)),
        };
        let started = Instant::now();
        let result = if text {
            converter.convert_for_reading(objects, version).await
        } else {
            converter.convert(objects, version).await.map(|all| all.into_iter().map(Converted::Value).collect())
        };
        let seconds = started.elapsed().as_secs_f64();
        self.observer.conversion(res.definition.name(), converter.strategy(), result.is_ok(), seconds);
        result.map_err(|e| Error::Conversion(e.to_string()))
    }

    /// The wanted form of a stored object.
    pub async fn from_storage(&self, kv: &KeyValue) -> Result<Value> {
        let mut all = self.from_storage_batch(std::slice::from_ref(kv)).await?;
        all.pop().ok_or_else(|| Error::internal("the converter returned no object"))
    }

    /// The wanted forms of stored objects, converted in one batch.
    pub async fn from_storage_batch(&self, kvs: &[KeyValue]) -> Result<Vec<Value>> {
        values(self.from_storage_as(kvs, false).await?)
    }

    /// The wanted forms of stored objects, converted in one batch: as text where the converter
    /// has it, if `text`.
    pub async fn from_storage_as(&self, kvs: &[KeyValue], text: bool) -> Result<Vec<Converted>> {
        let decoded = self.decode_all(kvs)?;
        self.finish(kvs, decoded, text).await
    }

    /// The wanted forms of stored objects for an answer in JSON: as text where the converter
    /// has it; and for each, whether it may be kept across requests.
    ///
    /// An object may be kept when it depends only on its stored bytes and the compiled
    /// resource: when it needed no conversion, or its conversion is the definition's own
    /// (`None`, `CEL`). What a webhook answers may change at any time — a fixed webhook rolled
    /// out under the same URL must be seen at once — so objects a webhook converted are never
    /// kept.
    pub async fn from_storage_for_json(&self, kvs: &[KeyValue]) -> Result<(Vec<Converted>, Vec<bool>)> {
        let decoded = self.decode_all(kvs)?;
        let res = self.res;
        let deterministic = res.converter().is_ok_and(|c| c.is_deterministic());
        let keep = decoded
            .iter()
            .map(|o| deterministic || !kinds::of(res).converts() || res.version_of(o) == self.version)
            .collect();
        Ok((self.finish(kvs, decoded, true).await?, keep))
    }

    /// Converts decoded stored objects to the wanted version and sets their `resourceVersion`.
    async fn finish(&self, kvs: &[KeyValue], decoded: Vec<Value>, text: bool) -> Result<Vec<Converted>> {
        let mut converted = self.convert_as(decoded, self.version, text).await?;
        // The converter keeps metadata, but resourceVersion is ours to say.
        for (obj, kv) in converted.iter_mut().zip(kvs) {
            match obj {
                Converted::Value(v) => set_resource_version(v, kv.mod_revision),
                // Text carries the metadata it was read with, resourceVersion set; should it
                // not, it becomes a value again.
                Converted::Json { metadata, .. } => {
                    let rv = metadata.get("resourceVersion").and_then(Value::as_str);
                    if rv.is_none_or(|rv| rv.parse() != Ok(kv.mod_revision)) {
                        let mut v = std::mem::replace(obj, Converted::Value(Value::Null))
                            .into_value()
                            .map_err(|e| Error::internal(e.to_string()))?;
                        set_resource_version(&mut v, kv.mod_revision);
                        *obj = Converted::Value(v);
                    }
                }
            }
        }
        Ok(converted)
    }

    /// Whether an object written at the wanted version is stored at another one (then the
    /// answer to a write is the stored object converted back, as kube answers).
    pub fn stored_elsewhere(&self) -> bool {
        kinds::of(self.res).converts() && self.res.storage_version != self.version
    }

    /// The storage form of an object.
    pub async fn to_storage(&self, obj: &Value) -> Result<Bytes> {
        let res = self.res;
        let mut stored = obj.clone();
        if kinds::of(res).converts() {
            // On writes kube reports a failed conversion as an internal error (the storage
            // encoder's), unlike reads, which pass the converter's message through.
            let converted =
                self.convert(vec![stored], &res.storage_version).await.map_err(|e| Error::internal(e.to_string()))?;
            stored = converted
                .into_iter()
                .next()
                .ok_or_else(|| Error::internal("the converter returned no object; nothing was written"))?;
        }
        kinds::of(res).on_write(&mut stored);
        if let Some(meta) = stored.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        serde_json::to_vec(&stored).map(Bytes::from).map_err(|e| Error::internal(e.to_string()))
    }

    /// Storage migration's step: a stored object's storage form at the storage version, or
    /// `None` when it is there already (or is not an object of this resource's group).
    pub async fn restored(&self, kv: &KeyValue) -> Result<Option<Bytes>> {
        let res = self.res;
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| Error::internal(format!("{}: {e}", kv.key)))?;
        let at = res.version_of(&obj);
        if at.is_empty() || at == res.storage_version {
            return Ok(None);
        }
        let storage = self.at(&res.storage_version);
        let obj = storage.from_storage(kv).await?;
        if !obj.is_object() {
            return Err(Error::internal(format!("{}: the converter returned a non-object", kv.key)));
        }
        storage.to_storage(&obj).await.map(Some)
    }
}

/// Converted objects as values (those converted without text asked for are values already).
pub fn values(converted: Vec<Converted>) -> Result<Vec<Value>> {
    converted.into_iter().map(|c| c.into_value().map_err(|e| Error::internal(e.to_string()))).collect()
}
