//! Kubernetes RBAC (`rbac.authorization.k8s.io/v1`) in standalone versa: the decisions kube's
//! RBAC authorizer makes (`plugin/pkg/auth/authorizer/rbac`), over a [`Policy`] — the Roles,
//! ClusterRoles, RoleBindings and ClusterRoleBindings in force. This module is pure: objects in,
//! decisions, rules and kube's reasons out. Around it: [`authorizer`] keeps the policy of the
//! stored objects current; [`escalation`] refuses roles and bindings that grant more than their
//! writer holds; [`aggregation`] computes what the aggregation controller writes into aggregated
//! ClusterRoles; [`bootstrap`] is kube's default policy (`cluster-admin`, `admin`, `edit`,
//! `view`, discovery, basic user) and its reconciliation at start.
//!
//! - Every ClusterRoleBinding whose subjects include the user is visited, then — for a request
//!   in a namespace — that namespace's RoleBindings; the first rule of a bound role that allows
//!   the request decides (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User
//!   "alice"`). A binding to a role that does not exist contributes its error to the reason of a
//!   denial (`RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found`), as kube's does.
//! - A rule allows a resource request when its verbs, API groups, resources (`*`,
//!   `resource/subresource`, `*/subresource`) and — when it lists any — resource names match;
//!   a non-resource request when its verbs and URLs (`*`, a `prefix*`) match.
//! - Subjects: a `User` by name, a `Group` by membership, a `ServiceAccount` as the user
//!   `system:serviceaccount:<namespace>:<name>` (its namespace defaulting to the binding's).
//! - A ClusterRole's rules are the stored ones: for an aggregated ClusterRole, what the
//!   aggregation controller wrote (as in kube, whose authorizer reads only `rules`).

pub mod aggregation;
pub mod authorizer;
pub mod bootstrap;
pub mod escalation;

use std::collections::HashMap;
use std::ops::ControlFlow;

use versa_schema::field::go_quote;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};

/// The RBAC objects in force.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Roles by namespace, then name.
    roles: HashMap<String, HashMap<String, Vec<PolicyRule>>>,
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    role_bindings: HashMap<String, Indexed<RoleBinding>>,
    cluster_role_bindings: Indexed<ClusterRoleBinding>,
}

/// Bindings in kube's order (by name), indexed by the users and groups their subjects name, so
/// that a request visits only the bindings that can apply to its user — the same ones, in the
/// same order, as visiting them all would.
#[derive(Debug, Clone)]
struct Indexed<B> {
    all: Vec<B>,
    by_user: HashMap<String, Vec<usize>>,
    by_group: HashMap<String, Vec<usize>>,
}

impl<B> Default for Indexed<B> {
    fn default() -> Self {
        Indexed { all: Vec::new(), by_user: HashMap::new(), by_group: HashMap::new() }
    }
}

impl<B: Binding> Indexed<B> {
    /// Adds `binding`; `namespace` is the binding's (a ServiceAccount subject's default).
    fn push(&mut self, binding: B, namespace: &str) {
        let i = self.all.len();
        for subject in binding.subjects() {
            match subject.kind.as_str() {
                "User" => self.by_user.entry(subject.name.clone()).or_default().push(i),
                "Group" => self.by_group.entry(subject.name.clone()).or_default().push(i),
                "ServiceAccount" => {
                    let ns = subject.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(namespace);
                    if !ns.is_empty() {
                        let user = format!("system:serviceaccount:{ns}:{}", subject.name);
                        self.by_user.entry(user).or_default().push(i);
                    }
                }
                _ => {}
            }
        }
        self.all.push(binding);
    }

    /// The bindings that may apply to the user, in order.
    fn candidates(&self, user: &str, groups: &[String]) -> impl Iterator<Item = &B> {
        let mut indices: Vec<usize> = self.by_user.get(user).into_iter().flatten().copied().collect();
        for group in groups {
            indices.extend(self.by_group.get(group).into_iter().flatten().copied());
        }
        indices.sort_unstable();
        indices.dedup();
        indices.into_iter().filter_map(|i| self.all.get(i))
    }
}

/// What is asked: kube's authorizer attributes.
#[derive(Debug, Clone, Default)]
pub struct Attributes<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub verb: &'a str,
    /// Empty for cluster-scoped requests and non-resource requests.
    pub namespace: &'a str,
    pub resource_request: bool,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    /// The URL path of a non-resource request.
    pub path: &'a str,
}

/// Whether a request is allowed, and kube's reason (audited; appended to a 403's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

