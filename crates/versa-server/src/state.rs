//! What every request and every background task shares: [`State`] — the store, the served
//! registry, authentication, the caches, metrics, options, leadership, what this replica tells
//! the others it serves, and the shutdown signal — and the small pieces of state it holds
//! ([`Startup`], [`MigrationOptions`]). Built once by `lib.rs`; everything else takes it as
//! `Arc<State>` and nothing here imports a module that uses it.

use std::sync::{Arc, Mutex, RwLock};

use tokio_util::sync::CancellationToken;
use versa_registry::Registry;
use versa_storage::{Keys, Store};

use crate::admission::configured::Configured;
use crate::auth::Auth;
use crate::metrics::Metrics;
use crate::openapi::OpenApiCache;
use crate::{audit, leader, limits, replicas};

/// What every request shares.
#[derive(Debug)]
pub struct State {
    pub store: Arc<dyn Store>,
    pub keys: Keys,
    pub auth: Auth,
    /// Standalone: ServiceAccount tokens — their issuer (the `token` subresource) and their
    /// authenticator (TokenReviews); behind kube-apiserver, kube's.
    pub service_accounts: Option<crate::service_account::authenticator::ServiceAccountAuthenticator>,
    pub registry: Registry,
    pub openapi: Mutex<OpenApiCache>,
    pub metrics: Metrics,
    /// How converters are built (webhook timeout).
    pub conversion: versa_conversion::Options,
    /// How storage migrations run.
    pub migration: MigrationOptions,
    /// Whether a garbage collector acts on `ownerReferences` and the `orphan` /
    /// `foregroundDeletion` finalizers (deletes then add them for `propagationPolicy`): kube's
    /// in cluster mode, versa's own standalone (`controllers::garbage_collector`).
    pub garbage_collection: bool,
    /// Cluster mode: whether kube-apiserver has been reached and the set-up is done (until then
    /// `/readyz` fails with the reason and other requests get 503).
    pub startup: Option<Arc<Startup>>,
    /// Requests in flight and how long each may run (`limits.rs`).
    pub limits: limits::RequestLimits,
    pub inflight: limits::InFlight,
    /// The admission configuration in force (`admission/`).
    pub admission: Configured,
    /// Rendered objects (the LIST and GET fast path).
    pub render: versa_registry::render::RenderCache,
    /// The audit policy and log; `None` (no policy): nothing is audited.
    pub audit: Option<audit::Auditor>,
    /// Whether this replica does the once-only work now (`leader.rs`).
    pub leadership: leader::Leadership,
    /// Which definitions this replica's writes follow, told to the others (`replicas.rs`).
    pub replicas: Arc<replicas::Replicas>,
    /// Cancelled when the server shuts down: watches and the controller end.
    pub shutdown: CancellationToken,
}

/// How migrations run.
#[derive(Debug, Clone)]
pub struct MigrationOptions {
    /// Migrate automatically when the storage version changes.
    pub automatic: bool,
    /// Objects rewritten per second at most.
    pub rate: u32,
}

impl Default for MigrationOptions {
    fn default() -> Self {
        MigrationOptions { automatic: true, rate: 200 }
    }
}

/// Whether cluster mode is set up: `None` once kube-apiserver has been reached and the serving
/// certificate, client CAs and front-proxy settings are in place; until then, why not.
#[derive(Debug, Default)]
pub struct Startup {
    waiting: RwLock<Option<String>>,
}

impl Startup {
    /// Why versa is not ready yet, if it is not.
    pub fn pending(&self) -> Option<String> {
        match self.waiting.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Records why versa is not ready (`None`: it is).
    pub fn set(&self, reason: Option<String>) {
        match self.waiting.write() {
            Ok(mut g) => *g = reason,
            Err(poisoned) => *poisoned.into_inner() = reason,
        }
    }
}
