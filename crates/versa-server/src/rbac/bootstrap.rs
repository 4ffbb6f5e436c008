//! kube's default RBAC policy (`bootstrap.yaml`: `cluster-admin` for `system:masters`, the
//! aggregated `admin`, `edit` and `view` with their `system:aggregate-to-*` parts, discovery,
//! public info and basic-user rights for every authenticated user, `system:auth-delegator`,
//! the ServiceAccount issuer's discovery for ServiceAccounts),
//! and kube's reconciliation of it at start (`component-helpers/auth/rbac/reconciliation`): a
//! missing object is created; a present one gains what it lacks — labels and annotations
//! (present values kept), rules (the missing ones, broken down, appended), aggregation
//! selectors, subjects — unless annotated `rbac.authorization.kubernetes.io/autoupdate:
//! "false"`. A binding whose role reference differs is recreated. Pure; `controllers::rbac`
//! writes what it says.
//!
//! Custom resources join `admin`, `edit` and `view` as in kube: a ClusterRole labelled
//! `rbac.authorization.k8s.io/aggregate-to-view: "true"` (and so on) is aggregated into them.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use super::escalation::uncovered;

/// The last default ClusterRoleBinding written: once it is in the policy, all are (readiness).
pub const LAST_BINDING: &str = "system:public-info-viewer";

/// The annotation that keeps an object from being reconciled when `"false"`.
pub const AUTO_UPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The default policy's objects.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Defaults {
    pub cluster_roles: Vec<ClusterRole>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// What to do with one default object.
#[derive(Debug, Clone, PartialEq)]
pub enum Action<T> {
    Create(T),
    Update(T),
    /// Delete the stored one and create this one (a binding's role reference cannot change).
    Recreate(T),
    None,
}

impl Defaults {
    /// kube's default policy, each object with the label and annotation kube gives its own.
    pub fn load() -> Defaults {
        // The file is part of the binary and its test reads it: it parses.
        let mut defaults: Defaults =
            serde_saphyr::from_str(include_str!("bootstrap.yaml")).unwrap_or(Defaults::empty());
        for meta in defaults
            .cluster_roles
            .iter_mut()
            .map(|r| &mut r.metadata)
            .chain(defaults.cluster_role_bindings.iter_mut().map(|b| &mut b.metadata))
        {
            meta.labels.get_or_insert_default().insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
            meta.annotations.get_or_insert_default().insert(AUTO_UPDATE.into(), "true".into());
        }
        defaults
    }

    fn empty() -> Defaults {
        Defaults { cluster_roles: Vec::new(), cluster_role_bindings: Vec::new() }
    }
}

fn protected(meta: &ObjectMeta) -> bool {
    meta.annotations.as_ref().and_then(|a| a.get(AUTO_UPDATE)).is_some_and(|v| v == "false")
}

/// `expected`'s labels and annotations added to `meta`'s (whose values win); whether any was.
fn merged(expected: &ObjectMeta, meta: &mut ObjectMeta) -> bool {
    let mut changed = false;
    for (want, have) in [(&expected.annotations, &mut meta.annotations), (&expected.labels, &mut meta.labels)] {
        let Some(want) = want else { continue };
        let have = have.get_or_insert_default();
        for (k, v) in want {
            if !have.contains_key(k) {
                have.insert(k.clone(), v.clone());
                changed = true;
            }
        }
    }
    changed
}

