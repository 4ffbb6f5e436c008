//! Encryption at rest's cost (issue 38): durable creates of 1 KiB objects from 32 writers into
//! the embedded store, with and without an [`EncryptedStore`] (aesgcm, aescbc, secretbox) in front
//! of it, and gets of them — each beside the plain store in the same run, printed with ratios.
//!
//! Run: `cargo bench -p versa-storage-encryption` (or `hack/bench-storage.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use versa_storage::Store;
use versa_storage_embedded::{Config, EmbeddedStore};
use versa_storage_encryption::EncryptedStore;

const RUN: Duration = Duration::from_secs(3);
const WRITERS: usize = 32;
const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

fn store(dir: &std::path::Path, provider: Option<&str>) -> Arc<dyn Store> {
    let inner: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir, Config::default()).unwrap());
    let Some(provider) = provider else { return inner };
    let config = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [\"*.*\"]\n  providers:\n  - {provider}:\n      keys: [{{name: k, secret: {KEY}}}]\n"
    );
    Arc::new(EncryptedStore::new(inner, "/registry", &versa_storage_encryption::parse(&config).unwrap()))
}

/// Creates per second from 32 writers for [`RUN`]; then the p50 of a get.
async fn measure(store: Arc<dyn Store>) -> (f64, Duration) {
    let value = Bytes::from(format!("{{\"kind\":\"Secret\",\"data\":{{\"k\":\"{}\"}}}}", "x".repeat(1000)));
    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (store, value) = (store.clone(), value.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0usize;
            while started.elapsed() < RUN {
                store.create(&format!("/registry/g/things/{w:02}-{n:07}"), value.clone()).await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let mut total = 0;
    for w in writers {
        total += w.await.unwrap();
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let mut gets = Vec::new();
    for i in 0..2000 {
        let started = Instant::now();
        store.get(&format!("/registry/g/things/{:02}-{:07}", i % WRITERS, i / WRITERS)).await.unwrap().unwrap();
        gets.push(started.elapsed());
    }
    gets.sort();
    (rate, gets[gets.len() / 2])
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let plain_dir = tempfile::tempdir().unwrap();
    let (plain_rate, plain_get) = rt.block_on(measure(store(plain_dir.path(), None)));
    println!(
        "{:<24} {:>10} {:>10} {:>7} {:>10} {:>10} {:>7}",
        "", "creates/s", "plain", "ratio", "get p50", "plain", "ratio"
    );
    for provider in ["aesgcm", "aescbc", "secretbox"] {
        let dir = tempfile::tempdir().unwrap();
        let (rate, get) = rt.block_on(measure(store(dir.path(), Some(provider))));
        println!(
            "{:<24} {:>10.0} {:>10.0} {:>7.2} {:>8.1}µs {:>8.1}µs {:>7.2}",
            format!("{provider}, 32 writers"),
            rate,
            plain_rate,
            rate / plain_rate,
            get.as_secs_f64() * 1e6,
            plain_get.as_secs_f64() * 1e6,
            get.as_secs_f64() / plain_get.as_secs_f64()
        );
    }
}
