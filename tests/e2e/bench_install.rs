//! Install time of thousands of distinct definitions (issue 41, target 2), run by
//! `hack/bench-install.sh`: N (default 2,000, `VERSA_BENCH_DEFINITIONS`) distinct definitions —
//! the published CRDs of `../shared/conformance/crds/`, each copy in a group of its own with
//! schemas of its own — written as files and created by one `kubectl apply --server-side` against
//! a real `versa serve` (embedded storage, standalone). Printed: how long the apply took, how
//! long until every definition was discoverable (served only once Established), and how long
//! `kubectl api-resources` and `kubectl explain` of one of them take then, each with a fresh
//! discovery cache, against the targets (10 s; 1 s). Not a test: numbers vary with the machine.

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

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `versa serve` built next to this benchmark (or `VERSA_BENCH_BIN`); its address.
fn start(data_dir: &Path) -> (Server, String) {
    let versa = std::env::var_os("VERSA_BENCH_BIN").map_or_else(versa_e2e::versa_bin, PathBuf::from);
    let mut child = Command::new(&versa)
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
    (Server(child), address)
}

/// How many of the copies' groups (`g0000.` …) aggregated discovery lists.
async fn discoverable(c: &Client) -> usize {
    let r = c
        .get_with("/apis", &[("accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")])
        .await;
    let doc: Value = r.json();
    doc["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| {
            g["metadata"]["name"].as_str().is_some_and(|n| n.starts_with('g') && n.as_bytes().get(5) == Some(&b'.'))
        })
        .map(|g| g["versions"][0]["resources"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Runs kubectl with a discovery cache of its own (fresh), and returns how long it took.
fn kubectl_timed(kubeconfig: &Path, cache: &Path, args: &[&str]) -> f64 {
    let started = Instant::now();
    let out = Command::new(std::env::var("VERSA_KUBECTL").unwrap_or_else(|_| "kubectl".into()))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    seconds
}

fn verdict(seconds: f64, target: f64) -> &'static str {
    if seconds < target { "met" } else { "not met" }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::var("VERSA_BENCH_DEFINITIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let published = corpus::read(&corpus::conformance_dir());
    assert!(!published.is_empty(), "no CRDs in {}", corpus::conformance_dir().display());
    let tmp = tempfile::tempdir().unwrap();
    let files = tmp.path().join("definitions");
    std::fs::create_dir(&files).unwrap();
    let mut bytes = 0;
    for i in 0..n {
        let crd = corpus::replica(&published[i % published.len()].1, i, true);
        let text = serde_json::to_vec(&crd).unwrap();
        bytes += text.len();
        std::fs::write(files.join(format!("{i:05}.json")), text).unwrap();
    }
    println!(
        "{n} distinct definitions, {:.1} MiB of JSON ({} KiB each on average)",
        bytes as f64 / 1048576.0,
        bytes / n / 1024
    );

    let data = tmp.path().join("data");
    let (_server, address) = start(&data);
    let kubeconfig = data.join("admin.kubeconfig");
    let c = Client::admin(&data, &address);

    let started = Instant::now();
    let applied = kubectl_timed(
        &kubeconfig,
        &tmp.path().join("cache-apply"),
        &["apply", "--server-side", "-o", "name", "-f", files.to_str().unwrap()],
    );
    let mut seen = 0;
    while seen < n {
        seen = discoverable(&c).await;
        if started.elapsed() > Duration::from_secs(600) {
            panic!("only {seen} of {n} discoverable after 10 minutes");
        }
        if seen < n {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let all = started.elapsed().as_secs_f64();
    println!("kubectl apply --server-side: {applied:.1} s");
    println!(
        "all {n} Established and discoverable: {all:.1} s after the apply started (target < 10 s: {})",
        verdict(all, 10.0)
    );

    let resources = kubectl_timed(&kubeconfig, &tmp.path().join("cache-resources"), &["api-resources"]);
    println!("kubectl api-resources with {n} loaded: {resources:.2} s (target < 1 s: {})", verdict(resources, 1.0));
    let first = corpus::replica(&published[0].1, 0, true);
    let plural = first["spec"]["names"]["plural"].as_str().unwrap();
    let group = first["spec"]["group"].as_str().unwrap();
    let explained =
        kubectl_timed(&kubeconfig, &tmp.path().join("cache-explain"), &["explain", &format!("{plural}.{group}.spec")]);
    println!(
        "kubectl explain {plural}.{group}.spec with {n} loaded: {explained:.2} s (target < 1 s: {})",
        verdict(explained, 1.0)
    );
}
