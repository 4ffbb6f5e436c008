//! What the converter itself costs per object, without a server around it: batches of 1,000
//! objects as the read path hands them over (pruned and coerced at their stored version,
//! `resourceVersion`, `uid`, labels; with or without the `managedFields` every object written
//! through the API carries), converted by `None` and by `CEL`, in interleaved rounds of the
//! same run.
//!
//! - `widget`: the serving benchmark's definition (`hack/bench-serve.sh conversion`): versions
//!   `v1` and `v2` with one schema, two rules each way copying `spec.image` and
//!   `spec.replicas`, and the round-trip check that keeps what a conversion loses.
//! - `pizza`: the seed's Pizza (`testdata/pizza-cel-definition.yaml`), whose versions differ:
//!   `v1alpha1` toppings as names, `v1beta1` as `{name, quantity}`.
//!
//! Only the conversion is timed (not copying the objects in or freeing the results). Each
//! batch is timed twice: through [`Converter::convert`] (a page of 256 objects or more is
//! converted in two halves at once, as the server does) and one object at a time on one
//! thread (`convert_sync`), which is what a profile of the converter should look at
//! (`perf record` on `cargo bench -p versa-conversion`).
//!
//! Run: `cargo bench -p versa-conversion` (prints µs per object; not a test, asserts nothing
//! about time). `VERSA_BENCH_SECONDS` (3) per row; `VERSA_BENCH_ONLY=widget` or `pizza` for one
//! definition.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a benchmark: failures should be loud")]

use std::hint::black_box;
use std::time::{Duration, Instant};

/// The allocator the versa binary uses, so that what is measured here is what runs.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use serde_json::{Value, json};
use versa_apiextensions::cel_conversion::lower_schemas;
use versa_apiextensions::{ResourceDefinition, set_defaults, validate_definition};
use versa_conversion::{Converter, Options, samples};

const OBJECTS: usize = 1000;

fn main() {
    let budget =
        Duration::from_secs_f64(std::env::var("VERSA_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0));
    // `VERSA_BENCH_ONLY=widget` (or `pizza`) for one definition, e.g. under `perf record`.
    let only = std::env::var("VERSA_BENCH_ONLY").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only == name;
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    println!("## converter: µs per object, batches of {OBJECTS} (median of interleaved rounds)");
    println!();
    println!("| definition | objects | to | None, batch | CEL, batch | CEL, one by one | CEL − None (batch) |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for tracked in [false, true].into_iter().filter(|_| wanted("widget")) {
        let (none, cel) = (widget_definition("None"), widget_definition("CEL"));
        let objects: Vec<Value> = (0..OBJECTS).map(|i| widget(&cel, i, tracked)).collect();
        row(&runtime, budget, "widget", tracked, &none, &cel, &objects, "v2");
    }
    if !wanted("pizza") {
        return;
    }
    let pizza = definition(&yaml("pizza-cel-definition.yaml"));
    let mut none_doc = pizza.to_document();
    none_doc["spec"]["conversion"] = json!({"strategy": "None"});
    let pizza_none = definition(&none_doc);
    let schemas = lower_schemas(&pizza);
    let samples = samples::generate(&pizza, "v1alpha1", &schemas["v1alpha1"], 24);
    for tracked in [false, true] {
        let objects: Vec<Value> = (0..OBJECTS)
            .map(|i| {
                let mut obj = samples[i % samples.len()].clone();
                as_read(&mut obj, i, tracked);
                obj
            })
            .collect();
        row(&runtime, budget, "pizza", tracked, &pizza_none, &pizza, &objects, "v1beta1");
    }
}

#[allow(clippy::too_many_arguments, reason = "one row of the table")]
fn row(
    runtime: &tokio::runtime::Runtime,
    budget: Duration,
    name: &str,
    tracked: bool,
    none: &ResourceDefinition,
    cel: &ResourceDefinition,
    objects: &[Value],
    to: &str,
) {
    let none = converter(none);
    let cel = converter(cel);
    // Only the conversion is timed: not copying the objects in, nor freeing what comes out.
    let batch = |converter: &Converter| {
        let input = objects.to_vec();
        let started = Instant::now();
        let out = runtime.block_on(converter.convert(input, to)).unwrap();
        let took = started.elapsed();
        drop(black_box(out));
        took
    };
    let [n, c, one] = time(
        budget,
        [&mut || batch(&none), &mut || batch(&cel), &mut || {
            let mut took = Duration::ZERO;
            for o in objects {
                let input = o.clone();
                let started = Instant::now();
                let out = cel.convert_sync(input, to).unwrap();
                took += started.elapsed();
                drop(black_box(out));
            }
            took
        }],
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6 / objects.len() as f64;
    let with = if tracked { "with managedFields" } else { "without managedFields" };
    println!("| {name} | {with} | {to} | {:.2} | {:.2} | {:.2} | {:+.2} |", us(n), us(c), us(one), us(c) - us(n));
}

/// Runs each pass (which says how long its timed part took) in interleaved rounds for about
/// `budget`; the median time of each.
fn time<const N: usize>(budget: Duration, mut passes: [&mut dyn FnMut() -> Duration; N]) -> [Duration; N] {
    for pass in passes.iter_mut() {
        pass();
    }
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::new());
    let start = Instant::now();
    while start.elapsed() < budget || samples[0].len() < 5 {
        for (pass, times) in passes.iter_mut().zip(samples.iter_mut()) {
            times.push(pass());
        }
    }
    samples.map(|mut times| {
        times.sort();
        times[times.len() / 2]
    })
}

fn yaml(name: &str) -> Value {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn definition(doc: &Value) -> ResourceDefinition {
    let mut def = ResourceDefinition::from_document(doc).unwrap();
    set_defaults(&mut def);
    let errs = validate_definition(&def);
    assert!(errs.is_empty(), "{}: {}", def.name(), errs.aggregate());
    def
}

fn converter(def: &ResourceDefinition) -> Converter {
    Converter::new(def, lower_schemas(def), &Options::default()).unwrap()
}

/// The serving benchmark's Widget definition, converted by `strategy`.
fn widget_definition(strategy: &str) -> ResourceDefinition {
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                }},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            }}},
        })
    };
    let conversion = match strategy {
        "CEL" => {
            let rules = |from: &str, to: &str| {
                json!({"from": from, "to": to, "fields": [
                    {"path": "spec.image", "expression": "self.?spec.?image"},
                    {"path": "spec.replicas", "expression": "self.?spec.?replicas"},
                ]})
            };
            json!({"strategy": "CEL", "cel": {"conversions": [rules("v1", "v2"), rules("v2", "v1")]}})
        }
        _ => json!({"strategy": "None"}),
    };
    definition(&json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": "widgets.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version("v1", true), version("v2", false)],
            "conversion": conversion,
        },
    }))
}