impl Policy {
    /// The policy of these objects.
    pub fn new(
        roles: Vec<Role>,
        cluster_roles: Vec<ClusterRole>,
        role_bindings: Vec<RoleBinding>,
        cluster_role_bindings: Vec<ClusterRoleBinding>,
    ) -> Policy {
        let mut policy = Policy::default();
        let mut cluster_role_bindings = cluster_role_bindings;
        cluster_role_bindings.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for binding in cluster_role_bindings {
            policy.cluster_role_bindings.push(binding, "");
        }
        for role in roles {
            let (namespace, name) =
                (role.metadata.namespace.unwrap_or_default(), role.metadata.name.unwrap_or_default());
            policy.roles.entry(namespace).or_default().insert(name, role.rules.unwrap_or_default());
        }
        for role in cluster_roles {
            policy.cluster_roles.insert(role.metadata.name.unwrap_or_default(), role.rules.unwrap_or_default());
        }
        let mut role_bindings = role_bindings;
        role_bindings.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for binding in role_bindings {
            let namespace = binding.metadata.namespace.clone().unwrap_or_default();
            policy.role_bindings.entry(namespace.clone()).or_default().push(binding, &namespace);
        }
        policy
    }

    /// Whether a ClusterRoleBinding of this name is in force.
    pub fn has_cluster_role_binding(&self, name: &str) -> bool {
        self.cluster_role_bindings.all.iter().any(|b| b.metadata.name.as_deref() == Some(name))
    }

    /// kube's RBAC authorizer.
    pub fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let mut errors = Vec::new();
        let mut decided = None;
        self.visit(attrs.user, attrs.groups, attrs.namespace, |visit| match visit {
            Visit::Rule(source, rule) if allows(attrs, rule) => {
                decided = Some(format!("RBAC: allowed by {source}"));
                ControlFlow::Break(())
            }
            Visit::Rule(..) => ControlFlow::Continue(()),
            Visit::Error(e) => {
                errors.push(e);
                ControlFlow::Continue(())
            }
        });
        if let Some(reason) = decided {
            return Decision { allowed: true, reason };
        }
        let reason = match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors[0]),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        };
        Decision { allowed: false, reason }
    }

    /// Every rule the user holds in `namespace` (cluster-wide ones only when it is empty), and
    /// the errors met (bindings to roles that do not exist): kube's `RulesFor`, which
    /// SelfSubjectRulesReviews and the escalation check read.
    pub fn rules_for(&self, user: &str, groups: &[String], namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.visit(user, groups, namespace, |visit| {
            match visit {
                Visit::Rule(_, rule) => rules.push(rule.clone()),
                Visit::Error(e) => errors.push(e),
            }
            ControlFlow::Continue(())
        });
        (rules, errors)
    }

    /// Visits the rules of every binding that applies to the user, in kube's order: the
    /// ClusterRoleBindings, then `namespace`'s RoleBindings; until `visitor` breaks.
    fn visit(
        &self,
        user: &str,
        groups: &[String],
        namespace: &str,
        mut visitor: impl FnMut(Visit<'_>) -> ControlFlow<()>,
    ) {
        let cluster = self.cluster_role_bindings.candidates(user, groups);
        if self.visit_bindings(cluster, user, groups, "", &mut visitor).is_break() || namespace.is_empty() {
            return;
        }
        if let Some(bindings) = self.role_bindings.get(namespace) {
            let _ = self.visit_bindings(bindings.candidates(user, groups), user, groups, namespace, &mut visitor);
        }
    }

    /// [`Policy::visit`] of one scope's `bindings` (`namespace` empty for the cluster's).
    fn visit_bindings<'p, B: Binding + 'p>(
        &'p self,
        bindings: impl Iterator<Item = &'p B>,
        user: &str,
        groups: &[String],
        namespace: &str,
        visitor: &mut impl FnMut(Visit<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        for binding in bindings {
            let Some(subject) = binding.subjects().iter().find(|s| applies(user, groups, s, namespace)) else {
                continue;
            };
            match self.rules(&binding.role_ref().kind, &binding.role_ref().name, namespace) {
                Ok(rules) => {
                    let source = binding.source(subject);
                    for rule in rules {
                        visitor(Visit::Rule(&source, rule))?;
                    }
                }
                Err(e) => visitor(Visit::Error(e.to_string()))?,
            }
        }
        ControlFlow::Continue(())
    }

    /// The rules of the role a binding refers to (`kind` `Role` or `ClusterRole`), or kube's
    /// error for it (`… not found`).
    pub fn rules(&self, kind: &str, name: &str, namespace: &str) -> Result<&[PolicyRule], RoleRefError> {
        match kind {
            "Role" => self
                .roles
                .get(namespace)
                .and_then(|roles| roles.get(name))
                .map(Vec::as_slice)
                .ok_or_else(|| RoleRefError::RoleNotFound { name: name.to_owned() }),
            "ClusterRole" => self
                .cluster_roles
                .get(name)
                .map(Vec::as_slice)
                .ok_or_else(|| RoleRefError::ClusterRoleNotFound { name: name.to_owned() }),
            other => Err(RoleRefError::UnsupportedKind { kind: other.to_owned() }),
        }
    }
}

/// Why a binding's `roleRef` leads to no rules, as kube words it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoleRefError {
    /// No Role of that name in the binding's namespace.
    #[error("role.rbac.authorization.k8s.io {} not found", go_quote(.name))]
    RoleNotFound { name: String },
    /// No ClusterRole of that name.
    #[error("clusterrole.rbac.authorization.k8s.io {} not found", go_quote(.name))]
    ClusterRoleNotFound { name: String },
    /// A `roleRef.kind` other than `Role` and `ClusterRole`.
    #[error("unsupported role reference kind: {}", go_quote(.kind))]
    UnsupportedKind { kind: String },
}

