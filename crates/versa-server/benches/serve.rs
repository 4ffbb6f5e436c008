//! Serving benchmark: versa-server run in-process over HTTPS on loopback, each throughput figure
//! next to a bare hyper + rustls server measured in the same run, in the same process, with the
//! same certificates and the same client (numbers vary by machine; ratios less so).
//!
//! - **GET** one custom object, **CREATE** (POST of distinct objects, each a durable write) and
//!   **LIST** of 1,000 objects: `VERSA_BENCH_CONNECTIONS` (16) HTTP/1.1 keep-alive connections,
//!   each its own TLS session presenting the admin client certificate, sending back to back for
//!   `VERSA_BENCH_SECONDS` (5) after `VERSA_BENCH_WARMUP` (1) seconds of warm-up per server,
//!   split into `VERSA_BENCH_ROUNDS` (5) rounds alternating between versa and the bare server;
//!   requests/s and p50/p99 latency. LIST is also measured one request at a time on one
//!   connection (the p99 target), and with 4 concurrent clients. The bare server answers GET
//!   with a small JSON body, POST (after reading the body) with 201, and the LIST path with the
//!   very bytes versa answered, so its figures are the cost of TLS, HTTP and the transfer
//!   alone. Targets: GET ≥ 50 % of the bare server's requests/s; LIST of 1,000 p99 < 50 ms.
//! - **Definitions**, on a fresh server started first (so that the other scenarios' freed
//!   memory cannot hide its growth): `VmRSS` of the process before and after creating
//!   `VERSA_BENCH_DEFINITIONS` (1,000) distinct definitions (100 groups of 10 kinds, each with a
//!   small schema and a printer column) and waiting until every one is discoverable (target ≤
//!   100 KiB per definition); then, with them loaded, the time from POSTing a new definition to
//!   `GET /apis/<group>/<version>` listing it — which the server does only once the definition
//!   is Established — polled in a tight loop, 10 times (target < 100 ms). Discovery and OpenAPI
//!   documents over all definitions are timed too (first request builds them, later ones hit
//!   the cache).
//!
//! The server runs on its own multi-thread runtime (worker stacks sized as the binary sizes
//! them), the load client on another; both share the machine's cores, as wrk on the same host
//! would. Arguments pick scenarios (`definitions`, `get`, `create`, `list`; default all).
//! Nothing here asserts on time: missed targets are printed, not failed.
//!
//! Run: `cargo bench -p versa-server --bench serve` (or `hack/bench-serve.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a benchmark: failures should be loud")]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use versa_server::{Auth, ServerConfig, pki};
use versa_storage::Store;
use versa_storage_embedded::EmbeddedStore;

/// The CronTab definition the throughput scenarios use.
const GROUP: &str = "stable.example.com";
/// The object the GET scenario reads.
const GET_PATH: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs/target";
/// Where the CREATE scenario writes (kept apart from the listed namespace).
const CREATE_PATH: &str = "/apis/stable.example.com/v1/namespaces/created/crontabs";
/// The collection the LIST scenarios read.
const LIST_PATH: &str = "/apis/stable.example.com/v1/namespaces/listed/crontabs";
const LIST_OBJECTS: usize = 1000;
/// Sequential LIST requests for the p50/p99 on one connection.
const LIST_REQUESTS: usize = 100;
const LIST_CLIENTS: usize = 4;
/// New definitions timed with the others loaded.
const FRESH_DEFINITIONS: usize = 10;
/// Kinds per group in the definitions scenario.
const KINDS_PER_GROUP: usize = 10;
const DEFINITIONS_PATH: &str = "/apis/versa.dev/v1/resourcedefinitions";
/// Accept header of aggregated discovery (what kubectl asks for).
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// What the environment and arguments asked for.
#[derive(Debug)]
struct Settings {
    timing: Timing,
    connections: usize,
    definitions: usize,
    scenarios: Vec<String>,
}

