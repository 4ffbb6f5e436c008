//! Request handling: authenticate, authorize, route. Health endpoints answer before
//! authentication (kubelet probes carry no credentials); everything else needs a user that the
//! authorizer allows. The APIs themselves are being added here route by route.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::json;
use versa_storage::Store;

use crate::auth::{Auth, ClientCert, Credentials, Decision, forbidden_message};
use crate::status::Status;
use crate::{Body, full, json_response, request_info};

/// What every request shares.
#[derive(Debug)]
pub struct State {
    pub store: Arc<dyn Store>,
    pub auth: Auth,
}

/// The Kubernetes API version versa's types and behaviour follow (reported by `/version`).
const KUBE_MAJOR: &str = "1";
const KUBE_MINOR: &str = "36";

pub async fn handle(state: Arc<State>, client_cert: Option<Arc<ClientCert>>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    if let Some(response) = health(&state, req.method(), &path).await {
        return response;
    }
    let credentials = Credentials { client_cert: client_cert.as_deref(), headers: req.headers() };
    let user = match state.auth.authenticator.authenticate(credentials).await {
        Ok(Some(user)) => user,
        Ok(None) => return Status::unauthorized().into_response(),
        Err(e) => {
            tracing::info!(error = %e, "authentication failed");
            return Status::unauthorized().into_response();
        }
    };
    let info = request_info::parse(req.method(), &path, req.uri().query());
    if let Decision::Deny(reason) = state.auth.authorizer.authorize(&user, &info).await {
        let details = info.is_resource_request.then(|| {
            let mut d = json!({"kind": info.resource});
            if !info.name.is_empty() {
                d["name"] = json!(info.name);
            }
            if !info.api_group.is_empty() {
                d["group"] = json!(info.api_group);
            }
            d
        });
        return Status::forbidden(forbidden_message(&user, &info, &reason), details).into_response();
    }
    match (req.method(), path.as_str()) {
        (&Method::GET, "/version") => json_response(StatusCode::OK, &version()),
        _ => Status::not_found_path().into_response(),
    }
}

/// `/healthz`, `/livez`, `/readyz` (ready once storage answers).
async fn health(state: &State, method: &Method, path: &str) -> Option<Response<Body>> {
    let check = path.trim_end_matches('/');
    if !matches!(check, "/healthz" | "/livez" | "/readyz") {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        return Some(Status::method_not_allowed(method).into_response());
    }
    if check == "/readyz"
        && let Err(e) = state.store.current_revision().await
    {
        let body = format!("[-]storage failed: {e}\nreadyz check failed\n");
        return Some(text_response(StatusCode::INTERNAL_SERVER_ERROR, body));
    }
    Some(text_response(StatusCode::OK, "ok".to_string()))
}

fn version() -> serde_json::Value {
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0+versa-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", other => other }),
    })
}

fn text_response(code: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(full(Bytes::from(body)));
    *response.status_mut() = code;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
