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
//!   alone. Targets (issue 41, as printed): GET ≥ 0.8 of the bare server's requests/s; LIST of
//!   1,000 p99 < 10 ms.
//! - **Definitions**, on fresh servers (`serve/definitions.rs` says how): `VERSA_BENCH_DEFINITIONS`
//!   (1,000; issue 19's target is for 10,000) created in a burst, 10 kinds per group — the time
//!   until all are discoverable (target < 10 s) and RSS per definition (≤ 100 KiB); with them
//!   loaded, POST → Established and discoverable of new definitions, p50/p99/max (targets p99
//!   < 100 ms, nothing beyond 1 s); discovery and OpenAPI documents over all of them; then
//!   `VERSA_BENCH_GROUP_DEFINITIONS` (1,000) in one single group, the same two times.
//! - **Conversion**, on a fresh server: two definitions of the same kind and schema, each with
//!   versions `v1` (storage) and `v2`, one with the `None` strategy and one with a `Webhook`
//!   served by the bench itself (HTTPS with its own rcgen CA as `caBundle`, HTTP/2 or HTTP/1.1
//!   by ALPN, on its own runtime; it answers a `ConversionReview` by setting each object's
//!   `apiVersion`). 1,000 objects of each, written at `v1`, are listed at `v1` and at `v2`,
//!   `CONVERSION_REQUESTS` (50) sequential requests per measure on one connection, split into
//!   `VERSA_BENCH_ROUNDS` rounds alternating between every measure of every strategy. With a label selector matching every object,
//!   which converts the whole page on every request (an unfiltered LIST renders each object
//!   once and then serves it from the render cache; it is measured too, for reference). The
//!   webhook's own time is the same 1,000-object review POSTed straight to it from the bench,
//!   over HTTP/2 as versa calls it, in the same rounds. Targets, on the p50s: `None` adds ≤ 10 %
//!   to the LIST at the storage version; `Webhook` adds the webhook's own time plus ≤ 5 ms.
//!   A third definition converts with versa's `CEL` rules (two fields each way, and the
//!   round-trip check that keeps what a conversion loses); its LIST at `v2` is printed as a
//!   ratio of `None`'s (target p50 ≤ 2×, issue 18). Every object written through the API
//!   carries `managedFields`, which make `None`'s LIST dearer and flatter the ratio, so `None`
//!   and `CEL` also list 1,000 objects whose `managedFields` were reset (a merge patch of
//!   `managedFields: [{}]`), and the ratio is printed for both kinds of object.
//!   Also printed: versa's own timing of its converter (`versa_conversion_duration_seconds`),
//!   and where a webhook LIST's time goes — before the review reaches the webhook, its upload,
//!   the webhook's work, and the rest — from the instants the webhook records.
//! - **CEL**, on a fresh server: the seed's 27 validation and transition rules
//!   (`versa-cel/benches/support/seed.rs`, shared with `cargo bench -p versa-cel`) on one
//!   definition, and the same schema without a rule on another; 1,000 objects of each, updated
//!   (PUT, each a durable write that runs every rule once) in `VERSA_BENCH_ROUNDS` rounds
//!   alternating between the two, over `VERSA_BENCH_CONNECTIONS` connections. The server's CPU
//!   time per update (every thread but the load client's, from `/proc/self/task/*/schedstat`),
//!   with and without the rules, is the share CEL adds to the full write pipeline — HTTPS,
//!   decoding, admission, storage, the answer — (target ≤ 20 %); the difference divided by the
//!   rule count is the time of one rule evaluation in the server; latency and throughput are
//!   printed beside.
//!
//! The server runs on its own multi-thread runtime (worker stacks sized as the binary sizes
//! them), the load client on another (the conversion webhook on a third); all share the
//! machine's cores, as wrk on the same host would. Arguments pick scenarios (`definitions`,
//! `get`, `create`, `list`, `conversion`, `cel`, `apply`, `admission`; default all). Nothing here asserts on time: missed
//! targets are printed, not failed.
//!
//! - **Admission**, on a fresh server: creates through one validating webhook and through one
//!   ValidatingAdmissionPolicy of three validations, next to creates no configuration matches
//!   (`serve/admission.rs` says how; targets: the webhook adds its own time + ≤ 1 ms, the
//!   policy ≤ 1.2× at p50).
//! - **Million**, only when named (minutes): `VERSA_BENCH_OBJECTS` (1,000,000) objects of one
//!   definition — RSS as they are created, a watch from now, a paginated LIST through every
//!   page, a storage migration of them all (`serve/million.rs` says how; targets: LIST page
//!   p99 < 50 ms, RSS flat in the object count, the watch unaffected, the migration's memory
//!   bounded and its condition moving).
//! - **Profile**, only when named: a fixed number of GETs and LISTs to versa and to the bare
//!   server, for callgrind to count instructions and allocations per request
//!   (`serve/profile.rs` says how; `hack/profile-get.sh` runs it).
//! - **LIST as Table** (in `list`): what `kubectl get` asks for, against the same LIST as JSON
//!   in the same loop (target ≤ 1.2×, issue 41; the LIST's own p99 < 10 ms).
//!
//! Run: `cargo bench -p versa-server --bench serve` (or `hack/bench-serve.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a benchmark: failures should be loud")]
// The seed's rule schema is one `json!` literal, deeper than the macro's default recursion allows.
#![recursion_limit = "512"]

/// The allocator the versa binary uses, so that what is measured here is what runs.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use versa_server::{Auth, ServerConfig, pki};
use versa_storage::Store;
use versa_storage_embedded::EmbeddedStore;

/// The seed's CEL rules and their corpus, shared with `versa-cel`'s benchmark.
#[path = "../../versa-cel/benches/support/seed.rs"]
mod seed;

/// The admission scenario, in a file of its own.
#[path = "serve/admission.rs"]
mod admission;
/// The million-object scenario, in a file of its own.
#[path = "serve/million.rs"]
mod million;

