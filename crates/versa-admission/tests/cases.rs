//! Runs `tests/data/*.yaml`: each case is a configuration (policies, bindings, webhooks), a
//! world (namespaces, parameter objects, equivalent resources) and a request, run through
//! [`Configuration::mutate`] then [`Configuration::validate`] with the expected refusal
//! (code, reason, message), warnings, audit annotations, mutated object, build problems, and
//! what the metrics would record (`checks`: policy decisions, `calls`: webhook calls).
//!
//! Webhooks in these cases listen nowhere (`https://127.0.0.1:1/`): whether one is called shows
//! as the `failed calling webhook` refusal (or its absence); `webhook_server.rs` talks to real
//! ones.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code: a malformed case fails loudly")]

mod common;

use std::sync::Arc;

use common::FakeHost;
use serde_json::{Value, json};
use versa_admission::{
    Attributes, BuildOptions, Configuration, GroupVersionKind, GroupVersionResource, Operation, Outcome, ParamScope,
    Sources, UserInfo,
};

fn resource(s: &str) -> GroupVersionResource {
    let parts: Vec<&str> = s.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [r, v, g] => GroupVersionResource::new(g, v, r),
        [r, v] => GroupVersionResource::new("", v, r),
        _ => panic!("resource {s}: want group/version/resource or version/resource"),
    }
}

/// `{name, spec}` (or a configuration's `{name, webhooks}`) as a whole object of `kind`.
fn object(short: &Value, kind: &str) -> Value {
    let mut o = short.clone();
    let name = o.as_object_mut().and_then(|m| m.remove("name")).unwrap_or(json!(""));
    o["apiVersion"] = json!("admissionregistration.k8s.io/v1");
    o["kind"] = json!(kind);
    o["metadata"] = json!({"name": name});
    o
}

fn objects<T: serde::de::DeserializeOwned>(case: &Value, key: &str, kind: &str) -> Vec<T> {
    case[key]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| serde_json::from_value(object(s, kind)).unwrap_or_else(|e| panic!("{key}: {e}: {s}")))
                .collect()
        })
        .unwrap_or_default()
}

fn default_object() -> Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default", "labels": {"app": "cron"}},
        "spec": {"cronSpec": "* * * * */5", "image": "my-image", "replicas": 3}})
}

fn attributes(req: &Value) -> Attributes {
    let s = |k: &str, d: &str| req[k].as_str().unwrap_or(d).to_owned();
    let resource = resource(&s("resource", "stable.example.com/v1/crontabs"));
    let kind = GroupVersionKind::new(&resource.group, &resource.version, &s("kind", "CronTab"));
    let operation = Operation::parse(&s("operation", "CREATE")).expect("operation");
    let object = match req.get("object") {
        None if matches!(operation, Operation::Create | Operation::Update) => Some(default_object()),
        None | Some(Value::Null) => None,
        Some(o) => Some(o.clone()),
    };
    let old_object = match req.get("oldObject") {
        None if matches!(operation, Operation::Update | Operation::Delete) => Some(default_object()),
        None | Some(Value::Null) => None,
        Some(o) => Some(o.clone()),
    };
    let name = req["name"]
        .as_str()
        .or_else(|| object.as_ref().or(old_object.as_ref()).and_then(|o| o["metadata"]["name"].as_str()))
        .unwrap_or("")
        .to_owned();
    let namespace = s("namespace", "default");
    let user = &req["user"];
    Attributes {
        operation,
        kind,
        resource,
        subresource: s("subresource", ""),
        name,
        namespaced: !namespace.is_empty(),
        namespace,
        user: UserInfo {
            username: user["username"].as_str().unwrap_or("alice").to_owned(),
            uid: user["uid"].as_str().unwrap_or("").to_owned(),
            groups: serde_json::from_value(user.get("groups").cloned().unwrap_or(json!(["dev"]))).unwrap(),
            extra: serde_json::from_value(user.get("extra").cloned().unwrap_or(json!({}))).unwrap(),
        },
        object,
        old_object,
        dry_run: req["dryRun"].as_bool().unwrap_or(false),
        options: req.get("options").cloned(),
    }
}

fn host(case: &Value) -> FakeHost {
    let mut host = FakeHost::default();
    let namespaces = case.get("namespaces").cloned().unwrap_or(json!({"default": {}}));
    for (name, labels) in namespaces.as_object().expect("namespaces: a map of labels") {
        host = host.namespace(name, labels.clone());
    }
    for ns in case["namespaceObjects"].as_array().into_iter().flatten() {
        host.namespaces.insert(ns["metadata"]["name"].as_str().unwrap().to_owned(), Arc::new(ns.clone()));
    }
    for p in case["params"].as_array().into_iter().flatten() {
        host.params.push(Arc::new(p.clone()));
    }
    for k in case["paramKinds"].as_array().into_iter().flatten() {
        let scope = if k["scope"] == "Cluster" { ParamScope::Cluster } else { ParamScope::Namespaced };
        let key = (k["apiVersion"].as_str().unwrap().to_owned(), k["kind"].as_str().unwrap().to_owned());
        host.param_kinds.insert(key, scope);
    }
    for e in case["equivalents"].as_array().into_iter().flatten() {
        let r = resource(e["resource"].as_str().unwrap());
        let k = GroupVersionKind::new(&r.group, &r.version, e["kind"].as_str().unwrap());
        host.equivalents.push((r, k));
    }
    host.conversion_error = case["conversionError"].as_str().map(str::to_owned);
    host.no_merge = case["structuredMerge"] == false;
    if let Some(allow) = case.get("authorize") {
        let allow: Vec<String> = serde_json::from_value(allow.clone()).unwrap();
        host.authorizer = Some(Arc::new(common::FakeAuthorizer { allow }));
    }
    host
}

