//! Memory benchmark of real-world definitions (issue 19), run by `hack/bench-memory.sh`: the
//! published CRDs of the corpus (`hack/crd-corpus.sh`, listed in `tests/crd-corpus/README.md`)
//! replicated to N definitions (default 1,000, `VERSA_BENCH_DEFINITIONS`), each copy in a group
//! of its own (`g0042.<group>`), created through the `apiextensions.k8s.io/v1` face of a real
//! `versa serve` (embedded storage, standalone).
//!
//! The process's `VmRSS` is read from `/proc` twice, after the same requests each time, so that
//! what serving them leaves behind is in both: discovery (`/api`, `/apis`, and `/apis` as
//! aggregated discovery), `/openapi/v2` and every `/openapi/v3` group-version path. First with no
//! definitions (the baseline), then once all N are Established. Printed: the growth per
//! definition and its ratio to the definitions' average JSON size (compact JSON, as created;
//! target ≤ 0.5×), and the size of the store's data file (`store.redb`). Then once more with
//! every definition in use: a dry-run create in each compiles its storage version's schema
//! (versa compiles a definition's schemas on first use), with the time those first requests
//! took. Last, `/openapi/v2` as kubectl asks for it (gzip, JSON and protobuf), timed, and the RSS
//! after those requests (the protobuf form is then kept), and again 12 s later.
//!
//! `VERSA_BENCH_WRAP` runs versa under a profiler (`heaptrack -o FILE`, with `VERSA_BENCH_BIN` a
//! build with the `system-allocator` feature, since heaptrack hooks malloc): the RSS is then the
//! profiled process's and means little, the profile is the point. Not a test: numbers vary with the
//! machine.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use client::Client;
use serde_json::Value;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// Concurrent creates (each definition is compiled on arrival; more would only queue).
const WRITERS: usize = 4;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("VERSA_CRD_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/versa-crds"),
    }
    .join("crds")
}

/// Every CRD of the corpus, sorted by file path (so that the replication is the same each run).
fn corpus(dir: &Path) -> Vec<(String, Value)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
            if file.path().extension().is_some_and(|e| e == "yaml") {
                files.push(file.path());
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.strip_prefix(dir).unwrap().display().to_string(), crd)
        })
        .collect()
}

/// Copy `i` of a CRD: its group prefixed with `g{i:04}.`, its name following.
fn replica(crd: &Value, i: usize) -> Value {
    let mut crd = crd.clone();
    let group = format!("g{i:04}.{}", crd["spec"]["group"].as_str().unwrap());
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap().to_owned();
    crd["spec"]["group"] = Value::String(group.clone());
    let annotations = crd["metadata"]["annotations"].take();
    crd["metadata"] = serde_json::json!({"name": format!("{plural}.{group}")});
    if !annotations.is_null() {
        crd["metadata"]["annotations"] = annotations;
    }
    crd.as_object_mut().unwrap().remove("status");
    crd
}