/// The `i`th Widget at v1, as the read path hands it to the converter.
fn widget(def: &ResourceDefinition, i: usize, tracked: bool) -> Value {
    let mut obj = json!({
        "apiVersion": format!("{}/v1", def.spec.group), "kind": "Widget",
        "metadata": {"name": format!("w-{i:04}"), "labels": {"app": "bench", "bench": "yes"}},
        "spec": {"cronSpec": "*/5 * * * *", "image": "registry.example.com/bench/cron:1.2.3", "replicas": 3},
    });
    as_read(&mut obj, i, tracked);
    obj
}

/// What the server adds to an object it stored: namespace, uid, resourceVersion, generation,
/// creationTimestamp and (`tracked`) the `managedFields` of the create that wrote it.
fn as_read(obj: &mut Value, i: usize, tracked: bool) {
    let api_version = obj["apiVersion"].clone();
    let spec_fields: serde_json::Map<String, Value> =
        obj["spec"].as_object().map(|s| s.keys().map(|k| (format!("f:{k}"), json!({}))).collect()).unwrap_or_default();
    let meta = obj["metadata"].as_object_mut().unwrap();
    meta.insert("namespace".into(), json!("converted"));
    meta.insert("uid".into(), json!(format!("5f0c6d2e-8f1a-4b7e-9c3d-{i:012}")));
    meta.insert("resourceVersion".into(), json!((1000 + i).to_string()));
    meta.insert("generation".into(), json!(1));
    meta.insert("creationTimestamp".into(), json!("2026-11-26T18:22:00Z"));
    if tracked {
        let mut spec = spec_fields;
        spec.insert(".".into(), json!({}));
        meta.insert(
            "managedFields".into(),
            json!([{
                "manager": "bench", "operation": "Update", "apiVersion": api_version,
                "time": "2026-11-26T18:22:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:bench": {}}}, "f:spec": spec},
            }]),
        );
    }
}
