//! Why admission refused a request, as kube-apiserver answers it: each [`AdmissionError`]
//! carries the whole `metav1.Status` (code, reason, message, details) kube would send, built by
//! the same constructors (`apierrors.NewForbidden`, `NewInternalError`, `NewBadRequest`, ...),
//! so the server answers with [`AdmissionError::status`] as it is.
//!
//! Also [`Outcome`]: what an admitted request carries on — the warnings for the `Warning`
//! header and the audit annotations.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

use crate::attributes::Attributes;

/// A refused request, with kube's status.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdmissionError {
    /// A webhook answered `allowed: false`: its `status`, sanitised as kube does (code at least
    /// 400, message `admission webhook "<name>" denied the request: <message>`).
    #[error("{}", message(.0))]
    WebhookDenied(Box<Status>),
    /// A webhook could not be called, or answered something kube does not accept, and its
    /// `failurePolicy` is `Fail`: 500 `Internal error occurred: failed calling webhook "<name>": ...`.
    #[error("{}", message(.0))]
    WebhookFailed(Box<Status>),
    /// A ValidatingAdmissionPolicy denied, or a policy failed under `failurePolicy: Fail`: 403
    /// or the validation's `reason` (422 `Invalid` by default).
    #[error("{}", message(.0))]
    PolicyDenied(Box<Status>),
    /// 403 for another reason (match conditions that fail closed).
    #[error("{}", message(.0))]
    Forbidden(Box<Status>),
    /// 400 (a dry run that a webhook with side effects would see).
    #[error("{}", message(.0))]
    BadRequest(Box<Status>),
    /// 404 (the namespace a namespaceSelector needs does not exist).
    #[error("{}", message(.0))]
    NotFound(Box<Status>),
    /// 503 (the schema a mutation needs is not known yet).
    #[error("{}", message(.0))]
    ServiceUnavailable(Box<Status>),
    /// 500 for anything else (a conversion for `matchPolicy: Equivalent` failed, a patch that
    /// does not apply, a namespace lookup that failed).
    #[error("{}", message(.0))]
    Internal(Box<Status>),
}

fn message(s: &Status) -> &str {
    s.message.as_deref().unwrap_or("")
}

impl AdmissionError {
    /// The `metav1.Status` kube would answer with.
    pub fn status(&self) -> &Status {
        match self {
            AdmissionError::WebhookDenied(s)
            | AdmissionError::WebhookFailed(s)
            | AdmissionError::PolicyDenied(s)
            | AdmissionError::Forbidden(s)
            | AdmissionError::BadRequest(s)
            | AdmissionError::NotFound(s)
            | AdmissionError::ServiceUnavailable(s)
            | AdmissionError::Internal(s) => s,
        }
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.status().code.and_then(|c| u16::try_from(c).ok()).unwrap_or(500)
    }

    /// The status message.
    pub fn message(&self) -> &str {
        message(self.status())
    }

    /// The status `reason` (`Forbidden`, `InternalError`, `Invalid`, ...).
    pub fn reason(&self) -> &str {
        self.status().reason.as_deref().unwrap_or("")
    }

    /// `apierrors.NewInternalError(err)`.
    pub(crate) fn internal(err: impl Into<String>) -> AdmissionError {
        let err = err.into();
        AdmissionError::Internal(Box::new(Status {
            status: Some("Failure".into()),
            code: Some(500),
            reason: Some("InternalError".into()),
            message: Some(format!("Internal error occurred: {err}")),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause { message: Some(err), ..StatusCause::default() }]),
                ..StatusDetails::default()
            }),
            ..Status::default()
        }))
    }

    /// A failed webhook call under `failurePolicy: Fail` (kube wraps the `ErrCallingWebhook`
    /// in `NewInternalError`).
    pub(crate) fn webhook_failed(err: impl Into<String>) -> AdmissionError {
        match AdmissionError::internal(err) {
            AdmissionError::Internal(s) => AdmissionError::WebhookFailed(s),
            other => other,
        }
    }

    /// `apierrors.NewBadRequest(reason)`.
    pub(crate) fn bad_request(reason: impl Into<String>) -> AdmissionError {
        AdmissionError::BadRequest(Box::new(Status {
            status: Some("Failure".into()),
            code: Some(400),
            reason: Some("BadRequest".into()),
            message: Some(reason.into()),
            ..Status::default()
        }))
    }

    /// `apierrors.NewForbidden(resource, name, err)`.
    pub(crate) fn forbidden(group: &str, resource: &str, name: &str, err: &str) -> AdmissionError {
        AdmissionError::Forbidden(Box::new(forbidden_status(group, resource, name, err)))
    }

    /// `apierrors.NewServiceUnavailable(reason)`.
    pub(crate) fn service_unavailable(reason: impl Into<String>) -> AdmissionError {
        AdmissionError::ServiceUnavailable(Box::new(Status {
            status: Some("Failure".into()),
            code: Some(503),
            reason: Some("ServiceUnavailable".into()),
            message: Some(reason.into()),
            ..Status::default()
        }))
    }

    /// `apierrors.NewNotFound(resource, name)`.
    pub(crate) fn not_found(group: &str, resource: &str, name: &str) -> AdmissionError {
        let qualified = if group.is_empty() { resource.to_owned() } else { format!("{resource}.{group}") };
        AdmissionError::NotFound(Box::new(Status {
            status: Some("Failure".into()),
            code: Some(404),
            reason: Some("NotFound".into()),
            message: Some(format!("{qualified} {} not found", go_quote(name))),
            details: Some(StatusDetails {
                group: Some(group.to_owned()),
                kind: Some(resource.to_owned()),
                name: Some(name.to_owned()),
                ..StatusDetails::default()
            }),
            ..Status::default()
        }))
    }
}

