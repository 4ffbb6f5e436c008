//! `authorization.k8s.io/v1` SelfSubjectAccessReviews (standalone): "may I?" — what `kubectl
//! auth can-i` asks. The review is answered with the server's own authorizer (the one that
//! decides real requests), for the user who sends it, and never stored: kube's `201` with the
//! spec as sent and `status.allowed` (and the authorizer's reason). Every authenticated user
//! may create one (kube's `system:basic-user`). The body is JSON, YAML or, from client-go's
//! typed client, protobuf.

use http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::auth::{Decision, UserInfo};
use crate::body::Body;
use crate::codec;
use crate::request_info::RequestInfo;
use crate::state::State;
use crate::status::Status;

/// The group and resource this module answers.
pub const GROUP: &str = "authorization.k8s.io";
pub const SELF_SUBJECT_ACCESS_REVIEWS: &str = "selfsubjectaccessreviews";

/// Answers a `create` of a SelfSubjectAccessReview whose body is `body`.
pub async fn self_subject_access_review(
    state: &State,
    user: &UserInfo,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<Response<Body>, Status> {
    let format = codec::body_format_builtin(headers)?;
    let review = codec::decode_object(body, format, "SelfSubjectAccessReview")?.value;
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let info = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), _) if r.is_object() => RequestInfo {
            is_resource_request: true,
            verb: text(r, "verb"),
            api_group: text(r, "group"),
            api_version: text(r, "version"),
            namespace: text(r, "namespace"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            name: text(r, "name"),
            ..RequestInfo::default()
        },
        (_, Some(n)) if n.is_object() => RequestInfo {
            is_resource_request: false,
            verb: text(n, "verb"),
            path: text(n, "path"),
            ..RequestInfo::default()
        },
        _ => {
            let errs = versa_schema::ErrorList(vec![versa_schema::Error::invalid(
                versa_schema::Path::new("spec").child("resourceAttributes"),
                versa_schema::field::BadValue::Raw("\"null\"".into()),
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )]);
            return Err(Status::invalid(GROUP, "SelfSubjectAccessReview", "", &errs));
        }
    };
    let status = match state.auth.authorizer.authorize(user, &info).await {
        Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
        Decision::Deny(reason) => json!({"allowed": false, "reason": reason}),
        Decision::Error(e) => json!({"allowed": false, "evaluationError": e}),
    };
    let mut status = status;
    if let Some(map) = status.as_object_mut() {
        map.retain(|_, v| v.as_str() != Some(""));
    }
    let answer = json!({
        "kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null}, "spec": spec, "status": status,
    });
    let mut response = Response::new(crate::body::full(answer.to_string()));
    *response.status_mut() = StatusCode::CREATED;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Ok(response)
}
