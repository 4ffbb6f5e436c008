//! Delegated authentication and authorization, as every aggregated API server built on
//! k8s.io/apiserver does them: kube-apiserver decides who a request is from and whether it may
//! go ahead; versa asks.
//!
//! Authentication tries, in kube's order:
//! 1. **Front-proxy headers** (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`, the uid
//!    header; names configurable) — believed only when the connection's client certificate
//!    chains to the requestheader CA and its CN is one of the allowed names (none listed: any).
//! 2. **Client certificates** from the client CA: user = CN, groups = O.
//! 3. **Bearer tokens**, sent to kube-apiserver as a `TokenReview`; answers (yes and no) are
//!    cached for [`CACHE_TTL`], keyed by the token's SHA-256.
//!
//! Nothing else: a request that none of them accepts gets 401. Authenticated users gain
//! `system:authenticated`.
//!
//! Authorization: `system:masters` may do anything (as in kube); everyone else is asked about
//! with a `SubjectAccessReview` carrying the full request attributes (user, uid, groups, extra,
//! and either the resource attributes or the non-resource path), allow and deny both cached for
//! [`CACHE_TTL`]. A review that fails is a 500, never an allow.
//!
//! The front-proxy settings can change while serving (the ConfigMap
//! `kube-system/extension-apiserver-authentication` is re-read by `cluster.rs`), so they live
//! behind a lock and are read per request.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::kube::KubeClient;
use crate::auth::{
    AuthError, Authenticated, Authenticator, Authorizer, ClientCert, Credentials, Decision, MaybeBoxed, UserInfo,
    add_authenticated, later, now,
};
use crate::request_info::RequestInfo;
use crate::token_file::bearer_token;

/// How long TokenReview and SubjectAccessReview answers are reused (kube's default for
/// delegated authentication and authorization).
pub const CACHE_TTL: Duration = Duration::from_secs(10);
/// At most this many answers are cached per cache; when full, expired ones are dropped, and if
/// none has expired, all of them.
const CACHE_CAPACITY: usize = 10_000;

/// The group whose members are never asked about.
const MASTERS: &str = "system:masters";

/// Which headers a front proxy uses, and which proxy certificates to believe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    /// CNs allowed for the proxy's certificate; empty: any certificate from the CA.
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
}

impl Default for RequestHeaderConfig {
    /// kube's defaults for an aggregated API server.
    fn default() -> Self {
        RequestHeaderConfig {
            allowed_names: Vec::new(),
            username_headers: vec!["X-Remote-User".into()],
            uid_headers: vec!["X-Remote-Uid".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefix: vec!["X-Remote-Extra-".into()],
        }
    }
}

impl RequestHeaderConfig {
    /// The user the headers name, when the certificate may speak for others.
    fn user(&self, cert: &ClientCert, headers: &http::HeaderMap) -> Result<Option<UserInfo>, AuthError> {
        if !self.allowed_names.is_empty() && !self.allowed_names.contains(&cert.common_name) {
            return Err(AuthError(format!(
                "client certificate CN {:?} is not one of the allowed front-proxy names {:?}",
                cert.common_name, self.allowed_names
            )));
        }
        let first = |names: &[String]| {
            names.iter().find_map(|n| {
                headers.get_all(n.as_str()).iter().find_map(|v| v.to_str().ok()).filter(|v| !v.is_empty())
            })
        };
        let Some(name) = first(&self.username_headers) else { return Ok(None) };
        let uid = first(&self.uid_headers).unwrap_or("").to_owned();
        let mut groups = Vec::new();
        for header in &self.group_headers {
            groups.extend(headers.get_all(header.as_str()).iter().filter_map(|v| v.to_str().ok()).map(str::to_owned));
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for prefix in &self.extra_headers_prefix {
            let prefix = prefix.to_ascii_lowercase();
            for (header, value) in headers {
                // Header names are stored lower-case.
                let Some(key) = header.as_str().strip_prefix(prefix.as_str()) else { continue };
                if let Ok(value) = value.to_str() {
                    extra.entry(unescape_extra_key(key)).or_default().push(value.to_owned());
                }
            }
        }
        add_authenticated(&mut groups);
        Ok(Some(UserInfo { name: name.to_owned(), uid, groups, extra }))
    }
}

/// An extra key as the front proxy escaped it (percent-encoding, since header names cannot
/// carry every character a key may have); undecodable keys are taken as they are, as kube does.
fn unescape_extra_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = key.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_owned(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}

/// Answers kept for [`CACHE_TTL`].
#[derive(Debug)]
struct Cache<V> {
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> Cache<V> {
    fn new() -> Self {
        Cache { entries: Mutex::new(HashMap::new()) }
    }

    fn get(&self, key: &str) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        entries.get(key).filter(|(at, _)| at.elapsed() < CACHE_TTL).map(|(_, v)| v.clone())
    }

