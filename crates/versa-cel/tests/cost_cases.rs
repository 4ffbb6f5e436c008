//! Data-driven cost tests: `tests/data/cost_cases.yaml` holds a rule, the schema node it sits on
//! and the maximum of its static cost estimate.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde::Deserialize;
use versa_cel::{CompileOptions, DeclType, compile_rule, estimate_cost};
use versa_schema::Structural;

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    schema: JSONSchemaProps,
    rule: String,
    max: u64,
}

#[test]
fn cost_cases() {
    let path = format!("{}/tests/data/cost_cases.yaml", env!("CARGO_MANIFEST_DIR"));
    let cases: Vec<Case> = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    for case in &cases {
        let decl = DeclType::from_structural(&Structural::lower(&case.schema).unwrap(), false).unwrap();
        let compiled = compile_rule(&case.rule, &decl, &CompileOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let actual = estimate_cost(&compiled, &decl).max;
        if actual != case.max {
            failures.push(format!("{}: expected {}, got {actual}", case.name, case.max));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
