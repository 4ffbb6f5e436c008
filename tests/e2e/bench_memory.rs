//! Memory benchmark of real-world definitions (issue 19), run by `hack/bench-memory.sh`: the
//! published CRDs of the corpus (`hack/crd-corpus.sh`, listed in `tests/crd-corpus/README.md`)
//! replicated to N definitions (default 1,000, `VERSA_BENCH_DEFINITIONS`), each copy in a group
//! of its own (`g0042.<group>`), created through the `apiextensions.k8s.io/v1` face of a real
//! `versa serve` (embedded storage, standalone).
//!
//! The process's `VmRSS` is read from `/proc` after the same requests each time, so that what
//! serving them leaves behind is in every reading: discovery (`/api`, `/apis`, and `/apis` as
//! aggregated discovery), `/openapi/v2` and every `/openapi/v3` group-version path, twice, then
//! 2 s idle. First with no definitions (the baseline), then after each of four steps of N
//! definitions, each waited for until discoverable. Printed for each step: the growth per
//! definition over the previous reading and over the baseline, and their ratios to the
//! definitions' average JSON size (compact JSON, as created; target ≤ 0.5×). The first two
//! steps fill the bounded caches (the store's page cache and the watch broadcast: fixed
//! ceilings, `docs/memory.md`), so the growth over the last two steps is what a definition
//! costs — the figure the target is judged on (over two steps, not one: a single reading moves
//! by a few MiB from run to run, which over one step of 967 was ±5 KiB a definition) — and the
//! growth over the baseline shows the caches' share. Then the
//! size of the store's data file (`store.redb`), and the RSS once more with
//! every definition in use: a dry-run create in each compiles its storage version's schema
//! (versa compiles a definition's schemas on first use), with the time those first requests
//! took. Last, `/openapi/v2` as kubectl asks for it (gzip, JSON and protobuf), timed, and the RSS
//! after those requests (the protobuf form is then kept), and again 12 s later.
//!
//! Beside each RSS reading, the bytes versa holds, as jemalloc counts them (`/metrics`), and the
//! resident bytes jemalloc keeps for them: what the program keeps, and the allocator's share
//! (`docs/memory.md`). `VERSA_BENCH_HEAP_LOG` (with a build with the system allocator run with
//! `hack/heap-in-use.c` preloaded, through `VERSA_BENCH_WRAP`) prints glibc's count instead.
//!
//! `VERSA_BENCH_SMAPS=DIR` copies the process's `/proc/PID/smaps` into `DIR` at each reading
//! (`reading-00.smaps`, ...), to see which mappings the RSS grew in (`hack/smaps-growth.py`).
//!
//! `VERSA_BENCH_WRAP` runs versa under a profiler (`heaptrack -o FILE`, with `VERSA_BENCH_BIN` a
//! build with the `system-allocator` feature, since heaptrack hooks malloc): the RSS is then the
//! profiled process's and means little, the profile is the point; versa is killed at the end, so
//! that the profile's "leaked" is what it held then. `VERSA_BENCH_IN_USE=0` ends the benchmark
//! before its last phase (the profile is then of the steady state). Not a test: numbers vary with the
//! machine.
//!
//! `VERSA_BENCH_DISTINCT=1` loads distinct definitions instead (issue 41): the published CRDs of
//! `../shared/conformance/crds/`, each copy with schemas of its own (see [`distinct`]); with N
//! the corpus's size, each is loaded once. Then 96 MiB of other objects are written before the
//! baseline ([`fill`]), so that the bounded caches are full before the first definition even
//! when the definitions are too few to fill them, and 8 definitions are created, served and
//! deleted ([`warm_up`]), so that what the first definitions bring once is in the baseline.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;
#[path = "corpus.rs"]
mod corpus;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use client::Client;
use serde_json::Value;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// Steps of `VERSA_BENCH_DEFINITIONS` definitions each; the growth over the steps after
/// [`FILLED`] is the measure.
const STEPS: usize = 4;
/// The steps that fill the bounded caches.
const FILLED: usize = 2;
/// Concurrent creates (each definition is compiled on arrival; more would only queue).
const WRITERS: usize = 4;

