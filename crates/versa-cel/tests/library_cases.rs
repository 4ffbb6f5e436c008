//! Data-driven tests of the Kubernetes CEL libraries: `tests/data/library_cases.yaml` holds
//! expressions with their expected results, runtime errors or compile errors, and some exact
//! runtime costs. Also here: a literal `find` pattern that does not compile fails the rule at
//! definition time, and the per-call limit stops an expensive library call.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod common;

use common::to_json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde::Deserialize;
use serde_json::{Value as Json, json};
use versa_cel::{
    Activation, CompileOptions, CostTracker, DeclType, EvalError, RuleError, compile_expression, compile_rule, eval,
};
use versa_schema::Structural;

#[derive(Debug, Deserialize)]
struct Case {
    expr: String,
    expect: Option<Json>,
    error: Option<String>,
    compile_error: Option<String>,
    cost: Option<u64>,
}

fn string_decl() -> DeclType {
    let schema: JSONSchemaProps = serde_json::from_value(json!({"type": "string"})).unwrap();
    DeclType::from_structural(&Structural::lower(&schema).unwrap(), false).unwrap()
}

/// Runs the cases of `tests/data/<file>`; returns the failures and the number of cases.
fn run_cases(file: &str) -> (Vec<String>, usize) {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let cases: Vec<Case> = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let decl = string_decl();
    let self_json = json!("");
    let opts = CompileOptions { optional_old_self: false, validate_literals: false };
    let mut failures = Vec::new();
    for case in &cases {
        let compiled = match (compile_expression(&case.expr, &decl, &opts), &case.compile_error) {
            (Ok(c), None) => c,
            (Err(e), Some(want)) if e.to_string().contains(want.as_str()) => continue,
            (got, _) => {
                let got = got.map(|_| ()).map_err(|e| e.to_string());
                failures.push(format!("{}: compile {got:?}, want {:?}", case.expr, case.compile_error));
                continue;
            }
        };
        let act = Activation::for_rule(&self_json, None, &decl, false).unwrap();
        let mut tracker = CostTracker::default();
        let got = eval(&compiled, &act, &mut tracker).map(|v| to_json(&v)).map_err(|e| e.to_string());
        let ok = match (&got, &case.expect, &case.error) {
            (Ok(v), Some(want), None) => v == want,
            (Err(e), None, Some(want)) => e == want,
            _ => false,
        };
        if !ok {
            failures.push(format!("{}\n  got:  {got:?}\n  want: {:?} / {:?}", case.expr, case.expect, case.error));
        }
        if let Some(cost) = case.cost
            && tracker.last_cost() != cost
        {
            failures.push(format!("{}: cost {}, want {cost}", case.expr, tracker.last_cost()));
        }
    }
    (failures, cases.len())
}

#[test]
fn library_cases() {
    let (failures, count) = run_cases("library_cases.yaml");
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(count >= 130, "only {count} cases");
}

/// cel-go's two-variable comprehensions (`ext.TwoVarComprehensions`), after its
/// comprehensions_test.go.
#[test]
fn two_variable_comprehension_cases() {
    let (failures, count) = run_cases("comprehension_cases.yaml");
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(count >= 70, "only {count} cases");
}

/// Kubernetes compiles literal `find`/`findAll` patterns when it instantiates the program, so
/// a bad literal fails the definition.
#[test]
fn literal_find_pattern_must_compile() {
    let decl = string_decl();
    let err = compile_rule("self.find('(') == ''", &decl, &CompileOptions::default()).unwrap_err();
    assert_eq!(err, RuleError::Program("error parsing regexp: missing closing ): `(`".into()));
    assert_eq!(err.to_string(), "program instantiation failed: error parsing regexp: missing closing ): `(`");
}

/// Library calls charge before they work: a huge `lists.range` is refused by the per-call limit
/// without being built.
#[test]
fn per_call_limit_stops_library_calls() {
    let decl = string_decl();
    let rule = compile_rule("lists.range(100000000).size() > 0", &decl, &CompileOptions::default()).unwrap();
    let self_json = json!("");
    let act = Activation::for_rule(&self_json, None, &decl, false).unwrap();
    let mut tracker = CostTracker::default();
    assert_eq!(eval(&rule, &act, &mut tracker).unwrap_err(), EvalError::CostLimitExceeded);
}
