//! What the cache adds over the conformance suite, on a real etcd: many client watches of a
//! resource share one etcd watch; a client watch that falls behind a small window goes on from
//! etcd without a gap or a repeat, and so does one whose cache loses its etcd watch; a list the
//! cache has caught up for is answered from memory, and so is a get with a resourceVersion.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

#[path = "../../versa-storage-etcd/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use support::EtcdServer;
use versa_storage::{Deleted, Error, KeyValue, ListOptions, ListPage, Store, Watch, WatchEvent};
use versa_storage_cache::{CacheConfig, CacheStore};

/// A hang guard, not a timing claim.
const EVENT_WAIT: Duration = Duration::from_secs(20);

async fn next_event(watch: &mut Watch) -> WatchEvent {
    support::next_event(watch, EVENT_WAIT).await
}

async fn cache(server: &EtcdServer, window: usize) -> CacheStore {
    let mut config = CacheConfig::new("/registry");
    config.window = window;
    config.watch_buffer = 1;
    CacheStore::new(Arc::new(server.store().await), config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_watches_of_a_resource_share_one_etcd_watch() {
    let server = EtcdServer::start().await;
    let store = cache(&server, 100).await;
    let before = server.metric("etcd_debugging_mvcc_watcher_total");
    let mut watches = Vec::new();
    for i in 0..50 {
        let prefix = if i % 2 == 0 { "/registry/g/things/" } else { "/registry/g/things/ns-a/" };
        watches.push(store.watch(prefix, 0).await.unwrap());
    }
    let created = store.create("/registry/g/things/ns-a/x", Bytes::from_static(b"x")).await.unwrap();
    for watch in &mut watches {
        assert_eq!(next_event(watch).await, WatchEvent::Added(created.clone()));
    }
    assert_eq!(server.metric("etcd_debugging_mvcc_watcher_total") - before, 1.0, "one etcd watch for 50 clients");
    let stats = store.stats();
    assert_eq!((stats.watches_from_cache, stats.resource_watches), (50, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_behind_the_window_goes_on_from_etcd_in_order() {
    let server = EtcdServer::start().await;
    let store = cache(&server, 4).await;
    let key = "/registry/g/things/ns/counter";
    let first = store.create(key, Bytes::from_static(b"0")).await.unwrap();
    // Read nothing while 40 writes go by: the window holds 4 of them.
    let mut slow = store.watch("/registry/g/things/", first.mod_revision).await.unwrap();
    let mut revision = first.mod_revision;
    let mut written = Vec::new();
    for i in 1..=40 {
        let kv = store.update(key, Bytes::from(i.to_string()), revision).await.unwrap();
        revision = kv.mod_revision;
        written.push(kv);
    }
    for kv in &written {
        match next_event(&mut slow).await {
            WatchEvent::Modified { kv: got, .. } => assert_eq!(&got, kv),
            other => panic!("expected {kv:?}, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_answered_from_memory_once_the_cache_is_current() {
    let server = EtcdServer::start().await;
    let store = cache(&server, 100).await;
    for i in 0..5 {
        store.create(&format!("/registry/g/things/ns/{i}"), Bytes::from_static(b"v")).await.unwrap();
    }
    // The first list starts the cache at the store's revision, so it is current.
    let all = store.list("/registry/g/things/", ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), 5);
    let page = store.list("/registry/g/things/ns/", ListOptions { limit: 2, ..Default::default() }).await.unwrap();
    let rest = store
        .list("/registry/g/things/ns/", ListOptions { continue_token: page.continue_token, ..Default::default() })
        .await
        .unwrap();
    assert_eq!([page.items, rest.items].concat(), all.items);
    let stats = store.stats();
    assert_eq!((stats.lists_from_cache, stats.lists_upstream), (3, 0), "{stats:?}");
    // Above resource level, the cache has nothing to say.
    store.list("/registry/g/", ListOptions::default()).await.unwrap();
    assert_eq!(store.stats().lists_upstream, 1);

    // The same, in kube's metrics: two consistent lists and a continued one from memory, the
    // cache's own initial list from etcd.
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(store.metrics()));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let labels = r#"group="g",resource="things""#;
    for series in [
        format!("apiserver_watch_cache_initializations_total{{{labels}}} 1"),
        format!("apiserver_cache_list_total{{{labels},index=\"\"}} 3"),
        format!("apiserver_cache_list_returned_objects_total{{{labels}}} 10"),
        format!(r#"apiserver_watch_cache_consistent_read_total{{{labels},success="true",fallback="false"}} 2"#),
        format!("apiserver_storage_list_total{{{labels}}} 1"),
        format!("watch_cache_capacity{{{labels}}} 100"),
        format!("apiserver_watch_cache_resource_version{{{labels}}} {}", all.revision),
    ] {
        assert!(text.lines().any(|l| l == series), "{series} in\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gets_with_a_resource_version_are_answered_from_memory() {
    let server = EtcdServer::start().await;
    let etcd = server.store().await;
    let mut config = CacheConfig::new("/registry");
    // Progress answers out of order (etcd before 3.4.31/3.5.13) would vouch for revisions whose
    // events are still on their way.
    config.progress_requests = etcd.orders_progress();
    let etcd: Arc<dyn Store> = Arc::new(etcd);
    // How long a get waits for a revision etcd has not reached before asking etcd (not asserted).
    config.fresh_wait = Duration::from_millis(200);
    let store = CacheStore::new(etcd.clone(), config);
    let key = "/registry/g/things/ns/a";
    // Written past the cache, straight to etcd: the cache learns of it from its etcd watch.
    let created = etcd.create(key, Bytes::from_static(b"1")).await.unwrap();
    assert_eq!(store.get_at(key, 0).await.unwrap(), Some(created.clone()), "the first get starts the cache");
    let updated = etcd.update(key, Bytes::from_static(b"2"), created.mod_revision).await.unwrap();
    assert_eq!(store.get_at(key, updated.mod_revision).await.unwrap(), Some(updated.clone()), "waits for it");
    assert_eq!(store.get_at("/registry/g/things/ns/b", updated.mod_revision).await.unwrap(), None);
    let stats = store.stats();
    assert_eq!((stats.gets_from_cache, stats.gets_upstream), (3, 0), "{stats:?}");
    // Without a resourceVersion a get is etcd's consistent read.
    assert_eq!(store.get(key).await.unwrap(), Some(updated.clone()));
    assert_eq!(store.stats().gets_from_cache, 3);
    // A revision etcd has not reached: the cache waits, then etcd says how far it is.
    let future = updated.mod_revision + 1_000_000;
    match store.get_at(key, future).await {
        Err(Error::FutureRevision { requested, current }) => {
            assert_eq!((requested, current), (future, updated.mod_revision))
        }
        other => panic!("expected FutureRevision, got {other:?}"),
    }
    assert_eq!(store.stats().gets_upstream, 1);
}

/// An etcd store whose first watch ends with `Unavailable` after `events` events, as a watch
/// that could not be re-established does.
#[derive(Debug)]
struct FirstWatchBreaks {
    etcd: Arc<dyn Store>,
    events: usize,
    broken: std::sync::atomic::AtomicBool,
}

impl Store for FirstWatchBreaks {
    fn get<'a>(&'a self, key: &'a str) -> versa_storage::BoxFuture<'a, versa_storage::Result<Option<KeyValue>>> {
        self.etcd.get(key)
    }
    fn list<'a>(
        &'a self,
        prefix: &'a str,
        options: ListOptions,
    ) -> versa_storage::BoxFuture<'a, versa_storage::Result<ListPage>> {
        self.etcd.list(prefix, options)
    }
    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> versa_storage::BoxFuture<'a, versa_storage::Result<KeyValue>> {
        self.etcd.create(key, value)
    }
    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        rev: i64,
    ) -> versa_storage::BoxFuture<'a, versa_storage::Result<KeyValue>> {
        self.etcd.update(key, value, rev)
    }
    fn delete<'a>(
        &'a self,
        key: &'a str,
        rev: Option<i64>,
    ) -> versa_storage::BoxFuture<'a, versa_storage::Result<Deleted>> {
        self.etcd.delete(key, rev)
    }
    fn current_revision(&self) -> versa_storage::BoxFuture<'_, versa_storage::Result<i64>> {
        self.etcd.current_revision()
    }
    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        revision: i64,
    ) -> versa_storage::BoxFuture<'a, versa_storage::Result<Watch>> {
        Box::pin(async move {
            let mut upstream = self.etcd.watch(prefix, revision).await?;
            if self.broken.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return Ok(upstream);
            }
            let (sender, watch) = Watch::channel(16);
            let events = self.events;
            tokio::spawn(async move {
                let mut passed = 0;
                while passed < events {
                    match upstream.next().await {
                        Some(Ok(WatchEvent::Progress { .. })) => continue,
                        Some(item) => {
                            sender.send(item).await;
                            passed += 1;
                        }
                        None => return,
                    }
                }
                sender.send(Err(Error::unavailable_msg("the test broke the watch"))).await;
            });
            Ok(watch)
        })
    }
    fn compact(&self, revision: i64) -> versa_storage::BoxFuture<'_, versa_storage::Result<()>> {
        self.etcd.compact(revision)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_watches_outlive_the_caches_etcd_watch() {
    let server = EtcdServer::start().await;
    let inner = FirstWatchBreaks {
        etcd: Arc::new(server.store().await),
        events: 3,
        broken: std::sync::atomic::AtomicBool::new(false),
    };
    let store = CacheStore::new(Arc::new(inner), CacheConfig::new("/registry"));
    let mut watch = store.watch("/registry/g/things/", 0).await.unwrap();
    let mut written = Vec::new();
    for i in 0..10 {
        written.push(store.create(&format!("/registry/g/things/ns/{i}"), Bytes::from_static(b"v")).await.unwrap());
    }
    for kv in written {
        assert_eq!(next_event(&mut watch).await, WatchEvent::Added(kv), "every event once, in order");
    }
    // The ended cache is replaced by a new one on the next read.
    assert_eq!(store.list("/registry/g/things/", ListOptions::default()).await.unwrap().items.len(), 10);
    assert_eq!(store.stats().resource_watches, 2);
}
