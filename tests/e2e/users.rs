//! Users of a standalone server (issue 38, authentication): the real kubectl as alice, with a
//! client certificate `versa kubeconfig` issued, and as bob, with a token of
//! `--token-auth-file`; a token the file does not hold is 401; ServiceAccounts as kubectl
//! manages them; RBAC objects granting and taking back (kube-apiserver judges the same users and
//! objects in `kube_rbac.rs`). Who the server thinks a user is shows in kube's 403 text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::Command;

use versa_e2e::{Versa, fails, kubectl, ok, until, versa_bin};

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

#[test]
fn kubectl_with_a_token_of_the_token_file_is_that_user() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bob-token,bob,uid-bob,\"devs,ops\"\nroot-token,root,uid-root,system:masters\n").unwrap();
    let versa = Versa::start_with(&dir.path().join("data"), &["--token-auth-file", tokens.to_str().unwrap()]);
    let bob = versa.token_kubeconfig(dir.path(), "bob", "bob-token");
    let denied = fails(kubectl(&bob, &["get", "--raw", "/api/v1/namespaces/default/configmaps"]));
    assert!(denied.contains("User \"bob\" cannot list resource \"configmaps\""), "{denied}");
    let root = versa.token_kubeconfig(dir.path(), "root", "root-token");
    ok(kubectl(&root, &["create", "configmap", "made-by-token"]));
    // A token the file does not hold: 401, as kube answers it.
    let stranger = versa.token_kubeconfig(dir.path(), "stranger", "no-such-token");
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

const WIDGETS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// RBAC objects decide what a user may do, as in kube: a Role and its RoleBinding let alice
/// read ConfigMaps in one namespace only; a ClusterRole of one custom resource's `status` (and
/// reading it, which kubectl's patch does first) lets her write the status and nothing else; deleting the binding takes the grant back; kube's
/// validation refuses a namespaced rule of non-resource URLs.
#[test]
fn rbac_objects_grant_and_take_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("data");
    let versa = Versa::start(&data);
    let alice = issue(&versa, d, "alice", &["devs"]);
    ok(versa.kubectl(&["create", "namespace", "team"]));
    ok(versa.kubectl(&["create", "configmap", "settings", "-n", "team", "--from-literal=a=b"]));
    let err = fails(kubectl(&alice, &["get", "configmaps", "-n", "team"]));
    assert!(
        err.contains(r#"User "alice" cannot list resource "configmaps" in API group "" in the namespace "team""#),
        "{err}"
    );

    // kubectl's typed client creates both (protobuf bodies).
    ok(versa.kubectl(&["create", "role", "cm-reader", "-n", "team", "--verb=get,list,watch", "--resource=configmaps"]));
    ok(versa.kubectl(&["create", "rolebinding", "alice-reads", "-n", "team", "--role=cm-reader", "--user=alice"]));
    assert!(until(&alice, &["get", "configmaps", "-n", "team"], true).contains("settings"));
    let err = fails(kubectl(&alice, &["get", "configmaps", "-n", "default"]));
    assert!(err.contains(r#"cannot list resource "configmaps" in API group "" in the namespace "default""#), "{err}");
    let err = fails(kubectl(&alice, &["delete", "configmap", "settings", "-n", "team"]));
    assert!(err.contains(r#"cannot delete resource "configmaps""#), "{err}");

    // Only the status of widgets.
    ok(versa.kubectl_file("apply", d, "widgets", WIDGETS));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com"]));
    ok(versa.kubectl_file(
        "apply",
        d,
        "w1",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: team}\nspec: {size: 1}\n",
    ));
    ok(versa.kubectl_file(
        "apply",
        d,
        "status-role",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: widget-status}\n\
         rules:\n- {apiGroups: [example.com], resources: [widgets/status], verbs: [get, patch, update]}\n\
         - {apiGroups: [example.com], resources: [widgets], verbs: [get]}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: alice-status, namespace: team}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-status}\n\
         subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n",
    ));
    let status = [
        "patch",
        "widget",
        "w1",
        "-n",
        "team",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ok":true}}"#,
    ];
    until(&alice, &status, true);
    let err = fails(kubectl(
        &alice,
        &["patch", "widget", "w1", "-n", "team", "--type=merge", "-p", r#"{"spec":{"size":2}}"#],
    ));
    assert!(
        err.contains(r#"cannot patch resource "widgets" in API group "example.com" in the namespace "team""#),
        "{err}"
    );

    // kubectl auth can-i asks the same authorizer (SelfSubjectAccessReviews).
    let can = |args: &[&str]| {
        let out = kubectl(&alice, &[&["auth", "can-i"], args].concat());
        let said = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if said.is_empty() { String::from_utf8_lossy(&out.stderr).into_owned() } else { said }
    };
    assert_eq!(can(&["list", "configmaps", "-n", "team"]), "yes");
    assert_eq!(can(&["list", "configmaps", "-n", "default"]), "no");
    assert_eq!(can(&["patch", "widgets.example.com", "--subresource=status", "-n", "team"]), "yes");
    assert_eq!(can(&["patch", "widgets.example.com", "-n", "team"]), "no");
    assert_eq!(can(&["get", "/apis"]), "yes");
    assert_eq!(can(&["get", "/metrics"]), "no");

    // The binding gone, the grant is gone — for new requests: a watch opened while it was in
    // force goes on (kube decides a request once, when it starts).
    let mut watch = versa_e2e::Printing::start(Command::new("kubectl").arg("--kubeconfig").arg(&alice).args([
        "get",
        "configmaps",
        "-n",
        "team",
        "-w",
        "-o",
        "name",
    ]));
    watch.wait_for("the watch's first list", |l| l.contains("configmap/settings"));
    ok(versa.kubectl(&["delete", "rolebinding", "alice-reads", "-n", "team"]));
    until(&alice, &["get", "configmaps", "-n", "team"], false);
    ok(versa.kubectl(&["create", "configmap", "after", "-n", "team"]));
    watch.wait_for("an event after the binding went", |l| l.contains("configmap/after"));
    watch.kill();

    // kube's validation.
    let err = fails(versa.kubectl_file(
        "apply",
        d,
        "bad-role",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: bad, namespace: team}\n\
         rules:\n- {nonResourceURLs: [/healthz], verbs: [get]}\n",
    ));
    assert!(err.contains("rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs"), "{err}");
    let err = fails(versa.kubectl(&[
        "patch",
        "rolebinding",
        "alice-status",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"roleRef":{"name":"other"}}"#,
    ]));
    assert!(err.contains("roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"other\"}: cannot change roleRef"), "{err}");
}
