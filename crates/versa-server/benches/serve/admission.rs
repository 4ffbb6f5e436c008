//! The admission scenario (issue 17): what one validating webhook and one
//! ValidatingAdmissionPolicy add to a create.
//!
//! On a fresh server, three definitions of the same `Widget` schema in three groups: one no
//! admission configuration matches (the baseline), one a `ValidatingWebhookConfiguration`
//! matches (its webhook is the bench's own HTTPS server, [`super::Webhook`], answering every
//! `AdmissionReview` with `allowed: true`), one a `ValidatingAdmissionPolicy` with three
//! validations and a `Deny` binding matches. Creates (POST, each a durable write) one after the
//! other on one connection, [`CREATES`] of each per round, in `VERSA_BENCH_ROUNDS` rounds that
//! take the three in turn, with the review a webhook receives POSTed straight to the webhook in
//! the same rounds (its own time: TLS, HTTP/2, parsing and answering, as versa's call pays it).
//! Targets, on the p50s: the webhook adds at most its own time + 1 ms; the policy's create is
//! at most 1.2× the baseline's. The server's CPU per create is printed beside, from the same
//! counters as the CEL scenario's.

use super::*;

/// Sequential creates of each kind per round (and direct reviews of the webhook).
const CREATES: usize = 200;
/// The groups: no admission, the webhook's, the policy's.
const GROUPS: [&str; 3] =
    ["plain.admission.example.com", "hooked.admission.example.com", "policed.admission.example.com"];
/// Where the widgets are created.
const NAMESPACE: &str = "created";

/// The bench's own sequence of one kind of request: every latency and the server's CPU.
#[derive(Default)]
struct Creates {
    latencies: Vec<Duration>,
    server_cpu: Duration,
}

pub(super) fn admission(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let webhook_rt = Webhook::runtime();
    let webhook = webhook_rt.block_on(Webhook::start());
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    let rounds = settings.timing.rounds as usize;
    println!();
    println!(
        "## admission: creates with no admission, through one validating webhook, through one ValidatingAdmissionPolicy of 3 validations; {CREATES} sequential creates of each per round on one connection, {rounds} alternating rounds"
    );
    let [plain, hooked, policed, direct] = client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        for group in GROUPS {
            define(&mut conn, &widget_definition(group, json!({"strategy": "None"})), group, "v1", "widgets").await;
        }
        configure(&mut conn, &webhook).await;
        let mut hook = HookConn::connect(&webhook).await;
        let review = direct_review(GROUPS[1]);
        let mut figures: [Creates; 4] = Default::default();
        // Round 0 warms up.
        for round in 0..=rounds {
            for (k, figure) in figures.iter_mut().enumerate() {
                let cpu_before = server_cpu();
                let mut latencies = Vec::with_capacity(CREATES);
                for i in 0..CREATES {
                    let t = Instant::now();
                    if k < GROUPS.len() {
                        let name = format!("w-{round}-{i}");
                        let (status, body) =
                            conn.send(Method::POST, &collection(GROUPS[k]), Some(widget_in(GROUPS[k], &name))).await;
                        assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
                    } else {
                        hook.review(review.clone()).await;
                    }
                    latencies.push(t.elapsed());
                }
                if round > 0 {
                    figure.latencies.extend(latencies);
                    figure.server_cpu += server_cpu() - cpu_before;
                }
            }
        }
        figures.map(|mut f| {
            f.latencies.sort();
            f
        })
    });
    versa.stop(server_rt);
    let reviewed = webhook.calls.lock().unwrap().iter().filter(|c| !c.direct).count();
    drop(webhook_rt);

    let n = (CREATES * rounds) as f64;
    let p50 = |f: &Creates| ms(percentile(&f.latencies, 0.5));
    let p99 = |f: &Creates| ms(percentile(&f.latencies, 0.99));
    let cpu = |f: &Creates| f.server_cpu.as_secs_f64() * 1e6 / n;
    println!();
    println!("| create | p50 | p99 | server CPU per create | target |");
    println!("|---|---:|---:|---:|---|");
    println!("| no admission | {:.2} ms | {:.2} ms | {:.1} µs | |", p50(&plain), p99(&plain), cpu(&plain));
    let added = p50(&hooked) - p50(&plain);
    let allowed = p50(&direct) + 1.0;
    println!(
        "| through one validating webhook | {:.2} ms | {:.2} ms | {:.1} µs | adds {added:.2} ms ≤ its own time + 1 ms = {allowed:.2} ms: {} |",
        p50(&hooked),
        p99(&hooked),
        cpu(&hooked),
        met(added <= allowed)
    );
    let ratio = p50(&policed) / p50(&plain);
    println!(
        "| through one ValidatingAdmissionPolicy (3 validations) | {:.2} ms | {:.2} ms | {:.1} µs | {ratio:.2}× ≤ 1.2×: {} |",
        p50(&policed),
        p99(&policed),
        cpu(&policed),
        met(ratio <= 1.2)
    );
    println!(
        "| (the webhook's own time, its review POSTed straight to it) | {:.2} ms | {:.2} ms | | |",
        p50(&direct),
        p99(&direct)
    );
    println!(
        "(policy: CPU {:.2}× the baseline's; the webhook was called {reviewed} times by versa for {} creates)",
        cpu(&policed) / cpu(&plain),
        CREATES * (rounds + 1)
    );
}

