//! Runs the definition-validation cases in `tests/data/*.yaml` and checks the real-world
//! definitions in `tests/fixtures/` are accepted.
//!
//! A case file holds `cases:`, each with a `name`, a JSON merge `patch` applied to the base
//! definition (`tests/data/_base.yaml`, or the file's own `base:`), optionally an `old_patch`
//! (then the case validates an update from base+old_patch to base+patch); `schema` (and
//! `old_schema`) replace the first version's `openAPIV3Schema`; and the exact `errors`
//! expected, in order, as kubectl would print them. An expected error may contain `<value>` to
//! stand for a long printed value (whole `spec.versions` lists and schemas). Both objects are
//! defaulted first, as the server does before validating.

#![allow(clippy::unwrap_used, clippy::panic, reason = "a test runner fails loudly")]

use std::path::{Path, PathBuf};

use serde_json::Value;
use versa_apiextensions::{ResourceDefinition, set_defaults, validate_definition, validate_definition_update};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn load_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Value::Object(obj) = target else { unreachable!() };
    for (k, v) in patch {
        if v.is_null() {
            obj.remove(k);
        } else {
            merge_patch(obj.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn definition(base: &Value, patch: Option<&Value>, schema: Option<&Value>) -> ResourceDefinition {
    let mut doc = base.clone();
    if let Some(p) = patch {
        merge_patch(&mut doc, p);
    }
    if let Some(s) = schema {
        doc["spec"]["versions"][0]["schema"] = serde_json::json!({"openAPIV3Schema": s});
    }
    let mut def = ResourceDefinition::from_document(&doc).unwrap_or_else(|e| panic!("bad test definition: {e}"));
    set_defaults(&mut def);
    def
}

fn matches(expected: &str, actual: &str) -> bool {
    match expected.split_once("<value>") {
        Some((prefix, suffix)) => {
            actual.starts_with(prefix) && actual.ends_with(suffix) && actual.len() >= prefix.len() + suffix.len()
        }
        None => expected == actual,
    }
}

#[test]
fn validation_cases() {
    let base_default = load_yaml(&data_dir().join("data/_base.yaml"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir().join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml") && !p.file_name().unwrap().to_string_lossy().starts_with('_')
        })
        .collect();
    files.sort();
    assert!(!files.is_empty());

    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let doc = load_yaml(file);
        let base = doc.get("base").cloned().unwrap_or_else(|| base_default.clone());
        let cases = doc["cases"].as_array().unwrap_or_else(|| panic!("{}: no cases", file.display()));
        for case in cases {
            count += 1;
            let name = case["name"].as_str().unwrap_or("<unnamed>");
            let new = definition(&base, case.get("patch"), case.get("schema"));
            let errs = match case.get("old_patch") {
                Some(old_patch) => {
                    validate_definition_update(&new, &definition(&base, Some(old_patch), case.get("old_schema")))
                }
                None => validate_definition(&new),
            };
            let actual: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            let expected: Vec<&str> =
                case["errors"].as_array().map(|a| a.iter().map(|e| e.as_str().unwrap()).collect()).unwrap_or_default();
            let ok = actual.len() == expected.len() && expected.iter().zip(&actual).all(|(e, a)| matches(e, a));
            if !ok {
                failures.push(format!(
                    "{} / {name}\n  expected:\n{}\n  actual:\n{}",
                    file.file_name().unwrap().to_string_lossy(),
                    expected.iter().map(|e| format!("    - {e}")).collect::<Vec<_>>().join("\n"),
                    actual
                        .iter()
                        .map(|e| format!("    - {}", serde_json::to_string(e).unwrap()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {count} cases failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn real_world_fixtures_are_valid() {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(data_dir().join("fixtures")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 3);
    for file in files {
        let doc = load_yaml(&file);
        let mut def = ResourceDefinition::from_document(&doc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        set_defaults(&mut def);
        let errs = validate_definition(&def);
        assert!(errs.is_empty(), "{}: {}", file.display(), errs.aggregate());
        // The same definition as a ResourceDefinition document reads back identically.
        let back = ResourceDefinition::from_document(&def.to_document()).unwrap();
        assert_eq!(back, def, "{}", file.display());
        // An update that changes nothing is valid too.
        let errs = validate_definition_update(&def, &def);
        assert!(errs.is_empty(), "{} (update): {}", file.display(), errs.aggregate());
    }
}
