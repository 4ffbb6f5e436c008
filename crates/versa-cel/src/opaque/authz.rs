//! The authorization library's values (kube's `pkg/cel/library/authz.go` types): the user and
//! question a check is made of, the answer, and the [`Authorize`] that answers.

use std::fmt;
use std::sync::Arc;

pub const AUTHORIZER_TYPE: &str = "kubernetes.authorization.Authorizer";
pub const PATH_CHECK_TYPE: &str = "kubernetes.authorization.PathCheck";
pub const GROUP_CHECK_TYPE: &str = "kubernetes.authorization.GroupCheck";
pub const RESOURCE_CHECK_TYPE: &str = "kubernetes.authorization.ResourceCheck";
pub const DECISION_TYPE: &str = "kubernetes.authorization.Decision";

/// The user a check is made for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzUser {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// One authorization question (kube's `authorizer.AttributesRecord` as the library fills it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzCheck {
    pub verb: String,
    /// Set for a non-resource check (`authorizer.path(p)`).
    pub path: Option<String>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub field_selector: String,
    pub label_selector: String,
}

/// An authorizer's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzDecision {
    pub allowed: bool,
    pub reason: String,
    /// The authorizer's error, if it failed.
    pub error: Option<String>,
}

/// Who answers the checks.
pub trait Authorize: Send + Sync + fmt::Debug {
    fn authorize(&self, user: &AuthzUser, check: &AuthzCheck) -> AuthzDecision;
}

/// A value of the library.
#[derive(Clone, Debug)]
pub enum AuthzValue {
    Authorizer { user: Arc<AuthzUser>, authorizer: Arc<dyn Authorize> },
    PathCheck { user: Arc<AuthzUser>, authorizer: Arc<dyn Authorize>, path: String },
    GroupCheck { user: Arc<AuthzUser>, authorizer: Arc<dyn Authorize>, group: String },
    ResourceCheck { user: Arc<AuthzUser>, authorizer: Arc<dyn Authorize>, check: AuthzCheck },
    Decision(AuthzDecision),
}

/// Library values are compared by identity, as kube's receiver-only values are.
impl PartialEq for AuthzValue {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl AuthzValue {
    pub fn type_name(&self) -> &'static str {
        match self {
            AuthzValue::Authorizer { .. } => AUTHORIZER_TYPE,
            AuthzValue::PathCheck { .. } => PATH_CHECK_TYPE,
            AuthzValue::GroupCheck { .. } => GROUP_CHECK_TYPE,
            AuthzValue::ResourceCheck { .. } => RESOURCE_CHECK_TYPE,
            AuthzValue::Decision(_) => DECISION_TYPE,
        }
    }
}
