//! Admission for the resources versa serves. kube-apiserver does not run admission for the
//! requests it proxies to an aggregated server, so versa runs it itself, in kube's order, on
//! every create, update, patch (apply included), delete and subresource write:
//!
//! 1. the registry's strategy (server-owned fields, defaults, pruning, validation) and
//!    `managedFields`, as kube's handlers do before admission;
//! 2. [`mutate`] ([`mutate_delete`] for deletes, which they can only refuse):
//!    MutatingAdmissionPolicies and mutating webhooks (reinvoked as kube does); a
//!    changed object goes through the strategy's admission again (defaults, pruning, schema
//!    and CEL validation), so that a webhook can neither store an unknown field nor an invalid
//!    value;
//! 3. [`validate`]: ValidatingAdmissionPolicies and validating webhooks;
//! 4. the store.
//!
//! The order is the registry's store's (`versa_registry::store`), which calls the chain
//! through [`Admitter`]. The chain itself is `versa-admission`'s; this module builds each request's
//! [`Attributes`], answers the chain's questions from versa's store and registry (`host.rs`),
//! and turns refusals into kube's statuses. The configuration is the `admissionregistration.k8s.io`
//! objects — those standalone versa serves, or kube-apiserver's in cluster mode
//! (`configured.rs`, kept current by `controllers/admission.rs`).
//! A dry run goes through the whole chain and stores nothing.

mod authorizer;
pub mod configured;
mod host;
mod kube_params;

pub use self::host::StoreHost;

pub use std::sync::Arc;

use serde_json::{Value, json};
use versa_admission::{AdmissionError, Attributes, GroupVersionKind, GroupVersionResource, Host, Operation, Outcome};
use versa_registry::Resource;

use crate::auth::UserInfo;
use crate::state::State;
use crate::status::Status;

/// One write as admission sees it, besides the objects.
#[derive(Debug)]
pub struct Request<'a> {
    pub state: &'a State,
    pub res: &'a Resource,
    /// The request version.
    pub version: &'a str,
    pub user: &'a UserInfo,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// `status`, `scale`, `finalize`, or empty.
    pub subresource: &'static str,
    pub dry_run: bool,
    /// The request's `fieldManager`, for the operation's options as webhooks receive them.
    pub field_manager: Option<&'a str>,
}

impl Request<'_> {
    fn attributes(&self, operation: Operation, object: Option<&Value>, old: Option<&Value>) -> Attributes {
        let res = self.res;
        let kind = match self.subresource {
            "scale" => GroupVersionKind::new("autoscaling", "v1", "Scale"),
            _ => GroupVersionKind::new(&res.group, self.version, &res.kind),
        };
        // A request on a Namespace itself carries the Namespace's name as its namespace (kube's
        // request info).
        let namespace = match self.namespace {
            Some(ns) => ns.to_owned(),
            None if versa_registry::kinds::of(res).is_namespace() => self.name.to_owned(),
            None => String::new(),
        };
        Attributes {
            operation,
            kind,
            resource: GroupVersionResource::new(&res.group, self.version, &res.plural),
            subresource: self.subresource.to_owned(),
            name: self.name.to_owned(),
            namespace,
            user: versa_admission::UserInfo {
                username: self.user.name.clone(),
                uid: self.user.uid.clone(),
                groups: self.user.groups.clone(),
                extra: self.user.extra.clone(),
            },
            object: object.cloned(),
            old_object: old.cloned(),
            dry_run: self.dry_run,
            options: options(operation, self.field_manager, self.dry_run),
            namespaced: res.namespaced,
        }
    }

    fn host(&self) -> StoreHost<'_> {
        StoreHost { state: self.state, snapshot: self.state.registry.snapshot() }
    }
}

