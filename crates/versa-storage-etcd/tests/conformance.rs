//! The backend-independent conformance suite on a real etcd. Cases share one etcd while any of
//! them runs (the last one out stops it), except those that compact, which get their own.

mod support;

use std::sync::Arc;

use versa_storage::conformance::Fixture;

versa_storage::conformance_tests!(make);

async fn make(case: &'static str) -> Fixture {
    let server = support::for_case(case).await;
    // A client per case: a client belongs to the runtime it was made in, and each case has one.
    let store = server.store().await;
    Fixture { store: Arc::new(store), guard: Box::new(server) }
}
