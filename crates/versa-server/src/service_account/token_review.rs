//! `authentication.k8s.io/v1` TokenReviews (standalone): "whose is this token?" — what services
//! ask to check a bearer token presented to them. As kube's `tokenreview` REST: the token must
//! be given (400), the audiences default to the API's, and the token is authenticated as a
//! request bearing it would be — ServiceAccount tokens for those audiences, then every other
//! authenticator (the token file), which knows no audiences and so answers only for the API's.
//! The answer is `201` with the spec as sent and `status.authenticated`, `status.user`,
//! `status.audiences` or `status.error` (texts as kube-apiserver 1.36 gave them, e.g. `[invalid
//! bearer token, service account token has expired]`); nothing is stored. (kube also writes
//! `metadata.managedFields` for the review; versa does not.) Who may create one is the
//! authorizer's decision, as for every request. The body is JSON, YAML or protobuf.

use http::{Response, StatusCode};
use serde_json::{Map, Value, json};

use super::API_AUDIENCES;
use crate::auth::{Credentials, UserInfo};
use crate::body::Body;
use crate::codec;
use crate::state::State;
use crate::status::Status;

/// The group and resource this module answers.
pub const GROUP: &str = "authentication.k8s.io";
pub const TOKEN_REVIEWS: &str = "tokenreviews";

/// Answers a `create` of a TokenReview whose body is `body`.
pub async fn token_review(state: &State, headers: &http::HeaderMap, body: &[u8]) -> Result<Response<Body>, Status> {
    let format = codec::body_format_builtin(headers)?;
    let review = codec::decode_object(body, format, "TokenReview")?.value;
    let spec = review.get("spec").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(Status::bad_request("token is required for TokenReview in authentication"));
    }
    let requested: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let audiences: Vec<String> =
        if requested.is_empty() { API_AUDIENCES.iter().map(|a| a.to_string()).collect() } else { requested };
    let outcome = review_token(state, token, &audiences).await;
    let mut status = Map::new();
    match outcome {
        Ok((user, audiences)) => {
            status.insert("authenticated".into(), json!(true));
            status.insert("user".into(), user_json(&user));
            status.insert("audiences".into(), json!(audiences));
        }
        Err(error) => {
            status.insert("user".into(), json!({}));
            status.insert("error".into(), json!(error));
        }
    }
    let answer = json!({
        "kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {}, "spec": spec, "status": status,
    });
    let mut response = Response::new(crate::body::full(answer.to_string()));
    *response.status_mut() = StatusCode::CREATED;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Ok(response)
}

/// The user of `token` for `audiences` and the audiences it is good for, or kube's error text.
async fn review_token(state: &State, token: &str, audiences: &[String]) -> Result<(UserInfo, Vec<String>), String> {
    if let Some(accounts) = &state.service_accounts {
        match accounts.authenticate_token(token, audiences).await {
            Ok(Some(found)) => return Ok(found),
            Ok(None) => {}
            // kube's request authenticator adds its own failure to the token's.
            Err(e) => return Err(format!("[invalid bearer token, {e}]")),
        }
    }
    // Every other authenticator knows only the API's audiences (kube's audience-agnostic
    // wrapper): for none of them it is not asked.
    let implicit: Vec<String> =
        API_AUDIENCES.iter().filter(|a| audiences.iter().any(|b| b == *a)).map(|a| a.to_string()).collect();
    if implicit.is_empty() {
        return Err("invalid bearer token".into());
    }
    let mut headers = http::HeaderMap::new();
    let value =
        http::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| "invalid bearer token".to_owned())?;
    headers.insert(http::header::AUTHORIZATION, value);
    match state.auth.authenticator.authenticate(Credentials { client_cert: None, headers: &headers }).await {
        Ok(Some(user)) => Ok((std::sync::Arc::unwrap_or_clone(user), implicit)),
        Ok(None) => Err("invalid bearer token".into()),
        Err(e) => Err(e.0),
    }
}

/// A user as `authentication.k8s.io/v1` `UserInfo`.
fn user_json(user: &UserInfo) -> Value {
    let mut out = Map::new();
    out.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        out.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        out.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        out.insert("extra".into(), json!(user.extra));
    }
    Value::Object(out)
}