/// kube's NamespaceLifecycle (`versa_admission::namespace_lifecycle`), over kube-apiserver's
/// Namespaces in cluster mode or versa's own standalone: nothing is written in a namespace that
/// does not exist, nothing created in one being terminated. Without either (cluster mode before
/// kube-apiserver is reached, when writes are refused anyway) it passes.
pub async fn lifecycle(req: &Request<'_>, operation: Operation, object: &Value) -> Result<(), Status> {
    let own = req.state.registry.core(versa_registry::Builtin::Namespace).is_some();
    if !req.state.admission.follows_kube_namespaces() && !own {
        return Ok(());
    }
    // Until the first lists are in, the namespaces are not known: refused, not guessed.
    loaded(req.state)?;
    // The plugin reads no more of the object than its name (or generateName, for its errors):
    // it is given that, not a copy of the whole object (a definition is tens of KiB).
    let mut attrs = req.attributes(operation, None, None);
    attrs.object = Some(names_only(object));
    let host = req.host();
    versa_admission::namespace_lifecycle(&attrs, &host).await.map_err(|e| status(&e))
}

/// `{"metadata": {"name": …, "generateName": …}}` of `object`, with those of the two it has.
fn names_only(object: &Value) -> Value {
    let meta = object.get("metadata");
    let names: serde_json::Map<String, Value> =
        ["name", "generateName"].into_iter().filter_map(|k| Some((k.to_owned(), meta?.get(k)?.clone()))).collect();
    json!({ "metadata": names })
}

/// Runs mutating admission on `object` (`None` for a delete); returns whether it changed the
/// object, which the caller then admits again with its strategy. Warnings go to `warnings`.
pub async fn mutate(
    req: &Request<'_>,
    operation: Operation,
    object: &mut Value,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<bool, Status> {
    let configuration = loaded(req.state)?;
    if !configuration.has_mutating() {
        return Ok(false);
    }
    let mut attrs = req.attributes(operation, Some(object), old);
    let host = req.host();
    let mut outcome = Outcome::default();
    let result = configuration.mutate(&mut attrs, as_host(req.state, &host), &mut outcome).await;
    req.state.metrics.admission(&outcome);
    warnings.extend(outcome.warnings);
    result.map_err(|e| status(&e))?;
    match attrs.object {
        Some(mutated) if mutated != *object => {
            *object = mutated;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Mutating admission of a DELETE (or of a DELETE of the collection: `req.name` empty), as
/// kube's delete handlers run it: once, before the object is read, with neither an object nor
/// an old object — so a mutating webhook or policy can only refuse it (one that tries to patch
/// is an error, kube's text). Validating admission follows per object, with the object as
/// stored ([`validate`]).
pub async fn mutate_delete(req: &Request<'_>, warnings: &mut Vec<String>) -> Result<(), Status> {
    let configuration = loaded(req.state)?;
    if !configuration.has_mutating() {
        return Ok(());
    }
    let mut attrs = req.attributes(Operation::Delete, None, None);
    let host = req.host();
    let mut outcome = Outcome::default();
    let result = configuration.mutate(&mut attrs, as_host(req.state, &host), &mut outcome).await;
    req.state.metrics.admission(&outcome);
    warnings.extend(outcome.warnings);
    result.map_err(|e| status(&e))
}

/// Runs validating admission on the object as it will be stored (`None` for a delete).
pub async fn validate(
    req: &Request<'_>,
    operation: Operation,
    object: Option<&Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), Status> {
    let configuration = loaded(req.state)?;
    if !configuration.has_validating() {
        return Ok(());
    }
    let attrs = req.attributes(operation, object, old);
    let host = req.host();
    let mut outcome = Outcome::default();
    let result = configuration.validate(&attrs, as_host(req.state, &host), &mut outcome).await;
    req.state.metrics.admission(&outcome);
    warnings.extend(outcome.warnings);
    result.map_err(|e| status(&e))
}

/// The configuration in force; while it has not been read, writes are refused (503), never
/// admitted without it.
fn loaded(state: &State) -> Result<Arc<versa_admission::Configuration>, Status> {
    if !state.admission.is_loaded() {
        return Err(Status::storage_unavailable("the admission configuration has not been read from storage yet"));
    }
    Ok(state.admission.current())
}

fn as_host<'a>(state: &State, host: &'a StoreHost<'a>) -> Host<'a> {
    let authorizer: Arc<dyn versa_admission::Authorize> =
        Arc::new(authorizer::ServerAuthorizer(state.auth.authorizer.clone()));
    Host { namespaces: host, params: host, resources: host, authorizer: Some(authorizer), merge: Some(host) }
}

/// kube's status of a refusal, as the chain built it.
fn status(e: &AdmissionError) -> Status {
    let s = e.status();
    let code = http::StatusCode::from_u16(e.code()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let details = s.details.as_ref().and_then(|d| serde_json::to_value(d).ok()).filter(|d| d != &json!({}));
    Status { code, reason: reason(e.reason()), message: e.message().to_owned(), details }
}

/// A `metav1.StatusReason` as the server's statuses hold it. kube's reasons are a fixed list;
/// a webhook that makes up another one is answered without a reason (its code and message
/// stay).
fn reason(reason: &str) -> &'static str {
    const REASONS: [&str; 20] = [
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
        "Unknown",
    ];
    REASONS.iter().find(|r| **r == reason).copied().unwrap_or("")
}

/// The options object of an operation as kube sends it to webhooks (`CreateOptions`,
/// `UpdateOptions`, `DeleteOptions`; none for a connect). Built only when a configuration
/// applies: a write that nothing admits never pays for it.
fn options(operation: Operation, field_manager: Option<&str>, dry_run: bool) -> Option<Value> {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        _ => return None,
    };
    let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": kind});
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        options["fieldManager"] = json!(manager);
    }
    if dry_run {
        options["dryRun"] = json!(["All"]);
    }
    Some(options)
}

/// The server's admission as the registry's store calls it: one write's resource, version and
/// user; the store says which object, namespace and subresource.
#[derive(Debug)]
pub struct Admitter<'a> {
    pub state: &'a State,
    pub res: &'a Resource,
    /// The request version.
    pub version: &'a str,
    pub user: &'a UserInfo,
}

impl Admitter<'_> {
    fn request<'r>(&'r self, attrs: &versa_registry::store::Attributes<'r>) -> Request<'r> {
        Request {
            state: self.state,
            res: self.res,
            version: self.version,
            user: self.user,
            namespace: attrs.namespace,
            name: attrs.name,
            subresource: attrs.subresource,
            dry_run: attrs.dry_run,
            field_manager: attrs.field_manager,
        }
    }
}

