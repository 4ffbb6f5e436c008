//! Kubernetes 1.36's CEL environment, entry by entry: `tests/data/environment_1_36.yaml`
//! states kube-apiserver's answer for every function, overload and macro of the environment
//! (result or exact error, runtime cost, static estimate), and [`environment_1_36`] checks that
//! versa-cel gives the same answers.
//!
//! The answers come from Kubernetes itself: `hack/cel-oracle` evaluates each case in
//! k8s.io/apiserver v0.36.3's base environment. [`oracle_agrees`] rebuilds and reruns it and
//! fails when the file no longer states kube's answers; it needs Go and the module proxy (or
//! cache), so it runs only with `VERSA_CEL_ORACLE=1`. With `VERSA_CEL_SHOW_DIFFERS=1` (and
//! `--nocapture`), [`environment_1_36`] prints versa's answers to the entries marked `differs`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde::Deserialize;
use serde_json::{Map as JsonMap, Value as Json, json};
use versa_cel::{
    Activation, COMPATIBILITY_VERSION, CompileOptions, CostTracker, DeclType, Value, compile_program, estimate_cost,
    eval,
};
use versa_schema::Structural;

const FILE: &str = "tests/data/environment_1_36.yaml";

#[derive(Debug, Deserialize)]
struct Case {
    expr: String,
    schema: Option<JSONSchemaProps>,
    #[serde(rename = "self")]
    self_value: Option<Json>,
    expect: Option<Json>,
    error: Option<String>,
    compile_error: Option<String>,
    cost: Option<u64>,
    estimated: Option<u64>,
    differs: Option<String>,
}

/// A result as the case file writes it: JSON where JSON can hold it, the display otherwise.
fn to_json(v: &Value<'_>) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Uint(u) => json!(u),
        Value::Double(d) => json!(d),
        Value::String(s) => json!(&**s),
        Value::List(l) => Json::Array(l.to_vec().unwrap().iter().map(to_json).collect()),
        Value::Map(m) => {
            let entries = m.keys().into_iter().map(|k| {
                let key = match &k {
                    Value::String(s) => s.to_string(),
                    other => other.to_string(),
                };
                (key, to_json(&m.get(&k).unwrap().unwrap()))
            });
            Json::Object(entries.collect::<JsonMap<_, _>>())
        }
        other => json!(other.to_string()),
    }
}

/// versa-cel's answer to a case, in the case's terms.
fn answer(case: &Case) -> Vec<String> {
    let schema = case.schema.clone().unwrap_or_else(|| serde_json::from_value(json!({"type": "string"})).unwrap());
    let decl = DeclType::from_structural(&Structural::lower(&schema).unwrap(), false).unwrap();
    let self_json = case.self_value.clone().unwrap_or(json!(""));
    let mut wrong = Vec::new();
    let compiled = match (compile_program(&case.expr, &decl, &CompileOptions::default()), &case.compile_error) {
        (Ok(c), None) => c,
        (Err(e), Some(want)) if e.to_string() == *want => return wrong,
        (got, want) => {
            let got = got.map(|_| "compiles".to_owned()).map_err(|e| e.to_string());
            return vec![format!("compile: {got:?}\n    kube: {want:?}")];
        }
    };
    let estimated = estimate_cost(&compiled, &decl).max;
    if case.estimated.is_some_and(|want| want != estimated) {
        wrong.push(format!("estimated {estimated}, kube {}", case.estimated.unwrap()));
    }
    let act = Activation::for_rule(&self_json, None, &decl, false).unwrap();
    let mut tracker = CostTracker::default();
    let got = eval(&compiled, &act, &mut tracker).map(|v| to_json(&v)).map_err(|e| e.to_string());
    match (&got, &case.expect, &case.error) {
        (Ok(v), Some(want), None) if v == want => {}
        (Err(e), None, Some(want)) if e == want => {}
        _ => wrong.push(format!("result {got:?}\n    kube: {:?} / {:?}", case.expect, case.error)),
    }
    if let (Ok(_), Some(want)) = (&got, case.cost)
        && tracker.last_cost() != want
    {
        wrong.push(format!("cost {}, kube {want}", tracker.last_cost()));
    }
    wrong
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FILE)).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

#[test]
fn environment_1_36() {
    assert_eq!(COMPATIBILITY_VERSION, "1.36", "the case file states 1.36's answers");
    let cases = cases();
    let mut failures = Vec::new();
    let mut differing = 0;
    for case in &cases {
        let wrong = answer(case);
        match (&case.differs, wrong.is_empty()) {
            (None, true) => {}
            (None, false) => failures.push(format!("{}\n  {}", case.expr, wrong.join("\n  "))),
            (Some(_), false) => {
                differing += 1;
                if std::env::var_os("VERSA_CEL_SHOW_DIFFERS").is_some() {
                    eprintln!("DIFFERS {}\n  {}", case.expr, wrong.join("\n  "));
                }
            }
            (Some(why), true) => failures.push(format!("{}: answers as kube now; drop `differs: {why}`", case.expr)),
        }
    }
    assert!(failures.is_empty(), "{} of {} differ from kube:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert!(cases.len() >= 300, "only {} cases", cases.len());
    // A ratchet: the known differences (`differs`) may only shrink, and none is left.
    assert_eq!(differing, 0, "{differing} known differences");
}

/// Reruns Kubernetes' answers (`hack/cel-oracle`, built into `~/.cache/versa-cel-oracle`).
#[test]
fn oracle_agrees() {
    if std::env::var_os("VERSA_CEL_ORACLE").is_none_or(|v| v != "1") {
        return;
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let oracle_dir = crate_dir.join("../../hack/cel-oracle");
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let binary = home.join(".cache/versa-cel-oracle/cel-oracle");
    let built = Command::new("go")
        .args(["build", "-mod=mod", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&oracle_dir)
        .status()
        .unwrap();
    assert!(built.success(), "go build of hack/cel-oracle failed");
    let out = Command::new(&binary).arg("-check").arg(crate_dir.join(FILE)).output().unwrap();
    assert!(
        out.status.success(),
        "{FILE} does not state kube's answers (rewrite with `cel-oracle -fill`):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
