//! What only the server knows, as traits it implements: namespaces (for namespaceSelectors
//! and `namespaceObject`), policy parameters (`paramKind` objects), the equivalent resources of
//! a resource and conversions between their versions (`matchPolicy: Equivalent`), and who may
//! do what (the CEL `authorizer`). [`Host`] bundles them for one call into the chain.
//!
//! Lookups that may reach storage or a remote API are async (boxed futures: the traits are
//! object-safe, and nothing is boxed unless a configuration needs the lookup). Kube reads
//! namespaces and parameters from informer caches, falling back to a live read for a namespace
//! the cache has not seen; an implementation may do the same.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::attributes::{GroupVersionKind, GroupVersionResource};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The error a server's own failure is carried in (a storage error, a converter's error).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why the server could not answer what the chain asked of it. The chain reports each as
/// kube does (a 500 `Internal error occurred: <text>` for a lookup or a conversion; a merge
/// failure as the policy's `error applying patch: <text>`); `Display` is that text.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The store, or a cache of kube-apiserver's objects, could not be read.
    #[error("{0}")]
    Read(#[source] BoxError),
    /// The objects asked for are not available yet (a cache still being filled), or their
    /// kind is not followed: the message says which.
    #[error("{0}")]
    NotReady(String),
    /// No served resource has the kind a conversion was asked for.
    #[error("no served resource of kind {0}")]
    UnknownKind(GroupVersionKind),
    /// The converter failed (a conversion webhook, CEL rules), or answered no object.
    #[error("{0}")]
    Conversion(#[source] BoxError),
    /// The structured merge refused the configuration (kube's text, e.g. `invalid
    /// ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.x`).
    #[error("{0}")]
    Merge(#[source] BoxError),
}

/// Namespaces, for namespaceSelectors and policies' `namespaceObject`.
pub trait NamespaceLookup: Send + Sync {
    /// The Namespace `name` as JSON (a `v1` Namespace), `Ok(None)` when there is none. An
    /// `Err` is reported as an internal error.
    fn namespace<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Arc<Value>>, HostError>>;
}

/// Whether a parameter kind's resource is namespaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamScope {
    Namespaced,
    Cluster,
}

/// A policy's `paramKind`, parsed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamKind {
    /// As written: `v1`, `example.com/v1`.
    pub api_version: String,
    pub kind: String,
}

/// The objects policies take their parameters from (`paramKind` + `paramRef`).
pub trait ParamLookup: Send + Sync {
    /// The scope of `kind`'s resource, `None` when no served resource has that kind (kube's
    /// `failed to find resource referenced by paramKind`).
    fn scope(&self, kind: &ParamKind) -> Option<ParamScope>;
    /// The parameter object `name` (in `namespace` for a namespaced kind), `Ok(None)` when there
    /// is none.
    fn get<'a>(
        &'a self,
        kind: &'a ParamKind,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<Value>>, HostError>>;
    /// Every parameter object of `kind` (in `namespace` for a namespaced kind); the chain
    /// filters them by the binding's selector.
    fn list<'a>(
        &'a self,
        kind: &'a ParamKind,
        namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Arc<Value>>, HostError>>;
}

/// Resources and versions, for `matchPolicy: Equivalent` (kube's `EquivalentResourceMapper`
/// and object convertor).
pub trait Resources: Send + Sync {
    /// The resources that are the same objects as `resource` (other versions of a served
    /// definition; other groups too where the server has such aliases), `resource` included or
    /// not. Called only when a configuration with `matchPolicy: Equivalent` did not match the
    /// request's own resource.
    fn equivalent_resources(&self, resource: &GroupVersionResource, subresource: &str) -> Vec<GroupVersionResource>;
    /// The kind of `resource` (with `subresource`: the subresource's kind), `None` if unknown.
    fn kind_for(&self, resource: &GroupVersionResource, subresource: &str) -> Option<GroupVersionKind>;
    /// `object` converted to version `to` (the kind's version; the object's own `apiVersion`
    /// says where it is). The error is reported as an internal error.
    fn convert<'a>(&'a self, object: &'a Value, to: &'a GroupVersionKind) -> BoxFuture<'a, Result<Value, HostError>>;
}

/// Who may do what, for the CEL `authorizer` variable (versa-cel's authorization library):
/// asked with the user and an [`AuthzCheck`] (a path, or a group/resource/subresource/
/// namespace/name, and a verb), it answers an [`AuthzDecision`]. Synchronous because CEL
/// evaluation is; an implementation that asks a remote authorizer (SubjectAccessReview) should
/// answer from a cache. Within one request, identical questions are asked once.
pub use versa_cel::opaque::authz::{Authorize, AuthzCheck, AuthzDecision, AuthzUser};

/// The structured merge of MutatingAdmissionPolicy's ApplyConfiguration mutations
/// (structured-merge-diff's `Merge` by the object's schema; the server's versa-merge).
pub trait StructuredMerge: Send + Sync {
    /// Merges `configuration` (with the object's `apiVersion` and `kind`) into `object` by the
    /// schema of `kind`: `None` when the kind's schema is not known; the error is a
    /// [`HostError::Merge`] whose text is kube's (`invalid ApplyConfiguration: may not mutate
    /// atomic arrays, maps or structs: .spec.x`, `failed to merge patch: ...`).
    fn merge(&self, kind: &GroupVersionKind, object: &Value, configuration: &Value)
    -> Option<Result<Value, HostError>>;
}

/// The server's implementations, for one call into the chain. Without an authorizer, an
/// expression that reads `authorizer` fails when evaluated (as in kube).
#[derive(Clone)]
pub struct Host<'a> {
    pub namespaces: &'a dyn NamespaceLookup,
    pub params: &'a dyn ParamLookup,
    pub resources: &'a dyn Resources,
    pub authorizer: Option<Arc<dyn Authorize>>,
    /// Needed only for ApplyConfiguration mutations.
    pub merge: Option<&'a dyn StructuredMerge>,
}

impl std::fmt::Debug for Host<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("authorizer", &self.authorizer.is_some()).finish_non_exhaustive()
    }
}
