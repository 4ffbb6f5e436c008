//! Users of a standalone server (issue 38, authentication): the real kubectl as alice, with a
//! client certificate `versa kubeconfig` issued. Until RBAC lands only `system:masters` may do
//! anything, so who the server thinks a user is shows in kube's 403 text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::Command;

use versa_e2e::{Versa, fails, kubectl, ok, versa_bin};

/// `versa kubeconfig` for `user` in `groups`, written to `<dir>/<user>.kubeconfig`.
fn issue(versa: &Versa, dir: &Path, user: &str, groups: &[&str]) -> std::path::PathBuf {
    let path = dir.join(format!("{user}.kubeconfig"));
    let mut command = Command::new(versa_bin());
    command.args(["kubeconfig", "--user", user, "--days", "2", "--data-dir"]).arg(&versa.data_dir);
    for group in groups {
        command.args(["--group", group]);
    }
    let output = command.arg("-o").arg(&path).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    path
}

#[test]
fn kubectl_with_an_issued_certificate_is_that_user() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let alice = issue(&versa, dir.path(), "alice", &["devs"]);
    let denied = fails(kubectl(&alice, &["get", "--raw", "/api/v1/namespaces/default/configmaps"]));
    assert!(
        denied.contains(
            "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        ),
        "{denied}"
    );
    // A user in system:masters may do anything.
    let root = issue(&versa, dir.path(), "root", &["devs", "system:masters"]);
    ok(kubectl(&root, &["create", "configmap", "made-by-root"]));
    assert!(ok(kubectl(&root, &["get", "configmaps"])).contains("made-by-root"));
}
