//! `metav1.Status` error bodies, shaped exactly as kube-apiserver writes them, so that kubectl
//! prints what its users already know. Every error answer of the server is built here.

use http::{Response, StatusCode};
use serde_json::{Value, json};
use versa_schema::ErrorList;

use crate::body::Body;

/// A failed request: HTTP code, Kubernetes `reason`, message and optional `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub code: StatusCode,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl Status {
    /// 401: no or unknown credentials.
    pub fn unauthorized() -> Self {
        Status { code: StatusCode::UNAUTHORIZED, reason: "Unauthorized", message: "Unauthorized".into(), details: None }
    }

    /// 403 with kube-apiserver's message (see [`crate::auth::forbidden_message`]).
    pub fn forbidden(message: String, details: Option<Value>) -> Self {
        Status { code: StatusCode::FORBIDDEN, reason: "Forbidden", message, details }
    }

    /// 404 for a path nothing serves.
    pub fn not_found_path() -> Self {
        Status {
            code: StatusCode::NOT_FOUND,
            reason: "NotFound",
            message: "the server could not find the requested resource".into(),
            details: Some(json!({})),
        }
    }

    /// 405 for a method a path does not support.
    pub fn method_not_allowed(method: &http::Method) -> Self {
        Status {
            code: StatusCode::METHOD_NOT_ALLOWED,
            reason: "MethodNotAllowed",
            message: format!("the server does not allow this method on the requested resource ({method})"),
            details: None,
        }
    }

    /// 406 `NotAcceptable`: the answer cannot take the form the client asked for.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Status { code: StatusCode::NOT_ACCEPTABLE, reason: "NotAcceptable", message: message.into(), details: None }
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status { code: StatusCode::BAD_REQUEST, reason: "BadRequest", message: message.into(), details: None }
    }

    /// 413: a body over `limit` bytes (kube-apiserver's `limitedReadBody`).
    pub fn too_large(limit: usize) -> Self {
        Status {
            code: StatusCode::PAYLOAD_TOO_LARGE,
            reason: "RequestEntityTooLarge",
            message: format!("Request entity too large: limit is {limit}"),
            details: None,
        }
    }

    /// 415: a body (or patch) format the endpoint does not take.
    pub fn unsupported_media_type(_got: &str, accepted: &str) -> Self {
        Status {
            code: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            reason: "UnsupportedMediaType",
            message: format!(
                "the body of the request was in an unknown format - accepted media types include: {accepted}"
            ),
            details: None,
        }
    }

    /// 404 for an object that does not exist: `<resource>.<group> "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Status {
            code: StatusCode::NOT_FOUND,
            reason: "NotFound",
            message: format!("{} \"{name}\" not found", qualified(group, resource)),
            details: Some(details(group, resource, name)),
        }
    }

    /// 409 `AlreadyExists` on create.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Status {
            code: StatusCode::CONFLICT,
            reason: "AlreadyExists",
            message: format!("{} \"{name}\" already exists", qualified(group, resource)),
            details: Some(details(group, resource, name)),
        }
    }

    /// 409 `Conflict`: the object changed since the client read it.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict_with(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 `Conflict` with another reason (failed preconditions).
    pub fn conflict_with(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Status {
            code: StatusCode::CONFLICT,
            reason: "Conflict",
            message: format!("Operation cannot be fulfilled on {} \"{name}\": {why}", qualified(group, resource)),
            details: Some(details(group, resource, name)),
        }
    }

    /// 422 `Invalid` with one cause per field error. `kind` is the object's kind (kube names the
    /// kind of the submitted object here, not the resource).
    pub fn invalid(group: &str, kind: &str, name: &str, errs: &ErrorList) -> Self {
        let causes: Vec<Value> = errs
            .deduplicated()
            .into_iter()
            .map(|e| json!({"reason": e.type_.reason(), "message": e.body(), "field": e.field.to_string()}))
            .collect();
        let mut d = json!({"kind": kind, "causes": causes});
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        Status {
            code: StatusCode::UNPROCESSABLE_ENTITY,
            reason: "Invalid",
            message: errs.invalid_message(&qualified(group, kind), name),
            details: Some(d),
        }
    }

    /// 410 `Expired`.
    pub fn expired(message: impl Into<String>) -> Self {
        Status { code: StatusCode::GONE, reason: "Expired", message: message.into(), details: None }
    }

    /// 405 for a verb a resource does not support.
    pub fn method_not_supported(group: &str, resource: &str, verb: &str) -> Self {
        Status {
            code: StatusCode::METHOD_NOT_ALLOWED,
            reason: "MethodNotAllowed",
            message: format!("{verb} is not supported on resources of kind \"{}\"", qualified(group, resource)),
            details: Some(json!({"group": group, "kind": resource})),
        }
    }

    /// 504 `Timeout` for a read at a resourceVersion the store has not reached (kube's
    /// `NewTooLargeResourceVersionError` as its watch cache answers it: after waiting, with a
    /// `ResourceVersionTooLarge` cause and a retry after one second).
    pub fn too_large_resource_version(requested: i64, current: i64) -> Self {
        Status {
            code: StatusCode::GATEWAY_TIMEOUT,
            reason: "Timeout",
            message: format!("Timeout: Too large resource version: {requested}, current: {current}"),
            details: Some(json!({
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            })),
        }
    }

    /// 500 for an error kube-apiserver passes through as it is (`ErrorToAPIStatus` of a plain
    /// error: no reason, the error's text as the message) — conversion failures among them:
    /// kubectl prints `Error from server: conversion webhook for ... failed: ...`.
    pub fn unknown(message: impl Into<String>) -> Self {
        Status { code: StatusCode::INTERNAL_SERVER_ERROR, reason: "", message: message.into(), details: None }
    }

    /// 500 for a failure inside the server.
    /// kube's `NewInternalError`: the message, and the error again as the one cause.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Status {
            code: StatusCode::INTERNAL_SERVER_ERROR,
            reason: "InternalError",
            details: Some(json!({"causes": [{"message": message}]})),
            message: format!("Internal error occurred: {message}"),
        }
    }

    /// The `metav1.Status` object.
    pub fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code.as_u16(),
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let (Some(details), Some(obj)) = (&self.details, status.as_object_mut()) {
            obj.insert("details".into(), details.clone());
        }
        status
    }

    /// 503 `ServiceUnavailable` while storage cannot answer (etcd down, a disk error): clients
    /// retry after `Retry-After` seconds, as with kube's `NewServiceUnavailable` plus a retry
    /// hint. `/readyz` fails meanwhile.
    pub fn storage_unavailable(message: impl Into<String>) -> Self {
        Status {
            code: StatusCode::SERVICE_UNAVAILABLE,
            reason: "ServiceUnavailable",
            message: message.into(),
            details: Some(json!({"retryAfterSeconds": STORAGE_RETRY_AFTER_SECONDS})),
        }
    }

    /// The HTTP answer; `details.retryAfterSeconds` also goes out as `Retry-After`, as
    /// kube-apiserver's response writer does.
    pub fn into_response(self) -> Response<Body> {
        let retry_after = self.details.as_ref().and_then(|d| d.get("retryAfterSeconds")).and_then(Value::as_u64);
        let mut response = crate::body::json_response(self.code, &self.to_json());
        if let Some(seconds) = retry_after.filter(|s| *s > 0) {
            response.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        response
    }
}

