//! The client versa talks to kube-apiserver with: cluster mode (the
//! `extension-apiserver-authentication` ConfigMap, TokenReviews, SubjectAccessReviews,
//! APIServices, the Secret holding a generated CA) and `versa migrate` (definitions of a running
//! versa, through a kubeconfig).
//!
//! The connection is kube-rs's [`kube::Client`], built from a [`kube::Config`] that the caller
//! loaded (the binary reads kubeconfigs and the pod's service account with `kube::config`):
//! TLS (rustls with ring), `http://` servers such as `kubectl proxy`, proxies, bearer tokens
//! (token files re-read as the kubelet rotates them), client certificates and `exec` credential
//! plugins are all kube-rs's. What this module adds is the JSON seam the rest of the server was
//! written against — JSON in, JSON out, kube's `Status` answers turned into [`KubeError`] — and
//! bounds on every call: [`REQUEST_TIMEOUT`] for the whole exchange (or the client's own, see
//! [`KubeClient::with_timeout`]) and [`MAX_RESPONSE_BYTES`] for the answer.

use std::time::Duration;

use http::header::{ACCEPT, CONTENT_TYPE, USER_AGENT};
use http::{Method, StatusCode};
use http_body_util::{BodyExt as _, Limited};
use serde_json::Value;

pub use kube::Config;

/// How long one call to kube-apiserver may take, answer included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer accepted (an APIService list for thousands of versions fits).
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

const AGENT: &str = concat!("versa/", env!("CARGO_PKG_VERSION"));

/// A failed call: the transport failed, or kube-apiserver answered with an error status.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KubeError {
    /// No answer: the connection, TLS, the credential plugin, or the timeout failed.
    /// `connect` tells whether the server could not be reached at all.
    #[error("{method} {url}: {message}")]
    Transport { method: String, url: String, message: String, connect: bool },
    /// A non-2xx answer; `message` is the `Status` message when there is one.
    #[error("{method} {url}: {code} {message}")]
    Status { method: String, url: String, code: u16, reason: String, message: String },
}

impl KubeError {
    /// The HTTP status of an error answer.
    pub fn code(&self) -> Option<u16> {
        match self {
            KubeError::Status { code, .. } => Some(*code),
            KubeError::Transport { .. } => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }
}

/// A client could not be built from the configuration (a bad certificate or key, a credential
/// plugin that failed, an unsupported proxy).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// A pooled client for one kube-apiserver (cheap to clone: clones share the connections).
#[derive(Clone)]
pub struct KubeClient {
    client: kube::Client,
    /// The server URL, for messages.
    base_url: String,
    timeout: Duration,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl KubeClient {
    /// Builds the client (must be called inside a tokio runtime). A credential plugin that
    /// returns a client certificate runs now; one that returns a token runs on the first call.
    pub fn new(config: Config) -> Result<KubeClient, ConfigError> {
        let base_url = config.cluster_url.to_string().trim_end_matches('/').to_owned();
        let client = kube::Client::try_from(config).map_err(|e| ConfigError(describe(&e)))?;
        Ok(KubeClient { client, base_url, timeout: REQUEST_TIMEOUT })
    }

    /// The same client with another bound on each call.
    pub fn with_timeout(self, timeout: Duration) -> KubeClient {
        KubeClient { timeout, ..self }
    }

    /// The server's URL (`https://host:port[/prefix]`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The kube-rs client underneath, for what the JSON calls do not cover (watches).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    pub async fn get(&self, path: &str) -> Result<Value, KubeError> {
        self.call(Method::GET, path, None).await
    }

    pub async fn create(&self, path: &str, body: &Value) -> Result<Value, KubeError> {
        self.call(Method::POST, path, Some(("application/json", body))).await
    }

    pub async fn replace(&self, path: &str, body: &Value) -> Result<Value, KubeError> {
        self.call(Method::PUT, path, Some(("application/json", body))).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, KubeError> {
        self.call(Method::DELETE, path, None).await
    }

    /// `PATCH` with a JSON merge patch (RFC 7386), as `kubectl patch --type merge` sends it.
    pub async fn merge_patch(&self, path: &str, patch: &Value) -> Result<Value, KubeError> {
        self.call(Method::PATCH, path, Some(("application/merge-patch+json", patch))).await
    }

    /// One JSON call; `path` starts with `/api` or `/apis` and may carry a query. `body` is the
    /// content type and the document.
    pub async fn call(&self, method: Method, path: &str, body: Option<(&str, &Value)>) -> Result<Value, KubeError> {
        let url = format!("{}{path}", self.base_url);
        let transport = |message: String, connect: bool| KubeError::Transport {
            method: method.to_string(),
            url: url.clone(),
            message,
            connect,
        };
        let mut request = http::Request::builder()
            .method(method.clone())
            .uri(path)
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, AGENT);
        let bytes = match body {
            Some((content_type, document)) => {
                request = request.header(CONTENT_TYPE, content_type);
                serde_json::to_vec(document).map_err(|e| transport(e.to_string(), false))?
            }
            None => Vec::new(),
        };
        let request = request.body(kube::client::Body::from(bytes)).map_err(|e| transport(e.to_string(), false))?;
        let exchange = async {
            let response = self.client.send(request).await.map_err(|e| transport(describe(&e), is_connect(&e)))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| transport(format!("reading the answer: {}", describe(e.as_ref())), false))?
                .to_bytes();
            Ok::<_, KubeError>((status, body))
        };
        let (status, body) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| transport(format!("no answer within {}s", self.timeout.as_secs()), false))??;
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if status.is_success() {
            return parsed
                .ok_or_else(|| transport(format!("status {}: the answer is not JSON", status.as_u16()), false));
        }
        Err(status_error(&method, &url, status, parsed.as_ref(), &body))
    }
}

fn status_error(method: &Method, url: &str, status: StatusCode, parsed: Option<&Value>, body: &[u8]) -> KubeError {
    let field = |name: &str| parsed.and_then(|v| v.get(name)).and_then(Value::as_str).map(str::to_owned);
    let message = field("message").filter(|m| !m.is_empty()).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body[..body.len().min(1024)]).trim().to_owned();
        if text.is_empty() { status.canonical_reason().unwrap_or("").to_owned() } else { text }
    });
    KubeError::Status {
        method: method.to_string(),
        url: url.to_owned(),
        code: status.as_u16(),
        reason: field("reason").unwrap_or_default(),
        message,
    }
}

/// The innermost cause of an error (the outer ones say only "client error" or "service
/// error").
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// Whether the server could not be reached (resolving, connecting, the TLS handshake), as
/// opposed to failing after a request went out.
fn is_connect(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(e) = cause {
        if e.downcast_ref::<hyper_util::client::legacy::Error>().is_some_and(|e| e.is_connect()) {
            return true;
        }
        cause = e.source();
    }
    false
}
