//! Standalone versa for more than one person (issue 38): `versa kubeconfig --user` issues a
//! kubeconfig with a client certificate from the data directory's CA, and `--token-auth-file`
//! takes kube's static token file. kubectl as each is seen as that user (kube's 403 names them;
//! `system:masters` may do anything); an unknown token is kube's 401; a token file kube refuses
//! stops the start.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::{Path, PathBuf};
use std::process::Command;

use versa_e2e::{Versa, fails, kubectl, ok, versa_bin};

const TOKENS: &str = "bob-token,bob,1001,\"devs,ops\"\nroot-token,root,0,system:masters\n";

/// `versa kubeconfig` with `args`, written to `<dir>/<name>.kubeconfig`.
fn issue(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(format!("{name}.kubeconfig"));
    let out = Command::new(versa_bin()).arg("kubeconfig").args(args).arg("-o").arg(&path).output().unwrap();
    assert!(out.status.success(), "versa kubeconfig {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    path
}

/// A kubeconfig of the same server and CA as `admin`, with `token` as its only credential.
fn token_kubeconfig(admin: &Path, dir: &Path, name: &str, token: &str) -> PathBuf {
    let text = std::fs::read_to_string(admin).unwrap();
    let field = |key: &str| text.lines().find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_owned())).unwrap();
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: versa\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n\
         users:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: versa\n  context:\n    cluster: versa\n    user: {name}\n\
         current-context: versa\n",
        field("server:"),
        field("certificate-authority-data:"),
    );
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, kubeconfig).unwrap();
    path
}

#[test]
fn users_by_certificate_and_by_token() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tokens = d.join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let data = d.join("data");
    let versa = Versa::start_with(&data, &["--token-auth-file", tokens.to_str().unwrap()]);
    let data_dir = data.to_str().unwrap();

    // A certificate for alice: she is alice, and not allowed (only system:masters is, until
    // RBAC grants her more).
    let alice = issue(d, "alice", &["--user", "alice", "--group", "devs", "--data-dir", data_dir]);
    let err = fails(kubectl(&alice, &["get", "namespaces"]));
    assert!(
        err.contains(r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#),
        "{err}"
    );
    // A certificate in system:masters may do anything.
    let carol = issue(d, "carol", &["--user", "carol", "--group", "system:masters", "--data-dir", data_dir]);
    assert!(ok(kubectl(&carol, &["get", "namespaces"])).contains("default"));

    // Tokens of the file: bob is bob; root is in system:masters.
    let bob = token_kubeconfig(&versa.kubeconfig(), d, "bob", "bob-token");
    let err = fails(kubectl(&bob, &["get", "namespaces"]));
    assert!(err.contains(r#"User "bob" cannot list resource "namespaces""#), "{err}");
    let root = token_kubeconfig(&versa.kubeconfig(), d, "root", "root-token");
    assert!(ok(kubectl(&root, &["get", "namespaces"])).contains("default"));
    // A token nobody issued: kube's 401.
    let stranger = token_kubeconfig(&versa.kubeconfig(), d, "stranger", "not-a-token");
    let err = fails(kubectl(&stranger, &["get", "namespaces"]));
    assert!(err.contains("error: You must be logged in to the server (Unauthorized)"), "{err}");
}

#[test]
fn bad_requests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let versa = Versa::start(&d.join("data"));
    let data_dir = d.join("data");

    // A certificate valid for longer than a year, or for no user, is not issued.
    for (args, want) in [
        (vec!["--user", "alice", "--days", "400"], "--days must be between 1 and 365, not 400"),
        (vec!["--user", ""], "\"\" is not a user name"),
    ] {
        let out =
            Command::new(versa_bin()).arg("kubeconfig").args(&args).arg("--data-dir").arg(&data_dir).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(want), "{args:?}: {stderr}");
    }
    drop(versa);

    // A token file kube refuses stops the start, with kube's message.
    let tokens = d.join("tokens.csv");
    std::fs::write(&tokens, "bob-token,bob\n").unwrap();
    let out = Command::new(versa_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(d.join("other"))
        .arg("--token-auth-file")
        .arg(&tokens)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("must have at least 3 columns (token, user name, user uid), found 2"),
        "{stderr}"
    );
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

/// Waits until kubectl as `kubeconfig` with `args` succeeds (`allowed`) or is refused.
fn until(kubeconfig: &Path, args: &[&str], allowed: bool) -> String {
    versa_e2e::wait_for(&format!("{args:?} allowed={allowed}"), std::time::Duration::from_secs(30), || {
        let out = kubectl(kubeconfig, args);
        let text = String::from_utf8_lossy(if out.status.success() { &out.stdout } else { &out.stderr }).into_owned();
        if out.status.success() == allowed { Ok(text) } else { Err(text) }
    })
}

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
    let alice = issue(d, "alice", &["--user", "alice", "--group", "devs", "--data-dir", data.to_str().unwrap()]);
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

    // The binding gone, the grant is gone.
    ok(versa.kubectl(&["delete", "rolebinding", "alice-reads", "-n", "team"]));
    until(&alice, &["get", "configmaps", "-n", "team"], false);

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
    assert!(err.contains("roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"other\"}: cannot change roleRef"), "{err}");
}
