//! Cluster mode: versa behind kube-apiserver as an aggregated API server.
//!
//! [`ClusterConfig`] is what the operator chose (the flags every k8s.io/apiserver-based
//! aggregated server has). [`prepare`] turns it into running parts:
//!
//! - the **serving certificate**: from `--tls-cert-file`/`--tls-private-key-file` (re-read when
//!   the files change), or issued at start from a CA that versa generates once and keeps in a
//!   Secret in its namespace, so that every replica serves under the same CA — which is the
//!   `caBundle` of the APIServices versa manages;
//! - the **client trust and front-proxy settings**: from the flags, and what they leave out
//!   from the ConfigMap `kube-system/extension-apiserver-authentication` (unless
//!   `--authentication-skip-lookup`), re-read every resync period (`--cluster-resync-period`,
//!   [`DEFAULT_RESYNC`] by default) so that a rotated front-proxy CA is picked up;
//! - **delegated authentication and authorization** (`delegated.rs`) against kube-apiserver.
//!
//! kube-apiserver need not be reachable when versa starts (in a cluster that is itself starting,
//! or before the RBAC rules are applied): [`prepare`] tries once, and if that fails versa serves
//! anyway — `/healthz` and `/livez` pass, `/readyz` fails with the reason ([`Startup`]), every
//! other request gets 503 — while [`Tasks::spawn`] retries with backoff (1 s doubling up to
//! [`MAX_RETRY_DELAY`]), logging each failure. Until the CA is read from its Secret the serving
//! certificate comes from a throwaway CA; nothing but probes can use versa then anyway. Local
//! mistakes (unreadable files, a kubeconfig whose credentials cannot be loaded) still end the
//! start at once.
//!
//! The APIService registration that follows the served set is `apiservice.rs`; it starts once
//! kube-apiserver has been reached, and runs on the leader only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub mod apiservice;
pub mod connection;
pub mod delegated;
pub mod kube;
pub mod lease_lock;

pub use self::connection::{CaBundle, Cluster, ServiceRef};
use self::delegated::{DelegatedAuthenticator, DelegatedAuthorizer, RequestHeaderConfig};
use self::kube::{KubeClient, KubeError};
use crate::auth::Auth;
use crate::state::{Startup, State};
use crate::tls::{ClientTrust, ServingCert};

/// How often, by default, the authentication ConfigMap, the CA and certificate files and the
/// APIServices are checked for changes.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(30);

/// The longest wait between two attempts to reach kube-apiserver at start.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// The ConfigMap kube-apiserver publishes its client and front-proxy CAs in.
pub const AUTHENTICATION_CONFIGMAP: &str =
    "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";

/// What the operator chose for cluster mode.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// kube-apiserver (from `--kubeconfig` or the pod's service account).
    pub kube: kube::Config,
    /// For TokenReviews (`--authentication-kubeconfig`); default: `kube`.
    pub authentication_kube: Option<kube::Config>,
    /// For SubjectAccessReviews (`--authorization-kubeconfig`); default: `kube`.
    pub authorization_kube: Option<kube::Config>,
    /// `--tls-cert-file` and `--tls-private-key-file`.
    pub tls_files: Option<(PathBuf, PathBuf)>,
    /// `--apiservice-ca-file`: the `caBundle` for APIServices when the serving certificate
    /// comes from files.
    pub apiservice_ca_file: Option<PathBuf>,
    /// `--serving-ca-secret`: where the generated CA is kept (without `tls_files`).
    pub serving_ca_secret: String,
    /// `--client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// `--requestheader-*`.
    pub requestheader: RequestHeaderFlags,
    /// `--authentication-skip-lookup`: never read the authentication ConfigMap.
    pub skip_lookup: bool,
    /// The Service kube-aggregator reaches versa through.
    pub service: ServiceRef,
    /// How often the authentication ConfigMap, the CA and certificate files and the
    /// APIServices are checked for changes.
    pub resync: Duration,
}

/// The `--requestheader-*` flags; empty lists mean kube's defaults.
#[derive(Debug, Clone, Default)]
pub struct RequestHeaderFlags {
    pub client_ca_file: Option<PathBuf>,
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
    pub uid_headers: Vec<String>,
}

/// What [`prepare`] hands to the server.
#[derive(Debug)]
pub struct Prepared {
    pub serving: Arc<ServingCert>,
    pub trust: Arc<ClientTrust>,
    pub auth: Auth,
    /// Read by `/readyz`.
    pub startup: Arc<Startup>,
    /// Background work to start with the server.
    pub tasks: Tasks,
}