impl Settings {
    fn from_env() -> Settings {
        let num = |name: &str, default: f64| -> f64 {
            std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
        };
        let scenarios: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
        for s in &scenarios {
            assert!(
                matches!(s.as_str(), "definitions" | "get" | "create" | "list"),
                "unknown scenario {s:?}: pick from definitions, get, create, list"
            );
        }
        Settings {
            timing: Timing {
                warmup: Duration::from_secs_f64(num("VERSA_BENCH_WARMUP", 1.0)),
                run: Duration::from_secs_f64(num("VERSA_BENCH_SECONDS", 5.0)),
                rounds: (num("VERSA_BENCH_ROUNDS", 5.0) as u32).max(1),
            },
            connections: num("VERSA_BENCH_CONNECTIONS", 16.0) as usize,
            definitions: num("VERSA_BENCH_DEFINITIONS", 1000.0) as usize,
            scenarios,
        }
    }

    fn wants(&self, scenario: &str) -> bool {
        self.scenarios.is_empty() || self.scenarios.iter().any(|s| s == scenario)
    }
}

fn main() {
    let settings = Settings::from_env();
    // As `versa serve` builds its runtime: worker stacks sized for deeply nested bodies.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("server")
        .thread_stack_size(versa_server::codec::WORKER_STACK_BYTES)
        .build()
        .unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("client").build().unwrap();
    let tmp = std::env::temp_dir();
    println!(
        "versa-server over HTTPS on loopback ({} cores; HTTP/1.1 keep-alive, TLS with client certificates; data in {} on {})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        tmp.display(),
        filesystem(&tmp).unwrap_or_else(|| "an unknown filesystem".into()),
    );
    if settings.wants("definitions") {
        definitions(&settings, &server_rt, &client_rt);
    }
    if settings.wants("get") || settings.wants("create") || settings.wants("list") {
        serving(&settings, &server_rt, &client_rt);
    }
}

// ---- throughput: versa next to the bare server ----

/// How long each throughput comparison runs: `warmup` then `run` in all, for each server, split
/// into `rounds` that alternate between the two servers, so that a change in the machine's load
/// (other builds on shared cores) weighs on both alike.
#[derive(Debug, Clone, Copy)]
struct Timing {
    warmup: Duration,
    run: Duration,
    rounds: u32,
}

/// One row of the results table.
struct Row {
    name: String,
    versa: f64,
    bare: Option<f64>,
    unit: &'static str,
    higher_is_better: bool,
    target: String,
}

impl Row {
    fn new(name: impl Into<String>, versa: f64, bare: Option<f64>, unit: &'static str) -> Row {
        Row { name: name.into(), versa, bare, unit, higher_is_better: unit == "req/s", target: String::new() }
    }

    fn target(mut self, target: String) -> Row {
        self.target = target;
        self
    }

    /// versa relative to the bare server, 1.0 = as fast.
    fn ratio(&self) -> Option<f64> {
        let bare = self.bare?;
        Some(if self.higher_is_better { self.versa / bare } else { bare / self.versa })
    }
}