/// The definitions scenario: definitions at scale.
#[path = "serve/definitions.rs"]
mod definitions;
/// The encryption scenario: creates encrypted at rest against the plain store.
#[path = "serve/encryption.rs"]
mod encryption;
/// The profile scenario: a fixed number of GETs and LISTs for callgrind.
#[path = "serve/profile.rs"]
mod profile;
/// The RBAC scenario: GET and LIST decided by RBAC against system:masters.
#[path = "serve/rbac.rs"]
mod rbac;

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
    group_definitions: usize,
    objects: usize,
    /// The profile scenario's GETs and LISTs (`serve/profile.rs`).
    profile_gets: usize,
    profile_lists: usize,
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
                matches!(
                    s.as_str(),
                    "definitions"
                        | "get"
                        | "create"
                        | "list"
                        | "conversion"
                        | "cel"
                        | "apply"
                        | "admission"
                        | "rbac"
                        | "encryption"
                        | "million"
                        | "profile"
                ),
                "unknown scenario {s:?}: pick from definitions, get, create, list, conversion, cel, apply, admission, rbac, encryption, million, profile"
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
            group_definitions: num("VERSA_BENCH_GROUP_DEFINITIONS", 1000.0) as usize,
            objects: num("VERSA_BENCH_OBJECTS", 1_000_000.0) as usize,
            profile_gets: num("VERSA_BENCH_REQUESTS", 1000.0) as usize,
            profile_lists: num("VERSA_BENCH_LIST_REQUESTS", 20.0) as usize,
            scenarios,
        }
    }

    fn wants(&self, scenario: &str) -> bool {
        self.scenarios.is_empty() || self.named(scenario)
    }

    /// Whether `scenario` was asked for by name (the long ones run only then).
    fn named(&self, scenario: &str) -> bool {
        self.scenarios.iter().any(|s| s == scenario)
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
        definitions::definitions(&settings, &server_rt, &client_rt);
    }
    if settings.wants("get") || settings.wants("create") || settings.wants("list") {
        serving(&settings, &server_rt, &client_rt);
    }
    if settings.wants("conversion") {
        conversion(&settings, &server_rt, &client_rt);
    }
    if settings.wants("cel") {
        cel(&settings, &server_rt, &client_rt);
    }
    if settings.wants("apply") {
        apply(&settings, &server_rt, &client_rt);
    }
    if settings.wants("admission") {
        admission::admission(&settings, &server_rt, &client_rt);
    }
    if settings.wants("rbac") {
        rbac::rbac(&settings, &server_rt, &client_rt);
    }
    if settings.wants("encryption") {
        encryption::encryption(&settings, &server_rt, &client_rt);
    }
    if settings.named("million") {
        million::million(&settings, &server_rt, &client_rt);
    }
    if settings.named("profile") {
        profile::profile(&settings, &server_rt, &client_rt);
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
        define_get_target(&mut conn).await;
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
                0.8,
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
            fill(&versa_client, conns, LIST_PATH, LIST_OBJECTS, Arc::new(|i| crontab(&format!("l-{i:04}")))).await;
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
                    .target(target_max(p99, 10.0, "ms")),
            );
            // What `kubectl get` asks for, against the same LIST as JSON in the same loop.
            let (mut json, mut table) = (Vec::new(), Vec::new());
            for _ in 0..timing.rounds {
                json.push(sequential(&mut conn, LIST_PATH, None, LIST_REQUESTS / 5).await);
                table.push(sequential(&mut conn, LIST_PATH, Some(TABLE), LIST_REQUESTS / 5).await);
            }
            let (json, table) = (merged(json), merged(table));
            for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
                let ratio = ms(table.p(p)) / ms(json.p(p));
                rows.push(
                    Row::new(format!("LIST {LIST_OBJECTS} as Table, 1 client, {label}"), ms(table.p(p)), None, "ms")
                        .target(format!(
                            "≤ 1.2× as JSON ({:.2} ms): {ratio:.2}×, {}",
                            ms(json.p(p)),
                            met(ratio <= 1.2)
                        )),
                );
            }

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

    print_rows(&rows, "versa", "bare hyper+rustls", "versa relative to the bare server");
}

/// `rows` as a Markdown table: each measure, the measured side's figure (`ours` names its
/// column), the baseline's, their ratio and — when any row has one — its target; then what the
/// ratio means (`ratio`, "… relative to …").
fn print_rows(rows: &[Row], ours: &str, baseline: &str, ratio: &str) {
    let targets = rows.iter().any(|r| !r.target.is_empty());
    println!();
    if targets {
        println!("| measure | {ours} | {baseline} | ratio | target |");
        println!("|---|---:|---:|---:|---|");
    } else {
        println!("| measure | {ours} | {baseline} | ratio |");
        println!("|---|---:|---:|---:|");
    }
    for r in rows {
        let value = |v: f64| if r.unit == "ms" { format!("{v:.2} ms") } else { format!("{} {}", thousands(v), r.unit) };
        let base = r.bare.map_or("—".to_owned(), value);
        let x = r.ratio().map_or("—".to_owned(), |x| format!("{x:.2}"));
        let target = if targets { format!(" {} |", r.target) } else { String::new() };
        println!("| {} | {} | {base} | {x} |{target}", r.name, value(r.versa));
    }
    println!("({ratio}, 1.0 = as fast)");
}

