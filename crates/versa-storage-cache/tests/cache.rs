//! What the cache adds over the conformance suite, on a real etcd: many client watches of a
//! resource share one etcd watch; a client watch that falls behind a small window goes on from
//! etcd without a gap or a repeat; a list the cache has caught up for is answered from memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

#[path = "../../versa-storage-etcd/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use support::EtcdServer;
use versa_storage::{ListOptions, Store, Watch, WatchEvent};
use versa_storage_cache::{CacheConfig, CacheStore};

/// A hang guard, not a timing claim.
const EVENT_WAIT: Duration = Duration::from_secs(20);

async fn next_event(watch: &mut Watch) -> WatchEvent {
    loop {
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
            Ok(Some(Ok(event))) => return event,
            other => panic!("expected a watch event, got {other:?}"),
        }
    }
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
}