fn serving(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let versa = Versa::start(server_rt);
    let list_body = Arc::new(OnceLock::new());
    let bare_addr = server_rt.block_on(start_bare(versa.dir.path(), list_body.clone()));
    let versa_client = Client::new(versa.dir.path(), versa.addr);
    let bare_client = Client::new(versa.dir.path(), bare_addr);
    let (conns, timing) = (settings.connections, settings.timing);
    println!();
    println!(
        "## serving: {conns} connections, {:.1} s measured after {:.1} s warm-up per server, in {} alternating rounds",
        timing.run.as_secs_f64(),
        timing.warmup.as_secs_f64(),
        timing.rounds
    );
    let mut rows = Vec::new();
    client_rt.block_on(async {
        let mut conn = versa_client.connect().await;
        wait_ready(&mut conn).await;
        define(&mut conn, &crontab_definition(), GROUP, "v1", "crontabs").await;
        let (status, body) = conn
            .send(Method::POST, "/apis/stable.example.com/v1/namespaces/default/crontabs", Some(crontab("target")))
            .await;
        assert_eq!(status, StatusCode::CREATED, "creating the GET target: {}", String::from_utf8_lossy(&body));
        println!(
            "(GET answers {} bytes; CREATE sends {} bytes)",
            conn.send(Method::GET, GET_PATH, None).await.1.len(),
            crontab("c-00-00000000").len()
        );

        if settings.wants("get") {
            let request = |_: usize, _: usize| (Method::GET, GET_PATH.to_owned(), None);
            let (ours, bare) = compare(&versa_client, &bare_client, conns, timing, StatusCode::OK, request).await;
            rows.push(Row::new("GET one object", ours.rps(), Some(bare.rps()), "req/s").target(target_min(
                ours.rps() / bare.rps(),
                0.5,
                "ratio",
            )));
            rows.push(Row::new("GET p50", ms(ours.p(0.5)), Some(ms(bare.p(0.5))), "ms"));
            rows.push(Row::new("GET p99", ms(ours.p(0.99)), Some(ms(bare.p(0.99))), "ms"));
        }

        if settings.wants("create") {
            let request =
                |c: usize, i: usize| (Method::POST, CREATE_PATH.to_owned(), Some(crontab(&format!("c-{c:02}-{i:08}"))));
            let (ours, bare) = compare(&versa_client, &bare_client, conns, timing, StatusCode::CREATED, request).await;
            rows.push(Row::new("CREATE", ours.rps(), Some(bare.rps()), "req/s"));
            rows.push(Row::new("CREATE p50", ms(ours.p(0.5)), Some(ms(bare.p(0.5))), "ms"));
            rows.push(Row::new("CREATE p99", ms(ours.p(0.99)), Some(ms(bare.p(0.99))), "ms"));
        }

        if settings.wants("list") {
            let started = Instant::now();
            fill_list(&versa_client, conns).await;
            println!("(created the {LIST_OBJECTS} listed objects in {:.2} s)", started.elapsed().as_secs_f64());
            let (status, body) = conn.send(Method::GET, LIST_PATH, None).await;
            assert_eq!(status, StatusCode::OK);
            let list: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(list["items"].as_array().map(Vec::len), Some(LIST_OBJECTS));
            println!(
                "(LIST of {LIST_OBJECTS} answers {} KiB; the bare server answers the same bytes)",
                body.len() / 1024
            );
            list_body.set(body).unwrap();

            let mut bare_conn = bare_client.connect().await;
            let bare = sequential(&mut bare_conn, LIST_PATH, None, LIST_REQUESTS).await;
            let ours = sequential(&mut conn, LIST_PATH, None, LIST_REQUESTS).await;
            rows.push(Row::new(
                format!("LIST {LIST_OBJECTS}, 1 client, p50"),
                ms(ours.p(0.5)),
                Some(ms(bare.p(0.5))),
                "ms",
            ));
            let p99 = ms(ours.p(0.99));
            rows.push(
                Row::new(format!("LIST {LIST_OBJECTS}, 1 client, p99"), p99, Some(ms(bare.p(0.99))), "ms")
                    .target(target_max(p99, 50.0, "ms")),
            );
            let table = sequential(&mut conn, LIST_PATH, Some(TABLE), LIST_REQUESTS).await;
            rows.push(Row::new(format!("LIST {LIST_OBJECTS} as Table, 1 client, p50"), ms(table.p(0.5)), None, "ms"));
            rows.push(Row::new(format!("LIST {LIST_OBJECTS} as Table, 1 client, p99"), ms(table.p(0.99)), None, "ms"));

            let request = |_: usize, _: usize| (Method::GET, LIST_PATH.to_owned(), None);
            let (ours, bare) =
                compare(&versa_client, &bare_client, LIST_CLIENTS, timing, StatusCode::OK, request).await;
            let name = format!("LIST {LIST_OBJECTS}, {LIST_CLIENTS} clients");
            rows.push(Row::new(name.clone(), ours.rps(), Some(bare.rps()), "req/s"));
            rows.push(Row::new(format!("{name}, p50"), ms(ours.p(0.5)), Some(ms(bare.p(0.5))), "ms"));
            rows.push(Row::new(format!("{name}, p99"), ms(ours.p(0.99)), Some(ms(bare.p(0.99))), "ms"));
        }
    });
    versa.stop(server_rt);

    println!();
    println!("| measure | versa | bare hyper+rustls | ratio | target |");
    println!("|---|---:|---:|---:|---|");
    for r in &rows {
        let value = |v: f64| if r.unit == "ms" { format!("{v:.2} ms") } else { format!("{} {}", thousands(v), r.unit) };
        let bare = r.bare.map_or("—".to_owned(), value);
        let ratio = r.ratio().map_or("—".to_owned(), |x| format!("{x:.2}"));
        println!("| {} | {} | {bare} | {ratio} | {} |", r.name, value(r.versa), r.target);
    }
    println!("(ratio: versa relative to the bare server, 1.0 = as fast)");
}

