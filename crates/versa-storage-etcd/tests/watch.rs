//! Watch behaviour that only a real etcd shows: progress notifications never overtake events
//! (etcd before 3.4.31 answers progress requests out of order, etcd-io/etcd#15220), a dropped
//! watch is cancelled in etcd, and expired revisions name etcd's compaction point.

#![allow(clippy::unwrap_used, clippy::panic, reason = "helpers of tests fail loudly")]

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use support::EtcdServer;
use versa_storage::{Error, ListOptions, Store, WatchEvent};

/// A hang guard for watch events, not a timing claim.
const EVENT_WAIT: Duration = Duration::from_secs(20);

/// Regression for etcd-io/etcd#15220: a watch catching up on history, asked for progress at
/// once and again and again, must not report progress past an event it has not delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_never_overtakes_events() {
    const WRITERS: usize = 8;
    const WRITES: usize = 150;
    let server = EtcdServer::start().await;
    let store = Arc::new(server.store().await);
    let start = store.current_revision().await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in 0..WRITES {
                let kv = store.create(&format!("/history/{w}/{i}"), Bytes::from_static(b"x")).await.unwrap();
                revisions.push(kv.mod_revision);
            }
            revisions
        }));
    }
    let mut written = BTreeSet::new();
    for task in tasks {
        written.extend(task.await.unwrap());
    }
    let last = *written.last().unwrap();

    let mut watch = store.watch("/history/", start).await.unwrap();
    let mut seen = BTreeSet::new();
    let mut progress_seen = false;
    while !(seen.len() == written.len() && progress_seen) {
        watch.request_progress();
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => {
                let missing: Vec<_> = written.range(..=revision).filter(|r| !seen.contains(*r)).take(5).collect();
                assert!(missing.is_empty(), "progress {revision} before the events at {missing:?}");
                progress_seen |= revision >= last;
            }
            Ok(Some(Ok(WatchEvent::Added(kv)))) => {
                assert!(written.contains(&kv.mod_revision), "an event nobody wrote: {kv:?}");
                assert!(seen.insert(kv.mod_revision), "event at {} delivered twice", kv.mod_revision);
            }
            other => panic!("expected an event or progress, got {other:?}"),
        }
    }
}

/// Dropping a `Watch` cancels the etcd watch behind it (no leak of server-side watchers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_are_cancelled_in_etcd() {
    let server = EtcdServer::start().await;
    let store = server.store().await;
    let watchers = || server.metric("etcd_debugging_mvcc_watcher_total");
    assert_eq!(watchers(), 0.0);
    let watches: Vec<_> = open_watches(&store).await;
    assert_eq!(watchers(), 3.0);
    drop(watches);
    let deadline = std::time::Instant::now() + EVENT_WAIT;
    while watchers() > 0.0 {
        assert!(std::time::Instant::now() < deadline, "etcd still has {} watchers", watchers());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn open_watches(store: &impl Store) -> Vec<versa_storage::Watch> {
    let mut watches = Vec::new();
    for prefix in ["/a/", "/b/", "/c/"] {
        watches.push(store.watch(prefix, 0).await.unwrap());
    }
    watches
}

/// `Expired` names etcd's compaction point, for lists and for watches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_names_the_compaction_point() {
    let server = EtcdServer::start().await;
    let store = server.store().await;
    let first = store.create("/expired/a", Bytes::from_static(b"1")).await.unwrap();
    let second = store.update("/expired/a", Bytes::from_static(b"2"), first.mod_revision).await.unwrap();
    store.compact(second.mod_revision).await.unwrap();
    // Compacting again, or to an older revision, is not an error.
    store.compact(second.mod_revision).await.unwrap();
    store.compact(first.mod_revision).await.unwrap();

    match store.list("/expired/", ListOptions { revision: first.mod_revision, ..Default::default() }).await {
        Err(Error::Expired { requested, compacted }) => {
            assert_eq!((requested, compacted), (first.mod_revision, second.mod_revision));
        }
        other => panic!("expected Expired, got {other:?}"),
    }
    let mut watch = store.watch("/expired/", first.mod_revision - 1).await.unwrap();
    match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
        Ok(Some(Err(Error::Expired { requested, compacted }))) => {
            assert_eq!((requested, compacted), (first.mod_revision, second.mod_revision));
        }
        other => panic!("expected Expired, got {other:?}"),
    }
    assert!(tokio::time::timeout(EVENT_WAIT, watch.next()).await.unwrap().is_none(), "Expired is the last item");
    let future = store.current_revision().await.unwrap() + 10;
    assert!(matches!(store.compact(future).await, Err(Error::FutureRevision { requested, .. }) if requested == future));
}
