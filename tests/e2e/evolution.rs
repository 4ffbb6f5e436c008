//! API evolution against the objects a server holds (issue 39), as a user meets it with the real
//! `versa serve` and `kubectl`: a definition tightened (a smaller `maxLength`, a lower `maximum`,
//! an enum value removed, a new `required` field) over stored objects, a few of which break the
//! new rules. After the change the definition's `StoredObjectsValid` condition counts them
//! exactly and names them with their first errors, for the generation judged (and a dry run of
//! the change, `kubectl apply --dry-run=server`, warns the same beforehand); a later change that
//! every object meets turns it back to `True`. Deletion protection keeps a definition that holds
//! objects from being deleted by accident.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "client.rs"]
mod client;

use std::time::Duration;

use serde_json::{Value, json};
use versa_e2e::{Versa, ok, wait_for};

const NAME: &str = "gadgets.evolution.example.com";

/// The definition with `size` bounded by `maximum`, `color` one of `colors`, `label` at most
/// `max_length` long, and `required` fields of `spec`.
fn definition(maximum: i64, colors: &[&str], max_length: i64, required: &[&str]) -> String {
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "evolution.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "required": required, "properties": {
                    "size": {"type": "integer", "maximum": maximum},
                    "color": {"type": "string", "enum": colors},
                    "label": {"type": "string", "maxLength": max_length},
                    "owner": {"type": "string"}}}}}}}],
        },
    })
    .to_string()
}

fn apply(versa: &Versa, dir: &std::path::Path, doc: &str) {
    ok(versa.kubectl_file("apply", dir, "definition", doc));
}

/// The condition `StoredObjectsValid` once it judges `generation`.
fn judged(versa: &Versa, generation: i64) -> Value {
    wait_for(&format!("StoredObjectsValid for generation {generation}"), Duration::from_secs(60), || {
        let def: Value =
            serde_json::from_str(&ok(versa.kubectl(&["get", "resourcedefinition", NAME, "-o", "json"]))).unwrap();
        let conditions = def["status"]["conditions"].as_array().cloned().unwrap_or_default();
        match conditions.iter().find(|c| c["type"] == "StoredObjectsValid") {
            Some(c) if c["observedGeneration"] == generation => Ok(c.clone()),
            other => Err(format!("{other:?}")),
        }
    })
}