/// Creates the listed objects over `conns` connections.
async fn fill_list(client: &Client, conns: usize) {
    let mut tasks = Vec::new();
    for c in 0..conns {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = client.connect().await;
            for i in (c..LIST_OBJECTS).step_by(conns) {
                let (status, body) = conn.send(Method::POST, LIST_PATH, Some(crontab(&format!("l-{i:04}")))).await;
                assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

// ---- definitions: memory and time to be served ----

fn definitions(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let n = settings.definitions;
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    println!();
    println!("## definitions: {n} loaded ({KINDS_PER_GROUP} kinds per group)");
    client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        let _ = conn.send(Method::GET, "/apis", None).await;
        let rss_before = rss_kib();

        let started = Instant::now();
        let writers = 8;
        let mut tasks = Vec::new();
        for w in 0..writers {
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = client.connect().await;
                for i in (w..n).step_by(writers) {
                    let (group, plural) = scale_names(i);
                    let def = scale_definition(&group, &plural, i % KINDS_PER_GROUP);
                    let (status, body) = conn.send(Method::POST, DEFINITIONS_PATH, Some(json_bytes(&def))).await;
                    assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let created = started.elapsed();
        for i in 0..n {
            let (group, plural) = scale_names(i);
            while !discoverable(&mut conn, &group, "v1", &plural).await {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let served = started.elapsed();
        let rss_loaded = rss_kib();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss_settled = rss_kib();
        println!(
            "create {n} definitions (8 connections): {:.2} s; all discoverable after {:.2} s",
            created.as_secs_f64(),
            served.as_secs_f64()
        );
        match (rss_before, rss_loaded, rss_settled) {
            (Some(before), Some(loaded), Some(settled)) => {
                let per = settled.saturating_sub(before) as f64 / n.max(1) as f64;
                println!(
                    "RSS: {} KiB before, {} KiB loaded, {} KiB 2 s later: {per:.1} KiB per definition (target ≤ 100 KiB: {})",
                    thousands(before as f64),
                    thousands(loaded as f64),
                    thousands(settled as f64),
                    met(per <= 100.0)
                );
            }
            _ => println!("RSS: not available (no /proc/self/status)"),
        }

        let mut times = Vec::new();
        for k in 0..FRESH_DEFINITIONS {
            let group = format!("fresh{k}.bench.example.com");
            let def = scale_definition(&group, "gadgets", k);
            let body = json_bytes(&def);
            let started = Instant::now();
            let (status, answer) = conn.send(Method::POST, DEFINITIONS_PATH, Some(body)).await;
            assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&answer));
            while !discoverable(&mut conn, &group, "v1", "gadgets").await {}
            times.push(started.elapsed());
            let (_, doc) = conn.send(Method::GET, &format!("{DEFINITIONS_PATH}/gadgets.{group}"), None).await;
            let doc: Value = serde_json::from_slice(&doc).unwrap();
            let established = doc["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
            assert!(established, "discoverable but not Established: {doc}");
        }
        times.sort();
        let (p50, max) = (ms(percentile(&times, 0.5)), ms(*times.last().unwrap()));
        println!(
            "new definition, POST → Established and discoverable, {FRESH_DEFINITIONS}×: p50 {p50:.1} ms, max {max:.1} ms (target < 100 ms: {})",
            met(max < 100.0)
        );

        for (what, path, accept) in [
            ("GET /apis (APIGroupList)", "/apis", None),
            ("GET /apis (aggregated discovery)", "/apis", Some(AGGREGATED)),
            ("GET /openapi/v2", "/openapi/v2", None),
            ("GET /openapi/v3 (index)", "/openapi/v3", None),
        ] {
            let first = Instant::now();
            let (status, body) = conn.request(Method::GET, path, accept, None).await;
            let first = first.elapsed();
            assert_eq!(status, StatusCode::OK, "{path}: {}", String::from_utf8_lossy(&body));
            let again = sequential(&mut conn, path, accept, 10).await;
            println!(
                "{what}: {} KiB, first {:.1} ms, then p50 {:.1} ms",
                body.len() / 1024,
                ms(first),
                ms(again.p(0.5))
            );
        }
    });
    versa.stop(server_rt);
}

/// Group and plural of the `i`th definition of the definitions scenario.
fn scale_names(i: usize) -> (String, String) {
    (format!("g{:03}.bench.example.com", i / KINDS_PER_GROUP), format!("widget{}s", i % KINDS_PER_GROUP))
}

/// A small definition: a few typed properties, one printer column, the status subresource.
fn scale_definition(group: &str, plural: &str, kind: usize) -> Value {
    let singular = plural.trim_end_matches('s');
    let kind = format!("{}{kind}", if singular.starts_with("widget") { "Widget" } else { "Gadget" });
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "string", "enum": ["small", "medium", "large"]},
                        "count": {"type": "integer", "minimum": 0, "maximum": 100},
                        "enabled": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
                    }},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                }}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "string", "jsonPath": ".spec.size"}],
            }],
        },
    })
}

