//! Standalone versa judged by real operators (issue 37): a controller-runtime operator
//! (`hack/operator`, built here against the pinned controller-runtime v0.24.1) reconciles
//! Parents into owned Children and writes their status, two instances elect one leader on a
//! Lease and hand over when it is killed, and deleting a Parent deletes its Children (the
//! garbage collector); the operator's own envtest suite runs unchanged against a running versa
//! (envtest's `UseExistingCluster` path).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use versa_e2e::{Printing, Versa, go_program, ok, wait_for};

fn operator_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/operator")
}

fn get(versa: &Versa, args: &[&str]) -> Result<Value, String> {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    let out = versa.kubectl(&args);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// The names of the Children in `default`.
fn children(versa: &Versa) -> Vec<String> {
    let list = get(versa, &["children.ops.example.com"]).unwrap();
    list["items"].as_array().unwrap().iter().map(|c| c["metadata"]["name"].as_str().unwrap().to_owned()).collect()
}

/// An operator instance with leader election on.
fn operator(bin: &Path, kubeconfig: &Path, id: &str) -> Printing {
    Printing::start(
        Command::new(bin).args(["--id", id, "--leader-elect"]).env("KUBECONFIG", kubeconfig).stderr(Stdio::null()),
    )
}

/// Waits until Parent `name` has `n` Children and says so in its status.
fn reconciled(versa: &Versa, name: &str, n: usize) {
    wait_for(&format!("{name} with {n} children"), Duration::from_secs(60), || {
        let parent = get(versa, &["parent.ops.example.com", name])?;
        let ready = parent["status"]["ready"].as_u64();
        let observed = parent["status"]["observedGeneration"].as_u64();
        let names = children(versa);
        match (ready, observed) {
            (Some(r), Some(g))
                if r == n as u64 && Some(g) == parent["metadata"]["generation"].as_u64() && names.len() == n =>
            {
                Ok(())
            }
            _ => Err(format!("status {}, children {names:?}", parent["status"])),
        }
    });
}

#[test]
fn a_controller_runtime_operator_reconciles_elects_and_hands_over() {
    let bin = go_program("operator", false);
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let kubeconfig = versa.kubeconfig();
    let crds = operator_dir().join("crds");
    ok(versa.kubectl(&["apply", "-f", crds.to_str().unwrap()]));
    ok(versa.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/parents.ops.example.com",
        "crd/children.ops.example.com",
    ]));

    let mut first = operator(&bin, &kubeconfig, "first");
    first.wait_for("first leading", |l| l == "leading first");
    let second = operator(&bin, &kubeconfig, "second");
    let lease = get(&versa, &["lease", "ops-example-com-operator"]).unwrap();
    let first_holder = lease["spec"]["holderIdentity"].as_str().unwrap().to_owned();

    ok(versa.kubectl_file(
        "apply",
        dir.path(),
        "p1",
        "apiVersion: ops.example.com/v1\nkind: Parent\nmetadata: {name: p1, namespace: default}\nspec: {children: 2}\n",
    ));
    reconciled(&versa, "p1", 2);
    let child = get(&versa, &["child.ops.example.com", "p1-0"]).unwrap();
    let reference = &child["metadata"]["ownerReferences"][0];
    assert_eq!((reference["kind"].as_str(), reference["controller"].as_bool()), (Some("Parent"), Some(true)));
    assert_eq!(reference["blockOwnerDeletion"], true);

    // The leader killed: the other takes the Lease over and goes on reconciling.
    first.kill();
    second.wait_for("second leading", |l| l == "leading second");
    let lease = get(&versa, &["lease", "ops-example-com-operator"]).unwrap();
    assert_ne!(lease["spec"]["holderIdentity"].as_str().unwrap(), first_holder);
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    ok(versa.kubectl(&["patch", "parent.ops.example.com", "p1", "--type=merge", "-p", r#"{"spec":{"children":3}}"#]));
    reconciled(&versa, "p1", 3);

    // The Parent deleted: the garbage collector deletes its Children.
    ok(versa.kubectl(&["delete", "parent.ops.example.com", "p1"]));
    wait_for("p1's children gone", Duration::from_secs(60), || match children(&versa) {
        names if names.is_empty() => Ok(()),
        names => Err(format!("{names:?}")),
    });
}

#[test]
fn the_operators_envtest_suite_runs_against_versa() {
    let bin = go_program("operator", true);
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let out = Command::new(bin)
        .arg("-test.v")
        .env("KUBECONFIG", versa.kubeconfig())
        .current_dir(operator_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("--- PASS").count(), 2, "{stdout}");
}