/// A lookup or a conversion the server could not answer: kube's 500 `Internal error occurred:
/// <text>` (a merge failure is reported by the policy instead, never through this).
impl From<crate::seams::HostError> for AdmissionError {
    fn from(e: crate::seams::HostError) -> AdmissionError {
        AdmissionError::internal(e.to_string())
    }
}

/// `apierrors.NewForbidden(qualifiedResource, name, err)`'s status.
pub(crate) fn forbidden_status(group: &str, resource: &str, name: &str, err: &str) -> Status {
    let qualified = if group.is_empty() { resource.to_owned() } else { format!("{resource}.{group}") };
    let message = if qualified.is_empty() {
        format!("forbidden: {err}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {err}")
    } else {
        format!("{qualified} {} is forbidden: {err}", go_quote(name))
    };
    Status {
        status: Some("Failure".into()),
        code: Some(403),
        reason: Some("Forbidden".into()),
        message: Some(message),
        details: Some(StatusDetails {
            group: Some(group.to_owned()),
            kind: Some(resource.to_owned()),
            name: Some(name.to_owned()),
            ..StatusDetails::default()
        }),
        ..Status::default()
    }
}

/// `admission.NewForbidden(a, err)`: forbidden on the request's resource, naming the object as
/// kube's `extractResourceName` does.
pub(crate) fn admission_forbidden(attrs: &Attributes, err: &str) -> Status {
    forbidden_status(&attrs.resource.group, &attrs.resource.resource, &attrs.name_for_errors(), err)
}

/// Go's `%q` of a string.
pub(crate) fn go_quote(s: &str) -> String {
    versa_schema::field::go_quote(s)
}

/// The prefix of the audit annotations that hold a mutating webhook's patch: kube records them
/// at audit level `Request` (the others at `Metadata`), since a patch may hold the object's
/// data.
pub const PATCH_ANNOTATION_PREFIX: &str = "patch.webhook.admission.k8s.io/";

/// What an admitted request carries on: warnings for the `Warning` header (kube's
/// `warning.AddWarning`; the server adds `299 - "<text>"`, deduplicated as kube does) and audit
/// annotations for the audit event (kube's `AddAnnotation`: a key keeps its first value); and,
/// refused or not, what was observed for kube's metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
    /// One entry per webhook called.
    pub webhook_calls: Vec<WebhookCall>,
    /// One entry per ValidatingAdmissionPolicy decision that counts.
    pub policy_checks: Vec<PolicyCheck>,
}

/// A webhook call, with the labels of kube's `apiserver_admission_webhook_admission_duration_seconds`
/// (`name`, `type`, `operation`, `rejected`), `apiserver_admission_webhook_request_total`
/// (`code`), `apiserver_admission_webhook_rejection_count` (`error_type`, `rejection_code`) and
/// `apiserver_admission_webhook_fail_open_count`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookCall {
    pub name: String,
    /// `validating` or `admit`.
    pub step: &'static str,
    pub operation: crate::attributes::Operation,
    pub elapsed: std::time::Duration,
    pub rejected: bool,
    /// 200 when it admitted; the status code of the denial or of the failure; 0 for an error of
    /// the server's own (kube truncates codes above 600 to 600).
    pub code: u16,
    /// When rejected: `calling_webhook_error`, `no_error` (the webhook said no) or
    /// `apiserver_internal_error`.
    pub rejection: Option<&'static str>,
    /// The call failed and `failurePolicy: Ignore` let the request through.
    pub failed_open: bool,
}

/// A policy decision, with the labels of kube's
/// `apiserver_validating_admission_policy_check_total` and `..._check_duration_seconds`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyCheck {
    pub policy: String,
    pub binding: String,
    /// `no_error`, `compile_error`, `invalid_error`, `out_of_budget`.
    pub error_type: &'static str,
    /// `allow`, `deny`, `warn`, `audit`.
    pub enforcement_action: &'static str,
    pub elapsed: std::time::Duration,
}

impl Outcome {
    pub(crate) fn warn(&mut self, text: String) {
        if !text.is_empty() && !self.warnings.contains(&text) {
            self.warnings.push(text);
        }
    }

    /// Adds an annotation; a key already set keeps its value (kube refuses the overwrite and
    /// logs it), and a key that is not `<prefix>/<name>` with a qualified name is dropped (kube's
    /// `checkKeyFormat`).
    pub(crate) fn annotate(&mut self, key: String, value: String) {
        if key.split('/').count() != 2 || !versa_schema::names::is_qualified_name(&key).is_empty() {
            tracing::warn!(key, "an admission audit annotation key must be a qualified name with one '/'");
            return;
        }
        if let Some(existing) = self.audit_annotations.get(&key) {
            if *existing != value {
                tracing::warn!(key, "an admission audit annotation may not be overwritten");
            }
            return;
        }
        self.audit_annotations.insert(key, value);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn kube_status_texts() {
        let e = AdmissionError::internal("failed calling webhook \"x\": boom");
        assert_eq!(e.message(), "Internal error occurred: failed calling webhook \"x\": boom");
        assert_eq!(e.code(), 500);
        let f = forbidden_status("stable.example.com", "crontabs", "a", "nope");
        assert_eq!(f.message.as_deref(), Some("crontabs.stable.example.com \"a\" is forbidden: nope"));
        let f = forbidden_status("", "pods", "", "nope");
        assert_eq!(f.message.as_deref(), Some("pods is forbidden: nope"));
        let n = AdmissionError::not_found("", "namespaces", "missing");
        assert_eq!(n.message(), "namespaces \"missing\" not found");
    }
}
