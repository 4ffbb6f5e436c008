//! `versa serve`: picks the storage backend, sets up logging, and runs `versa-server` until
//! SIGTERM or SIGINT (then stops accepting, lets requests finish, and closes storage — every
//! acknowledged write is already durable).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::ValueEnum;
use versa_server::cluster::{ClusterConfig, RequestHeaderFlags, ServiceRef};
use versa_server::{Auth, ServerConfig};
use versa_storage::Store;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Data directory: certificates, admin.kubeconfig and (with embedded storage) the data.
    #[arg(long, default_value = "./versa-data")]
    data_dir: PathBuf,
    /// Address to serve HTTPS on.
    #[arg(long, default_value = "127.0.0.1:8443")]
    listen: SocketAddr,
    /// Where objects are stored.
    #[arg(long, value_enum, default_value_t = StorageKind::Embedded)]
    storage: StorageKind,
    /// etcd endpoints (with --storage etcd), comma-separated URLs.
    #[arg(long, value_delimiter = ',')]
    etcd_endpoints: Vec<String>,
    /// CA bundle that signed etcd's serving certificate (enables TLS to etcd).
    #[arg(long)]
    etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd.
    #[arg(long, requires = "etcd_keyfile")]
    etcd_certfile: Option<PathBuf>,
    /// Client key for etcd.
    #[arg(long, requires = "etcd_certfile")]
    etcd_keyfile: Option<PathBuf>,
    /// With --storage etcd: serve watches and lists from a watch cache (kube-apiserver's
    /// `--watch-cache`): one etcd watch per resource feeds every client watch of this replica,
    /// and lists are answered from memory once it has caught up with etcd. `false` sends every
    /// watch and list to etcd.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    watch_cache: bool,
    /// Prefix of every storage key, so that several installations can share one etcd.
    #[arg(long, default_value = "/registry")]
    storage_prefix: String,
    /// kube-apiserver's EncryptionConfiguration file (apiserver.config.k8s.io/v1): the
    /// resources whose objects are encrypted at rest, with aesgcm, aescbc or secretbox keys
    /// (the first writes; all read). Refused at start, with kube's messages, when invalid.
    #[arg(long, value_name = "FILE")]
    encryption_provider_config: Option<PathBuf>,
    /// Standalone: static bearer tokens, in kube-apiserver's token file format (CSV
    /// `token,user,uid,"group1,group2"`). Read at start; refused at start when it does not parse.
    /// (Behind kube-apiserver, kube authenticates.)
    #[arg(long, value_name = "FILE")]
    token_auth_file: Option<PathBuf>,
    /// Embedded storage: how many past events watches can resume from (older resourceVersions
    /// get 410 Expired and clients re-list).
    #[arg(long, default_value_t = 100_000)]
    history_events: u64,
    /// Embedded storage: how long (seconds) past events are kept for watches to resume from.
    #[arg(long, default_value_t = 300)]
    history_seconds: u64,
    /// Seconds a conversion webhook may take to answer (kube-apiserver's default is 30).
    #[arg(long, default_value_t = 30)]
    conversion_webhook_timeout: u64,
    /// Migrate objects to a new storage version automatically (false: only definitions
    /// annotated `versa.dev/migrate`, which `versa migrate run` sets).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    auto_migrate: bool,
    /// Objects a storage migration rewrites per second at most.
    #[arg(long, default_value_t = 200)]
    migration_rate: u32,
    /// Read-only requests served at once; more get 429 with Retry-After (0: no limit).
    /// Watches are not counted; system:masters is never refused.
    #[arg(long, default_value_t = 400)]
    max_requests_inflight: usize,
    /// Mutating requests (create, update, patch, delete) served at once; more get 429 (0: no
    /// limit).
    #[arg(long, default_value_t = 200)]
    max_mutating_requests_inflight: usize,
    /// Seconds a request may run before it is answered 504 (`?timeout=` may ask for less;
    /// watches end by their own timeoutSeconds).
    #[arg(long, default_value_t = 60)]
    request_timeout: u64,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    leader_elect: crate::leader_elect::LeaderElectArgs,
}

