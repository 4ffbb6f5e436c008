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
//!
//! Beside an object's JSON the cache keeps what its Table row needs (`kubectl get` asks for
//! Tables): the cells evaluated up to the ages of `date` columns, and its PartialObjectMetadata
//! as JSON. Both depend on the same three things as the JSON (the Table convertor belongs to
//! the compiled version), so a Table of unchanged objects is written without parsing them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use versa_conversion::Converted;
use versa_storage::KeyValue;

use crate::error::{Error, Result};
use crate::storage::Boundary;
use crate::table::{Cells, TableConvertor, partial_object_metadata};

/// Bytes of rendered objects kept at most.
pub const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Rendered objects by (resource build, version, key), with the revision they were rendered at.
#[derive(Debug, Default)]
pub struct RenderCache {
    inner: Mutex<Inner>,
}

/// The entries by storage key, then by (resource build, version): a look-up borrows the key
/// (a GET's look-up allocates nothing), and an object is seldom read at more than one version.
#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Box<str>, Vec<Slot>>,
    bytes: usize,
}

/// One object at one version of one resource build.
#[derive(Debug)]
struct Slot {
    build: u64,
    version: Box<str>,
    entry: Entry,
}

/// One object rendered at one revision.
#[derive(Debug)]
struct Entry {
    revision: i64,
    json: Bytes,
    row: Option<Arc<Row>>,
}

impl Entry {
    fn size(&self) -> usize {
        self.json.len() + self.row.as_ref().map_or(0, |r| r.cells.size() + r.metadata.len())
    }
}

/// What an object's Table row needs, whatever `includeObject` asks.
#[derive(Debug)]
pub struct Row {
    /// The cells, up to the ages of `date` columns.
    pub cells: Cells,
    /// Its `meta.k8s.io/v1` PartialObjectMetadata as JSON.
    pub metadata: Bytes,
}