// ---- the servers ----

/// versa-server running in-process on the server runtime, with its data in a temporary
/// directory.
struct Versa {
    dir: tempfile::TempDir,
    addr: SocketAddr,
    shutdown: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Versa {
    fn start(rt: &Runtime) -> Versa {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path(), Default::default()).unwrap());
        let config = ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: dir.path().to_path_buf(),
            store,
            key_prefix: "/registry".into(),
            auth: Auth::standalone(),
            conversion: Default::default(),
            migration: Default::default(),
        };
        let prepared = rt.block_on(config.complete()).unwrap();
        let addr = prepared.local_addr().unwrap();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let task = rt.spawn(prepared.run(async {
            let _ = stop.await;
        }));
        Versa { dir, addr, shutdown, task }
    }

    fn stop(self, rt: &Runtime) {
        let _ = self.shutdown.send(());
        rt.block_on(self.task).unwrap().unwrap();
    }
}

/// The bare baseline: hyper (HTTP/1.1 and HTTP/2 by ALPN) on tokio-rustls with versa's serving
/// certificate and the same client-certificate verification (optional, checked against versa's
/// CA), answering without looking at the request beyond method and path.
async fn start_bare(data_dir: &Path, list_body: Arc<OnceLock<Bytes>>) -> SocketAddr {
    let tls = TlsAcceptor::from(bare_tls(data_dir));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let small = Bytes::from_static(br#"{"kind":"Status","apiVersion":"v1","status":"Success","code":200}"#);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let (tls, list_body, small) = (tls.clone(), list_body.clone(), small.clone());
            tokio::spawn(async move {
                let Ok(stream) = tls.accept(tcp).await else { return };
                let service = service_fn(move |req: Request<Incoming>| {
                    let (list_body, small) = (list_body.clone(), small.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let _ = body.collect().await;
                        let (status, bytes) = if parts.method == Method::POST {
                            (StatusCode::CREATED, small)
                        } else if parts.uri.path() == LIST_PATH {
                            (StatusCode::OK, list_body.get().cloned().unwrap_or(small))
                        } else {
                            (StatusCode::OK, small)
                        };
                        let mut response = Response::new(Full::new(bytes));
                        *response.status_mut() = status;
                        response
                            .headers_mut()
                            .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
                        Ok::<_, Infallible>(response)
                    }
                });
                let builder = auto::Builder::new(TokioExecutor::new());
                let _ = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).await;
            });
        }
    });
    addr
}