/// The audit log: kube-apiserver's flags, its defaults and its meaning (docs/serving.md).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Auditing")]
struct AuditArgs {
    /// audit.k8s.io/v1 Policy deciding what is audited (without it nothing is).
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// File the audit events are appended to, one JSON audit.k8s.io/v1 Event a line; `-` is
    /// standard output.
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// Days to keep rotated audit logs, by the time in their names (0: no limit).
    #[arg(long, default_value_t = 366)]
    audit_log_maxage: u32,
    /// Rotated audit logs to keep (0: no limit).
    #[arg(long, default_value_t = 100)]
    audit_log_maxbackup: u32,
    /// MiB the audit log may reach before it is rotated (0: never rotated).
    #[arg(long, default_value_t = 100)]
    audit_log_maxsize: u32,
    /// Format of the audit log (kube's "legacy" one-line text is not written).
    #[arg(long, value_enum, default_value_t = AuditLogFormat::Json)]
    audit_log_format: AuditLogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AuditLogFormat {
    Json,
}

impl AuditArgs {
    /// The audit configuration, as kube-apiserver reads its flags: the policy is loaded (and
    /// refused when invalid) whenever given, but events are written only with both a policy
    /// and a log path.
    fn config(&self) -> anyhow::Result<Option<versa_server::audit::AuditConfig>> {
        use versa_server::audit::{AuditConfig, LogConfig, Policy};
        let policy = match &self.audit_policy_file {
            Some(path) => {
                let (policy, warnings) = Policy::load(path)?;
                for warning in warnings {
                    tracing::warn!(file = %path.display(), "audit policy contains errors, decoded leniently: {warning}");
                }
                Some(policy)
            }
            None => None,
        };
        Ok(match (policy, &self.audit_log_path) {
            (Some(policy), Some(path)) => Some(AuditConfig {
                policy,
                log: LogConfig {
                    path: path.clone(),
                    max_age_days: self.audit_log_maxage,
                    max_backups: self.audit_log_maxbackup,
                    max_size_mb: self.audit_log_maxsize,
                },
            }),
            (None, Some(_)) => {
                tracing::info!("no --audit-policy-file: no audit events will be recorded");
                None
            }
            (Some(_), None) => {
                tracing::info!("no --audit-log-path: the audit policy is loaded but events go nowhere");
                None
            }
            (None, None) => None,
        })
    }
}

/// Cluster mode: on when a kubeconfig is given or versa runs in a pod (`KUBERNETES_SERVICE_HOST`
/// set). The names are those of every aggregated API server built on k8s.io/apiserver.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Cluster mode (behind kube-apiserver)")]
struct ClusterArgs {
    /// kube-apiserver to delegate to and register with (default in a pod: its service account).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serving certificate (PEM; re-read when it changes). Without it, versa issues one from a
    /// CA it generates and keeps in the Secret --serving-ca-secret.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// Key of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// CA bundle written as caBundle into the APIServices versa manages (with --tls-cert-file;
    /// default: the last certificate of --tls-cert-file).
    #[arg(long)]
    apiservice_ca_file: Option<PathBuf>,
    /// Secret (in --service-namespace) holding the generated serving CA.
    #[arg(long, default_value = "versa-serving-ca")]
    serving_ca_secret: String,
    /// CA for client certificates (user = CN, groups = O); default: from the ConfigMap
    /// kube-system/extension-apiserver-authentication.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// CA of the front proxy (kube-apiserver's aggregator client certificate); default: from the
    /// ConfigMap, with its header settings.
    #[arg(long)]
    requestheader_client_ca_file: Option<PathBuf>,
    /// Common names the front proxy's certificate may have (empty: any from that CA).
    #[arg(long, value_delimiter = ',')]
    requestheader_allowed_names: Vec<String>,
    /// Headers naming the user (default X-Remote-User).
    #[arg(long, value_delimiter = ',')]
    requestheader_username_headers: Vec<String>,
    /// Headers naming the groups (default X-Remote-Group).
    #[arg(long, value_delimiter = ',')]
    requestheader_group_headers: Vec<String>,
    /// Header prefixes of the user's extra attributes (default X-Remote-Extra-).
    #[arg(long, value_delimiter = ',')]
    requestheader_extra_headers_prefix: Vec<String>,
    /// Headers naming the user's uid (default X-Remote-Uid).
    #[arg(long, value_delimiter = ',')]
    requestheader_uid_headers: Vec<String>,
    /// kubeconfig for TokenReviews (default: --kubeconfig).
    #[arg(long)]
    authentication_kubeconfig: Option<PathBuf>,
    /// kubeconfig for SubjectAccessReviews (default: --kubeconfig).
    #[arg(long)]
    authorization_kubeconfig: Option<PathBuf>,
    /// Do not read the ConfigMap kube-system/extension-apiserver-authentication.
    #[arg(long)]
    authentication_skip_lookup: bool,
    /// The Service kube-aggregator reaches versa through.
    #[arg(long, default_value = "versa")]
    service_name: String,
    /// Namespace of that Service (default: the pod's namespace).
    #[arg(long)]
    service_namespace: Option<String>,
    /// Port of that Service.
    #[arg(long, default_value_t = 443)]
    service_port: u16,
    /// Seconds between checks of the authentication ConfigMap, the CA and certificate files,
    /// and the APIServices versa manages.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    cluster_resync_period: u64,
}

impl ClusterArgs {
    /// The cluster-mode configuration, or `None` for standalone mode. Nothing is asked of
    /// kube-apiserver here (it may not be reachable yet).
    async fn config(&self) -> anyhow::Result<Option<ClusterConfig>> {
        use crate::kubeconfig;
        let main = match (&self.kubeconfig, std::env::var("KUBERNETES_SERVICE_HOST")) {
            (Some(path), _) => kubeconfig::load(std::slice::from_ref(path), None).await?,
            (None, Ok(host)) if !host.is_empty() => kubeconfig::in_cluster()?,
            _ => return Ok(None),
        };
        async fn other(path: &Option<PathBuf>) -> anyhow::Result<Option<versa_server::cluster::kube::Config>> {
            Ok(match path {
                Some(p) => Some(crate::kubeconfig::load(std::slice::from_ref(p), None).await?),
                None => None,
            })
        }
        let namespace = match &self.service_namespace {
            Some(ns) => ns.clone(),
            None => pod_namespace().context(
                "--service-namespace is required outside a pod (no POD_NAMESPACE and no service-account namespace file)",
            )?,
        };
        Ok(Some(ClusterConfig {
            kube: main,
            authentication_kube: other(&self.authentication_kubeconfig).await?,
            authorization_kube: other(&self.authorization_kubeconfig).await?,
            tls_files: self.tls_cert_file.clone().zip(self.tls_private_key_file.clone()),
            apiservice_ca_file: self.apiservice_ca_file.clone(),
            serving_ca_secret: self.serving_ca_secret.clone(),
            client_ca_file: self.client_ca_file.clone(),
            requestheader: RequestHeaderFlags {
                client_ca_file: self.requestheader_client_ca_file.clone(),
                allowed_names: self.requestheader_allowed_names.clone(),
                username_headers: self.requestheader_username_headers.clone(),
                group_headers: self.requestheader_group_headers.clone(),
                extra_headers_prefix: self.requestheader_extra_headers_prefix.clone(),
                uid_headers: self.requestheader_uid_headers.clone(),
            },
            skip_lookup: self.authentication_skip_lookup,
            service: ServiceRef { namespace, name: self.service_name.clone(), port: self.service_port },
            resync: std::time::Duration::from_secs(self.cluster_resync_period),
        }))
    }
}

/// The pod's namespace: `POD_NAMESPACE` (the downward API), else the service account's file.
fn pod_namespace() -> Option<String> {
    if let Ok(ns) = std::env::var("POD_NAMESPACE")
        && !ns.is_empty()
    {
        return Some(ns);
    }
    let file = std::path::Path::new(crate::kubeconfig::SERVICE_ACCOUNT_DIR).join("namespace");
    std::fs::read_to_string(file).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StorageKind {
    /// redb in the data directory (one process).
    Embedded,
    /// An etcd cluster (several replicas).
    Etcd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{Layer as _, fmt, registry};
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // kube-rs traces every failed call to kube-apiserver as an ERROR without saying which; versa
    // logs the failures it acts on itself, with the URL and what it does next.
    let filter =
        Targets::new().with_default(LevelFilter::INFO).with_target("kube_client::client::builder", LevelFilter::OFF);
    let layer = fmt::layer().with_writer(std::io::stderr).with_ansi(colour);
    let _ = match args.log_format {
        LogFormat::Json => registry().with(layer.json().with_filter(filter)).try_init(),
        LogFormat::Text => registry().with(layer.with_filter(filter)).try_init(),
    };
    // Request bodies may nest up to `versa_server::codec::MAX_DEPTH` levels, and decoding,
    // pruning, defaulting and validation recurse once per level; worker threads get stacks
    // sized for that (virtual memory: only the pages used are ever touched).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(versa_server::codec::WORKER_STACK_BYTES)
        .build()?;
    versa_registry::compiled::start_sweeper();
    runtime.block_on(serve(args))
}

/// The store to serve from, and the metrics its parts add (the watch cache's).
async fn open_store(args: &Args) -> anyhow::Result<(Arc<dyn Store>, Vec<Arc<dyn versa_server::metrics::Collector>>)> {
    // Read before the store is opened: a bad file stops the start with nothing touched.
    let encryption = match &args.encryption_provider_config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("--encryption-provider-config {}: {e}", path.display()))?;
            let config = versa_storage_encryption::parse(&text)
                .map_err(|e| anyhow::anyhow!("--encryption-provider-config {}: {e}", path.display()))?;
            Some(config)
        }
        None => None,
    };
    let (store, metrics) = open_backend(args).await?;
    let store: Arc<dyn Store> = match encryption {
        Some(config) => Arc::new(versa_storage_encryption::EncryptedStore::new(store, &args.storage_prefix, &config)),
        None => store,
    };
    Ok((store, metrics))
}

