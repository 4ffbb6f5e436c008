//! Garbage collector benchmark (issue 37), run by `hack/bench-gc.sh`: standalone versa (the real
//! binary) holding 100,000 dependents (a namespaced custom resource) of 1,000 owners (another),
//! every owner deleted at once (`propagationPolicy` Background, or `VERSA_BENCH_GC_POLICY`):
//! the time until every dependent is gone, while other clients keep creating ConfigMaps — the
//! p50/p99 of those writes printed beside the same writes measured in the same run before the
//! deletion (their ratio is the number to read).
//!
//! Environment: `VERSA_BENCH_GC_OWNERS` (1000), `VERSA_BENCH_GC_DEPENDENTS` (100000),
//! `VERSA_BENCH_GC_WRITERS` (other clients, 4), `VERSA_BENCH_GC_SECONDS` (the baseline's length,
//! 10), `VERSA_BENCH_GC_POLICY` (Background). Not a test: numbers depend on the machine and its
//! load.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use client::Client;
use serde_json::{Value, json};
use versa_e2e::Versa;

const GROUP: &str = "gc.bench.example.com";
/// Connections loading and deleting.
const LOADERS: usize = 32;

fn definition(plural: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    })
}

fn collection(plural: &str) -> String {
    format!("/apis/{GROUP}/v1/namespaces/default/{plural}")
}

/// p50 and p99 of `samples`, in milliseconds.
fn quantiles(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1];
    (at(0.50).as_secs_f64() * 1e3, at(0.99).as_secs_f64() * 1e3)
}

/// Request `i` of a load: its method, path and body.
type MakeRequest = Arc<dyn Fn(usize) -> (&'static str, String, Option<Value>) + Send + Sync>;

/// Runs `count` requests over [`LOADERS`] connections: `make(i)` gives each one's method, path
/// and body; every answer must be a success.
async fn load(client: &Client, count: usize, make: MakeRequest) -> Vec<Value> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..LOADERS {
        let (client, next, make) = (client.clone(), next.clone(), make.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = client.connect().await;
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return out;
                }
                let (method, path, body) = make(i);
                let r = conn.request(method, &path, body.as_ref()).await;
                assert!(r.status < 300, "{method} {path}: {} {}", r.status, r.text());
                out.push((i, r.json()));
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, v)| v).collect()
}

/// Other clients: `writers` connections creating ConfigMaps until `stop`; their latencies.
fn writers(
    client: &Client,
    writers: usize,
    phase: &'static str,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<Duration>>> {
    (0..writers)
        .map(|w| {
            let (client, stop) = (client.clone(), stop.clone());
            tokio::spawn(async move {
                let mut conn = client.connect().await;
                let mut samples = Vec::new();
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": format!("{phase}-{w}-{n}")}, "data": {"k": "v"}});
                    let started = Instant::now();
                    let r = conn.request("POST", "/api/v1/namespaces/default/configmaps", Some(&cm)).await;
                    samples.push(started.elapsed());
                    assert_eq!(r.status, 201, "{}", r.text());
                    n += 1;
                }
                samples
            })
        })
        .collect()
}

async fn gather(tasks: Vec<tokio::task::JoinHandle<Vec<Duration>>>) -> Vec<Duration> {
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let owners = versa_e2e::env_count("VERSA_BENCH_GC_OWNERS", 1000);
    let dependents = versa_e2e::env_count("VERSA_BENCH_GC_DEPENDENTS", 100_000);
    let writer_count = versa_e2e::env_count("VERSA_BENCH_GC_WRITERS", 4);
    let baseline = Duration::from_secs(versa_e2e::env_count("VERSA_BENCH_GC_SECONDS", 10) as u64);
    let policy = std::env::var("VERSA_BENCH_GC_POLICY").unwrap_or_else(|_| "Background".into());

    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start_with(&dir.path().join("data"), &["--log-format", "json"]);
    let client = Client::admin(&versa.data_dir, &versa.address);
    for (plural, kind) in [("owners", "Owner"), ("dependents", "Dependent")] {
        let r = client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &definition(plural, kind)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        while client.get(&collection(plural)).await.status != 200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let started = Instant::now();
    let created = load(
        &client,
        owners,
        Arc::new(|i| {
            let owner =
                json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Owner", "metadata": {"name": format!("o-{i}")}});
            ("POST", collection("owners"), Some(owner))
        }),
    )
    .await;
    let uids: Arc<Vec<String>> =
        Arc::new(created.iter().map(|o| o["metadata"]["uid"].as_str().unwrap().to_owned()).collect());
    let owner_uids = uids.clone();
    load(
        &client,
        dependents,
        Arc::new(move |i| {
            let o = i % owners;
            let dep = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Dependent",
                "metadata": {"name": format!("d-{i}"), "ownerReferences": [
                    {"apiVersion": format!("{GROUP}/v1"), "kind": "Owner", "name": format!("o-{o}"), "uid": owner_uids[o]}]}});
            ("POST", collection("dependents"), Some(dep))
        }),
    )
    .await;
    println!("loaded {owners} owners and {dependents} dependents in {:.1} s", started.elapsed().as_secs_f64());

    // Baseline: the other clients' writes alone.
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = writers(&client, writer_count, "before", stop.clone());
    tokio::time::sleep(baseline).await;
    stop.store(true, Ordering::Relaxed);
    let mut before = gather(tasks).await;

    // Every owner deleted; the same writes meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = writers(&client, writer_count, "during", stop.clone());
    let started = Instant::now();
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
    let deleting = {
        let client = client.clone();
        tokio::spawn(async move {
            load(
                &client,
                owners,
                Arc::new(move |i| ("DELETE", format!("{}/o-{i}", collection("owners")), Some(options.clone()))),
            )
            .await;
            started.elapsed()
        })
    };
    loop {
        let r = client.get(&format!("{}?limit=1", collection("dependents"))).await;
        if r.json()["items"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let gone = started.elapsed();
    let owners_deleted = deleting.await.unwrap();
    // Owners deleted in the foreground go once their dependents have.
    loop {
        let r = client.get(&format!("{}?limit=1", collection("owners"))).await;
        if r.json()["items"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let owners_gone = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut during = gather(tasks).await;

    println!(
        "{owners} owners deleted ({policy}) in {:.1} s; all {dependents} dependents gone after {:.1} s ({:.0} dependents/s); owners gone after {:.1} s",
        owners_deleted.as_secs_f64(),
        gone.as_secs_f64(),
        dependents as f64 / gone.as_secs_f64(),
        owners_gone.as_secs_f64()
    );
    let (b50, b99) = quantiles(&mut before);
    let (d50, d99) = quantiles(&mut during);
    println!(
        "other clients' ConfigMap creates ({writer_count} connections): without deletions n={} p50={b50:.2} ms p99={b99:.2} ms; while collecting n={} p50={d50:.2} ms p99={d99:.2} ms; p99 ratio {:.2}, throughput {:.0}/s vs {:.0}/s",
        before.len(),
        during.len(),
        d99 / b99,
        before.len() as f64 / baseline.as_secs_f64(),
        during.len() as f64 / owners_gone.as_secs_f64(),
    );
    drop(versa);
}
