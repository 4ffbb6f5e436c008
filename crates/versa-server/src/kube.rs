//! The client versa uses to talk to kube-apiserver in cluster mode: reading the
//! `extension-apiserver-authentication` ConfigMap, TokenReviews, SubjectAccessReviews,
//! APIServices and the Secret holding a generated CA.
//!
//! It is deliberately small: JSON in, JSON out, one pooled hyper client (HTTP/2 or HTTP/1.1 by
//! ALPN) per [`Endpoint`]. Where the endpoint comes from (a kubeconfig, or the pod's
//! service-account files) is the binary's business; this module gets the resolved URL, the
//! rustls configuration that trusts the cluster's CA (and carries a client certificate if the
//! kubeconfig has one) and the bearer token, if any. A token read from a file is re-read every
//! minute, because the kubelet rotates projected service-account tokens.
//!
//! Every call is bounded: [`REQUEST_TIMEOUT`] for the whole exchange and [`MAX_RESPONSE_BYTES`]
//! for the answer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::{Method, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::ServerName;
use serde_json::Value;

/// How long one call to kube-apiserver may take, answer included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer accepted (an APIService list for thousands of versions fits).
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;
/// How often a token file is re-read.
const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);

const AGENT: &str = concat!("versa/", env!("CARGO_PKG_VERSION"));

/// Where kube-apiserver is and how to talk to it.
#[derive(Clone)]
pub struct Endpoint {
    /// `https://host:port[/prefix]`, without a trailing slash.
    pub base_url: String,
    /// The name to verify the serving certificate against, when not the URL's host.
    pub tls_server_name: Option<String>,
    /// Trust roots and (optionally) a client certificate.
    pub tls: Arc<rustls::ClientConfig>,
    pub token: Token,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("base_url", &self.base_url).field("token", &self.token).finish()
    }
}

/// A bearer token, if the identity is one.
#[derive(Clone)]
pub enum Token {
    None,
    Inline(String),
    /// Re-read every minute (rotated service-account tokens).
    File(PathBuf),
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::None => f.write_str("None"),
            Token::Inline(_) => f.write_str("Inline(<redacted>)"),
            Token::File(path) => write!(f, "File({})", path.display()),
        }
    }
}

/// A failed call: the transport failed, or kube-apiserver answered with an error status.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KubeError {
    #[error("{method} {url}: {message}")]
    Transport { method: String, url: String, message: String },
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

/// A pooled client for one endpoint.
#[derive(Debug, Clone)]
pub struct KubeClient {
    inner: Arc<Inner>,
}

struct Inner {
    base_url: String,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    token: Token,
    /// The token file's contents and when they were read.
    cached_token: Mutex<Option<(Instant, String)>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient").field("base_url", &self.base_url).finish()
    }
}

impl KubeClient {
    pub fn new(endpoint: &Endpoint) -> anyhow::Result<KubeClient> {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config((*endpoint.tls).clone()).https_only();
        let builder = match &endpoint.tls_server_name {
            Some(name) => {
                let name =
                    ServerName::try_from(name.clone()).map_err(|e| anyhow::anyhow!("tls-server-name {name:?}: {e}"))?;
                builder.with_server_name_resolver(FixedServerNameResolver::new(name))
            }
            None => builder,
        };
        let connector = builder.enable_http1().enable_http2().wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).pool_timer(TokioTimer::new()).build(connector);
        Ok(KubeClient {
            inner: Arc::new(Inner {
                base_url: endpoint.base_url.trim_end_matches('/').to_owned(),
                client,
                token: endpoint.token.clone(),
                cached_token: Mutex::new(None),
            }),
        })
    }

    pub async fn get(&self, path: &str) -> Result<Value, KubeError> {
        self.call(Method::GET, path, None).await
    }

    pub async fn create(&self, path: &str, body: &Value) -> Result<Value, KubeError> {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn replace(&self, path: &str, body: &Value) -> Result<Value, KubeError> {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, KubeError> {
        self.call(Method::DELETE, path, None).await
    }

    /// One JSON call; `path` starts with `/api` or `/apis` and may carry a query.
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, KubeError> {
        let url = format!("{}{path}", self.inner.base_url);
        let transport =
            |message: String| KubeError::Transport { method: method.to_string(), url: url.clone(), message };
        let mut request = http::Request::builder()
            .method(method.clone())
            .uri(&url)
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, AGENT);
        if let Some(token) = self.token() {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let bytes = match body {
            Some(b) => {
                request = request.header(CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(b).map_err(|e| transport(e.to_string()))?)
            }
            None => Bytes::new(),
        };
        let request = request.body(Full::new(bytes)).map_err(|e| transport(e.to_string()))?;
        let exchange = async {
            let response = self.inner.client.request(request).await.map_err(|e| transport(describe(&e)))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| transport(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok::<_, KubeError>((status, body))
        };
        let (status, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| transport(format!("no answer within {}s", REQUEST_TIMEOUT.as_secs())))??;
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if status.is_success() {
            return parsed.ok_or_else(|| transport("the answer is not JSON".into()));
        }
        Err(status_error(&method, &url, status, parsed.as_ref(), &body))
    }

    fn token(&self) -> Option<String> {
        match &self.inner.token {
            Token::None => None,
            Token::Inline(token) => Some(token.clone()),
            Token::File(path) => {
                let mut cached = self.inner.cached_token.lock().ok()?;
                if let Some((read, token)) = cached.as_ref()
                    && read.elapsed() < TOKEN_FILE_REFRESH
                {
                    return Some(token.clone());
                }
                match std::fs::read_to_string(path) {
                    Ok(token) => {
                        let token = token.trim().to_owned();
                        *cached = Some((Instant::now(), token.clone()));
                        Some(token)
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "cannot read the token file");
                        cached.as_ref().map(|(_, t)| t.clone())
                    }
                }
            }
        }
    }
}

fn status_error(method: &Method, url: &str, status: StatusCode, parsed: Option<&Value>, body: &[u8]) -> KubeError {
    let field = |name: &str| parsed.and_then(|v| v.get(name)).and_then(Value::as_str).map(str::to_owned);
    let message = field("message").unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body[..body.len().min(512)]).trim().to_owned();
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

/// The innermost cause of a hyper client error (the outer ones say only "client error").
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}
