//! Backup and restore of the embedded store, and its data format version: a snapshot restored
//! into a new data directory holds every key with its revisions, its revision moved past every
//! old `resourceVersion` (lists and watches at them answer `Expired`, kube's 410); a truncated,
//! corrupted or foreign snapshot is refused and leaves nothing behind; a data directory of a
//! newer format is refused with a clear message.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use versa_storage::{Error, ListOptions, Store};
use versa_storage_embedded::{Config, DATA_FORMAT, EmbeddedStore, OpenError, RestoreError, restore};

async fn snapshot_of(store: &Arc<EmbeddedStore>) -> Vec<u8> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let task = {
        let store = store.clone();
        tokio::spawn(async move { store.snapshot(tx).await })
    };
    let mut bytes = Vec::new();
    while let Some(chunk) = rx.recv().await {
        bytes.extend_from_slice(&chunk);
    }
    task.await.unwrap().unwrap();
    bytes
}

async fn filled(dir: &Path) -> (Arc<EmbeddedStore>, i64) {
    let store = Arc::new(EmbeddedStore::open(dir, Config::default()).unwrap());
    for i in 0..300 {
        // Some values large enough to be stored deflated.
        let value = if i % 10 == 0 { "x".repeat(10_000) } else { format!("v{i}") };
        store.create(&format!("/registry/things/{i:03}"), Bytes::from(value)).await.unwrap();
    }
    let kv = store.get("/registry/things/005").await.unwrap().unwrap();
    store.update(&kv.key, Bytes::from("changed"), kv.mod_revision).await.unwrap();
    store.delete("/registry/things/006", None).await.unwrap();
    let revision = store.current_revision().await.unwrap();
    (store, revision)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_store_holds_every_key_and_expires_every_old_revision() {
    let dir = tempfile::tempdir().unwrap();
    let (store, revision) = filled(&dir.path().join("old")).await;
    let bytes = snapshot_of(&store).await;
    let before = store.list("/registry/", ListOptions::default()).await.unwrap().items;
    drop(store);

    let target = dir.path().join("new");
    let restored = restore(bytes.as_slice(), &target, 1000).unwrap();
    assert_eq!((restored.keys, restored.header.revision, restored.revision), (299, revision, revision + 1000));
    let store = EmbeddedStore::open(&target, Config::default()).unwrap();
    assert_eq!(store.list("/registry/", ListOptions::default()).await.unwrap().items, before);
    assert_eq!(store.current_revision().await.unwrap(), revision + 1000);
    // Every revision a client may hold is now too old.
    let old = store.list("/registry/", ListOptions { revision, ..Default::default() }).await;
    assert!(matches!(old, Err(Error::Expired { .. })), "{old:?}");
    assert!(matches!(store.watch("/registry/", revision).await, Err(Error::Expired { .. })));
    // New writes go on after the moved revision.
    let kv = store.create("/registry/things/new", Bytes::from("n")).await.unwrap();
    assert_eq!(kv.mod_revision, revision + 1001);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_snapshots_and_used_directories_are_refused_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = filled(&dir.path().join("old")).await;
    let bytes = snapshot_of(&store).await;
    drop(store);
    let target = dir.path().join("new");
    let staging = dir.path().join(".new.restoring");
    let truncated = &bytes[..bytes.len() - 10];
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;
    for (what, input, expected) in [
        ("truncated", truncated, "the snapshot is truncated: it ends before its end record"),
        ("flipped", flipped.as_slice(), "the snapshot is corrupt"),
        ("foreign", b"PK\x03\x04 a zip file".as_slice(), "not a versa snapshot"),
    ] {
        let err = restore(input, &target, 1000).unwrap_err().to_string();
        assert!(err.starts_with(expected), "{what}: {err}");
        assert!(!target.exists() && !staging.exists(), "{what}: a partial directory was left");
    }
    // A directory that holds anything is not restored into.
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("keep"), "x").unwrap();
    assert!(matches!(restore(bytes.as_slice(), &target, 1000), Err(RestoreError::NotEmpty(_))));
    assert!(target.join("keep").exists());
}

#[test]
fn a_data_directory_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(EmbeddedStore::open(dir.path(), Config::default()).unwrap());
    {
        use redb::ReadableDatabase as _;
        let db = redb::Database::open(dir.path().join("store.redb")).unwrap();
        let meta: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");
        assert_eq!(
            db.begin_read().unwrap().open_table(meta).unwrap().get("format").unwrap().unwrap().value(),
            DATA_FORMAT
        );
        let txn = db.begin_write().unwrap();
        txn.open_table(meta).unwrap().insert("format", DATA_FORMAT + 1).unwrap();
        txn.commit().unwrap();
    }
    let err = EmbeddedStore::open(dir.path(), Config::default()).unwrap_err();
    assert!(matches!(err, OpenError::NewerFormat { found, .. } if found == DATA_FORMAT + 1));
    assert_eq!(
        err.to_string(),
        format!(
            "data directory {} was written by a newer versa (data format 2); this versa reads data format 1 at most: run the newer versa, or restore into a new data directory a backup this versa can read",
            dir.path().display()
        )
    );
}
