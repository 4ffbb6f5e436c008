//! Strategic merge patch on standalone versa's built-in kinds, driven by real kubectl: kubectl
//! patches every kind compiled into client-go's scheme that way — client-side `kubectl apply`
//! of a changed file, `kubectl patch` (strategic by default), `kubectl edit` — so these are the
//! commands that must work on ValidatingAdmissionPolicies, webhook configurations, Namespaces
//! and Secrets. A custom resource still answers a strategic merge patch with kube's 415.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use versa_e2e::{Versa, fails, ok};

fn apply(versa: &Versa, dir: &Path, name: &str, yaml: &str) -> String {
    ok(versa.kubectl_file("apply", dir, name, yaml))
}

fn get(versa: &Versa, args: &[&str]) -> Value {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    serde_json::from_str(&ok(versa.kubectl(&args))).unwrap()
}

const POLICY_V1: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: limits}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [gadgets], scope: "*"}
  variables:
  - {name: replicas, expression: "object.spec.replicas"}
  - {name: size, expression: "object.spec.size"}
  validations:
  - {expression: "variables.replicas <= 5", message: at most 5}
  - {expression: "variables.size != 'huge'", message: not huge}
"#;

/// The same file with a validation changed and one removed, and a variable removed. (Both name
/// the rules' `scope`: kube defaults it to `*`, and `resourceRules` is an atomic list, so a file
/// without it would differ from the live object at every apply — "configured" each time, as
/// with kube.)
const POLICY_V2: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: limits}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [gadgets], scope: "*"}
  variables:
  - {name: replicas, expression: "object.spec.replicas"}
  validations:
  - {expression: "variables.replicas <= 3", message: at most 3}
"#;

fn webhooks(second: &str) -> String {
    format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: gadget-hooks}}
webhooks:
- name: first.example.com
  clientConfig: {{url: "https://127.0.0.1:1/first"}}
  rules:
  - {{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets]}}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: {second}
"#
    )
}

const SECOND_WEBHOOK: &str = r#"- name: second.example.com
  clientConfig: {url: "https://127.0.0.1:1/second"}
  rules:
  - {apiGroups: [example.com], apiVersions: [v1], operations: [DELETE], resources: [gadgets]}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
"#;

#[test]
fn kubectl_apply_changes_admission_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let versa = Versa::start(&d.join("data"));

    // A ValidatingAdmissionPolicy applied, then applied again changed: client-side apply sends a
    // three-way strategic merge patch; `validations` has no strategy (replaced), `variables`
    // merges by name (the removed one is deleted by a `$patch: delete` item).
    apply(&versa, d, "policy", POLICY_V1);
    let out = apply(&versa, d, "policy", POLICY_V2);
    assert!(out.contains("validatingadmissionpolicy.admissionregistration.k8s.io/limits configured"), "{out}");
    let live = get(&versa, &["validatingadmissionpolicy", "limits"]);
    assert_eq!(live["spec"]["validations"], json!([{"expression": "variables.replicas <= 3", "message": "at most 3"}]));
    assert_eq!(live["spec"]["variables"], json!([{"name": "replicas", "expression": "object.spec.replicas"}]));
    assert_eq!(live["spec"]["failurePolicy"], "Fail");
    // Applying the same file again changes nothing.
    let out = apply(&versa, d, "policy", POLICY_V2);
    assert!(out.contains("limits unchanged"), "{out}");

    // A ValidatingWebhookConfiguration with two webhooks, then the file with the first changed
    // and the second removed: `webhooks` merge by name.
    apply(&versa, d, "hooks", &(webhooks("10") + SECOND_WEBHOOK));
    let live = get(&versa, &["validatingwebhookconfiguration", "gadget-hooks"]);
    assert_eq!(live["webhooks"].as_array().unwrap().len(), 2, "{live}");
    let out = apply(&versa, d, "hooks", &webhooks("5"));
    assert!(out.contains("gadget-hooks configured"), "{out}");
    let live = get(&versa, &["validatingwebhookconfiguration", "gadget-hooks"]);
    let hooks = live["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1, "{live}");
    assert_eq!(hooks[0]["name"], "first.example.com");
    assert_eq!(hooks[0]["timeoutSeconds"], 5);
    assert_eq!(hooks[0]["clientConfig"]["url"], "https://127.0.0.1:1/first");
    // And back: the second webhook comes again, after the first as in the file.
    apply(&versa, d, "hooks", &(webhooks("5") + SECOND_WEBHOOK));
    let live = get(&versa, &["validatingwebhookconfiguration", "gadget-hooks"]);
    let names: Vec<&str> = live["webhooks"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first.example.com", "second.example.com"]);

    // `kubectl patch` is strategic by default.
    ok(versa.kubectl(&[
        "patch",
        "validatingwebhookconfiguration",
        "gadget-hooks",
        "-p",
        r#"{"webhooks":[{"name":"second.example.com","$patch":"delete"}]}"#,
    ]));
    let live = get(&versa, &["validatingwebhookconfiguration", "gadget-hooks"]);
    assert_eq!(live["webhooks"].as_array().unwrap().len(), 1, "{live}");

    // A malformed strategic patch: kube's answer (500, no reason) for an item without its key.
    let err = fails(versa.kubectl(&[
        "patch",
        "validatingwebhookconfiguration",
        "gadget-hooks",
        "-p",
        r#"{"webhooks":[{"timeoutSeconds":3}]}"#,
    ]));
    assert!(
        err.contains("Error from server: map: map[timeoutSeconds:3] does not contain declared merge key: name"),
        "{err}"
    );
}

const SECRET_V1: &str = r#"
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
type: Opaque
data: {user: YWRtaW4=, password: b2xk}
"#;

const SECRET_V2: &str = r#"
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default, labels: {app: demo}}
type: Opaque
data: {password: bmV3}
"#;

