//! Side by side with the real kube-apiserver (issue 34), run by `hack/bench-kube.sh`: the control
//! plane of `kube_plane.rs` with versa installed by its chart, and the published CRDs of
//! `../shared/conformance/crds/` (160 distinct names) installed twice — as CRDs served by
//! kube-apiserver's apiextensions-apiserver, and as versa definitions in renamed groups
//! (`kube_diff.rs`'s pairs) — in the same run.
//!
//! Printed, for each side:
//! - **memory per definition**: the growth of the serving process's `VmRSS` over the install
//!   (kube-apiserver for the CRDs; versa for its definitions), after both have served discovery
//!   and OpenAPI v2 and v3 through kube, divided by the number of definitions; and what the
//!   versa definitions cost kube-apiserver itself (aggregated discovery and OpenAPI);
//! - **time until all are Established and served** through kube (each collection answering);
//! - **latency through kube-apiserver** (as users reach both), over one kept-alive kube-rs
//!   client: CREATE, GET and LIST (of 200 objects), p50 and p99 of each, of one definition
//!   installed on both sides, the two sides taking turns request by request, and their ratios
//!   versa/kube. versa's requests take one more hop (kube's aggregator proxies them).
//!
//! Not a test: numbers vary with the machine; the ratios are the point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark driver")]

#[path = "client.rs"]
mod client;
#[path = "kube_diff.rs"]
#[allow(dead_code, reason = "the benchmark uses the corpus and pairs only")]
mod kube_diff;
#[path = "kube_plane.rs"]
mod kube_plane;

use std::time::{Duration, Instant};

use client::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube_plane::Plane;
use serde_json::{Value, json};