    fn put(&self, key: String, value: V) {
        let Ok(mut entries) = self.entries.lock() else { return };
        if entries.len() >= CACHE_CAPACITY {
            entries.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
            if entries.len() >= CACHE_CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now(), value));
    }
}

/// Cluster-mode authentication (see the module documentation).
#[derive(Debug)]
pub struct DelegatedAuthenticator {
    requestheader: Arc<RwLock<RequestHeaderConfig>>,
    /// kube-apiserver, for TokenReviews.
    kube: KubeClient,
    tokens: Cache<Option<Arc<UserInfo>>>,
}

impl DelegatedAuthenticator {
    pub fn new(requestheader: Arc<RwLock<RequestHeaderConfig>>, kube: KubeClient) -> Self {
        DelegatedAuthenticator { requestheader, kube, tokens: Cache::new() }
    }

    async fn token(&self, token: &str) -> Result<Option<Arc<UserInfo>>, AuthError> {
        let key = hex_sha256(token.as_bytes());
        if let Some(answer) = self.tokens.get(&key) {
            return Ok(answer);
        }
        let review = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        });
        let answer = self
            .kube
            .create("/apis/authentication.k8s.io/v1/tokenreviews", &review)
            .await
            .map_err(|e| AuthError(format!("TokenReview: {e}")))?;
        let status = &answer["status"];
        let user = if status["authenticated"] == true {
            let user = &status["user"];
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default()
            };
            let mut groups = strings(&user["groups"]);
            add_authenticated(&mut groups);
            let extra = user["extra"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
                .unwrap_or_default();
            Some(Arc::new(UserInfo {
                name: user["username"].as_str().unwrap_or("").to_owned(),
                uid: user["uid"].as_str().unwrap_or("").to_owned(),
                groups,
                extra,
            }))
        } else {
            if let Some(error) = status["error"].as_str().filter(|e| !e.is_empty()) {
                tracing::debug!(error, "token not authenticated");
            }
            None
        };
        self.tokens.put(key, user.clone());
        Ok(user)
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

impl Authenticator for DelegatedAuthenticator {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> MaybeBoxed<'a, Authenticated> {
        let mut failure = None;
        if let Some(cert) = credentials.client_cert {
            if cert.trusted.requestheader {
                let config = self.requestheader.read().unwrap_or_else(|poisoned| poisoned.into_inner());
                match config.user(cert, credentials.headers) {
                    Ok(Some(user)) => return now(Ok(Some(Arc::new(user)))),
                    Ok(None) => {}
                    Err(e) => failure = Some(e),
                }
            }
            if cert.trusted.client_ca {
                return now(Ok(Some(cert.user())));
            }
        }
        // Only a bearer token has to wait (for a TokenReview, unless cached).
        let Some(token) = bearer_token(credentials.headers) else { return now(failure.map_or(Ok(None), Err)) };
        later(async move {
            match self.token(token).await {
                Ok(Some(user)) => Ok(Some(user)),
                Ok(None) => failure.map_or(Ok(None), Err),
                Err(e) => Err(e),
            }
        })
    }
}

/// Cluster-mode authorization (see the module documentation).
#[derive(Debug)]
pub struct DelegatedAuthorizer {
    kube: KubeClient,
    answers: Cache<Decision>,
}

impl DelegatedAuthorizer {
    pub fn new(kube: KubeClient) -> Self {
        DelegatedAuthorizer { kube, answers: Cache::new() }
    }
}