#[test]
fn kubectl_patches_namespaces_and_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let versa = Versa::start(&d.join("data"));

    // Namespaces: label, and a strategic patch of the metadata.
    ok(versa.kubectl(&["create", "namespace", "team"]));
    ok(versa.kubectl(&["label", "namespace", "team", "tier=gold"]));
    ok(versa.kubectl(&["patch", "namespace", "team", "-p", r#"{"metadata":{"annotations":{"owner":"ops"}}}"#]));
    let live = get(&versa, &["namespace", "team"]);
    assert_eq!(live["metadata"]["labels"]["tier"], "gold", "{live}");
    assert_eq!(live["metadata"]["labels"]["kubernetes.io/metadata.name"], "team", "{live}");
    assert_eq!(live["metadata"]["annotations"]["owner"], "ops", "{live}");

    // Secrets: applied twice with changed data (a key changed, one removed, a label added).
    apply(&versa, d, "secret", SECRET_V1);
    let out = apply(&versa, d, "secret", SECRET_V2);
    assert!(out.contains("secret/creds configured"), "{out}");
    let live = get(&versa, &["secret", "creds"]);
    assert_eq!(live["data"], json!({"password": "bmV3"}), "{live}");
    assert_eq!(live["metadata"]["labels"], json!({"app": "demo"}), "{live}");

    // Annotate, and a strategic patch (the default type) that adds a key and removes one.
    ok(versa.kubectl(&["annotate", "secret", "creds", "rotated=yes"]));
    ok(versa.kubectl(&["patch", "secret", "creds", "-p", r#"{"data":{"token":"dA==","password":null}}"#]));
    ok(versa.kubectl(&[
        "patch",
        "secret",
        "creds",
        "--type=strategic",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/keep"]}}"#,
    ]));
    let live = get(&versa, &["secret", "creds"]);
    assert_eq!(live["data"], json!({"token": "dA=="}), "{live}");
    assert_eq!(live["metadata"]["annotations"]["rotated"], "yes", "{live}");
    assert_eq!(live["metadata"]["finalizers"], json!(["example.com/keep"]), "{live}");
    ok(versa.kubectl(&[
        "patch",
        "secret",
        "creds",
        "-p",
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/keep"]}}"#,
    ]));
    let live = get(&versa, &["secret", "creds"]);
    assert_eq!(live["metadata"].get("finalizers"), None, "{live}");
}

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
"#;

#[test]
fn custom_resources_refuse_strategic_merge_patch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let versa = Versa::start(&d.join("data"));
    apply(&versa, d, "crd", GADGETS);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !versa.kubectl(&["get", "gadgets"]).status.success() {
        assert!(Instant::now() < deadline, "the definition is not served");
        std::thread::sleep(Duration::from_millis(200));
    }
    apply(
        &versa,
        d,
        "gadget",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\nspec: {replicas: 1}\n",
    );

    let err = fails(versa.kubectl(&["patch", "gadget", "g", "--type=strategic", "-p", r#"{"spec":{"replicas":2}}"#]));
    assert!(
        err.contains(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        ),
        "{err}"
    );
    // Client-side apply of a changed custom resource uses a JSON merge patch, and works.
    apply(
        &versa,
        d,
        "gadget",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\nspec: {replicas: 3}\n",
    );
    assert_eq!(get(&versa, &["gadget", "g"])["spec"]["replicas"], 3);
}
