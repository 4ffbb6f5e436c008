//! The four kinds of `rbac.authorization.k8s.io/v1` (standalone): Roles, ClusterRoles,
//! RoleBindings and ClusterRoleBindings, with kube's validation
//! (`pkg/apis/rbac/validation`): names are path segments (`system:discovery`), every rule has
//! verbs, a namespaced rule no non-resource URLs, a resource rule API groups and resources, a
//! rule not both; an aggregation rule has selectors; a binding's `roleRef` names a Role or
//! ClusterRole of `rbac.authorization.k8s.io` (a ClusterRoleBinding only a ClusterRole) and
//! never changes; subjects are Users and Groups of that group or ServiceAccounts (with a
//! namespace in a ClusterRoleBinding). No `generation`; client-go's typed clients (`kubectl
//! create role`, …) may send them as protobuf. Who may do what by them is the server's RBAC
//! authorizer's (`versa_server::rbac`).

use serde_json::{Value, json};
use versa_schema::field::BadValue;
use versa_schema::names::{is_dns1123_subdomain, name_is_path_segment};
use versa_schema::{Error as FieldError, ErrorList, Path};

use super::patch::{METADATA_ONLY, Schema};
use super::{CoreKind, KindRules, Part, core_definition, custom};
use crate::error::Result;
use crate::resource::{Builtin, Resource, Version};

/// The API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

pub const ROLES: Builtin = Builtin::new("roles.rbac.authorization.k8s.io", role_definition);
pub const CLUSTER_ROLES: Builtin = Builtin::new("clusterroles.rbac.authorization.k8s.io", cluster_role_definition);
pub const ROLE_BINDINGS: Builtin = Builtin::new("rolebindings.rbac.authorization.k8s.io", role_binding_definition);
pub const CLUSTER_ROLE_BINDINGS: Builtin =
    Builtin::new("clusterrolebindings.rbac.authorization.k8s.io", cluster_role_binding_definition);

pub static ROLE_KIND: CoreKind = CoreKind { builtin: ROLES, rules: &Rbac::Role };
pub static CLUSTER_ROLE_KIND: CoreKind = CoreKind { builtin: CLUSTER_ROLES, rules: &Rbac::ClusterRole };
pub static ROLE_BINDING_KIND: CoreKind = CoreKind { builtin: ROLE_BINDINGS, rules: &Rbac::RoleBinding };
pub static CLUSTER_ROLE_BINDING_KIND: CoreKind =
    CoreKind { builtin: CLUSTER_ROLE_BINDINGS, rules: &Rbac::ClusterRoleBinding };

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn rules_schema() -> Value {
    json!({"type": "array", "items": {"type": "object", "properties": {
        "verbs": strings(), "apiGroups": strings(), "resources": strings(),
        "resourceNames": strings(), "nonResourceURLs": strings()}}})
}

fn binding_schema() -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {
        "subjects": {"type": "array", "items": {"type": "object", "properties": {
            "kind": {"type": "string"}, "apiGroup": {"type": "string"},
            "name": {"type": "string"}, "namespace": {"type": "string"}}}},
        "roleRef": {"type": "object", "properties": {
            "apiGroup": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"}}}}}})
}

/// `kubectl get` of a role: its name and creation time, as kube prints it.
fn created_at() -> Value {
    json!([{"name": "Created At", "type": "date", "jsonPath": ".metadata.creationTimestamp"}])
}

fn role_definition() -> Value {
    core_definition(
        ROLES.name(),
        GROUP,
        "Namespaced",
        json!({"plural": "roles", "singular": "role", "kind": "Role"}),
        json!({"additionalPrinterColumns": created_at(),
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"rules": rules_schema()}}}}),
    )
}

fn cluster_role_definition() -> Value {
    let selector = json!({"type": "object", "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {"type": "array", "items": {"type": "object", "properties": {
            "key": {"type": "string"}, "operator": {"type": "string"}, "values": strings()}}}}});
    core_definition(
        CLUSTER_ROLES.name(),
        GROUP,
        "Cluster",
        json!({"plural": "clusterroles", "singular": "clusterrole", "kind": "ClusterRole"}),
        json!({"additionalPrinterColumns": created_at(),
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "rules": rules_schema(),
                   "aggregationRule": {"type": "object", "properties": {
                       "clusterRoleSelectors": {"type": "array", "items": selector}}}}}}}),
    )
}

/// A binding's columns: its role (kube prints `Kind/name`, which JSONPath cannot join; versa
/// prints the name) and age.
fn binding_columns() -> Value {
    json!([{"name": "Role", "type": "string", "jsonPath": ".roleRef.name"},
           {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}])
}

fn role_binding_definition() -> Value {
    core_definition(
        ROLE_BINDINGS.name(),
        GROUP,
        "Namespaced",
        json!({"plural": "rolebindings", "singular": "rolebinding", "kind": "RoleBinding"}),
        json!({"additionalPrinterColumns": binding_columns(), "schema": binding_schema()}),
    )
}