/// The background tasks of cluster mode (started by [`Tasks::spawn`]).
#[derive(Debug)]
pub struct Tasks {
    config: ClusterConfig,
    kube: KubeClient,
    serving: Arc<ServingCert>,
    trust: Arc<ClientTrust>,
    requestheader: Arc<RwLock<RequestHeaderConfig>>,
    /// The names a generated serving certificate carries.
    hosts: Vec<String>,
    startup: Arc<Startup>,
    current: AuthSources,
    /// Set once kube-apiserver has been reached.
    cluster: Option<Arc<Cluster>>,
}

impl Tasks {
    /// Starts the background work: reloading certificate files; reaching kube-apiserver if
    /// [`prepare`] could not; then APIService registration and the resync of the
    /// authentication settings.
    pub(crate) fn spawn(mut self, state: Arc<State>) {
        let shutdown = state.shutdown.clone();
        if let Some((cert, key)) = self.config.tls_files.clone() {
            tokio::spawn(self.serving.clone().reload_from(cert, key, self.config.resync, shutdown.clone()));
        }
        tokio::spawn(async move {
            let cluster = match self.cluster.clone() {
                Some(cluster) => cluster,
                None => match self.wait_for_kube(&shutdown).await {
                    Some(cluster) => cluster,
                    None => return,
                },
            };
            // Registration is the leader's (`leader.rs`): one replica creates and repairs.
            let (leadership, stop) = (state.leadership.clone(), state.shutdown.clone());
            // Admission follows kube-apiserver's configuration and Namespaces on every replica.
            tokio::spawn(crate::controllers::admission::follow_kube(state.clone(), cluster.kube.clone()));
            tokio::spawn(crate::leader::while_leading(leadership, stop, move |_| {
                apiservice::run(state.clone(), cluster.clone())
            }));
            sync_authentication(self, shutdown).await;
        });
    }

    /// Retries [`Tasks::connect`] with backoff until it succeeds (`None`: shut down first).
    async fn wait_for_kube(&mut self, shutdown: &CancellationToken) -> Option<Arc<Cluster>> {
        let mut delay = Duration::from_secs(1);
        loop {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = shutdown.cancelled() => return None,
            }
            match self.connect().await {
                Ok(cluster) => {
                    tracing::info!(kube = self.kube.base_url(), "reached kube-apiserver; cluster mode is ready");
                    return Some(cluster);
                }
                Err(e) => {
                    delay = (delay * 2).min(MAX_RETRY_DELAY);
                    tracing::warn!(
                        kube = self.kube.base_url(),
                        error = format!("{e:#}"),
                        retry_in_seconds = delay.as_secs(),
                        "waiting for kube-apiserver"
                    );
                }
            }
        }
    }

    /// One attempt at what cluster mode needs from kube-apiserver: the serving CA (and a
    /// certificate issued from it), the client CAs and front-proxy settings. On success they
    /// are in force and [`Startup`] says ready; on failure it says why not.
    async fn connect(&mut self) -> anyhow::Result<Arc<Cluster>> {
        let result = self.try_connect().await;
        match &result {
            Ok(_) => self.startup.set(None),
            Err(e) => self.startup.set(Some(format!("waiting for kube-apiserver at {}: {e:#}", self.kube.base_url()))),
        }
        result
    }

    async fn try_connect(&mut self) -> anyhow::Result<Arc<Cluster>> {
        let config = &self.config;
        let ca_bundle = match &config.tls_files {
            Some((cert, _)) => match &config.apiservice_ca_file {
                Some(file) => CaBundle::File(file.clone()),
                None => CaBundle::ServingChain(cert.clone()),
            },
            None => {
                let (ca_cert, ca_key) =
                    serving_ca(&self.kube, &config.service.namespace, &config.serving_ca_secret).await?;
                let (cert, key) = crate::pki::issue_serving(&ca_cert, &ca_key, &self.hosts)?;
                self.serving.set(crate::tls::certified_key(cert.as_bytes(), key.as_bytes())?);
                CaBundle::Generated(ca_cert)
            }
        };
        let current = load_authentication(config, &self.kube).await?;
        self.trust.set(current.client_ca.as_deref(), current.requestheader_ca.as_deref())?;
        match self.requestheader.write() {
            Ok(mut g) => *g = current.requestheader.clone(),
            Err(poisoned) => *poisoned.into_inner() = current.requestheader.clone(),
        }
        self.current = current;
        let cluster = Arc::new(Cluster {
            kube: self.kube.clone(),
            service: config.service.clone(),
            ca_bundle,
            resync: config.resync,
        });
        self.cluster = Some(cluster.clone());
        Ok(cluster)
    }
}

