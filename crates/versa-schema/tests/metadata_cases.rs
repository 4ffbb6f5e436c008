//! Runs `tests/data/metadata/*.yaml`: root metadata and embedded resources, with the exact
//! field error texts.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a malformed case file should fail loudly"
)]

mod common;

use serde_json::{Value, json};
use versa_schema::Path;
use versa_schema::metadata;
use versa_schema::structural::Structural;

fn texts(errs: &versa_schema::ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn object_meta_table() {
    let cases = common::load("metadata", "object_meta.yaml");
    let mut failures = Vec::new();
    for case in cases.as_array().expect("a list of cases") {
        let name = case["case"].as_str().expect("case");
        let meta = common::expand_value(&case["metadata"]);
        let namespaced = case["namespaced"].as_bool();
        let got = texts(&metadata::validate_object_meta(&meta, &Path::new("metadata"), namespaced));
        let want = common::str_list(&case["errors"]);
        if got != want {
            failures.push(format!("{name}:\n  got  {got:#?}\n  want {want:#?}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn embedded_resource_table() {
    let cases = common::load("metadata", "embedded_resource.yaml");
    let mut failures = Vec::new();
    let path = Path::new("spec").child("template");
    for case in cases.as_array().expect("a list of cases") {
        let name = case["case"].as_str().expect("case");
        let obj = common::expand_value(&case["object"]);
        let got = texts(&metadata::validate_embedded_resource(&obj, &path));
        let want = common::str_list(&case["errors"]);
        if got != want {
            failures.push(format!("{name}:\n  got  {got:#?}\n  want {want:#?}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The walker finds embedded resources under properties, items and additionalProperties.
#[test]
fn embedded_resources_are_found_along_the_schema() {
    let root = Structural::from_json(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "list": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}
    }}}}))
    .unwrap();
    let obj: Value =
        json!({"spec": {"template": {"kind": "K"}, "list": [{"apiVersion": "v1", "kind": "K"}, {"apiVersion": "v1"}]}});
    let got = texts(&metadata::validate_embedded_resources(&obj, &root, &Path::none()));
    assert_eq!(got, vec!["spec.list[1].kind: Required value", "spec.template.apiVersion: Required value"]);
}
