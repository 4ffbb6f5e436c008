//! The audit log end to end (issue 15): the real `versa serve` with `--audit-policy-file` and
//! `--audit-log-path`, driven by kubectl and by raw requests, and every line it writes compared
//! field by field with the event kube-apiserver writes for the same request under the same
//! policy (k8s.io/apiserver's `WithAudit` and `WithFailedAuthenticationAudit` filters, its log
//! backend). Timestamps, generated audit IDs and kubectl's user agent are checked for their
//! shape; everything else for its value, and the top-level fields for kube's order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "client.rs"]
mod client;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use client::{Client, Response};
use serde_json::{Value, json};
use versa_e2e::{Versa, ok};

const CT: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";

/// kube's field order of an `audit.k8s.io/v1` `Event`.
const EVENT_FIELDS: &[&str] = &[
    "kind",
    "apiVersion",
    "level",
    "auditID",
    "stage",
    "requestURI",
    "verb",
    "user",
    "impersonatedUser",
    "sourceIPs",
    "userAgent",
    "objectRef",
    "responseStatus",
    "requestObject",
    "responseObject",
    "requestReceivedTimestamp",
    "stageTimestamp",
    "annotations",
];

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  # kubectl's discovery and OpenAPI reads, and the definitions API: not audited.
  - level: None
    nonResourceURLs: ["/api", "/api/*", "/apis", "/apis/*", "/openapi/*", "/version"]
  - level: None
    resources: [{group: versa.dev}]
  - level: RequestResponse
    resources: [{group: stable.example.com, resources: [crontabs], resourceNames: [rr]}]
  - level: Request
    verbs: [create, update, patch, delete]
  - level: Metadata
    namespaces: [quiet]
    omitStages: [RequestReceived]
  - level: Metadata
"#;

fn definition() -> Value {
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"},
                    "replicas": {"type": "integer", "default": 1},
                }}},
            }}}],
        },
    })
}

/// A client certificate for `cn` in `organizations`, issued by versa's own CA (standalone
/// authenticates it; only `system:masters` is authorized, so its requests are denied).
fn user_identity(data_dir: &Path, cn: &str, organizations: &[&str]) -> (String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::from_pem(&std::fs::read_to_string(data_dir.join("ca.key")).unwrap()).unwrap();
    // The issuer as versa made it (pki.rs): its subject is what the chain is matched by.
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, "versa-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let issuer = Issuer::new(ca, ca_key);
    versa_e2e::client_certificate(&issuer, cn, organizations)
}