fn cluster_role_binding_definition() -> Value {
    core_definition(
        CLUSTER_ROLE_BINDINGS.name(),
        GROUP,
        "Cluster",
        json!({"plural": "clusterrolebindings", "singular": "clusterrolebinding", "kind": "ClusterRoleBinding"}),
        json!({"additionalPrinterColumns": binding_columns(), "schema": binding_schema()}),
    )
}

/// The rules of the four RBAC kinds.
#[derive(Debug)]
pub enum Rbac {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl KindRules for Rbac {
    fn is_core(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit_named(res, ver, obj, old, part, warnings, name_is_path_segment, |obj, old| match self {
            Rbac::Role => validate_rules(obj, true),
            Rbac::ClusterRole => {
                let mut errs = validate_rules(obj, false);
                errs.extend(validate_aggregation(obj));
                errs
            }
            Rbac::RoleBinding => validate_binding(obj, old, true),
            Rbac::ClusterRoleBinding => validate_binding(obj, old, false),
        })
    }
}

fn strings_of(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// kube's `ValidatePolicyRule` of every rule.
fn validate_rules(obj: &Value, namespaced: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let rules = obj.get("rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        let path = Path::new("rules").index(i);
        let list = |field: &str| strings_of(rule.get(field));
        if list("verbs").is_empty() {
            errs.push(FieldError::required(path.child("verbs"), "verbs must contain at least one value"));
        }
        let urls = list("nonResourceURLs");
        if !urls.is_empty() {
            let value = || BadValue::from(json!(urls));
            if namespaced {
                errs.push(FieldError::invalid(
                    path.child("nonResourceURLs"),
                    value(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !list("apiGroups").is_empty() || !list("resources").is_empty() || !list("resourceNames").is_empty() {
                errs.push(FieldError::invalid(
                    path.child("nonResourceURLs"),
                    value(),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if list("apiGroups").is_empty() {
            errs.push(FieldError::required(
                path.child("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if list("resources").is_empty() {
            errs.push(FieldError::required(
                path.child("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    errs
}

/// An aggregation rule has at least one selector, each with a known operator.
fn validate_aggregation(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(rule) = obj.get("aggregationRule").filter(|r| !r.is_null()) else { return errs };
    let selectors = rule.get("clusterRoleSelectors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let path = Path::new("aggregationRule").child("clusterRoleSelectors");
    if selectors.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
        return errs;
    }
    for (i, selector) in selectors.iter().enumerate() {
        let expressions =
            selector.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let valid = expressions.iter().all(|e| {
            let values = strings_of(e.get("values"));
            match e.get("operator").and_then(Value::as_str) {
                Some("In" | "NotIn") => !values.is_empty(),
                Some("Exists" | "DoesNotExist") => values.is_empty(),
                _ => false,
            }
        });
        if !valid {
            errs.push(FieldError::invalid(path.index(i), BadValue::from(selector.clone()), "invalid label selector."));
        }
    }
    errs
}

/// kube's `ValidateRoleBinding` / `ValidateClusterRoleBinding`, and the update rule: `roleRef`
/// never changes.
fn validate_binding(obj: &Value, old: Option<&Value>, namespaced: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let path = Path::new("roleRef");
    let api_group = field(&role_ref, "apiGroup");
    if api_group != GROUP {
        errs.push(FieldError::not_supported(path.child("apiGroup"), api_group.as_str(), &[GROUP]));
    }
    let kind = field(&role_ref, "kind");
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind.as_str()) {
        errs.push(FieldError::not_supported(path.child("kind"), kind.as_str(), kinds));
    }
    let name = field(&role_ref, "name");
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    } else {
        for msg in name_is_path_segment(&name, false) {
            errs.push(FieldError::invalid(path.child("name"), name.as_str(), msg));
        }
    }
    let subjects = obj.get("subjects").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, subject) in subjects.iter().enumerate() {
        let path = Path::new("subjects").index(i);
        let name = field(subject, "name");
        let api_group = field(subject, "apiGroup");
        if name.is_empty() {
            errs.push(FieldError::required(path.child("name"), ""));
        }
        match field(subject, "kind").as_str() {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for msg in is_dns1123_subdomain(&name) {
                        errs.push(FieldError::invalid(path.child("name"), name.as_str(), msg));
                    }
                }
                if !api_group.is_empty() {
                    errs.push(FieldError::not_supported(path.child("apiGroup"), api_group.as_str(), &[""]));
                }
                if !namespaced && field(subject, "namespace").is_empty() {
                    errs.push(FieldError::required(path.child("namespace"), ""));
                }
            }
            "User" | "Group" => {
                if api_group != GROUP {
                    errs.push(FieldError::not_supported(path.child("apiGroup"), api_group.as_str(), &[GROUP]));
                }
            }
            other => {
                errs.push(FieldError::not_supported(path.child("kind"), other, &["ServiceAccount", "User", "Group"]));
            }
        }
    }
    if let Some(old) = old {
        let old_ref = old.get("roleRef").cloned().unwrap_or(Value::Null);
        if old_ref != role_ref {
            // kube prints its internal struct as JSON: Go field names, no json tags.
            let go = json!({"APIGroup": api_group, "Kind": kind, "Name": field(&role_ref, "name")});
            errs.push(FieldError::invalid(path, BadValue::Json(go), "cannot change roleRef"));
        }
    }
    errs
}
