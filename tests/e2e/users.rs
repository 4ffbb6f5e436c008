//! Users of a standalone server (issue 38, authentication): the real kubectl as alice, with a
//! client certificate `versa kubeconfig` issued, and as bob, with a token of
//! `--token-auth-file`; a token the file does not hold is 401; ServiceAccounts as kubectl
//! manages them. Until RBAC lands only `system:masters` may do
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

/// A kubeconfig for the server of `versa` with a bearer token.
fn with_token(versa: &Versa, dir: &Path, name: &str, token: &str) -> std::path::PathBuf {
    let admin = std::fs::read_to_string(versa.kubeconfig()).unwrap();
    let cluster: String = admin.lines().take_while(|l| !l.starts_with("users:")).map(|l| format!("{l}\n")).collect();
    let text = format!(
        "{cluster}users:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: versa\n  context:\n    cluster: versa\n    user: {name}\ncurrent-context: versa\n"
    );
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn kubectl_with_a_token_of_the_token_file_is_that_user() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bob-token,bob,uid-bob,\"devs,ops\"\nroot-token,root,uid-root,system:masters\n").unwrap();
    let versa = Versa::start_with(&dir.path().join("data"), &["--token-auth-file", tokens.to_str().unwrap()]);
    let bob = with_token(&versa, dir.path(), "bob", "bob-token");
    let denied = fails(kubectl(&bob, &["get", "--raw", "/api/v1/namespaces/default/configmaps"]));
    assert!(denied.contains("User \"bob\" cannot list resource \"configmaps\""), "{denied}");
    let root = with_token(&versa, dir.path(), "root", "root-token");
    ok(kubectl(&root, &["create", "configmap", "made-by-token"]));
    // A token the file does not hold: 401, as kube answers it.
    let stranger = with_token(&versa, dir.path(), "stranger", "no-such-token");
    let unauthorized = fails(kubectl(&stranger, &["get", "--raw", "/api/v1/namespaces/default/configmaps"]));
    assert!(unauthorized.contains("Unauthorized"), "{unauthorized}");
}

#[test]
fn a_malformed_token_file_stops_the_start_with_kubes_message() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bob-token,bob\n").unwrap();
    let output = Command::new(versa_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--token-auth-file")
        .arg(&tokens)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let want =
        format!("token file '{}' must have at least 3 columns (token, user name, user uid), found 2", tokens.display());
    assert!(stderr.contains(&want), "{stderr}");
}

#[test]
fn kubectl_manages_service_accounts() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    // `kubectl create serviceaccount` sends protobuf with the typed client.
    ok(versa.kubectl(&["create", "serviceaccount", "robot"]));
    ok(versa.kubectl(&["patch", "sa", "robot", "-p", r#"{"automountServiceAccountToken":false}"#]));
    let read = ok(versa.kubectl(&[
        "get",
        "sa",
        "robot",
        "-o",
        "jsonpath={.metadata.namespace} {.automountServiceAccountToken}",
    ]));
    assert_eq!(read, "default false");
    let invalid = fails(versa.kubectl(&["create", "sa", "Bad_Name"]));
    assert!(
        invalid.contains("metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{invalid}"
    );
    ok(versa.kubectl(&["delete", "sa", "robot"]));
}
