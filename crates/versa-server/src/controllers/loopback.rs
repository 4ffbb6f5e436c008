//! An in-process API client for the controllers that act as kube's controllers act — as clients
//! of the API, so that their writes take the API's whole path (preconditions, finalizers,
//! admission, field management, the storage boundary) and nothing is written around it.
//!
//! A request is built as the REST layer receives one (path, query, headers, body) and handed to
//! `rest::call` with the controller's identity; authentication, authorization, the in-flight
//! limits and the audit log are the network edge's and are skipped (kube's controllers are
//! trusted by RBAC rules the server ships; this one is the server itself). The answer comes
//! back as its code and JSON body.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::Value;
use versa_registry::Resource;

use crate::auth::UserInfo;
use crate::state::State;

/// A client of this server's own API, as one user.
#[derive(Debug, Clone)]
pub struct Loopback {
    state: Arc<State>,
    user: Arc<UserInfo>,
    user_agent: &'static str,
}

/// One answer: its code and body (a `Status` for errors).
#[derive(Debug, Clone)]
pub struct Answer {
    pub code: StatusCode,
    pub body: Value,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        self.code.is_success()
    }

    /// The answer's `metadata.resourceVersion`, when it is an object.
    pub fn resource_version(&self) -> Option<&str> {
        self.body.pointer("/metadata/resourceVersion").and_then(Value::as_str)
    }

    /// The `message` of an error's Status.
    pub fn message(&self) -> String {
        let message = self.body.get("message").and_then(Value::as_str).unwrap_or("");
        format!("{}: {message}", self.code)
    }
}

/// Where one object is: its resource, namespace (none for cluster-scoped) and name.
#[derive(Debug, Clone)]
pub struct ObjectRef {
    pub res: Arc<Resource>,
    pub namespace: Option<String>,
    pub name: String,
}

impl Loopback {
    /// A client acting as `user` (name and groups), its requests carrying `user_agent` (the
    /// field manager's name comes from it, as kube's does).
    pub fn new(state: Arc<State>, user: &str, groups: &[&str], user_agent: &'static str) -> Loopback {
        let user = UserInfo {
            name: user.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..Default::default()
        };
        Loopback { state, user: Arc::new(user), user_agent }
    }

    /// The server this client talks to.
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// GET of one object.
    pub async fn get(&self, obj: &ObjectRef) -> Answer {
        self.request(Method::GET, obj.res.clone(), obj.namespace.as_deref(), &obj.name, None, Bytes::new(), None).await
    }

    /// DELETE of one object with `options` (a `DeleteOptions` document).
    pub async fn delete(&self, obj: &ObjectRef, options: &Value) -> Answer {
        let body = Bytes::from(serde_json::to_vec(options).unwrap_or_default());
        let json = Some("application/json");
        self.request(Method::DELETE, obj.res.clone(), obj.namespace.as_deref(), &obj.name, json, body, None).await
    }

    /// A JSON merge patch of one object.
    pub async fn merge_patch(&self, obj: &ObjectRef, patch: &Value) -> Answer {
        let body = Bytes::from(serde_json::to_vec(patch).unwrap_or_default());
        let merge = Some("application/merge-patch+json");
        self.request(Method::PATCH, obj.res.clone(), obj.namespace.as_deref(), &obj.name, merge, body, None).await
    }

    /// A server-side apply of `object` to one object by `field_manager`, forcing conflicts
    /// (as kube's controllers apply).
    pub async fn apply(&self, obj: &ObjectRef, object: &Value, field_manager: &str) -> Answer {
        let body = Bytes::from(serde_json::to_vec(object).unwrap_or_default());
        let apply = Some("application/apply-patch+yaml");
        let query = format!("fieldManager={field_manager}&force=true");
        self.request(Method::PATCH, obj.res.clone(), obj.namespace.as_deref(), &obj.name, apply, body, Some(&query))
            .await
    }

    /// A PUT of `object` (with its `resourceVersion`: a conflict when it moved).
    pub async fn update(&self, obj: &ObjectRef, object: &Value) -> Answer {
        let body = Bytes::from(serde_json::to_vec(object).unwrap_or_default());
        let json = Some("application/json");
        self.request(Method::PUT, obj.res.clone(), obj.namespace.as_deref(), &obj.name, json, body, None).await
    }

    /// A create of `object` in `namespace` of `res`.
    pub async fn create(&self, res: Arc<Resource>, namespace: Option<&str>, object: &Value) -> Answer {
        let body = Bytes::from(serde_json::to_vec(object).unwrap_or_default());
        self.request(Method::POST, res, namespace, "", Some("application/json"), body, None).await
    }

    #[allow(clippy::too_many_arguments, reason = "one request's parts")]
    async fn request(
        &self,
        method: Method,
        res: Arc<Resource>,
        namespace: Option<&str>,
        name: &str,
        content_type: Option<&str>,
        body: Bytes,
        query: Option<&str>,
    ) -> Answer {
        let Some(version) = request_version(&res) else {
            return failure(StatusCode::NOT_FOUND, format!("{} serves no version", res.plural));
        };
        let mut path =
            if res.group.is_empty() { format!("/api/{version}") } else { format!("/apis/{}/{version}", res.group) };
        if let Some(ns) = namespace.filter(|_| res.namespaced) {
            path.push_str(&format!("/namespaces/{ns}"));
        }
        path.push('/');
        path.push_str(&res.plural);
        if !name.is_empty() {
            path.push('/');
            path.push_str(name);
        }
        let info = crate::request_info::parse(&method, &path, query);
        let uri = match query {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(&uri)
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, self.user_agent);
        if let Some(ct) = content_type {
            builder = builder.header(header::CONTENT_TYPE, ct);
        }
        let Ok(req) = builder.body(()) else {
            return failure(StatusCode::BAD_REQUEST, format!("cannot build a request for {path}"));
        };
        let (parts, ()) = req.into_parts();
        let response = crate::rest::call(self.state.clone(), res, &info, self.user.clone(), parts, body).await;
        let code = response.status();
        let bytes = match response.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(never) => match never {},
        };
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer { code, body }
    }
}

/// The version requests go to: the storage version when served, else the first served one.
fn request_version(res: &Resource) -> Option<&str> {
    let served = |v: &&versa_registry::Version| v.served;
    res.versions
        .iter()
        .filter(served)
        .find(|v| v.name == res.storage_version)
        .or_else(|| res.versions.iter().find(|v| v.served))
        .map(|v| v.name.as_str())
}

fn failure(code: StatusCode, message: String) -> Answer {
    Answer {
        code,
        body: serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}),
    }
}
