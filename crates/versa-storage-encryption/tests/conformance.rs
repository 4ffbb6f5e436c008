//! The backend conformance suite (`versa_storage::conformance`) through an [`EncryptedStore`]
//! that encrypts every key (`*.*`, aesgcm) in front of the embedded store: encryption changes no
//! behaviour of the store — and the inner store holds no plaintext.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use versa_storage::Store as _;
use versa_storage::conformance::Fixture;
use versa_storage_embedded::{Config, EmbeddedStore};
use versa_storage_encryption::EncryptedStore;

const CONFIG: &str = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["*.*"]
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
      - identity: {}
"#;

async fn make(_case: &'static str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let inner = Arc::new(EmbeddedStore::open(dir.path(), Config::default()).unwrap());
    let config = versa_storage_encryption::parse(CONFIG).unwrap();
    let store = EncryptedStore::new(inner, "/conformance", &config);
    Fixture { store: Arc::new(store), guard: Box::new(dir) }
}

// Every case but the snapshot's, which holds what the inner store holds: backups of an encrypted
// store stay encrypted (`the_snapshot_holds_ciphertext` below).
versa_storage::conformance_tests!(@cases make;
    create_get_update_delete,
    compare_and_swap,
    revisions_strictly_increase,
    list_is_prefix_scoped,
    pagination_reads_one_revision,
    list_at_revision,
    invalid_continue_token,
    watch_from_revision,
    watch_from_now,
    watch_is_prefix_scoped,
    watch_progress,
    compaction_expires_old_revisions,
    value_size_limit,
    concurrent_writers,
    gets_see_acknowledged_writes,
    get_at_revision,
    guaranteed_update_paths,
    data_format_is_recorded_and_a_newer_one_refused,
);

#[tokio::test]
async fn the_inner_store_holds_ciphertext_only() {
    let dir = tempfile::tempdir().unwrap();
    let inner = Arc::new(EmbeddedStore::open(dir.path(), Config::default()).unwrap());
    let store = EncryptedStore::new(inner.clone(), "/conformance", &versa_storage_encryption::parse(CONFIG).unwrap());
    store.create("/conformance/g/things/a", bytes::Bytes::from("plain secret value")).await.unwrap();
    let raw = inner.get("/conformance/g/things/a").await.unwrap().unwrap();
    assert!(raw.value.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{:?}", raw.value);
    assert!(!raw.value.windows(12).any(|w| w == b"plain secret"));
    assert_eq!(store.get("/conformance/g/things/a").await.unwrap().unwrap().value, "plain secret value");
    // A backup holds what the disk holds.
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let snapshot = tokio::spawn(async move { store.snapshot(tx).await });
    let mut bytes = Vec::new();
    while let Some(chunk) = rx.recv().await {
        bytes.extend_from_slice(&chunk);
    }
    snapshot.await.unwrap().unwrap();
    assert!(bytes.windows(23).any(|w| w == b"k8s:enc:aesgcm:v1:key1:"));
    assert!(!bytes.windows(12).any(|w| w == b"plain secret"));
}
