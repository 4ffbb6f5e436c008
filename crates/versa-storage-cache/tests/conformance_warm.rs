//! The conformance suite again on the cache over a real etcd, with every case's resource cached
//! before the case begins (a list of each prefix the cases write under starts its cache), so
//! that the cases' watches from a revision and lists at a revision are served from the window
//! rather than handed to etcd as a cold cache hands them; and with a window of 8 events, so that
//! the cases that write more hand their slow watches over to etcd.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test support fails loudly")]

#[path = "../../versa-storage-etcd/tests/support/mod.rs"]
mod support;

use std::sync::Arc;

use versa_storage::conformance::Fixture;
use versa_storage::{ListOptions, Store};
use versa_storage_cache::{CacheConfig, CacheStore};

versa_storage::conformance_tests!(make);

/// The prefixes the cases write under (`base(...)` in `versa_storage::conformance`); a name
/// missing here only leaves that case's cache cold.
const CASE_PREFIXES: &[&str] = &[
    "at-revision",
    "bad-token",
    "cas",
    "compaction",
    "concurrent",
    "crud",
    "format",
    "get-at",
    "guaranteed",
    "pages",
    "prefix",
    "read-your-writes",
    "revisions",
    "size",
    "snapshot",
    "watch-history",
    "watch-history-marker",
    "watch-now",
    "watch-prefix",
    "watch-progress",
    "watch-progress-other",
];

async fn make(case: &'static str) -> Fixture {
    let server = support::for_case(case).await;
    let etcd = Arc::new(server.store().await);
    let mut config = CacheConfig::new("");
    config.progress_requests = etcd.orders_progress();
    config.window = 8;
    let store = CacheStore::new(etcd, config);
    for prefix in CASE_PREFIXES {
        store.list(&format!("/conformance/{prefix}/"), ListOptions::default()).await.unwrap();
    }
    Fixture { store: Arc::new(store), guard: Box::new(server) }
}
