//! A small HTTPS client for black-box tests of `versa serve`: HTTP/1.1 over rustls, trusting the
//! data directory's `ca.crt` and presenting `admin.crt`/`admin.key` (or no certificate at all,
//! for 401 checks). One connection per request keeps it simple and keeps requests independent;
//! watches hold their connection and are read line by line, each line with a timeout.
//!
//! Failures to connect or to speak HTTP panic: in these tests they are never the thing under
//! test, and a loud failure is the useful one.

#![allow(dead_code, reason = "not every test file uses every helper")]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A client for one server.
#[derive(Clone)]
pub struct Client {
    tls: TlsConnector,
    address: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("address", &self.address).finish_non_exhaustive()
    }
}

/// A complete answer.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("status {}: body is not JSON ({e}): {}", self.status, self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Every `Warning` header value, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.headers
            .get_all(http::header::WARNING)
            .iter()
            .map(|v| v.to_str().unwrap_or("<binary>").to_owned())
            .collect()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).map(|v| v.to_str().unwrap_or("<binary>").to_owned())
    }
}

/// Trusts `ca_pem`; presents `identity` (certificate PEM, key PEM), if any; HTTP/1.1.
fn tls_config(ca_pem: &str, identity: Option<(&str, &str)>) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(ca.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes()).map(Result::unwrap).collect();
            builder.with_client_auth_cert(chain, PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap()).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// The data directory's files.
fn read(data_dir: &Path, file: &str) -> String {
    std::fs::read_to_string(data_dir.join(file)).unwrap()
}

impl Client {
    /// The admin client (versa's `system:masters` certificate).
    pub fn admin(data_dir: &Path, address: &str) -> Client {
        let (cert, key) = (read(data_dir, "admin.crt"), read(data_dir, "admin.key"));
        Client::from_pem(&read(data_dir, "ca.crt"), Some((&cert, &key)), address)
    }

    /// A client that trusts the server but presents no certificate.
    pub fn anonymous(data_dir: &Path, address: &str) -> Client {
        Client::from_pem(&read(data_dir, "ca.crt"), None, address)
    }

    /// A client trusting `ca_pem` and presenting `identity` (certificate PEM, key PEM), if any
    /// (cluster mode: the front proxy, or a client-CA user).
    pub fn from_pem(ca_pem: &str, identity: Option<(&str, &str)>, address: &str) -> Client {
        Client { tls: TlsConnector::from(Arc::new(tls_config(ca_pem, identity))), address: address.to_owned() }
    }

    /// Sends a request and returns the response head with the body still streaming.
    async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Bytes) -> http::Response<Incoming> {
        let tcp = TcpStream::connect(&self.address).await.unwrap_or_else(|e| panic!("connect {}: {e}", self.address));
        tcp.set_nodelay(true).unwrap();
        let host = self.address.rsplit_once(':').map_or(self.address.as_str(), |(h, _)| h);
        let server_name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned()).unwrap();
        let tls = self.tls.connect(server_name, tcp).await.unwrap_or_else(|e| panic!("TLS handshake: {e}"));
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut request = Request::builder().method(Method::from_bytes(method.as_bytes()).unwrap()).uri(path);
        request = request.header(http::header::HOST, &self.address);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let request = request.body(Full::new(body)).unwrap();
        sender.send_request(request).await.unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// One kept-alive HTTP/1.1 connection, for requests one after another without a handshake
    /// each (benchmarks measuring the server, not TLS).
    pub async fn connect(&self) -> Connection {
        let tcp = TcpStream::connect(&self.address).await.unwrap_or_else(|e| panic!("connect {}: {e}", self.address));
        tcp.set_nodelay(true).unwrap();
        let host = self.address.rsplit_once(':').map_or(self.address.as_str(), |(h, _)| h);
        let server_name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned()).unwrap();
        let tls = self.tls.connect(server_name, tcp).await.unwrap_or_else(|e| panic!("TLS handshake: {e}"));
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Connection { sender, address: self.address.clone() }
    }

    /// Sends a request and reads the whole answer.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Response {
        let response = self.send(method, path, headers, body.into()).await;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap_or_else(|e| panic!("{method} {path}: reading the body: {e}")).to_bytes();
        Response { status: parts.status.as_u16(), headers: parts.headers, body }
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], Bytes::new()).await
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        self.request("GET", path, headers, Bytes::new()).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Response {
        self.request("POST", path, &[("content-type", "application/json")], serde_json::to_vec(body).unwrap()).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Response {
        self.request("PUT", path, &[("content-type", "application/json")], serde_json::to_vec(body).unwrap()).await
    }

    /// PATCH with an explicit content type.
    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Response {
        self.request("PATCH", path, &[("content-type", content_type)], serde_json::to_vec(body).unwrap()).await
    }

    pub async fn merge_patch(&self, path: &str, body: &Value) -> Response {
        self.patch(path, "application/merge-patch+json", body).await
    }

    pub async fn delete(&self, path: &str) -> Response {
        self.request("DELETE", path, &[], Bytes::new()).await
    }

    /// DELETE with a `DeleteOptions` body.
    pub async fn delete_with(&self, path: &str, options: &Value) -> Response {
        self.request("DELETE", path, &[("content-type", "application/json")], serde_json::to_vec(options).unwrap())
            .await
    }

    /// Opens a watch (or any streaming GET).
    pub async fn watch(&self, path: &str, headers: &[(&str, &str)]) -> Watch {
        let response = self.send("GET", path, headers, Bytes::new()).await;
        let (parts, body) = response.into_parts();
        Watch { status: parts.status.as_u16(), headers: parts.headers, body: Some(body), buffer: Vec::new() }
    }
}