/// Creates `n` objects, the `i`th `object(i)`, by POSTs to `path` over `conns` connections.
async fn fill(client: &Client, conns: usize, path: &str, n: usize, object: Arc<dyn Fn(usize) -> Bytes + Send + Sync>) {
    let mut tasks = Vec::new();
    for c in 0..conns {
        let (client, path, object) = (client.clone(), path.to_owned(), object.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = client.connect().await;
            for i in (c..n).step_by(conns) {
                let (status, body) = conn.send(Method::POST, &path, Some(object(i))).await;
                assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

// ---- conversion: LIST at a non-storage version ----

/// The conversion scenario's definitions: the strategy, and the group that definition serves
/// (`widgets.<group>`, versions `v1` and `v2`).
const CONVERSIONS: [(&str, &str); 3] =
    [("None", "none.bench.example.com"), ("Webhook", "webhook.bench.example.com"), ("CEL", "cel.bench.example.com")];
/// Where the converted objects live.
const CONVERTED_NAMESPACE: &str = "converted";
/// Where the same objects live without `managedFields` (None and CEL only): every object
/// written through the API carries them, and they weigh on `None`'s LIST much more than on the
/// rules' work, so the ratio is printed for both kinds of object.
const UNTRACKED_NAMESPACE: &str = "converted-untracked";
/// Objects per definition.
const CONVERTED_OBJECTS: usize = 1000;
/// Sequential requests per measure (split into the rounds), after [`CONVERSION_WARMUP`] each.
const CONVERSION_REQUESTS: usize = 50;
const CONVERSION_WARMUP: usize = 3;
/// Matches every converted object: a LIST with it converts each page on every request.
const EVERY_OBJECT: &str = "labelSelector=bench%3Dyes";
/// Where the bench client POSTs reviews to the webhook (versa calls `/convert`).
const DIRECT_PATH: &str = "/direct";

/// What one strategy's definition measures: its probes, in the order [`Converted`] takes them.
struct Setup {
    strategy: &'static str,
    definition: String,
    probes: Vec<Probe>,
    /// Webhook: the last probe is the review POSTed straight to the webhook.
    direct: bool,
}

/// The figures of one strategy: the LIST at each version, with and without the selector.
struct Converted {
    strategy: &'static str,
    /// At v1, at v2: with the selector, then without.
    selected: [Load; 2],
    cached: [Load; 2],
    /// At v1, at v2, with the selector, of the objects without `managedFields` (not Webhook).
    untracked: Option<[Load; 2]>,
    /// The same review POSTed straight to the webhook (Webhook only).
    direct: Option<Load>,
}

fn conversion(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let webhook_rt = Webhook::runtime();
    let webhook = webhook_rt.block_on(Webhook::start());
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    let rounds = settings.timing.rounds as usize;
    println!();
    println!(
        "## conversion: LIST of {CONVERTED_OBJECTS} stored at v1, read at v1 and v2; {CONVERSION_REQUESTS} sequential requests per measure on one connection, in {rounds} alternating rounds"
    );
    let mut results = Vec::new();
    client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        let mut hook = HookConn::connect(&webhook).await;
        create_namespace(&mut conn, UNTRACKED_NAMESPACE).await;
        let mut setups = Vec::new();
        for (strategy, group) in CONVERSIONS {
            let spec = match strategy {
                "None" => json!({"strategy": "None"}),
                "CEL" => {
                    let rules = |from: &str, to: &str| {
                        json!({"from": from, "to": to, "fields": [
                            {"path": "spec.image", "expression": "self.?spec.?image"},
                            {"path": "spec.replicas", "expression": "self.?spec.?replicas"},
                        ]})
                    };
                    json!({"strategy": "CEL", "cel": {"conversions": [rules("v1", "v2"), rules("v2", "v1")]}})
                }
                _ => json!({"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "url": format!("https://{}/convert", webhook.addr),
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(&webhook.ca_pem),
                    },
                }}),
            };
            define(&mut conn, &widget_definition(group, spec), group, "v2", "widgets").await;
            let collection = |version: &str| format!("/apis/{group}/{version}/namespaces/{CONVERTED_NAMESPACE}/widgets");
            let untracked = |version: &str| format!("/apis/{group}/{version}/namespaces/{UNTRACKED_NAMESPACE}/widgets");
            let started = Instant::now();
            let object = move |i: usize| widget(group, &format!("w-{i:04}"));
            fill(&client, settings.connections, &collection("v1"), CONVERTED_OBJECTS, Arc::new(object)).await;
            let filled = started.elapsed();
            let direct = strategy == "Webhook";
            if !direct {
                fill(&client, settings.connections, &untracked("v1"), CONVERTED_OBJECTS, Arc::new(object)).await;
                untrack(&client, settings.connections, &untracked("v1"), CONVERTED_OBJECTS).await;
            }

            let mut paths = vec![
                format!("{}?{EVERY_OBJECT}", collection("v1")),
                format!("{}?{EVERY_OBJECT}", collection("v2")),
                collection("v1"),
                collection("v2"),
            ];
            let mut versions = vec!["v1", "v2", "v1", "v2"];
            if !direct {
                paths.extend([format!("{}?{EVERY_OBJECT}", untracked("v1")), format!("{}?{EVERY_OBJECT}", untracked("v2"))]);
                versions.extend(["v1", "v2"]);
            }
            let mut sizes = Vec::new();
            let mut at_v1 = Vec::new();
            for (i, (path, version)) in paths.iter().zip(versions).enumerate() {
                let (status, body) = conn.send(Method::GET, path, None).await;
                assert_eq!(status, StatusCode::OK, "GET {path}: {}", String::from_utf8_lossy(&body));
                let list: Value = serde_json::from_slice(&body).unwrap();
                let items = list["items"].as_array().unwrap();
                assert_eq!(items.len(), CONVERTED_OBJECTS, "GET {path}");
                assert!(items.iter().all(|o| o["apiVersion"] == format!("{group}/{version}")), "GET {path}");
                let tracked = items.iter().filter(|o| o["metadata"].get("managedFields").is_some()).count();
                assert_eq!(tracked, if i < 4 { CONVERTED_OBJECTS } else { 0 }, "GET {path}: objects with managedFields");
                sizes.push(body.len() / 1024);
                if at_v1.is_empty() {
                    at_v1.clone_from(items);
                }
            }
            let without = if direct { String::new() } else { format!("; without managedFields {} KiB at v2", sizes[5]) };
            println!(
                "({strategy}: created {CONVERTED_OBJECTS} objects in {:.2} s; the LIST answers {} KiB at v1, {} KiB at v2{without})",
                filled.as_secs_f64(),
                sizes[0],
                sizes[1]
            );
            let mut probes: Vec<Probe> = paths.into_iter().map(Probe::Get).collect();
            if direct {
                // What versa sends: the objects in their request form at v1, in one review.
                let review = json!({
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "ConversionReview",
                    "request": {"uid": "bench", "desiredAPIVersion": format!("{group}/v2"), "objects": at_v1},
                });
                let body = json_bytes(&review);
                println!(
                    "(the review of {CONVERTED_OBJECTS} objects is {} KiB; the webhook answers over {:?})",
                    body.len() / 1024,
                    hook.version
                );
                probes.push(Probe::Review(body));
            }

            setups.push(Setup { strategy, definition: format!("widgets.{group}"), probes, direct });
        }

        // Every strategy's probes in the same alternating rounds: a change of load on the
        // shared machine then weighs on all of them alike, and the ratios hold.
        let all: Vec<&Probe> = setups.iter().flat_map(|s| s.probes.iter()).collect();
        for probe in &all {
            probe.run(&mut conn, &mut hook, CONVERSION_WARMUP).await;
        }
        let mut before = Vec::new();
        for setup in &setups {
            before.push(converter_time(&mut conn, &setup.definition).await);
        }
        webhook.calls.lock().unwrap().clear();
        let mut loads = alternate(&mut conn, &mut hook, &all, rounds).await.into_iter();
        let calls = std::mem::take(&mut *webhook.calls.lock().unwrap());
        let mut after = Vec::new();
        for setup in &setups {
            after.push(converter_time(&mut conn, &setup.definition).await);
        }
        for ((setup, (sum_before, count_before)), (sum, count)) in setups.iter().zip(before).zip(after) {
            let (strategy, direct) = (setup.strategy, setup.direct);
            let (sum, count) = (sum - sum_before, count - count_before);
            if count > 0.0 {
                println!(
                    "({strategy}: versa's converter ran {count} times in the measured LISTs, {:.2} ms each on average (versa_conversion_duration_seconds))",
                    sum / count * 1e3
                );
            }
            if direct {
                let (by_versa, by_bench): (Vec<&Call>, Vec<&Call>) = calls.iter().partition(|c| !c.direct);
                let building = |calls: &[&Call]| ms(median(calls.iter().map(|c| c.building())));
                println!(
                    "(Webhook: versa called the webhook {} times; building the answer took p50 {:.2} ms of those calls, {:.2} ms of the bench's direct calls)",
                    by_versa.len(),
                    building(&by_versa),
                    building(&by_bench)
                );
                let Probe::Get(path) = &setup.probes[1] else { unreachable!() };
                timeline(&mut conn, path, &webhook).await;
            }
            let mut next = || loads.next().unwrap();
            results.push(Converted {
                strategy,
                selected: [next(), next()],
                cached: [next(), next()],
                untracked: (!direct).then(|| [next(), next()]),
                direct: direct.then(next),
            });
        }
    });
    versa.stop(server_rt);
    drop(webhook_rt);

    let mut rows: Vec<[String; 6]> = Vec::new();
    for r in &results {
        let s = r.strategy;
        for (p, label) in [(0.5, "p50"), (0.99, "p99")] {
            let [v1, v2] = [ms(r.selected[0].p(p)), ms(r.selected[1].p(p))];
            let (overhead, target) = match &r.direct {
                None => {
                    let rel = (v2 - v1) / v1;
                    let target =
                        if p == 0.5 && s == "None" { format!("≤ 10 %: {}", met(rel <= 0.10)) } else { String::new() };
                    (format!("{:+.1} %", rel * 1e2), target)
                }
                Some(direct) => {
                    let own = ms(direct.p(p));
                    let beyond = v2 - v1 - own;
                    let target = if p == 0.5 { format!("≤ 5 ms: {}", met(beyond <= 5.0)) } else { String::new() };
                    (format!("{beyond:+.2} ms beyond the webhook's {own:.2} ms"), target)
                }
            };
            rows.push([
                format!("{s}, label selector (converts every time), {label}"),
                format!("{v1:.2} ms"),
                format!("{v2:.2} ms"),
                format!("{:+.2} ms", v2 - v1),
                overhead,
                target,
            ]);
        }
        if let Some(untracked) = &r.untracked {
            for (p, label) in [(0.5, "p50"), (0.99, "p99")] {
                let [v1, v2] = [ms(untracked[0].p(p)), ms(untracked[1].p(p))];
                rows.push([
                    format!("{s}, label selector, objects without managedFields, {label}"),
                    format!("{v1:.2} ms"),
                    format!("{v2:.2} ms"),
                    format!("{:+.2} ms", v2 - v1),
                    format!("{:+.1} %", (v2 - v1) / v1 * 1e2),
                    String::new(),
                ]);
            }
        }
        for (p, label) in [(0.5, "p50"), (0.99, "p99")] {
            let [v1, v2] = [ms(r.cached[0].p(p)), ms(r.cached[1].p(p))];
            rows.push([
                format!("{s}, no selector (render cache), {label}"),
                format!("{v1:.2} ms"),
                format!("{v2:.2} ms"),
                format!("{:+.2} ms", v2 - v1),
                format!("{:+.1} %", (v2 - v1) / v1 * 1e2),
                String::new(),
            ]);
        }
        if let Some(direct) = &r.direct {
            for (p, label) in [(0.5, "p50"), (0.99, "p99")] {
                rows.push([
                    format!("the webhook's own time: the same review POSTed to it directly, {label}"),
                    "—".into(),
                    format!("{:.2} ms", ms(direct.p(p))),
                    "—".into(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    println!();
    println!("| LIST of {CONVERTED_OBJECTS} | at v1 (storage) | at v2 | v2 − v1 | overhead | target |");
    println!("|---|---:|---:|---:|---:|---|");
    for [name, v1, v2, diff, overhead, target] in &rows {
        println!("| {name} | {v1} | {v2} | {diff} | {overhead} | {target} |");
    }
    println!(
        "(overhead: None relative to the LIST at v1; Webhook beyond the webhook's own time at the same percentile)"
    );
    let at_v2 = |strategy: &str, untracked: bool| {
        let r = results.iter().find(|r| r.strategy == strategy)?;
        if untracked { r.untracked.as_ref().map(|u| &u[1]) } else { Some(&r.selected[1]) }
    };
    for (untracked, objects) in [(false, "objects with managedFields"), (true, "objects without managedFields")] {
        let (Some(none), Some(cel)) = (at_v2("None", untracked), at_v2("CEL", untracked)) else { continue };
        for (p, label) in [(0.5, "p50"), (0.99, "p99")] {
            let ratio = ms(cel.p(p)) / ms(none.p(p));
            let target = if p == 0.5 { format!(" (target ≤ 2×: {})", met(ratio <= 2.0)) } else { String::new() };
            println!(
                "CEL vs None, LIST of {CONVERTED_OBJECTS} at v2 (converts every time), {objects}, {label}: {ratio:.2}×{target}"
            );
        }
    }
}

/// Creates namespace `name` (standalone versa refuses objects in a missing namespace).
async fn create_namespace(conn: &mut Conn, name: &str) {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let (status, body) = conn.send(Method::POST, "/api/v1/namespaces", Some(json_bytes(&namespace))).await;
    assert!(
        status == StatusCode::CREATED || status == StatusCode::CONFLICT,
        "creating namespace {name}: {}",
        String::from_utf8_lossy(&body)
    );
}

/// Strips the `managedFields` of the `n` objects [`fill`] created at `collection` (a merge
/// patch of `managedFields: [{}]`, which resets them as in kube — `[]` does not, on purpose;
/// an untracked object stays so).
async fn untrack(client: &Client, conns: usize, collection: &str, n: usize) {
    let mut tasks = Vec::new();
    for c in 0..conns {
        let (client, collection) = (client.clone(), collection.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut conn = client.connect().await;
            for i in (c..n).step_by(conns) {
                let path = format!("{collection}/w-{i:04}");
                let body = Bytes::from_static(br#"{"metadata":{"managedFields":[{}]}}"#);
                let (status, body) = conn.patch(&path, "application/merge-patch+json", body).await;
                assert_eq!(status, StatusCode::OK, "PATCH {path}: {}", String::from_utf8_lossy(&body));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// One thing a conversion round measures.
enum Probe {
    /// A GET of this path from versa.
    Get(String),
    /// This review POSTed straight to the webhook.
    Review(Bytes),
}

impl Probe {
    /// `n` requests one after the other.
    async fn run(&self, conn: &mut Conn, hook: &mut HookConn, n: usize) -> Load {
        match self {
            Probe::Get(path) => sequential(conn, path, None, n).await,
            Probe::Review(body) => {
                let mut latencies = Vec::new();
                let started = Instant::now();
                for _ in 0..n {
                    let t = Instant::now();
                    hook.review(body.clone()).await;
                    latencies.push(t.elapsed());
                }
                latencies.sort();
                Load { requests: n, run: started.elapsed(), latencies }
            }
        }
    }
}

/// [`CONVERSION_REQUESTS`] of each probe, in `rounds` rounds that run every probe in turn; the
/// figures of each, merged.
async fn alternate(conn: &mut Conn, hook: &mut HookConn, probes: &[&Probe], rounds: usize) -> Vec<Load> {
    let per_round = CONVERSION_REQUESTS.div_ceil(rounds);
    let mut results: Vec<Vec<Load>> = probes.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for (probe, loads) in probes.iter().zip(&mut results) {
            loads.push(probe.run(conn, hook, per_round).await);
        }
    }
    results
        .into_iter()
        .map(|loads| {
            let mut latencies: Vec<Duration> = loads.iter().flat_map(|l| l.latencies.iter().copied()).collect();
            latencies.sort();
            Load { requests: latencies.len(), run: loads.iter().map(|l| l.run).sum(), latencies }
        })
        .collect()
}

/// Where the time of a LIST that calls the webhook goes: [`CONVERSION_REQUESTS`] sequential
/// LISTs of `path`, each cut at the instants the webhook saw (one clock, one process).
async fn timeline(conn: &mut Conn, path: &str, webhook: &Webhook) {
    let mut spans: [Vec<Duration>; 4] = Default::default();
    for _ in 0..CONVERSION_REQUESTS {
        webhook.calls.lock().unwrap().clear();
        let sent = Instant::now();
        let (status, body) = conn.send(Method::GET, path, None).await;
        let done = Instant::now();
        assert_eq!(status, StatusCode::OK, "GET {path}: {}", String::from_utf8_lossy(&body));
        let calls = std::mem::take(&mut *webhook.calls.lock().unwrap());
        let [call] = calls.as_slice() else { panic!("GET {path} called the webhook {} times", calls.len()) };
        let cuts = [sent, call.arrived, call.received, call.answered, done];
        for (span, pair) in spans.iter_mut().zip(cuts.windows(2)) {
            span.push(pair[1] - pair[0]);
        }
    }
    let [before, upload, building, after] = spans.map(|mut s| {
        s.sort();
        format!("{:.2} ms (p99 {:.2})", ms(percentile(&s, 0.5)), ms(percentile(&s, 0.99)))
    });
    println!(
        "(Webhook, where a LIST at v2 goes: {before} until the review reached the webhook, {upload} to upload it, {building} for the webhook to build the answer, {after} from there to the end of the LIST)"
    );
}

/// Sum (seconds) and count of `versa_conversion_duration_seconds` for one definition, every
/// outcome.
async fn converter_time(conn: &mut Conn, definition: &str) -> (f64, f64) {
    let (status, body) = conn.send(Method::GET, "/metrics", None).await;
    assert_eq!(status, StatusCode::OK, "GET /metrics: {}", String::from_utf8_lossy(&body));
    let needle = format!("definition=\"{definition}\"");
    let (mut sum, mut count) = (0.0, 0.0);
    for line in String::from_utf8_lossy(&body).lines().filter(|l| l.contains(&needle)) {
        let Some((name, value)) = line.rsplit_once(' ') else { continue };
        let value: f64 = value.parse().unwrap_or(0.0);
        if name.starts_with("versa_conversion_duration_seconds_sum{") {
            sum += value;
        } else if name.starts_with("versa_conversion_duration_seconds_count{") {
            count += value;
        }
    }
    (sum, count)
}

/// A definition of `Widget` in `group`: versions v1 (storage) and v2 with the same schema,
/// converted as `conversion` says.
fn widget_definition(group: &str, conversion: Value) -> Value {
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                }},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            }}},
        })
    };
    let mut def = namespaced_definition(group, "widget", "Widget", json!([version("v1", true), version("v2", false)]));
    def["spec"]["conversion"] = conversion;
    def
}

/// A v1 Widget of `group` named `name` (the size of a CronTab), labelled for [`EVERY_OBJECT`].
fn widget(group: &str, name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"{group}/v1","kind":"Widget","metadata":{{"name":"{name}","labels":{{"app":"bench","bench":"yes"}}}},"spec":{{"cronSpec":"*/5 * * * *","image":"registry.example.com/bench/cron:1.2.3","replicas":3}}}}"#
    ))
}

