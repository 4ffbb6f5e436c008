//! Writes too large to store with their `managedFields` (issue 41's bad input at scale): the
//! requests `http.rs` sends to a standalone versa and `kube.rs` sends to kube-apiserver's own
//! CustomResourceDefinitions and to versa behind kube's aggregator, and kube's answers to them.
//!
//! A `Bag` keeps 20,000 fields in a `spec` that preserves unknown fields: about 1.36 MB of JSON,
//! which fits storage's 1.5 MiB (etcd's default request limit) only without the `managedFields`
//! that list every field. kube's create, update and patch handlers try such a write once more
//! without them; an apply is not tried again (its fields are what it is about), and an update of
//! an object that has no `managedFields` does not start tracking them.

#![allow(dead_code, reason = "each test binary uses part of it")]

use serde_json::{Value, json};

use crate::client::{Client, Response};

/// The definition of `bags` in `group`, as a versa ResourceDefinition (`crd`: as kube's
/// CustomResourceDefinition).
pub fn definition(group: &str, crd: bool) -> Value {
    let (api_version, kind) = if crd {
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    } else {
        ("versa.dev/v1", "ResourceDefinition")
    };
    json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": format!("bags.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "bags", "singular": "bag", "kind": "Bag"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]},
    })
}

/// kube's answers to [`observe`]'s requests: (what was sent, status, whether the answer has
/// `managedFields`, how many fields its `spec` holds) — or, for the apply, its status, reason
/// and message.
pub fn kubes_answers() -> Vec<(&'static str, Value)> {
    vec![
        ("create", json!([201, false, 20_000])),
        ("read back", json!([200, false, 20_000])),
        ("then a merge patch of one field", json!([200, false, 20_000])),
        ("updated: created small", json!([201, true, 1])),
        ("patched: created small", json!([201, true, 1])),
        ("update to 20,000 fields", json!([200, false, 20_000])),
        ("merge patch to 20,000 fields", json!([200, false, 20_000])),
        ("apply of 20,000 fields", json!([500, null, "etcdserver: request is too large"])),
        ("the applied one not stored", json!(404)),
    ]
}

/// Sends the requests to the `bags` of `collection` (`/apis/<group>/v1/namespaces/<ns>/bags`)
/// and says what each answer was, in [`kubes_answers`]' terms.
pub async fn observe(c: &Client, collection: &str, group: &str) -> Vec<(&'static str, Value)> {
    let object = |name: &str, fields: usize| {
        let spec: serde_json::Map<String, Value> =
            (0..fields).map(|i| (format!("k{i:05}"), json!("v".repeat(56)))).collect();
        json!({"apiVersion": format!("{group}/v1"), "kind": "Bag", "metadata": {"name": name}, "spec": spec})
    };
    let said = |r: &Response| {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        json!([r.status, body["metadata"].get("managedFields").is_some(), body["spec"].as_object().map(|d| d.len())])
    };
    let at = |name: &str| format!("{collection}/{name}");
    let merge = "application/merge-patch+json";
    let mut seen = Vec::new();
    seen.push(("create", said(&c.post(collection, &object("created", 20_000)).await)));
    seen.push(("read back", said(&c.get(&at("created")).await)));
    let one = c.patch(&at("created"), merge, &json!({"spec": {"k00000": "w"}})).await;
    seen.push(("then a merge patch of one field", said(&one)));

    // Small objects (with managedFields) grown past the limit by an update and by a patch.
    let updated = c.post(collection, &object("updated", 1)).await;
    seen.push(("updated: created small", said(&updated)));
    seen.push(("patched: created small", said(&c.post(collection, &object("patched", 1)).await)));
    let mut replacement = object("updated", 20_000);
    replacement["metadata"]["resourceVersion"] = updated.json()["metadata"]["resourceVersion"].clone();
    seen.push(("update to 20,000 fields", said(&c.put(&at("updated"), &replacement).await)));
    let grown = json!({"spec": object("patched", 20_000)["spec"]});
    seen.push(("merge patch to 20,000 fields", said(&c.patch(&at("patched"), merge, &grown).await)));

    let apply = format!("{}?fieldManager=tester", at("applied"));
    let applied = c.patch(&apply, "application/apply-patch+yaml", &object("applied", 20_000)).await;
    let body: Value = serde_json::from_slice(&applied.body).unwrap_or(Value::Null);
    seen.push(("apply of 20,000 fields", json!([applied.status, body["reason"], body["message"]])));
    seen.push(("the applied one not stored", json!(c.get(&at("applied")).await.status)));
    seen
}