/// A streaming response read line by line.
#[derive(Debug)]
pub struct Watch {
    pub status: u16,
    pub headers: HeaderMap,
    body: Option<Incoming>,
    buffer: Vec<u8>,
}

/// What waiting for the next line gave.
#[derive(Debug)]
pub enum Next {
    /// One line (without its newline).
    Line(String),
    /// The server ended the stream.
    End,
    /// Nothing within the timeout.
    Timeout,
}

impl Watch {
    /// The next line, the end of the stream, or nothing within `timeout`.
    pub async fn next_line(&mut self, timeout: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(at) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=at).collect();
                return Next::Line(String::from_utf8_lossy(&line[..line.len() - 1]).into_owned());
            }
            let Some(body) = self.body.as_mut() else {
                if self.buffer.is_empty() {
                    return Next::End;
                }
                let rest = std::mem::take(&mut self.buffer);
                return Next::Line(String::from_utf8_lossy(&rest).into_owned());
            };
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Next::Timeout,
                Ok(None) | Ok(Some(Err(_))) => self.body = None,
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next event as JSON; panics on end of stream or timeout, naming `what`.
    pub async fn event(&mut self, timeout: Duration, what: &str) -> Value {
        match self.next_line(timeout).await {
            Next::Line(line) => {
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: watch line is not JSON ({e}): {line}"))
            }
            Next::End => panic!("{what}: the watch ended"),
            Next::Timeout => panic!("{what}: no watch event within {timeout:?}"),
        }
    }

    /// Reads the rest of the stream until it ends (panics on timeout).
    pub async fn until_end(&mut self, timeout: Duration) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            match self.next_line(timeout).await {
                Next::Line(line) => events.push(serde_json::from_str(&line).unwrap()),
                Next::End => return events,
                Next::Timeout => panic!("the watch did not end within {timeout:?}; got {events:?}"),
            }
        }
    }
}

/// A kept-alive connection ([`Client::connect`]).
pub struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    address: String,
}

impl Connection {
    /// Sends a request (a JSON body when given) and reads the whole answer.
    pub async fn request(&mut self, method: &str, path: &str, body: Option<&Value>) -> Response {
        self.sender.ready().await.unwrap_or_else(|e| panic!("{method} {path}: connection: {e}"));
        let mut request = Request::builder().method(Method::from_bytes(method.as_bytes()).unwrap()).uri(path);
        request = request.header(http::header::HOST, &self.address);
        let bytes = match body {
            Some(v) => {
                request = request.header("content-type", "application/json");
                Bytes::from(serde_json::to_vec(v).unwrap())
            }
            None => Bytes::new(),
        };
        let response = self
            .sender
            .send_request(request.body(Full::new(bytes)).unwrap())
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap_or_else(|e| panic!("{method} {path}: reading the body: {e}")).to_bytes();
        Response { status: parts.status.as_u16(), headers: parts.headers, body }
    }
}
