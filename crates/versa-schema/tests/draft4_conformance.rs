//! JSON-Schema-Test-Suite (draft 4) through `Structural::from_json` + `validation::validate`.
//!
//! The suite lives in `shared/conformance/json-schema-draft4/` beside the checkout (see
//! `shared/conformance/README.md`). Every case runs unless [`classify`] — the one place where
//! cases are skipped — says why it cannot apply to a Kubernetes custom resource: a construct a
//! structural schema forbids, a schema the lowering refuses, a format kube-apiserver does not
//! validate, or a documented difference between kube-apiserver and JSON Schema (kube-apiserver
//! is the reference we follow). A missing corpus fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use versa_schema::structural::Structural;
use versa_schema::{formats, validation};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/json-schema-draft4")
}

/// Why a case does not run.
enum Verdict {
    Run,
    Skip(String),
}

/// Where kube-apiserver (kube-openapi on Go-decoded JSON) knowingly answers differently from
/// JSON Schema: `(file, group description, test description or "*", reason)`.
const KUBERNETES_DIFFERS: &[(&str, &str, &str, &str)] = &[
    (
        "optional/zeroTerminatedFloats.json",
        "some languages do not distinguish between different types of numeric value",
        "*",
        "kube-openapi accepts a float64 with an integral value as an integer",
    ),
    (
        "multipleOf.json",
        "by number",
        "35 is not multiple of 1.5",
        "kube-openapi checks an int64 against int64(multipleOf), here 1",
    ),
    (
        "multipleOf.json",
        "small multiple of large integer",
        "*",
        "kube-openapi divides an int64 by int64(multipleOf) = 0 (Go panics); versa falls back to the float check",
    ),
    (
        "enum.json",
        "heterogeneous enum-with-null validation",
        "null is valid",
        "kube-openapi never matches null against an enum",
    ),
    (
        "enum.json",
        "enum with [0] does not match [false]",
        "[0.0] is valid",
        "kube-openapi deep-compares arrays: float64 0 is not int64 0",
    ),
    (
        "enum.json",
        "enum with [1] does not match [true]",
        "[1.0] is valid",
        "kube-openapi deep-compares arrays: float64 1 is not int64 1",
    ),
    ("optional/bignum.json", "integer", "*", "a number beyond ±2^53 decodes to a float64 that is not an integer"),
    (
        "not.json",
        "forbid everything with empty schema",
        "null is invalid",
        "kube-openapi checks only type, nullable and enum on null; allOf/anyOf/oneOf/not are not evaluated",
    ),
    (
        "*",
        "*",
        "all string formats ignore integers",
        "kube-openapi's type check reports a non-string value against a declared format (must be of type <format>)",
    ),
    (
        "*",
        "*",
        "all string formats ignore floats",
        "kube-openapi's type check reports a non-string value against a declared format (must be of type <format>)",
    ),
    (
        "*",
        "*",
        "all string formats ignore objects",
        "kube-openapi's type check reports a non-string value against a declared format (must be of type <format>)",
    ),
    (
        "*",
        "*",
        "all string formats ignore booleans",
        "kube-openapi's type check reports a non-string value against a declared format (must be of type <format>)",
    ),
];

/// Format cases where the kube-openapi `strfmt` semantics implemented in `formats.rs` answer
/// differently from the RFCs the suite follows. Kept apart from [`KUBERNETES_DIFFERS`] because
/// they are claims about Go's parsers (`time.Parse`, `url.ParseRequestURI`, go-openapi's
/// hostname and email checks) that the owner of `formats.rs` vouches for.
const STRFMT_DIFFERS: &[(&str, &str, &str)] = &[
    (
        "optional/format/date-time.json",
        "a valid date-time with a leap second, UTC",
        "Go's time.Parse rejects second 60",
    ),
    (
        "optional/format/date-time.json",
        "a valid date-time with a leap second, with minus offset",
        "Go's time.Parse rejects second 60",
    ),
    (
        "optional/format/date-time.json",
        "an invalid offset minute in date-time string",
        "go-openapi does not range-check the offset",
    ),
    (
        "optional/format/date-time.json",
        "an invalid offset in date-time string",
        "go-openapi does not range-check the offset",
    ),
    (
        "optional/format/email.json",
        "full \"From\" header is invalid",
        "Go's net/mail.ParseAddress accepts a display name",
    ),
    ("optional/format/hostname.json", "a valid punycoded IDN hostname", "go-openapi's hostname pattern"),
    ("optional/format/hostname.json", "single label with hyphen", "go-openapi's hostname pattern"),
    (
        "optional/format/hostname.json",
        "invalid non-ASCII KELVIN SIGN (U+212A)",
        "go-openapi's hostname pattern allows letters",
    ),
    ("optional/format/ipv4.json", "an IPv4-mapped IPv6 address is invalid", "Go's net.ParseIP accepts it"),
    ("optional/format/uri.json", "an invalid protocol-relative URI Reference", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "an invalid relative URI Reference", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "unescaped non US-ASCII characters", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid backslash character", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid \" character", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid <> characters", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid {} characters", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid ^ character", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid ` character", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid SPACE character", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "invalid | character", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "leading zero in an embedded IPv4 address is invalid", "Go's url.ParseRequestURI"),
    ("optional/format/uri.json", "square brackets are not allowed in a path segment", "Go's url.ParseRequestURI"),
];

/// `pattern` is either exact, `*`, or a prefix followed by `*`.
fn matches(pattern: &str, s: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => s.starts_with(prefix),
        None => pattern == s,
    }
}

