//! Every pruning, defaulting, nullable and validation example of the seed documents, run
//! through the write pipeline (`pipeline::admit`). The cases are data: `tests/data/seeds/*.yaml`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::PathBuf;

use serde_json::Value;
use versa_schema::Structural;
use versa_schema::pipeline::{self, ResourceKind};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/seeds")
}

#[test]
fn seed_examples() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seed fixtures found");
    let mut failures = Vec::new();
    let mut ran = 0;
    for file in &files {
        let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let schema = Structural::from_json(&doc["schema"]).unwrap();
        let k = &doc["kind"];
        let kind = ResourceKind {
            group: k["group"].as_str().unwrap(),
            version: k["version"].as_str().unwrap(),
            kind: k["kind"].as_str().unwrap(),
            namespaced: k["namespaced"].as_bool().unwrap(),
            name_rule: versa_schema::names::name_is_dns_subdomain,
        };
        for case in doc["cases"].as_array().unwrap() {
            ran += 1;
            let name = format!("{}: {}", file.file_name().unwrap().to_string_lossy(), case["name"].as_str().unwrap());
            let mut obj = case["input"].clone();
            let got = pipeline::admit(&mut obj, &schema, &kind);
            match (got, case.get("errors")) {
                (Ok(admitted), None) => {
                    if obj != case["output"] {
                        failures.push(format!("{name}\n  want {}\n  got  {}", case["output"], obj));
                    }
                    let want_unknown: Vec<String> = serde_json::from_value(case["unknown"].clone()).unwrap_or_default();
                    if admitted.unknown_fields != want_unknown {
                        failures.push(format!(
                            "{name}\n  want unknown {want_unknown:?}\n  got  {:?}",
                            admitted.unknown_fields
                        ));
                    }
                }
                (Ok(_), Some(errors)) => {
                    failures.push(format!("{name}\n  want errors {errors}\n  got  success: {obj}"))
                }
                (Err(errs), Some(errors)) => {
                    let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
                    let want: Vec<String> = serde_json::from_value(errors.clone()).unwrap();
                    if got != want {
                        failures.push(format!("{name}\n  want {want:#?}\n  got  {got:#?}"));
                    }
                }
                (Err(errs), None) => failures.push(format!("{name}\n  want success\n  got  {}", errs.aggregate())),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {ran} seed cases failed:\n{}", failures.len(), failures.join("\n"));
}
