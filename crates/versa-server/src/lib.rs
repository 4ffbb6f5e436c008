//! versa's HTTP side — the only crate that knows HTTP and TLS.
//!
//! Start-up follows config → complete → run: [`ServerConfig`] names what the operator chose (the
//! binary picks the storage backend and passes it in as `Arc<dyn Store>`); [`ServerConfig::complete`]
//! loads or creates the PKI (and, standalone, the ServiceAccount token key) in the data
//! directory, builds TLS and binds the listener;
//! [`Prepared::run`] serves until the shutdown future resolves, then drains connections.
//!
//! Two modes: **standalone** (versa's own CA in the data directory, an admin kubeconfig, only
//! `system:masters` allowed) and **cluster** (`cluster.rs`: behind kube-apiserver, with
//! delegated authentication and authorization and APIService registration).
//!
//! Several replicas may serve one etcd: every one serves every request, and one, elected
//! (`leader.rs`), does the work that must happen once — definition status, storage migration,
//! cleanup of deleted definitions, APIService registration, standalone's namespace controller
//! and garbage collector.
//! Each replica tells the others which definitions its writes follow (`replicas.rs`), and a
//! storage migration walks only once they all follow the new storage version.
//!
//! Every request: TLS (client certificate optional at the handshake) → authenticate → authorize
//! → route (see `handler.rs`). Errors are `metav1.Status` objects (`status.rs`).

pub mod admission;
pub mod audit;
pub mod auth;
pub mod body;
pub mod cluster;
pub mod codec;
pub mod controllers;
pub mod discovery;
pub mod follow;
mod handler;
pub mod leader;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod patch;
pub mod pki;
mod protobuf;
pub mod query;
pub mod rbac;
pub mod replicas;
pub mod request_info;
mod rest;
pub mod reviews;
pub mod selector;
mod server;
pub mod service_account;
pub mod spill;
pub mod state;
pub mod status;
pub mod tls;
pub mod token_file;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use versa_storage::Store;

pub use auth::Auth;

pub use body::{Body, full, json_response};

