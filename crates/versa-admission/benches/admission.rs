//! What admission costs per object, in process (no webhook): nothing configured; policies for
//! other resources only; one ValidatingAdmissionPolicy with three validations that matches; the
//! same with a MutatingAdmissionPolicy. Prints ns per call; `cargo bench -p versa-admission`.
//! The target is relative to a whole create (≤ 1.2× with the policy), which the server's
//! benchmark measures; this one shows what the chain adds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark code")]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use serde_json::{Value, json};
use versa_admission::{
    Attributes, BuildOptions, Configuration, GroupVersionKind, GroupVersionResource, Operation, Outcome, Sources,
    UserInfo,
};

fn attrs() -> Attributes {
    Attributes {
        operation: Operation::Create,
        kind: GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
        resource: GroupVersionResource::new("stable.example.com", "v1", "crontabs"),
        subresource: String::new(),
        name: "my-cron".into(),
        namespace: "default".into(),
        user: UserInfo { username: "alice".into(), groups: vec!["dev".into()], ..UserInfo::default() },
        object: Some(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "my-cron", "namespace": "default", "labels": {"app": "cron"}},
            "spec": {"cronSpec": "* * * * */5", "image": "registry.example.com/cron:1.2", "replicas": 3}})),
        old_object: None,
        dry_run: false,
        options: None,
        namespaced: true,
    }
}

fn vap(name: &str, resource: &str) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["stable.example.com"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": [resource]}]},
            "validations": [
                {"expression": "object.spec.replicas <= 5", "message": "at most 5 replicas"},
                {"expression": "object.spec.image.startsWith('registry.example.com/')", "message": "images from our registry"},
                {"expression": "has(object.metadata.labels) && 'app' in object.metadata.labels", "message": "an app label"}]}})
}

fn binding(name: &str) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]}})
}

fn config(policies: Vec<Value>, bindings: Vec<Value>, map: bool) -> Configuration {
    let policies: Vec<_> = policies.into_iter().map(|p| serde_json::from_value(p).unwrap()).collect();
    let bindings: Vec<_> = bindings.into_iter().map(|b| serde_json::from_value(b).unwrap()).collect();
    let maps: Vec<_> = if map {
        vec![serde_json::from_value(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "m"}, "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["crontabs"]}]},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: \"add\", path: \"/metadata/labels/owner\", value: request.userInfo.username}]"}}]}}))
        .unwrap()]
    } else {
        Vec::new()
    };
    let mbs: Vec<_> = if map {
        vec![
            serde_json::from_value(
                json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": "m"}, "spec": {"policyName": "m"}}),
            )
            .unwrap(),
        ]
    } else {
        Vec::new()
    };
    let sources = Sources {
        validating_policies: &policies,
        validating_bindings: &bindings,
        mutating_policies: &maps,
        mutating_bindings: &mbs,
        ..Sources::default()
    };
    let (c, problems) = Configuration::build(&sources, &BuildOptions::default());
    assert!(problems.is_empty(), "{problems:?}");
    c
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let host = common::FakeHost::default().namespace("default", json!({}));
    let cases = [
        ("nothing configured", config(vec![], vec![], false)),
        ("10 policies for other resources", {
            let names: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
            config(names.iter().map(|n| vap(n, "others")).collect(), names.iter().map(|n| binding(n)).collect(), false)
        }),
        ("one policy, 3 validations", config(vec![vap("p", "crontabs")], vec![binding("p")], false)),
        ("one policy, 0 validations", {
            let mut p = vap("p", "crontabs");
            p["spec"]["validations"] = json!([]);
            config(vec![p], vec![binding("p")], false)
        }),
        ("one policy, 1 validation", {
            let mut p = vap("p", "crontabs");
            p["spec"]["validations"] = json!([{"expression": "object.spec.replicas <= 5"}]);
            config(vec![p], vec![binding("p")], false)
        }),
        ("+ one mutating policy (JSONPatch)", config(vec![vap("p", "crontabs")], vec![binding("p")], true)),
    ];
    let only = std::env::var("ONLY").ok();
    for (name, config) in &cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let n = 20_000u32;
        let started = Instant::now();
        rt.block_on(async {
            for _ in 0..n {
                let mut a = attrs();
                let mut outcome = Outcome::default();
                config.mutate(&mut a, host.host(), &mut outcome).await.unwrap();
                config.validate(&a, host.host(), &mut outcome).await.unwrap();
                std::hint::black_box(&outcome);
            }
        });
        let per = started.elapsed() / n;
        println!("{name:<40} {:>8} ns/object (attributes built included)", per.as_nanos());
    }
}
