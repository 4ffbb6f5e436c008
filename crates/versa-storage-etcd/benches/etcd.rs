//! How much the store adds on top of etcd: each operation through [`EtcdStore`] next to the
//! same operation as a bare etcd-client call, against one freshly started etcd in the same run,
//! printed as a table with the ratio (ours / bare; 1.00 = no overhead). `cargo bench -p
//! versa-storage-etcd`; needs etcd like the tests (`bash hack/install-deps.sh`). Takes about
//! half a minute.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a benchmark fails loudly")]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp, WatchOptions};
use support::EtcdServer;
use tokio::sync::mpsc;
use versa_storage::{ListOptions, Store, WatchEvent};
use versa_storage_etcd::EtcdStore;

const SEQUENTIAL_WRITES: usize = 1500;
const WRITERS: usize = 32;
const WRITES_PER_WRITER: usize = 150;
const GETS: usize = 3000;
const LIST_ITEMS: usize = 1000;
const LISTS: usize = 40;
const WATCHED_WRITES: usize = 500;
/// A value the size of a small Kubernetes object.
const VALUE: &[u8] = &[b'v'; 512];

/// One measured operation: seconds per operation (mean), or a latency distribution.
#[derive(Clone, Copy)]
enum Figure {
    PerOp(Duration),
    Latency { p50: f64, p99: f64 },
}

impl Figure {
    fn show(&self) -> String {
        match self {
            Figure::PerOp(d) => format!("{:>8.1} µs/op ({:>6.0} op/s)", micros(*d), 1.0 / d.as_secs_f64()),
            Figure::Latency { p50, p99 } => format!("p50 {p50:>7.1} µs, p99 {p99:>7.1} µs"),
        }
    }