/// Sets up cluster mode; `extra_hosts` are added to a generated serving certificate (the
/// listen address, so that probes and tests can verify it too). Reaches kube-apiserver once; if
/// that fails, the server starts anyway and [`Tasks::spawn`] keeps trying.
pub async fn prepare(config: ClusterConfig, extra_hosts: &[String]) -> anyhow::Result<Prepared> {
    let client = |c: &kube::Config, flag: &str| {
        KubeClient::new(c.clone()).map_err(|e| anyhow::anyhow!("{flag}: cannot build the kube-apiserver client: {e}"))
    };
    let kube = client(&config.kube, "--kubeconfig")?;
    let authn_kube = match &config.authentication_kube {
        Some(c) => client(c, "--authentication-kubeconfig")?,
        None => kube.clone(),
    };
    let authz_kube = match &config.authorization_kube {
        Some(c) => client(c, "--authorization-kubeconfig")?,
        None => kube.clone(),
    };
    // Files named by flags are read now: a missing one is a mistake to report, not a reason to
    // wait.
    for file in [&config.client_ca_file, &config.requestheader.client_ca_file].into_iter().flatten() {
        read_file(file)?;
    }

    let mut hosts = config.service.dns_names();
    hosts.extend(extra_hosts.iter().cloned());
    let serving = match &config.tls_files {
        Some((cert, key)) => ServingCert::new(ServingCert::load(cert, key)?),
        None => {
            // Replaced by one from the CA in the Secret as soon as kube-apiserver is reached.
            let (ca_cert, ca_key) = crate::pki::new_ca("versa-temporary-serving-ca")?;
            let (cert, key) = crate::pki::issue_serving(&ca_cert, &ca_key, &hosts)?;
            ServingCert::new(crate::tls::certified_key(cert.as_bytes(), key.as_bytes())?)
        }
    };
    let trust = ClientTrust::new();
    let requestheader = Arc::new(RwLock::new(RequestHeaderConfig::default()));
    let auth = Auth {
        authenticator: Arc::new(DelegatedAuthenticator::new(requestheader.clone(), authn_kube)),
        authorizer: Arc::new(DelegatedAuthorizer::new(authz_kube)),
    };
    let startup = Arc::new(Startup::default());
    let mut tasks = Tasks {
        config,
        kube,
        serving: serving.clone(),
        trust: trust.clone(),
        requestheader,
        hosts,
        startup: startup.clone(),
        current: AuthSources::default(),
        cluster: None,
    };
    if let Err(e) = tasks.connect().await {
        tracing::warn!(
            kube = tasks.kube.base_url(),
            error = format!("{e:#}"),
            "waiting for kube-apiserver (until it answers, only /healthz, /livez and /readyz are served)"
        );
    }
    Ok(Prepared { serving, trust, auth, startup, tasks })
}

/// The CA versa issues its serving certificates from: read from the Secret, or generated and
/// stored there by whichever replica comes first.
async fn serving_ca(kube: &KubeClient, namespace: &str, name: &str) -> anyhow::Result<(String, String)> {
    let path = format!("/api/v1/namespaces/{namespace}/secrets/{name}");
    for _ in 0..3 {
        match kube.get(&path).await {
            Ok(secret) => {
                return decode_ca_secret(&secret).map_err(|e| anyhow::anyhow!("secret {namespace}/{name}: {e}"));
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(anyhow::anyhow!("reading the serving CA: {e}")),
        }
        let (cert, key) = crate::pki::new_ca(&format!("versa-serving-ca@{namespace}.{name}"))?;
        let secret = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": {apiservice::MANAGED_BY: apiservice::MANAGER}},
            "type": "Opaque",
            "data": {"ca.crt": STANDARD.encode(&cert), "ca.key": STANDARD.encode(&key)},
        });
        match kube.create(&format!("/api/v1/namespaces/{namespace}/secrets"), &secret).await {
            Ok(_) => {
                tracing::info!(namespace, name, "generated the serving CA");
                return Ok((cert, key));
            }
            // Another replica was first: use its CA.
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(anyhow::anyhow!("storing the serving CA: {e}")),
        }
    }
    anyhow::bail!("secret {namespace}/{name} keeps changing")
}