// ---- CEL: updates with and without the seed's rules ----

/// The CEL scenario's definitions (`crontabs.<group>`): the seed's rule set, and the same
/// schema without a single rule.
const CEL_GROUPS: [(&str, bool); 2] = [("rules.cel.example.com", true), ("plain.cel.example.com", false)];
const CEL_NAMESPACE: &str = "cel";
/// Objects per definition; each round updates every one of them once.
const CEL_OBJECTS: usize = 1000;

/// What one definition's updates cost: every update's latency, the wall time, and the CPU time
/// the server's threads spent on them.
#[derive(Default)]
struct Updates {
    latencies: Vec<Duration>,
    wall: Duration,
    server_cpu: Duration,
}

fn cel(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    let (conns, rounds) = (settings.connections, settings.timing.rounds as usize);
    println!();
    println!(
        "## CEL: updates (PUT) of {CEL_OBJECTS} objects with the seed's rules, and of the same objects under the same schema without rules; {conns} connections, {rounds} alternating rounds of one update per object"
    );
    let figures = client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        // Per definition, each object's resourceVersion (the next update's precondition).
        let mut versions = Vec::new();
        for (group, rules) in CEL_GROUPS {
            define(&mut conn, &cel_definition(group, rules), group, "v1", "crontabs").await;
            let mut rvs = Vec::with_capacity(CEL_OBJECTS);
            for i in 0..CEL_OBJECTS {
                let (status, body) =
                    conn.send(Method::POST, &cel_collection(group), Some(cel_object(group, i, 0, None))).await;
                assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
                rvs.push(resource_version(&body));
            }
            // The rules run: a decreasing counter is refused with them, accepted without.
            let mut back = serde_json::from_slice::<Value>(&cel_object(group, 0, 0, Some(&rvs[0]))).unwrap();
            back["spec"]["counter"] = json!(9);
            let (status, body) =
                conn.send(Method::PUT, &format!("{}/cron-0", cel_collection(group)), Some(json_bytes(&back))).await;
            assert_eq!(
                status == StatusCode::UNPROCESSABLE_ENTITY,
                rules,
                "{status}: {}",
                String::from_utf8_lossy(&body)
            );
            if status == StatusCode::OK {
                rvs[0] = resource_version(&body);
            }
            versions.push(rvs);
        }
        let mut figures: [Updates; 2] = Default::default();
        // Generation 0 was the create; the warm-up round is generation 1.
        for generation in 1..=rounds as i64 + 1 {
            for (k, (group, _)) in CEL_GROUPS.into_iter().enumerate() {
                let round = update_all(&client, conns, group, generation, &mut versions[k]).await;
                if generation > 1 {
                    figures[k].latencies.extend(round.latencies);
                    figures[k].wall += round.wall;
                    figures[k].server_cpu += round.server_cpu;
                }
            }
        }
        figures
    });
    versa.stop(server_rt);

    let [with, without] = figures.map(|mut f| {
        f.latencies.sort();
        f
    });
    let updates = (CEL_OBJECTS * rounds) as f64;
    let cpu = |f: &Updates| f.server_cpu.as_secs_f64() * 1e6 / updates;
    let rate = |f: &Updates| updates / f.wall.as_secs_f64();
    let added = 100.0 * (cpu(&with) / cpu(&without) - 1.0);
    println!();
    println!("| measure | with the rules | without | CEL adds | target |");
    println!("|---|---:|---:|---:|---|");
    println!(
        "| server CPU per update | {:.1} µs | {:.1} µs | {added:.1} % | {} |",
        cpu(&with),
        cpu(&without),
        target_max(added, 20.0, "%")
    );
    let rules = seed::rule_count();
    println!(
        "| CEL per rule evaluation (CPU difference ÷ {rules} rules) | {:.0} ns | | | |",
        (cpu(&with) - cpu(&without)) * 1e3 / rules as f64
    );
    for p in [0.5, 0.99] {
        let (a, b) = (ms(with.p(p)), ms(without.p(p)));
        println!("| update p{:.0} | {a:.2} ms | {b:.2} ms | {:.1} % | |", p * 100.0, 100.0 * (a / b - 1.0));
    }
    let (a, b) = (rate(&with), rate(&without));
    println!("| updates/s | {} | {} | {:.1} % fewer | |", thousands(a), thousands(b), 100.0 * (1.0 - a / b));
    println!(
        "(server CPU: the CPU time of every thread but the load client's, from /proc/self/task/*/schedstat; each update runs all {rules} rules once)"
    );
}

