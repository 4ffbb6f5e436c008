//! The backend conformance suite (`versa_storage::conformance`) on the embedded store, each case
//! in a fresh data directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use versa_storage::conformance::Fixture;
use versa_storage_embedded::{Config, EmbeddedStore};

async fn make(_case: &'static str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path(), Config::default()).unwrap();
    Fixture { store: Arc::new(store), guard: Box::new(dir) }
}

versa_storage::conformance_tests!(make);