struct Server {
    child: Child,
    data_dir: PathBuf,
    address: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

/// `versa serve` built next to this benchmark (or `VERSA_BENCH_BIN`), optionally under
/// `VERSA_BENCH_WRAP`.
fn start(data_dir: &Path) -> Server {
    let versa = std::env::var_os("VERSA_BENCH_BIN").map_or_else(versa_e2e::versa_bin, PathBuf::from);
    let wrap = std::env::var("VERSA_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut c = Command::new(program);
            c.args(words).arg(&versa);
            c
        }
        None => Command::new(&versa),
    };
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let address = loop {
        let line = lines.next().expect("versa exited before serving").unwrap();
        if let Some(url) = line.strip_prefix("versa is serving on https://") {
            break url.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server { child, data_dir: data_dir.to_path_buf(), address }
}

/// `VmRSS` of the process (or of the wrapper's child, the versa process, when wrapped), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let versa = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()
        .and_then(|c| c.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| pid.to_string());
    let status = std::fs::read_to_string(format!("/proc/{versa}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn ready(c: &Client) {
    for _ in 0..1200 {
        if c.get("/readyz").await.status == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("versa not ready");
}

/// What [`serve_documents`] served: bytes, OpenAPI v3 paths, and the time `/openapi/v2` and the
/// `/openapi/v3` index each took.
struct Served {
    bytes: usize,
    paths: usize,
    v2: Duration,
    v3_index: Duration,
}

/// Discovery and every OpenAPI document, as kubectl and controllers ask for them.
async fn serve_documents(c: &Client) -> Served {
    let mut bytes = 0;
    for (path, accept) in [("/api", "application/json"), ("/apis", "application/json"), ("/apis", AGGREGATED)] {
        let r = c.get_with(path, &[("accept", accept)]).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        bytes += r.body.len();
    }
    let started = Instant::now();
    let r = c.get("/openapi/v2").await;
    let v2 = started.elapsed();
    assert_eq!(r.status, 200, "/openapi/v2: {}", r.text());
    bytes += r.body.len();
    let started = Instant::now();
    let index = c.get("/openapi/v3").await;
    let v3_index = started.elapsed();
    assert_eq!(index.status, 200, "/openapi/v3: {}", index.text());
    let paths: Vec<String> = index.json()["paths"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|p| p["serverRelativeURL"].as_str().map(str::to_owned))
        .collect();
    for path in &paths {
        let r = c.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        bytes += r.body.len();
    }
    Served { bytes, paths: paths.len(), v2, v3_index }
}

/// `/openapi/v2` once more, with the `Accept` and `Accept-Encoding` given: (seconds, bytes on the
/// wire).
async fn time_v2(c: &Client, headers: &[(&str, &str)]) -> (f64, usize) {
    let started = Instant::now();
    let r = c.get_with("/openapi/v2", headers).await;
    assert_eq!(r.status, 200, "/openapi/v2: {}", r.text());
    (started.elapsed().as_secs_f64(), r.body.len())
}

async fn established(c: &Client, name: &str) -> bool {
    let r = c.get(&format!("{CRDS}/{name}")).await;
    r.status == 200
        && r.json()["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = corpus_dir();
    let corpus = corpus(&dir);
    if corpus.is_empty() {
        println!("bench-memory: skipped: no CRD corpus in {} (run hack/crd-corpus.sh)", dir.display());
        return;
    }
    let n: usize = std::env::var("VERSA_BENCH_DEFINITIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);

    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path());
    let c = Client::admin(&server.data_dir, &server.address);
    ready(&c).await;
    let pid = server.child.id();

    serve_documents(&c).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let baseline = rss_kib(pid);
    println!("baseline (no definitions, documents served): {baseline} KiB");

    let started = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let corpus = std::sync::Arc::new(corpus);
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let (c, next, corpus) = (c.clone(), next.clone(), corpus.clone());
        writers.push(tokio::spawn(async move {
            // (copy, JSON bytes) of each created definition; the files the server refused
            // (kube refuses them too: a non-structural schema).
            let (mut created, mut refused) = (Vec::new(), Vec::new());
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    return (created, refused);
                }
                let (file, crd) = &corpus[i % corpus.len()];
                let body = replica(crd, i);
                let r = c.post(CRDS, &body).await;
                match r.status {
                    201 => created.push((i, serde_json::to_vec(&body).unwrap().len())),
                    422 => refused.push((file.clone(), r.json()["message"].as_str().unwrap_or_default().to_owned())),
                    _ => panic!("{file} (copy {i}): {}", r.text()),
                }
            }
        }));
    }
    let (mut created, mut refused) = (Vec::new(), std::collections::BTreeMap::new());
    for w in writers {
        let (c, r) = w.await.unwrap();
        created.extend(c);
        refused.extend(r);
    }
    for (file, message) in &refused {
        let message: String = message.chars().take(200).collect();
        println!("refused (every copy, as kube-apiserver would): {file}: {message}...");
    }
    let n = created.len();
    let json_bytes: usize = created.iter().map(|(_, len)| len).sum();
    let average = json_bytes as f64 / n as f64;
    println!(
        "corpus: {} CRDs from {}; {n} definitions created, {:.1} KiB of JSON on average ({:.1} MiB in all)",
        corpus.len(),
        dir.display(),
        average / 1024.0,
        json_bytes as f64 / 1048576.0
    );
    let created_in = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(600);
    for &(i, _) in &created {
        let crd = replica(&corpus[i % corpus.len()].1, i);
        let name = crd["metadata"]["name"].as_str().unwrap();
        while !established(&c, name).await {
            assert!(Instant::now() < deadline, "{name} not Established after 10 minutes");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let loaded = rss_kib(pid);
    println!(
        "{n} definitions created in {:.1} s, all Established after {:.1} s; RSS {loaded} KiB",
        created_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let served = serve_documents(&c).await;
    println!(
        "discovery, /openapi/v2 and {} /openapi/v3 paths served ({:.1} MiB) in {:.1} s (first /openapi/v2 {:.2} s, /openapi/v3 index {:.2} s)",
        served.paths,
        served.bytes as f64 / 1048576.0,
        started.elapsed().as_secs_f64(),
        served.v2.as_secs_f64(),
        served.v3_index.as_secs_f64()
    );
    // Twice: what the first building left to be freed, and what is kept.
    let again = serve_documents(&c).await;
    println!(
        "again: /openapi/v2 {:.2} s, /openapi/v3 index {:.2} s",
        again.v2.as_secs_f64(),
        again.v3_index.as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let steady = rss_kib(pid);
    let per = steady.saturating_sub(baseline) as f64 / n as f64;
    println!(
        "steady RSS {steady} KiB: {:.1} KiB per definition over the baseline, {:.2}x its JSON size (target <= 0.5x: {})",
        per,
        per * 1024.0 / average,
        if per * 1024.0 / average <= 0.5 { "met" } else { "not met" }
    );
    println!(
        "(while loading: {:.1} KiB per definition, {:.2}x)",
        loaded.saturating_sub(baseline) as f64 / n as f64,
        loaded.saturating_sub(baseline) as f64 * 1024.0 / n as f64 / average
    );
    // The data file: each definition's current value and its log entries, as the store keeps them.
    let file = std::fs::metadata(tmp.path().join("store.redb")).map_or(0, |m| m.len());
    println!(
        "data file store.redb: {:.1} MiB, {:.1} KiB per definition",
        file as f64 / 1048576.0,
        file as f64 / 1024.0 / n as f64
    );

    // Every definition in use: one create each (a dry run) compiles its storage version's schema
    // on the way, as a first real write would.
    let r = c.post("/api/v1/namespaces", &serde_json::json!({"metadata": {"name": "bench"}})).await;
    assert!(r.status == 201 || r.status == 409, "namespace: {}", r.text());
    let mut first = Vec::new();
    for &(i, _) in &created {
        let crd = replica(&corpus[i % corpus.len()].1, i);
        let spec = &crd["spec"];
        let version = spec["versions"].as_array().unwrap().iter().find(|v| v["storage"] == true).unwrap();
        let (group, version) = (spec["group"].as_str().unwrap(), version["name"].as_str().unwrap());
        let plural = spec["names"]["plural"].as_str().unwrap();
        let namespace = if spec["scope"] == "Namespaced" { "/namespaces/bench" } else { "" };
        let object = serde_json::json!({"apiVersion": format!("{group}/{version}"),
            "kind": spec["names"]["kind"], "metadata": {"name": "in-use"}});
        let asked = Instant::now();
        let r = c.post(&format!("/apis/{group}/{version}{namespace}/{plural}?dryRun=All"), &object).await;
        first.push(asked.elapsed());
        assert!([201, 400, 422].contains(&r.status), "{group}/{version} {plural}: {}", r.text());
    }
    first.sort();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let in_use = rss_kib(pid);
    let per_in_use = in_use.saturating_sub(baseline) as f64 / n as f64;
    println!(
        "every definition in use (a dry-run create each, first use compiles: p50 {:.1} ms, max {:.1} ms): RSS {in_use} KiB, {:.1} KiB per definition, {:.2}x",
        first[first.len() / 2].as_secs_f64() * 1000.0,
        first[first.len() - 1].as_secs_f64() * 1000.0,
        per_in_use,
        per_in_use * 1024.0 / average
    );
    // What kubectl asks for (gzip accepted), after the RSS readings: JSON and protobuf.
    for (what, headers) in [
        ("JSON", &[("accept", "application/json")][..]),
        ("JSON, gzip", &[("accept", "application/json"), ("accept-encoding", "gzip")][..]),
        ("protobuf, gzip", &[("accept", PROTOBUF), ("accept-encoding", "gzip")][..]),
        ("protobuf, gzip, again", &[("accept", PROTOBUF), ("accept-encoding", "gzip")][..]),
    ] {
        let (seconds, len) = time_v2(&c, headers).await;
        println!("/openapi/v2 ({what}): {seconds:.2} s, {:.1} MiB", len as f64 / 1048576.0);
    }
    // What those requests left: the protobuf form is kept (compressed) until the next change.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib(pid);
    println!(
        "after them: RSS {after} KiB, {:+.1} KiB per definition over every definition in use",
        (after as f64 - in_use as f64) / n as f64
    );
    // And once tokio's idle blocking threads (which converted and read) have ended (10 s): what
    // their allocator heaps held until then is returned.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let later = rss_kib(pid);
    println!(
        "12 s later: RSS {later} KiB, {:+.1} KiB per definition over every definition in use",
        (later as f64 - in_use as f64) / n as f64
    );
    drop(server);
}
