//! Escalation prevention, as kube's RBAC storage does it (`pkg/registry/rbac`): nobody writes a
//! Role or ClusterRole that grants more than they hold, nor binds a role whose permissions they
//! do not hold — unless they are in `system:masters`, or hold the `escalate` verb on the role
//! (for roles) or `bind` on the role referred to (for bindings). "Hold" is kube's `Covers`:
//! every rule, broken down into one group, resource, verb (and name) at a time, is covered by
//! one rule of the writer's, with `*` and `*/subresource` matching as the authorizer matches.
//!
//! A refusal is kube's 403: `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice"
//! (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not
//! currently held:` and the missing rules, compacted and sorted, one per line. A binding of a
//! role that does not exist is a 404 naming the role as if it were of the binding's resource
//! (`rolebindings.rbac.authorization.k8s.io "no-such-role" not found`), as kube's is.
//! Updates that change only owner references and finalizers are the collector's and pass.
//!
//! It runs as the first step of validating admission (kube runs it before the object's own
//! validation: an invalid object that also escalates gets the validation error here instead).

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;

use versa_schema::field::go_quote;

use super::{Policy, url_matches};
use crate::auth::{Authorizer, Decision, UserInfo};
use crate::request_info::RequestInfo;
use crate::status::Status;

/// The API group of the RBAC kinds.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// One write of an RBAC object by `user`, to check.
#[derive(Debug)]
pub struct Write<'a> {
    pub user: &'a UserInfo,
    /// `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`.
    pub resource: &'a str,
    /// Empty for the cluster-scoped kinds.
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: &'a Value,
    /// The stored object, for an update.
    pub old: Option<&'a Value>,
}

/// Refuses `write` when it escalates (see the module's documentation); `policy` is the one in
/// force, `authorizer` answers the `escalate` and `bind` questions.
pub async fn check(authorizer: &dyn Authorizer, policy: &Policy, write: &Write<'_>) -> Result<(), Status> {
    if write.user.groups.iter().any(|g| g == crate::pki::ADMIN_GROUP) {
        return Ok(());
    }
    if write.old.is_some_and(|old| only_collector_fields(old, write.object)) {
        return Ok(());
    }
    let ask = |verb: &'static str, resource: &str, name: &str| RequestInfo {
        is_resource_request: true,
        verb: verb.to_owned(),
        api_group: GROUP.to_owned(),
        api_version: "*".to_owned(),
        resource: resource.to_owned(),
        namespace: write.namespace.to_owned(),
        name: name.to_owned(),
        ..RequestInfo::default()
    };
    let granted: Vec<PolicyRule> = match write.resource {
        "roles" | "clusterroles" => {
            let request = ask("escalate", write.resource, write.name);
            if matches!(authorizer.authorize(write.user, &request).await, Decision::Allow(_)) {
                return Ok(());
            }
            rules_of(write.object)
        }
        "rolebindings" | "clusterrolebindings" => {
            let Ok(role_ref) =
                serde_json::from_value::<RoleRef>(write.object.get("roleRef").cloned().unwrap_or_default())
            else {
                return Ok(()); // validation refuses it
            };
            let resource = match role_ref.kind.as_str() {
                "ClusterRole" => "clusterroles",
                "Role" => "roles",
                _ => return Ok(()), // validation refuses it
            };
            let request = ask("bind", resource, &role_ref.name);
            if matches!(authorizer.authorize(write.user, &request).await, Decision::Allow(_)) {
                return Ok(());
            }
            match policy.rules(&role_ref.kind, &role_ref.name, write.namespace) {
                Ok(rules) => rules.to_vec(),
                // kube reads the role through a store that names the resource of the request.
                Err(_) => return Err(Status::not_found(GROUP, write.resource, &role_ref.name)),
            }
        }
        _ => return Ok(()),
    };
    let (held, errors) = policy.rules_for(&write.user.name, &write.user.groups, write.namespace);
    let missing = uncovered(&held, &granted);
    if missing.is_empty() {
        return Ok(());
    }
    let lines: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
    let groups: Vec<String> = write.user.groups.iter().map(|g| go_quote(g)).collect();
    let mut message = format!(
        "{}.{GROUP} {} is forbidden: user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        write.resource,
        go_quote(write.name),
        go_quote(&write.user.name),
        groups.join(" "),
        lines.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(", ")));
    }
    let details = serde_json::json!({"name": write.name, "group": GROUP, "kind": write.resource});
    Err(Status::forbidden(message, Some(details)))
}

/// The `rules` of a Role or ClusterRole as written.
fn rules_of(object: &Value) -> Vec<PolicyRule> {
    object.get("rules").cloned().and_then(|r| serde_json::from_value(r).ok()).unwrap_or_default()
}

/// Whether an update changes nothing but `metadata.ownerReferences` and `metadata.finalizers`
/// (kube's `IsOnlyMutatingGCFields`; the server's own metadata aside).
fn only_collector_fields(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in ["ownerReferences", "finalizers", "resourceVersion", "managedFields", "generation"] {
                meta.remove(key);
            }
        }
        v
    };
    strip(old) == strip(new)
}

