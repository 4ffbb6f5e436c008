//! The backend-independent conformance suite on a real etcd. Cases share one etcd while any of
//! them runs (the last one out stops it), except those that compact, which get their own.

mod support;

use std::sync::{Arc, Weak};

use support::EtcdServer;
use tokio::sync::Mutex;
use versa_storage::conformance::{Fixture, needs_own_store};

versa_storage::conformance_tests!(make);

/// The etcd the running cases share; a `Weak` so that it stops when the last case ends
/// (statics are never dropped, and an etcd must not outlive the test process).
static SHARED: Mutex<Weak<EtcdServer>> = Mutex::const_new(Weak::new());

async fn make(case: &'static str) -> Fixture {
    let server = if needs_own_store(case) { Arc::new(EtcdServer::start().await) } else { shared().await };
    // A client per case: a client belongs to the runtime it was made in, and each case has one.
    let store = server.store().await;
    Fixture { store: Arc::new(store), guard: Box::new(server) }
}

async fn shared() -> Arc<EtcdServer> {
    let mut shared = SHARED.lock().await;
    if let Some(server) = shared.upgrade() {
        return server;
    }
    let server = Arc::new(EtcdServer::start().await);
    *shared = Arc::downgrade(&server);
    server
}