async fn open_backend(args: &Args) -> anyhow::Result<(Arc<dyn Store>, Vec<Arc<dyn versa_server::metrics::Collector>>)> {
    Ok(match args.storage {
        StorageKind::Embedded => {
            let config = versa_storage_embedded::Config {
                history_max_events: args.history_events,
                history_max_age: std::time::Duration::from_secs(args.history_seconds),
                ..Default::default()
            };
            let store = versa_storage_embedded::EmbeddedStore::open(&args.data_dir, config)?;
            (Arc::new(store), Vec::new())
        }
        StorageKind::Etcd => {
            let store = versa_storage_etcd::EtcdStore::connect(etcd_config(args)?).await?;
            versa_storage::check_data_format(&store, &args.storage_prefix).await?;
            if !args.watch_cache {
                return Ok((Arc::new(store), Vec::new()));
            }
            let mut config = versa_storage_cache::CacheConfig::new(&args.storage_prefix);
            // Without ordered progress answers (etcd before 3.4.31/3.5.13) the cache cannot learn
            // promptly that it is current: a list it has not caught up for goes to etcd at once,
            // as kube's consistent reads from cache are off on such etcd.
            config.progress_requests = store.orders_progress();
            if !config.progress_requests {
                config.fresh_wait = std::time::Duration::ZERO;
            }
            let cache = versa_storage_cache::CacheStore::new(Arc::new(store), config);
            let metrics: Arc<dyn versa_server::metrics::Collector> = cache.metrics();
            (Arc::new(cache), vec![metrics])
        }
    })
}

