//! `metav1.Status` error bodies, shaped exactly as kube-apiserver writes them, so that kubectl
//! prints what its users already know. Every error answer of the server is built here.

use http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::Body;

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

    /// 500 for a failure inside the server.
    pub fn internal(message: impl Into<String>) -> Self {
        Status {
            code: StatusCode::INTERNAL_SERVER_ERROR,
            reason: "InternalError",
            message: format!("Internal error occurred: {}", message.into()),
            details: None,
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
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        if let (Some(details), Some(obj)) = (&self.details, status.as_object_mut()) {
            obj.insert("details".into(), details.clone());
        }
        status
    }

    /// The HTTP answer.
    pub fn into_response(self) -> Response<Body> {
        crate::json_response(self.code, &self.to_json())
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
}