/// The one place that decides whether a case runs.
fn classify(file: &str, group: &str, schema: &Value, test: &str) -> Verdict {
    if let Some(reason) = forbidden_construct(schema) {
        return Verdict::Skip(format!("structural schemas forbid {reason}"));
    }
    if Structural::from_json(schema).is_err() {
        return Verdict::Skip("Structural::from_json refuses the schema".into());
    }
    if let Some(format) = unsupported_format(schema) {
        return Verdict::Skip(format!("format {format:?} is not validated by kube-apiserver (ignored)"));
    }
    for (f, g, t, reason) in KUBERNETES_DIFFERS {
        if matches(f, file) && matches(g, group) && matches(t, test) {
            return Verdict::Skip(format!("kube-apiserver differs: {reason}"));
        }
    }
    for (f, t, reason) in STRFMT_DIFFERS {
        if *f == file && *t == test {
            return Verdict::Skip(format!("kube-openapi strfmt differs: {reason}"));
        }
    }
    Verdict::Run
}

/// A construct forbidden in structural schemas, searched schema by schema (property names are
/// not keywords).
fn forbidden_construct(schema: &Value) -> Option<&'static str> {
    let Value::Object(m) = schema else { return None };
    for (key, reason) in [
        ("$ref", "$ref"),
        ("definitions", "definitions"),
        ("dependencies", "dependencies"),
        ("patternProperties", "patternProperties"),
        ("additionalItems", "additionalItems"),
    ] {
        if m.contains_key(key) {
            return Some(reason);
        }
    }
    if m.get("type").is_some_and(Value::is_array) {
        return Some("type arrays");
    }
    if m.get("items").is_some_and(Value::is_array) {
        return Some("items as an array");
    }
    if m.get("additionalProperties") == Some(&Value::Bool(false)) {
        return Some("additionalProperties: false");
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
        return Some("uniqueItems: true");
    }
    sub_schemas(m).into_iter().find_map(forbidden_construct)
}

fn unsupported_format(schema: &Value) -> Option<String> {
    let Value::Object(m) = schema else { return None };
    if let Some(Value::String(f)) = m.get("format")
        && !formats::is_supported(f)
    {
        return Some(f.clone());
    }
    sub_schemas(m).into_iter().find_map(unsupported_format)
}

fn sub_schemas(m: &serde_json::Map<String, Value>) -> Vec<&Value> {
    let mut out = Vec::new();
    for key in ["items", "additionalProperties", "not"] {
        match m.get(key) {
            Some(Value::Array(a)) => out.extend(a),
            Some(v @ Value::Object(_)) => out.push(v),
            _ => {}
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = m.get(key) {
            out.extend(a);
        }
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        out.extend(props.values());
    }
    out
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.is_dir() {
            json_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
    Ok(())
}

#[test]
fn json_schema_draft4() {
    let dir = corpus_dir();
    assert!(
        dir.is_dir(),
        "JSON-Schema draft 4 corpus not found at {} (expected shared/conformance beside the checkout)",
        dir.display()
    );
    let mut files = Vec::new();
    json_files(&dir, &mut files).unwrap();
    files.sort();
    assert!(!files.is_empty(), "no .json files in {}", dir.display());

    let (mut passed, mut skipped) = (0usize, BTreeMap::<String, usize>::new());
    let mut failures = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap();
        let groups: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for g in &groups {
            let group = g["description"].as_str().unwrap_or_default();
            let schema = &g["schema"];
            for t in g["tests"].as_array().unwrap() {
                let test = t["description"].as_str().unwrap_or_default();
                match classify(&rel, group, schema, test) {
                    Verdict::Skip(reason) => *skipped.entry(reason).or_default() += 1,
                    Verdict::Run => {
                        let s = Structural::from_json(schema).unwrap();
                        let errs = validation::validate(&s, &t["data"]);
                        let want_valid = t["valid"].as_bool().unwrap();
                        if errs.is_empty() == want_valid {
                            passed += 1;
                        } else {
                            failures.push(format!(
                                "{rel} / {group} / {test}: expected {}, got {}",
                                if want_valid { "valid" } else { "invalid" },
                                if errs.is_empty() { "no errors".to_owned() } else { errs.aggregate() }
                            ));
                        }
                    }
                }
            }
        }
    }

    let total_skipped: usize = skipped.values().sum();
    let by_reason: Vec<String> = skipped.iter().map(|(r, n)| format!("{n}: {r}")).collect();
    println!("{passed} passed, {total_skipped} skipped (by reason: {})", by_reason.join("; "));
    assert!(failures.is_empty(), "{} failing cases:\n{}", failures.len(), failures.join("\n"));
    assert!(passed > 0, "no case ran");
}