impl Updates {
    fn p(&self, p: f64) -> Duration {
        percentile(&self.latencies, p)
    }
}

/// One PUT of every object of `group` at `generation`, over `conns` connections (each its share
/// of the objects, one after the other); `rvs` are updated to the new resourceVersions.
async fn update_all(
    client: &Client,
    conns: usize,
    group: &'static str,
    generation: i64,
    rvs: &mut [String],
) -> Updates {
    let mut connected = Vec::new();
    for _ in 0..conns {
        connected.push(client.connect().await);
    }
    let cpu_before = server_cpu();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, mut conn) in connected.into_iter().enumerate() {
        let mine: Vec<(usize, String)> = (c..rvs.len()).step_by(conns).map(|i| (i, rvs[i].clone())).collect();
        tasks.push(tokio::spawn(async move {
            let mut done = Vec::with_capacity(mine.len());
            for (i, rv) in mine {
                let path = format!("{}/cron-{i}", cel_collection(group));
                let t = Instant::now();
                let (status, body) =
                    conn.send(Method::PUT, &path, Some(cel_object(group, i, generation, Some(&rv)))).await;
                let took = t.elapsed();
                assert_eq!(status, StatusCode::OK, "PUT {path}: {}", String::from_utf8_lossy(&body));
                done.push((i, resource_version(&body), took));
            }
            done
        }));
    }
    let mut latencies = Vec::with_capacity(rvs.len());
    for t in tasks {
        for (i, rv, took) in t.await.unwrap() {
            rvs[i] = rv;
            latencies.push(took);
        }
    }
    let wall = started.elapsed();
    Updates { latencies, wall, server_cpu: server_cpu() - cpu_before }
}

