//! Runs `tests/data/objects.yaml`: each case is an admission configuration object (`kind`,
//! `object`, and `old` for an update) and what kube-apiserver 1.36 answers for it: the unknown
//! fields it warns about (`unknown`), the object as defaulted (`prepared`, without
//! `apiVersion`/`kind`), a decode error (`decodeError`), or the validation errors, one line
//! each as kube prints a `field.Error` (`errors`; none when absent). A known difference from
//! kube has kube's lines in `kube` and versa's in `errors`; the runner fails when they meet.
//!
//! `object` gets `apiVersion`, `kind` and, unless it has one, `metadata: {name: config}`.
//! Every failure of the file is reported at once, with what versa answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code: a malformed case fails loudly")]

mod common;

use serde_json::{Value, json};
use versa_admission::objects::{ObjectKind, prepare, validate_create, validate_update};

fn whole(kind: &str, short: &Value) -> Value {
    let mut o = short.clone();
    o["apiVersion"] = json!("admissionregistration.k8s.io/v1");
    o["kind"] = json!(kind);
    if o.get("metadata").is_none() {
        o["metadata"] = json!({"name": "config"});
    }
    o
}

fn lines(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|l| l.as_str().expect("error lines are strings").to_owned()).collect())
        .unwrap_or_default()
}

/// Runs one case; the differences from what it expects.
fn run(case: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let kind_name = case["kind"].as_str().expect("kind");
    let kind = ObjectKind::of(kind_name).expect("one of the six kinds");
    let mut obj = whole(kind_name, &case["object"]);
    match prepare(kind, &mut obj) {
        Err(errs) => {
            let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
            let want = case["decodeError"].as_str().map(|s| vec![s.to_owned()]).unwrap_or_default();
            if got != want {
                diffs.push(format!("decode error\n  want: {want:?}\n  got:  {got:?}"));
            }
            return diffs;
        }
        Ok(unknown) => {
            if let Some(want) = case["decodeError"].as_str() {
                diffs.push(format!("decode error\n  want: {want:?}\n  got none"));
            }
            let want = lines(case.get("unknown"));
            if unknown != want {
                diffs.push(format!("unknown fields\n  want: {want:?}\n  got:  {unknown:?}"));
            }
        }
    }
    if let Some(want) = case.get("prepared") {
        let mut got = obj.clone();
        let map = got.as_object_mut().unwrap();
        map.remove("apiVersion");
        map.remove("kind");
        if &got != want {
            diffs.push(format!("prepared\n  want: {want}\n  got:  {got}"));
        }
    }
    let errs = match case.get("old") {
        Some(old) => {
            let mut old = whole(kind_name, old);
            prepare(kind, &mut old).expect("old object decodes");
            validate_update(kind, &obj, &old)
        }
        None => validate_create(kind, &obj),
    };
    let got: Vec<String> = errs.iter().map(ToString::to_string).collect();
    if case.get("kube").is_some() && lines(case.get("kube")) == got {
        diffs.push("versa now answers as kube: drop the known difference (`kube`) from this case".to_owned());
    }
    let want = lines(case.get("errors"));
    if got != want {
        let mut d = String::from("errors\n  want:");
        for l in &want {
            d.push_str(&format!("\n    {l}"));
        }
        d.push_str("\n  got:");
        for l in &got {
            d.push_str(&format!("\n    {l}"));
        }
        diffs.push(d);
    }
    diffs
}

#[test]
fn objects() {
    let cases = common::load("objects.yaml");
    let cases = cases.as_array().expect("a list of cases");
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().expect("name");
        for d in run(case) {
            failures.push(format!("{name}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

#[test]
fn kinds_by_name() {
    assert_eq!(ObjectKind::of("MutatingAdmissionPolicyBinding"), Some(ObjectKind::MutatingAdmissionPolicyBinding));
    assert_eq!(
        ObjectKind::of("ValidatingWebhookConfiguration").map(ObjectKind::name),
        Some("ValidatingWebhookConfiguration")
    );
    assert_eq!(ObjectKind::of("Pod"), None);
}
