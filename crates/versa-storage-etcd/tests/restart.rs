//! An etcd restart under a running watch and a connected client: the watch re-establishes
//! itself and delivers every event exactly once, in order — including the writes made while it
//! was reconnecting — and the client's requests work again once etcd is back.

#![allow(clippy::unwrap_used, clippy::panic, reason = "helpers of tests fail loudly")]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use support::EtcdServer;
use versa_storage::{Error, KeyValue, Store, WatchEvent};

/// A hang guard for watch events, not a timing claim.
const EVENT_WAIT: Duration = Duration::from_secs(60);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// What a watch should report for a write, keyed by revision.
fn describe(event: &WatchEvent) -> String {
    let text = |kv: &KeyValue| format!("{}={}", kv.key, String::from_utf8_lossy(&kv.value));
    match event {
        WatchEvent::Added(kv) => format!("ADDED {}", text(kv)),
        WatchEvent::Modified { kv, prev } => format!("MODIFIED {} (was {:?})", text(kv), prev.as_ref().map(text)),
        WatchEvent::Deleted { prev, .. } => format!("DELETED {}", text(prev)),
        WatchEvent::Progress { revision } => format!("PROGRESS {revision}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_and_client_survive_an_etcd_restart() {
    let mut server = EtcdServer::start().await;
    let store = server.store().await;
    let base = "/restart/";
    let mut watch = store.watch(base, 0).await.unwrap();
    let mut expected = BTreeMap::new();

    let mut record = |revision: i64, event: WatchEvent| assert!(expected.insert(revision, describe(&event)).is_none());
    for i in 0..5 {
        let kv = store.create(&format!("{base}{i}"), b(&format!("v{i}"))).await.unwrap();
        record(kv.mod_revision, WatchEvent::Added(kv));
    }
    let old = store.get(&format!("{base}0")).await.unwrap().unwrap();
    let kv = store.update(&old.key, b("changed"), old.mod_revision).await.unwrap();
    record(kv.mod_revision, WatchEvent::Modified { kv, prev: Some(old) });
    let deleted = store.delete(&format!("{base}1"), None).await.unwrap();
    record(deleted.revision, WatchEvent::Deleted { revision: deleted.revision, prev: deleted.prev });

    server.stop();
    match store.create(&format!("{base}while-down"), b("x")).await {
        Err(Error::Unavailable { .. }) => {}
        other => panic!("a write while etcd is down: expected Unavailable, got {other:?}"),
    }
    server.restart().await;

    // The client works again at once (a new connection under the same client).
    assert_eq!(store.get(&format!("{base}2")).await.unwrap().unwrap().value, b("v2"));
    assert_eq!(store.get(&format!("{base}while-down")).await.unwrap(), None, "the failed write did not happen");
    // These land while the watch may still be reconnecting; it must catch up on them.
    for i in 5..10 {
        let kv = store.create(&format!("{base}{i}"), b(&format!("v{i}"))).await.unwrap();
        record(kv.mod_revision, WatchEvent::Added(kv));
    }
    let old = store.get(&format!("{base}2")).await.unwrap().unwrap();
    let kv = store.update(&old.key, b("after"), old.mod_revision).await.unwrap();
    record(kv.mod_revision, WatchEvent::Modified { kv, prev: Some(old) });
    let last = *expected.keys().last().unwrap();

    let mut seen = BTreeMap::new();
    let mut previous = 0;
    while previous < last {
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Ok(event))) => {
                let revision = event.revision();
                assert!(revision > previous, "event at {revision} after {previous}: out of order or repeated");
                previous = revision;
                seen.insert(revision, describe(&event));
            }
            // Allowed by the contract (history compacted meanwhile), but nothing compacts here.
            other => panic!("expected an event, got {other:?}"),
        }
    }
    assert_eq!(seen, expected, "every event exactly once");

    // And the watch goes on after catching up.
    let kv = store.create(&format!("{base}final"), b("z")).await.unwrap();
    loop {
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Ok(event))) => {
                assert_eq!(describe(&event), describe(&WatchEvent::Added(kv)));
                break;
            }
            other => panic!("expected the final event, got {other:?}"),
        }
    }
}

/// A watch whose etcd stays away gives up after its reconnect timeout with `Unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_gives_up_when_etcd_stays_down() {
    let mut server = EtcdServer::start().await;
    let mut config = server.config();
    config.watch_reconnect_timeout = Duration::from_secs(2);
    let store = versa_storage_etcd::EtcdStore::connect(config).await.unwrap();
    let mut watch = store.watch("/gone/", 0).await.unwrap();
    server.stop();
    loop {
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Err(Error::Unavailable { .. }))) => break,
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
    assert!(tokio::time::timeout(EVENT_WAIT, watch.next()).await.unwrap().is_none(), "Unavailable is the last item");
}
