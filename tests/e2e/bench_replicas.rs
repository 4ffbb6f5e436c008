//! Replicas benchmark (issue 22), run by `hack/bench-replicas.sh`: a real etcd and two real
//! `versa serve --storage etcd` replicas, A and B.
//!
//! - **Definition propagation**: with 1,000 definitions loaded (ten per API group), 100 more are created through A,
//!   one at a time; for each, the time from A's answer until B serves the new resource (a list
//!   of it answers 200, polled every 2 ms). The path is the real one: the leader makes it
//!   Established, B learns that from its watch and serves it.
//! - **Cross-replica watch latency**: 500 objects written through A, one at a time, watched on
//!   B; for each, the time from A's answer until B's watch delivers the event (0 when the event
//!   came first).
//!
//! Prints p50, p99 and max of each. Not a test: numbers depend on the machine and its load.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::Client;
use serde_json::{Value, json};
use versa_e2e::{Versa, free_port, spawn_etcd};

/// Definitions per API group (kube re-checks a group's names on each change in it, so one group
/// of 1,000 would measure that instead).
const PER_GROUP: usize = 10;
const LOADED: usize = 1000;
const MEASURED: usize = 100;
const OBJECTS: usize = 500;

fn group(i: usize) -> String {
    format!("g{:03}.bench.example.com", i / PER_GROUP)
}

fn definition(i: usize) -> Value {
    let group = group(i);
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": format!("things{i:04}.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": format!("things{i:04}"), "singular": format!("thing{i:04}"),
                      "kind": format!("Thing{i:04}"), "listKind": format!("Thing{i:04}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema}],
        },
    })
}

fn list_path(i: usize) -> String {
    format!("/apis/{}/v1/namespaces/default/things{i:04}", group(i))
}

fn summary(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1];
    println!(
        "{what}: n={} p50={:.1} ms p99={:.1} ms max={:.1} ms",
        samples.len(),
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
}

async fn ready(c: &Client) {
    for _ in 0..1200 {
        if c.get("/readyz").await.status == 200 && c.get("/api/v1/namespaces/default").await.status == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("replica not ready");
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (port, peer) = (free_port(), free_port());
    let client_url = format!("http://127.0.0.1:{port}");
    let mut etcd = spawn_etcd(&dir.path().join("etcd"), port, peer);
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let flags = ["--storage", "etcd", "--etcd-endpoints", &client_url, "--log-format", "json"];
    let a = Versa::start_with(&dir.path().join("a"), &flags);
    let b = Versa::start_with(&dir.path().join("b"), &flags);
    let (ca, cb) = (Client::admin(&a.data_dir, &a.address), Client::admin(&b.data_dir, &b.address));
    ready(&ca).await;
    ready(&cb).await;

    let started = Instant::now();
    for i in 0..LOADED {
        let r = ca.post("/apis/versa.dev/v1/resourcedefinitions", &definition(i)).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    for i in [0, LOADED - 1] {
        while cb.get(&list_path(i)).await.status != 200 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    println!("loaded {LOADED} definitions through A, served by B, in {:.1} s", started.elapsed().as_secs_f64());

    let mut propagation = Vec::new();
    for i in LOADED..LOADED + MEASURED {
        let r = ca.post("/apis/versa.dev/v1/resourcedefinitions", &definition(i)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let acknowledged = Instant::now();
        while cb.get(&list_path(i)).await.status != 200 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        propagation.push(acknowledged.elapsed());
    }
    summary(&format!("definition propagation A -> B (served by B), {LOADED} loaded"), propagation);

    // Watch latency: B's watch events stamped as they arrive, by object name.
    let path = list_path(0);
    let mut watch = cb.watch(&format!("{path}?watch=1"), &[]).await;
    assert_eq!(watch.status, 200);
    let arrivals: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let seen = arrivals.clone();
    let reader = tokio::spawn(async move {
        while seen.lock().unwrap().len() < OBJECTS {
            let event = watch.event(Duration::from_secs(60), "B's watch").await;
            if event["type"] == "ADDED" {
                let name = event["object"]["metadata"]["name"].as_str().unwrap().to_owned();
                seen.lock().unwrap().insert(name, Instant::now());
            }
        }
    });
    let mut acknowledged = HashMap::new();
    for i in 0..OBJECTS {
        let name = format!("o{i:04}");
        let body = json!({"apiVersion": format!("{}/v1", group(0)), "kind": "Thing0000", "metadata": {"name": name}});
        let r = ca.post(&path, &body).await;
        assert_eq!(r.status, 201, "{}", r.text());
        acknowledged.insert(name, Instant::now());
    }
    reader.await.unwrap();
    let arrivals = arrivals.lock().unwrap();
    let latency: Vec<Duration> =
        acknowledged.iter().map(|(name, at)| arrivals[name].saturating_duration_since(*at)).collect();
    summary("cross-replica watch latency (A's answer -> B's event)", latency);
    drop((a, b));
    let _ = etcd.kill();
    let _ = etcd.wait();
}
