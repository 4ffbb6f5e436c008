//! Does a webhook or a policy apply to a request? kube's `ShouldCallHook` (webhooks) and
//! `matching.Matcher.Matches` (policies and bindings), in their order:
//!
//! 1. the namespaceSelector, on the labels of the request's namespace (of the object itself
//!    when a Namespace is created or updated; cluster-scoped requests always pass);
//! 2. the objectSelector, on the labels of the object or of the old object;
//! 3. (policies) the `excludeResourceRules`: a match excludes;
//! 4. the rules, first on the request's own resource, then — with `matchPolicy: Equivalent` —
//!    on each equivalent resource, rule by rule, the first match deciding the resource and kind
//!    the webhook or policy sees;
//! 5. only then are selector errors (a selector that does not parse, a namespace that does not
//!    exist) reported, so a configuration that does not apply never fails a request.
//!
//! A request state ([`RequestState`]) keeps what matching looks up once per request: the
//! namespace and the equivalent resources.

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::MatchResources;
use serde_json::Value;

use crate::attributes::{Attributes, GroupVersionKind, GroupVersionResource, Operation, labels_of};
use crate::error::AdmissionError;
use crate::rules::Rule;
use crate::seams::Host;
use crate::selector::{Selector, SelectorError};

/// What matching found: the resource and kind the configuration sees (the request's own, or an
/// equivalent one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Matched {
    pub resource: GroupVersionResource,
    pub kind: GroupVersionKind,
}

/// The compiled matching criteria of a webhook, a policy's `matchConstraints` or a binding's
/// `matchResources`.
#[derive(Clone, Debug)]
pub(crate) struct Criteria {
    pub namespace_selector: Result<Selector, SelectorError>,
    pub object_selector: Result<Selector, SelectorError>,
    pub rules: Vec<Rule>,
    pub exclude: Vec<Rule>,
    /// `matchPolicy: Equivalent` (the API default).
    pub equivalent: bool,
    /// Policies' rules carry `resourceNames`; a binding with no rules matches every resource.
    pub policy: bool,
}

impl Criteria {
    /// A webhook's criteria.
    pub fn webhook(
        rules: Vec<Rule>,
        namespace_selector: Result<Selector, SelectorError>,
        object_selector: Result<Selector, SelectorError>,
        match_policy: Option<&str>,
    ) -> Criteria {
        Criteria {
            namespace_selector,
            object_selector,
            rules,
            exclude: Vec::new(),
            equivalent: match_policy != Some("Exact"),
            policy: false,
        }
    }

    /// A policy's or binding's `MatchResources`.
    pub fn policy(m: &MatchResources) -> Criteria {
        let rules = |r: &Option<Vec<_>>| r.iter().flatten().map(Rule::from_named).collect::<Vec<_>>();
        Criteria {
            namespace_selector: Selector::compile(m.namespace_selector.as_ref()),
            object_selector: Selector::compile(m.object_selector.as_ref()),
            rules: rules(&m.resource_rules),
            exclude: rules(&m.exclude_resource_rules),
            equivalent: m.match_policy.as_deref() != Some("Exact"),
            policy: true,
        }
    }

    /// Whether these criteria could match resource name `resource` at all (the index of the
    /// fast path; equivalents are other versions of the same resource name in versa).
    pub fn may_match_resource(&self, resource: &str) -> bool {
        (self.policy && self.rules.is_empty()) || self.rules.iter().any(|r| r.mentions_resource(resource))
    }
}

/// What admission looks up or builds once per request: the namespace (and its
/// `namespaceObject`), the equivalent resources, the `request` variables.
pub(crate) struct RequestState<'h> {
    pub host: Host<'h>,
    namespace: Option<Result<Option<Arc<Value>>, AdmissionError>>,
    namespace_object: Option<Option<Arc<Value>>>,
    equivalents: Option<Vec<GroupVersionResource>>,
    requests: Vec<(GroupVersionResource, GroupVersionKind, Arc<Value>)>,
    authz: Option<Option<Arc<crate::expression::RequestAuthz>>>,
}

