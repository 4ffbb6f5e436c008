//! `status.typeChecking` of a ValidatingAdmissionPolicy: its expressions checked against the
//! schemas of the kinds it matches.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use serde_json::json;
use versa_admission::{GroupVersionKind, GroupVersionResource, SchemaResolver, type_checking};
use versa_schema::Structural;

struct Schemas;

impl SchemaResolver for Schemas {
    fn kinds_for(&self, r: &GroupVersionResource) -> Vec<GroupVersionKind> {
        match (r.group.as_str(), r.resource.as_str()) {
            ("stable.example.com", "crontabs") => vec![GroupVersionKind::new(&r.group, &r.version, "CronTab")],
            _ => Vec::new(),
        }
    }

    fn schema(&self, k: &GroupVersionKind) -> Option<Arc<Structural>> {
        (k.kind == "CronTab").then(|| {
            let schema = json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "image": {"type": "string"}}}}});
            Arc::new(Structural::from_json(&schema).unwrap())
        })
    }
}

fn policy(validations: serde_json::Value, versions: serde_json::Value) -> ValidatingAdmissionPolicy {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["stable.example.com"], "apiVersions": versions, "operations": ["*"], "resources": ["crontabs", "crontabs/status"]}]},
            "variables": [{"name": "image", "expression": "object.spec.image"}],
            "validations": validations,
        }
    }))
    .unwrap()
}

#[test]
fn expressions_are_checked_against_each_matched_kind() {
    let p = policy(
        json!([
            {"expression": "object.spec.replicas > 1 && variables.image != ''"},
            {"expression": "object.spec.replicaz > 1", "messageExpression": "'image ' + object.spec.image + 1"},
        ]),
        json!(["v1", "v2"]),
    );
    let checking = type_checking(&p, &Schemas).expect("warnings");
    let warnings = checking.expression_warnings.unwrap();
    let got: Vec<(&str, &str)> = warnings.iter().map(|w| (w.field_ref.as_str(), w.warning.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (
                "spec.validations[1].expression",
                "stable.example.com/v1, Kind=CronTab: compilation failed: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^\n\nstable.example.com/v2, Kind=CronTab: compilation failed: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz > 1\n | ...........^\n"
            ),
            (
                "spec.validations[1].messageExpression",
                "stable.example.com/v1, Kind=CronTab: compilation failed: ERROR: <input>:1:30: found no matching overload for '_+_' applied to '(string, int)'\n | 'image ' + object.spec.image + 1\n | .............................^\n\nstable.example.com/v2, Kind=CronTab: compilation failed: ERROR: <input>:1:30: found no matching overload for '_+_' applied to '(string, int)'\n | 'image ' + object.spec.image + 1\n | .............................^\n"
            ),
        ]
    );
}

#[test]
fn wildcard_versions_are_not_checked() {
    let p = policy(json!([{"expression": "object.spec.replicaz > 1"}]), json!(["*"]));
    assert_eq!(type_checking(&p, &Schemas), None);
}