/// The `spec` of a SubjectAccessReview for `request` by `user`.
pub fn access_review_spec(user: &UserInfo, request: &RequestInfo) -> Value {
    let mut spec = json!({"user": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        spec["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        spec["extra"] = json!(user.extra);
    }
    if request.is_resource_request {
        let mut attributes = serde_json::Map::new();
        let name = request.authorization_name();
        for (key, value) in [
            ("namespace", request.namespace.as_str()),
            ("verb", &request.verb),
            ("group", &request.api_group),
            ("version", &request.api_version),
            ("resource", &request.resource),
            ("subresource", &request.subresource),
            ("name", &name),
        ] {
            if !value.is_empty() || key == "group" {
                attributes.insert(key.into(), json!(value));
            }
        }
        if let Some(requirements) = field_selector_requirements(&request.field_selector) {
            attributes.insert("fieldSelector".into(), json!({"requirements": requirements}));
        }
        if let Some(requirements) = label_selector_requirements(&request.label_selector) {
            attributes.insert("labelSelector".into(), json!({"requirements": requirements}));
        }
        spec["resourceAttributes"] = Value::Object(attributes);
    } else {
        spec["nonResourceAttributes"] = json!({"path": request.path, "verb": request.verb});
    }
    spec
}

/// A request's field selector as a SubjectAccessReview carries it (kube's webhook authorizer):
/// each term `In` or `NotIn` its one value; nothing when the selector is empty or does not parse
/// (selectors only narrow a request, so the broader request is asked instead).
fn field_selector_requirements(selector: &str) -> Option<Vec<Value>> {
    use crate::selector::{FieldOperator, FieldSelector};
    let parsed = FieldSelector::parse(selector).ok()?;
    let requirements: Vec<Value> = parsed
        .requirements()
        .iter()
        .map(|r| {
            let operator = match r.op {
                FieldOperator::Equals => "In",
                FieldOperator::NotEquals => "NotIn",
            };
            json!({"key": r.field, "operator": operator, "values": [r.value]})
        })
        .collect();
    (!requirements.is_empty()).then_some(requirements)
}

/// A request's label selector as a SubjectAccessReview carries it: `In`, `NotIn`, `Exists`,
/// `DoesNotExist` with their values; `>` and `<` are left out (requirements are ANDed, so the
/// check asked is only broader); nothing when none remains or the selector does not parse.
fn label_selector_requirements(selector: &str) -> Option<Vec<Value>> {
    use crate::selector::{LabelOperator, LabelSelector};
    let parsed = LabelSelector::parse(selector).ok()?;
    let requirements: Vec<Value> = parsed
        .requirements()
        .iter()
        .filter_map(|r| {
            let operator = match r.operator() {
                LabelOperator::Equals | LabelOperator::DoubleEquals | LabelOperator::In => "In",
                LabelOperator::NotEquals | LabelOperator::NotIn => "NotIn",
                LabelOperator::Exists => "Exists",
                LabelOperator::DoesNotExist => "DoesNotExist",
                LabelOperator::GreaterThan | LabelOperator::LessThan => return None,
            };
            let mut requirement = json!({"key": r.key(), "operator": operator});
            if !r.values().is_empty() {
                requirement["values"] = json!(r.values());
            }
            Some(requirement)
        })
        .collect();
    (!requirements.is_empty()).then_some(requirements)
}

impl Authorizer for DelegatedAuthorizer {
    fn authorize<'a>(&'a self, user: &'a UserInfo, request: &'a RequestInfo) -> MaybeBoxed<'a, Decision> {
        if user.groups.iter().any(|g| g == MASTERS) {
            return now(Decision::Allow(String::new()));
        }
        later(async move {
            let spec = access_review_spec(user, request);
            let key = spec.to_string();
            if let Some(decision) = self.answers.get(&key) {
                return decision;
            }
            let review = json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            });
            let answer = match self.kube.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", &review).await {
                Ok(answer) => answer,
                Err(e) => {
                    tracing::warn!(error = %e, "SubjectAccessReview failed");
                    return Decision::Error(format!("authorization failed: {e}"));
                }
            };
            let status = &answer["status"];
            let reason = status["reason"].as_str().unwrap_or("").to_owned();
            let decision = if status["allowed"] == true && status["denied"] != true {
                Decision::Allow(reason)
            } else {
                Decision::Deny(reason)
            };
            self.answers.put(key, decision.clone());
            decision
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::Trusted;

    fn cert(cn: &str) -> ClientCert {
        ClientCert::new(cn.into(), vec![], Trusted { client_ca: false, requestheader: true }, String::new())
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        map
    }

    #[test]
    fn front_proxy_headers() {
        let config = RequestHeaderConfig { allowed_names: vec!["front-proxy-client".into()], ..Default::default() };
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Uid", "u-1"),
            ("X-Remote-Group", "devs"),
            ("X-Remote-Group", "ops"),
            ("X-Remote-Extra-Scopes", "a"),
            ("X-Remote-Extra-Scopes", "b"),
            ("X-Remote-Extra-Example.com%2fteam", "blue"),
        ]);
        let user = config.user(&cert("front-proxy-client"), &h).unwrap().unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, ["devs", "ops", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["a", "b"]);
        assert_eq!(user.extra["example.com/team"], ["blue"]);

        assert!(config.user(&cert("someone-else"), &h).is_err(), "CN not allowed");
        assert_eq!(config.user(&cert("front-proxy-client"), &headers(&[])).unwrap(), None, "no user header");
        let any = RequestHeaderConfig::default();
        assert!(any.user(&cert("anyone"), &h).unwrap().is_some(), "no allowed names: any CN");
    }

    #[test]
    fn extra_keys() {
        for (raw, want) in [("scopes", "scopes"), ("a%2fb", "a/b"), ("bad%zz", "bad%zz"), ("%41", "A")] {
            assert_eq!(unescape_extra_key(raw), want, "{raw}");
        }
    }

    #[test]
    fn review_specs() {
        let user = UserInfo {
            name: "bob".into(),
            uid: "7".into(),
            groups: vec!["g".into()],
            extra: BTreeMap::from([("k".into(), vec!["v".into()])]),
        };
        let info = crate::request_info::parse(
            &http::Method::GET,
            "/apis/stable.example.com/v1/namespaces/ns/crontabs/x/status",
            None,
        );
        assert_eq!(
            access_review_spec(&user, &info),
            json!({"user": "bob", "uid": "7", "groups": ["g"], "extra": {"k": ["v"]},
                   "resourceAttributes": {"namespace": "ns", "verb": "get", "group": "stable.example.com",
                                          "version": "v1", "resource": "crontabs", "subresource": "status", "name": "x"}})
        );
        let info = crate::request_info::parse(&http::Method::GET, "/openapi/v2", None);
        assert_eq!(
            access_review_spec(&UserInfo { name: "bob".into(), ..Default::default() }, &info),
            json!({"user": "bob", "groups": [], "nonResourceAttributes": {"path": "/openapi/v2", "verb": "get"}})
        );
    }

    /// A list's or watch's selectors and the name its field selector requires, in the
    /// SubjectAccessReview, as kube's webhook authorizer writes them (AuthorizeWithSelectors).
    #[test]
    fn review_selectors() {
        let cases = [
            // (method, query, the resourceAttributes beyond namespace/group/version/resource)
            (
                "GET",
                "watch=true&fieldSelector=metadata.name%3Dfoo",
                json!({"verb": "watch", "name": "foo",
                "fieldSelector": {"requirements": [{"key": "metadata.name", "operator": "In", "values": ["foo"]}]}}),
            ),
            (
                "GET",
                "fieldSelector=spec.x!%3Da,metadata.name%3D%3Db&labelSelector=app%3Dweb,tier+in+(b,a),!gone,x>1",
                json!({"verb": "list", "name": "b",
                "fieldSelector": {"requirements": [
                    {"key": "metadata.name", "operator": "In", "values": ["b"]},
                    {"key": "spec.x", "operator": "NotIn", "values": ["a"]}]},
                "labelSelector": {"requirements": [
                    {"key": "app", "operator": "In", "values": ["web"]},
                    {"key": "gone", "operator": "DoesNotExist"},
                    {"key": "tier", "operator": "In", "values": ["a", "b"]}]}}),
            ),
            // A name that is no path segment is not the request's name; selectors still go.
            (
                "GET",
                "fieldSelector=metadata.name%3Da%2Fb",
                json!({"verb": "list",
                "fieldSelector": {"requirements": [{"key": "metadata.name", "operator": "In", "values": ["a/b"]}]}}),
            ),
            // Only `>`/`<`: nothing narrows; a selector that does not parse: nothing at all.
            ("GET", "labelSelector=x>1", json!({"verb": "list"})),
            ("GET", "labelSelector=a%3D%3D%3Db&fieldSelector=nonsense", json!({"verb": "list"})),
            // deletecollection carries selectors, but its name stays empty.
            (
                "DELETE",
                "fieldSelector=metadata.name%3Dfoo",
                json!({"verb": "deletecollection",
                "fieldSelector": {"requirements": [{"key": "metadata.name", "operator": "In", "values": ["foo"]}]}}),
            ),
            // A get carries none.
            ("GET", "", json!({"verb": "list"})),
        ];
        let user = UserInfo { name: "bob".into(), ..Default::default() };
        for (method, query, want) in cases {
            let method = http::Method::from_bytes(method.as_bytes()).unwrap();
            let info = crate::request_info::parse(&method, "/apis/g.example/v1/namespaces/ns/things", Some(query));
            let mut want_attributes =
                json!({"namespace": "ns", "group": "g.example", "version": "v1", "resource": "things"});
            for (k, v) in want.as_object().unwrap() {
                want_attributes[k] = v.clone();
            }
            assert_eq!(access_review_spec(&user, &info)["resourceAttributes"], want_attributes, "{query}");
        }
        let get =
            crate::request_info::parse(&http::Method::GET, "/apis/g.example/v1/things/x", Some("fieldSelector=a%3Db"));
        assert!(access_review_spec(&user, &get)["resourceAttributes"].get("fieldSelector").is_none());
    }
}
