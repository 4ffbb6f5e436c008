//! Admission on standalone versa, driven by real kubectl: the `admissionregistration.k8s.io/v1`
//! objects are applied like any other, and then run on writes of the custom resources versa
//! serves — ValidatingAdmissionPolicies that deny or warn, a MutatingAdmissionPolicy that sets a
//! field, and webhooks served by a real HTTPS process (this file's `AdmissionWebhook`): a
//! mutating one whose patch is then pruned and validated by the schema, a validating one that
//! denies, and one that is down under `failurePolicy: Fail` (refused, nothing written) and
//! `Ignore` (skipped); mutating admission of deletes and of the scale subresource, and the
//! type checking written to policies' status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio_rustls::TlsAcceptor;
use versa_e2e::{Versa, fails, ok};

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
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
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              replicas: {type: integer}
              size: {type: string, enum: [small, large]}
"#;

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default, labels: {{app: demo}}}}\nspec: {spec}\n"
    )
}

fn apply(versa: &Versa, dir: &std::path::Path, name: &str, yaml: &str) -> std::process::Output {
    versa.kubectl_file("apply", dir, name, yaml)
}

fn create(versa: &Versa, dir: &std::path::Path, name: &str, yaml: &str) -> std::process::Output {
    versa.kubectl_file("create", dir, name, yaml)
}

/// Retries `attempt` until it says done: configuration changes take effect within moments (a
/// watch), not at once.
fn eventually(what: &str, attempt: impl FnMut() -> Result<(), String>) {
    versa_e2e::wait_for(what, Duration::from_secs(20), attempt);
}

fn start() -> (tempfile::TempDir, Versa) {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    ok(apply(&versa, dir.path(), "crd", WIDGETS));
    eventually("the definition is served", || {
        let out = versa.kubectl(&["get", "widgets"]);
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    });
    (dir, versa)
}

#[test]
fn policies_deny_warn_and_mutate() {
    let (dir, versa) = start();
    let d = dir.path();
    ok(apply(
        &versa,
        d,
        "vap",
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [widgets]}
  validations:
  - expression: "!has(object.spec.replicas) || object.spec.replicas <= 5"
    message: replicas must be at most 5
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas-binding}
spec:
  policyName: max-replicas
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: prefer-small}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "object.spec.size == 'small'"
    message: large widgets are discouraged
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: prefer-small-binding}
spec:
  policyName: prefer-small
  validationActions: [Warn]