/// What to do for the default ClusterRole `expected`, given the stored one.
pub fn reconcile_role(existing: Option<&ClusterRole>, expected: &ClusterRole) -> Action<ClusterRole> {
    let Some(existing) = existing else { return Action::Create(expected.clone()) };
    if protected(&existing.metadata) {
        return Action::None;
    }
    let mut role = existing.clone();
    let mut changed = merged(&expected.metadata, &mut role.metadata);
    let missing =
        uncovered(existing.rules.as_deref().unwrap_or_default(), expected.rules.as_deref().unwrap_or_default());
    if !missing.is_empty() {
        role.rules.get_or_insert_default().extend(missing);
        changed = true;
    }
    match (&expected.aggregation_rule, &mut role.aggregation_rule) {
        (None, Some(_)) => {
            role.aggregation_rule = None;
            changed = true;
        }
        (Some(want), have) => {
            let have = have.get_or_insert_default();
            for selector in want.cluster_role_selectors.iter().flatten() {
                let selectors = have.cluster_role_selectors.get_or_insert_default();
                if !selectors.contains(selector) {
                    selectors.push(selector.clone());
                    changed = true;
                }
            }
        }
        (None, None) => {}
    }
    if changed { Action::Update(role) } else { Action::None }
}

/// What to do for the default ClusterRoleBinding `expected`, given the stored one.
pub fn reconcile_binding(
    existing: Option<&ClusterRoleBinding>,
    expected: &ClusterRoleBinding,
) -> Action<ClusterRoleBinding> {
    let Some(existing) = existing else { return Action::Create(expected.clone()) };
    if protected(&existing.metadata) {
        return Action::None;
    }
    let mut binding = existing.clone();
    let mut changed = merged(&expected.metadata, &mut binding.metadata);
    for subject in expected.subjects.iter().flatten() {
        let subjects = binding.subjects.get_or_insert_default();
        if !subjects.contains(subject) {
            subjects.push(subject.clone());
            changed = true;
        }
    }
    if binding.role_ref != expected.role_ref {
        binding.role_ref = expected.role_ref.clone();
        binding.metadata.resource_version = None;
        binding.metadata.uid = None;
        return Action::Recreate(binding);
    }
    if changed { Action::Update(binding) } else { Action::None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_parse_and_are_kubes() {
        let defaults = Defaults::load();
        let names: Vec<_> = defaults.cluster_roles.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        for name in ["cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery"] {
            assert!(names.iter().any(|n| n == name), "{name}");
        }
        assert_eq!(defaults.cluster_role_bindings.len(), 5);
        assert_eq!(defaults.cluster_role_bindings.last().unwrap().metadata.name.as_deref(), Some(LAST_BINDING));
        let admin = &defaults.cluster_roles[0];
        assert_eq!(admin.metadata.annotations.as_ref().unwrap()[AUTO_UPDATE], "true");
    }

    #[test]
    fn reconciliation_adds_what_is_missing_and_keeps_the_rest() {
        let defaults = Defaults::load();
        let expected = defaults.cluster_roles.iter().find(|r| r.metadata.name.as_deref() == Some("system:discovery"));
        let expected = expected.unwrap();
        assert_eq!(reconcile_role(None, expected), Action::Create(expected.clone()));
        assert_eq!(reconcile_role(Some(expected), expected), Action::None);
        // Someone narrowed it: the missing URLs come back, one rule each, after what is there.
        let mut narrowed = expected.clone();
        narrowed.rules = Some(vec![serde_json::from_value(serde_json::json!({"nonResourceURLs": ["/api", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]})).unwrap()]);
        let Action::Update(fixed) = reconcile_role(Some(&narrowed), expected) else { panic!() };
        let rules = fixed.rules.unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].non_resource_urls.as_deref().unwrap(), ["/api/*"]);
        // Unless told not to.
        narrowed.metadata.annotations.as_mut().unwrap().insert(AUTO_UPDATE.into(), "false".into());
        assert_eq!(reconcile_role(Some(&narrowed), expected), Action::None);
    }

    #[test]
    fn a_binding_gains_its_subjects_and_is_recreated_for_another_role() {
        let defaults = Defaults::load();
        let expected = &defaults.cluster_role_bindings[0];
        let mut other = expected.clone();
        other.subjects = Some(Vec::new());
        let Action::Update(fixed) = reconcile_binding(Some(&other), expected) else { panic!() };
        assert_eq!(fixed.subjects, expected.subjects);
        other.role_ref.name = "view".into();
        assert!(matches!(reconcile_binding(Some(&other), expected), Action::Recreate(_)));
    }
}
