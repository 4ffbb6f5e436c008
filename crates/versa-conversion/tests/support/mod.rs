//! A real HTTPS conversion webhook for the tests: its own CA (rcgen), a serving certificate for
//! `127.0.0.1` and `localhost`, HTTP/2 and HTTP/1.1 by ALPN, and the pizza conversion of the
//! seed (`v1alpha1` toppings `["mozzarella", "tomato", "tomato"]` ↔ `v1beta1`
//! `[{name, quantity}]`). The first path segment picks a behaviour — `pizza` answers correctly,
//! the others answer the way a broken webhook would. Every request is recorded. Also the
//! test-data reader and the schemas of a definition, which every test binary uses.

#![allow(dead_code, reason = "each test binary uses a different part of the support module")]
#![allow(clippy::unwrap_used, reason = "test code: a test webhook that cannot start should fail loudly")]

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// A file of `testdata/`, as JSON.
pub fn testdata(name: &str) -> Value {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The lowered schema of each version of `def` that has one (what the server hands the
/// converter).
pub fn schemas(
    def: &versa_apiextensions::ResourceDefinition,
) -> std::collections::HashMap<String, Arc<versa_schema::Structural>> {
    def.spec
        .versions
        .iter()
        .filter_map(|v| {
            let props = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
            Some((v.name.clone(), Arc::new(versa_schema::Structural::lower(props).unwrap())))
        })
        .collect()
}

/// A certificate authority for test servers.
pub struct Ca {
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca { pem: cert.pem(), issuer: Issuer::new(params, key) }
    }
}

/// One request the webhook received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub query: String,
    pub version: http::Version,
    pub content_type: String,
    pub body: Value,
}

/// A running test webhook.
pub struct Webhook {
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    /// `127.0.0.1:<port>`.
    pub authority: String,
    pub log: Arc<Mutex<Vec<Recorded>>>,
    /// TLS connections established.
    pub connections: Arc<AtomicUsize>,
}

impl Webhook {
    /// Starts a webhook serving with a certificate of `ca`.
    pub async fn start(ca: &Ca) -> Webhook {
        let acceptor = acceptor(ca, &[b"h2", b"http/1.1"]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let connections: Arc<AtomicUsize> = Arc::default();
        let (log2, connections2) = (log.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log, connections) = (acceptor.clone(), log2.clone(), connections2.clone());
                tokio::spawn(async move {
                    // A client that does not trust us ends here.
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    connections.fetch_add(1, Ordering::SeqCst);
                    let service = service_fn(move |req| handle(req, log.clone()));
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Webhook { base: format!("https://{authority}"), authority, log, connections }
    }

    /// Starts a server that completes the TLS handshake (HTTP/1.1 only) and hangs up without
    /// answering.
    pub async fn start_hanging_up(ca: &Ca) -> Webhook {
        let acceptor = acceptor(ca, &[b"http/1.1"]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        let connections: Arc<AtomicUsize> = Arc::default();
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, counted) = (acceptor.clone(), counted.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    counted.fetch_add(1, Ordering::SeqCst);
                    // Read the start of the request, then close (with TLS close_notify).
                    let mut buf = [0u8; 64];
                    let mut read = tokio::io::ReadBuf::new(&mut buf);
                    let _ = std::future::poll_fn(|cx| {
                        tokio::io::AsyncRead::poll_read(std::pin::Pin::new(&mut tls), cx, &mut read)
                    })
                    .await;
                    let _ = std::future::poll_fn(|cx| {
                        tokio::io::AsyncWrite::poll_shutdown(std::pin::Pin::new(&mut tls), cx)
                    })
                    .await;
                });
            }
        });
        Webhook { base: format!("https://{authority}"), authority, log: Arc::default(), connections }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }
}