/// The CPU time so far of every thread of the process except the load client's: its runtime's
/// workers ("client") and the main thread, which drives it.
fn server_cpu() -> Duration {
    let pid = std::process::id().to_string();
    let mut total = Duration::ZERO;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if task.file_name() == pid.as_str() || comm.starts_with("client") {
            continue;
        }
        let schedstat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        let ns: u64 = schedstat.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
        total += Duration::from_nanos(ns);
    }
    total
}

fn cel_collection(group: &str) -> String {
    format!("/apis/{group}/v1/namespaces/{CEL_NAMESPACE}/crontabs")
}

/// The seed's schema as a definition in `group`, with its rules or without any. Its
/// messageExpression becomes a plain message: definition validation refuses it (its cost
/// cannot be bounded), and it is only evaluated when its rule fails, which no update here does.
fn cel_definition(group: &str, rules: bool) -> Value {
    let mut schema = seed::schema();
    servable(&mut schema, rules);
    let versions = json!([{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]);
    namespaced_definition(group, "crontab", "CronTab", versions)
}

/// A namespaced definition of `kind` in `group` (plural: `singular` + "s") with `versions`.
fn namespaced_definition(group: &str, singular: &str, kind: &str, versions: Value) -> Value {
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": format!("{singular}s.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": format!("{singular}s"), "singular": singular, "kind": kind},
            "versions": versions,
        },
    })
}

/// Drops every rule (`rules` false) or every messageExpression (true) from `node` and below.
fn servable(node: &mut Value, rules: bool) {
    let Some(object) = node.as_object_mut() else { return };
    if !rules {
        object.remove("x-kubernetes-validations");
    }
    for rule in object.get_mut("x-kubernetes-validations").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(rule) = rule.as_object_mut()
            && rule.remove("messageExpression").is_some()
        {
            rule.insert("message".into(), json!("x exceeded max limit"));
        }
    }
    for (_, child) in object.get_mut("properties").and_then(Value::as_object_mut).into_iter().flatten() {
        servable(child, rules);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = object.get_mut(key) {
            servable(child, rules);
        }
    }
}

/// Object `i` of the seed's corpus in `group` at `generation`, with `rv` as its
/// resourceVersion (for updates).
fn cel_object(group: &str, i: usize, generation: i64, rv: Option<&str>) -> Bytes {
    let mut object = seed::object(i, generation);
    object["apiVersion"] = json!(format!("{group}/v1"));
    object["metadata"]["namespace"] = json!(CEL_NAMESPACE);
    if let Some(rv) = rv {
        object["metadata"]["resourceVersion"] = json!(rv);
    }
    json_bytes(&object)
}

// ---- server-side apply next to a merge patch ----

const APPLY_GROUP: &str = "apply.bench.example.com";
/// Objects per kind of write; each round writes every one of them once.
const APPLY_OBJECTS: usize = 1000;
/// Fields of each object's `spec`.
const APPLY_FIELDS: usize = 100;
const MERGE_PATCH: &str = "application/merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// Issue 20's measure: an apply of a 100-field object through the server against a merge patch
/// of the same change (one field), each on objects of its own that were written the same way
/// before (so both carry `managedFields`), in alternating rounds; the server's CPU per write.
fn apply(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    let (conns, rounds) = (settings.connections, settings.timing.rounds as usize);
    println!();
    println!(
        "## Server-side apply: an apply of the whole {APPLY_FIELDS}-field configuration (one field changed) to each of {APPLY_OBJECTS} objects, against a merge patch of the same one-field change to {APPLY_OBJECTS} others; {conns} connections, {rounds} alternating rounds"
    );
    let figures = client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        define(&mut conn, &apply_definition(), APPLY_GROUP, "v1", "widgets").await;
        for i in 0..APPLY_OBJECTS {
            let (status, body) = conn.send(Method::POST, &apply_collection(), Some(apply_object("merged", i, 0))).await;
            assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
            let path = format!("{}/applied-{i}?fieldManager=bench", apply_collection());
            let (status, body) = conn.patch(&path, APPLY_PATCH, apply_object("applied", i, 0)).await;
            assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
        }
        let mut figures: [Updates; 2] = Default::default();
        // Generation 0 was the create; the warm-up round is generation 1.
        for generation in 1..=rounds as i64 + 1 {
            for (k, applying) in [true, false].into_iter().enumerate() {
                let round = patch_all(&client, conns, applying, generation).await;
                if generation > 1 {
                    figures[k].latencies.extend(round.latencies);
                    figures[k].wall += round.wall;
                    figures[k].server_cpu += round.server_cpu;
                }
            }
        }
        figures
    });
    versa.stop(server_rt);

    let [applied, merged] = figures.map(|mut f| {
        f.latencies.sort();
        f
    });
    let writes = (APPLY_OBJECTS * rounds) as f64;
    let cpu = |f: &Updates| f.server_cpu.as_secs_f64() * 1e6 / writes;
    let ratio = cpu(&applied) / cpu(&merged);
    println!();
    println!("| measure | apply | merge patch | apply ÷ merge patch | target |");
    println!("|---|---:|---:|---:|---|");
    println!(
        "| server CPU per write | {:.1} µs | {:.1} µs | {ratio:.2} | {} |",
        cpu(&applied),
        cpu(&merged),
        target_max(ratio, 2.0, "×")
    );
    for p in [0.5, 0.99] {
        let (a, b) = (ms(applied.p(p)), ms(merged.p(p)));
        println!("| write p{:.0} | {a:.2} ms | {b:.2} ms | {:.2} | |", p * 100.0, a / b);
    }
    println!("(server CPU: every thread but the load client's, from /proc/self/task/*/schedstat)");
}