/// The log's events of requests with a user agent (the test's, not its set-up's), once `count`
/// are there (the writer flushes whenever its queue is empty).
async fn events(log: &Path, count: usize) -> Vec<(String, Value)> {
    let read = || -> Vec<(String, Value)> {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines()
            .map(|l| (l.to_owned(), serde_json::from_str::<Value>(l).unwrap()))
            .filter(|(_, e)| e.get("userAgent").is_some())
            .collect()
    };
    for _ in 0..300 {
        if read().len() >= count {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return read();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {count} audit events: {}", std::fs::read_to_string(log).unwrap_or_default());
}

/// `2026-01-02T03:04:05.123456Z`.
fn is_micro_time(v: &Value) -> bool {
    let s = v.as_str().unwrap_or("");
    let b = s.as_bytes();
    s.len() == 27 && b[10] == b'T' && b[19] == b'.' && b[26] == b'Z' && b[20..26].iter().all(u8::is_ascii_digit)
}

/// Checks one line against the event kube writes: values equal except the timestamps (shape,
/// and stageTimestamp is requestReceivedTimestamp at RequestReceived), top-level fields in
/// kube's order.
fn check_event(line: &str, actual: &Value, want: &Value, failures: &mut Vec<String>) {
    let mut got = actual.clone();
    let (received, stage_time) = (got["requestReceivedTimestamp"].take(), got["stageTimestamp"].take());
    let what = format!("{} {} {}", want["verb"], want["requestURI"], want["stage"]);
    if !is_micro_time(&received) || !is_micro_time(&stage_time) {
        failures.push(format!("{what}: timestamps {received} {stage_time}"));
    }
    if want["stage"] == "RequestReceived" && received != stage_time {
        failures.push(format!("{what}: RequestReceived's stageTimestamp is not requestReceivedTimestamp"));
    }
    let mut got = got.as_object().unwrap().clone();
    got.remove("requestReceivedTimestamp");
    got.remove("stageTimestamp");
    if Value::Object(got.clone()) != *want {
        failures.push(format!(
            "{what}:\n   got {}\n  want {}",
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(want).unwrap()
        ));
    }
    let positions: Vec<usize> = EVENT_FIELDS.iter().filter_map(|f| line.find(&format!("\"{f}\":"))).collect();
    if !positions.windows(2).all(|w| w[0] < w[1]) {
        failures.push(format!("{what}: fields not in kube's order: {line}"));
    }
}

/// What a request was answered: its Audit-ID header and body.
fn answered(r: &Response) -> (String, Value) {
    let id = r.header("audit-id").expect("every answer carries Audit-ID");
    (id, serde_json::from_slice(&r.body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_audit_log_is_what_kube_writes() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.path().join("logs").join("audit.log");
    let data = dir.path().join("data");
    let versa = Versa::start_with(
        &data,
        &["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()],
    );
    let admin = Client::admin(&versa.data_dir, &versa.address);
    // Health checks are answered before authentication and never audited; the definitions API
    // is `None` by the policy.
    for _ in 0..300 {
        if admin.get("/readyz").await.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = admin.post("/apis/versa.dev/v1/resourcedefinitions", &definition()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    for _ in 0..300 {
        if admin.get(CT).await.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The CronTab lists that waited for the definition are audited too (Metadata); they carry
    // no user agent, and the comparison leaves them out.

    // kubectl: create (Request: the decoded object, defaulted, pruned, metadata round-tripped),
    // get (Metadata).
    let manifest = dir.path().join("a.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: a}\nspec: {cronSpec: '* * * * *'}\n",
    )
    .unwrap();
    ok(versa.kubectl(&["create", "-f", manifest.to_str().unwrap()]));
    ok(versa.kubectl(&["get", "crontab", "a", "-o", "json"]));
    let kubectl_events = 4;

    // Raw requests, each with what kube's event says of it.
    let ua = [("user-agent", "audit-e2e/1.0")];
    let list_uri = format!("{CT}?labelSelector=app%3Dx&limit=500");
    let list =
        admin.get_with(&list_uri, &[ua[0], ("audit-id", "e2e-list-1"), ("x-forwarded-for", "203.0.113.7")]).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.header("audit-id").as_deref(), Some("e2e-list-1"), "a given Audit-ID is echoed");
    let missing = admin.get_with(&format!("{CT}/missing"), &ua).await;
    assert_eq!(missing.status, 404);
    let rr_body = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "rr"},
                         "spec": {"cronSpec": "1 * * * *", "unknown": true}});
    let created = admin
        .request("POST", CT, &[ua[0], ("content-type", "application/json")], serde_json::to_vec(&rr_body).unwrap())
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let got = admin.get_with(&format!("{CT}/rr"), &ua).await;
    assert_eq!(got.status, 200);
    let mut changed = got.json();
    changed["spec"]["cronSpec"] = json!("2 * * * *");
    let updated = admin
        .request(
            "PUT",
            &format!("{CT}/rr"),
            &[ua[0], ("content-type", "application/json")],
            serde_json::to_vec(&changed).unwrap(),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text());
    let patch = json!({"spec": {"replicas": 3}});
    let patched = admin
        .request(
            "PATCH",
            &format!("{CT}/a"),
            &[ua[0], ("content-type", "application/merge-patch+json")],
            serde_json::to_vec(&patch).unwrap(),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    let deleted = admin
        .request(
            "DELETE",
            &format!("{CT}/a"),
            &[ua[0], ("content-type", "application/json")],
            br#"{"propagationPolicy":"Background"}"#.to_vec(),
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    let alice_identity = user_identity(&versa.data_dir, "alice", &["dev"]);
    let ca = std::fs::read_to_string(versa.data_dir.join("ca.crt")).unwrap();
    let alice = Client::from_pem(&ca, Some((&alice_identity.0, &alice_identity.1)), &versa.address);
    let denied = alice.get_with(CT, &ua).await;
    assert_eq!(denied.status, 403, "{}", denied.text());
    let anonymous = Client::anonymous(&versa.data_dir, &versa.address);
    let unauthenticated = anonymous.get_with(CT, &ua).await;
    assert_eq!(unauthenticated.status, 401);
    let bad_timeout = admin.get_with(&format!("{CT}?timeout=later"), &ua).await;
    assert_eq!(bad_timeout.status, 400);
    let quiet = admin.get_with("/apis/stable.example.com/v1/namespaces/quiet/crontabs", &ua).await;
    assert_eq!(quiet.status, 200);
    let metrics = admin.get_with("/metrics", &ua).await;
    assert_eq!(metrics.status, 200);
    let version = admin.get_with("/version", &ua).await;
    assert_eq!(version.status, 200);
    let mut watch = admin.watch(&format!("{CT}?watch=true&timeoutSeconds=1"), &ua).await;
    assert_eq!(watch.status, 200);
    let watch_id = watch.headers.get("audit-id").unwrap().to_str().unwrap().to_owned();
    watch.until_end(Duration::from_secs(30)).await;

    // Two events for most requests; one for the 401, the 400 and the quiet namespace; three for
    // the watch; none for /version.
    let raw_events = 2 * 9 + 3 + 3;
    let all = &events(&log, kubectl_events + raw_events).await;
    assert_eq!(all.len(), kubectl_events + raw_events, "{:#?}", all.iter().map(|(l, _)| l).collect::<Vec<_>>());

    let mut failures = Vec::new();
    let mut by_id: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for (line, event) in all {
        by_id.entry(event["auditID"].as_str().unwrap().to_owned()).or_default().push((line.clone(), event.clone()));
    }

    // The admin, as kube's x509 authenticator names it: CN, O and system:authenticated, and the
    // certificate's SHA-256 as its credential id.
    let admin_user = all[0].1["user"].clone();
    let credential = admin_user["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().unwrap_or("");
    assert!(
        credential.len() == 11 + 64
            && credential.starts_with("X509SHA256=")
            && credential[11..].bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{admin_user}"
    );
    assert_eq!(
        admin_user,
        json!({"username": "versa-admin", "groups": ["system:masters", "system:authenticated"],
               "extra": {"authentication.kubernetes.io/credential-id": [credential]}})
    );
    let allow = json!({"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""});
    let object_ref = |name: &str, namespace: &str| {
        let mut r = json!({"resource": "crontabs", "namespace": namespace, "name": name, "apiGroup": "stable.example.com", "apiVersion": "v1"});
        let o = r.as_object_mut().unwrap();
        o.retain(|_, v| v.as_str() != Some(""));
        r
    };
    // The event kube writes: common fields, then the request's.
    let event = |level: &str, stage: &str, id: &str, uri: &str, verb: &str, more: Value| {
        let mut e = json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": id, "stage": stage,
            "requestURI": uri, "verb": verb, "user": admin_user, "sourceIPs": ["127.0.0.1"], "userAgent": "audit-e2e/1.0",
        });
        for (k, v) in more.as_object().unwrap() {
            if v.is_null() {
                e.as_object_mut().unwrap().remove(k);
            } else {
                e[k] = v.clone();
            }
        }
        e
    };
    let mut expect = |id: &str, wants: Vec<Value>| {
        let got = by_id.remove(id).unwrap_or_default();
        if got.len() != wants.len() {
            failures.push(format!("{id}: {} events, want {}: {got:#?}", got.len(), wants.len()));
            return;
        }
        for ((line, actual), want) in got.iter().zip(&wants) {
            check_event(line, actual, want, &mut failures);
        }
    };
    let code = |c: u16| json!({"metadata": {}, "code": c});

    // kubectl create and get: the request URI and user agent are kubectl's.
    let kubectl: Vec<&(String, Value)> =
        all.iter().filter(|(_, e)| e["userAgent"].as_str().unwrap_or("").starts_with("kubectl/")).collect();
    assert_eq!(kubectl.len(), kubectl_events, "{kubectl:#?}");
    let (create_id, create_uri) =
        (kubectl[0].1["auditID"].as_str().unwrap(), kubectl[0].1["requestURI"].as_str().unwrap());
    let (get_id, get_uri) = (kubectl[2].1["auditID"].as_str().unwrap(), kubectl[2].1["requestURI"].as_str().unwrap());
    assert!(
        create_uri.starts_with(&format!("{CT}?")) && create_uri.contains("fieldManager=kubectl-create"),
        "{create_uri}"
    );
    assert_eq!(get_uri, format!("{CT}/a"));
    let kubectl_ua = kubectl[0].1["userAgent"].clone();
    let create_object = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"creationTimestamp": null, "name": "a", "namespace": "default"},
        "spec": {"cronSpec": "* * * * *", "replicas": 1}});
    expect(
        create_id,
        vec![
            event(
                "Request",
                "RequestReceived",
                create_id,
                create_uri,
                "create",
                json!({"userAgent": kubectl_ua, "objectRef": object_ref("", "default")}),
            ),
            event(
                "Request",
                "ResponseComplete",
                create_id,
                create_uri,
                "create",
                json!({"userAgent": kubectl_ua,
                "objectRef": object_ref("a", "default"), "responseStatus": code(201), "requestObject": create_object, "annotations": allow}),
            ),
        ],
    );
    expect(
        get_id,
        vec![
            event(
                "Metadata",
                "RequestReceived",
                get_id,
                get_uri,
                "get",
                json!({"userAgent": kubectl_ua, "objectRef": object_ref("a", "default")}),
            ),
            event(
                "Metadata",
                "ResponseComplete",
                get_id,
                get_uri,
                "get",
                json!({"userAgent": kubectl_ua,
                "objectRef": object_ref("a", "default"), "responseStatus": code(200), "annotations": allow}),
            ),
        ],
    );

    // A list with a given Audit-ID, behind a proxy: `&` written as Go writes it.
    let forwarded = json!({"sourceIPs": ["203.0.113.7", "127.0.0.1"], "objectRef": object_ref("", "default")});
    let mut list_done = forwarded.clone();
    list_done["responseStatus"] = code(200);
    list_done["annotations"] = allow.clone();
    expect(
        "e2e-list-1",
        vec![
            event("Metadata", "RequestReceived", "e2e-list-1", &list_uri, "list", forwarded),
            event("Metadata", "ResponseComplete", "e2e-list-1", &list_uri, "list", list_done),
        ],
    );
    assert!(
        all.iter().any(|(line, _)| line.contains("labelSelector=app%3Dx\\u0026limit=500")),
        "& is \\u0026 as in Go"
    );

    // A 404: the Status whole.
    let (id, body) = answered(&missing);
    let uri = format!("{CT}/missing");
    let not_found = json!({"metadata": {}, "status": "Failure", "message": body["message"], "reason": "NotFound",
                           "details": {"name": "missing", "group": "stable.example.com", "kind": "crontabs"}, "code": 404});
    assert_eq!(body["message"], "crontabs.stable.example.com \"missing\" not found");
    expect(
        &id,
        vec![
            event(
                "Metadata",
                "RequestReceived",
                &id,
                &uri,
                "get",
                json!({"objectRef": object_ref("missing", "default")}),
            ),
            event(
                "Metadata",
                "ResponseComplete",
                &id,
                &uri,
                "get",
                json!({"objectRef": object_ref("missing", "default"),
                "responseStatus": not_found, "annotations": allow}),
            ),
        ],
    );

    // Create (Request: unknown field pruned, default set), then get and update of `rr`
    // (RequestResponse: the answers; the update's uid and resourceVersion in the reference).
    let (id, _) = answered(&created);
    expect(
        &id,
        vec![
            event("Request", "RequestReceived", &id, CT, "create", json!({"objectRef": object_ref("", "default")})),
            event(
                "Request",
                "ResponseComplete",
                &id,
                CT,
                "create",
                json!({"objectRef": object_ref("rr", "default"),
                "responseStatus": code(201), "annotations": allow,
                "requestObject": {"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                                  "metadata": {"creationTimestamp": null, "name": "rr"}, "spec": {"cronSpec": "1 * * * *", "replicas": 1}}}),
            ),
        ],
    );
    let (id, body) = answered(&got);
    let uri = format!("{CT}/rr");
    expect(
        &id,
        vec![
            event(
                "RequestResponse",
                "RequestReceived",
                &id,
                &uri,
                "get",
                json!({"objectRef": object_ref("rr", "default")}),
            ),
            event(
                "RequestResponse",
                "ResponseComplete",
                &id,
                &uri,
                "get",
                json!({"objectRef": object_ref("rr", "default"),
                "responseStatus": code(200), "responseObject": body, "annotations": allow}),
            ),
        ],
    );
    let (id, body) = answered(&updated);
    let mut rr_ref = object_ref("rr", "default");
    rr_ref["uid"] = changed["metadata"]["uid"].clone();
    rr_ref["resourceVersion"] = changed["metadata"]["resourceVersion"].clone();
    expect(
        &id,
        vec![
            event(
                "RequestResponse",
                "RequestReceived",
                &id,
                &uri,
                "update",
                json!({"objectRef": object_ref("rr", "default")}),
            ),
            event(
                "RequestResponse",
                "ResponseComplete",
                &id,
                &uri,
                "update",
                json!({"objectRef": rr_ref,
                "responseStatus": code(200), "requestObject": changed, "responseObject": body, "annotations": allow}),
            ),
        ],
    );

    // Patch and delete (Request): the patch as sent, the delete's options as kube decodes them.
    let uri = format!("{CT}/a");
    let (id, _) = answered(&patched);
    expect(
        &id,
        vec![
            event("Request", "RequestReceived", &id, &uri, "patch", json!({"objectRef": object_ref("a", "default")})),
            event(
                "Request",
                "ResponseComplete",
                &id,
                &uri,
                "patch",
                json!({"objectRef": object_ref("a", "default"),
                "responseStatus": code(200), "requestObject": patch, "annotations": allow}),
            ),
        ],
    );
    // A custom resource's delete answers a Success Status, recorded whole at every level.
    let (id, body) = answered(&deleted);
    assert_eq!(body["status"], "Success");
    let success = json!({"metadata": {}, "status": "Success", "code": 200,
        "details": {"name": "a", "group": "stable.example.com", "kind": "crontabs", "uid": body["details"]["uid"]}});
    expect(
        &id,
        vec![
            event("Request", "RequestReceived", &id, &uri, "delete", json!({"objectRef": object_ref("a", "default")})),
            event(
                "Request",
                "ResponseComplete",
                &id,
                &uri,
                "delete",
                json!({"objectRef": object_ref("a", "default"),
                "responseStatus": success, "annotations": allow,
                "requestObject": {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background"}}),
            ),
        ],
    );

    // Denied: another user of versa's CA; the decision and the whole 403.
    let (id, body) = answered(&denied);
    let alice_user =
        all.iter().find(|(_, e)| e["auditID"] == id.as_str()).map(|(_, e)| e["user"].clone()).unwrap_or_default();
    let alice_credential = alice_user["extra"]["authentication.kubernetes.io/credential-id"][0].clone();
    assert_ne!(alice_credential, json!(credential));
    let alice_user_want = json!({"username": "alice", "groups": ["dev", "system:authenticated"],
                                 "extra": {"authentication.kubernetes.io/credential-id": [alice_credential]}});
    let message = "crontabs.stable.example.com is forbidden: User \"alice\" cannot list resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"default\"";
    assert_eq!(body["message"], message);
    expect(
        &id,
        vec![
            event(
                "Metadata",
                "RequestReceived",
                &id,
                CT,
                "list",
                json!({"user": alice_user_want, "objectRef": object_ref("", "default")}),
            ),
            event(
                "Metadata",
                "ResponseComplete",
                &id,
                CT,
                "list",
                json!({"user": alice_user_want, "objectRef": object_ref("", "default"),
                "responseStatus": {"metadata": {}, "status": "Failure", "message": message, "reason": "Forbidden",
                                   "details": {"group": "stable.example.com", "kind": "crontabs"}, "code": 403},
                "annotations": {"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""}}),
            ),
        ],
    );

    // No credentials: one ResponseStarted event with an empty user (WithFailedAuthenticationAudit).
    let (id, _) = answered(&unauthenticated);
    expect(
        &id,
        vec![event(
            "Metadata",
            "ResponseStarted",
            &id,
            CT,
            "list",
            json!({"user": {}, "objectRef": object_ref("", "default"),
            "responseStatus": {"metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401}}),
        )],
    );
    // A bad timeout: kube's request-deadline filter answers before authentication, the same way.
    let (id, body) = answered(&bad_timeout);
    let uri = format!("{CT}?timeout=later");
    expect(
        &id,
        vec![event(
            "Metadata",
            "ResponseStarted",
            &id,
            &uri,
            "list",
            json!({"user": {}, "objectRef": object_ref("", "default"),
            "responseStatus": {"metadata": {}, "status": "Failure", "message": body["message"], "reason": "BadRequest", "code": 400}}),
        )],
    );

    // The quiet namespace leaves RequestReceived out; /metrics is a non-resource request;
    // /version is not audited.
    let (id, _) = answered(&quiet);
    let uri = "/apis/stable.example.com/v1/namespaces/quiet/crontabs";
    expect(
        &id,
        vec![event(
            "Metadata",
            "ResponseComplete",
            &id,
            uri,
            "list",
            json!({"objectRef": object_ref("", "quiet"),
            "responseStatus": code(200), "annotations": allow}),
        )],
    );
    let id = metrics.header("audit-id").unwrap();
    expect(
        &id,
        vec![
            event("Metadata", "RequestReceived", &id, "/metrics", "get", json!({})),
            event(
                "Metadata",
                "ResponseComplete",
                &id,
                "/metrics",
                "get",
                json!({"responseStatus": code(200), "annotations": allow}),
            ),
        ],
    );

    // A watch: ResponseStarted when the stream starts, ResponseComplete when it ends.
    let uri = format!("{CT}?watch=true&timeoutSeconds=1");
    let watching = json!({"objectRef": object_ref("", "default"), "responseStatus": code(200), "annotations": allow});
    expect(
        &watch_id,
        vec![
            event(
                "Metadata",
                "RequestReceived",
                &watch_id,
                &uri,
                "watch",
                json!({"objectRef": object_ref("", "default")}),
            ),
            event("Metadata", "ResponseStarted", &watch_id, &uri, "watch", watching.clone()),
            event("Metadata", "ResponseComplete", &watch_id, &uri, "watch", watching),
        ],
    );
    assert!(!by_id.contains_key(&version.header("audit-id").unwrap()), "/version is None by the policy");
    assert!(by_id.is_empty(), "events no request explains: {by_id:#?}");
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    assert!(versa.stop(), "versa exits cleanly");
}

/// A bad policy stops versa at start, with kube's field errors.
#[test]
fn a_bad_policy_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n").unwrap();
    let output = std::process::Command::new(versa_e2e::versa_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", "-"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "rules[0].level: Unsupported value: \"Loud\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\""
        ),
        "{stderr}"
    );
}