/// How long clients are asked to wait before retrying while storage is unavailable.
pub const STORAGE_RETRY_AFTER_SECONDS: u64 = 1;

pub use versa_registry::error::qualified;

/// The one place the registry's errors become statuses.
impl From<versa_registry::Error> for Status {
    fn from(e: versa_registry::Error) -> Status {
        use versa_registry::Error;
        match e {
            Error::NotFound { group, resource, name } => Status::not_found(&group, &resource, &name),
            Error::AlreadyExists { group, resource, name } => Status::already_exists(&group, &resource, &name),
            Error::Conflict { group, resource, name, why } => match why {
                Some(why) => Status::conflict_with(&group, &resource, &name, &why),
                None => Status::conflict(&group, &resource, &name),
            },
            Error::Invalid { group, kind, name, errors } => Status::invalid(&group, &kind, &name, &errors),
            Error::BadRequest(message) => Status::bad_request(message),
            Error::Forbidden { message, details } => Status::forbidden(message, details),
            Error::Conversion(message) | Error::Failed(message) => Status::unknown(message),
            Error::ApplyConflicts(conflicts) => {
                let causes: Vec<Value> = conflicts
                    .causes()
                    .into_iter()
                    .map(|c| json!({"reason": "FieldManagerConflict", "message": c.message, "field": c.field}))
                    .collect();
                Status {
                    code: StatusCode::CONFLICT,
                    reason: "Conflict",
                    message: conflicts.to_string(),
                    details: Some(json!({"causes": causes})),
                }
            }
            Error::Internal(message) => Status::internal(message),
            Error::Storage(e) => Status::from_storage(e),
        }
    }
}

