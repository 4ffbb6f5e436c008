//! Runs `tests/data/names/*.yaml` against the `is_*` checkers and name rules, and checks the
//! map validators' field errors.

#![allow(clippy::expect_used, clippy::panic, reason = "test code: a malformed case file should fail loudly")]

mod common;

use versa_schema::Path;
use versa_schema::names;

fn check(name: &str, value: &str) -> Vec<String> {
    match name {
        "dns1123_subdomain" => names::is_dns1123_subdomain(value),
        "dns1123_label" => names::is_dns1123_label(value),
        "dns1035_label" => names::is_dns1035_label(value),
        "qualified_name" => names::is_qualified_name(value),
        "label_value" => names::is_valid_label_value(value),
        "path_segment_name" => names::is_valid_path_segment_name(value),
        "path_segment_prefix" => names::is_valid_path_segment_prefix(value),
        "dns_subdomain_prefix" => names::name_is_dns_subdomain(value, true),
        "dns_label_prefix" => names::name_is_dns_label(value, true),
        other => panic!("unknown check {other}"),
    }
}

#[test]
fn names_table() {
    let cases = common::load("names", "names.yaml");
    let mut failures = Vec::new();
    for case in cases.as_array().expect("a list of cases") {
        let name = case["check"].as_str().expect("check");
        let value = common::expand(case["value"].as_str().expect("value"));
        let want = common::str_list(&case["errors"]);
        let got = check(name, &value);
        if got != want {
            failures.push(format!("{name}({value:?}):\n  got  {got:?}\n  want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn map_validators_report_on_the_map_path() {
    let path = Path::new("metadata").child("labels");
    let errs = names::validate_labels([("a/b/c", "ok"), ("ok", "-bad")], &path);
    let texts: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), 2);
    assert!(
        texts[0].starts_with(r#"metadata.labels: Invalid value: "a/b/c": a valid label key must consist"#),
        "{}",
        texts[0]
    );
    assert!(
        texts[1].starts_with(r#"metadata.labels: Invalid value: "-bad": a valid label must be an empty string"#),
        "{}",
        texts[1]
    );

    // Annotation keys are checked lowercased; the total size is limited.
    let path = Path::new("metadata").child("annotations");
    assert!(names::validate_annotations([("Example.com/Key", "v")], &path).is_empty());
    let big = "x".repeat(names::TOTAL_ANNOTATION_SIZE_LIMIT);
    let errs = names::validate_annotations([("k", big.as_str())], &path);
    assert_eq!(errs.aggregate(), "metadata.annotations: Too long: may not be more than 262144 bytes");

    let path = Path::new("metadata").child("finalizers");
    assert!(names::validate_finalizers(&["example.com/cleanup", "orphan"], &path).is_empty());
    let errs = names::validate_finalizers(&["orphan", "foregroundDeletion"], &path);
    assert_eq!(
        errs.aggregate(),
        r#"metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set"#
    );
    assert_eq!(
        names::finalizer_warnings(&["cleanup", "example.com/x", "orphan"], &path),
        vec![
            r#"metadata.finalizers: "cleanup": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"#
        ]
    );
}
