//! A conversion webhook for the end-to-end tests: a small HTTPS server (hyper over tokio-rustls,
//! HTTP/1.1) with its own CA and a serving certificate for `127.0.0.1`/`localhost`, answering
//! `ConversionReview` `apiextensions.k8s.io/v1` and `v1beta1` in the version it was sent. It
//! converts the seed examples: the Pizza of "Programming Kubernetes" chapter 9
//! (`003_2f1e71533aee8360.txt`: `v1alpha1` `spec.toppings: [string]` ↔ `v1beta1`
//! `spec.toppings: [{name, quantity}]`, duplicates grouped in order of first appearance) and the
//! CronTab of the Kubernetes tutorial (`001_caebc94cf39d3735.txt`: `v1beta1` `hostPort` ↔ `v1`
//! `host`/`port`, failing with the tutorial's message when `hostPort` has no port). Any other
//! kind converts by setting `apiVersion` only, which is what a webhook for identical schemas does.
//!
//! It counts calls and records every request body, and it can be switched at run time into the
//! ways webhooks go wrong ([`Mode`]), or taken down altogether ([`Webhook::down`]: the listener
//! is closed and every open connection dropped, so a caller's pooled connections die too).
//!
//! The server runs on its own single-threaded tokio runtime on its own thread: the tests block
//! their own thread on `kubectl`, and versa must still reach the webhook meanwhile.

#![allow(dead_code, reason = "not every test file uses every helper")]

use std::convert::Infallible;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::task::AbortHandle;
use tokio_rustls::TlsAcceptor;

/// The path the webhook serves.
pub const PATH: &str = "/convert";

/// The label and annotation that [`Mode::ChangedLabels`] adds.
pub const ADDED_LABEL: (&str, &str) = ("converted-by", "e2e-webhook");
pub const ADDED_ANNOTATION: (&str, &str) = ("e2e.versa.dev/converted", "true");

/// The finalizer that [`Mode::ChangedMetadata`] adds (and versa must ignore).
pub const ADDED_FINALIZER: &str = "example.com/added-by-webhook";

/// The tutorial's message for a `hostPort` without a port.
pub const HOSTPORT_MESSAGE: &str = "hostPort could not be parsed into a separate host and port";

/// How the webhook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Correct conversions.
    Convert,
    /// Correct conversions, sent after this delay (longer than the caller's timeout).
    Slow(Duration),
    /// `result: {status: Failed, message}`, no objects.
    Failed(String),
    /// `response.uid` is not the request's uid.
    WrongUid,
    /// One object more than was sent.
    WrongCount,
    /// `metadata.name` of each converted object changed.
    ChangedName,
    /// `metadata.namespace` of each converted object changed.
    ChangedNamespace,
    /// `metadata.uid` of each converted object changed.
    ChangedUid,
    /// `kind` of each converted object changed to `Calzone`.
    ChangedKind,
    /// `apiVersion` of each converted object is `<group>/v9`, not the desired version.
    WrongApiVersion,
    /// HTTP 200 with a body that is not JSON.
    InvalidJson,
    /// Converted objects get [`ADDED_LABEL`] and [`ADDED_ANNOTATION`] (allowed: kube keeps them).
    ChangedLabels,
    /// Converted objects get other metadata changed: generation, finalizers, creationTimestamp,
    /// resourceVersion (all to be ignored: kube restores the original metadata).
    ChangedMetadata,
}

/// A running webhook.
pub struct Webhook {
    inner: Arc<Inner>,
    handle: tokio::runtime::Handle,
    acceptor: TlsAcceptor,
    addr: SocketAddr,
    ca_pem: String,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("addr", &self.addr).finish_non_exhaustive()
    }
}

struct Inner {
    mode: Mutex<Mode>,
    /// Every request body received at [`PATH`], in order (JSON, or `Null` when it was not).
    requests: Mutex<Vec<Value>>,
    accept: Mutex<Option<AbortHandle>>,
    connections: Mutex<Vec<AbortHandle>>,
}