impl<'h> RequestState<'h> {
    pub fn new(host: Host<'h>) -> RequestState<'h> {
        RequestState {
            host,
            namespace: None,
            namespace_object: None,
            equivalents: None,
            requests: Vec::new(),
            authz: None,
        }
    }

    /// The request's `authorizer`, when the server has one.
    pub fn authz(&mut self, attrs: &Attributes) -> Option<Arc<crate::expression::RequestAuthz>> {
        if self.authz.is_none() {
            let built = self.host.authorizer.clone().map(|a| Arc::new(crate::expression::RequestAuthz::new(attrs, a)));
            self.authz = Some(built);
        }
        self.authz.clone().flatten()
    }

    /// The `request` variable for `resource` and `kind` (built once per pair).
    pub fn request(
        &mut self,
        attrs: &Attributes,
        resource: &GroupVersionResource,
        kind: &GroupVersionKind,
    ) -> Arc<Value> {
        if let Some((_, _, r)) = self.requests.iter().find(|(r, k, _)| r == resource && k == kind) {
            return r.clone();
        }
        let built = Arc::new(crate::expression::request_json(attrs, resource, kind));
        self.requests.push((resource.clone(), kind.clone(), built.clone()));
        built
    }

    /// The `namespaceObject` of the request's namespace: `Ok(None)` when the namespace does not
    /// exist.
    pub async fn namespace_object(&mut self, attrs: &Attributes) -> Result<Option<Arc<Value>>, AdmissionError> {
        if let Some(done) = &self.namespace_object {
            return Ok(done.clone());
        }
        let ns = self.namespace(attrs).await?.map(|ns| Arc::new(crate::expression::namespace_json(&ns)));
        self.namespace_object = Some(ns.clone());
        Ok(ns)
    }

    /// The `namespaceObject` policies see (`Some` when `wanted`). kube's policy dispatchers look
    /// the namespace up whether or not an expression reads it: for a namespaced request (not of
    /// a Namespace), a namespace that does not exist refuses the request.
    pub async fn policy_namespace(
        &mut self,
        attrs: &Attributes,
        wanted: bool,
    ) -> Result<Option<Arc<Value>>, AdmissionError> {
        if attrs.namespace.is_empty() || attrs.is_namespace_kind() {
            return Ok(None);
        }
        let found = if wanted { self.namespace_object(attrs).await? } else { self.namespace(attrs).await? };
        match found {
            Some(ns) => Ok(wanted.then_some(ns)),
            None => Err(AdmissionError::not_found("", "namespaces", &attrs.namespace)),
        }
    }

    /// The request's namespace (looked up once); `Ok(None)` when it does not exist.
    pub async fn namespace(&mut self, attrs: &Attributes) -> Result<Option<Arc<Value>>, AdmissionError> {
        if let Some(done) = &self.namespace {
            return done.clone();
        }
        let found = self.host.namespaces.namespace(&attrs.namespace).await.map_err(AdmissionError::from);
        self.namespace = Some(found.clone());
        found
    }

    fn equivalents(&mut self, attrs: &Attributes) -> Vec<GroupVersionResource> {
        if self.equivalents.is_none() {
            self.equivalents = Some(self.host.resources.equivalent_resources(&attrs.resource, &attrs.subresource));
        }
        self.equivalents.clone().unwrap_or_default()
    }
}

/// Whether `criteria` match `attrs`, and as which resource and kind.
pub(crate) async fn matches(
    criteria: &Criteria,
    attrs: &Attributes,
    state: &mut RequestState<'_>,
) -> Result<Option<Matched>, AdmissionError> {
    let (ns_matches, ns_err) = match_namespace(&criteria.namespace_selector, attrs, state).await;
    if !ns_matches && ns_err.is_none() {
        return Ok(None);
    }
    let (obj_matches, obj_err) = match_object(&criteria.object_selector, attrs);
    if !obj_matches && obj_err.is_none() {
        return Ok(None);
    }
    if criteria.policy
        && !criteria.exclude.is_empty()
        && match_rules(criteria, &criteria.exclude, attrs, state)?.is_some()
    {
        return Ok(None);
    }
    let matched = if criteria.policy && criteria.rules.is_empty() {
        Some(Matched { resource: attrs.resource.clone(), kind: attrs.kind.clone() })
    } else {
        match_rules(criteria, &criteria.rules, attrs, state)?
    };
    let Some(matched) = matched else { return Ok(None) };
    if let Some(e) = ns_err.or(obj_err) {
        return Err(e);
    }
    Ok(Some(matched))
}

/// The rules on the request's resource, then on its equivalents.
fn match_rules(
    criteria: &Criteria,
    rules: &[Rule],
    attrs: &Attributes,
    state: &mut RequestState<'_>,
) -> Result<Option<Matched>, AdmissionError> {
    let names = |r: &Rule| !criteria.policy || r.name_matches(&attrs.name);
    if rules.iter().any(|r| r.matches(attrs, &attrs.resource) && names(r)) {
        return Ok(Some(Matched { resource: attrs.resource.clone(), kind: attrs.kind.clone() }));
    }
    if !criteria.equivalent {
        return Ok(None);
    }
    let equivalents = state.equivalents(attrs);
    for rule in rules {
        for eq in equivalents.iter().filter(|eq| **eq != attrs.resource) {
            if !rule.matches(attrs, eq) {
                continue;
            }
            let kind = state.host.resources.kind_for(eq, &attrs.subresource).filter(|k| !k.is_empty());
            let Some(kind) = kind else {
                return Err(AdmissionError::internal(format!("unable to convert to {eq}: unknown kind")));
            };
            if names(rule) {
                return Ok(Some(Matched { resource: eq.clone(), kind }));
            }
        }
    }
    Ok(None)
}

/// kube's `MatchNamespaceSelector`: whether the selector matches, and an error to report if
/// the rules match.
async fn match_namespace(
    selector: &Result<Selector, SelectorError>,
    attrs: &Attributes,
    state: &mut RequestState<'_>,
) -> (bool, Option<AdmissionError>) {
    let is_namespaces = attrs.resource.resource == "namespaces";
    if attrs.namespace.is_empty() && !is_namespaces {
        // Cluster-scoped requests are never exempted.
        return (true, None);
    }
    let selector = match selector {
        Ok(s) => s,
        Err(e) => return (false, Some(AdmissionError::internal(e.to_string()))),
    };
    if selector.is_empty() {
        return (true, None);
    }
    // A Namespace being created or updated: its own labels (the cache has not seen them).
    if is_namespaces && attrs.subresource.is_empty() && matches!(attrs.operation, Operation::Create | Operation::Update)
    {
        return match &attrs.object {
            Some(o) => (selector.matches(labels_of(o)), None),
            None => (false, Some(AdmissionError::internal("object does not implement the Object interfaces"))),
        };
    }
    match state.namespace(attrs).await {
        Ok(Some(ns)) => (selector.matches(labels_of(&ns)), None),
        Ok(None) => (false, Some(AdmissionError::not_found("", "namespaces", &attrs.namespace))),
        Err(e) => (false, Some(e)),
    }
}

/// kube's `MatchObjectSelector`: the object's labels or the old object's.
fn match_object(selector: &Result<Selector, SelectorError>, attrs: &Attributes) -> (bool, Option<AdmissionError>) {
    let selector = match selector {
        Ok(s) => s,
        Err(e) => return (false, Some(AdmissionError::internal(e.to_string()))),
    };
    if selector.is_empty() {
        return (true, None);
    }
    let on = |o: &Option<Value>| o.as_ref().is_some_and(|o| selector.matches(labels_of(o)));
    (on(&attrs.object) || on(&attrs.old_object), None)
}