/// kube's `BreakdownRule`: one rule per group, resource, verb (and name), then per URL and verb.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |v: &str| Some(vec![v.to_owned()]);
    let mut out = Vec::new();
    for group in rule.api_groups.iter().flatten() {
        for resource in rule.resources.iter().flatten() {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                match rule.resource_names.as_deref().filter(|n| !n.is_empty()) {
                    Some(names) => {
                        out.extend(names.iter().map(|n| PolicyRule { resource_names: one(n), ..base.clone() }))
                    }
                    None => out.push(base),
                }
            }
        }
    }
    for url in rule.non_resource_urls.iter().flatten() {
        for verb in &rule.verbs {
            out.push(PolicyRule { non_resource_urls: one(url), verbs: vec![verb.clone()], ..PolicyRule::default() });
        }
    }
    out
}

/// The broken-down rules of `servant` that no rule of `owner` covers (kube's `Covers`).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant.iter().flat_map(breakdown).filter(|sub| !owner.iter().any(|o| covers(o, sub))).collect()
}

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or_default()
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| set.contains(w))
}

/// kube's `ruleCovers`: whether `owner` covers the broken-down rule `sub`.
fn covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let star = |set: &[String], all: &str| set.iter().any(|s| s == all);
    let verbs = star(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = star(list(&owner.api_groups), "*") || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = {
        let set = list(&owner.resources);
        star(set, "*")
            || has_all(set, list(&sub.resources))
            || list(&sub.resources).iter().all(|path| {
                set.contains(path) || path.split_once('/').is_some_and(|(_, sub)| set.contains(&format!("*/{sub}")))
            })
    };
    let urls = list(&sub.non_resource_urls)
        .iter()
        .all(|path| list(&owner.non_resource_urls).iter().any(|o| url_matches(o, path)));
    let names = if list(&sub.resource_names).is_empty() {
        list(&owner.resource_names).is_empty()
    } else {
        list(&owner.resource_names).is_empty() || has_all(list(&owner.resource_names), list(&sub.resource_names))
    };
    verbs && groups && resources && names && urls
}

/// kube's `CompactRules`: rules of one group, one resource and at most one name share one rule
/// whose verbs are theirs in order.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut simple: Vec<PolicyRule> = Vec::new();
    let mut other = Vec::new();
    for rule in rules {
        let is_simple = list(&rule.api_groups).len() == 1
            && list(&rule.resources).len() == 1
            && list(&rule.resource_names).len() <= 1
            && list(&rule.non_resource_urls).is_empty();
        if !is_simple {
            other.push(rule);
            continue;
        }
        let same = |r: &&mut PolicyRule| {
            r.api_groups == rule.api_groups
                && r.resources == rule.resources
                && list(&r.resource_names) == list(&rule.resource_names)
        };
        match simple.iter_mut().find(same) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    other.extend(simple);
    other
}

/// kube's `CompactString` of a rule: `{APIGroups:["x"], Resources:["y"], Verbs:["get"]}`.
fn compact_string(rule: &PolicyRule) -> String {
    let go = |v: &[String]| format!("[{}]", v.iter().map(|s| go_quote(s)).collect::<Vec<_>>().join(" "));
    let mut parts = Vec::new();
    for (name, values) in [
        ("APIGroups", list(&rule.api_groups)),
        ("Resources", list(&rule.resources)),
        ("NonResourceURLs", list(&rule.non_resource_urls)),
        ("ResourceNames", list(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ] {
        if !values.is_empty() {
            parts.push(format!("{name}:{}", go(values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(v: Value) -> Vec<PolicyRule> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn what_is_not_held_is_named_as_kube_names_it() {
        let cases = [
            // (held, granted, missing lines)
            (
                serde_json::json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
                serde_json::json!([{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "delete"]}]),
                vec![
                    r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}"#,
                    r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "delete"]}"#,
                ],
            ),
            (
                serde_json::json!([{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["*"]}]),
                serde_json::json!([{"apiGroups": ["x"], "resources": ["a/status", "a"], "verbs": ["update"], "resourceNames": ["n"]}]),
                vec![r#"{APIGroups:["x"], Resources:["a"], ResourceNames:["n"], Verbs:["update"]}"#],
            ),
            (
                serde_json::json!([{"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}]),
                serde_json::json!([{"nonResourceURLs": ["/healthz/ping", "/metrics"], "verbs": ["get"]}]),
                vec![r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#],
            ),
            (
                serde_json::json!([{"apiGroups": ["x"], "resources": ["a"], "verbs": ["get"], "resourceNames": ["n"]}]),
                serde_json::json!([{"apiGroups": ["x"], "resources": ["a"], "verbs": ["get"]}]),
                vec![r#"{APIGroups:["x"], Resources:["a"], Verbs:["get"]}"#],
            ),
        ];
        for (held, granted, want) in cases {
            let missing = uncovered(&rules(held), &rules(granted));
            let got: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
            assert_eq!(got.into_iter().collect::<Vec<_>>(), want);
        }
    }
}