/// An object's JSON and its Table row.
#[derive(Debug)]
pub struct RenderedRow {
    pub json: Bytes,
    pub row: Arc<Row>,
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
        self.render_all_kept(boundary, kvs, true).await
    }

    /// [`RenderCache::render_all`], keeping what it renders only when `keep`: a streamed list
    /// larger than the cache stops keeping its objects, which would only push out one another.
    pub async fn render_all_kept(&self, boundary: Boundary<'_>, kvs: &[KeyValue], keep: bool) -> Result<Vec<Bytes>> {
        let cached = self.cached(boundary, kvs).into_iter().map(|c| c.map(|e| e.0)).collect();
        self.render_missing(boundary, kvs, cached, keep).await
    }

    /// [`RenderCache::render_all`] with each object's Table row for `table` (the convertor of
    /// the boundary's version): rows of cached objects come from the cache, the others are
    /// evaluated from their JSON and kept beside it.
    pub async fn render_rows(
        &self,
        boundary: Boundary<'_>,
        table: &TableConvertor,
        kvs: &[KeyValue],
    ) -> Result<Vec<RenderedRow>> {
        self.render_rows_kept(boundary, table, kvs, true).await
    }

    /// [`RenderCache::render_rows`], keeping what it renders only when `keep` (see
    /// [`RenderCache::render_all_kept`]).
    pub async fn render_rows_kept(
        &self,
        boundary: Boundary<'_>,
        table: &TableConvertor,
        kvs: &[KeyValue],
        keep: bool,
    ) -> Result<Vec<RenderedRow>> {
        let (jsons, rows): (Vec<_>, Vec<_>) =
            self.cached(boundary, kvs).into_iter().map(|c| c.map_or((None, None), |(j, r)| (Some(j), r))).unzip();
        let jsons = self.render_missing(boundary, kvs, jsons, keep).await?;
        let mut out = Vec::with_capacity(kvs.len());
        let mut fresh = Vec::new();
        for ((kv, json), row) in kvs.iter().zip(jsons).zip(rows) {
            let row = match row {
                Some(row) => row,
                None => {
                    let obj: serde_json::Value =
                        serde_json::from_slice(&json).map_err(|e| Error::internal(e.to_string()))?;
                    let metadata = serde_json::to_vec(&partial_object_metadata(&obj))
                        .map_err(|e| Error::internal(e.to_string()))?;
                    let row = Arc::new(Row { cells: table.cells(&obj), metadata: Bytes::from(metadata) });
                    fresh.push((kv, row.clone()));
                    row
                }
            };
            out.push(RenderedRow { json, row });
        }
        if keep && !fresh.is_empty() {
            let mut inner = self.lock();
            for (kv, row) in fresh {
                // Only beside JSON that was kept, at the same revision.
                let json = match inner.get(boundary, kv) {
                    Some(e) if e.revision == kv.mod_revision && e.row.is_none() => e.json.clone(),
                    _ => continue,
                };
                inner.insert(boundary, kv, Entry { revision: kv.mod_revision, json, row: Some(row) });
            }
        }
        Ok(out)
    }

    /// The JSON of `kv` at the boundary's version if the cache has it at its revision.
    pub fn cached_one(&self, boundary: Boundary<'_>, kv: &KeyValue) -> Option<Bytes> {
        let inner = self.lock();
        inner.get(boundary, kv).filter(|e| e.revision == kv.mod_revision).map(|e| e.json.clone())
    }

    /// What the cache holds for each object at its revision: its JSON and, if evaluated, its
    /// Table row (one look-up for both).
    fn cached(&self, boundary: Boundary<'_>, kvs: &[KeyValue]) -> Vec<Option<(Bytes, Option<Arc<Row>>)>> {
        let inner = self.lock();
        kvs.iter()
            .map(|kv| match inner.get(boundary, kv) {
                Some(e) if e.revision == kv.mod_revision => Some((e.json.clone(), e.row.clone())),
                _ => None,
            })
            .collect()
    }

    /// The JSON of every object: `out`'s where given, the others converted in one batch and,
    /// when `keep`, kept (unless a webhook converted them).
    async fn render_missing(
        &self,
        boundary: Boundary<'_>,
        kvs: &[KeyValue],
        mut out: Vec<Option<Bytes>>,
        keep: bool,
    ) -> Result<Vec<Bytes>> {
        let missing: Vec<KeyValue> =
            kvs.iter().zip(&out).filter(|(_, hit)| hit.is_none()).map(|(kv, _)| kv.clone()).collect();
        if !missing.is_empty() {
            let (objects, keep_each) = boundary.from_storage_for_json(&missing).await?;
            let mut rendered = Vec::with_capacity(missing.len());
            for obj in objects {
                let json = match obj {
                    Converted::Json { json, .. } => json,
                    Converted::Value(v) => serde_json::to_vec(&v).map_err(|e| Error::internal(e.to_string()))?,
                };
                rendered.push(Bytes::from(json));
            }
            let mut inner = self.lock();
            let kept = keep_each.iter().map(|k| *k && keep);
            for ((kv, bytes), _) in missing.iter().zip(&rendered).zip(kept).filter(|(_, keep)| *keep) {
                inner.insert(boundary, kv, Entry { revision: kv.mod_revision, json: bytes.clone(), row: None });
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

impl Inner {
    /// The entry of `kv` at the boundary's version, whatever its revision.
    fn get(&self, boundary: Boundary<'_>, kv: &KeyValue) -> Option<&Entry> {
        let (build, version) = (boundary.resource().id, boundary.version());
        let slots = self.entries.get(kv.key.as_str())?;
        slots.iter().find(|s| s.build == build && &*s.version == version).map(|s| &s.entry)
    }

    /// Keeps `entry` for `kv` at the boundary's version, starting over when the cache would
    /// grow past its bound.
    fn insert(&mut self, boundary: Boundary<'_>, kv: &KeyValue, entry: Entry) {
        let (build, version) = (boundary.resource().id, boundary.version());
        if let Some(slots) = self.entries.get_mut(kv.key.as_str())
            && let Some(at) = slots.iter().position(|s| s.build == build && &*s.version == version)
        {
            let old = slots.swap_remove(at);
            self.bytes -= old.entry.size();
        }
        if self.bytes + entry.size() > CACHE_BYTES {
            self.entries.clear();
            self.bytes = 0;
        }
        self.bytes += entry.size();
        let slot = Slot { build, version: version.into(), entry };
        match self.entries.get_mut(kv.key.as_str()) {
            Some(slots) => slots.push(slot),
            None => {
                self.entries.insert(kv.key.as_str().into(), vec![slot]);
            }
        }
    }
}
