//! Rendered objects, cached: the JSON answer for one stored object at one version.
//!
//! Reading an object means parsing its stored JSON, coercing, pruning and defaulting it with
//! its version's schema, converting it and serialising it again — most of what a large LIST
//! costs. The result depends only on the stored bytes (identified by key and modification
//! revision), the compiled resource (its build id) and the requested version, so it is cached
//! under exactly those, and a LIST of unchanged objects becomes a concatenation. The cache is
//! bounded ([`CACHE_BYTES`]); when full it starts over, which is crude but never wrong.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use versa_storage::KeyValue;

use super::objects::from_storage;
use crate::registry::Resource;
use crate::status::Status;

/// Bytes of rendered objects kept at most.
pub const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Rendered objects by (resource build, version, key), with the revision they were rendered at.
#[derive(Debug, Default)]
pub struct RenderCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<(u64, String, String), (i64, Bytes)>,
    bytes: usize,
}

impl RenderCache {
    /// The JSON of `kv` as [`from_storage`] makes it at `version`, from the cache or rendered
    /// now (and cached).
    pub fn render(&self, res: &Resource, kv: &KeyValue, version: &str) -> Result<Bytes, Status> {
        let key = (res.id, version.to_owned(), kv.key.clone());
        if let Some((rev, bytes)) = self.lock().entries.get(&key)
            && *rev == kv.mod_revision
        {
            return Ok(bytes.clone());
        }
        let obj = from_storage(res, kv, version)?;
        let bytes = Bytes::from(serde_json::to_vec(&obj).map_err(|e| Status::internal(e.to_string()))?);
        let mut inner = self.lock();
        if inner.bytes + bytes.len() > CACHE_BYTES {
            inner.entries.clear();
            inner.bytes = 0;
        }
        inner.bytes += bytes.len();
        if let Some((_, old)) = inner.entries.insert(key, (kv.mod_revision, bytes.clone())) {
            inner.bytes -= old.len();
        }
        Ok(bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