#[test]
fn a_tightened_definition_counts_and_names_the_stored_objects_it_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    apply(&versa, dir.path(), &definition(100, &["red", "green", "blue"], 20, &[]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("resourcedefinition/{NAME}")]));
    // 40 gadgets that meet every rule to come, and four that each break one of them.
    let mut items = Vec::new();
    for i in 0..40 {
        items.push(json!({"apiVersion": "evolution.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("ok-{i:02}"), "namespace": "default"},
            "spec": {"size": 5, "color": "red", "label": "short", "owner": "me"}}));
    }
    for (name, spec) in [
        ("big", json!({"size": 50, "color": "red", "label": "short", "owner": "me"})),
        ("green", json!({"size": 5, "color": "green", "label": "short", "owner": "me"})),
        ("wordy", json!({"size": 5, "color": "red", "label": "a rather long label", "owner": "me"})),
        ("orphan", json!({"size": 5, "color": "red", "label": "short"})),
    ] {
        items.push(json!({"apiVersion": "evolution.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}));
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    ok(versa.kubectl_file("create", dir.path(), "gadgets", &list));

    // A dry run of the change says what it would do to them, and changes nothing.
    let tightened = definition(10, &["red", "blue"], 10, &["owner"]);
    std::fs::write(dir.path().join("tightened.yaml"), &tightened).unwrap();
    let dry = versa.kubectl(&["apply", "--dry-run=server", "-f", dir.path().join("tightened.yaml").to_str().unwrap()]);
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let warned = String::from_utf8_lossy(&dry.stderr).into_owned();
    assert!(warned.starts_with("Warning: stored objects: 4 of 44 stored objects would fail validation: "), "{warned}");
    for named in ["default/big (v1)", "default/green (v1)", "default/orphan (v1)", "default/wordy (v1)"] {
        assert!(warned.contains(named), "{named} not in {warned}");
    }
    // `versa diff --server` says the same beside the schema's changes.
    let diff = std::process::Command::new(versa_e2e::versa_bin())
        .args(["diff", "--server", "--kubeconfig", versa.kubeconfig().to_str().unwrap()])
        .arg(dir.path().join("tightened.yaml"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert_eq!(diff.status.code(), Some(1), "{said}{}", String::from_utf8_lossy(&diff.stderr));
    for line in [
        "  breaking v1 .spec.size: maximum lowered from 100 to 10: objects stored before stay updatable while an update leaves the value unchanged (ratcheting)",
        "  breaking v1 .spec.owner: an existing field is now required:",
        "  breaking stored objects: 4 of 44 stored objects would fail validation: default/big (v1): ",
    ] {
        assert!(said.contains(line), "{line:?} not in {said}");
    }
    let def: Value =
        serde_json::from_str(&ok(versa.kubectl(&["get", "resourcedefinition", NAME, "-o", "json"]))).unwrap();
    assert_eq!(def["metadata"]["generation"], 1, "a dry run changed the definition");

    // Tightened four ways: generation 2 is judged, and exactly the four are named.
    apply(&versa, dir.path(), &tightened);
    let condition = judged(&versa, 2);
    assert_eq!(condition["status"], "False", "{condition}");
    assert_eq!(condition["reason"], "SomeInvalid", "{condition}");
    let message = condition["message"].as_str().unwrap();
    assert!(message.starts_with("4 of 44 stored objects fail validation: "), "{message}");
    for named in [
        r#"default/big (v1): spec.size: Invalid value: 50: spec.size in body should be less than or equal to 10"#,
        r#"default/green (v1): spec.color: Unsupported value: "green": supported values: "red", "blue""#,
        r#"default/orphan (v1): spec.owner: Required value"#,
        r#"default/wordy (v1): spec.label: Too long: may not be more than 10 bytes"#,
    ] {
        assert!(message.contains(named), "{named:?} not in {message}");
    }
    assert!(
        message.ends_with("they stay updatable while an update leaves their invalid values unchanged (ratcheting)"),
        "{message}"
    );
    // Ratcheting, as the condition says: an unchanged invalid value does not block an update.
    ok(versa.kubectl(&["label", "gadget", "big", "touched=yes"]));

    // Loosened again: every object fits, and the condition follows.
    apply(&versa, dir.path(), &definition(100, &["red", "green", "blue"], 40, &[]));
    let condition = judged(&versa, 3);
    assert_eq!(condition["status"], "True", "{condition}");
    assert_eq!(condition["reason"], "AllValid");
    assert_eq!(condition["message"], "all 44 stored objects are valid");
}

/// Deletion protection: through versa's own API a definition with stored objects is not deleted
/// (kube's 403, with the count and how to proceed); turning the protection off lets it go with
/// its objects. Through the `customresourcedefinitions` face a definition goes as kube's CRDs
/// do, unless its annotation opts in. A definition without objects is never held.
#[test]
fn a_protected_definition_with_objects_is_not_deleted_by_accident() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    apply(&versa, dir.path(), &definition(100, &["red"], 20, &[]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("resourcedefinition/{NAME}")]));
    for name in ["a", "b", "c"] {
        let gadget = json!({"apiVersion": "evolution.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"size": 1}});
        ok(versa.kubectl_file("create", dir.path(), name, &gadget.to_string()));
    }
    let refused = versa.kubectl(&["delete", "resourcedefinition", NAME]);
    assert!(!refused.status.success());
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        format!(
            "Error from server (Forbidden): resourcedefinitions.versa.dev {NAME:?} is forbidden: deletion protection: 3 objects are stored under this definition, and deleting it deletes them all; delete them first, or turn the protection off: kubectl annotate resourcedefinitions.versa.dev {NAME} versa.dev/deletion-protection=false --overwrite"
        )
    );
    // Through the CRD face it is protected only when it says so.
    ok(versa.kubectl(&["annotate", "resourcedefinition", NAME, "versa.dev/deletion-protection=true"]));
    let refused = versa.kubectl(&["delete", "customresourcedefinition", NAME]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("deletion protection: 3 objects are stored"));
    // Off: the definition goes, with its objects.
    ok(versa.kubectl(&["annotate", "resourcedefinition", NAME, "versa.dev/deletion-protection=false", "--overwrite"]));
    ok(versa.kubectl(&["delete", "resourcedefinition", NAME, "--wait=true", "--timeout=60s"]));

    // The CRD face's default is kube's; a definition without objects is deleted either way.
    let mut crd: Value = serde_json::from_str(&definition(100, &["red"], 20, &[])).unwrap();
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    apply(&versa, dir.path(), &crd.to_string());
    ok(versa.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("crd/{NAME}")]));
    let gadget = json!({"apiVersion": "evolution.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "a", "namespace": "default"}, "spec": {"size": 1}});
    ok(versa.kubectl_file("create", dir.path(), "a", &gadget.to_string()));
    ok(versa.kubectl(&["delete", "crd", NAME, "--wait=true", "--timeout=60s"]));
    apply(&versa, dir.path(), &definition(100, &["red"], 20, &[]));
    ok(versa.kubectl(&["delete", "resourcedefinition", NAME, "--wait=true", "--timeout=60s"]));
}

/// At scale: 10,000 stored objects of about 2 KiB, 7 of which a tightened definition breaks. The
/// dry run and the condition count exactly 7 of 10,000 and name them all; and the walk holds a
/// page at a time — versa's peak RSS grows by far less than the 20 MiB the objects take.
#[tokio::test]
async fn ten_thousand_objects_are_judged_exactly_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    apply(&versa, dir.path(), &definition(100, &["red", "blue"], 4000, &[]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("resourcedefinition/{NAME}")]));
    let client = std::sync::Arc::new(client::Client::admin(dir.path(), &versa.address));
    let path = "/apis/evolution.example.com/v1/namespaces/default/gadgets";
    let broken: std::collections::BTreeSet<usize> = [17, 1_000, 2_345, 5_000, 7_777, 9_001, 9_999].into();
    let label = "x".repeat(2000);
    for chunk in (0..10_000usize).collect::<Vec<_>>().chunks(250) {
        let mut tasks = Vec::new();
        for &i in chunk {
            let size = if broken.contains(&i) { 50 } else { 5 };
            let gadget = json!({"apiVersion": "evolution.example.com/v1", "kind": "Gadget",
                "metadata": {"name": format!("g{i:05}")}, "spec": {"size": size, "label": label}});
            let client = client.clone();
            tasks.push(tokio::spawn(async move { client.post(path, &gadget).await.status }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), 201);
        }
    }
    let rss = |field: &str| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", versa.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    };
    let before = rss("VmHWM:");
    let tightened = definition(10, &["red", "blue"], 4000, &[]);
    std::fs::write(dir.path().join("tightened.yaml"), &tightened).unwrap();
    let dry = versa.kubectl(&["apply", "--dry-run=server", "-f", dir.path().join("tightened.yaml").to_str().unwrap()]);
    let warned = String::from_utf8_lossy(&dry.stderr).into_owned();
    assert!(
        warned.starts_with("Warning: stored objects: 7 of 10000 stored objects would fail validation: "),
        "{warned}"
    );
    apply(&versa, dir.path(), &tightened);
    let condition = judged(&versa, 2);
    let message = condition["message"].as_str().unwrap();
    assert!(message.starts_with("7 of 10000 stored objects fail validation: "), "{message}");
    for i in &broken {
        assert!(
            message.contains(&format!("default/g{i:05} (v1): spec.size: Invalid value: 50")),
            "g{i:05} not in {message}"
        );
    }
    let grown = rss("VmHWM:").saturating_sub(before);
    println!(
        "peak RSS grew by {:.1} MiB while judging 10,000 objects of 20 MiB, twice",
        grown as f64 / (1024.0 * 1024.0)
    );
    assert!(grown < 10 * 1024 * 1024, "peak RSS grew by {grown} bytes");
}
