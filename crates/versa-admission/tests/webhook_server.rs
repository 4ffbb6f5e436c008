//! Admission webhooks against a real HTTPS server in process (hyper + rustls, a certificate
//! from a test CA given as `caBundle`): AdmissionReview v1 and v1beta1 with every request
//! field, a JSON Patch applied, denials, a webhook that is down (Fail and Ignore), a timeout,
//! answers kube refuses, and reinvocation.
//!
//! The first path segment picks the webhook's behaviour (`respond`); every review received is
//! recorded.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

mod common;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use common::FakeHost;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use versa_admission::{
    AdmissionError, Attributes, BuildOptions, Configuration, GroupVersionKind, GroupVersionResource, Operation,
    Outcome, Sources, UserInfo,
};

/// A running test webhook with its CA.
struct Server {
    base: String,
    ca_b64: String,
    log: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Server {
    async fn start() -> Server {
        Server::start_for(&[]).await
    }

    /// A server whose certificate also names `names` (a Service's DNS names).
    async fn start_for(names: &[&str]) -> Server {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "admission test CA");
        let ca_cert = params.self_signed(&key).unwrap();
        let issuer = Issuer::new(params, key);
        let leaf_key = KeyPair::generate().unwrap();
        let mut sans = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
        sans.extend(names.iter().map(|n| (*n).to_owned()));
        let leaf = CertificateParams::new(sans).unwrap().signed_by(&leaf_key, &issuer).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(leaf.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("https://{}", listener.local_addr().unwrap());
        let log: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let log2 = log.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log) = (acceptor.clone(), log2.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = service_fn(move |req| handle(req, log.clone()));
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let ca_b64 = base64::engine::general_purpose::STANDARD.encode(ca_cert.pem());
        Server { base, ca_b64, log }
    }

    /// The reviews received at `path`.
    fn reviews(&self, path: &str) -> Vec<Value> {
        self.log.lock().unwrap().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }

    /// A webhook entry calling `path`.
    fn webhook(&self, name: &str, path: &str, extra: Value) -> Value {
        let mut w = json!({
            "name": name,
            "clientConfig": {"url": format!("{}{path}", self.base), "caBundle": self.ca_b64},
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "rules": [{"apiGroups": ["stable.example.com"], "apiVersions": ["*"], "operations": ["*"], "resources": ["crontabs"]}],
        });
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        w
    }
}

async fn handle(
    req: Request<Incoming>,
    log: Arc<Mutex<Vec<(String, Value)>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push((path.clone(), review.clone()));
    Ok(respond(&path, &review).await)
}

fn answer(review: &Value, response: Value) -> Response<Full<Bytes>> {
    let mut response = response;
    if response.get("uid").is_none() {
        response["uid"] = review["request"]["uid"].clone();
    }
    let body = json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response});
    Response::new(Full::new(Bytes::from(body.to_string())))
}

fn patch(ops: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(ops.to_string())
}

async fn respond(path: &str, review: &Value) -> Response<Full<Bytes>> {
    let object = &review["request"]["object"];
    match path {
        "/allow" => {
            answer(review, json!({"allowed": true, "warnings": ["careful"], "auditAnnotations": {"checked": "yes"}}))
        }
        "/deny" => answer(review, json!({"allowed": false, "status": {"code": 403, "message": "no way"}})),
        "/deny-bare" => answer(review, json!({"allowed": false})),
        "/patch" => answer(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch(json!([
                {"op": "add", "path": "/metadata/labels/patched", "value": "yes"},
                {"op": "replace", "path": "/spec/replicas", "value": 5}]))}),
        ),
        // v1beta1: no patchType needed.
        "/patch-v1beta1" => answer(
            review,
            json!({"allowed": true, "patch": patch(json!([{"op": "add", "path": "/metadata/labels/beta", "value": "yes"}]))}),
        ),
        "/double" => {
            let replicas = object["spec"]["replicas"].as_i64().unwrap_or(0);
            answer(
                review,
                json!({"allowed": true, "patchType": "JSONPatch",
                    "patch": patch(json!([{"op": "replace", "path": "/spec/replicas", "value": replicas * 2}]))}),
            )
        }
        "/label-once" => {
            if object["metadata"]["labels"]["seen"].is_null() {
                answer(
                    review,
                    json!({"allowed": true, "patchType": "JSONPatch",
                        "patch": patch(json!([{"op": "add", "path": "/metadata/labels/seen", "value": "yes"}]))}),
                )
            } else {
                answer(review, json!({"allowed": true}))
            }
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            answer(review, json!({"allowed": true}))
        }
        "/wrong-uid" => answer(review, json!({"uid": "nope", "allowed": true})),
        "/patch-from-validating" => answer(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch(json!([{"op": "add", "path": "/x", "value": 1}]))}),
        ),
        "/error-500" => Response::builder()
            .status(500)
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from_static(b"boom")))
            .unwrap(),
        _ => Response::builder().status(404).body(Full::new(Bytes::from_static(b"404 page not found"))).unwrap(),
    }
}

