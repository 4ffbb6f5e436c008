//! The errors of the write and read paths, as kinds a caller acts on.
//!
//! Each variant is one of Kubernetes' `StatusReason`s with what its message needs; the texts
//! are kube-apiserver's (the `Display` of each variant is the `metav1.Status` message). Storage
//! errors about one object become [`Error::NotFound`], [`Error::AlreadyExists`] and
//! [`Error::Conflict`] ([`Error::storage`]); the rest stay [`Error::Storage`], which the server
//! maps with the other variants, in one place (`versa-server`'s `status.rs`: `Unavailable` is a
//! 503 there, `TooLarge` kube's 500 `etcdserver: request is too large`, `Expired` a 410).

use serde_json::Value;
use versa_schema::ErrorList;

/// The result of registry operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `<resource>.<group> "<name>" not found` (404).
    #[error("{} {name:?} not found", qualified(group, resource))]
    NotFound { group: String, resource: String, name: String },
    /// `<resource>.<group> "<name>" already exists` (409).
    #[error("{} {name:?} already exists", qualified(group, resource))]
    AlreadyExists { group: String, resource: String, name: String },
    /// `Operation cannot be fulfilled on <resource>.<group> "<name>": <why>` (409); `why`
    /// defaults to kube's optimistic-concurrency text.
    #[error("Operation cannot be fulfilled on {} {name:?}: {}", qualified(group, resource), why.as_deref().unwrap_or(CONFLICT))]
    Conflict { group: String, resource: String, name: String, why: Option<String> },
    /// `<Kind>.<group> "<name>" is invalid: ...` (422) with one cause per field error.
    #[error("{}", errors.invalid_message(&qualified(group, kind), name))]
    Invalid { group: String, kind: String, name: String, errors: ErrorList },
    /// A request kube refuses as malformed (400).
    #[error("{0}")]
    BadRequest(String),
    /// An operation a rule forbids (403), with the Status' `details` when kube gives them.
    #[error("{message}")]
    Forbidden { message: String, details: Option<Value> },
    /// A conversion that failed where kube passes the converter's message through (500, no
    /// reason): reads.
    #[error("{0}")]
    Conversion(String),
    /// A failure kube reports as a 500 without a reason, its text passed through (the apply
    /// merge's `failed to create typed patch object (...)`, undecodable `managedFields`).
    #[error("{0}")]
    Failed(String),
    /// An apply that would change fields other managers own (409 `Conflict`, one
    /// `FieldManagerConflict` cause per field).
    #[error("{0}")]
    ApplyConflicts(versa_merge::Conflicts),
    /// Anything else that is the server's fault (500 `InternalError`).
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// A storage error not about one object's existence or revision.
    #[error("{0}")]
    Storage(versa_storage::Error),
}

/// A storage error outside any one object's context (a read–modify–write that could not
/// reach the store).
impl From<versa_storage::Error> for Error {
    fn from(e: versa_storage::Error) -> Error {
        Error::Storage(e)
    }
}

/// kube's text for a lost compare-and-swap.
pub const CONFLICT: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

impl Error {
    /// A storage error on object `name` of `group`/`resource`, as a caller acts on it.
    pub fn storage(e: versa_storage::Error, group: &str, resource: &str, name: &str) -> Error {
        let (group, resource, name) = (group.to_owned(), resource.to_owned(), name.to_owned());
        match e {
            versa_storage::Error::NotFound { .. } => Error::NotFound { group, resource, name },
            versa_storage::Error::AlreadyExists { .. } => Error::AlreadyExists { group, resource, name },
            versa_storage::Error::Conflict { .. } => Error::Conflict { group, resource, name, why: None },
            other => Error::Storage(other),
        }
    }

    /// `<Kind>.<group> "<name>" is invalid` with `errors`.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: ErrorList) -> Error {
        Error::Invalid { group: group.to_owned(), kind: kind.to_owned(), name: name.to_owned(), errors }
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::Internal(message.into())
    }

    /// Whether this is a lost compare-and-swap (worth trying again), not a precondition.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { why: None, .. })
    }
}

/// `<resource>.<group>` (just `<resource>` for the core group), as kube names a resource.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_owned() } else { format!("{resource}.{group}") }
}