/// A TLS acceptor with a serving certificate of `ca` for `127.0.0.1` and `localhost`.
fn acceptor(ca: &Ca, alpn: &[&[u8]]) -> tokio_rustls::TlsAcceptor {
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let chain = vec![CertificateDer::from(cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// An address nothing listens on.
pub async fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

async fn handle(req: Request<Incoming>, log: Arc<Mutex<Vec<Recorded>>>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let version = req.version();
    let content_type =
        req.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let body = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push(Recorded { path: path.clone(), query, version, content_type, body: review.clone() });
    Ok(respond(path.trim_start_matches('/'), &review).await)
}

fn raw(status: u16, content_type: &str, body: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}

async fn respond(behaviour: &str, review: &Value) -> Response<Full<Bytes>> {
    match behaviour {
        "invalid-json" => return raw(200, "application/json", "{\"apiVersion\": "),
        "empty" => return raw(200, "application/json", ""),
        "status-500" => return raw(500, "text/plain; charset=utf-8", "pizza oven on fire\n"),
        "status-json-500" => {
            let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "the oven is cold", "code": 500});
            return raw(500, "application/json", &status.to_string());
        }
        "slow" => tokio::time::sleep(Duration::from_secs(5)).await,
        "pizza" | "extra-field" | "labels" | "other-metadata" | "bare" | "v1beta1-answer" | "failed"
        | "failed-no-message" | "wrong-uid" | "drop-last" | "rename" | "renamespace" | "reuid" | "rekind"
        | "old-api-version" | "bad-label" => {}
        _ => return raw(404, "text/plain; charset=utf-8", "404 page not found"),
    }
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let mut result = json!({"status": "Success"});
    let mut converted = Vec::new();
    for obj in &objects {
        match convert_pizza(obj, desired) {
            Ok(o) => converted.push(o),
            Err(message) => {
                result = json!({"status": "Failed", "message": message});
                converted.clear();
                break;
            }
        }
    }
    let mut api_version = review["apiVersion"].clone();
    let mut uid = request["uid"].clone();
    let first = converted.first_mut();
    match (behaviour, first) {
        ("extra-field", Some(o)) => o["spec"]["crust"] = json!("thin"),
        ("labels", Some(o)) => {
            o["metadata"]["labels"]["restaurant.programming-kubernetes.info/converted"] = json!("true");
            o["metadata"]["annotations"] = json!({"converted-by": "pizza-webhook"});
        }
        ("other-metadata", Some(o)) => {
            let m = &mut o["metadata"];
            m["resourceVersion"] = json!("999");
            m["generation"] = json!(42);
            m["creationTimestamp"] = json!("2030-01-01T00:00:00Z");
            m["finalizers"] = json!(["restaurant.programming-kubernetes.info/cleanup"]);
            m["generateName"] = json!("pizza-");
        }
        ("rename", Some(o)) => {
            let name = format!("{}-2", o["metadata"]["name"].as_str().unwrap_or(""));
            o["metadata"]["name"] = json!(name);
        }
        ("renamespace", Some(o)) => o["metadata"]["namespace"] = json!("other"),
        ("reuid", Some(o)) => o["metadata"]["uid"] = json!("changed"),
        ("rekind", Some(o)) => o["kind"] = json!("Calzone"),
        ("old-api-version", Some(o)) => o["apiVersion"] = objects[0]["apiVersion"].clone(),
        ("bad-label", Some(o)) => o["metadata"]["labels"]["bad key!"] = json!("x"),
        _ => {}
    }
    match behaviour {
        "failed" => result = json!({"status": "Failed", "message": "toppings are out of stock"}),
        "failed-no-message" => result = json!({"status": "Failure"}),
        "wrong-uid" => uid = json!("not-the-request-uid"),
        "drop-last" => {
            converted.pop();
        }
        "v1beta1-answer" => api_version = json!("apiextensions.k8s.io/v1beta1"),
        _ => {}
    }
    let answer = if behaviour == "bare" {
        // No type meta, no uid: what a sloppy v1beta1-era webhook sends.
        json!({"response": {"result": result, "convertedObjects": converted}})
    } else {
        json!({
            "apiVersion": api_version,
            "kind": "ConversionReview",
            "response": {"uid": uid, "result": result, "convertedObjects": converted},
        })
    };
    raw(200, "application/json", &answer.to_string())
}

/// The seed's pizza conversion: duplicate toppings in `v1alpha1` are a quantity in `v1beta1`.
fn convert_pizza(obj: &Value, desired: &str) -> Result<Value, String> {
    let from = obj["apiVersion"].as_str().unwrap_or("");
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let toppings = obj["spec"]["toppings"].as_array().cloned().unwrap_or_default();
    let converted: Vec<Value> = match desired.rsplit('/').next() {
        Some("v1beta1") => {
            let mut counted: Vec<(String, i64)> = Vec::new();
            for t in toppings.iter().filter_map(Value::as_str) {
                match counted.iter_mut().find(|(n, _)| n == t) {
                    Some((_, q)) => *q += 1,
                    None => counted.push((t.to_owned(), 1)),
                }
            }
            counted.into_iter().map(|(name, quantity)| json!({"name": name, "quantity": quantity})).collect()
        }
        Some("v1alpha1") => toppings
            .iter()
            .flat_map(|t| {
                let n = t["quantity"].as_i64().unwrap_or(0).max(0) as usize;
                std::iter::repeat_n(t["name"].clone(), n)
            })
            .collect(),
        _ => return Err(format!("cannot convert {from} to {desired}")),
    };
    if out.get("spec").is_some() {
        out["spec"]["toppings"] = Value::Array(converted);
    }
    Ok(out)
}
