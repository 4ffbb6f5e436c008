//! A watch cache in front of another [`Store`] (kube-apiserver's cacher, in versa's terms), so
//! that several replicas on one etcd do not each send every watch and list to it.
//!
//! [`CacheStore`] wraps the inner store (etcd) and keeps, per resource prefix
//! (`<root>/<group>/<plural>/`, see [`versa_storage::Keys`]), the current objects and a bounded
//! window of recent events, fed by one upstream watch started on the first list, watch or get at
//! a resourceVersion of that resource (`resource.rs`). Then:
//!
//! - a watch of the resource or of a namespace in it is served from the window (`watcher.rs`):
//!   one upstream watch per resource however many clients watch; a watch from a revision older
//!   than the window goes to the inner store, which answers `Expired` if it compacted it;
//! - a list at the latest revision is a consistent read from memory: the cache asks the inner
//!   store for its current revision and waits, bounded by [`CacheConfig::fresh_wait`], until it
//!   has seen that revision (asking the upstream watch for progress when that helps), else reads
//!   upstream — kube's consistent reads from cache;
//! - a list at an exact revision (or a continue token's) is answered from memory only when
//!   nothing under its prefix changed since that revision, else upstream (kube sends exact
//!   reads to etcd too, except what its cache holds); pages and tokens are the inner store's;
//! - a get with a resourceVersion (`get_at`) is answered from memory once the cache has seen
//!   that revision (`0`: at once), waiting for it as a consistent list does, else upstream —
//!   kube's cacher `Get`;
//! - gets without one and writes pass through: a get is a consistent read of one key, which
//!   costs etcd one request either way (kube 1.36 reads etcd for a `Get` without a
//!   resourceVersion too: its consistent reads from cache are for lists only).
//!
//! It is a crate of its own, not a module of the etcd backend, because it names no backend: it
//! works over any [`Store`] and runs the same conformance suite, and only the binary decides to
//! put it in front of etcd (`--watch-cache`), as it decides on encryption.

mod metrics;
mod resource;
mod watcher;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::OnceCell;
use versa_storage::{
    BoxFuture, ContinueToken, Deleted, KeyValue, ListOptions, ListPage, Result, Store, Watch, snapshot::Header,
};

pub use crate::metrics::CacheMetrics;
use crate::resource::Resource;

/// How a [`CacheStore`] caches.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// The installation prefix (`/registry`): resources are the prefixes two segments below it.
    pub root: String,
    /// Events kept per resource for watches from a recent revision.
    pub window: usize,
    /// How long a consistent list waits for the cache to catch up before reading upstream
    /// (kube waits 3 s). Zero: answer from the cache only if it is already current.
    pub fresh_wait: Duration,
    /// Whether asking the upstream watch for progress gets a prompt, ordered answer (etcd
    /// 3.4.31/3.5.13 and later); without it a consistent list waits for events or etcd's
    /// periodic notifications.
    pub progress_requests: bool,
    /// Undelivered events a client watch buffers.
    pub watch_buffer: usize,
}

impl CacheConfig {
    /// The defaults for the installation prefix `root`.
    pub fn new(root: &str) -> Self {
        CacheConfig {
            root: root.trim_end_matches('/').to_string(),
            window: 10_000,
            fresh_wait: Duration::from_secs(3),
            progress_requests: true,
            watch_buffer: 256,
        }
    }
}

/// How many requests the cache answered and how many it sent upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub lists_from_cache: u64,
    pub lists_upstream: u64,
    pub watches_from_cache: u64,
    pub watches_upstream: u64,
    /// Upstream watches the caches opened (one per resource, again after one ended).
    pub resource_watches: u64,
    /// Gets with a resourceVersion answered from memory, and those sent upstream.
    pub gets_from_cache: u64,
    pub gets_upstream: u64,
}

/// A [`Store`] that serves lists and watches from memory and passes the rest to `inner`.
pub struct CacheStore {
    inner: Arc<dyn Store>,
    config: CacheConfig,
    /// One cell per resource prefix, filled on first use; the map is bounded by the resources
    /// the server lists or watches.
    resources: Mutex<HashMap<String, Arc<OnceCell<Arc<Resource>>>>>,
    /// The newest revision compacted through this store: reads at older ones go upstream.
    compacted: AtomicI64,
    counters: [AtomicU64; 7],
    metrics: Arc<CacheMetrics>,
}

impl std::fmt::Debug for CacheStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheStore").field("inner", &self.inner).field("config", &self.config).finish_non_exhaustive()
    }
}

const LISTS_FROM_CACHE: usize = 0;
const LISTS_UPSTREAM: usize = 1;
const WATCHES_FROM_CACHE: usize = 2;
const WATCHES_UPSTREAM: usize = 3;
const RESOURCE_WATCHES: usize = 4;
const GETS_FROM_CACHE: usize = 5;
const GETS_UPSTREAM: usize = 6;

impl CacheStore {
    /// A cache in front of `inner`.
    pub fn new(inner: Arc<dyn Store>, config: CacheConfig) -> Self {
        CacheStore {
            inner,
            config,
            resources: Mutex::new(HashMap::new()),
            compacted: AtomicI64::new(0),
            counters: Default::default(),
            metrics: Arc::default(),
        }
    }

