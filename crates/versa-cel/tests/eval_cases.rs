//! Data-driven evaluation tests: `tests/data/eval_cases.yaml` holds expressions, the schema
//! node they sit on, and objects with the expected result or error text. Also here: the
//! runtime cost limit stopping an expensive rule.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod common;

use common::to_json;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde::Deserialize;
use serde_json::{Value as Json, json};
use versa_cel::{
    Activation, CompileOptions, CostTracker, DeclType, EvalError, PER_CALL_LIMIT, Value, compile_expression,
    compile_rule, eval,
};
use versa_schema::Structural;

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    schema: JSONSchemaProps,
    #[serde(default)]
    root: bool,
    #[serde(default)]
    optional_old_self: bool,
    rule: String,
    objects: Vec<Object>,
}

#[derive(Debug, Deserialize)]
struct Object {
    #[serde(rename = "self")]
    self_: Json,
    old_self: Option<Json>,
    expect: Option<Json>,
    error: Option<String>,
}

fn decl_of(schema: &JSONSchemaProps, root: bool) -> DeclType {
    DeclType::from_structural(&Structural::lower(schema).unwrap(), root).unwrap()
}

#[test]
fn eval_cases() {
    let path = format!("{}/tests/data/eval_cases.yaml", env!("CARGO_MANIFEST_DIR"));
    let cases: Vec<Case> = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for case in &cases {
        let decl = decl_of(&case.schema, case.root);
        // Mixed-type list literals collect several results in one case.
        let opts = CompileOptions { optional_old_self: case.optional_old_self, validate_literals: false };
        let compiled = compile_expression(&case.rule, &decl, &opts).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for (i, obj) in case.objects.iter().enumerate() {
            count += 1;
            let act = Activation::for_rule(&obj.self_, obj.old_self.as_ref(), &decl, case.optional_old_self).unwrap();
            let mut tracker = CostTracker::default();
            let got = eval(&compiled, &act, &mut tracker).map(|v| to_json(&v)).map_err(|e| e.to_string());
            let ok = match (&got, &obj.expect, &obj.error) {
                (Ok(v), Some(want), None) => v == want,
                (Err(e), None, Some(want)) => e == want,
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{} [{i}]: {}\n  got:  {got:?}\n  want: {:?} / {:?}",
                    case.name, case.rule, obj.expect, obj.error
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(count >= 120, "only {count} cases");
}

/// Nested comprehensions over a large list stop at the per-call limit with Kubernetes' text,
/// long before they would finish (1000 × 1000 iterations of cost ≥ 5 each).
#[test]
fn cost_limit_stops_expensive_rule() {
    let schema: JSONSchemaProps =
        serde_json::from_value(json!({"type": "array", "items": {"type": "integer"}})).unwrap();
    let decl = decl_of(&schema, false);
    let rule = compile_rule("self.all(x, self.all(y, x + y >= 0))", &decl, &CompileOptions::default()).unwrap();
    let data = Json::Array((0..1000).map(|i| json!(i)).collect());
    let act = Activation::for_rule(&data, None, &decl, false).unwrap();
    let mut tracker = CostTracker::new(10_000_000);
    let err = eval(&rule, &act, &mut tracker).unwrap_err();
    assert_eq!(err, EvalError::CostLimitExceeded);
    assert_eq!(err.to_string(), "operation cancelled: actual cost limit exceeded");
    assert_eq!(tracker.last_cost(), PER_CALL_LIMIT + 1);

    // A small list runs to completion and is charged exactly: per inner iteration the loop
    // condition (2), the step's `@result` (1), `x` and `y` (2) and `_+_`, `_>=_` (2).
    let small = json!([1, 2]);
    let act = Activation::for_rule(&small, None, &decl, false).unwrap();
    let mut tracker = CostTracker::new(10_000_000);
    assert!(matches!(eval(&rule, &act, &mut tracker), Ok(Value::Bool(true))));
    // outer: self 1 + result 1 + 2 × (cond 2 + @result 1 + inner); inner: self 1 + result 1 + 2 × 7.
    assert_eq!(tracker.last_cost(), 2 + 2 * (3 + 16));
    assert_eq!(tracker.remaining_budget(), 10_000_000 - 40);

    // The per-object budget stops evaluation too, with its own text.
    let mut tracker = CostTracker::new(30);
    let err = eval(&rule, &act, &mut tracker).unwrap_err();
    assert_eq!(err, EvalError::BudgetExceeded);
}

/// String costs follow cel-go: `contains` is the product of both sizes × 0.1.
#[test]
fn string_costs() {
    let schema: JSONSchemaProps = serde_json::from_value(json!({"type": "string"})).unwrap();
    let decl = decl_of(&schema, false);
    let rule = compile_rule("self.contains('a string')", &decl, &CompileOptions::default()).unwrap();
    let s = json!("x".repeat(100));
    let act = Activation::for_rule(&s, None, &decl, false).unwrap();
    let mut tracker = CostTracker::default();
    eval(&rule, &act, &mut tracker).unwrap();
    // self 1 + ceil(100 × 0.1) × ceil(8 × 0.1)
    assert_eq!(tracker.last_cost(), 1 + 10);
}