fn crontab() -> Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default", "labels": {"app": "cron"}},
        "spec": {"cronSpec": "* * * * */5", "image": "my-image", "replicas": 3}})
}

fn create() -> Attributes {
    Attributes {
        operation: Operation::Create,
        kind: GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
        resource: GroupVersionResource::new("stable.example.com", "v1", "crontabs"),
        subresource: String::new(),
        name: "my-cron".into(),
        namespace: "default".into(),
        user: UserInfo {
            username: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [("scopes".to_owned(), vec!["a".to_owned()])].into_iter().collect(),
        },
        object: Some(crontab()),
        old_object: None,
        dry_run: false,
        options: Some(json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "fieldManager": "kubectl"})),
        namespaced: true,
    }
}

fn validating(hooks: Vec<Value>) -> Vec<ValidatingWebhookConfiguration> {
    vec![
        serde_json::from_value(
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validators"}, "webhooks": hooks}),
        )
        .unwrap(),
    ]
}

fn mutating(hooks: Vec<Value>) -> Vec<MutatingWebhookConfiguration> {
    vec![
        serde_json::from_value(
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutators"}, "webhooks": hooks}),
        )
        .unwrap(),
    ]
}

fn build(v: &[ValidatingWebhookConfiguration], m: &[MutatingWebhookConfiguration]) -> Configuration {
    let sources = Sources { validating_webhooks: v, mutating_webhooks: m, ..Sources::default() };
    let (config, problems) = Configuration::build(&sources, &BuildOptions::default());
    assert!(problems.is_empty(), "{problems:?}");
    config
}

/// Mutate, then validate, as the server does.
async fn admit(
    config: &Configuration,
    attrs: &mut Attributes,
    host: &FakeHost,
) -> (Result<(), AdmissionError>, Outcome) {
    let mut outcome = Outcome::default();
    let r = match config.mutate(attrs, host.host(), &mut outcome).await {
        Ok(()) => config.validate(attrs, host.host(), &mut outcome).await,
        Err(e) => Err(e),
    };
    (r, outcome)
}

