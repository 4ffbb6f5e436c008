//! The HTTPS client that calls one webhook — a definition's conversion webhook (versa-conversion)
//! or an admission webhook (versa-admission) — the one webhook client of versa
//! ([`WebhookClient::for_endpoint`]).
//!
//! Built once per configuration change: the endpoint (`clientConfig.url`, or
//! `clientConfig.service` as `https://<name>.<namespace>.svc:<port><path>`, port 443 by default,
//! optionally reached where a [`ServiceResolver`] says), the trust roots (the `caBundle` alone,
//! or the system roots when there is none) and one pooled hyper client whose connections are
//! reused across calls, HTTP/2 or HTTP/1.1 by ALPN.
//!
//! What the call reports mirrors client-go's REST client, which kube-apiserver uses for
//! webhooks: the URL carries `?timeout=<d>` with Go's duration spelling, a transport failure
//! reads `Post "<url>": <cause>` (Go's `url.Error`), a status outside 200–206 becomes client-go's
//! generic server-response message (or the message of a `Status` the webhook answered with), and
//! an empty body is `0-length response with status code: ...`. Causes are spelled as Go spells
//! the common ones (`context deadline exceeded`, `dial tcp <addr>: connect: connection refused`,
//! `EOF`, `tls: failed to verify certificate: x509: certificate signed by unknown authority`);
//! others keep the Rust library's text (Go's dialer names the resolved IP; we name the host).
//!
//! Unlike kube-apiserver, which pins webhook clients to HTTP/1.1 (kubernetes#75791: one HTTP/2
//! connection sticks to one backend of a Service), the client offers HTTP/2 first.
//!
//! Bounded input: the answer may not exceed [`MIN_RESPONSE_LIMIT`] or four times the request,
//! whichever is larger; the whole call, body included, is bounded by the webhook timeout.

use std::error::Error as StdError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, USER_AGENT};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::{CertificateError, RootCertStore};
use serde_json::Value;
use tokio::time::Instant;
use versa_schema::field::go_quote;

/// The smallest limit on a webhook's answer, whatever the size of the request.
pub const MIN_RESPONSE_LIMIT: usize = 64 << 20;

/// Why a webhook's client cannot be built (each message as kube-apiserver gives it).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The `caBundle` holds no usable certificate.
    #[error("unable to load root certificates: {reason}")]
    InvalidCaBundle { reason: String },
    /// The URL does not parse.
    #[error("failed calling webhook {}: Unparsable URL: {reason}", go_quote(.webhook_name))]
    InvalidUrl { webhook_name: String, reason: String },
    /// The TLS client cannot be set up.
    #[error("cannot set up TLS for the conversion webhook: {0}")]
    Tls(#[source] rustls::Error),
}

/// A call that failed. `Display` is client-go's text for the failure: what kube prints after
/// `conversion webhook for ... failed: ` or `failed calling webhook "<name>": failed to call
/// webhook: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// No answer within the call's timeout (Go's `url.Error` around `context deadline exceeded`).
    #[error("Post {}: context deadline exceeded", go_quote(.url))]
    Timeout { url: String },
    /// The request could not be sent or its answer not received (Go's `url.Error`: the
    /// connection refused, the TLS handshake failed, ...).
    #[error("Post {}: {cause}", go_quote(.url))]
    Transport { url: String, cause: String },
    /// The answer's body could not be read (or not in time, or it was too large).
    #[error("unexpected error when reading response body. Please retry. Original error: {cause}")]
    ReadBody { cause: String },
    /// The webhook answered a status outside 200–206: the message of the `Status` it answered,
    /// or client-go's generic server-response text.
    #[error("{message}")]
    Status { code: u16, message: String },
    /// A 2xx answer with no body.
    #[error("0-length response with status code: {code} and content type: {content_type}")]
    Empty { code: u16, content_type: String },
}

/// client-go caps the text of an unstructured error body at this many bytes.
const MAX_UNSTRUCTURED_TEXT: usize = 2048;

/// `User-Agent` of webhook calls.
const AGENT: &str = concat!("versa/", env!("CARGO_PKG_VERSION"));

type HyperClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Where a webhook listens: `clientConfig.url`, or `clientConfig.service`, called at
/// `https://<name>.<namespace>.svc:<port><path>` (port 443 when absent or 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint<'a> {
    Url(&'a str),
    Service { namespace: &'a str, name: &'a str, port: Option<i32>, path: Option<&'a str> },
}

/// Finds where a Service's webhook is reachable, for a server that cannot resolve
/// `<name>.<namespace>.svc` (kube-apiserver's `ServiceResolver`): the `host:port` to connect to.
/// The URL and the name the serving certificate must hold stay the Service's.
pub trait ServiceResolver: Send + Sync + std::fmt::Debug {
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<String, ResolveError>;
}

/// Why a [`ServiceResolver`] found no address for a Service. It prints the resolver's own
/// reason, which the client's [`ClientError::InvalidUrl`] then carries.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ResolveError(#[from] Box<dyn std::error::Error + Send + Sync>);

impl ResolveError {
    /// A resolver's failure: any error, or a message (`ResolveError::new("no endpoints")`).
    pub fn new(reason: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ResolveError {
        ResolveError(reason.into())
    }
}

/// A client bound to one webhook endpoint: conversion webhooks, and admission webhooks
/// (`versa-admission`), call through it.
pub struct WebhookClient {
    client: HyperClient,
    uri: http::Uri,
    /// The URL as messages print it (with the timeout parameter).
    url: String,
    /// `host:port`, as Go's dialer names the address it failed to reach.
    authority: String,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookClient").field("url", &self.url).field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl WebhookClient {
    /// A client for webhook `webhook_name` (the name errors give it) at `endpoint`, trusting
    /// `ca_bundle` (PEM; the system roots when absent or blank), each call bounded by `timeout`
    /// (zero: none), which the URL also carries as `?timeout=`. With a `resolver`, a Service is
    /// reached where it says; the URL and the certificate's name stay the Service's.
    pub fn for_endpoint(
        webhook_name: &str,
        endpoint: Endpoint<'_>,
        ca_bundle: Option<&[u8]>,
        timeout: Duration,
        resolver: Option<&dyn ServiceResolver>,
    ) -> Result<Self, ClientError> {
        // The base URL messages show, where to connect instead (a resolved Service), and the
        // name the certificate must hold then.
        let (base, path, dial, server_name) = match endpoint {
            Endpoint::Service { namespace, name, port, path } => {
                // kube treats a port of 0 like an absent one.
                let port = port.filter(|p| *p != 0).unwrap_or(443);
                let host = format!("{name}.{namespace}.svc");
                let dial = match resolver {
                    Some(r) => {
                        let port = u16::try_from(port).map_err(|_| ClientError::InvalidUrl {
                            webhook_name: webhook_name.to_owned(),
                            reason: format!("invalid port {port}"),
                        })?;
                        let resolved = r.resolve(namespace, name, port).map_err(|e| ClientError::InvalidUrl {
                            webhook_name: webhook_name.to_owned(),
                            reason: e.to_string(),
                        })?;
                        Some(resolved)
                    }
                    None => None,
                };
                let server_name = dial.as_ref().map(|_| host.clone());
                (format!("https://{host}:{port}"), path.unwrap_or_default().to_owned(), dial, server_name)
            }
            Endpoint::Url(url) => {
                let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| ClientError::InvalidUrl {
                    webhook_name: webhook_name.to_owned(),
                    reason: e.to_string(),
                })?;
                let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
                    return Err(ClientError::InvalidUrl {
                        webhook_name: webhook_name.to_owned(),
                        reason: format!("{url:?} is not an absolute URL"),
                    });
                };
                (format!("{scheme}://{authority}"), uri.path().to_owned(), None, None)
            }
        };
        let timeout = Some(timeout).filter(|t| !t.is_zero());
        let mut suffix = clean_path(&path);
        if let Some(t) = timeout {
            suffix.push_str("?timeout=");
            suffix.push_str(&go_duration(t));
        }
        let url = format!("{base}{suffix}");
        let target = match &dial {
            Some(address) => format!("https://{address}{suffix}"),
            None => url.clone(),
        };
        let uri: http::Uri = target.parse().map_err(|e: http::uri::InvalidUri| ClientError::InvalidUrl {
            webhook_name: webhook_name.to_owned(),
            reason: e.to_string(),
        })?;
        let authority = match uri.authority() {
            Some(a) if a.port().is_some() => a.as_str().to_owned(),
            Some(a) => format!("{}:443", a.host()),
            None => String::new(),
        };
        let ca_bundle = ca_bundle.filter(|b| !b.iter().all(u8::is_ascii_whitespace));
        let tls = tls_config(ca_bundle)?;
        // TCP_NODELAY, as Go's dialer sets it: without it a review upload can stall on Nagle's
        // algorithm against delayed ACKs (~40 ms).
        let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_only();
        let builder = match server_name {
            Some(name) => {
                let name = rustls::pki_types::ServerName::try_from(name).map_err(|e| ClientError::InvalidUrl {
                    webhook_name: webhook_name.to_owned(),
                    reason: e.to_string(),
                })?;
                builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
            }
            None => builder,
        };
        let connector = builder.enable_http1().enable_http2().wrap_connector(http);
        // Reviews and answers are large (hundreds of KiB per page): HTTP/2 windows sized for
        // them, so an answer streams without waiting for window updates.
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .http2_initial_stream_window_size(8 * 1024 * 1024)
            .http2_initial_connection_window_size(16 * 1024 * 1024)
            .build(connector);
        Ok(WebhookClient { client, uri, url, authority, timeout })
    }

    /// The URL called, as messages print it.
    /// The `host:port` the client connects to.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs `body` (JSON) and returns the answer's body when the status is 2xx and the body is
    /// not empty. The error says what failed; its `Display` is client-go's text (`Post "<url>": ...`, a
    /// server-response message, ...): what kube prints after `conversion webhook for ... failed: `
    /// or `failed calling webhook "<name>": failed to call webhook: `.
    pub async fn post(&self, body: Bytes) -> Result<Bytes, PostError> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let limit = MIN_RESPONSE_LIMIT.max(body.len().saturating_mul(4));
        let request = http::Request::post(self.uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, */*")
            .header(USER_AGENT, AGENT)
            .body(Full::new(body))
            .map_err(|e| self.transport(e.to_string()))?;
        let response = match within(deadline, self.client.request(request)).await {
            None => return Err(PostError::Timeout { url: self.url.clone() }),
            Some(Err(e)) => return Err(self.transport(describe(&e, &self.authority))),
            Some(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").trim().to_owned();
        let body = match within(deadline, Limited::new(response.into_body(), limit).collect()).await {
            None => return Err(PostError::ReadBody { cause: "context deadline exceeded".into() }),
            Some(Err(e)) => return Err(PostError::ReadBody { cause: e.to_string() }),
            Some(Ok(collected)) => collected.to_bytes(),
        };
        if !(200..=206).contains(&status) {
            let message = unstructured_response_error(status, &content_type, &body);
            return Err(PostError::Status { code: status, message });
        }
        if body.is_empty() {
            let shown = if content_type.is_empty() { "application/json" } else { content_type.as_str() };
            return Err(PostError::Empty { code: status, content_type: shown.to_owned() });
        }
        Ok(body)
    }

    /// Go's `url.Error` for the POST.
    fn transport(&self, cause: String) -> PostError {
        PostError::Transport { url: self.url.clone(), cause }
    }
}

/// `fut`, cut short at `deadline` (`None` when it passed).
async fn within<F: std::future::Future>(deadline: Option<Instant>, fut: F) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, fut).await.ok(),
        None => Some(fut.await),
    }
}

/// The trust roots and TLS settings for a webhook.
fn tls_config(ca_bundle: Option<&[u8]>) -> Result<rustls::ClientConfig, ClientError> {
    let roots = match ca_bundle {
        Some(pem) => Arc::new(roots_from_pem(pem)?),
        None => system_roots(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(ClientError::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The certificates of a `caBundle`. Like Go's `AppendCertsFromPEM`, blocks that are not
/// certificates or do not parse are skipped; a bundle with no usable certificate is an error,
/// worded as client-go words it.
fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, ClientError> {
    let mut blocks = 0usize;
    let mut certificates = Vec::new();
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(pem) {
        // A malformed block ends the bundle, as it ends Go's decoding.
        let Ok((kind, der)) = section else { break };
        blocks += 1;
        if kind == SectionKind::Certificate {
            certificates.push(CertificateDer::from(der));
        }
    }
    let had_certificates = !certificates.is_empty();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certificates);
    if added > 0 {
        return Ok(roots);
    }
    let reason = if blocks == 0 {
        "unable to parse bytes as PEM block"
    } else if had_certificates {
        "failed to parse certificate: x509: malformed certificate"
    } else {
        "no valid certificate authority data seen"
    };
    Err(ClientError::InvalidCaBundle { reason: reason.to_owned() })
}

/// The system trust roots, loaded once per process.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let loaded = rustls_native_certs::load_native_certs();
            for e in &loaded.errors {
                tracing::warn!(error = %e, "cannot load a system trust root for conversion webhooks");
            }
            let mut roots = RootCertStore::empty();
            let (_added, ignored) = roots.add_parsable_certificates(loaded.certs);
            if ignored > 0 {
                tracing::debug!(ignored, "system trust roots that do not parse were skipped");
            }
            Arc::new(roots)
        })
        .clone()
}

/// The cause of a failed call, spelled as Go spells the common ones.
fn describe(err: &(dyn StdError + 'static), authority: &str) -> String {
    let mut chain: Vec<String> = Vec::new();
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(known) = known_cause(e, authority) {
            return known;
        }
        // hyper's own layer ("client error (Connect)") says nothing its causes do not.
        let is_wrapper = e.is::<hyper_util::client::legacy::Error>() && e.source().is_some();
        let text = e.to_string();
        if !is_wrapper && chain.last() != Some(&text) {
            chain.push(text);
        }
        current = e.source();
    }
    chain.join(": ")
}

/// A TLS failure or a refused connection in `e`, looking inside wrapped I/O errors (whose
/// `source` skips the error they wrap).
fn known_cause(e: &(dyn StdError + 'static), authority: &str) -> Option<String> {
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(describe_tls(tls));
    }
    // The webhook hung up without answering: Go's HTTP client reports the end of the stream.
    if let Some(h) = e.downcast_ref::<hyper::Error>()
        && h.is_incomplete_message()
    {
        return Some("EOF".to_owned());
    }
    let io = e.downcast_ref::<std::io::Error>()?;
    match io.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            return Some(format!("dial tcp {authority}: connect: connection refused"));
        }
        // Go's TLS does not insist on close_notify: a connection cut short is the end of it.
        std::io::ErrorKind::UnexpectedEof => return Some("EOF".to_owned()),
        _ => {}
    }
    let inner: &(dyn StdError + 'static) = io.get_ref()?;
    known_cause(inner, authority)
}

fn describe_tls(e: &rustls::Error) -> String {
    const VERIFY: &str = "tls: failed to verify certificate";
    match e {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            format!("{VERIFY}: x509: certificate signed by unknown authority")
        }
        rustls::Error::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        ) => format!("{VERIFY}: x509: certificate has expired or is not yet valid"),
        rustls::Error::InvalidCertificate(_) => format!("{VERIFY}: {e}"),
        other => other.to_string(),
    }
}

/// client-go's error for a status outside 200–206: the message of a failure `Status` in the
/// body, or `errors.NewGenericServerResponse` for the code with the body as the server's
/// message when it is text.
fn unstructured_response_error(status: u16, content_type: &str, body: &[u8]) -> String {
    if let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(body) {
        let field = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or("");
        if field("kind") == "Status" && matches!(field("apiVersion"), "" | "v1") && field("status") == "Failure" {
            return field("message").to_owned();
        }
    }
    let server_message = if is_text(content_type) {
        let text = &body[..body.len().min(MAX_UNSTRUCTURED_TEXT)];
        String::from_utf8_lossy(text).trim().to_owned()
    } else {
        "unknown".to_owned()
    };
    generic_server_response(status, &server_message)
}

/// client-go's `isTextResponse`: no content type, or a `text/*` one.
fn is_text(content_type: &str) -> bool {
    if content_type.is_empty() {
        return true;
    }
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    media.starts_with("text/")
}

/// The message of apimachinery's `NewGenericServerResponse` for a POST with no resource.
fn generic_server_response(code: u16, server_message: &str) -> String {
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 | 415 => server_message.into(),
        406 if server_message.is_empty() || server_message == "unknown" => {
            "the server was unable to respond with a content type that the client supports".into()
        }
        406 => server_message.into(),
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => {
            "the server was unable to return a response in the time allotted, but may still be processing the request"
                .into()
        }
        429 => "the server has received too many requests and has asked us to try again later".into(),
        c if c >= 500 => {
            format!("an error on the server ({}) has prevented the request from succeeding", go_quote(server_message))
        }
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// The request path client-go builds from a webhook path: `path.Join("/", p)` — cleaned,
/// rooted, no trailing slash, `/` when empty.
fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Go's `time.Duration.String`: `30s`, `1m30s`, `1h0m0s`, `1.5s`, `300ms`, `2µs`, `0s`.
fn go_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    /// `n / unit` with the remainder as trimmed decimals.
    fn decimal(n: u128, unit: u128, digits: usize) -> String {
        let (whole, frac) = (n / unit, n % unit);
        if frac == 0 {
            whole.to_string()
        } else {
            let frac = format!("{frac:0digits$}");
            format!("{whole}.{}", frac.trim_end_matches('0'))
        }
    }
    match ns {
        0 => "0s".into(),
        n if n < 1_000 => format!("{n}ns"),
        n if n < 1_000_000 => format!("{}µs", decimal(n, 1_000, 3)),
        n if n < 1_000_000_000 => format!("{}ms", decimal(n, 1_000_000, 6)),
        n => {
            let secs = n / 1_000_000_000;
            let (h, m) = (secs / 3600, (secs / 60) % 60);
            let mut out = String::new();
            if h > 0 {
                out.push_str(&format!("{h}h"));
            }
            if h > 0 || m > 0 {
                out.push_str(&format!("{m}m"));
            }
            out.push_str(&decimal(n % 60_000_000_000, 1_000_000_000, 9));
            out.push('s');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_prints_them() {
        let cases = [
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(300), "300ms"),
            (Duration::from_micros(2), "2µs"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_nanos(12), "12ns"),
            (Duration::ZERO, "0s"),
        ];
        for (d, want) in cases {
            assert_eq!(go_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn paths_as_client_go_builds_them() {
        for (p, want) in
            [("", "/"), ("/", "/"), ("/convert", "/convert"), ("convert/", "/convert"), ("/a//b/./c/../d", "/a/b/d")]
        {
            assert_eq!(clean_path(p), want, "{p:?}");
        }
    }

    #[test]
    fn generic_server_responses() {
        let cases: &[(u16, &str, &str, &str)] = &[
            (
                500,
                "text/plain",
                "boom\n",
                r#"an error on the server ("boom") has prevented the request from succeeding"#,
            ),
            (
                500,
                "application/json",
                "{}",
                r#"an error on the server ("unknown") has prevented the request from succeeding"#,
            ),
            (
                502,
                "",
                "bad gateway",
                r#"an error on the server ("bad gateway") has prevented the request from succeeding"#,
            ),
            (404, "text/plain", "404 page not found", "the server could not find the requested resource"),
            (403, "text/plain", "nope", "nope"),
            (503, "", "", "the server is currently unable to handle the request"),
            (302, "text/html", "", "the server responded with the status code 302 but did not return more information"),
            (
                500,
                "application/json",
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"converter crashed"}"#,
                "converter crashed",
            ),
        ];
        for (code, ct, body, want) in cases {
            assert_eq!(unstructured_response_error(*code, ct, body.as_bytes()), *want, "{code} {ct} {body}");
        }
    }
}
