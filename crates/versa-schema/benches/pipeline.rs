//! Throughput of the schema side of the write pipeline (default → prune → coerce metadata →
//! validate), printed next to serde_json parsing the same bytes, measured in the same run.
//!
//! Target (issue: schema engine): parsing + pipeline together reach at least 0.67 of the
//! throughput of parsing alone, i.e. the pipeline costs no more than half of what parsing costs.
//! Two corpora: 1,000 CronTab-like objects, and objects of a deeply nested schema.
//!
//! Run: `cargo bench -p versa-schema` (prints MB/s and the ratio; not a test, asserts nothing).

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use versa_schema::Structural;
use versa_schema::pipeline::{self, ResourceKind};

fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["image"],
                "properties": {
                    "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$", "default": "5 0 * * *"},
                    "image": {"type": "string", "minLength": 1, "maxLength": 256},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "concurrency": {"type": "string", "enum": ["Allow", "Forbid", "Replace"], "default": "Allow"},
                    "suspend": {"type": "boolean"},
                    "env": {
                        "type": "array", "maxItems": 64,
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {
                            "name": {"type": "string", "maxLength": 63},
                            "value": {"type": "string"}
                        }}
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "resources": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
                }
            },
            "status": {
                "type": "object",
                "properties": {
                    "lastScheduleTime": {"type": "string", "format": "date-time"},
                    "active": {"type": "integer", "minimum": 0}
                }
            }
        }
    })
}

fn crontab(i: usize) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {
            "name": format!("cron-{i}"),
            "namespace": "default",
            "labels": {"app": "cron", "tier": format!("t{}", i % 7)},
            "annotations": {"example.com/owner": "team-a"}
        },
        "spec": {
            "cronSpec": "*/5 * * * *",
            "image": format!("registry.example.com/cron/image-{i}:v1.2.3"),
            "replicas": 1 + (i % 10) as i64,
            "env": (0..8).map(|j| json!({"name": format!("VAR_{j}"), "value": format!("value-{i}-{j}")})).collect::<Vec<_>>(),
            "tags": ["a", "b", format!("c{i}")],
            "resources": {"cpu": "500m", "memory": 1024, "pods": 3},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            "unknownField": {"dropped": true}
        },
        "status": {"lastScheduleTime": "2026-11-21T10:00:00Z", "active": 2}
    })
}

/// A schema `depth` objects deep, each level with a couple of scalar siblings.
fn nested_schema(depth: usize) -> Value {
    let mut s = json!({"type": "object", "properties": {"leaf": {"type": "string", "maxLength": 32}}});
    for _ in 0..depth {
        s = json!({"type": "object", "properties": {
            "child": s,
            "n": {"type": "integer", "minimum": 0, "default": 0},
            "s": {"type": "string", "pattern": "^[a-z]+$"}
        }});
    }
    json!({"type": "object", "properties": {"spec": s}})
}

fn nested(i: usize, depth: usize) -> Value {
    let mut v = json!({"leaf": format!("leaf-{i}")});
    for d in 0..depth {
        v = json!({"child": v, "n": d, "s": "abc"});
    }
    json!({"apiVersion": "deep.example.com/v1", "kind": "Deep", "metadata": {"name": format!("deep-{i}"), "namespace": "default"}, "spec": v})
}

/// Runs `f` repeatedly for about `budget`, returning the mean time per call.
fn time(budget: Duration, mut f: impl FnMut()) -> Duration {
    f(); // warm up
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < budget {
        f();
        n += 1;
    }
    start.elapsed() / n.max(1)
}

fn run(name: &str, schema: &Value, objects: &[Value], kind: &ResourceKind<'_>) {
    let schema = match Structural::from_json(schema) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{name}: cannot lower schema: {e}");
            return;
        }
    };
    let docs: Vec<Vec<u8>> = objects.iter().map(|o| serde_json::to_vec(o).unwrap_or_default()).collect();
    let bytes: usize = docs.iter().map(Vec::len).sum();
    // Sanity: the corpus must be valid, or the benchmark would time error paths.
    for d in &docs {
        let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
        if let Err(errs) = pipeline::admit(&mut v, &schema, kind) {
            eprintln!("{name}: corpus object rejected: {}", errs.aggregate());
            return;
        }
    }
    let budget = Duration::from_secs(2);
    let parse = time(budget, || {
        for d in &docs {
            let v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
            black_box(v);
        }
    });
    let both = time(budget, || {
        for d in &docs {
            let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
            let r = pipeline::admit(&mut v, &schema, kind);
            black_box((v, r.is_ok()));
        }
    });
    let mbps = |t: Duration| bytes as f64 / t.as_secs_f64() / 1e6;
    if std::env::var_os("VERSA_BENCH_STAGES").is_some() {
        stages(&schema, &docs, kind, budget);
    }
    let pipeline_only = both.saturating_sub(parse);
    println!(
        "{name}: {} objects, {:.1} KiB | parse {:.1} MB/s | parse+pipeline {:.1} MB/s | pipeline alone {:.1} MB/s | ratio (parse+pipeline)/parse = {:.2} (target >= 0.67) | pipeline/parse cost = {:.2} (target <= 0.50)",
        docs.len(),
        bytes as f64 / 1024.0,
        mbps(parse),
        mbps(both),
        mbps(pipeline_only.max(Duration::from_nanos(1))),
        mbps(both) / mbps(parse),
        pipeline_only.as_secs_f64() / parse.as_secs_f64(),
    );
}

/// The cost of each stage (set VERSA_BENCH_STAGES=1): parse followed by the pipeline cut after
/// stage N, minus the same cut after stage N-1.
fn stages(schema: &Structural, docs: &[Vec<u8>], kind: &ResourceKind<'_>, budget: Duration) {
    use versa_schema::{listtype, metadata, objectmeta, validation};
    let names = ["normalise", "object metadata", "values", "embedded resources", "list types"];
    let mut prev = time(budget, || {
        for d in docs {
            black_box(serde_json::from_slice::<Value>(d).unwrap_or(Value::Null));
        }
    });
    for (n, name) in names.iter().enumerate() {
        let t = time(budget, || {
            for d in docs {
                let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
                let _ = pipeline::normalise(&mut v, schema, objectmeta::Malformed::Reject);
                if n >= 1 {
                    let meta = v.get("metadata").cloned().unwrap_or(Value::Null);
                    black_box(metadata::validate_object_meta(
                        &meta,
                        &versa_schema::Path::new("metadata"),
                        Some(kind.namespaced),
                    ));
                }
                if n >= 2 {
                    black_box(validation::validate(schema, &v));
                }
                if n >= 3 {
                    black_box(metadata::validate_embedded_resources(&v, schema, &versa_schema::Path::none()));
                }
                if n >= 4 {
                    black_box(listtype::validate_list_set_and_map(schema, &v, &versa_schema::Path::none()));
                }
                black_box(v);
            }
        });
        println!("  stage {name}: {:?} per corpus", t.saturating_sub(prev));
        prev = t;
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing useful either way.
    let crontabs: Vec<Value> = (0..1000).map(crontab).collect();
    let kind = ResourceKind { group: "stable.example.com", version: "v1", kind: "CronTab", namespaced: true };
    run("crontab x1000", &crontab_schema(), &crontabs, &kind);

    let depth = 40;
    let deep: Vec<Value> = (0..1000).map(|i| nested(i, depth)).collect();
    let kind = ResourceKind { group: "deep.example.com", version: "v1", kind: "Deep", namespaced: true };
    run(&format!("nested depth {depth} x1000"), &nested_schema(depth), &deep, &kind);
}