impl Admitter<'_> {
    /// Standalone RBAC's escalation prevention for a write of an RBAC object (see
    /// [`crate::rbac::escalation`]); nothing where RBAC is not versa's.
    async fn no_escalation(
        &self,
        attrs: &versa_registry::store::Attributes<'_>,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<(), Status> {
        if self.res.group != crate::rbac::escalation::GROUP || !attrs.subresource.is_empty() {
            return Ok(());
        }
        let authorizer = &*self.state.auth.authorizer;
        let Some(policy) = authorizer.policy().await else { return Ok(()) };
        let write = crate::rbac::escalation::Write {
            user: self.user,
            resource: &self.res.plural,
            namespace: attrs.namespace.unwrap_or_default(),
            name: attrs.name,
            object,
            old,
        };
        crate::rbac::escalation::check(authorizer, &policy, &write).await
    }
}

impl versa_registry::store::Admission for Admitter<'_> {
    type Error = Status;

    async fn lifecycle(
        &self,
        attrs: &versa_registry::store::Attributes<'_>,
        operation: Operation,
        object: &Value,
    ) -> Result<(), Status> {
        lifecycle(&self.request(attrs), operation, object).await
    }

    async fn mutate(
        &self,
        attrs: &versa_registry::store::Attributes<'_>,
        operation: Operation,
        object: &mut Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<bool, Status> {
        mutate(&self.request(attrs), operation, object, old, warnings).await
    }

    async fn mutate_delete(
        &self,
        attrs: &versa_registry::store::Attributes<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        mutate_delete(&self.request(attrs), warnings).await
    }

    async fn validate(
        &self,
        attrs: &versa_registry::store::Attributes<'_>,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        if let Some(object) = object {
            self.no_escalation(attrs, object, old).await?;
        }
        validate(&self.request(attrs), operation, object, old, warnings).await
    }
}
