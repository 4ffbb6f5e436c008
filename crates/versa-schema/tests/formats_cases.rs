//! Runs `tests/data/formats/*.yaml`: every valid value must match its format, every invalid one
//! must not, and supported/unsupported must agree with Kubernetes' list.

#![allow(clippy::expect_used, clippy::panic, reason = "test code: a malformed case file should fail loudly")]

mod common;

use versa_schema::formats;

#[test]
fn formats_table() {
    let cases = common::load("formats", "formats.yaml");
    let mut failures = Vec::new();
    for case in cases.as_array().expect("a list of cases") {
        let format = case["format"].as_str().expect("format");
        let unsupported = case["unsupported"].as_bool().unwrap_or(false);
        if formats::is_supported(format) == unsupported {
            failures.push(format!("{format}: is_supported should be {}", !unsupported));
        }
        for v in common::str_list(&case["valid"]) {
            if !formats::matches(format, &v) {
                failures.push(format!("{format}: {v:?} should be valid"));
            }
        }
        for v in common::str_list(&case["invalid"]) {
            if formats::matches(format, &v) {
                failures.push(format!("{format}: {v:?} should be invalid"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