const OBJECTS: usize = 200;
const GETS: usize = 500;
const LISTS: usize = 50;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Discovery and OpenAPI through kube, twice, then a pause: what serving them leaves behind is
/// in every reading.
async fn serve_documents(client: &Client) {
    for _ in 0..2 {
        client.get("/apis").await;
        client
            .get_with("/apis", &[("accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")])
            .await;
        client.get("/openapi/v2").await;
        let paths = client.get("/openapi/v3").await.json();
        if let Some(paths) = paths["paths"].as_object() {
            for (path, _) in paths.iter().filter(|(p, _)| p.starts_with("apis/")) {
                client.get(&format!("/openapi/v3/{path}")).await;
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// Creates `definitions` at `path` and waits until each is Established and its storage
/// version's collection answers through kube; returns the time it took.
async fn install(client: &Client, path: &str, definitions: &[Value]) -> Duration {
    let start = Instant::now();
    for d in definitions {
        let r = client.post(path, d).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    for d in definitions {
        let name = d["metadata"]["name"].as_str().unwrap();
        let spec = &d["spec"];
        let version = spec["versions"].as_array().unwrap().iter().find(|v| v["storage"] == true).unwrap();
        let collection = format!(
            "/apis/{}/{}/{}",
            spec["group"].as_str().unwrap(),
            version["name"].as_str().unwrap(),
            spec["names"]["plural"].as_str().unwrap()
        );
        loop {
            let def = client.get(&format!("{path}/{name}")).await.json();
            if kube_diff::established(&def) && client.get(&collection).await.status == 200 {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(600), "{name} not served within 10 minutes");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    start.elapsed()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// p50 and p99 (ms) of a sample.
fn summary(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    (quantile(&ms, 0.5), quantile(&ms, 0.99))
}

/// CREATE, GET and LIST latencies through kube of the widgets of each API in `apis`, the APIs
/// taking turns request by request (so that whatever else the machine or kube-apiserver does
/// meanwhile falls on both alike): for each API, `[create, get, list]` as (p50, p99) in ms.
async fn latencies(apis: &[Api<DynamicObject>; 2], groups: [&str; 2]) -> [[(f64, f64); 3]; 2] {
    let mut samples: [[Vec<f64>; 3]; 2] = Default::default();
    let time = async |f: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>| {
        let start = Instant::now();
        f.await;
        start.elapsed().as_secs_f64() * 1000.0
    };
    for i in 0..OBJECTS {
        for (side, api) in apis.iter().enumerate() {
            let obj: DynamicObject = serde_json::from_value(json!({
                "apiVersion": format!("{}/v1", groups[side]), "kind": "Widget",
                "metadata": {"name": format!("w{i:04}")},
                "spec": {"size": "large", "replicas": 3, "labels": {"app": "bench", "tier": "web"}},
            }))
            .unwrap();
            samples[side][0]
                .push(time(Box::pin(async { drop(api.create(&PostParams::default(), &obj).await.unwrap()) })).await);
        }
    }
    for i in 0..GETS {
        for (side, api) in apis.iter().enumerate() {
            let name = format!("w{:04}", i % OBJECTS);
            samples[side][1].push(time(Box::pin(async { drop(api.get(&name).await.unwrap()) })).await);
        }
    }
    for _ in 0..LISTS {
        for (side, api) in apis.iter().enumerate() {
            samples[side][2].push(
                time(Box::pin(async {
                    assert_eq!(api.list(&ListParams::default()).await.unwrap().items.len(), OBJECTS)
                }))
                .await,
            );
        }
    }
    samples.map(|verbs| verbs.map(summary))
}

fn widget_definition(api_version: &str, kind: &str, group: &str) -> Value {
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "size": {"type": "string", "enum": ["small", "large"]},
                         "replicas": {"type": "integer", "minimum": 0, "default": 1},
                         "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}}]},
    })
}

fn main() {
    let plane = Plane::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = plane.admin_client();
        let (kube_pid, versa_pid) = (plane.apiserver_pid(), plane.versa_pid());
        let pairs: Vec<(Value, Value)> = kube_diff::corpus_pairs();
        let n = pairs.len() as u64;
        let json_bytes: usize = pairs.iter().map(|(k, _)| k.to_string().len()).sum();

        // Latency through kube, one definition on each side, before the corpus is installed.
        client.post("/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})).await;
        let kube_group = "bench.example.com";
        let versa_group = "vbench.example.com";
        let crd = widget_definition("apiextensions.k8s.io/v1", "CustomResourceDefinition", kube_group);
        let rd = widget_definition("versa.dev/v1", "ResourceDefinition", versa_group);
        install(&client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &[crd]).await;
        install(&client, "/apis/versa.dev/v1/resourcedefinitions", &[rd]).await;
        let kubeconfig = kube::config::Kubeconfig::read_from(&plane.admin).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
        let kube_client = kube::Client::try_from(config).unwrap();
        let api = |group: &str| {
            let resource = ApiResource {
                group: group.into(),
                version: "v1".into(),
                api_version: format!("{group}/v1"),
                kind: "Widget".into(),
                plural: "widgets".into(),
            };
            Api::<DynamicObject>::namespaced_with(kube_client.clone(), "bench", &resource)
        };
        // A few requests each first: connections, caches and discovery warmed on both sides.
        for group in [kube_group, versa_group] {
            for _ in 0..20 {
                api(group).list(&ListParams::default()).await.unwrap();
            }
        }
        let [k, v] = latencies(&[api(kube_group), api(versa_group)], [kube_group, versa_group]).await;
        for (i, verb) in ["CREATE", "GET", "LIST 200"].iter().enumerate() {
            println!(
                "{verb:<9} through kube: CRD p50 {:.2} ms p99 {:.2} ms | versa p50 {:.2} ms p99 {:.2} ms | versa/kube p50 {:.2}x p99 {:.2}x",
                k[i].0,
                k[i].1,
                v[i].0,
                v[i].1,
                v[i].0 / k[i].0,
                v[i].1 / k[i].1
            );
        }
        serve_documents(&client).await;
        let (kube0, versa0) = (rss_kib(kube_pid), rss_kib(versa_pid));
        let kube_defs: Vec<Value> = pairs.iter().map(|(k, _)| k.clone()).collect();
        let t_kube = install(&client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &kube_defs).await;
        serve_documents(&client).await;
        let kube1 = rss_kib(kube_pid);
        let versa_defs: Vec<Value> = pairs.iter().map(|(_, v)| v.clone()).collect();
        let t_versa = install(&client, "/apis/versa.dev/v1/resourcedefinitions", &versa_defs).await;
        serve_documents(&client).await;
        let (kube2, versa2) = (rss_kib(kube_pid), rss_kib(versa_pid));

        let per = |kib: u64| kib as f64 / n as f64;
        let avg_json_kib = json_bytes as f64 / n as f64 / 1024.0;
        println!("kube-bench: {n} published CRDs, {avg_json_kib:.1} KiB of JSON each on average");
        println!(
            "memory per definition: kube-apiserver (CRDs) {:.0} KiB ({:.1}x its JSON), versa (definitions) {:.0} KiB ({:.1}x); versa {:.2}x kube",
            per(kube1.saturating_sub(kube0)),
            per(kube1.saturating_sub(kube0)) / avg_json_kib,
            per(versa2.saturating_sub(versa0)),
            per(versa2.saturating_sub(versa0)) / avg_json_kib,
            per(versa2.saturating_sub(versa0)) / per(kube1.saturating_sub(kube0)).max(1.0),
        );
        println!(
            "  kube-apiserver's own growth for versa's definitions (aggregated discovery, OpenAPI): {:.0} KiB per definition",
            per(kube2.saturating_sub(kube1))
        );
        println!(
            "  RSS: kube-apiserver {} -> {} -> {} MiB, versa {} -> {} MiB",
            kube0 / 1024,
            kube1 / 1024,
            kube2 / 1024,
            versa0 / 1024,
            versa2 / 1024
        );
        println!(
            "time until all Established and served through kube: CRDs {:.1} s, versa {:.1} s ({:.2}x)",
            t_kube.as_secs_f64(),
            t_versa.as_secs_f64(),
            t_versa.as_secs_f64() / t_kube.as_secs_f64()
        );

    });
    plane.shutdown();
}
