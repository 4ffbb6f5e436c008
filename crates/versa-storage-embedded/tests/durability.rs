//! What the embedded store promises beyond the conformance suite: acknowledged writes survive
//! `kill -9`; one process owns a data directory; data, revisions and history survive a restart;
//! history is trimmed to its window; a watch whose consumer falls far behind still delivers
//! every event exactly once.
//!
//! The crash test runs a child process: this same test binary, re-executed with
//! `VERSA_CRASH_CHILD=<dir>` so that only `crash_child` does anything.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use versa_storage::{Error, ListOptions, Store, WatchEvent};
use versa_storage_embedded::{Config, EmbeddedStore, OpenError};

const CHILD_ENV: &str = "VERSA_CRASH_CHILD";

fn value_for(key: &str) -> Bytes {
    Bytes::from(format!("{{\"key\":\"{key}\",\"pad\":\"{}\"}}", "x".repeat(200)))
}

/// The child: writes from 8 concurrent tasks forever, printing `ACK <key>` after each
/// acknowledged create. Does nothing unless started by `acknowledged_writes_survive_kill_9`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let store = Arc::new(EmbeddedStore::open(dir.as_ref(), Config::default()).unwrap());
    println!("READY");
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let key = format!("/crash/w{w}/{i:08}");
                store.create(&key, value_for(&key)).await.unwrap();
                println!("ACK {key}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn spawn_child(dir: &std::path::Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_child(dir.path());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    while acked.len() < 2000 {
        let line = lines.next().expect("the child ended early").unwrap();
        if let Some(key) = line.strip_prefix("ACK ") {
            acked.push(key.to_string());
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Acknowledgements printed before the kill but read after it count too.
    for line in lines.map_while(Result::ok) {
        if let Some(key) = line.strip_prefix("ACK ") {
            acked.push(key.to_string());
        }
    }

    let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
    let mut max_revision = 0;
    for key in &acked {
        let kv = store.get(key).await.unwrap().unwrap_or_else(|| panic!("acknowledged key {key} lost"));
        assert_eq!(kv.value, value_for(key), "{key} intact");
        max_revision = max_revision.max(kv.mod_revision);
    }
    let after = store.create("/crash/after", Bytes::from_static(b"{}")).await.unwrap();
    assert!(after.mod_revision > max_revision, "revisions continue after the crash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_owns_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_child(dir.path());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The test harness prints its own lines first.
    while !lines.next().expect("the child ended early").unwrap().ends_with("READY") {}
    let err = EmbeddedStore::open(dir.path(), Config::default()).unwrap_err();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(matches!(err, OpenError::InUse { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("in use by another versa process"), "{message}");
    assert!(message.contains(&format!("(pid {})", child.id())), "{message}");

    // Once the holder is gone the directory opens.
    EmbeddedStore::open(dir.path(), Config::default()).unwrap();
}

#[tokio::test]
async fn data_revisions_and_history_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = {
        let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
        store.create("/other", Bytes::from_static(b"0")).await.unwrap();
        let first = store.create("/r/a", Bytes::from_static(b"1")).await.unwrap();
        let second = store.update("/r/a", Bytes::from_static(b"2"), first.mod_revision).await.unwrap();
        (first, second)
    };
    let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
    assert_eq!(store.get("/r/a").await.unwrap(), Some(second.clone()));
    assert_eq!(store.current_revision().await.unwrap(), second.mod_revision);
    let mut watch = store.watch("/r/", first.mod_revision - 1).await.unwrap();
    assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Added(kv))) if kv == first));
    assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Modified { kv, .. })) if kv == second));
    let old = store.list("/r/", ListOptions { revision: first.mod_revision, ..Default::default() }).await.unwrap();
    assert_eq!(old.items, vec![first]);
}