/// What a visit brings: a rule and the binding it comes from, or an error.
enum Visit<'p> {
    Rule(&'p Source<'p>, &'p PolicyRule),
    Error(String),
}

/// The binding a rule comes from, and the subject it names that is the user; displayed as kube
/// describes it in a reason.
enum Source<'p> {
    Cluster(&'p ClusterRoleBinding, &'p Subject),
    Namespaced(&'p RoleBinding, &'p Subject),
}

impl std::fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Cluster(binding, subject) => write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(binding.metadata.name.as_deref().unwrap_or_default()),
                binding.role_ref.kind,
                go_quote(&binding.role_ref.name),
                describe(subject, "")
            ),
            Source::Namespaced(binding, subject) => {
                let namespace = binding.metadata.namespace.as_deref().unwrap_or_default();
                let name = binding.metadata.name.as_deref().unwrap_or_default();
                write!(
                    f,
                    "RoleBinding {} of {} {} to {}",
                    go_quote(&format!("{name}/{namespace}")),
                    binding.role_ref.kind,
                    go_quote(&binding.role_ref.name),
                    describe(subject, namespace)
                )
            }
        }
    }
}

/// What a visit reads of a binding, of either scope.
trait Binding {
    fn subjects(&self) -> &[Subject];
    fn role_ref(&self) -> &RoleRef;
    /// The binding with its `subject` that is the user, for the reason.
    fn source<'p>(&'p self, subject: &'p Subject) -> Source<'p>;
}

impl Binding for ClusterRoleBinding {
    fn subjects(&self) -> &[Subject] {
        self.subjects.as_deref().unwrap_or_default()
    }
    fn role_ref(&self) -> &RoleRef {
        &self.role_ref
    }
    fn source<'p>(&'p self, subject: &'p Subject) -> Source<'p> {
        Source::Cluster(self, subject)
    }
}

impl Binding for RoleBinding {
    fn subjects(&self) -> &[Subject] {
        self.subjects.as_deref().unwrap_or_default()
    }
    fn role_ref(&self) -> &RoleRef {
        &self.role_ref
    }
    fn source<'p>(&'p self, subject: &'p Subject) -> Source<'p> {
        Source::Namespaced(self, subject)
    }
}

/// How kube names a subject in a reason.
fn describe(subject: &Subject, binding_namespace: &str) -> String {
    if subject.kind == "ServiceAccount" {
        let ns = subject.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(binding_namespace);
        return format!("{} {}", subject.kind, go_quote(&format!("{}/{ns}", subject.name)));
    }
    format!("{} {}", subject.kind, go_quote(&subject.name))
}

/// Whether a binding's subject is the user.
fn applies(user: &str, groups: &[String], subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user == subject.name,
        "Group" => groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = subject.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(namespace);
            !ns.is_empty() && user == format!("system:serviceaccount:{ns}:{}", subject.name)
        }
        _ => false,
    }
}

/// kube's `RuleAllows`.
pub fn allows(attrs: &Attributes<'_>, rule: &PolicyRule) -> bool {
    let verb = rule.verbs.iter().any(|v| v == "*" || v == attrs.verb);
    if !attrs.resource_request {
        let url = rule.non_resource_urls.iter().flatten().any(|u| url_matches(u, attrs.path));
        return verb && url;
    }
    let group = rule.api_groups.iter().flatten().any(|g| g == "*" || g == attrs.api_group);
    let combined = if attrs.subresource.is_empty() {
        attrs.resource.to_owned()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let resource = rule.resources.iter().flatten().any(|r| {
        r == "*"
            || *r == combined
            || (!attrs.subresource.is_empty()
                && r.len() == attrs.subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(attrs.subresource))
    });
    let names = rule.resource_names.as_deref().unwrap_or_default();
    let name = names.is_empty() || names.iter().any(|n| n == attrs.name);
    verb && group && resource && name
}

/// Whether a rule's non-resource URL (`*`, a path, or a `prefix*`) takes in `path` (kube's
/// `NonResourceURLMatches`, and `Covers`' test of one URL by another).
pub(crate) fn url_matches(rule_url: &str, path: &str) -> bool {
    rule_url == path || rule_url.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}
