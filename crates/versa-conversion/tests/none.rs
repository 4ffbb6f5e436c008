//! The None strategy, driven by `testdata/none-cases.json` on the CronTab definition of the
//! seed (`v1beta1` has `hostPort`, `v1` has `host` and `port`): `apiVersion` changes, then the
//! target schema prunes — so a field renamed between versions is lost, as in Kubernetes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: the test webhook and the case files should fail loudly"
)]

mod support;

use std::collections::HashMap;

use serde_json::Value;
use support::{schemas, testdata};
use versa_apiextensions::ResourceDefinition;
use versa_conversion::{Converter, Options};

#[tokio::test]
async fn none_cases() {
    let def = ResourceDefinition::from_document(&testdata("crontab-none-definition.json")).unwrap();
    let with_schemas = Converter::new(&def, schemas(&def), &Options::default()).unwrap();
    let without_schemas = Converter::new(&def, HashMap::new(), &Options::default()).unwrap();
    assert_eq!(with_schemas.strategy(), "None");
    let mut failures = Vec::new();
    for case in testdata("none-cases.json").as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let converter = if case["schemas"] == false { &without_schemas } else { &with_schemas };
        let objects = case["objects"].as_array().unwrap().clone();
        let result = converter.convert(objects, case["to"].as_str().unwrap()).await;
        match (result, case.get("want"), case["error"].as_str()) {
            (Ok(got), Some(want), _) if Value::Array(got.clone()) == *want => {}
            (Err(e), _, Some(want)) if e.to_string() == want => {}
            (got, want, error) => failures.push(format!("{name}:\n  got  {got:?}\n  want {want:?} / {error:?}")),
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test]
async fn preserve_unknown_fields_keeps_what_the_schema_does_not_know() {
    let mut doc = testdata("crontab-none-definition.json");
    doc["spec"]["preserveUnknownFields"] = Value::Bool(true);
    let def = ResourceDefinition::from_document(&doc).unwrap();
    let converter = Converter::new(&def, schemas(&def), &Options::default()).unwrap();
    let obj = serde_json::json!({"apiVersion": "example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "a"}, "hostPort": "h:1"});
    let got = converter.convert(vec![obj], "v1").await.unwrap();
    assert_eq!(
        got,
        vec![
            serde_json::json!({"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "a"}, "hostPort": "h:1"})
        ]
    );
}