#[tokio::test]
async fn history_is_trimmed_to_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config { history_max_events: 10, ..Config::default() };
    let store = EmbeddedStore::open(dir.path(), config).unwrap();
    let mut revisions = Vec::new();
    for i in 0..30 {
        revisions.push(store.create(&format!("/h/{i:02}"), Bytes::from_static(b"x")).await.unwrap().mod_revision);
    }
    let old = revisions[5];
    assert!(matches!(store.watch("/h/", old).await, Err(Error::Expired { .. })));
    assert!(matches!(
        store.list("/h/", ListOptions { revision: old, ..Default::default() }).await,
        Err(Error::Expired { .. })
    ));
    // The last ten revisions are still there.
    let recent = revisions[20];
    let page = store.list("/h/", ListOptions { revision: recent, ..Default::default() }).await.unwrap();
    assert_eq!(page.items.len(), 21);
    let mut watch = store.watch("/h/", recent).await.unwrap();
    assert_eq!(watch.next().await.unwrap().unwrap().revision(), revisions[21]);
    assert_eq!(store.list("/h/", ListOptions::default()).await.unwrap().items.len(), 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_watch_falls_back_to_the_log_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config { watch_buffer: 2, broadcast_batches: 4, progress_interval: None, ..Config::default() };
    let store = Arc::new(EmbeddedStore::open(dir.path(), config).unwrap());
    let mut watch = store.watch("/slow/", 0).await.unwrap();
    let mut expected = Vec::new();
    for i in 0..200 {
        expected.push(store.create(&format!("/slow/{i:03}"), Bytes::from_static(b"x")).await.unwrap().mod_revision);
    }
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        let event = tokio::time::timeout(Duration::from_secs(20), watch.next()).await.unwrap().unwrap().unwrap();
        seen.push(event.revision());
    }
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn revision_survives_a_restart_after_all_history_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let last = {
        let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
        store.create("/c/a", Bytes::from_static(b"1")).await.unwrap();
        let last = store.create("/c/b", Bytes::from_static(b"2")).await.unwrap().mod_revision;
        store.compact(last).await.unwrap();
        last
    };
    let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
    assert_eq!(store.current_revision().await.unwrap(), last);
    assert_eq!(store.list("/c/", ListOptions::default()).await.unwrap().revision, last);
    assert!(store.create("/c/c", Bytes::from_static(b"3")).await.unwrap().mod_revision > last);
}

/// Issue 19: the broadcast keeps at most `broadcast_bytes` of keys and values, so a watch behind
/// them re-reads the log — its events are then copies decoded from the log, not the very bytes
/// written — and still receives every event, in order, with the values written (deflated in the
/// log: they are 8 KiB). With no byte bound, the same watch takes every event from the broadcast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broadcast_byte_bound_sends_a_lagging_watch_to_the_log_and_loses_nothing() {
    for (broadcast_bytes, reads_the_log) in [(64 * 1024, true), (usize::MAX, false)] {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            watch_buffer: 2,
            broadcast_batches: 1024,
            broadcast_bytes,
            progress_interval: None,
            ..Config::default()
        };
        let store = EmbeddedStore::open(dir.path(), config).unwrap();
        let mut watch = store.watch("/big/", 0).await.unwrap();
        let mut written = Vec::new();
        for i in 0..100 {
            let value = Bytes::from(format!("{{\"i\":{i},\"pad\":\"{}\"}}", "y".repeat(8 * 1024)));
            let kv = store.create(&format!("/big/{i:03}"), value.clone()).await.unwrap();
            written.push((kv.mod_revision, value));
        }
        let mut from_log = 0;
        for (revision, value) in &written {
            let event = tokio::time::timeout(Duration::from_secs(20), watch.next()).await.unwrap().unwrap().unwrap();
            let WatchEvent::Added(kv) = event else { panic!("{event:?}") };
            assert_eq!((kv.mod_revision, &kv.value), (*revision, value));
            if kv.value.as_ptr() != value.as_ptr() {
                from_log += 1;
            }
        }
        assert_eq!(from_log > 0, reads_the_log, "broadcast_bytes {broadcast_bytes}: {from_log} events from the log");
    }
}

/// Issue 19: values from 4 KiB up are stored deflated. Across a restart every form — a large
/// value replaced by a small one and back, then deleted — reads back exactly: events with their
/// previous values, and lists at each past revision.
#[tokio::test]
async fn large_values_read_back_exactly_after_a_restart() {
    let large = |c: char| Bytes::from(format!("{{\"spec\":\"{}\"}}", c.to_string().repeat(20_000)));
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c, deleted) = {
        let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
        // (A watch from revision 0 would start from now.)
        store.create("/other", Bytes::from_static(b"0")).await.unwrap();
        let a = store.create("/l/x", large('a')).await.unwrap();
        let b = store.update("/l/x", Bytes::from_static(b"{}"), a.mod_revision).await.unwrap();
        let c = store.update("/l/x", large('c'), b.mod_revision).await.unwrap();
        let deleted = store.delete("/l/x", Some(c.mod_revision)).await.unwrap();
        (a, b, c, deleted)
    };
    let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
    assert_eq!(store.get("/l/x").await.unwrap(), None);
    let mut watch = store.watch("/l/", a.mod_revision - 1).await.unwrap();
    let want = [
        WatchEvent::Added(a.clone()),
        WatchEvent::Modified { kv: b.clone(), prev: Some(a.clone()) },
        WatchEvent::Modified { kv: c.clone(), prev: Some(b.clone()) },
        WatchEvent::Deleted { revision: deleted.revision, prev: c.clone() },
    ];
    for want in want {
        assert_eq!(watch.next().await.unwrap().unwrap(), want);
    }
    for kv in [a, b, c] {
        let page = store.list("/l/", ListOptions { revision: kv.mod_revision, ..Default::default() }).await.unwrap();
        assert_eq!(page.items, vec![kv]);
    }
}
