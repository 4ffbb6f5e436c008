//! Several clients of one etcd, as several versa replicas are: each sees the others' writes at
//! once (reads are linearizable) and their events on its watches; compare-and-swap holds across
//! them. And a client of no etcd at all fails with `Unavailable`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "helpers of tests fail loudly")]

mod support;

use std::time::Duration;

use bytes::Bytes;
use support::EtcdServer;
use versa_storage::{Error, ListOptions, Store, Watch, WatchEvent};
use versa_storage_etcd::{EtcdConfig, EtcdStore};

/// A hang guard for watch events, not a timing claim.
const EVENT_WAIT: Duration = Duration::from_secs(10);

async fn next_event(watch: &mut Watch) -> WatchEvent {
    support::next_event(watch, EVENT_WAIT).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_see_each_others_writes_and_events() {
    let server = EtcdServer::start().await;
    let (a, b) = (server.store().await, server.store().await);
    let base = "/clients/";
    let mut watch_a = a.watch(base, 0).await.unwrap();
    let mut watch_b = b.watch(base, 0).await.unwrap();

    let created = a.create("/clients/x", Bytes::from_static(b"from a")).await.unwrap();
    assert_eq!(b.get("/clients/x").await.unwrap().as_ref(), Some(&created), "b reads a's create at once");
    assert_eq!(next_event(&mut watch_b).await, WatchEvent::Added(created.clone()));
    assert_eq!(next_event(&mut watch_a).await, WatchEvent::Added(created.clone()));

    let updated = b.update("/clients/x", Bytes::from_static(b"from b"), created.mod_revision).await.unwrap();
    assert_eq!(a.get("/clients/x").await.unwrap().as_ref(), Some(&updated));
    let modified = WatchEvent::Modified { kv: updated.clone(), prev: Some(created.clone()) };
    assert_eq!(next_event(&mut watch_a).await, modified);
    assert_eq!(next_event(&mut watch_b).await, modified);

    // a's view is stale now: its compare-and-swap loses to b's write.
    match a.update("/clients/x", Bytes::from_static(b"stale"), created.mod_revision).await {
        Err(Error::Conflict { expected, .. }) => assert_eq!(expected, created.mod_revision),
        other => panic!("stale update from a: expected Conflict, got {other:?}"),
    }
    assert!(matches!(a.create("/clients/x", Bytes::from_static(b"again")).await, Err(Error::AlreadyExists { .. })));

    let deleted = a.delete("/clients/x", Some(updated.mod_revision)).await.unwrap();
    assert_eq!(deleted.prev, updated);
    assert_eq!(b.get("/clients/x").await.unwrap(), None);
    let gone = WatchEvent::Deleted { revision: deleted.revision, prev: updated };
    assert_eq!(next_event(&mut watch_b).await, gone);
    assert_eq!(next_event(&mut watch_a).await, gone);

    // Both read the same store revision.
    let (ra, rb) = (a.current_revision().await.unwrap(), b.current_revision().await.unwrap());
    assert_eq!(ra, rb);
    assert_eq!(a.list(base, ListOptions::default()).await.unwrap().revision, ra);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_to_no_etcd_is_unavailable() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = EtcdConfig::new([format!("http://127.0.0.1:{port}")]);
    config.connect_timeout = Duration::from_secs(2);
    match EtcdStore::connect(config).await {
        Err(Error::Unavailable { message, .. }) => assert!(message.contains(&port.to_string()), "{message}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}