/// Storage errors outside any one object's context (a read–modify–write that could not reach
/// the store): [`Status::from_storage`].
impl From<versa_storage::Error> for Status {
    fn from(e: versa_storage::Error) -> Status {
        Status::from_storage(e)
    }
}

impl Status {
    /// A storage error that is not about one object's existence or revision (those are
    /// [`versa_registry::Error::storage`]'s): 503 while storage cannot answer, 410 for a
    /// revision compacted away, 500 otherwise — for a value over the store's limit with etcd's
    /// words, as kube-apiserver answers.
    pub fn from_storage(e: versa_storage::Error) -> Status {
        match e {
            // kube passes etcd's refusal through as it is: a 500 without a reason.
            versa_storage::Error::TooLarge { .. } => Status {
                code: StatusCode::INTERNAL_SERVER_ERROR,
                reason: "",
                message: "etcdserver: request is too large".into(),
                details: None,
            },
            versa_storage::Error::Expired { .. } => Status::expired(e.to_string()),
            versa_storage::Error::Unavailable { .. } => Status::storage_unavailable(e.to_string()),
            other => Status::internal(other.to_string()),
        }
    }
}

fn details(group: &str, resource: &str, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

/// The two refusals the registry's store acts on (a `generateName` drawn again, an object gone
/// during a deletecollection).
impl versa_registry::store::Refusal for Status {
    fn is_already_exists(&self) -> bool {
        self.reason == "AlreadyExists"
    }

    fn is_not_found(&self) -> bool {
        self.code == StatusCode::NOT_FOUND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            Status::unauthorized().to_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})
        );
        assert_eq!(
            Status::not_found_path().to_json()["details"],
            json!({}),
            "kube-apiserver sends empty details for unknown paths"
        );
    }

    /// Issue 15: storage that cannot answer is a 503 with `Retry-After`, not a 500.
    #[test]
    fn storage_unavailable_is_503_with_retry_after() {
        let response = Status::storage_unavailable("storage unavailable: etcd is down").into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers().get(http::header::RETRY_AFTER).map(|v| v.as_bytes()), Some(&b"1"[..]));
        let body = Status::storage_unavailable("storage unavailable: etcd is down").to_json();
        assert_eq!(body["reason"], "ServiceUnavailable");
        assert_eq!(body["details"]["retryAfterSeconds"], 1);
        let other = Status::internal("boom").into_response();
        assert!(other.headers().get(http::header::RETRY_AFTER).is_none());
    }

    /// kube's `NewTooLargeResourceVersionError` as its watch cache sends it (issue 41).
    #[test]
    fn too_large_resource_version_is_kubes_504() {
        let status = Status::too_large_resource_version(1_000_123, 123);
        assert_eq!(
            status.to_json(),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Timeout: Too large resource version: 1000123, current: 123",
                "reason": "Timeout", "code": 504,
                "details": {
                    "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                    "retryAfterSeconds": 1,
                },
            })
        );
        let response = status.into_response();
        assert_eq!(response.headers().get(http::header::RETRY_AFTER).map(|v| v.as_bytes()), Some(&b"1"[..]));
    }
}
