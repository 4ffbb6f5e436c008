//! RBAC decisions case by case (`tests/data/rbac.yaml`): the objects in force and, for each
//! request, kube's RBAC authorizer's answer and reason (`versa_server::rbac`), aggregated
//! ClusterRoles first given their rules as the aggregation controller would.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

use k8s_openapi::api::rbac::v1::ClusterRole;
use serde::Deserialize;
use serde_json::Value;
use versa_server::rbac::{Attributes, Policy, aggregation};

#[derive(Deserialize)]
struct File {
    objects: Vec<Value>,
    checks: Vec<Check>,
}

#[derive(Deserialize)]
struct Check {
    user: String,
    #[serde(default)]
    groups: Vec<String>,
    verb: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
    #[serde(default)]
    name: String,
    path: Option<String>,
    allow: Option<String>,
    deny: Option<String>,
}

#[test]
fn rbac_cases() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rbac.yaml");
    let file: File = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let of = |kind: &'static str| file.objects.iter().filter(move |o| o["kind"] == kind).cloned();
    // Aggregated ClusterRoles hold what the aggregation controller writes into them.
    let mut cluster_roles: Vec<ClusterRole> = of("ClusterRole").map(|o| serde_json::from_value(o).unwrap()).collect();
    for (name, rules) in aggregation::stale(&cluster_roles.iter().collect::<Vec<_>>()) {
        cluster_roles.iter_mut().find(|r| r.metadata.name.as_deref() == Some(&name)).unwrap().rules = Some(rules);
    }
    let policy = Policy::new(
        of("Role").map(|o| serde_json::from_value(o).unwrap()).collect(),
        cluster_roles,
        of("RoleBinding").map(|o| serde_json::from_value(o).unwrap()).collect(),
        of("ClusterRoleBinding").map(|o| serde_json::from_value(o).unwrap()).collect(),
    );
    let mut failures = Vec::new();
    for (i, c) in file.checks.iter().enumerate() {
        let attrs = Attributes {
            user: &c.user,
            groups: &c.groups,
            verb: &c.verb,
            namespace: &c.namespace,
            resource_request: c.path.is_none(),
            api_group: &c.group,
            resource: &c.resource,
            subresource: &c.subresource,
            name: &c.name,
            path: c.path.as_deref().unwrap_or(""),
        };
        let got = policy.authorize(&attrs);
        let want = match (&c.allow, &c.deny) {
            (Some(reason), None) => (true, reason.clone()),
            (None, Some(reason)) => (false, reason.clone()),
            _ => panic!("check {i}: give allow or deny"),
        };
        if (got.allowed, got.reason.clone()) != want {
            failures.push(format!(
                "check {i} ({} {} {}{}): got {got:?}, want {want:?}",
                c.user,
                c.verb,
                c.resource,
                c.path.as_deref().unwrap_or("")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