    /// The cache's metrics (`metrics.rs`), a Prometheus collector to register beside the
    /// server's own.
    pub fn metrics(&self) -> Arc<CacheMetrics> {
        self.metrics.clone()
    }

    /// What the cache has served so far.
    pub fn stats(&self) -> CacheStats {
        let n = |i: usize| self.counters[i].load(Ordering::Relaxed);
        CacheStats {
            lists_from_cache: n(LISTS_FROM_CACHE),
            lists_upstream: n(LISTS_UPSTREAM),
            watches_from_cache: n(WATCHES_FROM_CACHE),
            watches_upstream: n(WATCHES_UPSTREAM),
            resource_watches: n(RESOURCE_WATCHES),
            gets_from_cache: n(GETS_FROM_CACHE),
            gets_upstream: n(GETS_UPSTREAM),
        }
    }

    fn count(&self, counter: usize) {
        self.counters[counter].fetch_add(1, Ordering::Relaxed);
    }

    /// The resource prefix `path` (a key or a prefix) lies in, or `None` above resource level.
    fn resource_of(&self, path: &str) -> Option<String> {
        let rest = path.strip_prefix(&self.config.root)?.strip_prefix('/')?;
        let group = rest.find('/')?;
        let plural = rest[group + 1..].find('/')? + group + 1;
        Some(format!("{}/{}", self.config.root, &rest[..=plural]))
    }

    /// The running cache of `prefix`, started if there is none (or the last one ended).
    async fn resource(&self, prefix: &str) -> Result<Arc<Resource>> {
        let cell = {
            let mut resources = self.resources.lock().unwrap_or_else(PoisonError::into_inner);
            let cell = resources.entry(prefix.to_string()).or_default();
            if cell.get().is_some_and(|r| r.ended()) {
                *cell = Arc::default();
            }
            cell.clone()
        };
        let resource = cell
            .get_or_try_init(|| async {
                self.count(RESOURCE_WATCHES);
                let metrics = self.metrics.resource(&self.config.root, prefix, self.config.window);
                Resource::start(&self.inner, prefix, self.config.window, self.config.progress_requests, metrics).await
            })
            .await?;
        Ok(resource.clone())
    }

    /// The cache that can serve a read of `prefix` at `revision` (0: latest), if any.
    async fn cache_for(&self, prefix: &str, revision: i64) -> Option<Arc<Resource>> {
        let resource = self.resource_of(prefix)?;
        if revision > 0 && revision < self.compacted.load(Ordering::Relaxed) {
            return None;
        }
        // A cache that cannot start (etcd unreachable) leaves the request to the inner store,
        // which reports the failure in its own words.
        self.resource(&resource).await.ok()
    }

    async fn list_impl(&self, prefix: &str, options: ListOptions) -> Result<ListPage> {
        let (at, start) = match &options.continue_token {
            Some(token) => {
                let token = ContinueToken::decode(token)?;
                (token.revision, token.start_key(prefix))
            }
            None => (options.revision, prefix.to_string()),
        };
        let Some(resource) = self.cache_for(prefix, at).await else {
            self.count(LISTS_UPSTREAM);
            return self.inner.list(prefix, options).await;
        };
        let fresh = match at {
            0 => {
                let current = self.inner.current_revision().await?;
                resource.wait_fresh(current, self.config.fresh_wait).await
            }
            _ => true,
        };
        if fresh && let Some(page) = page(&resource, prefix, &start, at, options.limit) {
            self.count(LISTS_FROM_CACHE);
            let metrics = &resource.metrics;
            metrics.cache_lists.inc();
            metrics.cache_list_fetched.inc_by(page.items.len() as u64);
            metrics.cache_list_returned.inc_by(page.items.len() as u64);
            if at == 0 {
                metrics.consistent_read(false, true);
            }
            return Ok(page);
        }
        self.count(LISTS_UPSTREAM);
        resource.metrics.storage_lists.inc();
        let listed = self.inner.list(prefix, options).await;
        if at == 0 {
            resource.metrics.consistent_read(true, listed.is_ok());
        }
        listed
    }

    /// kube's cacher `Get` with a resourceVersion: from memory once the cache has seen
    /// `min_revision` (0: at once, however stale), waiting for it at most
    /// [`CacheConfig::fresh_wait`]; after that the inner store answers, which reports
    /// `FutureRevision` if it has not reached the revision either.
    async fn get_at_impl(&self, key: &str, min_revision: i64) -> Result<Option<KeyValue>> {
        if let Some(resource) = self.cache_for(key, 0).await
            && resource.wait_fresh(min_revision, self.config.fresh_wait).await
        {
            self.count(GETS_FROM_CACHE);
            return Ok(resource.lock().objects.get(key).cloned());
        }
        self.count(GETS_UPSTREAM);
        self.inner.get_at(key, min_revision).await
    }