fn decode_ca_secret(secret: &Value) -> Result<(String, String), String> {
    let field = |k: &str| -> Result<String, String> {
        let b64 = secret["data"][k].as_str().ok_or_else(|| format!("no {k}"))?;
        let bytes = STANDARD.decode(b64).map_err(|e| format!("{k}: {e}"))?;
        String::from_utf8(bytes).map_err(|e| format!("{k}: {e}"))
    };
    Ok((field("ca.crt")?, field("ca.key")?))
}

/// The CAs and front-proxy settings in force.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct AuthSources {
    client_ca: Option<String>,
    requestheader_ca: Option<String>,
    requestheader: RequestHeaderConfig,
}

fn read_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn or_default(flag: &[String], default: Vec<String>) -> Vec<String> {
    if flag.is_empty() { default } else { flag.to_vec() }
}

/// The flags, completed from the ConfigMap where they leave something out (as
/// k8s.io/apiserver's delegating authentication options do).
async fn load_authentication(config: &ClusterConfig, kube: &KubeClient) -> anyhow::Result<AuthSources> {
    let mut sources = AuthSources::default();
    if let Some(file) = &config.client_ca_file {
        sources.client_ca = Some(read_file(file)?);
    }
    let flags = &config.requestheader;
    if let Some(file) = &flags.client_ca_file {
        let defaults = RequestHeaderConfig::default();
        sources.requestheader_ca = Some(read_file(file)?);
        sources.requestheader = RequestHeaderConfig {
            allowed_names: flags.allowed_names.clone(),
            username_headers: or_default(&flags.username_headers, defaults.username_headers),
            uid_headers: or_default(&flags.uid_headers, defaults.uid_headers),
            group_headers: or_default(&flags.group_headers, defaults.group_headers),
            extra_headers_prefix: or_default(&flags.extra_headers_prefix, defaults.extra_headers_prefix),
        };
    }
    if config.skip_lookup || (sources.client_ca.is_some() && sources.requestheader_ca.is_some()) {
        return Ok(sources);
    }
    let configmap = match kube.get(AUTHENTICATION_CONFIGMAP).await {
        Ok(cm) => cm,
        Err(e) if e.is_not_found() => {
            tracing::warn!(
                "configmap kube-system/extension-apiserver-authentication not found: \
                 only bearer tokens can authenticate"
            );
            return Ok(sources);
        }
        Err(e) => return Err(lookup_error(&e)),
    };
    let data = &configmap["data"];
    let text = |k: &str| data[k].as_str().filter(|s| !s.trim().is_empty()).map(str::to_owned);
    let list = |k: &str| -> Vec<String> {
        // kube stores these lists JSON-encoded.
        text(k).and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok()).unwrap_or_default()
    };
    if sources.client_ca.is_none() {
        sources.client_ca = text("client-ca-file");
    }
    if sources.requestheader_ca.is_none()
        && let Some(ca) = text("requestheader-client-ca-file")
    {
        sources.requestheader_ca = Some(ca);
        sources.requestheader = RequestHeaderConfig {
            allowed_names: list("requestheader-allowed-names"),
            username_headers: list("requestheader-username-headers"),
            uid_headers: list("requestheader-uid-headers"),
            group_headers: list("requestheader-group-headers"),
            extra_headers_prefix: list("requestheader-extra-headers-prefix"),
        };
    }
    Ok(sources)
}

fn lookup_error(e: &KubeError) -> anyhow::Error {
    anyhow::anyhow!(
        "unable to get configmap/extension-apiserver-authentication in kube-system: {e}. Usually fixed by \
         'kubectl create rolebinding -n kube-system ROLEBINDING_NAME --role=extension-apiserver-authentication-reader \
         --serviceaccount=YOUR_NS:YOUR_SA' (or pass --authentication-skip-lookup)"
    )
}

/// Keeps the CAs and front-proxy settings current.
async fn sync_authentication(mut tasks: Tasks, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(tasks.config.resync) => {}
            () = shutdown.cancelled() => return,
        }
        let next = match load_authentication(&tasks.config, &tasks.kube).await {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(error = %e, "authentication settings not refreshed");
                continue;
            }
        };
        if next == tasks.current {
            continue;
        }
        if let Err(e) = tasks.trust.set(next.client_ca.as_deref(), next.requestheader_ca.as_deref()) {
            tracing::warn!(error = %e, "new client CAs not usable; keeping the old ones");
            continue;
        }
        match tasks.requestheader.write() {
            Ok(mut g) => *g = next.requestheader.clone(),
            Err(poisoned) => *poisoned.into_inner() = next.requestheader.clone(),
        }
        tracing::info!("authentication settings updated");
        tasks.current = next;
    }
}