/// Applies the webhook's and the policy's configuration and waits until both act: the policy
/// denies a widget it must refuse, and the webhook is called.
async fn configure(conn: &mut Conn, webhook: &Webhook) {
    let ca = base64::engine::general_purpose::STANDARD.encode(&webhook.ca_pem);
    let rules = |group: &str| json!([{"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["widgets"]}]);
    let configurations = [
        (
            "validatingwebhookconfigurations",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "bench"},
                "webhooks": [{
                    "name": "bench.admission.example.com",
                    "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                    "clientConfig": {"url": format!("https://{}/validate", webhook.addr), "caBundle": ca},
                    "rules": rules(GROUPS[1]),
                }],
            }),
        ),
        (
            "validatingadmissionpolicies",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "bench"},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": rules(GROUPS[2])},
                    "validations": [
                        {"expression": "object.spec.replicas <= 5", "message": "at most 5 replicas"},
                        {"expression": "object.metadata.name.startsWith('w-')", "message": "names start with w-"},
                        {"expression": "object.spec.image.startsWith('registry.example.com/')", "message": "images come from our registry"},
                    ],
                },
            }),
        ),
        (
            "validatingadmissionpolicybindings",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "bench"},
                "spec": {"policyName": "bench", "validationActions": ["Deny"]},
            }),
        ),
    ];
    for (plural, body) in configurations {
        let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
        let (status, answer) = conn.send(Method::POST, &path, Some(json_bytes(&body))).await;
        assert_eq!(status, StatusCode::CREATED, "{path}: {}", String::from_utf8_lossy(&answer));
    }
    let mut refused = serde_json::from_slice::<Value>(&widget_in(GROUPS[2], "refused")).unwrap();
    refused["spec"]["replicas"] = json!(9);
    loop {
        let (status, _) = conn.send(Method::POST, &collection(GROUPS[2]), Some(json_bytes(&refused))).await;
        if status != StatusCode::CREATED {
            break;
        }
        let _ = conn.send(Method::DELETE, &format!("{}/refused", collection(GROUPS[2])), None).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for i in 0.. {
        let before = webhook.calls.lock().unwrap().len();
        let (status, body) =
            conn.send(Method::POST, &collection(GROUPS[1]), Some(widget_in(GROUPS[1], &format!("probe-{i}")))).await;
        assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
        if webhook.calls.lock().unwrap().len() > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn collection(group: &str) -> String {
    format!("/apis/{group}/v1/namespaces/{NAMESPACE}/widgets")
}

/// A widget of `group` named `name`, as request bytes.
fn widget_in(group: &str, name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"{group}/v1","kind":"Widget","metadata":{{"name":"{name}","namespace":"{NAMESPACE}","labels":{{"app":"bench"}}}},"spec":{{"cronSpec":"*/5 * * * *","image":"registry.example.com/bench/cron:1.2.3","replicas":3}}}}"#
    ))
}

/// An `AdmissionReview` as versa sends one for a create of a widget of `group`: the size of
/// what the webhook parses.
fn direct_review(group: &str) -> Bytes {
    let object: Value = serde_json::from_slice(&widget_in(group, "w-direct")).unwrap();
    let gvk = json!({"group": group, "version": "v1", "kind": "Widget"});
    let gvr = json!({"group": group, "version": "v1", "resource": "widgets"});
    json_bytes(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": "w-direct", "namespace": NAMESPACE, "operation": "CREATE",
            "userInfo": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]},
            "object": object, "oldObject": null, "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }))
}

/// The webhook's answer to an `AdmissionReview`: allowed.
pub(super) fn admit_review(body: &[u8]) -> Bytes {
    let review: Value = serde_json::from_slice(body).unwrap();
    json_bytes(&json!({
        "apiVersion": review["apiVersion"], "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true},
    }))
}