    async fn watch_impl(&self, prefix: &str, revision: i64) -> Result<Watch> {
        if let Some(resource) = self.cache_for(prefix, revision).await {
            // "From now" is from the store's revision now, which the cache may not have seen.
            let start = if revision > 0 { revision } else { self.inner.current_revision().await? };
            if start >= resource.lock().window_start {
                self.count(WATCHES_FROM_CACHE);
                let (inner, buffer) = (self.inner.clone(), self.config.watch_buffer);
                return Ok(watcher::spawn(resource, inner, prefix.to_string(), start, buffer));
            }
        }
        self.count(WATCHES_UPSTREAM);
        self.inner.watch(prefix, revision).await
    }
}

/// A page of `prefix` from `start` as it was at `at` (0: the cache's revision), or `None` when
/// the cache does not hold the objects as they were at `at`.
fn page(resource: &Resource, prefix: &str, start: &str, at: i64, limit: usize) -> Option<ListPage> {
    let state = resource.lock();
    let revision = match at {
        0 => state.revision,
        at if at >= state.window_start && at <= state.revision && !state.changed_since(prefix, at) => at,
        _ => return None,
    };
    let mut items: Vec<KeyValue> = Vec::new();
    let mut more = false;
    for (key, kv) in state.objects.range(start.to_string()..) {
        if !key.starts_with(prefix) {
            break;
        }
        if limit > 0 && items.len() == limit {
            more = true;
            break;
        }
        items.push(kv.clone());
    }
    let continue_token = match items.last() {
        Some(last) if more => Some(ContinueToken::after(prefix, &last.key, revision).encode()),
        _ => None,
    };
    Some(ListPage { items, revision, continue_token })
}

impl Store for CacheStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        self.inner.get(key)
    }

    fn get_at<'a>(&'a self, key: &'a str, min_revision: i64) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(self.get_at_impl(key, min_revision))
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListPage>> {
        Box::pin(self.list_impl(prefix, options))
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<KeyValue>> {
        self.inner.create(key, value)
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_revision: i64) -> BoxFuture<'a, Result<KeyValue>> {
        self.inner.update(key, value, expected_revision)
    }

    fn delete<'a>(&'a self, key: &'a str, expected_revision: Option<i64>) -> BoxFuture<'a, Result<Deleted>> {
        self.inner.delete(key, expected_revision)
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<i64>> {
        self.inner.current_revision()
    }

    fn watch<'a>(&'a self, prefix: &'a str, revision: i64) -> BoxFuture<'a, Result<Watch>> {
        Box::pin(self.watch_impl(prefix, revision))
    }

    fn compact(&self, revision: i64) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.inner.compact(revision).await?;
            self.compacted.fetch_max(revision, Ordering::Relaxed);
            Ok(())
        })
    }

    fn stale(&self, kv: &KeyValue) -> bool {
        self.inner.stale(kv)
    }

    fn snapshot<'a>(&'a self, out: tokio::sync::mpsc::Sender<Bytes>) -> BoxFuture<'a, Result<Header>> {
        self.inner.snapshot(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Nothing;

    impl Store for Nothing {
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
            unimplemented!("not called")
        }
        fn list<'a>(&'a self, _: &'a str, _: ListOptions) -> BoxFuture<'a, Result<ListPage>> {
            unimplemented!("not called")
        }
        fn create<'a>(&'a self, _: &'a str, _: Bytes) -> BoxFuture<'a, Result<KeyValue>> {
            unimplemented!("not called")
        }
        fn update<'a>(&'a self, _: &'a str, _: Bytes, _: i64) -> BoxFuture<'a, Result<KeyValue>> {
            unimplemented!("not called")
        }
        fn delete<'a>(&'a self, _: &'a str, _: Option<i64>) -> BoxFuture<'a, Result<Deleted>> {
            unimplemented!("not called")
        }
        fn current_revision(&self) -> BoxFuture<'_, Result<i64>> {
            unimplemented!("not called")
        }
        fn watch<'a>(&'a self, _: &'a str, _: i64) -> BoxFuture<'a, Result<Watch>> {
            unimplemented!("not called")
        }
        fn compact(&self, _: i64) -> BoxFuture<'_, Result<()>> {
            unimplemented!("not called")
        }
    }

    /// Which cache a path is served from: (root, path, resource prefix).
    #[test]
    fn resource_prefixes() {
        for (root, path, want) in [
            ("/registry", "/registry/stable.example.com/crontabs/", Some("/registry/stable.example.com/crontabs/")),
            ("/registry", "/registry/stable.example.com/crontabs/ns/", Some("/registry/stable.example.com/crontabs/")),
            ("/registry", "/registry/g/p/ns/name", Some("/registry/g/p/")),
            ("/registry/", "/registry//namespaces/", Some("/registry//namespaces/")),
            ("/registry", "/registry/g/", None),
            ("/registry", "/registry/g/p", None),
            ("/registry", "/registryx/g/p/", None),
            ("/registry", "/other/g/p/", None),
            ("/registry", "", None),
            ("", "/conformance/case/foos/", Some("/conformance/case/")),
        ] {
            let store = CacheStore::new(Arc::new(Nothing), CacheConfig::new(root));
            assert_eq!(store.resource_of(path).as_deref(), want, "{root:?} {path:?}");
        }
    }
}
