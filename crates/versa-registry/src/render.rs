//! Rendered objects, cached: the JSON answer for one stored object at one version.
//!
//! Reading an object means parsing its stored JSON, coercing, pruning and defaulting it with
//! its version's schema, converting it and serialising it again — most of what a large LIST
//! costs. Unless a webhook converted it, the result depends only on the stored bytes
//! (identified by key and modification revision), the compiled resource (its build id) and the
//! requested version, so it is cached under exactly those, and a LIST of unchanged objects
//! becomes a concatenation. Objects a webhook converted are never cached: its answers can
//! change at any time (`Boundary::from_storage_for_json` says which may be kept). The cache is
//! bounded ([`CACHE_BYTES`]); when full it starts over, which is crude but never wrong.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use versa_conversion::Converted;
use versa_storage::KeyValue;

use crate::error::{Error, Result};
use crate::storage::Boundary;

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
    /// The JSON of `kv` at the boundary's version, from the cache or rendered now (and
    /// cached).
    pub async fn render(&self, boundary: Boundary<'_>, kv: &KeyValue) -> Result<Bytes> {
        let mut all = self.render_all(boundary, std::slice::from_ref(kv)).await?;
        all.pop().ok_or_else(|| Error::internal("nothing rendered"))
    }

    /// [`RenderCache::render`] for a page: the objects not cached are converted in one batch.
    pub async fn render_all(&self, boundary: Boundary<'_>, kvs: &[KeyValue]) -> Result<Vec<Bytes>> {
        let key = |kv: &KeyValue| (boundary.resource().id, boundary.version().to_owned(), kv.key.clone());
        let mut out: Vec<Option<Bytes>> = {
            let inner = self.lock();
            kvs.iter()
                .map(|kv| match inner.entries.get(&key(kv)) {
                    Some((rev, bytes)) if *rev == kv.mod_revision => Some(bytes.clone()),
                    _ => None,
                })
                .collect()
        };
        let missing: Vec<KeyValue> =
            kvs.iter().zip(&out).filter(|(_, hit)| hit.is_none()).map(|(kv, _)| kv.clone()).collect();
        if !missing.is_empty() {
            let (objects, keep) = boundary.from_storage_for_json(&missing).await?;
            let mut rendered = Vec::with_capacity(missing.len());
            for obj in objects {
                let json = match obj {
                    Converted::Json { json, .. } => json,
                    Converted::Value(v) => serde_json::to_vec(&v).map_err(|e| Error::internal(e.to_string()))?,
                };
                rendered.push(Bytes::from(json));
            }
            let mut inner = self.lock();
            for ((kv, bytes), _) in missing.iter().zip(&rendered).zip(&keep).filter(|(_, keep)| **keep) {
                if inner.bytes + bytes.len() > CACHE_BYTES {
                    inner.entries.clear();
                    inner.bytes = 0;
                }
                inner.bytes += bytes.len();
                if let Some((_, old)) = inner.entries.insert(key(kv), (kv.mod_revision, bytes.clone())) {
                    inner.bytes -= old.len();
                }
            }
            let mut fresh = rendered.into_iter();
            for slot in out.iter_mut().filter(|s| s.is_none()) {
                *slot = fresh.next();
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