/// What versa's (private) `tls.rs` builds, from the files it wrote into the data directory.
fn bare_tls(data_dir: &Path) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(data_dir.join(pki::CA_CERT)).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .unwrap();
    let chain: Vec<_> =
        CertificateDer::pem_file_iter(data_dir.join(pki::SERVING_CERT)).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(data_dir.join(pki::SERVING_KEY)).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

// ---- the load client ----

/// Connects to one server as versa's admin (trusting `ca.crt`, presenting `admin.crt`).
#[derive(Clone)]
struct Client {
    tls: TlsConnector,
    addr: SocketAddr,
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Client {
    fn new(data_dir: &Path, addr: SocketAddr) -> Client {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_file_iter(data_dir.join(pki::CA_CERT)).unwrap() {
            roots.add(ca.unwrap()).unwrap();
        }
        let chain: Vec<_> =
            CertificateDer::pem_file_iter(data_dir.join(pki::ADMIN_CERT)).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(data_dir.join(pki::ADMIN_KEY)).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Client { tls: TlsConnector::from(Arc::new(config)), addr }
    }

    async fn connect(&self) -> Conn {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let tls = self.tls.connect(ServerName::IpAddress(self.addr.ip().into()), tcp).await.unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Conn { sender, host: self.addr.to_string() }
    }
}

impl Conn {
    async fn send(&mut self, method: Method, path: &str, body: Option<Bytes>) -> (StatusCode, Bytes) {
        self.request(method, path, None, body).await
    }

    /// Sends one request and reads the whole answer.
    async fn request(
        &mut self,
        method: Method,
        path: &str,
        accept: Option<&str>,
        body: Option<Bytes>,
    ) -> (StatusCode, Bytes) {
        self.sender.ready().await.unwrap();
        let mut request = Request::builder().method(method).uri(path).header(header::HOST, &self.host);
        if let Some(accept) = accept {
            request = request.header(header::ACCEPT, accept);
        }
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let request = request.body(Full::new(body.unwrap_or_default())).unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        (parts.status, body.collect().await.unwrap().to_bytes())
    }
}

/// The figures of one load run.
struct Load {
    requests: usize,
    run: Duration,
    /// Sorted.
    latencies: Vec<Duration>,
}

impl Load {
    fn rps(&self) -> f64 {
        self.requests as f64 / self.run.as_secs_f64()
    }