/// One write to every object of one kind at `generation`: an apply of the whole configuration
/// (`applying`) or a merge patch of the one field that changes.
async fn patch_all(client: &Client, conns: usize, applying: bool, generation: i64) -> Updates {
    let mut connected = Vec::new();
    for _ in 0..conns {
        connected.push(client.connect().await);
    }
    let cpu_before = server_cpu();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, mut conn) in connected.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut took = Vec::new();
            for i in (c..APPLY_OBJECTS).step_by(conns) {
                let (path, content_type, body) = if applying {
                    let path = format!("{}/applied-{i}?fieldManager=bench", apply_collection());
                    (path, APPLY_PATCH, apply_object("applied", i, generation))
                } else {
                    let path = format!("{}/merged-{i}", apply_collection());
                    (path, MERGE_PATCH, json_bytes(&json!({"spec": {"f0": format!("generation {generation}")}})))
                };
                let t = Instant::now();
                let (status, body) = conn.patch(&path, content_type, body).await;
                took.push(t.elapsed());
                assert_eq!(status, StatusCode::OK, "PATCH {path}: {}", String::from_utf8_lossy(&body));
            }
            took
        }));
    }
    let mut latencies = Vec::with_capacity(APPLY_OBJECTS);
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    Updates { latencies, wall: started.elapsed(), server_cpu: server_cpu() - cpu_before }
}

fn apply_collection() -> String {
    format!("/apis/{APPLY_GROUP}/v1/namespaces/{CEL_NAMESPACE}/widgets")
}

/// A definition whose `spec` has [`APPLY_FIELDS`] fields: strings, integers and booleans.
fn apply_definition() -> Value {
    let properties: serde_json::Map<String, Value> = (0..APPLY_FIELDS)
        .map(|f| {
            let ty = ["string", "integer", "boolean"][f % 3];
            (format!("f{f}"), json!({"type": if f == 0 { "string" } else { ty }}))
        })
        .collect();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}});
    let versions = json!([{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]);
    namespaced_definition(APPLY_GROUP, "widget", "Widget", versions)
}

/// Object `<prefix>-<i>` with every field set; `f0` says the generation.
fn apply_object(prefix: &str, i: usize, generation: i64) -> Bytes {
    let spec: serde_json::Map<String, Value> = (0..APPLY_FIELDS)
        .map(|f| {
            let value = match f % 3 {
                _ if f == 0 => json!(format!("generation {generation}")),
                0 => json!(format!("value {f} of object {i}")),
                1 => json!(f * 1000 + i),
                _ => json!(f % 2 == 0),
            };
            (format!("f{f}"), value)
        })
        .collect();
    json_bytes(&json!({
        "apiVersion": format!("{APPLY_GROUP}/v1"),
        "kind": "Widget",
        "metadata": {"name": format!("{prefix}-{i}"), "namespace": CEL_NAMESPACE},
        "spec": spec,
    }))
}

fn resource_version(body: &[u8]) -> String {
    let object: Value = serde_json::from_slice(body).unwrap();
    object["metadata"]["resourceVersion"].as_str().unwrap().to_owned()
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
        Self::start_with(rt, Default::default())
    }

    /// [`Versa::start`] with migrations paced as `migration` says.
    fn start_with(rt: &Runtime, migration: versa_server::state::MigrationOptions) -> Versa {
        Self::start_authorized(rt, migration, false)
    }

    /// [`Versa::start`] deciding by RBAC, as `versa serve` standalone does.
    fn start_rbac(rt: &Runtime) -> Versa {
        Self::start_authorized(rt, Default::default(), true)
    }

    fn start_authorized(rt: &Runtime, migration: versa_server::state::MigrationOptions, rbac: bool) -> Versa {
        Self::start_on(rt, migration, rbac, |store| store)
    }

    /// [`Versa::start`] on the embedded store as `wrap` wraps it (e.g. encrypted at rest).
    fn start_on(
        rt: &Runtime,
        migration: versa_server::state::MigrationOptions,
        rbac: bool,
        wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>,
    ) -> Versa {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = wrap(Arc::new(EmbeddedStore::open(dir.path(), Default::default()).unwrap()));
        let mut auth = Auth::standalone();
        if rbac {
            let keys = versa_storage::Keys::new("/registry");
            let _entered = rt.enter();
            auth.authorizer = Arc::new(versa_server::rbac::authorizer::RbacAuthorizer::start(store.clone(), keys));
        }
        let config = ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: dir.path().to_path_buf(),
            store,
            key_prefix: "/registry".into(),
            auth,
            cluster: None,
            conversion: Default::default(),
            migration,
            limits: Default::default(),
            audit: None,
            leader_election: None,
            extra_metrics: Vec::new(),
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

/// The conversion scenario's webhook: HTTPS with a serving certificate for `127.0.0.1` from its
/// own CA, HTTP/2 and HTTP/1.1 by ALPN, answering any `ConversionReview` v1 with the objects at
/// the desired version. Runs on the runtime that starts it.
struct Webhook {
    addr: SocketAddr,
    /// The CA, PEM (the definition's `caBundle`).
    ca_pem: String,
    /// Every call answered.
    calls: Arc<Mutex<Vec<Call>>>,
}

/// One call to the webhook, as the webhook saw it.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// From the bench ([`DIRECT_PATH`]), not from versa.
    direct: bool,
    /// The request's head was read.
    arrived: Instant,
    /// Its body was read.
    received: Instant,
    /// The answer was built (parsed, converted, serialised), about to be sent.
    answered: Instant,
}

impl Call {
    fn building(&self) -> Duration {
        self.answered - self.received
    }
}

impl Webhook {
    /// The runtime a webhook runs on: it stands for another process, so it has threads of its
    /// own.
    fn runtime() -> Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("webhook")
            .build()
            .unwrap()
    }

    async fn start() -> Webhook {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "bench webhook CA");
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let serving = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![serving.der().clone()], key)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let tls = TlsAcceptor::from(Arc::new(config));

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let log = calls.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let _ = tcp.set_nodelay(true);
                let (tls, log) = (tls.clone(), log.clone());
                tokio::spawn(async move {
                    let Ok(stream) = tls.accept(tcp).await else { return };
                    let service = service_fn(move |req: Request<Incoming>| {
                        let log = log.clone();
                        async move {
                            let (direct, arrived) = (req.uri().path() == DIRECT_PATH, Instant::now());
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let received = Instant::now();
                            let answer = if is_admission_review(&body) {
                                admission::admit_review(&body)
                            } else {
                                convert_review(&body)
                            };
                            log.lock().unwrap().push(Call { direct, arrived, received, answered: Instant::now() });
                            let mut response = Response::new(Full::new(answer));
                            response
                                .headers_mut()
                                .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
                            Ok::<_, Infallible>(response)
                        }
                    });
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        Webhook { addr, ca_pem, calls }
    }
}