fn corpus_dir() -> PathBuf {
    if distinct() {
        return corpus::conformance_dir();
    }
    match std::env::var_os("VERSA_CRD_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/versa-crds"),
    }
    .join("crds")
}

/// `VERSA_BENCH_DISTINCT=1`: the published CRDs of `../shared/conformance/crds/`, every copy's
/// schemas its own ([`corpus::replica`]) — thousands of distinct definitions (issue 41).
fn distinct() -> bool {
    std::env::var("VERSA_BENCH_DISTINCT").is_ok_and(|v| v == "1")
}

struct Server {
    child: Child,
    data_dir: PathBuf,
    address: String,
}

impl Drop for Server {
    /// Ends versa. Under a profiler it is killed outright, so that what the profile reports as
    /// leaked is what was held at the last measurement (a graceful exit frees most of it first).
    fn drop(&mut self) {
        let pid = self.child.id();
        let (signal, target) = match versa_pid(pid) {
            Some(versa) => ("-KILL", versa),
            None => ("-TERM", pid.to_string()),
        };
        let _ = Command::new("kill").arg(signal).arg(target).status();
        let _ = self.child.wait();
    }
}

/// The versa process under a wrapper (`VERSA_BENCH_WRAP`): the wrapper's child that runs
/// `serve` (heaptrack has another, its interpreter).
fn versa_pid(wrapper: u32) -> Option<String> {
    let children = std::fs::read_to_string(format!("/proc/{wrapper}/task/{wrapper}/children")).ok()?;
    children
        .split_whitespace()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == b"serve"))
        })
        .map(str::to_owned)
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

/// The bytes versa has allocated and not freed, in KiB, when it runs with `hack/heap-in-use.c`
/// preloaded and `VERSA_BENCH_HEAP_LOG` names the file that writes (its last line, at most half
/// a second old); printed beside each RSS reading.
fn heap_kib() -> Option<u64> {
    let log = std::env::var_os("VERSA_BENCH_HEAP_LOG")?;
    let text = std::fs::read_to_string(log).ok()?;
    let bytes: u64 = text.lines().last()?.split_whitespace().nth(1)?.parse().ok()?;
    Some(bytes / 1024)
}

/// What versa holds, in KiB, printed beside each RSS reading and returned: glibc's count from
/// [`heap_kib`] when versa runs with `hack/heap-in-use.c` preloaded, else jemalloc's from
/// `/metrics` (`versa_allocator_allocated_bytes`), printed with the resident bytes jemalloc keeps
/// for it (`versa_allocator_resident_bytes`): their difference is the allocator's share.
async fn print_held(c: &Client) -> Option<u64> {
    if let Some(heap) = heap_kib() {
        println!("in use (hack/heap-in-use.c): {heap} KiB");
        return Some(heap);
    }
    let text = c.get("/metrics").await.text();
    let kib = |name: &str| {
        let bytes: f64 = text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())?;
        Some((bytes / 1024.0) as u64)
    };
    let (allocated, resident) = (kib("versa_allocator_allocated_bytes")?, kib("versa_allocator_resident_bytes")?);
    println!(
        "in use (jemalloc's count, /metrics): {allocated} KiB, which the allocator keeps in {resident} KiB resident"
    );
    Some(allocated)
}

/// `VmRSS` of the process (or of the wrapper's child, the versa process, when wrapped), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let versa = versa_pid(pid).unwrap_or_else(|| pid.to_string());
    let status = std::fs::read_to_string(format!("/proc/{versa}/status")).unwrap_or_default();
    if let Some(dir) = std::env::var_os("VERSA_BENCH_SMAPS") {
        static READING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = READING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let to = Path::new(&dir).join(format!("reading-{n:02}.smaps"));
        std::fs::copy(format!("/proc/{versa}/smaps"), &to).unwrap();
    }
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

