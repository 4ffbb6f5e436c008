//! The json-patch-tests corpus (`shared/conformance/json-patch`: `tests.json` and
//! `spec_tests.json`, RFC 6902) run through the PATCH path, `patch::apply` with
//! `application/json-patch+json`.
//!
//! Every case not marked `disabled` must pass: with `expected`, the result must equal it; with
//! `error`, the patch must fail with 400 or 422 (and, since `apply` only borrows the document,
//! leave it unchanged — checked anyway); with neither, it must just succeed.
//!
//! There is no skip list: versa applies operations with RFC semantics. kube-apiserver itself
//! (evanphx/json-patch v4) would fail ten of these cases: it refuses `add` at the root path
//! (3 cases) and accepts `add`, `replace` and `test` without `value`, `copy` from a missing
//! member, the index `-1` and indices with leading zeros (7 cases). Those are accidents of that
//! library rather than API behaviour Kubernetes promises, so the corpus wins (see `patch.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use serde_json::Value;
use versa_server::patch::{Body, PatchType, apply};

const FILES: [&str; 2] = ["tests.json", "spec_tests.json"];

fn corpus_dir() -> PathBuf {
    // `shared/` sits beside the project root: crates/versa-server -> ../../../shared.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/json-patch")
}

/// What one case checks, read from its record.
enum Expectation<'a> {
    Result(&'a Value),
    Error(&'a str),
    Success,
}

#[test]
fn json_patch_tests_corpus() {
    let (mut passed, mut disabled, mut failures) = (0usize, 0usize, Vec::<String>::new());
    for file in FILES {
        let path = corpus_dir().join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
        for (index, case) in cases.iter().enumerate() {
            let comment = case.get("comment").and_then(Value::as_str).unwrap_or("(no comment)");
            let name = format!("{file}[{index}] {comment}");
            if case.get("disabled").and_then(Value::as_bool) == Some(true) {
                disabled += 1;
                continue;
            }
            // Records with only a comment are allowed by the format.
            let (Some(doc), Some(patch)) = (case.get("doc"), case.get("patch")) else {
                passed += 1;
                continue;
            };
            let expectation = match (case.get("expected"), case.get("error").and_then(Value::as_str)) {
                (Some(expected), _) => Expectation::Result(expected),
                (None, Some(error)) => Expectation::Error(error),
                (None, None) => Expectation::Success,
            };
            let body = serde_json::to_vec(patch).unwrap();
            let before = doc.clone();
            let outcome = apply(PatchType::Json, doc, &Body::parse(&body));
            let failure = match (&expectation, outcome) {
                (Expectation::Result(expected), Ok(got)) if got == **expected => None,
                (Expectation::Result(expected), Ok(got)) => Some(format!("expected {expected}, got {got}")),
                (Expectation::Success, Ok(_)) => None,
                (Expectation::Result(_) | Expectation::Success, Err(e)) => {
                    Some(format!("failed: {} {} ({:?})", e.status_code(), e.message(), e.detail()))
                }
                (Expectation::Error(error), Ok(got)) => Some(format!("expected error {error:?}, got {got}")),
                (Expectation::Error(error), Err(e)) if !matches!(e.status_code(), 400 | 422) => {
                    Some(format!("expected 400/422 for {error:?}, got {} {}", e.status_code(), e.message()))
                }
                (Expectation::Error(_), Err(_)) if *doc != before => Some("document changed".to_owned()),
                (Expectation::Error(_), Err(_)) => None,
            };
            match failure {
                None => passed += 1,
                Some(why) => failures.push(format!("{name}: {why}")),
            }
        }
    }
    println!("json-patch conformance: {passed} passed, {} failed, {disabled} disabled", failures.len());
    assert!(failures.is_empty(), "{} failing case(s):\n{}", failures.len(), failures.join("\n"));
}
