//! `versa diff`'s findings (`versa_apiextensions::diff`), case by case from
//! `tests/data/diff/cases.yaml`: two definitions built from one base, and every finding expected,
//! in order, with its class, version, path and rule (and, where given, its exact text).

#![allow(clippy::unwrap_used, clippy::panic, reason = "a test runner fails loudly")]

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_apiextensions::diff::{Finding, diff};

#[derive(Deserialize)]
struct File {
    base: Value,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    old: Side,
    new: Side,
    expect: Vec<String>,
    #[serde(default)]
    messages: Vec<String>,
}

#[derive(Deserialize, Default)]
struct Side {
    /// Properties of the objects' `spec` in version v1's schema.
    spec: Option<Value>,
    /// A JSON merge patch on the whole definition.
    patch: Option<Value>,
}

fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let obj = target.as_object_mut().unwrap();
    for (k, v) in patch {
        if v.is_null() {
            obj.remove(k);
        } else {
            merge_patch(obj.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn definition(base: &Value, side: &Side) -> ResourceDefinition {
    let mut doc = base.clone();
    if let Some(spec) = &side.spec {
        doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = spec.clone();
    }
    if let Some(patch) = &side.patch {
        merge_patch(&mut doc, patch);
    }
    ResourceDefinition::from_document(&doc).unwrap()
}

/// A finding as the case file writes it: `<class> [<version>] <path> <rule>`.
fn short(f: &Finding) -> String {
    match &f.version {
        Some(v) => format!("{} {v} {} {}", f.class.name(), f.path, f.rule),
        None => format!("{} {} {}", f.class.name(), f.path, f.rule),
    }
}

#[test]
fn diff_cases() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/diff/cases.yaml");
    let file: File = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut failures = Vec::new();
    for case in &file.cases {
        let findings = diff(&definition(&file.base, &case.old), &definition(&file.base, &case.new));
        let got: Vec<String> = findings.iter().map(short).collect();
        if got != case.expect {
            failures.push(format!("{}:\n  expected {:#?}\n  got {:#?}", case.name, case.expect, got));
            continue;
        }
        let texts: Vec<String> = findings.iter().map(ToString::to_string).collect();
        if !case.messages.is_empty() && texts != case.messages {
            failures.push(format!("{}:\n  expected {:#?}\n  got {:#?}", case.name, case.messages, texts));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), file.cases.len(), failures.join("\n"));
}
