//! Watch cache benchmark (issue 41), run by `hack/bench-replicas.sh --watch-cache`: one real
//! etcd and three real `versa serve --storage etcd` replicas, once with the watch cache and once
//! with `--watch-cache=false`, in the same run.
//!
//! `WATCHERS` client watches (1,000 unless the environment says fewer) of one resource, spread
//! over the replicas, while 8 writers create objects through the replicas and one lister per
//! replica LISTs the resource. Prints etcd's count of open watches
//! (`etcd_debugging_mvcc_watcher_total`) with the watchers open, the p50/p99 of watch delivery
//! (a writer sends the create → a watcher receives its event, over every watcher and event) and
//! of LIST, and the ratios cache/no cache. Not a test: numbers depend on the machine and its load.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::{Client, Next};
use serde_json::{Value, json};
use versa_e2e::{Versa, free_port, spawn_etcd};

const REPLICAS: usize = 3;
const WRITERS: usize = 8;
const PER_WRITER: usize = 25;
const GROUP: &str = "bench.example.com";
const PATH: &str = "/apis/bench.example.com/v1/namespaces/default/things";

fn definition() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": format!("things.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema}],
        },
    })
}

fn quantile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
    samples[i].as_secs_f64() * 1e3
}

struct Etcd {
    child: Child,
    port: u16,
}

impl Etcd {
    fn start(dir: &std::path::Path) -> Etcd {
        let (port, peer) = (free_port(), free_port());
        let child = spawn_etcd(dir, port, peer);
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Etcd { child, port }
    }

    /// etcd's count of open watches, from its `/metrics`.
    fn watchers(&self) -> f64 {
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut page = String::new();
        conn.read_to_string(&mut page).unwrap();
        let name = "etcd_debugging_mvcc_watcher_total ";
        page.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn ready(c: &Client) {
    for _ in 0..1200 {
        if c.get("/readyz").await.status == 200 && c.get(PATH).await.status == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("replica not ready");
}

/// What one run measured.
struct Run {
    etcd_watches: f64,
    delivery: Vec<Duration>,
    lists: Vec<Duration>,
}

async fn run(dir: &std::path::Path, watch_cache: bool, watchers: usize) -> Run {
    let etcd = Etcd::start(&dir.join("etcd"));
    let endpoint = format!("http://127.0.0.1:{}", etcd.port);
    let cache = if watch_cache { "true" } else { "false" };
    let flags = ["--storage", "etcd", "--etcd-endpoints", &endpoint, "--log-format", "json", "--watch-cache", cache];
    let replicas: Vec<Versa> =
        (0..REPLICAS).map(|i| Versa::start_with(&dir.join(format!("versa-{i}")), &flags)).collect();
    let clients: Vec<Client> = replicas.iter().map(|v| Client::admin(&v.data_dir, &v.address)).collect();
    while clients[0].get("/readyz").await.status != 200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = clients[0].post("/apis/versa.dev/v1/resourcedefinitions", &definition()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    for c in &clients {
        ready(c).await;
    }

    let total = WRITERS * PER_WRITER;
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let delivery: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut readers = Vec::new();
    for w in 0..watchers {
        let mut watch = clients[w % REPLICAS].watch(&format!("{PATH}?watch=1"), &[]).await;
        assert_eq!(watch.status, 200);
        let (sent, delivery) = (sent.clone(), delivery.clone());
        readers.push(tokio::spawn(async move {
            let mut seen = 0;
            while seen < total {
                let Next::Line(line) = watch.next_line(Duration::from_secs(120)).await else { panic!("watch ended") };
                let arrived = Instant::now();
                // The name alone, without parsing each of the many events in full.
                let Some(at) = line.find("\"name\":\"o") else { continue };
                let name = &line[at + 8..at + 8 + line[at + 8..].find('"').unwrap()];
                if let Some(sent_at) = sent.lock().unwrap().get(name) {
                    delivery.lock().unwrap().push(arrived.saturating_duration_since(*sent_at));
                }
                seen += 1;
            }
        }));
    }
    // Let every watch be registered before counting etcd's.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let etcd_watches = etcd.watchers();

    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut listers = Vec::new();
    for c in &clients {
        let mut conn = c.connect().await;
        let done = done.clone();
        listers.push(tokio::spawn(async move {
            let mut lists = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                let r = conn.request("GET", PATH, None).await;
                assert_eq!(r.status, 200);
                lists.push(started.elapsed());
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            lists
        }));
    }
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let mut conn = clients[w % REPLICAS].connect().await;
        let sent = sent.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..PER_WRITER {
                let name = format!("o{w}-{i:03}");
                let body = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Thing", "metadata": {"name": name}});
                sent.lock().unwrap().insert(name, Instant::now());
                let r = conn.request("POST", PATH, Some(&body)).await;
                assert_eq!(r.status, 201, "{}", r.text());
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    for r in readers {
        r.await.unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut lists = Vec::new();
    for l in listers {
        lists.extend(l.await.unwrap());
    }
    drop(replicas);
    let delivery = std::mem::take(&mut *delivery.lock().unwrap());
    Run { etcd_watches, delivery, lists }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let watchers: usize = std::env::var("WATCHERS").ok().and_then(|w| w.parse().ok()).unwrap_or(1000);
    println!("{REPLICAS} replicas, one etcd, {watchers} watchers, {WRITERS} writers x {PER_WRITER} creates");
    let dir = tempfile::tempdir().unwrap();
    let mut with = run(&dir.path().join("cache"), true, watchers).await;
    let mut without = run(&dir.path().join("no-cache"), false, watchers).await;
    println!("{:<28} {:>12} {:>12} {:>8}", "", "cache", "no cache", "ratio");
    let row = |what: &str, a: f64, b: f64| println!("{what:<28} {a:>12.1} {b:>12.1} {:>8.2}", a / b);
    row("etcd watches open", with.etcd_watches, without.etcd_watches);
    row("watch delivery p50 (ms)", quantile(&mut with.delivery, 0.5), quantile(&mut without.delivery, 0.5));
    row("watch delivery p99 (ms)", quantile(&mut with.delivery, 0.99), quantile(&mut without.delivery, 0.99));
    row("LIST p50 (ms)", quantile(&mut with.lists, 0.5), quantile(&mut without.lists, 0.5));
    row("LIST p99 (ms)", quantile(&mut with.lists, 0.99), quantile(&mut without.lists, 0.99));
    println!(
        "samples: delivery {} / {}, LIST {} / {}",
        with.delivery.len(),
        without.delivery.len(),
        with.lists.len(),
        without.lists.len()
    );
}
