//! `versa serve`: picks the storage backend, sets up logging, and runs `versa-server` until
//! SIGTERM or SIGINT (then stops accepting, lets requests finish, and closes storage — every
//! acknowledged write is already durable).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::ValueEnum;
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
    /// Prefix of every storage key, so that several installations can share one etcd.
    #[arg(long, default_value = "/registry")]
    storage_prefix: String,
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
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
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
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let subscriber = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(colour);
    let _ = match args.log_format {
        LogFormat::Json => subscriber.json().try_init(),
        LogFormat::Text => subscriber.try_init(),
    };
    // Request bodies may nest up to `versa_server::codec::MAX_DEPTH` levels, and decoding,
    // pruning, defaulting and validation recurse once per level; worker threads get stacks
    // sized for that (virtual memory: only the pages used are ever touched).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(versa_server::codec::WORKER_STACK_BYTES)
        .build()?;
    runtime.block_on(serve(args))
}

async fn open_store(args: &Args) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match args.storage {
        StorageKind::Embedded => {
            let config = versa_storage_embedded::Config {
                history_max_events: args.history_events,
                history_max_age: std::time::Duration::from_secs(args.history_seconds),
                ..Default::default()
            };
            let store = versa_storage_embedded::EmbeddedStore::open(&args.data_dir, config)?;
            Arc::new(store)
        }
        StorageKind::Etcd => {
            anyhow::ensure!(!args.etcd_endpoints.is_empty(), "--storage etcd needs --etcd-endpoints");
            let mut config = versa_storage_etcd::EtcdConfig::new(args.etcd_endpoints.clone());
            if let Some(ca_file) = &args.etcd_cafile {
                config.tls = Some(versa_storage_etcd::EtcdTls {
                    ca_file: ca_file.clone(),
                    cert_file: args.etcd_certfile.clone(),
                    key_file: args.etcd_keyfile.clone(),
                });
            }
            Arc::new(versa_storage_etcd::EtcdStore::connect(config).await?)
        }
    })
}

async fn serve(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create data directory {}", args.data_dir.display()))?;
    let store = open_store(&args).await?;
    let config = ServerConfig {
        listen: args.listen,
        data_dir: args.data_dir.clone(),
        store,
        key_prefix: args.storage_prefix.clone(),
        auth: Auth::standalone(),
        conversion: versa_conversion::Options {
            webhook_timeout: std::time::Duration::from_secs(args.conversion_webhook_timeout),
        },
        migration: versa_server::migration::MigrationOptions {
            automatic: args.auto_migrate,
            rate: args.migration_rate,
        },
    };
    let server = config.complete().await?;
    let shutdown = shutdown_signal()?;
    let addr = server.local_addr()?;
    tracing::info!(%addr, storage = ?args.storage, "versa is serving");
    say!("versa is serving on https://{addr}");
    say!("use it with: kubectl --kubeconfig {}", server.kubeconfig().display());
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
