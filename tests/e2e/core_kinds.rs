//! Standalone versa's ConfigMaps and Leases (issue 37) judged by their real clients: kubectl
//! explains, creates, applies (client-side and server-side), patches, edits and lists them, and
//! client-go's leader election (`hack/leader-election`, built here from the Go module cache)
//! elects one leader of two and hands over when the leader is killed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use versa_e2e::{Printing, Versa, fails, go_program, kubectl_command, ok};

fn get(versa: &Versa, args: &[&str]) -> Value {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    serde_json::from_str(&ok(versa.kubectl(&args))).unwrap()
}

const SETTINGS_V1: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: fast, level: "1"}
"#;

const SETTINGS_V2: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: slow}
"#;

#[test]
fn kubectl_manages_configmaps_and_leases() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let versa = Versa::start(&d.join("data"));

    // Discovery: kubectl knows both kinds, the short name `cm` and the Lease group.
    let resources = ok(versa.kubectl(&["api-resources"]));
    assert!(resources.lines().any(|l| l.starts_with("configmaps ") && l.contains(" cm ")), "{resources}");
    assert!(resources.lines().any(|l| l.starts_with("leases ") && l.contains("coordination.k8s.io/v1")), "{resources}");

    // OpenAPI v3: kubectl explain reads the core group's document at `api/v1`.
    let explained = ok(versa.kubectl(&["explain", "cm.binaryData"]));
    assert!(explained.contains("KIND:       ConfigMap"), "{explained}");
    let explained = ok(versa.kubectl(&["explain", "lease.spec.renewTime"]));
    assert!(explained.contains("GROUP:      coordination.k8s.io"), "{explained}");

    // `kubectl create configmap` goes through the typed client (a protobuf body).
    ok(versa.kubectl(&["create", "configmap", "literal", "--from-literal=a=b", "--from-literal=c=d"]));
    assert_eq!(ok(versa.kubectl(&["get", "cm", "literal", "-o", "jsonpath={.data.c}"])), "d");

    // Client-side apply, then the changed file: a three-way strategic merge patch.
    ok(versa.kubectl_file("apply", d, "settings", SETTINGS_V1));
    let out = ok(versa.kubectl_file("apply", d, "settings", SETTINGS_V2));
    assert!(out.contains("configmap/settings configured"), "{out}");
    let live = get(&versa, &["cm", "settings"]);
    assert_eq!(live["data"], serde_json::json!({"mode": "slow"}));
    assert!(live["metadata"].get("generation").is_none(), "{live}");

    // Edit, non-interactively.
    let editor = d.join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/mode: slow/mode: edited/' \"$1\"\n").unwrap();
    Command::new("chmod").arg("+x").arg(&editor).status().unwrap();
    ok(kubectl_command(&versa.kubeconfig())
        .args(["edit", "cm", "settings"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .unwrap());
    assert_eq!(ok(versa.kubectl(&["get", "cm", "settings", "-o", "jsonpath={.data.mode}"])), "edited");

    // kube's validation, through kubectl.
    let err = fails(versa.kubectl(&["create", "configmap", "bad", "--from-literal=a/b=c"]));
    assert!(err.contains("a valid config key must consist of alphanumeric characters"), "{err}");
    ok(versa.kubectl(&["patch", "cm", "settings", "-p", r#"{"immutable":true}"#]));
    let err = fails(versa.kubectl(&["patch", "cm", "settings", "-p", r#"{"data":{"mode":"other"}}"#]));
    assert!(err.contains("data: Forbidden: field is immutable when `immutable` is set"), "{err}");

    // A Lease applied server-side, then renewed by a second manager; `kubectl get` shows its
    // holder; a time kube would not decode is refused with its error.
    let lease = |holder: &str, renew: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: lock, namespace: default}}\n\
             spec: {{holderIdentity: {holder}, leaseDurationSeconds: 15, renewTime: \"{renew}\"}}\n"
        )
    };
    let file = d.join("lease.yaml");
    std::fs::write(&file, lease("one", "2026-01-02T03:04:05.123456+01:00")).unwrap();
    ok(versa.kubectl(&["apply", "--server-side", "--field-manager=one", "-f", file.to_str().unwrap()]));
    let live = get(&versa, &["lease", "lock"]);
    assert_eq!(live["spec"]["renewTime"], "2026-01-02T02:04:05.123456Z");
    std::fs::write(&file, lease("two", "2026-01-02T03:04:06.000000Z")).unwrap();
    let err = fails(versa.kubectl(&["apply", "--server-side", "--field-manager=two", "-f", file.to_str().unwrap()]));
    assert!(err.contains("conflict"), "{err}");
    ok(versa.kubectl(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=two",
        "-f",
        file.to_str().unwrap(),
    ]));
    let table = ok(versa.kubectl(&["get", "lease", "lock"]));
    assert!(table.starts_with("NAME") && table.contains("HOLDER") && table.contains("lock   two"), "{table}");
    std::fs::write(&file, lease("three", "2026-01-02T03:04:07Z")).unwrap();
    let err = fails(versa.kubectl(&["apply", "-f", file.to_str().unwrap()]));
    assert!(err.contains(r#"cannot parse "Z" as ".000000""#), "{err}");
}

/// A leader-election candidate of `hack/leader-election`.
fn candidate(bin: &Path, kubeconfig: &Path, id: &str) -> Printing {
    Printing::start(Command::new(bin).arg(kubeconfig).arg(id).stderr(Stdio::null()))
}

/// client-go's leader election with a `LeaseLock` (what controller-runtime's manager runs):
/// of two candidates one leads; killed, the other takes over, and the Lease says so.
#[test]
fn client_go_leader_election_hands_over() {
    let bin = go_program("leader-election", false);
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let kubeconfig = versa.kubeconfig();

    let mut first = candidate(&bin, &kubeconfig, "first");
    first.wait_for("first leading", |l| l == "leading first");
    let second = candidate(&bin, &kubeconfig, "second");
    second.wait_for("second seeing first lead", |l| l == "leader first");
    let lease = get(&versa, &["lease", "operator-lock"]);
    assert_eq!(lease["spec"]["holderIdentity"], "first");
    assert_eq!(lease["spec"]["leaseTransitions"], 0);

    first.kill();
    second.wait_for("second leading", |l| l == "leading second");
    let lease = get(&versa, &["lease", "operator-lock"]);
    assert_eq!(lease["spec"]["holderIdentity"], "second");
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    let renew = lease["spec"]["renewTime"].as_str().unwrap();
    assert_eq!(renew.len(), "2006-01-02T15:04:05.000000Z".len(), "MicroTime as kube writes it: {renew}");
}
