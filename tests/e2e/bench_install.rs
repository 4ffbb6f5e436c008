//! Install time of thousands of distinct definitions (issue 41, target 2), run by
//! `hack/bench-install.sh`: N (default 2,000, `VERSA_BENCH_DEFINITIONS`) distinct definitions —
//! the published CRDs of `../shared/conformance/crds/`, each copy in a group of its own with
//! schemas of its own — written as files and created by one `kubectl apply --server-side` against
//! a real `versa serve` (embedded storage, standalone). Printed: how long the apply took, how
//! long until every definition was discoverable (served only once Established), and how long
//! `kubectl api-resources` and `kubectl explain` of one of them take then, each with a fresh
//! discovery cache, against the targets (10 s; 1 s). Not a test: numbers vary with the machine.
//!
//! `VERSA_BENCH_INSTALL_INPUT=list` gives kubectl the same definitions as one JSON `List` file
//! instead of a file each (kubectl then checks the list client-side against `/openapi/v2`, as it
//! does for any `List` with `--validate=strict`, its default); `=yaml`, as one YAML stream of
//! documents (as projects publish them). `VERSA_KUBECTL` names the kubectl.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;
#[path = "corpus.rs"]
mod corpus;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use client::Client;
use serde_json::Value;

/// CPU seconds from `/proc/<pid>/stat`: the process's own, or (`children`) what its waited-for
/// children used (kubectl, once it has exited). Clock ticks of 1/100 s, as Linux reports them.
fn cpu_seconds(pid: &str, children: bool) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let at = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime, stime are fields 14 and 15 of stat (11 and 12 here); cutime, cstime 16 and 17.
    if children { (at(13) + at(14)) / 100.0 } else { (at(11) + at(12)) / 100.0 }
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
    let n = versa_e2e::env_count("VERSA_BENCH_DEFINITIONS", 2000);
    let published = corpus::read(&corpus::conformance_dir());
    assert!(!published.is_empty(), "no CRDs in {}", corpus::conformance_dir().display());
    let tmp = tempfile::tempdir().unwrap();
    let files = tmp.path().join("definitions");
    std::fs::create_dir(&files).unwrap();
    let input = std::env::var("VERSA_BENCH_INSTALL_INPUT").unwrap_or_default();
    let (as_list, as_yaml) = (input == "list", input == "yaml");
    let mut bytes = 0;
    let mut items = Vec::new();
    for i in 0..n {
        let crd = corpus::replica(&published[i % published.len()].1, i, true);
        let text = serde_json::to_vec(&crd).unwrap();
        bytes += text.len();
        if as_list || as_yaml {
            items.push(crd);
        } else {
            std::fs::write(files.join(format!("{i:05}.json")), text).unwrap();
        }
    }
    if as_list {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        std::fs::write(files.join("definitions.json"), serde_json::to_vec(&list).unwrap()).unwrap();
    } else if as_yaml {
        let docs: Vec<String> = items.iter().map(|crd| serde_saphyr::to_string(crd).unwrap()).collect();
        std::fs::write(files.join("definitions.yaml"), docs.join("---\n")).unwrap();
    }
    println!(
        "{n} distinct definitions, {:.1} MiB of JSON ({} KiB each on average), {}",
        bytes as f64 / 1048576.0,
        bytes / n / 1024,
        if as_list {
            "as one JSON List"
        } else if as_yaml {
            "as one YAML stream"
        } else {
            "a JSON file each"
        }
    );

    let data = tmp.path().join("data");
    let versa = versa_e2e::Versa::start(&data);
    let versa_pid = versa.child.id().to_string();
    let kubeconfig = versa.kubeconfig();
    let c = Client::admin(&data, &versa.address);

    let (versa_before, kubectl_before) = (cpu_seconds(&versa_pid, false), cpu_seconds("self", true));
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
    let versa_cpu = cpu_seconds(&versa_pid, false) - versa_before;
    let kubectl_cpu = cpu_seconds("self", true) - kubectl_before;
    println!(
        "kubectl apply --server-side: {applied:.1} s (CPU: versa {versa_cpu:.1} s, {:.1} ms a definition; kubectl itself {kubectl_cpu:.1} s)",
        versa_cpu * 1000.0 / n as f64
    );
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
