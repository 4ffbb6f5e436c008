//! Rules (`RuleWithOperations`, `NamedRuleWithOperations`) compiled once and matched as kube's
//! `predicates/rules.Matcher` matches them: scope, operation, group, version and
//! resource/subresource must all match.
//!
//! - `operations`: `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`;
//! - `apiGroups`, `apiVersions`: exact or `*`;
//! - `resources`: `res` (the resource, no subresource), `res/sub`, `res/*`, `*`
//!   (every resource, no subresource), `*/sub`, `*/*`;
//! - `scope`: `Namespaced` (a namespace is set, and it is not a Namespace itself), `Cluster`
//!   (no namespace, or a Namespace), `*` or unset;
//! - `resourceNames` (policies only): the request's name must be listed, when any are.

use k8s_openapi::api::admissionregistration::v1::{NamedRuleWithOperations, RuleWithOperations};

use crate::attributes::{Attributes, GroupVersionResource, Operation};

/// A compiled rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    operations: Ops,
    groups: Names,
    versions: Names,
    /// `(resource, subresource)` patterns.
    resources: Vec<(String, String)>,
    scope: Scope,
    /// Policies' `resourceNames`; empty: any name.
    resource_names: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ops(u8);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Names {
    Any,
    Listed(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    All,
    Namespaced,
    Cluster,
    /// A value kube does not know: matches nothing.
    Unknown,
}

fn op_bit(op: Operation) -> u8 {
    match op {
        Operation::Create => 1,
        Operation::Update => 2,
        Operation::Delete => 4,
        Operation::Connect => 8,
    }
}

fn names(list: Option<&Vec<String>>) -> Names {
    let list = list.map(Vec::as_slice).unwrap_or_default();
    if list.iter().any(|s| s == "*") { Names::Any } else { Names::Listed(list.to_vec()) }
}

impl Rule {
    fn build(
        operations: Option<&Vec<String>>,
        groups: Option<&Vec<String>>,
        versions: Option<&Vec<String>>,
        resources: Option<&Vec<String>>,
        scope: Option<&String>,
        resource_names: Option<&Vec<String>>,
    ) -> Rule {
        let mut bits = 0u8;
        for op in operations.into_iter().flatten() {
            if op == "*" {
                bits = 0xf;
            } else if let Some(o) = Operation::parse(op) {
                bits |= op_bit(o);
            }
        }
        let resources = resources
            .into_iter()
            .flatten()
            .map(|r| match r.split_once('/') {
                Some((res, sub)) => (res.to_owned(), sub.to_owned()),
                None => (r.clone(), String::new()),
            })
            .collect();
        let scope = match scope.map(String::as_str) {
            None | Some("*") => Scope::All,
            Some("Namespaced") => Scope::Namespaced,
            Some("Cluster") => Scope::Cluster,
            Some(_) => Scope::Unknown,
        };
        Rule {
            operations: Ops(bits),
            groups: names(groups),
            versions: names(versions),
            resources,
            scope,
            resource_names: resource_names.cloned().unwrap_or_default(),
        }
    }

    /// A webhook's rule.
    pub fn from_webhook(r: &RuleWithOperations) -> Rule {
        Rule::build(
            r.operations.as_ref(),
            r.api_groups.as_ref(),
            r.api_versions.as_ref(),
            r.resources.as_ref(),
            r.scope.as_ref(),
            None,
        )
    }

    /// A policy's rule.
    pub fn from_named(r: &NamedRuleWithOperations) -> Rule {
        Rule::build(
            r.operations.as_ref(),
            r.api_groups.as_ref(),
            r.api_versions.as_ref(),
            r.resources.as_ref(),
            r.scope.as_ref(),
            r.resource_names.as_ref(),
        )
    }

    /// Whether the rule matches `attrs` with `resource` in place of the request's (an
    /// equivalent resource, or the request's own). Resource names are not looked at.
    pub fn matches(&self, attrs: &Attributes, resource: &GroupVersionResource) -> bool {
        self.scope_matches(attrs, resource)
            && self.operations.0 & op_bit(attrs.operation) != 0
            && listed(&self.groups, &resource.group)
            && listed(&self.versions, &resource.version)
            && self.resources.iter().any(|(res, sub)| {
                (res == "*" || *res == resource.resource) && (sub == "*" || *sub == attrs.subresource)
            })
    }

    /// Whether the request's name is one of `resourceNames` (any name when none are listed).
    pub fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    fn scope_matches(&self, attrs: &Attributes, resource: &GroupVersionResource) -> bool {
        let is_namespace = resource.group.is_empty() && resource.version == "v1" && resource.resource == "namespaces";
        match self.scope {
            Scope::All => true,
            Scope::Namespaced => !is_namespace && !attrs.namespace.is_empty(),
            Scope::Cluster => is_namespace || attrs.namespace.is_empty(),
            Scope::Unknown => false,
        }
    }

    /// Whether the rule could match resource name `resource` (an index for the fast path).
    pub(crate) fn mentions_resource(&self, resource: &str) -> bool {
        self.resources.iter().any(|(res, _)| res == "*" || res == resource)
    }
}

fn listed(names: &Names, value: &str) -> bool {
    match names {
        Names::Any => true,
        Names::Listed(list) => list.iter().any(|n| n == value),
    }
}