/// Runs one case; the differences from what it expects.
async fn run(case: &Value) -> Vec<String> {
    let vwc = objects(case, "validatingWebhooks", "ValidatingWebhookConfiguration");
    let mwc = objects(case, "mutatingWebhooks", "MutatingWebhookConfiguration");
    let vap = objects(case, "validatingPolicies", "ValidatingAdmissionPolicy");
    let vapb = objects(case, "validatingBindings", "ValidatingAdmissionPolicyBinding");
    let map = objects(case, "mutatingPolicies", "MutatingAdmissionPolicy");
    let mapb = objects(case, "mutatingBindings", "MutatingAdmissionPolicyBinding");
    let sources = Sources {
        validating_webhooks: &vwc,
        mutating_webhooks: &mwc,
        validating_policies: &vap,
        validating_bindings: &vapb,
        mutating_policies: &map,
        mutating_bindings: &mapb,
    };
    let (config, problems) = Configuration::build(&sources, &BuildOptions::default());
    let fake = host(case);
    let mut attrs = attributes(&case["request"]);
    let mut outcome = Outcome::default();
    let lifecycle =
        if case["lifecycle"] == true { versa_admission::namespace_lifecycle(&attrs, &fake).await } else { Ok(()) };
    let result = match lifecycle {
        Ok(()) => match config.mutate(&mut attrs, fake.host(), &mut outcome).await {
            Ok(()) => config.validate(&attrs, fake.host(), &mut outcome).await,
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let expect = &case["expect"];
    let mut diffs = Vec::new();
    let got_error =
        result.as_ref().err().map(|e| json!({"code": e.code(), "reason": e.reason(), "message": e.message()}));
    let want_error = expect.get("error").cloned().filter(|e| !e.is_null());
    match (&got_error, &want_error) {
        (None, None) => {}
        (Some(g), Some(w)) => {
            for k in ["code", "reason", "message"] {
                if let Some(wv) = w.get(k)
                    && g[k] != *wv
                {
                    diffs.push(format!("error.{k}: got {}, want {wv}", g[k]));
                }
            }
        }
        (g, w) => diffs.push(format!("error: got {g:?}, want {w:?}")),
    }
    let want_warnings: Vec<String> =
        serde_json::from_value(expect.get("warnings").cloned().unwrap_or(json!([]))).unwrap();
    if outcome.warnings != want_warnings {
        diffs.push(format!("warnings: got {:?}, want {want_warnings:?}", outcome.warnings));
    }
    if let Some(want) = expect.get("annotations") {
        let got = serde_json::to_value(&outcome.audit_annotations).unwrap();
        if got != *want {
            diffs.push(format!("annotations: got {got}, want {want}"));
        }
    }
    if let Some(want) = expect.get("object") {
        let got = attrs.object.clone().unwrap_or(Value::Null);
        if got != *want {
            diffs.push(format!("object: got {got}, want {want}"));
        }
    }
    if let Some(want) = expect.get("checks") {
        let got: Vec<String> = outcome
            .policy_checks
            .iter()
            .map(|c| format!("{}/{} {} {}", c.policy, c.binding, c.error_type, c.enforcement_action))
            .collect();
        let want: Vec<String> = serde_json::from_value(want.clone()).unwrap();
        if got != want {
            diffs.push(format!("checks: got {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = expect.get("calls") {
        let got: Vec<String> = outcome
            .webhook_calls
            .iter()
            .map(|c| {
                let how =
                    if c.failed_open { "failed-open".to_owned() } else { c.rejection.unwrap_or("admitted").to_owned() };
                format!("{} {} {} {} {how}", c.name, c.step, c.operation, c.code)
            })
            .collect();
        let want: Vec<String> = serde_json::from_value(want.clone()).unwrap();
        if got != want {
            diffs.push(format!("calls: got {got:?}, want {want:?}"));
        }
    }
    let got_problems: Vec<String> = problems.iter().map(|p| format!("{} {}: {}", p.kind, p.name, p.message)).collect();
    match expect.get("problems") {
        Some(want) => {
            let want: Vec<String> = serde_json::from_value(want.clone()).unwrap();
            if got_problems != want {
                diffs.push(format!("problems: got {got_problems:#?}, want {want:#?}"));
            }
        }
        None if !got_problems.is_empty() && want_error.is_none() => {
            diffs.push(format!("unexpected problems: {got_problems:#?}"));
        }
        None => {}
    }
    diffs
}

fn run_file(file: &str) {
    let cases = common::load(file);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mut failures = Vec::new();
    let cases = cases.as_array().expect("a list of cases");
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let diffs = rt.block_on(run(case));
        if !diffs.is_empty() {
            failures.push(format!("{name}:\n  {}", diffs.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{file}: {} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    eprintln!("{file}: {} cases", cases.len());
}

#[test]
fn matching() {
    run_file("matching.yaml");
}

#[test]
fn validating_policies() {
    run_file("validating_policy.yaml");
}

#[test]
fn mutating_policies() {
    run_file("mutating_policy.yaml");
}

#[test]
fn namespace_lifecycle() {
    run_file("lifecycle.yaml");
}

#[test]
fn webhook_matching() {
    run_file("webhook_matching.yaml");
}

/// The server shares one configuration between its tasks and awaits the chain inside hyper's
/// (`Send`) futures.
#[test]
fn configuration_and_calls_are_send() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: T) {}
    let config = Configuration::default();
    send_sync(&config);
    let fake = FakeHost::default();
    let mut attrs = attributes(&json!({}));
    let mut outcome = Outcome::default();
    send(config.mutate(&mut attrs, fake.host(), &mut outcome));
    send(config.validate(&attrs, fake.host(), &mut outcome));
    send(versa_admission::namespace_lifecycle(&attrs, &fake));
}
