//! Data-driven compile tests: `tests/data/*.yaml` hold rules with the schema node they sit on
//! and the exact outcome (ok, or Kubernetes' detail text).

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde::Deserialize;
use versa_cel::{CompileOptions, DeclType, compile_message_expression, compile_rule};
use versa_schema::Structural;

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    schema: JSONSchemaProps,
    #[serde(default)]
    root: bool,
    #[serde(default)]
    optional_old_self: bool,
    #[serde(default)]
    rules: Vec<String>,
    #[serde(default)]
    message_expressions: Vec<String>,
    expect: String,
    uses_old_self: Option<bool>,
}

fn run(file: &str) -> usize {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let cases: Vec<Case> = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut failures = Vec::new();
    let mut count = 0;
    for case in &cases {
        let structural = Structural::lower(&case.schema).unwrap();
        let decl = DeclType::from_structural(&structural, case.root).unwrap();
        let opts = CompileOptions { optional_old_self: case.optional_old_self, ..CompileOptions::default() };
        let outcomes = case
            .rules
            .iter()
            .map(|r| (r, compile_rule(r, &decl, &opts).map(|c| c.uses_old_self).map_err(|e| e.to_string())))
            .chain(case.message_expressions.iter().map(|r| {
                (r, compile_message_expression(r, &decl, &opts).map(|c| c.uses_old_self).map_err(|e| e.to_string()))
            }));
        for (rule, outcome) in outcomes {
            count += 1;
            match (&outcome, case.expect.as_str()) {
                (Ok(uses), "ok") => {
                    if let Some(want) = case.uses_old_self
                        && want != *uses
                    {
                        failures.push(format!("{}: {rule}: uses_old_self = {uses}, want {want}", case.name));
                    }
                }
                (Err(got), want) if got == want => {}
                _ => failures.push(format!("{}: {rule}:\n  got:  {outcome:?}\n  want: {}", case.name, case.expect)),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    count
}

#[test]
fn seed_rules() {
    assert!(run("seed_rules.yaml") >= 60);
}

#[test]
fn check_cases() {
    assert!(run("check_cases.yaml") >= 40);
}
