//! Backup benchmark (issue 40): the embedded store's snapshot throughput beside a bare redb read
//! of the same table, and the p99 of gets while a snapshot runs beside the p99 with none — both
//! measured in the same run on the same store, printed with their ratios.
//!
//! Run: `cargo bench -p versa-storage-embedded --bench backup` (or `hack/bench-storage.sh`).
//! `VERSA_BENCH_BACKUP_OBJECTS` sets the store's size (default 100,000 objects of about 1 KiB).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};
use versa_storage::Store;
use versa_storage_embedded::{Config, EmbeddedStore};

const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Gets of random keys from 4 tasks until `stop`; their latencies, sorted.
async fn gets(store: Arc<EmbeddedStore>, objects: usize, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut tasks = Vec::new();
    for t in 0..4 {
        let (store, stop) = (store.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = t * 7919;
            while !stop.load(Ordering::Relaxed) {
                i = (i * 31 + 17) % objects;
                let started = Instant::now();
                store.get(&format!("/registry/bench/widgets/{i:07}")).await.unwrap().unwrap();
                latencies.push(started.elapsed());
                tokio::task::yield_now().await;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    all
}

/// Takes one snapshot, counting its bytes.
async fn snapshot(store: &Arc<EmbeddedStore>) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let task = {
        let store = store.clone();
        tokio::spawn(async move { store.snapshot(tx).await.unwrap() })
    };
    let mut bytes = 0u64;
    while let Some(chunk) = rx.recv().await {
        bytes += chunk.len() as u64;
    }
    task.await.unwrap();
    bytes
}

fn main() {
    let objects: usize =
        std::env::var("VERSA_BENCH_BACKUP_OBJECTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path(), Config::default()).unwrap());
    let value = Bytes::from(format!(
        r#"{{"apiVersion":"bench.example.com/v1","kind":"Widget","spec":{{"pad":"{}"}}}}"#,
        "x".repeat(950)
    ));
    rt.block_on(async {
        // Concurrent creates, as many clients would send them: they share group commits.
        for chunk in (0..objects).collect::<Vec<_>>().chunks(1000) {
            let writes: Vec<_> = chunk
                .iter()
                .map(|i| {
                    let (store, value) = (store.clone(), value.clone());
                    let key = format!("/registry/bench/widgets/{i:07}");
                    tokio::spawn(async move { store.create(&key, value).await.unwrap() })
                })
                .collect();
            for w in writes {
                w.await.unwrap();
            }
        }
    });

    // Throughput: the snapshot against a bare read of the same table.
    let started = Instant::now();
    let bytes = rt.block_on(snapshot(&store));
    let ours = bytes as f64 / (1024.0 * 1024.0) / started.elapsed().as_secs_f64();
    drop(store);
    let raw = {
        let db = redb::Database::open(dir.path().join("store.redb")).unwrap();
        let started = Instant::now();
        let txn = db.begin_read().unwrap();
        let mut read = 0u64;
        for entry in txn.open_table(KV).unwrap().iter().unwrap() {
            let (k, v) = entry.unwrap();
            read += (k.value().len() + v.value().len()) as u64;
        }
        read as f64 / (1024.0 * 1024.0) / started.elapsed().as_secs_f64()
    };
    let store = Arc::new(EmbeddedStore::open(dir.path(), Config::default()).unwrap());

    // Gets with and without a snapshot running, for as long as one snapshot takes.
    let (quiet, busy) = rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let getter = tokio::spawn(gets(store.clone(), objects, stop.clone()));
        tokio::time::sleep(started_duration(bytes, ours)).await;
        stop.store(true, Ordering::Relaxed);
        let quiet = getter.await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let getter = tokio::spawn(gets(store.clone(), objects, stop.clone()));
        snapshot(&store).await;
        stop.store(true, Ordering::Relaxed);
        (quiet, getter.await.unwrap())
    });
    let (p99_quiet, p99_busy) = (percentile(&quiet, 0.99), percentile(&busy, 0.99));
    println!("{objects} objects, snapshot of {:.1} MiB", bytes as f64 / (1024.0 * 1024.0));
    println!("{:<34} {:>10} {:>10} {:>7}", "", "versa", "baseline", "ratio");
    println!("{:<34} {:>7.1} MiB/s {:>5.1} MiB/s {:>6.2}", "snapshot vs bare redb read", ours, raw, ours / raw);
    println!(
        "{:<34} {:>8.0} µs {:>8.0} µs {:>6.2}",
        "get p99, snapshot running vs none",
        p99_busy.as_secs_f64() * 1e6,
        p99_quiet.as_secs_f64() * 1e6,
        p99_busy.as_secs_f64() / p99_quiet.as_secs_f64()
    );
}

/// As long as a snapshot of `bytes` at `mib_per_s` takes.
fn started_duration(bytes: u64, mib_per_s: f64) -> Duration {
    Duration::from_secs_f64((bytes as f64 / (1024.0 * 1024.0) / mib_per_s).max(0.5))
}
