//! Runs `tests/data/pattern/*.yaml`: Go RE2 match results and Go's compile errors.

#![allow(clippy::expect_used, clippy::panic, reason = "test code: a malformed case file should fail loudly")]

mod common;

use versa_schema::pattern::Pattern;

#[test]
fn go_re2_table() {
    let cases = common::load("pattern", "go_re2.yaml");
    let mut failures = Vec::new();
    for case in cases.as_array().expect("a list of cases") {
        let source = common::expand(case["pattern"].as_str().expect("pattern"));
        let p = Pattern::new(&source);
        let shown: String = source.chars().take(60).collect();
        if let Some(want) = case["error"].as_str() {
            if p.error() != Some(want) {
                failures.push(format!("{shown}: error {:?}, want {want:?}", p.error()));
            }
            continue;
        }
        if let Some(want) = case["error_contains"].as_str() {
            if !p.error().is_some_and(|e| e.contains(want)) {
                failures.push(format!("{shown}: error {:?}, want one containing {want:?}", p.error()));
            }
            continue;
        }
        if let Some(e) = p.error() {
            failures.push(format!("{shown}: unexpected error {e}"));
            continue;
        }
        for m in case["matches"].as_array().expect("matches") {
            let input = common::expand(m[0].as_str().expect("input"));
            let want = m[1].as_bool().expect("bool");
            if p.is_match(&input) != want {
                failures.push(format!("{shown}: {input:?} should {}match", if want { "" } else { "not " }));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
