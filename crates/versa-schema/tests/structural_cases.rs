//! The structural check against data files: `tests/data/structural/*.yaml`.
//!
//! Each file is a list of cases `{name, path?, schema, errors}`: the schema is lowered, checked
//! under `path` (the nil path when absent), and the rendered errors must equal `errors`,
//! element by element and in order. One test per file, so a failing area does not hide the
//! others; `every_data_file_is_run` keeps the list below in step with the directory.
//!
//! On a mismatch the actual errors are printed as a YAML list ready to paste, after checking
//! them against the Kubernetes source by hand.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;
use versa_schema::structural_check::{is_structural, uses_defaults, validate_structural};
use versa_schema::{Path, Structural};

const FILES: &[&str] = &[
    "completeness.yaml",
    "embedded.yaml",
    "int_or_string.yaml",
    "junctors.yaml",
    "metadata.yaml",
    "pattern.yaml",
    "seed.yaml",
    "types.yaml",
];

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/structural")
}

fn lower(file: &str, name: &str, schema: &Value) -> Structural {
    Structural::from_json(schema).unwrap_or_else(|e| panic!("{file}: {name}: schema does not lower: {e}"))
}

fn check_file(file: &str) {
    let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
    let cases: Vec<Value> = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert!(!cases.is_empty(), "{file}: no cases");

    let mut failures = String::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_else(|| panic!("{file}: a case without a name"));
        let path = match case.get("path").and_then(Value::as_str) {
            Some(p) => Path::new(p),
            None => Path::none(),
        };
        let want: Vec<String> = match case.get("errors") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(errs)) => errs.iter().map(|e| e.as_str().unwrap().to_owned()).collect(),
            Some(other) => panic!("{file}: {name}: errors must be a list, got {other}"),
        };
        let schema = lower(file, name, &case["schema"]);
        let got: Vec<String> = validate_structural(&schema, &path).iter().map(ToString::to_string).collect();
        if got != want {
            let _ = writeln!(failures, "\n{file}: {name}\n  errors:");
            for e in &got {
                let _ = writeln!(failures, "  - {}", serde_json::to_string(e).unwrap());
            }
        }
        assert_eq!(is_structural(&schema), want.is_empty(), "{file}: {name}: is_structural disagrees");
    }
    assert!(failures.is_empty(), "cases with other errors than expected (actual lists below):{failures}");
}

#[test]
fn completeness() {
    check_file("completeness.yaml");
}

#[test]
fn embedded_resources() {
    check_file("embedded.yaml");
}

#[test]
fn int_or_string() {
    check_file("int_or_string.yaml");
}

#[test]
fn junctors() {
    check_file("junctors.yaml");
}

#[test]
fn metadata() {
    check_file("metadata.yaml");
}

// The expected details are Go's `regexp` messages, which `Pattern::error()` reproduces.
#[test]
fn patterns() {
    check_file("pattern.yaml");
}

#[test]
fn seed_examples() {
    check_file("seed.yaml");
}

#[test]
fn types() {
    check_file("types.yaml");
}

#[test]
fn every_data_file_is_run() {
    let mut on_disk: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, FILES, "add a #[test] for each data file");
}

#[test]
fn an_invalid_pattern_reports_the_pattern_module_error() {
    // Ties the message to `Pattern::error()` whatever its wording, so this plumbing is checked
    // independently of how exactly the pattern module mirrors Go's messages.
    let schema = Structural::from_json(&serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "string", "pattern": "(unclosed"}}
    }))
    .unwrap();
    let detail = schema.properties["a"].vv().unwrap().pattern.as_ref().unwrap().error().unwrap().to_owned();
    let errs = validate_structural(&schema, &Path::new("spec"));
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [format!(
            "spec.properties[a].pattern: Invalid value: \"(unclosed\": must be a valid regular expression, but isn't: {detail}"
        )]
    );
}

#[test]
fn the_path_prefixes_every_error_and_the_nil_path_prints_bare_paths() {
    let schema = Structural::from_json(&serde_json::json!({"properties": {"a": {}}})).unwrap();
    let bare: Vec<String> = validate_structural(&schema, &Path::none()).iter().map(ToString::to_string).collect();
    assert_eq!(
        bare,
        [
            "properties[a].type: Required value: must not be empty for specified object fields",
            "type: Required value: must not be empty at the root",
        ]
    );
    let prefixed = validate_structural(
        &schema,
        &Path::from_parts(&["spec", "versions"]).index(1).child("schema").child("openAPIV3Schema"),
    );
    assert_eq!(
        prefixed.aggregate(),
        "[spec.versions[1].schema.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields, \
         spec.versions[1].schema.openAPIV3Schema.type: Required value: must not be empty at the root]"
    );
}

#[test]
fn uses_defaults_looks_everywhere() {
    let cases = [
        (serde_json::json!({"type": "object"}), false),
        (serde_json::json!({"type": "object", "default": {}}), true),
        (serde_json::json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}), true),
        (serde_json::json!({"type": "array", "items": {"type": "integer", "default": 1}}), true),
        (
            serde_json::json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string", "default": ""}}}}),
            true,
        ),
        (serde_json::json!({"type": "object", "allOf": [{"properties": {"a": {"default": 1}}}]}), true),
        (serde_json::json!({"type": "object", "not": {"items": {"anyOf": [{"default": 1}]}}}), true),
        (serde_json::json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}), false),
    ];
    for (schema, want) in cases {
        let s = Structural::from_json(&schema).unwrap();
        assert_eq!(uses_defaults(&s), want, "{schema}");
    }
}