    fn p(&self, p: f64) -> Duration {
        percentile(&self.latencies, p)
    }
}

/// [`load`] on versa and on the bare server in alternating rounds; the figures of each, merged.
async fn compare(
    versa: &Client,
    bare: &Client,
    conns: usize,
    timing: Timing,
    expect: StatusCode,
    request: fn(usize, usize) -> (Method, String, Option<Bytes>),
) -> (Load, Load) {
    let (warmup, run) = (timing.warmup / timing.rounds, timing.run / timing.rounds);
    let mut results: [Vec<Load>; 2] = [Vec::new(), Vec::new()];
    for round in 0..timing.rounds {
        // Sequence numbers continue across rounds (CREATE names stay distinct).
        let offset = round as usize * 10_000_000;
        for (i, client) in [versa, bare].into_iter().enumerate() {
            results[i].push(load(client, conns, warmup, run, expect, request, offset).await);
        }
    }
    let [ours, theirs] = results.map(|loads| {
        let mut latencies: Vec<Duration> = loads.iter().flat_map(|l| l.latencies.iter().copied()).collect();
        latencies.sort();
        Load { requests: latencies.len(), run: loads.iter().map(|l| l.run).sum(), latencies }
    });
    (ours, theirs)
}

/// `conns` connections sending back to back: requests started during `run` (after `warmup`)
/// are counted. `request(connection, sequence)` makes each request, sequences counting from
/// `first`; every answer must be `expect`.
async fn load(
    client: &Client,
    conns: usize,
    warmup: Duration,
    run: Duration,
    expect: StatusCode,
    request: fn(usize, usize) -> (Method, String, Option<Bytes>),
    first: usize,
) -> Load {
    let mut connected = Vec::new();
    for _ in 0..conns {
        connected.push(client.connect().await);
    }
    let measure_from = Instant::now() + warmup;
    let until = measure_from + run;
    let mut tasks = Vec::new();
    for (c, mut conn) in connected.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            for i in first.. {
                let started = Instant::now();
                if started >= until {
                    break;
                }
                let (method, path, body) = request(c, i);
                let (status, answer) = conn.send(method.clone(), &path, body).await;
                assert_eq!(status, expect, "{method} {path}: {}", String::from_utf8_lossy(&answer));
                if started >= measure_from {
                    latencies.push(started.elapsed());
                }
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    latencies.sort();
    Load { requests: latencies.len(), run, latencies }
}

/// `n` GETs of `path` one after the other on one connection.
async fn sequential(conn: &mut Conn, path: &str, accept: Option<&str>, n: usize) -> Load {
    let mut latencies = Vec::new();
    let started = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        let (status, body) = conn.request(Method::GET, path, accept, None).await;
        assert_eq!(status, StatusCode::OK, "GET {path}: {}", String::from_utf8_lossy(&body));
        latencies.push(t.elapsed());
    }
    latencies.sort();
    Load { requests: n, run: started.elapsed(), latencies }
}

async fn wait_ready(conn: &mut Conn) {
    while conn.send(Method::GET, "/readyz", None).await.0 != StatusCode::OK {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Creates a definition and waits until it is served.
async fn define(conn: &mut Conn, def: &Value, group: &str, version: &str, plural: &str) {
    let (status, body) = conn.send(Method::POST, DEFINITIONS_PATH, Some(json_bytes(def))).await;
    assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
    while !discoverable(conn, group, version, plural).await {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Whether `/apis/<group>/<version>` lists `plural`.
async fn discoverable(conn: &mut Conn, group: &str, version: &str, plural: &str) -> bool {
    let (status, body) = conn.send(Method::GET, &format!("/apis/{group}/{version}"), None).await;
    if status != StatusCode::OK {
        return false;
    }
    let doc: Value = serde_json::from_slice(&body).unwrap();
    doc["resources"].as_array().is_some_and(|rs| rs.iter().any(|r| r["name"] == plural))
}

fn crontab_definition() -> Value {
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": format!("crontabs.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                }}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    })
}

/// A CronTab named `name`, as request bytes.
fn crontab(name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{{"name":"{name}","labels":{{"app":"bench","tier":"backend"}}}},"spec":{{"cronSpec":"*/5 * * * *","image":"registry.example.com/bench/cron:1.2.3","replicas":3}}}}"#
    ))
}

fn json_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap())
}

// ---- figures ----

/// The process's resident set size (`VmRSS`), in KiB.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The type of the filesystem holding `path` (from `/proc/mounts`): on tmpfs, fsync is free and
/// CREATE is not what it would be on a disk.
fn filesystem(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let (mount, fstype) = (fields.nth(1)?, fields.next()?);
            path.starts_with(mount).then(|| (mount.len(), fstype.to_owned()))
        })
        .max()
        .map(|(_, fstype)| fstype)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "missed" }
}

fn target_min(value: f64, min: f64, what: &str) -> String {
    format!("{what} ≥ {min:.2}: {}", met(value >= min))
}

fn target_max(value: f64, max: f64, unit: &str) -> String {
    format!("< {max:.0} {unit}: {}", met(value < max))
}

/// `12345.6` → `"12,346"`.
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
