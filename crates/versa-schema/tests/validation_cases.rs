//! Data-driven value validation and list-type tests: `tests/data/validation/*.yaml`.
//!
//! Each file holds an optional file-wide `schema` (and `path`), then `cases`, each with a
//! `name`, an `object`, the expected `errors` in order (the exact strings kube-apiserver
//! prints; an empty list means valid), and optionally its own `schema`, `path` (the field path
//! the object is found at; default the root) and `check` (`validate`, the default, or
//! `listtype` for `x-kubernetes-list-type` uniqueness).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::path::Path;

use serde_json::Value;
use versa_schema::structural::Structural;
use versa_schema::{Path as FieldPath, listtype, validation};

fn field_path(v: Option<&Value>) -> FieldPath {
    match v.and_then(Value::as_str) {
        Some(p) if !p.is_empty() => FieldPath::from_parts(&p.split('.').collect::<Vec<_>>()),
        _ => FieldPath::none(),
    }
}

#[test]
fn validation_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/validation");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case files in {}", dir.display());

    let (mut ran, mut failures) = (0, Vec::new());
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let doc: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in doc["cases"].as_array().unwrap_or_else(|| panic!("{name}: no cases")) {
            let case_name = case["name"].as_str().unwrap_or("?");
            let schema = case
                .get("schema")
                .or_else(|| doc.get("schema"))
                .unwrap_or_else(|| panic!("{name}/{case_name}: no schema"));
            let schema = Structural::from_json(schema).unwrap_or_else(|e| panic!("{name}/{case_name}: {e}"));
            let path = field_path(case.get("path").or_else(|| doc.get("path")));
            let object = &case["object"];
            let errs = match case.get("check").and_then(Value::as_str).unwrap_or("validate") {
                "validate" => validation::validate_at(&schema, object, &path),
                "listtype" => listtype::validate_list_set_and_map(&schema, object, &path),
                other => panic!("{name}/{case_name}: unknown check {other}"),
            };
            let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            let want: Vec<String> = case["errors"]
                .as_array()
                .map(|a| a.iter().map(|e| e.as_str().unwrap_or_default().to_owned()).collect())
                .unwrap_or_default();
            ran += 1;
            if got != want {
                failures.push(format!(
                    "{name} / {case_name}:\n  want:\n    {}\n  got:\n    {}",
                    want.join("\n    "),
                    got.join("\n    ")
                ));
            }
        }
    }
    println!("{ran} cases");
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
}
