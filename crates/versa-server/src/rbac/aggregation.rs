//! ClusterRole aggregation, as kube-controller-manager's `clusterrole-aggregation` controller
//! computes it: an aggregated ClusterRole's rules are the rules of every other ClusterRole one
//! of its `aggregationRule.clusterRoleSelectors` selects — selector by selector, the selected
//! roles by name, each rule once. Pure; `controllers::cluster_roles` writes the result (a
//! server-side apply by `clusterrole-aggregation-controller`, as kube's does), and the
//! authorizer reads only what is written.

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

use versa_admission::Selector;

/// The field manager of the rules written.
pub const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// The rules `role` should hold by aggregation among `all` (every ClusterRole); `None` when it
/// is not aggregated.
pub fn aggregated_rules(role: &ClusterRole, all: &[&ClusterRole]) -> Option<Vec<PolicyRule>> {
    let aggregation = role.aggregation_rule.as_ref()?;
    let mut sorted: Vec<&ClusterRole> = all.to_vec();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in aggregation.cluster_role_selectors.iter().flatten() {
        // A selector that does not compile (validation refuses those) selects nothing.
        let Ok(selector) = Selector::compile(Some(selector)) else { continue };
        for other in &sorted {
            let labels = other.metadata.labels.iter().flatten().map(|(k, v)| (k.as_str(), v.as_str()));
            if other.metadata.name == role.metadata.name || !selector.matches(labels) {
                continue;
            }
            for rule in other.rules.iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

/// The aggregated ClusterRoles among `all` whose stored rules differ from what aggregation
/// gives (no rules and an empty list are the same, as kube's semantic equality has it), with
/// the rules to write.
pub fn stale(all: &[&ClusterRole]) -> Vec<(String, Vec<PolicyRule>)> {
    all.iter()
        .filter_map(|role| {
            let rules = aggregated_rules(role, all)?;
            let stored = role.rules.as_deref().unwrap_or_default();
            (rules.as_slice() != stored).then(|| (role.metadata.name.clone().unwrap_or_default(), rules))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(v: serde_json::Value) -> ClusterRole {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn selected_roles_by_name_each_rule_once() {
        let all = [
            role(serde_json::json!({"metadata": {"name": "view"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"view": "true"}}]}})),
            role(serde_json::json!({"metadata": {"name": "b", "labels": {"view": "true"}},
                "rules": [{"apiGroups": ["x"], "resources": ["b"], "verbs": ["get"]}]})),
            role(serde_json::json!({"metadata": {"name": "a", "labels": {"view": "true"}},
                "rules": [{"apiGroups": ["x"], "resources": ["a"], "verbs": ["get"]},
                          {"apiGroups": ["x"], "resources": ["b"], "verbs": ["get"]}]})),
            role(serde_json::json!({"metadata": {"name": "other"},
                "rules": [{"apiGroups": ["x"], "resources": ["c"], "verbs": ["get"]}]})),
            role(serde_json::json!({"metadata": {"name": "empty"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"none": "true"}}]}})),
        ];
        let stale = stale(&all.iter().collect::<Vec<_>>());
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert_eq!(stale[0].0, "view");
        let resources: Vec<_> = stale[0].1.iter().map(|r| r.resources.clone().unwrap()[0].clone()).collect();
        assert_eq!(resources, ["a", "b"]);
    }
}