impl Webhook {
    /// Makes a CA and a serving certificate and starts serving on a free loopback port.
    pub fn start() -> Webhook {
        let (ca_pem, acceptor) = tls();
        let stop = Arc::new(AtomicBool::new(false));
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("conversion-webhook".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                handle_tx.send(rt.handle().clone()).unwrap();
                rt.block_on(async move {
                    while !thread_stop.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                });
            })
            .unwrap();
        let handle = handle_rx.recv().unwrap();
        let inner = Arc::new(Inner {
            mode: Mutex::new(Mode::Convert),
            requests: Mutex::new(Vec::new()),
            accept: Mutex::new(None),
            connections: Mutex::new(Vec::new()),
        });
        let mut webhook =
            Webhook { inner, handle, acceptor, addr: SocketAddr::from(([127, 0, 0, 1], 0)), ca_pem, stop };
        webhook.addr = webhook.listen(webhook.addr);
        webhook
    }

    /// Binds `addr` (port 0: any free port) on the webhook's runtime and starts accepting;
    /// returns the bound address.
    fn listen(&self, addr: SocketAddr) -> SocketAddr {
        let (tx, rx) = std::sync::mpsc::channel();
        let inner = self.inner.clone();
        let acceptor = self.acceptor.clone();
        let task = self.handle.spawn(async move {
            let bound = (|| {
                let socket = tokio::net::TcpSocket::new_v4()?;
                // The port was ours a moment ago: connections we closed linger in TIME_WAIT.
                socket.set_reuseaddr(true)?;
                socket.bind(addr)?;
                socket.listen(128)
            })();
            let listener = match bound {
                Ok(listener) => listener,
                Err(e) => {
                    tx.send(Err(e)).unwrap();
                    return;
                }
            };
            tx.send(Ok(listener.local_addr().unwrap())).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (inner, acceptor) = (inner.clone(), acceptor.clone());
                let conn = tokio::spawn(serve_connection(inner.clone(), acceptor, tcp));
                let mut connections = inner.connections.lock().unwrap();
                connections.retain(|c| !c.is_finished());
                connections.push(conn.abort_handle());
            }
        });
        *self.inner.accept.lock().unwrap() = Some(task.abort_handle());
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the webhook's runtime did not answer")
            .unwrap_or_else(|e| panic!("webhook: binding {addr}: {e}"))
    }

    /// The URL for `spec.conversion.webhook.clientConfig.url`.
    pub fn url(&self) -> String {
        format!("https://{}{PATH}", self.addr)
    }

    /// The CA certificate (PEM) that signed the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// `clientConfig.caBundle`: base64 of the CA's PEM.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// A definition's `spec.conversion` calling this webhook with these ConversionReview versions.
    pub fn conversion(&self, review_versions: &[&str]) -> Value {
        json!({
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": review_versions,
                "clientConfig": {"url": self.url(), "caBundle": self.ca_bundle()},
            },
        })
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.inner.mode.lock().unwrap() = mode;
    }

    pub fn mode(&self) -> Mode {
        self.inner.mode.lock().unwrap().clone()
    }

    /// How many requests arrived since the start or the last [`Webhook::reset`].
    pub fn calls(&self) -> usize {
        self.inner.requests.lock().unwrap().len()
    }

    /// The request bodies since the start or the last [`Webhook::reset`].
    pub fn requests(&self) -> Vec<Value> {
        self.inner.requests.lock().unwrap().clone()
    }

    /// Forgets the calls so far.
    pub fn reset(&self) {
        self.inner.requests.lock().unwrap().clear();
    }

    /// Stops listening and drops every open connection; returns once connecting is refused.
    pub fn down(&self) {
        if let Some(accept) = self.inner.accept.lock().unwrap().take() {
            accept.abort();
        }
        for conn in self.inner.connections.lock().unwrap().drain(..) {
            conn.abort();
        }
        for _ in 0..200 {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("webhook: {} still accepts connections after down()", self.addr);
    }

    /// Listens again on the same address after [`Webhook::down`].
    pub fn up(&self) {
        if self.inner.accept.lock().unwrap().as_ref().is_some_and(|a| !a.is_finished()) {
            return;
        }
        self.listen(self.addr);
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        if let Some(accept) = self.inner.accept.lock().unwrap().take() {
            accept.abort();
        }
        for conn in self.inner.connections.lock().unwrap().drain(..) {
            conn.abort();
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A CA and a serving certificate for `127.0.0.1` and `localhost`: the CA's PEM and the acceptor.
fn tls() -> (String, TlsAcceptor) {
    let (ca, config) = versa_e2e::serving_tls("versa e2e conversion webhook CA", "conversion-webhook", &[b"http/1.1"]);
    (ca, TlsAcceptor::from(config))
}

async fn serve_connection(inner: Arc<Inner>, acceptor: TlsAcceptor, tcp: tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
    let Ok(tls) = acceptor.accept(tcp).await else { return };
    let service = service_fn(move |request| handle(inner.clone(), request));
    let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
}

async fn handle(
    inner: Arc<Inner>,
    request: http::Request<Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let answer = |status: u16, body: Bytes| {
        Ok(http::Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .unwrap())
    };
    if request.uri().path() != PATH || request.method() != http::Method::POST {
        return answer(404, Bytes::from_static(br#"{"message":"not found"}"#));
    }
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return answer(400, Bytes::new()),
    };
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    inner.requests.lock().unwrap().push(review.clone());
    let mode = inner.mode.lock().unwrap().clone();
    match &mode {
        Mode::Slow(delay) => tokio::time::sleep(*delay).await,
        Mode::InvalidJson => {
            return answer(
                200,
                Bytes::from_static(b"{\"apiVersion\": \"apiextensions.k8s.io/v1\", \"kind\": \"Conversion"),
            );
        }
        _ => {}
    }
    answer(200, Bytes::from(serde_json::to_vec(&respond(&review, &mode)).unwrap()))
}

/// The ConversionReview answering `review` (in its apiVersion) the way `mode` says.
pub fn respond(review: &Value, mode: &Mode) -> Value {
    let api_version = review["apiVersion"].as_str().unwrap_or("apiextensions.k8s.io/v1");
    let request = &review["request"];
    let uid = request["uid"].as_str().unwrap_or_default();
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Result<Vec<Value>, String> = objects.iter().map(|o| convert(o, desired)).collect();
    let mut response = match (converted, mode) {
        (_, Mode::Failed(message)) => json!({"uid": uid, "result": {"status": "Failed", "message": message}}),
        (Err(message), _) => json!({"uid": uid, "result": {"status": "Failed", "message": message}}),
        (Ok(objects), _) => json!({"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}),
    };
    if let Some(objects) = response["convertedObjects"].as_array_mut() {
        tamper(objects, mode, desired);
    }
    if *mode == Mode::WrongUid {
        response["uid"] = json!("00000000-0000-0000-0000-000000000000");
    }
    json!({"apiVersion": api_version, "kind": "ConversionReview", "response": response})
}

/// What the failure modes do to correctly converted objects.
fn tamper(objects: &mut Vec<Value>, mode: &Mode, desired: &str) {
    if *mode == Mode::WrongCount {
        if let Some(first) = objects.first().cloned() {
            objects.push(first);
        }
        return;
    }
    for object in objects {
        match mode {
            Mode::ChangedName => {
                let name = object["metadata"]["name"].as_str().unwrap_or("").to_owned();
                object["metadata"]["name"] = json!(format!("{name}-renamed"));
            }
            Mode::ChangedNamespace => object["metadata"]["namespace"] = json!("elsewhere"),
            Mode::ChangedUid => object["metadata"]["uid"] = json!("11111111-1111-1111-1111-111111111111"),
            Mode::ChangedKind => object["kind"] = json!("Calzone"),
            Mode::WrongApiVersion => {
                let group = desired.split_once('/').map_or("", |(g, _)| g);
                object["apiVersion"] = json!(format!("{group}/v9"));
            }
            Mode::ChangedLabels => {
                object["metadata"]["labels"][ADDED_LABEL.0] = json!(ADDED_LABEL.1);
                object["metadata"]["annotations"][ADDED_ANNOTATION.0] = json!(ADDED_ANNOTATION.1);
            }
            Mode::ChangedMetadata => {
                let meta = &mut object["metadata"];
                meta["generation"] = json!(99);
                meta["finalizers"] = json!([ADDED_FINALIZER]);
                meta["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
                meta["resourceVersion"] = json!("1");
            }
            _ => {}
        }
    }
}

/// Converts one object to `desired` (`<group>/<version>`): the seed's Pizza and CronTab
/// conversions, and `apiVersion` alone for any other kind.
pub fn convert(object: &Value, desired: &str) -> Result<Value, String> {
    let mut out = object.clone();
    out["apiVersion"] = json!(desired);
    let version = desired.rsplit('/').next().unwrap_or_default();
    match object["kind"].as_str() {
        Some("Pizza") => {
            let Some(toppings) = object.pointer("/spec/toppings").and_then(Value::as_array) else { return Ok(out) };
            out["spec"]["toppings"] = match version {
                "v1alpha1" => Value::Array(expand_toppings(toppings)),
                _ => Value::Array(group_toppings(toppings)),
            };
        }
        Some("CronTab") => {
            let fields = out.as_object_mut().ok_or("the object is not a JSON object")?;
            if version == "v1beta1" {
                join_host_port(fields);
            } else {
                split_host_port(fields)?;
            }
        }
        _ => {}
    }
    Ok(out)
}

/// `v1alpha1` → `v1beta1`: `["a", "b", "a"]` → `[{name: a, quantity: 2}, {name: b, quantity: 1}]`
/// (objects already in the grouped form are kept).
fn group_toppings(toppings: &[Value]) -> Vec<Value> {
    let mut grouped: Vec<Value> = Vec::new();
    for topping in toppings {
        let Some(name) = topping.as_str() else {
            grouped.push(topping.clone());
            continue;
        };
        match grouped.iter_mut().find(|g| g["name"] == name) {
            Some(g) => g["quantity"] = json!(g["quantity"].as_i64().unwrap_or(0) + 1),
            None => grouped.push(json!({"name": name, "quantity": 1})),
        }
    }
    grouped
}

/// `v1beta1` → `v1alpha1`: each name repeated `quantity` times (strings are kept).
fn expand_toppings(toppings: &[Value]) -> Vec<Value> {
    let mut names = Vec::new();
    for topping in toppings {
        match topping.as_str() {
            Some(_) => names.push(topping.clone()),
            None => {
                for _ in 0..topping["quantity"].as_i64().unwrap_or(0) {
                    names.push(topping["name"].clone());
                }
            }
        }
    }
    names
}

/// CronTab `v1beta1` → `v1`: `hostPort: "h:p"` → `host: h, port: p`.
fn split_host_port(fields: &mut Map<String, Value>) -> Result<(), String> {
    let Some(host_port) = fields.remove("hostPort") else { return Ok(()) };
    let (host, port) = host_port.as_str().and_then(|hp| hp.rsplit_once(':')).ok_or(HOSTPORT_MESSAGE)?;
    fields.insert("host".into(), json!(host));
    fields.insert("port".into(), json!(port));
    Ok(())
}

/// CronTab `v1` → `v1beta1`: `host: h, port: p` → `hostPort: "h:p"`.
fn join_host_port(fields: &mut Map<String, Value>) {
    let host = fields.remove("host");
    let port = fields.remove("port");
    if host.is_none() && port.is_none() {
        return;
    }
    let text = |v: Option<Value>| v.and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    fields.insert("hostPort".into(), json!(format!("{}:{}", text(host), text(port))));
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: &str = "restaurant.programming-kubernetes.info";

    fn pizza(version: &str, toppings: Value) -> Value {
        json!({
            "apiVersion": format!("{G}/{version}"), "kind": "Pizza", "metadata": {"name": "m"},
            "spec": {"toppings": toppings},
        })
    }

    #[test]
    fn pizza_toppings_round_trip() {
        let alpha = pizza("v1alpha1", json!(["mozzarella", "tomato", "tomato", "basil", "mozzarella"]));
        let beta = convert(&alpha, &format!("{G}/v1beta1")).unwrap();
        assert_eq!(
            beta,
            pizza(
                "v1beta1",
                json!([
                    {"name": "mozzarella", "quantity": 2},
                    {"name": "tomato", "quantity": 2},
                    {"name": "basil", "quantity": 1},
                ])
            )
        );
        let back = convert(&beta, &format!("{G}/v1alpha1")).unwrap();
        assert_eq!(back, pizza("v1alpha1", json!(["mozzarella", "mozzarella", "tomato", "tomato", "basil"])));
    }

    #[test]
    fn crontab_host_port_as_in_the_tutorial() {
        let beta = json!({
            "apiVersion": "example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "c"},
            "hostPort": "localhost:1234",
        });
        let v1 = convert(&beta, "example.com/v1").unwrap();
        assert_eq!(
            v1,
            json!({
                "apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "c"},
                "host": "localhost", "port": "1234",
            })
        );
        assert_eq!(convert(&v1, "example.com/v1beta1").unwrap(), beta);
        let bad = json!({"apiVersion": "example.com/v1beta1", "kind": "CronTab", "hostPort": "localhost"});
        assert_eq!(convert(&bad, "example.com/v1"), Err(HOSTPORT_MESSAGE.to_string()));
    }

    #[test]
    fn reviews_are_answered_in_their_version() {
        for version in ["v1", "v1beta1"] {
            let review = json!({
                "apiVersion": format!("apiextensions.k8s.io/{version}"), "kind": "ConversionReview",
                "request": {
                    "uid": "u-1",
                    "desiredAPIVersion": format!("{G}/v1beta1"),
                    "objects": [pizza("v1alpha1", json!(["a"]))],
                },
            });
            let answer = respond(&review, &Mode::Convert);
            assert_eq!(answer["apiVersion"], json!(format!("apiextensions.k8s.io/{version}")));
            assert_eq!(answer["response"]["uid"], "u-1");
            assert_eq!(answer["response"]["result"]["status"], "Success");
            assert_eq!(
                answer["response"]["convertedObjects"][0]["spec"]["toppings"],
                json!([{"name": "a", "quantity": 1}])
            );
            let wrong = respond(&review, &Mode::WrongCount);
            assert_eq!(wrong["response"]["convertedObjects"].as_array().map(Vec::len), Some(2));
        }
    }
}
