//! What the admission tests share: a fake server ([`FakeHost`]: namespaces, parameter objects,
//! equivalent resources with a conversion that only changes `apiVersion`), and the reading of
//! `tests/data/*.yaml`.

#![allow(dead_code, reason = "each test binary uses a different part of the support module")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code: bad fixtures fail loudly")]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use versa_admission::{
    Authorize, AuthzCheck, AuthzDecision, AuthzUser, BoxFuture, GroupVersionKind, GroupVersionResource, Host,
    HostError, NamespaceLookup, ParamKind, ParamLookup, ParamScope, Resources, StructuredMerge,
};

/// A test file of `tests/data/`, as JSON.
pub fn load(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A server with namespaces, parameter objects and equivalent resources.
#[derive(Default)]
pub struct FakeHost {
    pub namespaces: BTreeMap<String, Arc<Value>>,
    /// Parameter objects, by `apiVersion`/`kind`.
    pub params: Vec<Arc<Value>>,
    /// Kinds served for parameters, with their scope.
    pub param_kinds: BTreeMap<(String, String), ParamScope>,
    /// Equivalent resources (all equivalent to each other) with their kinds.
    pub equivalents: Vec<(GroupVersionResource, GroupVersionKind)>,
    /// When set, every conversion fails with this text.
    pub conversion_error: Option<String>,
    pub authorizer: Option<Arc<dyn Authorize>>,
    /// Offer no structured merge (ApplyConfiguration mutations).
    pub no_merge: bool,
}

/// A stand-in for the schema's structured merge: maps merge key by key, anything else is
/// replaced; `spec.selector` is atomic.
impl StructuredMerge for FakeHost {
    fn merge(
        &self,
        _kind: &GroupVersionKind,
        object: &Value,
        configuration: &Value,
    ) -> Option<Result<Value, HostError>> {
        fn merge(into: &mut Value, from: &Value) {
            match (into, from) {
                (Value::Object(a), Value::Object(b)) => {
                    for (k, v) in b {
                        match a.get_mut(k) {
                            Some(existing) => merge(existing, v),
                            None => {
                                a.insert(k.clone(), v.clone());
                            }
                        }
                    }
                }
                (slot, v) => *slot = v.clone(),
            }
        }
        if configuration.pointer("/spec/selector").is_some() {
            let text = "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector";
            return Some(Err(HostError::Merge(text.into())));
        }
        let mut out = object.clone();
        merge(&mut out, configuration);
        Some(Ok(out))
    }
}

/// Allows what is listed: `verb group/resource[/subresource] namespace` for resources,
/// `verb path` for paths; the reason names the user and the question.
#[derive(Debug)]
pub struct FakeAuthorizer {
    pub allow: Vec<String>,
}

impl Authorize for FakeAuthorizer {
    fn authorize(&self, user: &AuthzUser, c: &AuthzCheck) -> AuthzDecision {
        let question = match &c.path {
            Some(p) => format!("{} {p}", c.verb),
            None => {
                let sub = if c.subresource.is_empty() { String::new() } else { format!("/{}", c.subresource) };
                format!("{} {}/{}{sub} {}", c.verb, c.group, c.resource, c.namespace)
            }
        };
        let allowed = self.allow.contains(&question);
        AuthzDecision {
            allowed,
            reason: format!("{} may{} {question}", user.username, if allowed { "" } else { " not" }),
            error: None,
        }
    }
}

impl FakeHost {
    pub fn host(&self) -> Host<'_> {
        Host {
            namespaces: self,
            params: self,
            resources: self,
            authorizer: self.authorizer.clone(),
            merge: (!self.no_merge).then_some(self as &dyn StructuredMerge),
        }
    }

    /// A namespace `name` with `labels`.
    pub fn namespace(mut self, name: &str, labels: Value) -> FakeHost {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "uid": "u-1", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        self.namespaces.insert(name.to_owned(), Arc::new(ns));
        self
    }
}

impl NamespaceLookup for FakeHost {
    fn namespace<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Arc<Value>>, HostError>> {
        Box::pin(async move { Ok(self.namespaces.get(name).cloned()) })
    }
}

fn in_namespace(p: &Value, namespace: Option<&str>) -> bool {
    let ns = p["metadata"]["namespace"].as_str();
    match namespace {
        Some(n) => ns == Some(n),
        None => ns.is_none(),
    }
}

impl ParamLookup for FakeHost {
    fn scope(&self, kind: &ParamKind) -> Option<ParamScope> {
        self.param_kinds.get(&(kind.api_version.clone(), kind.kind.clone())).copied()
    }

    fn get<'a>(
        &'a self,
        kind: &'a ParamKind,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<Value>>, HostError>> {
        Box::pin(async move {
            Ok(self
                .params
                .iter()
                .find(|p| {
                    p["apiVersion"] == kind.api_version.as_str()
                        && p["kind"] == kind.kind.as_str()
                        && p["metadata"]["name"] == name
                        && in_namespace(p, namespace)
                })
                .cloned())
        })
    }

    fn list<'a>(
        &'a self,
        kind: &'a ParamKind,
        namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Arc<Value>>, HostError>> {
        Box::pin(async move {
            Ok(self
                .params
                .iter()
                .filter(|p| {
                    p["apiVersion"] == kind.api_version.as_str()
                        && p["kind"] == kind.kind.as_str()
                        && in_namespace(p, namespace)
                })
                .cloned()
                .collect())
        })
    }
}

impl Resources for FakeHost {
    fn equivalent_resources(&self, resource: &GroupVersionResource, _subresource: &str) -> Vec<GroupVersionResource> {
        if self.equivalents.iter().any(|(r, _)| r == resource) {
            self.equivalents.iter().map(|(r, _)| r.clone()).collect()
        } else {
            vec![resource.clone()]
        }
    }

    fn kind_for(&self, resource: &GroupVersionResource, _subresource: &str) -> Option<GroupVersionKind> {
        self.equivalents.iter().find(|(r, _)| r == resource).map(|(_, k)| k.clone())
    }

    fn convert<'a>(&'a self, object: &'a Value, to: &'a GroupVersionKind) -> BoxFuture<'a, Result<Value, HostError>> {
        Box::pin(async move {
            if let Some(e) = &self.conversion_error {
                return Err(HostError::Conversion(e.clone().into()));
            }
            let mut o = object.clone();
            o["apiVersion"] = json!(to.api_version());
            Ok(o)
        })
    }
}