fn etcd_config(args: &Args) -> anyhow::Result<versa_storage_etcd::EtcdConfig> {
    anyhow::ensure!(!args.etcd_endpoints.is_empty(), "--storage etcd needs --etcd-endpoints");
    let mut config = versa_storage_etcd::EtcdConfig::new(args.etcd_endpoints.clone());
    if let Some(ca_file) = &args.etcd_cafile {
        config.tls = Some(versa_storage_etcd::EtcdTls {
            ca_file: ca_file.clone(),
            cert_file: args.etcd_certfile.clone(),
            key_file: args.etcd_keyfile.clone(),
        });
    }
    Ok(config)
}

/// Standalone authentication: versa's client certificates, then `--token-auth-file`'s tokens.
fn standalone_auth(args: &Args) -> anyhow::Result<Auth> {
    let Some(path) = &args.token_auth_file else { return Ok(Auth::standalone()) };
    let tokens = versa_server::token_file::TokenFileAuthenticator::load(path)
        .with_context(|| format!("--token-auth-file {}", path.display()))?;
    Ok(Auth::standalone_with(vec![Arc::new(tokens)]))
}

async fn serve(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create data directory {}", args.data_dir.display()))?;
    let audit = args.audit.config()?;
    let cluster = args.cluster.config().await?;
    let mode = if cluster.is_some() { "cluster" } else { "standalone" };
    if cluster.is_some() && args.token_auth_file.is_some() {
        anyhow::bail!("--token-auth-file is for standalone mode: behind kube-apiserver, kube authenticates");
    }
    // Read before the store is opened: a bad token file stops the start with nothing touched.
    let mut auth = standalone_auth(&args)?;
    let (store, mut extra_metrics) = open_store(&args).await?;
    extra_metrics.extend(crate::allocator::metrics());
    if cluster.is_none() {
        // Standalone decides with the RBAC objects it stores (behind kube-apiserver, kube does).
        let keys = versa_storage::Keys::new(&args.storage_prefix);
        auth.authorizer = Arc::new(versa_server::rbac::authorizer::RbacAuthorizer::start(store.clone(), keys));
    }
    let etcd = match args.storage {
        StorageKind::Etcd => Some(etcd_config(&args)?),
        StorageKind::Embedded => None,
    };
    let leader_election =
        args.leader_elect.config(etcd.as_ref().map(|c| (c, args.storage_prefix.as_str())), cluster.is_some()).await?;
    let config = ServerConfig {
        listen: args.listen,
        data_dir: args.data_dir.clone(),
        store,
        key_prefix: args.storage_prefix.clone(),
        auth,
        cluster,
        conversion: versa_conversion::Options {
            webhook_timeout: std::time::Duration::from_secs(args.conversion_webhook_timeout),
        },
        migration: versa_server::state::MigrationOptions { automatic: args.auto_migrate, rate: args.migration_rate },
        limits: versa_server::limits::RequestLimits {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            request_timeout: std::time::Duration::from_secs(args.request_timeout),
        },
        audit,
        leader_election,
        extra_metrics,
    };
    let server = config.complete().await?;
    let shutdown = shutdown_signal()?;
    let addr = server.local_addr()?;
    tracing::info!(%addr, storage = ?args.storage, mode, "versa is serving");
    say!("versa is serving on https://{addr}");
    if let Some(kubeconfig) = server.kubeconfig() {
        say!("use it with: kubectl --kubeconfig {}", kubeconfig.display());
    }
    server.run(shutdown).await?;
    tracing::info!("versa stopped");
    Ok(())
}

/// Resolves on SIGTERM or SIGINT. The handlers are installed when this is called (not when the
/// future is first polled), so a signal sent right after "versa is serving" is never missed.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