fn host() -> FakeHost {
    FakeHost::default().namespace("default", json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_v1_and_v1beta1_carry_every_request_field() {
    let server = Server::start().await;
    let v = validating(vec![
        server.webhook("v1.example.com", "/allow", json!({})),
        server.webhook("v1beta1.example.com", "/allow", json!({"admissionReviewVersions": ["v1beta1", "v1"]})),
    ]);
    let config = build(&v, &[]);
    let mut attrs = create();
    let (r, outcome) = admit(&config, &mut attrs, &host()).await;
    r.unwrap();
    assert_eq!(outcome.warnings, vec!["careful".to_owned()]);
    assert_eq!(outcome.audit_annotations.get("v1.example.com/checked").map(String::as_str), Some("yes"));
    assert_eq!(outcome.audit_annotations.get("v1beta1.example.com/checked").map(String::as_str), Some("yes"));

    let reviews = server.reviews("/allow");
    assert_eq!(reviews.len(), 2);
    let versions: Vec<&str> = reviews.iter().map(|r| r["apiVersion"].as_str().unwrap()).collect();
    assert!(
        versions.contains(&"admission.k8s.io/v1") && versions.contains(&"admission.k8s.io/v1beta1"),
        "{versions:?}"
    );
    for review in reviews {
        assert_eq!(review["kind"], "AdmissionReview");
        let mut request = review["request"].clone();
        let uid = request.as_object_mut().unwrap().remove("uid").unwrap();
        assert_eq!(uid.as_str().unwrap().len(), 36);
        assert_eq!(
            request,
            json!({
                "kind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
                "resource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
                "requestKind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
                "requestResource": {"group": "stable.example.com", "version": "v1", "resource": "crontabs"},
                "name": "my-cron",
                "namespace": "default",
                "operation": "CREATE",
                "userInfo": {"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}},
                "object": crontab(),
                "oldObject": null,
                "dryRun": false,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "fieldManager": "kubectl"},
            })
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denials() {
    let server = Server::start().await;
    let config = build(&validating(vec![server.webhook("deny.example.com", "/deny", json!({}))]), &[]);
    let (r, outcome) = admit(&config, &mut create(), &host()).await;
    let call = &outcome.webhook_calls[0];
    assert_eq!(
        (call.name.as_str(), call.step, call.rejected, call.code, call.rejection),
        ("deny.example.com", "validating", true, 403, Some("no_error"))
    );
    let e = r.unwrap_err();
    assert!(matches!(e, AdmissionError::WebhookDenied(_)));
    assert_eq!(e.code(), 403);
    assert_eq!(e.message(), r#"admission webhook "deny.example.com" denied the request: no way"#);

    let config = build(&validating(vec![server.webhook("bare.example.com", "/deny-bare", json!({}))]), &[]);
    let (r, _) = admit(&config, &mut create(), &host()).await;
    let e = r.unwrap_err();
    assert_eq!(e.code(), 400);
    assert_eq!(e.message(), r#"admission webhook "bare.example.com" denied the request without explanation"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_patch_is_applied_v1_and_v1beta1() {
    let server = Server::start().await;
    let m = mutating(vec![
        server.webhook("patch.example.com", "/patch", json!({})),
        server.webhook("beta.example.com", "/patch-v1beta1", json!({"admissionReviewVersions": ["v1beta1"]})),
    ]);
    let config = build(&[], &m);
    let mut attrs = create();
    let (r, outcome) = admit(&config, &mut attrs, &host()).await;
    r.unwrap();
    let object = attrs.object.unwrap();
    assert_eq!(object["metadata"]["labels"], json!({"app": "cron", "patched": "yes", "beta": "yes"}));
    assert_eq!(object["spec"]["replicas"], 5);
    // The second webhook saw the first one's patch.
    assert_eq!(server.reviews("/patch-v1beta1")[0]["request"]["object"]["spec"]["replicas"], 5);
    assert_eq!(
        outcome.audit_annotations.get("mutation.webhook.admission.k8s.io/round_0_index_0").map(String::as_str),
        Some(r#"{"configuration":"mutators","webhook":"patch.example.com","mutated":true}"#)
    );
    assert_eq!(
        outcome.audit_annotations.get("patch.webhook.admission.k8s.io/round_0_index_0").map(String::as_str),
        Some(
            r#"{"configuration":"mutators","webhook":"patch.example.com","patch":[{"op":"add","path":"/metadata/labels/patched","value":"yes"},{"op":"replace","path":"/spec/replicas","value":5}],"patchType":"JSONPatch"}"#
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_is_down() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().to_string()
    };
    let hook = |policy: &str| {
        json!({"name": "down.example.com", "clientConfig": {"url": format!("https://{closed}/validate")},
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": policy,
            "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]})
    };
    let config = build(&validating(vec![hook("Fail")]), &[]);
    let (r, _) = admit(&config, &mut create(), &host()).await;
    let e = r.unwrap_err();
    assert_eq!(e.code(), 500);
    assert_eq!(
        e.message(),
        format!(
            r#"Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "https://{closed}/validate?timeout=10s": dial tcp {closed}: connect: connection refused"#
        )
    );
    let config = build(&validating(vec![hook("Ignore")]), &[]);
    let (r, outcome) = admit(&config, &mut create(), &host()).await;
    r.unwrap();
    assert_eq!(
        outcome
            .audit_annotations
            .get("failed-open.validating.webhook.admission.k8s.io/round_0_index_0")
            .map(String::as_str),
        Some("down.example.com")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_does_not_answer_in_time() {
    let server = Server::start().await;
    let config =
        build(&validating(vec![server.webhook("slow.example.com", "/slow", json!({"timeoutSeconds": 1}))]), &[]);
    let started = Instant::now();
    let (r, _) = admit(&config, &mut create(), &host()).await;
    let elapsed = started.elapsed();
    let e = r.unwrap_err();
    assert_eq!(
        e.message(),
        format!(
            r#"Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "{}/slow?timeout=1s": context deadline exceeded"#,
            server.base
        )
    );
    assert!(elapsed >= Duration::from_millis(900) && elapsed < Duration::from_millis(2500), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_kube_refuses() {
    let server = Server::start().await;
    let config = build(&validating(vec![server.webhook("uid.example.com", "/wrong-uid", json!({}))]), &[]);
    let (r, _) = admit(&config, &mut create(), &host()).await;
    let message = r.unwrap_err().message().to_owned();
    assert!(
        message.starts_with(
            r#"Internal error occurred: failed calling webhook "uid.example.com": received invalid webhook response: expected response.uid=""#
        ) && message.ends_with(r#"", got "nope""#),
        "{message}"
    );

    let config = build(&validating(vec![server.webhook("p.example.com", "/patch-from-validating", json!({}))]), &[]);
    let (r, _) = admit(&config, &mut create(), &host()).await;
    assert_eq!(
        r.unwrap_err().message(),
        r#"Internal error occurred: failed calling webhook "p.example.com": received invalid webhook response: validating webhook may not return response.patch"#
    );

    let config = build(&validating(vec![server.webhook("e.example.com", "/error-500", json!({}))]), &[]);
    let (r, _) = admit(&config, &mut create(), &host()).await;
    assert_eq!(
        r.unwrap_err().message(),
        r#"Internal error occurred: failed calling webhook "e.example.com": failed to call webhook: an error on the server ("boom") has prevented the request from succeeding"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reinvocation_if_needed() {
    let server = Server::start().await;
    let m = mutating(vec![
        server.webhook("double.example.com", "/double", json!({"reinvocationPolicy": "IfNeeded"})),
        server.webhook("label.example.com", "/label-once", json!({})),
    ]);
    let config = build(&[], &m);
    let mut attrs = create();
    let (r, outcome) = admit(&config, &mut attrs, &host()).await;
    r.unwrap();
    // Round 0: 3 → 6, then the label; the label changed the object, so the webhook that asked
    // to be reinvoked runs again: 6 → 12. The other one does not.
    let object = attrs.object.unwrap();
    assert_eq!(object["spec"]["replicas"], 12);
    assert_eq!(object["metadata"]["labels"]["seen"], "yes");
    assert_eq!(server.reviews("/double").len(), 2);
    assert_eq!(server.reviews("/label-once").len(), 1);
    assert!(outcome.audit_annotations.contains_key("mutation.webhook.admission.k8s.io/round_1_index_0"));

    // Without IfNeeded, each runs once.
    let server = Server::start().await;
    let m = mutating(vec![
        server.webhook("double.example.com", "/double", json!({})),
        server.webhook("label.example.com", "/label-once", json!({})),
    ]);
    let config = build(&[], &m);
    let mut attrs = create();
    let (r, _) = admit(&config, &mut attrs, &host()).await;
    r.unwrap();
    assert_eq!(attrs.object.unwrap()["spec"]["replicas"], 6);
    assert_eq!(server.reviews("/double").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_and_side_effects() {
    let server = Server::start().await;
    let config = build(
        &validating(vec![
            server.webhook("none.example.com", "/allow", json!({"sideEffects": "None"})),
            server.webhook("ondry.example.com", "/allow", json!({"sideEffects": "NoneOnDryRun"})),
        ]),
        &[],
    );
    let mut attrs = create();
    attrs.dry_run = true;
    let (r, _) = admit(&config, &mut attrs, &host()).await;
    r.unwrap();
    let reviews = server.reviews("/allow");
    assert_eq!(reviews.len(), 2);
    assert!(reviews.iter().all(|r| r["request"]["dryRun"] == true));

    let config =
        build(&validating(vec![server.webhook("some.example.com", "/allow", json!({"sideEffects": "Some"}))]), &[]);
    let (r, _) = admit(&config, &mut attrs, &host()).await;
    let e = r.unwrap_err();
    assert_eq!((e.code(), e.message()), (400, r#"admission webhook "some.example.com" does not support dry run"#));
    assert_eq!(server.reviews("/allow").len(), 2, "a webhook with side effects is not called on a dry run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equivalent_version_is_sent_converted_and_its_patch_comes_back() {
    let server = Server::start().await;
    let mut hook = server.webhook("v2.example.com", "/patch", json!({}));
    hook["rules"] = json!([{"apiGroups": ["stable.example.com"], "apiVersions": ["v2"], "operations": ["*"], "resources": ["crontabs"]}]);
    let config = build(&[], &mutating(vec![hook]));
    let mut fake = host();
    for v in ["v1", "v2"] {
        fake.equivalents.push((
            GroupVersionResource::new("stable.example.com", v, "crontabs"),
            GroupVersionKind::new("stable.example.com", v, "CronTab"),
        ));
    }
    let mut attrs = create();
    let (r, _) = admit(&config, &mut attrs, &fake).await;
    r.unwrap();
    let review = &server.reviews("/patch")[0]["request"];
    assert_eq!(review["kind"], json!({"group": "stable.example.com", "version": "v2", "kind": "CronTab"}));
    assert_eq!(review["requestKind"], json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"}));
    assert_eq!(review["object"]["apiVersion"], "stable.example.com/v2");
    let object = attrs.object.unwrap();
    assert_eq!(object["apiVersion"], "stable.example.com/v1");
    assert_eq!(object["spec"]["replicas"], 5);
}

/// Maps every Service to one address.
#[derive(Debug)]
struct OneAddress(String);

impl versa_admission::ServiceResolver for OneAddress {
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<String, versa_admission::ResolveError> {
        assert_eq!((namespace, name, port), ("webhooks", "validator", 8443));
        Ok(self.0.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_reached_through_a_resolver_keeps_its_name() {
    let server = Server::start_for(&["validator.webhooks.svc"]).await;
    let address = server.base.trim_start_matches("https://").to_owned();
    let mut hook = server.webhook("svc.example.com", "/allow", json!({}));
    hook["clientConfig"] = json!({"service": {"namespace": "webhooks", "name": "validator", "port": 8443, "path": "/allow"},
        "caBundle": server.ca_b64});
    let v = validating(vec![hook]);
    let sources = Sources { validating_webhooks: &v, ..Sources::default() };
    let options = BuildOptions { service_resolver: Some(Arc::new(OneAddress(address))) };
    let (config, problems) = Configuration::build(&sources, &options);
    assert!(problems.is_empty(), "{problems:?}");
    let (r, outcome) = admit(&config, &mut create(), &host()).await;
    r.unwrap();
    assert_eq!(outcome.warnings, vec!["careful".to_owned()]);
    assert_eq!(server.reviews("/allow").len(), 1);

    // A certificate that does not name the Service is refused.
    let other = Server::start().await;
    let address = other.base.trim_start_matches("https://").to_owned();
    let mut hook = other.webhook("svc.example.com", "/allow", json!({}));
    hook["clientConfig"] = json!({"service": {"namespace": "webhooks", "name": "validator", "port": 8443, "path": "/allow"},
        "caBundle": other.ca_b64});
    let v = validating(vec![hook]);
    let sources = Sources { validating_webhooks: &v, ..Sources::default() };
    let options = BuildOptions { service_resolver: Some(Arc::new(OneAddress(address))) };
    let (config, _) = Configuration::build(&sources, &options);
    let (r, _) = admit(&config, &mut create(), &host()).await;
    let message = r.unwrap_err().message().to_owned();
    assert!(
        message.starts_with(r#"Internal error occurred: failed calling webhook "svc.example.com": failed to call webhook: Post "https://validator.webhooks.svc:8443/allow?timeout=10s": tls: failed to verify certificate"#),
        "{message}"
    );
}
