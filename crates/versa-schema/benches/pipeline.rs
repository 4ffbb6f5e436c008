//! Throughput of the schema side of the write pipeline (default → prune → coerce metadata →
//! validate, `pipeline::admit`), printed next to serde_json parsing the same bytes, both timed
//! in interleaved rounds of the same run.
//!
//! Target (issue: schema engine): parsing + pipeline together reach at least 0.67 of the
//! throughput of parsing alone, i.e. the pipeline costs no more than half of what parsing costs.
//! Two corpora: 1,000 CronTab-like objects, and objects of a deeply nested schema.
//!
//! Run: `cargo bench -p versa-schema` (prints MB/s and the ratio; not a test, asserts nothing).

use std::hint::black_box;
use std::time::Duration;

#[path = "support/rounds.rs"]
mod rounds;
use rounds::time;

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
    // What the server's write path does with a request body: parse it, then admit it (default
    // → prune → coerce metadata → validate). Both sides drop the object at the end.
    let [parse, both] = time(
        Duration::from_secs(4),
        [
            &mut || {
                for d in &docs {
                    let v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
                    black_box(v);
                }
            },
            &mut || {
                for d in &docs {
                    let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
                    let r = pipeline::admit(&mut v, &schema, kind);
                    black_box((v, r.is_ok()));
                }
            },
        ],
    );
    let mbps = |t: Duration| bytes as f64 / t.as_secs_f64() / 1e6;
    if std::env::var_os("VERSA_BENCH_STAGES").is_some() {
        stages(&schema, &docs, kind);
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

/// The cost of the stages (set VERSA_BENCH_STAGES=1). `admit` is one walk that defaults,
/// prunes, coerces and validates node by node; `normalise` is the same walk without
/// validation, so the difference is what validation adds to it (object metadata included).
/// Then each check on its own, as a separate walk over the admitted objects (what it would
/// cost outside the single walk — an upper bound of its share).
fn stages(schema: &Structural, docs: &[Vec<u8>], kind: &ResourceKind<'_>) {
    use versa_schema::{Path, listtype, metadata, objectmeta, validation};
    let [parse, normalise, admit] = time(
        Duration::from_secs(3),
        [
            &mut || {
                for d in docs {
                    black_box(serde_json::from_slice::<Value>(d).unwrap_or(Value::Null));
                }
            },
            &mut || {
                for d in docs {
                    let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
                    let r = pipeline::normalise(&mut v, schema, objectmeta::Malformed::Reject);
                    black_box((v, r.is_ok()));
                }
            },
            &mut || {
                for d in docs {
                    let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
                    let r = pipeline::admit(&mut v, schema, kind);
                    black_box((v, r.is_ok()));
                }
            },
        ],
    );
    println!("  stage normalise (default, prune, coerce): {:?} per corpus", normalise.saturating_sub(parse));
    println!(
        "  stage validation in the walk, object metadata included: {:?} per corpus",
        admit.saturating_sub(normalise)
    );
    let admitted: Vec<Value> = docs
        .iter()
        .map(|d| {
            let mut v: Value = serde_json::from_slice(d).unwrap_or(Value::Null);
            let _ = pipeline::admit(&mut v, schema, kind);
            v
        })
        .collect();
    let meta_path = Path::new("metadata");
    let [object_meta, values, embedded, list_types] = time(
        Duration::from_secs(3),
        [
            &mut || {
                for v in &admitted {
                    let meta = v.get("metadata").unwrap_or(&Value::Null);
                    black_box(metadata::validate_object_meta(meta, &meta_path, Some(kind.namespaced)));
                }
            },
            &mut || {
                for v in &admitted {
                    black_box(validation::validate(schema, v));
                }
            },
            &mut || {
                for v in &admitted {
                    black_box(metadata::validate_embedded_resources(v, schema, &Path::none()));
                }
            },
            &mut || {
                for v in &admitted {
                    black_box(listtype::validate_list_set_and_map(schema, v, &Path::none()));
                }
            },
        ],
    );
    println!(
        "  each check alone: object metadata {object_meta:?}, values {values:?}, embedded resources {embedded:?}, list types {list_types:?} per corpus"
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing useful either way.
    let crontabs: Vec<Value> = (0..1000).map(crontab).collect();
    let kind = ResourceKind {
        group: "stable.example.com",
        version: "v1",
        kind: "CronTab",
        namespaced: true,
        name_rule: versa_schema::names::name_is_dns_subdomain,
    };
    run("crontab x1000", &crontab_schema(), &crontabs, &kind);

    let depth = 40;
    let deep: Vec<Value> = (0..1000).map(|i| nested(i, depth)).collect();
    let kind = ResourceKind {
        group: "deep.example.com",
        version: "v1",
        kind: "Deep",
        namespaced: true,
        name_rule: versa_schema::names::name_is_dns_subdomain,
    };
    run(&format!("nested depth {depth} x1000"), &nested_schema(depth), &deep, &kind);
}