/// Whether a review the webhook received is an `AdmissionReview` (the admission scenario's)
/// rather than a `ConversionReview`.
fn is_admission_review(body: &[u8]) -> bool {
    let needle = br#""kind":"AdmissionReview""#;
    body.windows(needle.len()).any(|w| w == needle)
}

/// The trivial conversion: the review's objects, each with `apiVersion` set to the desired one.
fn convert_review(body: &[u8]) -> Bytes {
    let mut review: Value = serde_json::from_slice(body).unwrap();
    let request = &mut review["request"];
    let desired = request["desiredAPIVersion"].take();
    let mut objects = request["objects"].take();
    for obj in objects.as_array_mut().into_iter().flatten() {
        obj["apiVersion"] = desired.clone();
    }
    let answer = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": request["uid"].take(), "result": {"status": "Success"}, "convertedObjects": objects},
    });
    json_bytes(&answer)
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
        let chain: Vec<_> =
            CertificateDer::pem_file_iter(data_dir.join(pki::ADMIN_CERT)).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(data_dir.join(pki::ADMIN_KEY)).unwrap();
        Self::of(data_dir, addr, chain, key)
    }

    /// A client with the certificate and key of a kubeconfig `versa kubeconfig` issues.
    fn with_identity(data_dir: &Path, addr: SocketAddr, kubeconfig: &str) -> Client {
        let doc: Value = serde_saphyr::from_str(kubeconfig).unwrap();
        let user = &doc["users"][0]["user"];
        let decode = |k: &str| base64::engine::general_purpose::STANDARD.decode(user[k].as_str().unwrap()).unwrap();
        let chain = CertificateDer::pem_slice_iter(&decode("client-certificate-data")).map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_slice(&decode("client-key-data")).unwrap();
        Self::of(data_dir, addr, chain, key)
    }

    fn of(
        data_dir: &Path,
        addr: SocketAddr,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Client {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_file_iter(data_dir.join(pki::CA_CERT)).unwrap() {
            roots.add(ca.unwrap()).unwrap();
        }
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

    /// A PATCH with `content_type`.
    async fn patch(&mut self, path: &str, content_type: &'static str, body: Bytes) -> (StatusCode, Bytes) {
        self.sender.ready().await.unwrap();
        let request = Request::builder()
            .method(Method::PATCH)
            .uri(path)
            .header(header::HOST, &self.host)
            .header(header::CONTENT_TYPE, content_type)
            .body(Full::new(body))
            .unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        (parts.status, body.collect().await.unwrap().to_bytes())
    }

    /// A GET whose answer streams (a watch): its body, read frame by frame.
    async fn stream(&mut self, path: &str) -> Incoming {
        self.sender.ready().await.unwrap();
        let request =
            Request::builder().uri(path).header(header::HOST, &self.host).body(Full::new(Bytes::new())).unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.into_body()
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

/// A connection from the bench straight to the conversion webhook, trusting its CA and
/// offering HTTP/2 and HTTP/1.1, as versa's webhook client does.
struct HookConn {
    sender: HookSender,
    uri: http::Uri,
    /// What ALPN settled on.
    version: http::Version,
}

enum HookSender {
    H1(SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl HookConn {
    async fn connect(webhook: &Webhook) -> HookConn {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(webhook.ca_pem.as_bytes()) {
            roots.add(ca.unwrap()).unwrap();
        }
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let tcp = TcpStream::connect(webhook.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = ServerName::IpAddress(webhook.addr.ip().into());
        let tls = TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap();
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        let io = TokioIo::new(tls);
        let (sender, version) = if h2 {
            let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await.unwrap();
            tokio::spawn(conn);
            (HookSender::H2(sender), http::Version::HTTP_2)
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            (HookSender::H1(sender), http::Version::HTTP_11)
        };
        let uri = format!("https://{}{DIRECT_PATH}", webhook.addr).parse().unwrap();
        HookConn { sender, uri, version }
    }

    /// POSTs a review and reads the whole answer (which is not parsed: that is versa's part).
    async fn review(&mut self, body: Bytes) {
        let request = Request::post(self.uri.clone())
            .version(self.version)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .unwrap();
        let response = match &mut self.sender {
            HookSender::H1(sender) => {
                sender.ready().await.unwrap();
                sender.send_request(request).await.unwrap()
            }
            HookSender::H2(sender) => {
                sender.ready().await.unwrap();
                sender.send_request(request).await.unwrap()
            }
        };
        assert_eq!(response.status(), StatusCode::OK);
        let _ = response.into_body().collect().await.unwrap();
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

/// Loads of the same requests in several rounds, as one.
fn merged(loads: Vec<Load>) -> Load {
    let mut all = Load { requests: 0, run: Duration::ZERO, latencies: Vec::new() };
    for l in loads {
        all.requests += l.requests;
        all.run += l.run;
        all.latencies.extend(l.latencies);
    }
    all.latencies.sort();
    all
}

/// Waits for the server, defines the CronTab kind and creates the object GETs read
/// (`GET_PATH`).
async fn define_get_target(conn: &mut Conn) {
    wait_ready(conn).await;
    define(conn, &crontab_definition(), GROUP, "v1", "crontabs").await;
    let (status, body) = conn
        .send(Method::POST, "/apis/stable.example.com/v1/namespaces/default/crontabs", Some(crontab("target")))
        .await;
    assert_eq!(status, StatusCode::CREATED, "creating the GET target: {}", String::from_utf8_lossy(&body));
}

async fn wait_ready(conn: &mut Conn) {
    while conn.send(Method::GET, "/readyz", None).await.0 != StatusCode::OK {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The namespaces the scenarios write in, created with their definition: standalone versa
/// refuses objects in a namespace that does not exist, as kube does.
const BENCH_NAMESPACES: [&str; 4] = ["created", "listed", CONVERTED_NAMESPACE, CEL_NAMESPACE];

/// Creates a definition (and the scenarios' namespaces) and waits until it is served.
async fn define(conn: &mut Conn, def: &Value, group: &str, version: &str, plural: &str) {
    for ns in BENCH_NAMESPACES {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let (status, body) = conn.send(Method::POST, "/api/v1/namespaces", Some(json_bytes(&namespace))).await;
        assert!(
            status == StatusCode::CREATED || status == StatusCode::CONFLICT,
            "creating namespace {ns}: {}",
            String::from_utf8_lossy(&body)
        );
    }
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

fn median(durations: impl IntoIterator<Item = Duration>) -> Duration {
    let mut sorted: Vec<Duration> = durations.into_iter().collect();
    sorted.sort();
    percentile(&sorted, 0.5)
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