/// Keeps the storage gauges current until shutdown.
async fn probe_storage(state: Arc<state::State>) {
    loop {
        match state.store.current_revision().await {
            Ok(revision) => {
                state.metrics.storage_up.set(1);
                state.metrics.storage_revision.set(revision);
            }
            Err(_) => {
                state.metrics.storage_up.set(0);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_secs(10)) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Keeps `leader_election_master_status` current until shutdown.
async fn report_leadership(state: Arc<state::State>, lease: String) {
    let mut leadership = state.leadership.clone();
    loop {
        state.metrics.leading(&lease, leadership.is_leader());
        tokio::select! {
            () = leadership.changed() => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// What the operator chose.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Certificates and the admin kubeconfig live here (and the embedded store, which the
    /// binary opens).
    pub data_dir: PathBuf,
    pub store: Arc<dyn Store>,
    /// Prefix of every storage key (`/registry` by default), so that several installations can
    /// share one etcd.
    pub key_prefix: String,
    /// Standalone authentication and authorization (cluster mode builds its own).
    pub auth: Auth,
    /// Cluster mode: behind kube-apiserver.
    pub cluster: Option<cluster::ClusterConfig>,
    /// How conversion webhooks are called.
    pub conversion: versa_conversion::Options,
    /// How storage migrations run.
    pub migration: state::MigrationOptions,
    /// Requests in flight and their duration.
    pub limits: limits::RequestLimits,
    /// The audit policy and log (`audit/`); `None`: no auditing.
    pub audit: Option<audit::AuditConfig>,
    /// Several replicas: who does the once-only work (`leader.rs`). `None`: this process does
    /// it all (embedded storage is one process by construction).
    pub leader_election: Option<LeaderElection>,
    /// More metrics for `/metrics`, from parts the binary chose (the watch cache's).
    pub extra_metrics: Vec<Arc<dyn metrics::Collector>>,
}

/// Leader election among replicas: its timings and its lock.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    pub config: leader::ElectionConfig,
    pub lock: LeaderLock,
    /// Where the replicas tell each other which definitions they serve (`replicas.rs`), under
    /// the election's identity and timings; `None`: the replicas do not agree on definitions
    /// before a storage migration walks (only right for one replica).
    pub membership: Option<Arc<dyn versa_storage::lock::Membership>>,
}

/// Where the leader-election record is kept.
#[derive(Debug, Clone)]
pub enum LeaderLock {
    /// A `coordination.k8s.io/v1` Lease (cluster mode); namespace `None`: the Service's.
    Lease { namespace: Option<String>, name: String },
    /// A lock the binary built (the etcd one).
    Other(Arc<dyn versa_storage::lock::LeaseLock>),
}

/// A server ready to run: PKI loaded, TLS built, listener bound.
#[derive(Debug)]
pub struct Prepared {
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    trust: Arc<tls::ClientTrust>,
    /// Standalone mode's admin kubeconfig.
    kubeconfig: Option<PathBuf>,
    cluster: Option<cluster::Tasks>,
    /// The leader election to start, and its lock's name (for the metric).
    campaign: Option<(leader::Campaign, String)>,
    state: Arc<state::State>,
}

impl ServerConfig {
    /// Loads or creates the PKI, builds TLS and binds the listener.
    pub async fn complete(self) -> anyhow::Result<Prepared> {
        let listener = tokio::net::TcpListener::bind(self.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", self.listen))?;
        let local = listener.local_addr()?;
        let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
        let mut hosts = vec![host.clone(), "localhost".to_string(), "127.0.0.1".to_string()];
        hosts.dedup();
        let url_host = if host.contains(':') { format!("[{host}]") } else { host };
        let server_url = format!("https://{url_host}:{}", local.port());
        let replicas = match self.leader_election.as_ref().and_then(|e| Some((e, e.membership.clone()?))) {
            None => replicas::Replicas::single(),
            Some((election, membership)) => replicas::Replicas::new(
                election.config.identity.clone(),
                membership,
                election.config.retry_period,
                election.config.renew_deadline,
            ),
        };
        let (leadership, campaign, lease_name) = match self.leader_election {
            None => (leader::Leadership::always(), None, None),
            Some(election) => {
                election.config.validate().map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
                let lock: Arc<dyn versa_storage::lock::LeaseLock> = match election.lock {
                    LeaderLock::Other(lock) => lock,
                    LeaderLock::Lease { namespace, name } => {
                        let cluster = self.cluster.as_ref().ok_or_else(|| {
                            anyhow::anyhow!("leader election: a Lease needs cluster mode (a kubeconfig or a pod)")
                        })?;
                        let namespace = namespace.unwrap_or_else(|| cluster.service.namespace.clone());
                        let client = cluster::kube::KubeClient::new(cluster.kube.clone())
                            .map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
                        Arc::new(cluster::lease_lock::KubeLeaseLock::new(client.client().clone(), &namespace, &name))
                    }
                };
                let lease_name = lock.describe();
                let (leadership, campaign) = leader::prepare(lock, election.config, Arc::new(leader::SystemClock));
                (leadership, Some(campaign), Some(lease_name))
            }
        };
        let mut service_accounts = None;
        let (tls, trust, auth, kubeconfig, cluster, startup) = match self.cluster {
            None => {
                let pki = pki::load_or_create(&self.data_dir, &hosts, &server_url)?;
                let serving = tls::certified_key(pki.serving_cert_pem.as_bytes(), pki.serving_key_pem.as_bytes())?;
                let trust = tls::ClientTrust::new();
                trust.set(Some(&pki.ca_cert_pem), None)?;
                let tls = tls::server_config(tls::ServingCert::new(serving))?;
                // ServiceAccount tokens: signed with the data directory's key, checked after
                // every other authenticator.
                let issuer = Arc::new(service_account::Issuer::load_or_create(&self.data_dir)?);
                let accounts = service_account::authenticator::ServiceAccountAuthenticator::new(
                    issuer,
                    self.store.clone(),
                    versa_storage::Keys::new(&self.key_prefix),
                );
                let mut auth = self.auth;
                auth.authenticator =
                    Arc::new(auth::UnionAuthenticator(vec![auth.authenticator, Arc::new(accounts.clone())]));
                service_accounts = Some(accounts);
                (tls, trust, auth, Some(pki.kubeconfig), None, None)
            }
            Some(config) => {
                let prepared = cluster::prepare(config, &hosts).await?;
                let tls = tls::server_config(prepared.serving)?;
                (tls, prepared.trust, prepared.auth, None, Some(prepared.tasks), Some(prepared.startup))
            }
        };
        let audit = self.audit.map(audit::Auditor::start).transpose()?;
        let state = Arc::new(state::State {
            store: self.store,
            keys: versa_storage::Keys::new(&self.key_prefix),
            auth,
            service_accounts,
            // Standalone, the definitions are CustomResourceDefinitions too, and Namespaces
            // and Events are served; behind kube-apiserver those are kube's.
            registry: if cluster.is_some() {
                versa_registry::Registry::new()
            } else {
                versa_registry::Registry::standalone()
            },
            openapi: std::sync::Mutex::new(openapi::OpenApiCache::new()),
            metrics: metrics::Metrics::with(self.extra_metrics),
            conversion: self.conversion,
            migration: self.migration,
            garbage_collection: true,
            limits: self.limits,
            inflight: limits::InFlight::new(&self.limits),
            startup,
            render: Default::default(),
            admission: Default::default(),
            audit,
            leadership,
            replicas: Arc::new(replicas),
            shutdown: tokio_util::sync::CancellationToken::new(),
        });
        // The definitions API (each face) is published like any served resource.
        let snapshot = state.registry.snapshot();
        if let Ok(mut openapi) = state.openapi.lock() {
            for own in snapshot.resources() {
                openapi.upsert(own.kept());
            }
        }
        let campaign = campaign.zip(lease_name);
        Ok(Prepared { listener, tls, trust, kubeconfig, cluster, campaign, state })
    }
}

impl Prepared {
    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The admin kubeconfig written into the data directory (standalone mode).
    pub fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// Serves until `shutdown` resolves; then stops accepting, lets requests in flight finish
    /// (up to a grace period) and returns.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send) -> anyhow::Result<()> {
        let election = self.campaign.map(|(campaign, lease)| {
            tokio::spawn(report_leadership(self.state.clone(), lease));
            campaign.spawn(self.state.shutdown.clone())
        });
        let record = tokio::spawn(self.state.replicas.clone().run(self.state.shutdown.clone()));
        let controller = tokio::spawn(controllers::definitions::run(self.state.clone()));
        tokio::spawn(controllers::admission::run(self.state.clone()));
        tokio::spawn(probe_storage(self.state.clone()));
        let state = self.state.clone();
        tokio::spawn(leader::while_leading(self.state.leadership.clone(), self.state.shutdown.clone(), move |_| {
            controllers::namespaces::run(state.clone())
        }));
        // Standalone's garbage collector; behind kube-apiserver, kube-controller-manager's.
        if self.cluster.is_none() {
            let state = self.state.clone();
            tokio::spawn(leader::while_leading(
                self.state.leadership.clone(),
                self.state.shutdown.clone(),
                move |_| controllers::garbage_collector::run(state.clone()),
            ));
            // kube's default RBAC policy and ClusterRole aggregation.
            let state = self.state.clone();
            tokio::spawn(leader::while_leading(
                self.state.leadership.clone(),
                self.state.shutdown.clone(),
                move |_| controllers::rbac::run(state.clone()),
            ));
            // Every namespace's `default` ServiceAccount; behind kube-apiserver, kube's.
            let state = self.state.clone();
            tokio::spawn(leader::while_leading(
                self.state.leadership.clone(),
                self.state.shutdown.clone(),
                move |_| controllers::service_accounts::run(state.clone()),
            ));
        }
        if let Some(tasks) = self.cluster {
            tasks.spawn(self.state.clone());
        }
        // Writes are refused until the admission configuration has been read (from the store, or
        // from kube-apiserver once reached): give the first read a moment before serving,
        // without ever keeping the health endpoints from answering when it does not come.
        self.state.admission.wait_loaded(std::time::Duration::from_secs(5)).await;
        // Standalone's initial namespaces and default RBAC policy, before the first request.
        // Bounded: storage that does not answer must not keep the server from answering (the
        // controllers write them once it does).
        let initial = async {
            controllers::namespaces::ensure_initial(&self.state).await;
            controllers::rbac::before_serving(self.state.clone()).await;
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), initial).await;
        let result = server::serve(self.listener, self.tls, self.trust, self.state.clone(), shutdown).await;
        self.state.shutdown.cancel();
        let _ = controller.await;
        // Connections are drained: this replica writes nothing more, and its record goes.
        let _ = record.await;
        // The leader releases its lock (bounded by the renew deadline), so that another replica
        // takes over at once rather than a lease duration later.
        if let Some(election) = election {
            let _ = election.await;
        }
        if let Some(audit) = &self.state.audit {
            audit.flush().await;
        }
        result
    }
}
