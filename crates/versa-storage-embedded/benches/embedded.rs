//! Embedded-store benchmark: each figure of the store next to a bare redb baseline measured in
//! the same run on the same disk, printed as a ratio (numbers vary by machine; ratios less so).
//!
//! - create, sequential: store creates vs. bare redb single-insert durable commits;
//! - create, 32 concurrent writers: store creates (group commit) vs. bare redb durable commits
//!   of 32 inserts each, of the same keys — the "raw batched write rate" (target: ratio ≥ 0.5;
//!   the store also writes each event to its log, so about twice the bytes);
//! - get and list-1000: store vs. a bare redb read transaction doing the same;
//! - watch delivery: time from issuing a create to the watch receiving its event (target p99
//!   < 5 ms).
//!
//! Run: `cargo bench -p versa-storage-embedded` (or `hack/bench-storage.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{Durability, ReadableDatabase as _, TableDefinition};
use versa_storage::{ListOptions, Store, WatchEvent};
use versa_storage_embedded::{Config, EmbeddedStore};

const RAW: TableDefinition<&str, &[u8]> = TableDefinition::new("raw");
const WRITERS: usize = 32;
const RUN: Duration = Duration::from_secs(3);

fn value() -> Bytes {
    let spec = "x".repeat(900);
    Bytes::from(format!(r#"{{"apiVersion":"stable.example.com/v1","kind":"CronTab","spec":{{"pad":"{spec}"}}}}"#))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Row {
    name: &'static str,
    ours: f64,
    raw: f64,
    unit: &'static str,
    higher_is_better: bool,
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut rows = Vec::new();
    let value = value();

    // ---- bare redb baselines ----
    let raw_dir = tempfile::tempdir().unwrap();
    let db = redb::Database::create(raw_dir.path().join("raw.redb")).unwrap();
    let raw_commit = |keys: &mut dyn Iterator<Item = String>| {
        let mut txn = db.begin_write().unwrap();
        txn.set_durability(Durability::Immediate).unwrap();
        {
            let mut t = txn.open_table(RAW).unwrap();
            for k in keys {
                t.insert(k.as_str(), value.as_ref()).unwrap();
            }
        }
        txn.commit().unwrap();
    };
    let (mut n, start) = (0usize, Instant::now());
    while start.elapsed() < RUN {
        raw_commit(&mut std::iter::once(format!("/raw/seq/{n:09}")));
        n += 1;
    }
    let raw_seq = n as f64 / start.elapsed().as_secs_f64();
    let (mut n, start) = (0usize, Instant::now());
    while start.elapsed() < RUN {
        // The same keys the store's 32 writers produce: one per writer per commit.
        let round = n / WRITERS;
        raw_commit(&mut (0..WRITERS).map(|w| format!("/raw/par/{w:02}/{round:09}")));
        n += WRITERS;
    }
    let raw_batched = n as f64 / start.elapsed().as_secs_f64();
    {
        let mut txn = db.begin_write().unwrap();
        txn.set_durability(Durability::Immediate).unwrap();
        {
            let mut t = txn.open_table(RAW).unwrap();
            for i in 0..1000 {
                t.insert(format!("/raw/list/{i:04}").as_str(), value.as_ref()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let raw_get = time_each(20_000, |_| {
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(RAW).unwrap();
        let v = t.get("/raw/list/0500").unwrap().unwrap();
        std::hint::black_box(Bytes::copy_from_slice(v.value()));
    });
    let raw_list = time_each(300, |_| {
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(RAW).unwrap();
        let items: Vec<(String, Bytes)> = t
            .range("/raw/list/".."/raw/list0")
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.value().to_string(), Bytes::copy_from_slice(v.value()))
            })
            .collect();
        assert_eq!(items.len(), 1000);
    });
    drop(db);

    // ---- the store ----
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path(), Config::default()).unwrap());
    rt.block_on(async {
        let (mut n, start) = (0usize, Instant::now());
        while start.elapsed() < RUN {
            store.create(&format!("/bench/seq/{n:09}"), value.clone()).await.unwrap();
            n += 1;
        }
        let seq = n as f64 / start.elapsed().as_secs_f64();
        rows.push(Row {
            name: "create, 1 writer (ops/s)",
            ours: seq,
            raw: raw_seq,
            unit: "ops/s",
            higher_is_better: true,
        });

        let start = Instant::now();
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let (store, value) = (store.clone(), value.clone());
            tasks.push(tokio::spawn(async move {
                let mut n = 0usize;
                while start.elapsed() < RUN {
                    store.create(&format!("/bench/par/{w:02}/{n:09}"), value.clone()).await.unwrap();
                    n += 1;
                }
                n
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        let par = total as f64 / start.elapsed().as_secs_f64();
        rows.push(Row {
            name: "create, 32 writers (ops/s)",
            ours: par,
            raw: raw_batched,
            unit: "ops/s",
            higher_is_better: true,
        });

        for i in 0..1000 {
            store.create(&format!("/bench/list/{i:04}"), value.clone()).await.unwrap();
        }
        let mut samples = Vec::new();
        for _ in 0..20_000 {
            let t = Instant::now();
            std::hint::black_box(store.get("/bench/list/0500").await.unwrap().unwrap());
            samples.push(t.elapsed());
        }
        samples.sort();
        rows.push(Row {
            name: "get p50 (µs)",
            ours: us(percentile(&samples, 0.5)),
            raw: us(percentile(&raw_get, 0.5)),
            unit: "µs",
            higher_is_better: false,
        });

        let mut samples = Vec::new();
        for _ in 0..300 {
            let t = Instant::now();
            let page = store.list("/bench/list/", ListOptions::default()).await.unwrap();
            assert_eq!(page.items.len(), 1000);
            samples.push(t.elapsed());
        }
        samples.sort();
        for (name, p) in [("list-1000 p50 (µs)", 0.5), ("list-1000 p99 (µs)", 0.99)] {
            rows.push(Row {
                name,
                ours: us(percentile(&samples, p)),
                raw: us(percentile(&raw_list, p)),
                unit: "µs",
                higher_is_better: false,
            });
        }

        let mut watch = store.watch("/bench/watch/", 0).await.unwrap();
        let mut samples = Vec::new();
        for i in 0..2000 {
            let t = Instant::now();
            store.create(&format!("/bench/watch/{i:05}"), value.clone()).await.unwrap();
            loop {
                match watch.next().await.unwrap().unwrap() {
                    WatchEvent::Added(_) => break,
                    _ => continue,
                }
            }
            samples.push(t.elapsed());
        }
        samples.sort();
        println!(
            "watch delivery (create issued → event received): p50 {:.0} µs, p99 {:.0} µs (target p99 < 5000 µs)",
            us(percentile(&samples, 0.5)),
            us(percentile(&samples, 0.99))
        );
    });

    println!();
    println!("| measure | versa embedded | bare redb | ratio |");
    println!("|---|---:|---:|---:|");
    for r in &rows {
        let ratio = if r.higher_is_better { r.ours / r.raw } else { r.raw / r.ours };
        println!("| {} | {:.0} {} | {:.0} {} | {:.2} |", r.name, r.ours, r.unit, r.raw, r.unit, ratio);
    }
    println!("(ratio: versa relative to the bare engine, 1.0 = as fast; creates with 32 writers target ≥ 0.5)");
}

fn time_each(n: usize, mut f: impl FnMut(usize)) -> Vec<Duration> {
    let mut samples: Vec<Duration> = (0..n)
        .map(|i| {
            let t = Instant::now();
            f(i);
            t.elapsed()
        })
        .collect();
    samples.sort();
    samples
}