"#,
    ));
    // The admission kinds are served and listed like any other.
    let listed = ok(versa.kubectl(&["get", "validatingadmissionpolicies", "-o", "name"]));
    assert!(listed.contains("validatingadmissionpolicy.admissionregistration.k8s.io/max-replicas"), "{listed}");

    eventually("the policy denies", || {
        let out = create(&versa, d, "too-many", &widget("too-many", "{replicas: 10, size: small}"));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let want = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be at most 5";
        if !out.status.success() && err.contains(want) { Ok(()) } else { Err(err) }
    });
    assert!(!versa.kubectl(&["get", "widget", "too-many"]).status.success(), "nothing was written");

    // Within the limit it passes; the Warn binding's message comes back as a warning.
    let out = create(&versa, d, "big", &widget("big", "{replicas: 2, size: large}"));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'prefer-small' with binding 'prefer-small-binding': large widgets are discouraged"
        ),
        "{err}"
    );
    // Updates are admitted too.
    let out = versa.kubectl(&["patch", "widget", "big", "--type=merge", "-p", r#"{"spec":{"replicas":9}}"#]);
    assert!(fails(out).contains("replicas must be at most 5"));

    // A dry run is admitted and stores nothing.
    let out = versa.kubectl(&[
        "patch",
        "widget",
        "big",
        "--type=merge",
        "--dry-run=server",
        "-p",
        r#"{"spec":{"replicas":8}}"#,
    ]);
    assert!(fails(out).contains("replicas must be at most 5"));

    // A MutatingAdmissionPolicy sets a label on create.
    ok(apply(
        &versa,
        d,
        "map",
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: stamp}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/metadata/labels/stamped", value: "by-policy"}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: stamp-binding}
spec:
  policyName: stamp
"#,
    ));
    let mut n = 0;
    eventually("the mutating policy stamps", || {
        n += 1;
        let name = format!("stamped-{n}");
        ok(create(&versa, d, &name, &widget(&name, "{size: small}")));
        let label = ok(versa.kubectl(&["get", "widget", &name, "-o", "jsonpath={.metadata.labels.stamped}"]));
        if label == "by-policy" { Ok(()) } else { Err(format!("label {label:?}")) }
    });

    // The decisions are counted with kube's metric names.
    let metrics = ok(versa.kubectl(&["get", "--raw", "/metrics"]));
    assert!(
        metrics.contains(r#"apiserver_validating_admission_policy_check_total{policy="max-replicas",policy_binding="max-replicas-binding",error_type="no_error",enforcement_action="deny"}"#),
        "{metrics}"
    );

    // Deleting the binding lifts the denial.
    ok(versa.kubectl(&["delete", "validatingadmissionpolicybinding", "max-replicas-binding"]));
    eventually("the denial is lifted", || {
        let out = versa.kubectl(&["patch", "widget", "big", "--type=merge", "-p", r#"{"spec":{"replicas":9}}"#]);
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    });
    assert!(versa.stop());
}

#[test]
fn webhooks_mutate_validate_and_fail_closed() {
    let (dir, versa) = start();
    let d = dir.path();
    let webhook = AdmissionWebhook::start();
    let config = |failure_policy: &str| {
        format!(
            r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: defaults}}
webhooks:
- name: defaults.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: {failure_policy}
  clientConfig: {{url: "{url}/mutate", caBundle: {ca}}}
  rules:
  - {{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: names}}
webhooks:
- name: names.example.com
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: None
  failurePolicy: {failure_policy}
  clientConfig: {{url: "{url}/validate", caBundle: {ca}}}
  rules:
  - {{apiGroups: [example.com], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [widgets]}}
"#,
            url = webhook.url(),
            ca = webhook.ca_bundle(),
        )
    };
    ok(apply(&versa, d, "webhooks", &config("Fail")));

    // The mutating webhook fills the required size (so the object is valid only after it ran),
    // adds a label and a field the schema does not know, which is pruned.
    eventually("the mutating webhook runs", || {
        let out = create(&versa, d, "plain", &widget("plain", "{replicas: 1}"));
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    });
    let stored: Value = serde_json::from_str(&ok(versa.kubectl(&["get", "widget", "plain", "-o", "json"]))).unwrap();
    assert_eq!(stored["spec"], json!({"replicas": 1, "size": "small"}), "{stored}");
    assert_eq!(stored["metadata"]["labels"]["mutated"], "true", "{stored}");

    // The validating webhook denies, in kube's words; nothing is written.
    let out = create(&versa, d, "bad-one", &widget("bad-one", "{size: small}"));
    let err = fails(out);
    assert!(
        err.contains(
            r#"admission webhook "names.example.com" denied the request: names starting with bad- are not allowed"#
        ),
        "{err}"
    );
    assert!(!versa.kubectl(&["get", "widget", "bad-one"]).status.success());
    assert!(webhook.calls() >= 3, "the webhooks were called");

    let metrics = ok(versa.kubectl(&["get", "--raw", "/metrics"]));
    assert!(
        metrics.contains(r#"apiserver_admission_webhook_request_total{name="names.example.com",type="validating""#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"apiserver_admission_webhook_rejection_count_total{name="names.example.com",type="validating",operation="CREATE",error_type="no_error",rejection_code="403"}"#),
        "{metrics}"
    );

    // Down, with failurePolicy Fail: refused, nothing written.
    webhook.down();
    let out = create(&versa, d, "while-down", &widget("while-down", "{size: small}"));
    let err = fails(out);
    assert!(err.contains(r#"failed calling webhook "defaults.example.com""#), "{err}");
    assert!(!versa.kubectl(&["get", "widget", "while-down"]).status.success());

    // With Ignore the calls are skipped (the changed file applied again: kubectl sends a
    // strategic merge patch).
    ok(apply(&versa, d, "webhooks", &config("Ignore")));
    eventually("an ignored webhook is skipped", || {
        let out = create(&versa, d, "ignored", &widget("ignored", "{size: large}"));
        if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    });
    assert!(versa.stop());
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
    subresources:
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, maximum: 100}
          status:
            type: object
            properties:
              replicas: {type: integer}
"#;

#[test]
fn deletes_scale_and_type_checking() {
    let (dir, versa) = start();
    let d = dir.path();
    ok(apply(&versa, d, "gadgets", GADGETS));

    // status.typeChecking: a policy's expressions checked against the schemas of the kinds it
    // matches (`spec.size` is a string), written back with the generation it checked.
    ok(apply(
        &versa,
        d,
        "typo",
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "object.spec.size > 3"
  - expression: "object.spec.size == 'small'"
"#,
    ));
    eventually("the policy is type-checked", || {
        let out = ok(versa.kubectl(&["get", "validatingadmissionpolicy", "typo", "-o", "json"]));
        let policy: Value = serde_json::from_str(&out).unwrap();
        let status = &policy["status"];
        if status["observedGeneration"] != policy["metadata"]["generation"] {
            return Err(format!("not checked yet: {status}"));
        }
        let warnings = status["typeChecking"]["expressionWarnings"].as_array().cloned().unwrap_or_default();
        assert_eq!(warnings.len(), 1, "{status}");
        assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression", "{status}");
        let text = warnings[0]["warning"].as_str().unwrap_or_default();
        assert!(text.starts_with("example.com/v1, Kind=Widget: "), "{text}");
        assert!(text.contains("no matching overload"), "{text}");
        Ok(())
    });

    // A mutating webhook is called for deletes (without an object or an old object, as kube
    // calls it) and can refuse them; validating admission then sees the stored object.
    let webhook = AdmissionWebhook::start();
    ok(apply(
        &versa,
        d,
        "guard",
        &format!(
            r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: guard}}
webhooks:
- name: guard.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {{url: "{url}/guard", caBundle: {ca}}}
  rules:
  - {{apiGroups: [example.com], apiVersions: [v1], operations: [DELETE], resources: [widgets]}}
"#,
            url = webhook.url(),
            ca = webhook.ca_bundle(),
        ),
    ));
    ok(create(&versa, d, "keep-me", &widget("keep-me", "{size: small}")));
    ok(create(&versa, d, "drop-me", &widget("drop-me", "{size: small}")));
    eventually("the delete is guarded", || {
        let out = versa.kubectl(&["delete", "widget", "keep-me"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let want = r#"admission webhook "guard.example.com" denied the request: guarded delete of keep-me (object: null, oldObject: null)"#;
        if !out.status.success() && err.contains(want) { Ok(()) } else { Err(err) }
    });
    ok(versa.kubectl(&["get", "widget", "keep-me"]));
    ok(versa.kubectl(&["delete", "widget", "drop-me"]));
    // A deletecollection asks once, for the collection (no name): refused as a whole.
    let err = fails(versa.kubectl(&["delete", "--raw", "/apis/example.com/v1/namespaces/default/widgets"]));
    assert!(err.contains("guarded delete of  (object: null"), "{err}");
    ok(versa.kubectl(&["get", "widget", "keep-me"]));

    // Through /scale, a mutation of the Scale is taken back into the object.
    ok(apply(
        &versa,
        d,
        "cap",
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: cap}
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [UPDATE], resources: [gadgets/scale]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "replace", path: "/spec/replicas", value: object.spec.replicas > 5 ? 5 : object.spec.replicas}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: cap-binding}
spec:
  policyName: cap
"#,
    ));
    ok(create(
        &versa,
        d,
        "g",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\nspec: {replicas: 1}\n",
    ));
    let mut n = 8;
    eventually("the scale is capped", || {
        n += 1;
        ok(versa.kubectl(&["scale", "gadget", "g", &format!("--replicas={n}")]));
        let replicas = ok(versa.kubectl(&["get", "gadget", "g", "-o", "jsonpath={.spec.replicas}"]));
        if replicas.trim() == "5" { Ok(()) } else { Err(format!("replicas {replicas}")) }
    });
    ok(versa.kubectl(&["scale", "gadget", "g", "--replicas=3"]));
    assert_eq!(ok(versa.kubectl(&["get", "gadget", "g", "-o", "jsonpath={.spec.replicas}"])).trim(), "3");
    assert!(versa.stop());
}

/// An admission webhook over HTTPS on its own thread and runtime: `/mutate` answers a JSON
/// Patch (a `mutated` label, `spec.size: small` when absent, and an unknown `spec.colour`),
/// `/validate` denies objects whose name starts with `bad-`, `/guard` refuses deletes of names
/// not starting with `drop-` (saying what object and oldObject it got). Taken [`AdmissionWebhook::down`],
/// it drops new connections and answers 503 on those a client keeps.
struct AdmissionWebhook {
    url: String,
    ca_pem: String,
    calls: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

impl AdmissionWebhook {
    fn start() -> AdmissionWebhook {
        let (ca_pem, config) =
            versa_e2e::serving_tls("versa e2e admission webhook CA", "admission-webhook", &[b"http/1.1"]);
        let acceptor = TlsAcceptor::from(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let (thread_calls, thread_down) = (calls.clone(), down.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else { continue };
                    if thread_down.load(Ordering::Relaxed) {
                        // Down: the listener stays, connections are dropped at once.
                        drop(tcp);
                        continue;
                    }
                    let (acceptor, calls, down) = (acceptor.clone(), thread_calls.clone(), thread_down.clone());
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else { return };
                        let service = service_fn(move |request| handle(calls.clone(), down.clone(), request));
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            });
        });
        AdmissionWebhook { url, ca_pem, calls, down }
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    fn down(&self) {
        self.down.store(true, Ordering::Relaxed);
    }
}

async fn handle(
    calls: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
    request: http::Request<Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    if down.load(Ordering::Relaxed) {
        // Down behind a pooled connection: what a failing backend answers.
        return Ok(http::Response::builder().status(503).body(Full::new(Bytes::new())).unwrap());
    }
    calls.fetch_add(1, Ordering::Relaxed);
    let path = request.uri().path().to_owned();
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = &review["request"];
    let object = &request["object"];
    let mut response = json!({"uid": request["uid"], "allowed": true});
    match path.as_str() {
        "/mutate" => {
            let mut patch = vec![json!({"op": "add", "path": "/metadata/labels/mutated", "value": "true"})];
            if object.pointer("/spec/size").is_none() {
                patch.push(json!({"op": "add", "path": "/spec/size", "value": "small"}));
            }
            patch.push(json!({"op": "add", "path": "/spec/colour", "value": "red"}));
            let encoded = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&patch).unwrap());
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(encoded);
        }
        "/guard" => {
            let name = request["name"].as_str().unwrap_or("");
            if !name.starts_with("drop-") {
                response["allowed"] = json!(false);
                let message = format!(
                    "guarded delete of {name} (object: {}, oldObject: {})",
                    request["object"], request["oldObject"]
                );
                response["status"] = json!({"code": 403, "message": message});
            }
        }
        "/validate" => {
            let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            if name.starts_with("bad-") {
                response["allowed"] = json!(false);
                response["status"] = json!({"code": 403, "message": "names starting with bad- are not allowed"});
            }
        }
        _ => {}
    }
    let answer = json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response});
    Ok(http::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&answer).unwrap())))
        .unwrap())
}
