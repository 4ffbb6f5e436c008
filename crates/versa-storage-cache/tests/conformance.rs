//! The backend-independent conformance suite on the cache in front of a real etcd. Cases share
//! one etcd while any of them runs (the last one out stops it), except those that compact, which
//! get their own. The root is empty, so each case's `/conformance/<case>/` is a resource prefix
//! the cache serves, and the cases that read below it (`foos/`) read a part of one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test support fails loudly")]

#[path = "../../versa-storage-etcd/tests/support/mod.rs"]
mod support;

use std::sync::Arc;

use versa_storage::conformance::Fixture;
use versa_storage_cache::{CacheConfig, CacheStore};

versa_storage::conformance_tests!(make);

async fn make(case: &'static str) -> Fixture {
    let server = support::for_case(case).await;
    let etcd = Arc::new(server.store().await);
    let mut config = CacheConfig::new("");
    // The test etcd may not answer progress requests in order; its periodic notifications
    // come every second. A small window makes slow watches hand over to etcd in some cases.
    config.progress_requests = etcd.orders_progress();
    let store = CacheStore::new(etcd, config);
    Fixture { store: Arc::new(store), guard: Box::new(server) }
}