/// Whether every served version of definition `crd` lists its resource in discovery (which it
/// does once Established). Discovery, not a GET of the definition: a GET renders the definition
/// into the render cache, which would then be measured with it.
async fn discoverable(c: &Client, crd: &Value) -> bool {
    let spec = &crd["spec"];
    let (group, plural) = (spec["group"].as_str().unwrap(), spec["names"]["plural"].as_str().unwrap());
    for version in spec["versions"].as_array().unwrap().iter().filter(|v| v["served"] == true) {
        let r = c.get(&format!("/apis/{group}/{}", version["name"].as_str().unwrap())).await;
        let listed = r.status == 200
            && r.json()["resources"].as_array().is_some_and(|rs| rs.iter().any(|res| res["name"] == plural));
        if !listed {
            return false;
        }
    }
    true
}

/// Creates copies `range` of the corpus (concurrently, [`WRITERS`] at a time, or
/// `VERSA_BENCH_WRITERS`), waits until each
/// is Established, and prints what it took: (copy, JSON bytes) of each created definition, and
/// their average JSON size. Files the server refuses are reported (kube refuses them too).
async fn load(
    c: &Client,
    corpus: &std::sync::Arc<Vec<(String, Value)>>,
    range: std::ops::Range<usize>,
    pid: u32,
) -> (Vec<(usize, usize)>, f64) {
    let started = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(range.start));
    let mut writers = Vec::new();
    let concurrent = versa_e2e::env_count("VERSA_BENCH_WRITERS", WRITERS);
    for _ in 0..concurrent {
        let (c, next, corpus, end) = (c.clone(), next.clone(), corpus.clone(), range.end);
        writers.push(tokio::spawn(async move {
            let (mut created, mut refused) = (Vec::new(), Vec::new());
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= end {
                    return (created, refused);
                }
                let (file, crd) = &corpus[i % corpus.len()];
                let body = corpus::replica(crd, i, distinct());
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
    created.sort();
    if range.start == 0 {
        for (file, message) in &refused {
            let message: String = message.chars().take(200).collect();
            println!("refused (every copy, as kube-apiserver would): {file}: {message}...");
        }
    }
    let n = created.len();
    let json_bytes: usize = created.iter().map(|(_, len)| len).sum();
    let average = json_bytes as f64 / n.max(1) as f64;
    println!(
        "copies {}..{} of {} CRDs: {n} definitions created, {:.1} KiB of JSON on average ({:.1} MiB in all)",
        range.start,
        range.end,
        corpus.len(),
        average / 1024.0,
        json_bytes as f64 / 1048576.0
    );
    let created_in = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(600);
    for &(i, _) in &created {
        let crd = corpus::replica(&corpus[i % corpus.len()].1, i, distinct());
        while !discoverable(c, &crd).await {
            assert!(Instant::now() < deadline, "{} not discoverable after 10 minutes", crd["metadata"]["name"]);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    println!(
        "{n} definitions created in {:.1} s, all discoverable after {:.1} s; RSS {} KiB",
        created_in.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        rss_kib(pid)
    );
    (created, average)
}

/// `VERSA_BENCH_FILL_MIB` (default 96 with `VERSA_BENCH_DISTINCT=1`, else 0): MiB of other
/// objects written before the baseline — ConfigMaps of `VERSA_BENCH_FILL_KIB` (48) KiB of
/// incompressible data — so that the bounded caches (the store's 64 MiB page cache and 16 MiB
/// watch broadcast, `docs/storage.md`, and the 64 MiB render cache, filled by listing them) are
/// full from the start, as in a server that holds data, and the growth per definition is what
/// definitions keep even when there are too few of them to fill the caches (the published CRDs
/// loaded once each: 170). Returns the MiB written.
///
/// The objects are about a definition's size, so that what a definition displaces from the
/// caches held as much memory as it takes there. Objects of 900 KiB (before 2026-11-29) did
/// not: each of their copies in the caches had pages allocated but never written, which the
/// RSS does not count (the baseline read 40 MiB lower than with 48 KiB objects), and the
/// definitions that displaced them were charged the difference — at 170, most of what was
/// measured (`docs/memory.md`, "jemalloc").
async fn fill(c: &Client) -> usize {
    let default = if distinct() { 96 } else { 0 };
    let mib = versa_e2e::env_count("VERSA_BENCH_FILL_MIB", default);
    if mib == 0 {
        return 0;
    }
    let r = c.post("/api/v1/namespaces", &serde_json::json!({"metadata": {"name": "filler"}})).await;
    assert!(r.status == 201 || r.status == 409, "namespace: {}", r.text());
    // xorshift: data deflate cannot shrink (the store deflates values that it can).
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let kib = versa_e2e::env_count("VERSA_BENCH_FILL_KIB", 48);
    let objects = (mib * 1024).div_ceil(kib);
    for i in 0..objects {
        let data: String = (0..kib * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ALPHABET[(state % 64) as usize] as char
            })
            .collect();
        let body = serde_json::json!({"metadata": {"name": format!("filler-{i}")}, "data": {"filler": data}});
        let r = c.post("/api/v1/namespaces/filler/configmaps", &body).await;
        assert_eq!(r.status, 201, "filler {i}: {}", r.text());
    }
    // Read back too (twice): what is read fills the page cache and the render cache as well.
    for _ in 0..2 {
        let r = c.get("/api/v1/namespaces/filler/configmaps").await;
        assert_eq!(r.status, 200, "filler list: {}", r.text());
    }
    mib
}

/// `VERSA_BENCH_WARMUP` definitions (default 8 with `VERSA_BENCH_DISTINCT=1`, else 0) created,
/// served and deleted before the baseline, copies of the corpus's first files in groups of their
/// own: what the first definitions a server ever creates cost once — the code that runs for them
/// paged in, the allocator's first blocks of each size on each thread, structures made once —
/// is then in the baseline, not charged to the first definitions measured.
async fn warm_up(c: &Client, corpus: &[(String, Value)]) -> usize {
    let default = if distinct() { 8 } else { 0 };
    let n = versa_e2e::env_count("VERSA_BENCH_WARMUP", default);
    let crds: Vec<Value> = (0..n).map(|k| corpus::replica(&corpus[k % corpus.len()].1, 9000 + k, distinct())).collect();
    let mut created = Vec::new();
    for crd in &crds {
        let r = c.post(CRDS, crd).await;
        assert!(r.status == 201 || r.status == 422, "warm-up: {}", r.text());
        if r.status == 201 {
            created.push(crd);
        }
    }
    for crd in &created {
        while !discoverable(c, crd).await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    serve_documents(c).await;
    for crd in &created {
        let name = crd["metadata"]["name"].as_str().unwrap();
        let r = c.delete(&format!("{CRDS}/{name}")).await;
        assert_eq!(r.status, 200, "warm-up: deleting {name}: {}", r.text());
        while c.get(&format!("{CRDS}/{name}")).await.status != 404 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    created.len()
}

/// The RSS once discovery and the OpenAPI documents have been served twice (what the first
/// building left to be freed, and what is kept) and the server has been idle for 2 s.
async fn steady_rss(c: &Client, pid: u32) -> u64 {
    let started = Instant::now();
    let served = serve_documents(c).await;
    println!(
        "discovery, /openapi/v2 and {} /openapi/v3 paths served ({:.1} MiB) in {:.1} s (first /openapi/v2 {:.2} s, /openapi/v3 index {:.2} s)",
        served.paths,
        served.bytes as f64 / 1048576.0,
        started.elapsed().as_secs_f64(),
        served.v2.as_secs_f64(),
        served.v3_index.as_secs_f64()
    );
    let again = serve_documents(c).await;
    println!(
        "again: /openapi/v2 {:.2} s, /openapi/v3 index {:.2} s",
        again.v2.as_secs_f64(),
        again.v3_index.as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    rss_kib(pid)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = corpus_dir();
    let corpus = corpus::read(&dir);
    if corpus.is_empty() {
        println!("bench-memory: skipped: no CRD corpus in {} (run hack/crd-corpus.sh)", dir.display());
        return;
    }
    let requested = versa_e2e::env_count("VERSA_BENCH_DEFINITIONS", 1000);

    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path());
    let c = Client::admin(&server.data_dir, &server.address);
    ready(&c).await;
    let pid = server.child.id();

    let filled_with = fill(&c).await;
    let corpus = std::sync::Arc::new(corpus);
    let warmed = warm_up(&c, &corpus).await;
    if warmed > 0 {
        println!("warm-up: {warmed} definitions created, served and deleted before the baseline");
    }
    serve_documents(&c).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let baseline = rss_kib(pid);
    match filled_with {
        0 => println!("baseline (no definitions, documents served): {baseline} KiB"),
        mib => println!("baseline (no definitions, {mib} MiB of other objects, documents served): {baseline} KiB"),
    }
    print_held(&c).await;

    let (mut created, average) = load(&c, &corpus, 0..requested, pid).await;
    let mut steady = steady_rss(&c, pid).await;
    let per = steady.saturating_sub(baseline) as f64 / created.len() as f64;
    println!(
        "steady RSS {steady} KiB: {per:.1} KiB per definition over the baseline, {:.2}x its JSON size \
         (with the bounded caches' growth)",
        per * 1024.0 / average,
    );
    let mut heap = print_held(&c).await;
    // Three times as many again, a step at a time: the bounded caches (the store's pages, the
    // watch broadcast) are full by the end of the second step, so what the RSS grows by from
    // there is what each definition costs.
    let (mut filled, mut heap_filled) = ((0, 0, 0.0), None);
    for step in 1..STEPS {
        if step == FILLED {
            filled = (created.len(), steady, 0.0);
            heap_filled = heap;
        }
        let (more, more_average) = load(&c, &corpus, step * requested..(step + 1) * requested, pid).await;
        let before = (created.len(), steady);
        created.extend(more.iter().copied());
        if step >= FILLED {
            filled.2 += more_average * more.len() as f64;
        }
        steady = steady_rss(&c, pid).await;
        let marginal = steady.saturating_sub(before.1) as f64 / more.len().max(1) as f64;
        let ratio = marginal * 1024.0 / more_average;
        let over = steady.saturating_sub(baseline) as f64 / created.len() as f64;
        println!(
            "steady RSS {steady} KiB: from {} to {} definitions {marginal:.1} KiB per definition, {ratio:.2}x its JSON size; \
             over the baseline {over:.1} KiB per definition, {:.2}x",
            before.0,
            created.len(),
            over * 1024.0 / average,
        );
        heap = print_held(&c).await;
    }
    let (from, at, json) = filled;
    let added = created.len() - from;
    let marginal = steady.saturating_sub(at) as f64 / added.max(1) as f64;
    let ratio = marginal * 1024.0 / (json / added.max(1) as f64);
    println!(
        "the target's measure: from {from} to {} definitions {marginal:.1} KiB per definition, {ratio:.2}x its JSON size \
         (target <= 0.5x: {})",
        created.len(),
        if ratio <= 0.5 { "met" } else { "not met" }
    );
    if let (Some(start), Some(end)) = (heap_filled, heap) {
        println!(
            "in use over the same steps: {:.1} KiB per definition",
            end.saturating_sub(start) as f64 / added.max(1) as f64
        );
    }
    let n = created.len();
    // The data file: each definition's current value and its log entries, as the store keeps them.
    let file = std::fs::metadata(tmp.path().join("store.redb")).map_or(0, |m| m.len());
    println!(
        "data file store.redb: {:.1} MiB, {:.1} KiB per definition",
        file as f64 / 1048576.0,
        file as f64 / 1024.0 / n as f64
    );

    if std::env::var("VERSA_BENCH_IN_USE").is_ok_and(|v| v == "0") {
        return;
    }
    // Every definition in use: one create each (a dry run) compiles its storage version's schema
    // on the way, as a first real write would.
    let r = c.post("/api/v1/namespaces", &serde_json::json!({"metadata": {"name": "bench"}})).await;
    assert!(r.status == 201 || r.status == 409, "namespace: {}", r.text());
    let mut first = Vec::new();
    for &(i, _) in &created {
        let crd = corpus::replica(&corpus[i % corpus.len()].1, i, distinct());
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
    // And once tokio's idle blocking threads (which converted and read) have ended (10 s), in
    // case their allocator heaps held anything until then (after the documents were served, the
    // 2 s and 12 s readings were the same: docs/memory.md, "Allocator retention").
    tokio::time::sleep(Duration::from_secs(12)).await;
    let later = rss_kib(pid);
    println!(
        "12 s later: RSS {later} KiB, {:+.1} KiB per definition over every definition in use",
        (later as f64 - in_use as f64) / n as f64
    );
    drop(server);
}