    /// What the ratio compares: time per operation, or the p99 latency (the p50 of watch
    /// delivery is often negative: etcd sends the event before the write's response).
    fn key(&self) -> f64 {
        match self {
            Figure::PerOp(d) => d.as_secs_f64(),
            Figure::Latency { p99, .. } => *p99,
        }
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let started = Instant::now();
    let server = EtcdServer::start().await;
    let store = Arc::new(server.store().await);
    let raw = Client::connect([server.endpoint()], None).await.unwrap();
    let version = raw.clone().status().await.unwrap().version().to_string();
    let value = Bytes::from_static(VALUE);

    let mut rows: Vec<(&str, Figure, Figure)> = Vec::new();

    // Sequential writes: one create (a compare-and-put transaction) vs one plain put.
    let ours = time_per_op(SEQUENTIAL_WRITES, async {
        for i in 0..SEQUENTIAL_WRITES {
            store.create(&format!("/bench/seq/ours/{i}"), value.clone()).await.unwrap();
        }
    })
    .await;
    let bare = time_per_op(SEQUENTIAL_WRITES, async {
        let mut raw = raw.clone();
        for i in 0..SEQUENTIAL_WRITES {
            raw.put(format!("/bench/seq/raw/{i}"), VALUE, None).await.unwrap();
        }
    })
    .await;
    rows.push(("create, sequential", ours, bare));

    // Concurrent writers: throughput with etcd batching the writes of 32 clients.
    let total = WRITERS * WRITES_PER_WRITER;
    let ours = time_per_op(total, async {
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (store, value) = (store.clone(), value.clone());
                tokio::spawn(async move {
                    for i in 0..WRITES_PER_WRITER {
                        store.create(&format!("/bench/par/ours/{w}/{i}"), value.clone()).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;
    let bare = time_per_op(total, async {
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut raw = raw.clone();
                tokio::spawn(async move {
                    for i in 0..WRITES_PER_WRITER {
                        raw.put(format!("/bench/par/raw/{w}/{i}"), VALUE, None).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;
    // The same transaction as a create, bare: what of the difference to a put is etcd's.
    let bare_txn = time_per_op(total, async {
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut raw = raw.clone();
                tokio::spawn(async move {
                    for i in 0..WRITES_PER_WRITER {
                        let key = format!("/bench/par/txn/{w}/{i}");
                        let txn = Txn::new()
                            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                            .and_then([TxnOp::put(key.as_str(), VALUE, None)]);
                        assert!(raw.txn(txn).await.unwrap().succeeded());
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    })
    .await;
    rows.push(("create, 32 writers", ours, bare));
    rows.push(("  same, vs bare txn", ours, bare_txn));

    // Point reads of keys written above.
    let ours = time_per_op(GETS, async {
        for i in 0..GETS {
            store.get(&format!("/bench/seq/ours/{}", i % SEQUENTIAL_WRITES)).await.unwrap().unwrap();
        }
    })
    .await;
    let bare = time_per_op(GETS, async {
        let mut raw = raw.clone();
        for i in 0..GETS {
            raw.get(format!("/bench/seq/raw/{}", i % SEQUENTIAL_WRITES), None).await.unwrap();
        }
    })
    .await;
    rows.push(("get", ours, bare));

    // A list of 1000 items in one page vs the same prefix range.
    for i in 0..LIST_ITEMS {
        store.create(&format!("/bench/list/{i:04}"), value.clone()).await.unwrap();
    }
    let ours = time_per_op(LISTS, async {
        for _ in 0..LISTS {
            let page = store.list("/bench/list/", ListOptions::default()).await.unwrap();
            assert_eq!(page.items.len(), LIST_ITEMS);
        }
    })
    .await;
    let bare = time_per_op(LISTS, async {
        let mut raw = raw.clone();
        for _ in 0..LISTS {
            let response = raw.get("/bench/list/", Some(GetOptions::new().with_prefix())).await.unwrap();
            assert_eq!(response.kvs().len(), LIST_ITEMS);
        }
    })
    .await;
    rows.push(("list 1000", ours, bare));

    // Watch delivery: from the write's acknowledgement to the event's arrival at the consumer.
    let ours = watch_latency_ours(&store, &value).await;
    let bare = watch_latency_raw(&raw).await;
    rows.push(("watch delivery", ours, bare));

    drop(server);
    println!();
    println!("versa-storage-etcd vs bare etcd-client, one local etcd {version}, 512-byte values");
    println!();
    println!("| {:<20} | {:<32} | {:<32} | {:>6} |", "operation", "EtcdStore", "bare etcd-client", "ratio");
    println!("|{:-<22}|{:-<34}|{:-<34}|{:->8}|", "", "", "", "");
    for (name, ours, bare) in &rows {
        println!("| {:<20} | {:<32} | {:<32} | {:>6.2} |", name, ours.show(), bare.show(), ours.key() / bare.key());
    }
    println!();
    println!("(ratio: ours / bare of time per operation, or of p99 latency; total run {:.0?})", started.elapsed());
}

async fn time_per_op(ops: usize, work: impl std::future::Future<Output = ()>) -> Figure {
    let start = Instant::now();
    work.await;
    Figure::PerOp(start.elapsed() / u32::try_from(ops).unwrap())
}

/// Latencies from "write acknowledged" to "event received", in µs; negative when the event
/// overtook the acknowledgement.
fn distribution(acks: &[Instant], arrivals: &[Instant]) -> Figure {
    let mut latencies: Vec<f64> = acks
        .iter()
        .zip(arrivals)
        .map(|(ack, arrival)| if arrival >= ack { micros(*arrival - *ack) } else { -micros(*ack - *arrival) })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    Figure::Latency { p50: at(0.5), p99: at(0.99) }
}

async fn watch_latency_ours(store: &Arc<EtcdStore>, value: &Bytes) -> Figure {
    let mut watch = store.watch("/bench/watch/ours/", 0).await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let consumer = tokio::spawn(async move {
        let mut seen = 0;
        while seen < WATCHED_WRITES {
            match watch.next().await {
                Some(Ok(WatchEvent::Added(_))) => {
                    tx.send(Instant::now()).unwrap();
                    seen += 1;
                }
                Some(Ok(_)) => {}
                other => panic!("watch: {other:?}"),
            }
        }
    });
    let mut acks = Vec::with_capacity(WATCHED_WRITES);
    let mut arrivals = Vec::with_capacity(WATCHED_WRITES);
    for i in 0..WATCHED_WRITES {
        store.create(&format!("/bench/watch/ours/{i}"), value.clone()).await.unwrap();
        acks.push(Instant::now());
        // One write at a time, so that each event is measured without a queue before it.
        arrivals.push(rx.recv().await.unwrap());
    }
    consumer.await.unwrap();
    distribution(&acks, &arrivals)
}

async fn watch_latency_raw(raw: &Client) -> Figure {
    let mut raw = raw.clone();
    let mut stream =
        raw.watch("/bench/watch/raw/", Some(WatchOptions::new().with_prefix().with_prev_key())).await.unwrap();
    // Wait for etcd's confirmation, as EtcdStore::watch does.
    assert!(stream.message().await.unwrap().unwrap().created());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let consumer = tokio::spawn(async move {
        let mut seen = 0;
        while seen < WATCHED_WRITES {
            let response = stream.message().await.unwrap().unwrap();
            for _ in response.events() {
                tx.send(Instant::now()).unwrap();
                seen += 1;
            }
        }
    });
    let mut acks = Vec::with_capacity(WATCHED_WRITES);
    let mut arrivals = Vec::with_capacity(WATCHED_WRITES);
    for i in 0..WATCHED_WRITES {
        raw.put(format!("/bench/watch/raw/{i}"), VALUE, None).await.unwrap();
        acks.push(Instant::now());
        arrivals.push(rx.recv().await.unwrap());
    }
    consumer.await.unwrap();
    distribution(&acks, &arrivals)
}
