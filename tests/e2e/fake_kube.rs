//! A fake kube-apiserver for the end-to-end tests of cluster mode: kube-apiserver cannot run here,
//! and versa in cluster mode needs one to read the front-proxy configuration from, to delegate
//! authentication (TokenReview) and authorization (SubjectAccessReview) to, to register its
//! APIServices and keep its generated CA (a Secret) in, and to hold the Lease its replicas elect
//! a leader with. This is the one fake the project allows
//! (issue 7), so it answers exactly those endpoints in kube's wire format, with kube's Status
//! objects and messages, and nothing else (404 Status). It is deliberately not a cluster: no
//! discovery or OpenAPI (so `kubectl` drives it with `--raw` only; a fake that claimed groups would
//! mislead versa's own checks), no status subresource, JSON only (no protobuf), no validation
//! beyond what the tests rely on, and no aggregator (APIServices never get status conditions;
//! the tests check their spec). The core group's discovery (`/api/v1`) lists the kinds it
//! stores, so that a policy's `paramKind` of ConfigMap can be found. Lists can be watched (`?watch=true`, as kube-rs's watcher asks:
//! JSON lines of `ADDED`/`MODIFIED`/`DELETED` events after the given resourceVersion, until
//! `timeoutSeconds`), because versa follows the admission configuration and Namespaces that
//! way; the fake keeps every change, so no resourceVersion is ever too old (no 410).
//!
//! Every request must carry `Authorization: Bearer` [`SERVICE_ACCOUNT_TOKEN`] (versa's own
//! identity, written by [`FakeKube::write_kubeconfig`]); every request, authorized or not, is
//! logged ([`FakeKube::requests`]). The server speaks HTTP/1.1 and HTTP/2 (ALPN) over TLS with a
//! CA of its own, and runs on its own single-threaded tokio runtime on its own thread: the tests
//! block their own thread on `kubectl`, and versa must still reach the fake meanwhile. Dropping
//! the [`FakeKube`] stops it and closes every connection.

#![allow(dead_code, reason = "not every test file uses every helper")]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Map, Value, json};
use tokio_rustls::TlsAcceptor;

/// The bearer token of versa's own identity (its service account); the only credential the fake
/// accepts.
pub const SERVICE_ACCOUNT_TOKEN: &str = "versa-e2e-service-account-token";

/// The ConfigMap in `kube-system` where kube-apiserver publishes its client and front-proxy CAs.
pub const AUTHENTICATION_CONFIG_MAP: &str = "extension-apiserver-authentication";

/// What kube-apiserver publishes in [`AUTHENTICATION_CONFIG_MAP`] (its `--client-ca-file` and
/// `--requestheader-*` flags). As kube does, the `requestheader-*` keys are written only when
/// there is a requestheader CA, each list JSON-encoded, an empty list as Go's nil slice: `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthenticationConfig {
    pub client_ca: Option<String>,
    pub requestheader_client_ca: Option<String>,
    pub requestheader_allowed_names: Vec<String>,
    pub requestheader_username_headers: Vec<String>,
    pub requestheader_group_headers: Vec<String>,
    pub requestheader_extra_headers_prefix: Vec<String>,
    pub requestheader_uid_headers: Vec<String>,
}

impl AuthenticationConfig {
    /// The usual front-proxy setup (kubeadm's flags): `X-Remote-User`, `X-Remote-Group`,
    /// `X-Remote-Extra-`, `X-Remote-Uid`, trusted from `ca_pem` for these client names.
    pub fn front_proxy(ca_pem: &str, allowed_names: &[&str]) -> AuthenticationConfig {
        let strings = |s: &[&str]| s.iter().map(|s| s.to_string()).collect();
        AuthenticationConfig {
            client_ca: None,
            requestheader_client_ca: Some(ca_pem.to_string()),
            requestheader_allowed_names: strings(allowed_names),
            requestheader_username_headers: strings(&["X-Remote-User"]),
            requestheader_group_headers: strings(&["X-Remote-Group"]),
            requestheader_extra_headers_prefix: strings(&["X-Remote-Extra-"]),
            requestheader_uid_headers: strings(&["X-Remote-Uid"]),
        }
    }

    /// The ConfigMap's `data`, as kube-apiserver's cluster-authentication-trust controller writes it.
    pub fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        if let Some(ca) = &self.client_ca {
            data.insert("client-ca-file".into(), json!(ca));
        }
        let Some(ca) = &self.requestheader_client_ca else { return data };
        data.insert("requestheader-client-ca-file".into(), json!(ca));
        for (key, list) in [
            ("requestheader-allowed-names", &self.requestheader_allowed_names),
            ("requestheader-username-headers", &self.requestheader_username_headers),
            ("requestheader-group-headers", &self.requestheader_group_headers),
            ("requestheader-extra-headers-prefix", &self.requestheader_extra_headers_prefix),
            ("requestheader-uid-headers", &self.requestheader_uid_headers),
        ] {
            let encoded = if list.is_empty() { "null".to_string() } else { json!(list).to_string() };
            data.insert(key.into(), json!(encoded));
        }
        data
    }
}

/// A user that a token authenticates as (TokenReview `status.user`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    pub fn new(name: &str, groups: &[&str]) -> User {
        User { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..User::default() }
    }

    /// `UserInfo` JSON; empty fields are omitted, as kube does.
    fn to_json(&self) -> Value {
        let mut user = json!({"username": self.name});
        if !self.uid.is_empty() {
            user["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            user["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            user["extra"] = json!(self.extra);
        }
        user
    }
}

/// A SubjectAccessReview's answer (`status`). The default is kube's "no opinion" (not allowed,
/// not denied, no reason), which is how RBAC forbids what no rule allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    pub denied: bool,
    pub reason: String,
}

impl Verdict {
    pub fn allow() -> Verdict {
        Verdict { allowed: true, ..Verdict::default() }
    }

    /// An explicit deny (`denied: true`), as a deny-capable authorizer webhook answers.
    pub fn deny(reason: &str) -> Verdict {
        Verdict { allowed: false, denied: true, reason: reason.into() }
    }
}

type Policy = Arc<dyn Fn(&Value) -> Verdict + Send + Sync>;

/// A running fake kube-apiserver.
pub struct FakeKube {
    state: Arc<Mutex<State>>,
    addr: SocketAddr,
    ca_pem: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeKube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeKube").field("addr", &self.addr).finish_non_exhaustive()
    }
}

struct State {
    authentication: Option<(AuthenticationConfig, String)>,
    tokens: BTreeMap<String, User>,
    token_reviews: usize,
    policy: Policy,
    access_reviews: Vec<Value>,
    /// APIServices and Secrets by (resource, namespace, name); APIServices have namespace "".
    objects: BTreeMap<(&'static str, String, String), Value>,
    requests: Vec<(String, String)>,
    /// The last resourceVersion handed out: one counter for everything, like etcd's revision.
    revision: u64,
    created: String,
    /// Every change, in order, for watches.
    changes: Vec<Change>,
    /// The revision of the last change, for watches waiting for the next one.
    changed: tokio::sync::watch::Sender<u64>,
}

/// One change of a stored object, as a watch event tells it.
struct Change {
    revision: u64,
    resource: &'static str,
    namespace: String,
    kind: &'static str,
    object: Value,
}

/// A watch asked for: the list it follows and where it starts.
struct Watch {
    resource: &'static str,
    namespace: String,
    from: u64,
    timeout: std::time::Duration,
}

/// What a request gets: one answer, or a stream of watch events.
enum Reply {
    Answer(Answer),
    Watch(Watch),
}

impl FakeKube {
    /// Makes a CA and a serving certificate and starts serving on a free loopback port.
    pub fn start() -> FakeKube {
        FakeKube::start_at("127.0.0.1:0".parse().unwrap(), tls())
    }

    /// Like [`FakeKube::start`], on `addr` and with `tls` made earlier by [`tls`]: a
    /// kube-apiserver that comes up after its clients were given its address and CA.
    pub fn start_at(addr: SocketAddr, tls: (String, Arc<rustls::ServerConfig>)) -> FakeKube {
        let (ca_pem, config) = tls;
        let acceptor = TlsAcceptor::from(config);
        let state = Arc::new(Mutex::new(State {
            authentication: None,
            tokens: BTreeMap::new(),
            token_reviews: 0,
            policy: Arc::new(|_| Verdict::default()),
            access_reviews: Vec::new(),
            objects: BTreeMap::new(),
            requests: Vec::new(),
            revision: 0,
            created: now(),
            changes: Vec::new(),
            changed: tokio::sync::watch::Sender::new(0),
        }));
        let listener = std::net::TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("fake-kube-apiserver".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    let accept = async {
                        loop {
                            let Ok((tcp, _)) = listener.accept().await else { continue };
                            tokio::spawn(serve_connection(thread_state.clone(), acceptor.clone(), tcp));
                        }
                    };
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept => {}
                    }
                });
                // Dropping the runtime here drops every connection task with it.
            })
            .unwrap();
        let fake = FakeKube { state, addr, ca_pem, stop: Some(stop), thread: Some(thread) };
        // The namespaces every cluster has (and the tests' own), Active.
        for name in ["default", "kube-system", "kube-public", "kube-node-lease", "versa-system", "versa", "doomed"] {
            fake.put_namespace(json!({"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}));
        }
        fake
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The CA certificate (PEM) that signed the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Writes a kubeconfig for versa's own identity: bearer [`SERVICE_ACCOUNT_TOKEN`], the fake's
    /// CA inline as `certificate-authority-data`.
    pub fn write_kubeconfig(&self, path: &Path) {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake-kube\n  cluster:\n    server: {}\n    \
             certificate-authority-data: {ca}\nusers:\n- name: versa\n  user:\n    token: {SERVICE_ACCOUNT_TOKEN}\n\
             contexts:\n- name: versa@fake-kube\n  context:\n    cluster: fake-kube\n    user: versa\n\
             current-context: versa@fake-kube\n",
            self.url()
        );
        std::fs::write(path, kubeconfig).unwrap();
    }

    /// Publishes `config` in [`AUTHENTICATION_CONFIG_MAP`] under a new resourceVersion.
    pub fn set_authentication_config(&self, config: AuthenticationConfig) {
        let mut state = self.state.lock().unwrap();
        let version = state.next_revision();
        state.authentication = Some((config, version));
    }

    /// Makes TokenReview authenticate `token` as `user`.
    pub fn add_token(&self, token: &str, user: User) {
        self.state.lock().unwrap().tokens.insert(token.into(), user);
    }

    /// How many TokenReviews arrived so far.
    pub fn token_reviews(&self) -> usize {
        self.state.lock().unwrap().token_reviews
    }

    /// How SubjectAccessReviews are answered: `policy` gets each review's `spec`. It runs without
    /// the fake's lock held, so it may call the fake.
    pub fn set_policy(&self, policy: impl Fn(&Value) -> Verdict + Send + Sync + 'static) {
        self.state.lock().unwrap().policy = Arc::new(policy);
    }

    /// Every SubjectAccessReview `spec` received, in order.
    pub fn access_reviews(&self) -> Vec<Value> {
        self.state.lock().unwrap().access_reviews.clone()
    }

    /// The APIServices now, by name.
    pub fn api_services(&self) -> BTreeMap<String, Value> {
        self.state.lock().unwrap().list(&API_SERVICE, "")
    }

    /// Stores an APIService as if someone had created it (e.g. a local one such as `v1.apps`,
    /// which has no `spec.service`), replacing any of that name.
    pub fn put_api_service(&self, object: Value) {
        self.state.lock().unwrap().put(&API_SERVICE, "", object);
    }

    /// The Secrets of `namespace` now, by name.
    /// The Leases in `namespace` (leader election in cluster mode), by name.
    pub fn leases(&self, namespace: &str) -> BTreeMap<String, Value> {
        self.state.lock().unwrap().list(&LEASE, namespace)
    }

    pub fn secrets(&self, namespace: &str) -> BTreeMap<String, Value> {
        self.state.lock().unwrap().list(&SECRET, namespace)
    }

    /// Stores a Secret in `namespace`, replacing any of that name.
    /// Stores a Namespace (as kube-apiserver would hold it).
    pub fn put_namespace(&self, object: Value) {
        self.state.lock().unwrap().put(&NAMESPACE, "", object);
    }

    /// Stores an admission configuration object (`kind` names it: `ValidatingAdmissionPolicy`, ...).
    pub fn put_admission(&self, object: Value) {
        let kind = object["kind"].as_str().unwrap_or_default();
        let kind = ADMISSION_KINDS.iter().find(|k| k.kind == kind).expect("an admission configuration kind");
        self.state.lock().unwrap().put(kind, "", object);
    }

    /// Stores a ConfigMap (policies' parameters).
    pub fn put_config_map(&self, namespace: &str, object: Value) {
        self.state.lock().unwrap().put(&CONFIG_MAP, namespace, object);
    }

    pub fn put_secret(&self, namespace: &str, object: Value) {
        self.state.lock().unwrap().put(&SECRET, namespace, object);
    }

    /// Every request so far, authorized or not: method and path with query.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().requests.clone()
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A resource the fake stores: enough to build kube's objects, lists and Status details.
struct Kind {
    api_version: &'static str,
    kind: &'static str,
    group: &'static str,
    resource: &'static str,
}

const API_SERVICE: Kind = Kind {
    api_version: "apiregistration.k8s.io/v1",
    kind: "APIService",
    group: "apiregistration.k8s.io",
    resource: "apiservices",
};
const SECRET: Kind = Kind { api_version: "v1", kind: "Secret", group: "", resource: "secrets" };
const CONFIG_MAP: Kind = Kind { api_version: "v1", kind: "ConfigMap", group: "", resource: "configmaps" };
const NAMESPACE: Kind = Kind { api_version: "v1", kind: "Namespace", group: "", resource: "namespaces" };
/// The admission configuration kinds versa follows in cluster mode (all cluster-scoped).
const ADMISSION_KINDS: [Kind; 6] = [
    admission_kind("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
    admission_kind("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
    admission_kind("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
    admission_kind("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
    admission_kind("MutatingAdmissionPolicy", "mutatingadmissionpolicies"),
    admission_kind("MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings"),
];

const fn admission_kind(kind: &'static str, resource: &'static str) -> Kind {
    Kind { api_version: "admissionregistration.k8s.io/v1", kind, group: "admissionregistration.k8s.io", resource }
}
const LEASE: Kind =
    Kind { api_version: "coordination.k8s.io/v1", kind: "Lease", group: "coordination.k8s.io", resource: "leases" };

impl Kind {
    /// `apiservices.apiregistration.k8s.io`, `secrets`: how kube names the resource in messages.
    fn qualified(&self) -> String {
        if self.group.is_empty() { self.resource.to_string() } else { format!("{}.{}", self.resource, self.group) }
    }

    /// A Status's `details` for the object `name`.
    fn details(&self, name: &str) -> Value {
        let mut details = json!({"name": name, "kind": self.resource});
        if !self.group.is_empty() {
            details["group"] = json!(self.group);
        }
        details
    }

    fn not_found(&self, name: &str) -> Answer {
        failure(404, "NotFound", format!("{} \"{name}\" not found", self.qualified()), self.details(name))
    }
}

/// An HTTP status code and a JSON body. Handlers return `Err` with a failure Status.
type Answer = (u16, Value);

/// The parts of a request the handlers look at.
struct Call<'a> {
    method: &'a str,
    query: &'a str,
    content_type: &'a str,
    body: &'a [u8],
}

/// A CA and a serving certificate for `127.0.0.1` and `localhost`: the CA's PEM and the server
/// configuration.
pub fn tls() -> (String, Arc<rustls::ServerConfig>) {
    versa_e2e::serving_tls("versa e2e fake kube-apiserver CA", "kube-apiserver", &[b"h2", b"http/1.1"])
}

async fn serve_connection(state: Arc<Mutex<State>>, acceptor: TlsAcceptor, tcp: tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
    let Ok(tls) = acceptor.accept(tcp).await else { return };
    let service = service_fn(move |request| handle(state.clone(), request));
    // `auto` tells HTTP/2 from HTTP/1.1 by the connection preface, which follows the ALPN choice.
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tls), service)
        .await;
}

async fn handle(
    state: Arc<Mutex<State>>,
    request: http::Request<Incoming>,
) -> Result<http::Response<Reading>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let (code, body) = match route(&state, &parts, &body) {
        Ok(Reply::Watch(watch)) => (200, Reading::Events(events(state, watch))),
        Ok(Reply::Answer((code, answer))) | Err((code, answer)) => {
            (code, Reading::Whole(Some(Bytes::from(answer.to_string()))))
        }
    };
    Ok(http::Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap())
}

/// An answer's body: whole, or watch events as they happen.
enum Reading {
    Whole(Option<Bytes>),
    Events(tokio::sync::mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for Reading {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Reading::Whole(bytes) => std::task::Poll::Ready(bytes.take().map(|b| Ok(hyper::body::Frame::data(b)))),
            Reading::Events(events) => events.poll_recv(cx).map(|line| line.map(|b| Ok(hyper::body::Frame::data(b)))),
        }
    }
}

/// Sends `watch`'s events, one JSON line each, from its resourceVersion on, until its timeout or
/// until the client goes away.
fn events(state: Arc<Mutex<State>>, watch: Watch) -> tokio::sync::mpsc::Receiver<Bytes> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let mut changed = state.lock().unwrap().changed.subscribe();
    tokio::spawn(async move {
        let until = tokio::time::Instant::now() + watch.timeout;
        let mut seen = watch.from;
        loop {
            let lines: Vec<Bytes> = {
                let state = state.lock().unwrap();
                let new = state.changes.iter().filter(|c| c.revision > seen);
                let lines = new
                    .filter(|c| {
                        c.resource == watch.resource
                            && (c.namespace == watch.namespace || watch.namespace == ALL_NAMESPACES)
                    })
                    .map(|c| Bytes::from(format!("{}\n", json!({"type": c.kind, "object": c.object}))))
                    .collect();
                seen = state.revision;
                lines
            };
            for line in lines {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
            tokio::select! {
                moved = changed.changed() => if moved.is_err() { return },
                () = tokio::time::sleep_until(until) => return,
                () = tx.closed() => return,
            }
        }
    });
    rx
}

/// Logs the request, checks the credential and dispatches on method and path.
fn route(state: &Mutex<State>, parts: &http::request::Parts, body: &[u8]) -> Result<Reply, Answer> {
    let path = parts.uri.path();
    let path_and_query = parts.uri.path_and_query().map_or(path, |p| p.as_str());
    state.lock().unwrap().requests.push((parts.method.to_string(), path_and_query.to_string()));
    let header = |name| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if header(http::header::AUTHORIZATION) != format!("Bearer {SERVICE_ACCOUNT_TOKEN}") {
        return Err(failure(401, "Unauthorized", "Unauthorized".into(), Value::Null));
    }
    let call = Call {
        method: parts.method.as_str(),
        query: parts.uri.query().unwrap_or_default(),
        content_type: header(http::header::CONTENT_TYPE),
        body,
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (call.method, segments.as_slice()) {
        ("GET", ["api", "v1", "namespaces", "kube-system", "configmaps", AUTHENTICATION_CONFIG_MAP]) => {
            state.lock().unwrap().authentication_config_map().map(Reply::Answer)
        }
        ("POST", ["apis", "authentication.k8s.io", "v1", "tokenreviews"]) => {
            state.lock().unwrap().token_review(&call).map(Reply::Answer)
        }
        ("POST", ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"]) => {
            subject_access_review(state, &call).map(Reply::Answer)
        }
        (_, ["apis", "apiregistration.k8s.io", "v1", "apiservices", rest @ ..]) if rest.len() <= 1 => {
            state.lock().unwrap().objects(&API_SERVICE, "", rest.first().copied(), &call)
        }
        // The core group's resources, for discovery of a policy's paramKind.
        ("GET", ["api", "v1"]) => Ok(Reply::Answer((200, core_resources()))),
        (_, ["api", "v1", "namespaces", namespace, "configmaps", rest @ ..]) if rest.len() <= 1 => {
            state.lock().unwrap().objects(&CONFIG_MAP, namespace, rest.first().copied(), &call)
        }
        ("GET", ["api", "v1", "configmaps"]) => state.lock().unwrap().objects(&CONFIG_MAP, ALL_NAMESPACES, None, &call),
        (_, ["api", "v1", "namespaces", namespace, "secrets", rest @ ..]) if rest.len() <= 1 => {
            state.lock().unwrap().objects(&SECRET, namespace, rest.first().copied(), &call)
        }
        (_, ["apis", "coordination.k8s.io", "v1", "namespaces", namespace, "leases", rest @ ..]) if rest.len() <= 1 => {
            state.lock().unwrap().objects(&LEASE, namespace, rest.first().copied(), &call)
        }
        (_, ["api", "v1", "namespaces", rest @ ..]) if rest.len() <= 1 => {
            state.lock().unwrap().objects(&NAMESPACE, "", rest.first().copied(), &call)
        }
        (_, ["apis", "admissionregistration.k8s.io", "v1", resource, rest @ ..]) if rest.len() <= 1 => {
            let Some(kind) = ADMISSION_KINDS.iter().find(|k| k.resource == *resource) else {
                return Err(failure(
                    404,
                    "NotFound",
                    "the server could not find the requested resource".into(),
                    json!({}),
                ));
            };
            state.lock().unwrap().objects(kind, "", rest.first().copied(), &call)
        }
        _ => Err(failure(404, "NotFound", "the server could not find the requested resource".into(), json!({}))),
    }
}

/// The `APIResourceList` of `/api/v1`, for the kinds the fake stores.
fn core_resources() -> Value {
    let resource = |name: &str, singular: &str, kind: &str, namespaced: bool| {
        json!({"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind,
               "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
    };
    json!({
        "kind": "APIResourceList", "groupVersion": "v1",
        "resources": [
            resource("configmaps", "configmap", "ConfigMap", true),
            resource("namespaces", "namespace", "Namespace", false),
            resource("secrets", "secret", "Secret", true),
        ],
    })
}

/// The namespace of a list or watch across all namespaces.
const ALL_NAMESPACES: &str = "*";

/// SubjectAccessReview: record the spec, ask the policy without holding the lock, echo the spec.
fn subject_access_review(state: &Mutex<State>, call: &Call) -> Result<Answer, Answer> {
    let spec = decode(call.body)?.get("spec").cloned().unwrap_or_else(|| json!({}));
    let policy = {
        let mut state = state.lock().unwrap();
        state.access_reviews.push(spec.clone());
        state.policy.clone()
    };
    let verdict = policy(&spec);
    let mut status = json!({"allowed": verdict.allowed});
    if verdict.denied {
        status["denied"] = json!(true);
    }
    if !verdict.reason.is_empty() {
        status["reason"] = json!(verdict.reason);
    }
    Ok((201, review("authorization.k8s.io/v1", "SubjectAccessReview", spec, status)))
}

/// A TokenReview or SubjectAccessReview answer: the request's spec and the status.
fn review(api_version: &str, kind: &str, spec: Value, status: Value) -> Value {
    json!({
        "kind": kind, "apiVersion": api_version, "metadata": {"creationTimestamp": null},
        "spec": spec, "status": status,
    })
}

impl State {
    fn next_revision(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }

    fn authentication_config_map(&self) -> Result<Answer, Answer> {
        let (config, version) =
            self.authentication.as_ref().ok_or_else(|| CONFIG_MAP.not_found(AUTHENTICATION_CONFIG_MAP))?;
        let metadata = json!({
            "name": AUTHENTICATION_CONFIG_MAP, "namespace": "kube-system",
            "uid": uid(0), "resourceVersion": version, "creationTimestamp": self.created,
        });
        Ok((200, json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": metadata, "data": config.data()})))
    }

    /// TokenReview. Like kube, `authenticated` and `error` are omitted when empty, and an unknown
    /// token gets an empty user.
    fn token_review(&mut self, call: &Call) -> Result<Answer, Answer> {
        let spec = decode(call.body)?.get("spec").cloned().unwrap_or_else(|| json!({}));
        self.token_reviews += 1;
        let status = match self.tokens.get(spec["token"].as_str().unwrap_or_default()) {
            Some(user) => {
                let mut status = json!({"authenticated": true, "user": user.to_json()});
                if spec["audiences"].as_array().is_some_and(|a| !a.is_empty()) {
                    status["audiences"] = spec["audiences"].clone();
                }
                status
            }
            None => json!({"user": {}, "error": "invalid bearer token"}),
        };
        Ok((201, review("authentication.k8s.io/v1", "TokenReview", spec, status)))
    }

    /// The stored objects of one kind in one namespace, by name.
    fn list(&self, kind: &Kind, namespace: &str) -> BTreeMap<String, Value> {
        self.objects
            .iter()
            .filter(|((resource, ns, _), _)| {
                *resource == kind.resource && (ns == namespace || namespace == ALL_NAMESPACES)
            })
            .map(|((_, _, name), object)| (name.clone(), object.clone()))
            .collect()
    }

    /// Stores `object` with the metadata the server assigns; keeps uid and creation time when it
    /// replaces an object.
    fn put(&mut self, kind: &Kind, namespace: &str, mut object: Value) -> Value {
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let key = (kind.resource, namespace.to_string(), name);
        let (uid, created) = match self.objects.get(&key) {
            Some(old) => (old["metadata"]["uid"].clone(), old["metadata"]["creationTimestamp"].clone()),
            None => (json!(uid(self.revision + 1)), json!(now())),
        };
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        let revision = self.next_revision();
        let metadata = &mut object["metadata"];
        metadata["uid"] = uid;
        metadata["creationTimestamp"] = created;
        metadata["resourceVersion"] = json!(revision);
        if !namespace.is_empty() {
            metadata["namespace"] = json!(namespace);
        }
        if kind.kind == "Secret" {
            normalize_secret(&mut object);
        }
        let event = if self.objects.insert(key, object.clone()).is_some() { "MODIFIED" } else { "ADDED" };
        self.record(event, kind, namespace, object.clone());
        object
    }

    /// Keeps a change for watches and wakes them.
    fn record(&mut self, event: &'static str, kind: &Kind, namespace: &str, object: Value) {
        if event == "DELETED" {
            // A deletion is a change of its own, as in kube (etcd's revision moves).
            self.next_revision();
        }
        let change = Change {
            revision: self.revision,
            resource: kind.resource,
            namespace: namespace.to_string(),
            kind: event,
            object,
        };
        self.changes.push(change);
        self.changed.send_replace(self.revision);
    }

    /// The REST verbs on APIServices and Secrets, with kube's semantics and Status answers.
    fn objects(&mut self, kind: &Kind, namespace: &str, name: Option<&str>, call: &Call) -> Result<Reply, Answer> {
        let not_found =
            || failure(404, "NotFound", "the server could not find the requested resource".into(), json!({}));
        let Some(name) = name else {
            let param = |key: &str| {
                call.query.split('&').filter_map(|pair| pair.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v)
            };
            return match call.method {
                "GET" if matches!(param("watch"), Some("true" | "1")) => Ok(Reply::Watch(Watch {
                    resource: kind.resource,
                    namespace: namespace.to_string(),
                    from: param("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(self.revision),
                    timeout: std::time::Duration::from_secs(
                        param("timeoutSeconds").and_then(|v| v.parse().ok()).unwrap_or(300),
                    ),
                })),
                "GET" => Ok(Reply::Answer((200, self.list_answer(kind, namespace, call.query)))),
                "POST" => self.create(kind, namespace, decode(call.body)?).map(Reply::Answer),
                _ => Err(not_found()),
            };
        };
        self.object(kind, namespace, name, call).map(Reply::Answer)
    }

    /// The REST verbs on one object.
    fn object(&mut self, kind: &Kind, namespace: &str, name: &str, call: &Call) -> Result<Answer, Answer> {
        let not_found =
            || failure(404, "NotFound", "the server could not find the requested resource".into(), json!({}));
        let key = (kind.resource, namespace.to_string(), name.to_string());
        let existing = self.objects.get(&key).cloned().ok_or_else(|| kind.not_found(name))?;
        match call.method {
            "GET" => Ok((200, existing)),
            "PUT" => self.update(kind, namespace, name, &existing, decode(call.body)?),
            "PATCH" if call.content_type.starts_with("application/merge-patch+json") => {
                let mut object = existing.clone();
                merge_patch(&mut object, &decode(call.body)?);
                self.update(kind, namespace, name, &existing, object)
            }
            "PATCH" => {
                let message = "the body of the request was in an unknown format - accepted media types include: \
                               application/merge-patch+json";
                Err(failure(415, "UnsupportedMediaType", message.into(), json!({})))
            }
            "DELETE" => {
                self.objects.remove(&key);
                self.record("DELETED", kind, namespace, existing.clone());
                let mut details = kind.details(name);
                details["uid"] = existing["metadata"]["uid"].clone();
                Ok((
                    200,
                    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
                ))
            }
            _ => Err(not_found()),
        }
    }

    /// A `<Kind>List` of the objects matching the query's `labelSelector`. As from kube, the
    /// items carry no `apiVersion` and `kind`.
    fn list_answer(&self, kind: &Kind, namespace: &str, query: &str) -> Value {
        let selector = query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == "labelSelector")
            .map(|(_, value)| percent_decode(value))
            .unwrap_or_default();
        let mut items: Vec<Value> = self.list(kind, namespace).into_values().collect();
        items.retain(|object| selects(&selector, &object["metadata"]["labels"]));
        for fields in items.iter_mut().filter_map(Value::as_object_mut) {
            fields.remove("apiVersion");
            fields.remove("kind");
        }
        json!({
            "kind": format!("{}List", kind.kind), "apiVersion": kind.api_version,
            "metadata": {"resourceVersion": self.revision.to_string()}, "items": items,
        })
    }

    /// POST: 409 AlreadyExists if the name is taken.
    fn create(&mut self, kind: &Kind, namespace: &str, object: Value) -> Result<Answer, Answer> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            let message = format!(
                "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                kind.kind
            );
            return Err(failure(422, "Invalid", message, json!({"kind": kind.kind})));
        }
        if self.objects.contains_key(&(kind.resource, namespace.to_string(), name.to_string())) {
            let message = format!("{} \"{name}\" already exists", kind.qualified());
            return Err(failure(409, "AlreadyExists", message, kind.details(name)));
        }
        Ok((201, self.put(kind, namespace, object)))
    }

    /// PUT (and PATCH after merging): the name must match, and a resourceVersion, when given,
    /// must be the current one (409 Conflict); without one the update is unconditional.
    fn update(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        existing: &Value,
        object: Value,
    ) -> Result<Answer, Answer> {
        let body_name = object["metadata"]["name"].as_str().unwrap_or_default();
        if body_name != name {
            let message = format!("the name of the object ({body_name}) does not match the name on the URL ({name})");
            return Err(failure(400, "BadRequest", message, json!({})));
        }
        let version = object["metadata"]["resourceVersion"].as_str().unwrap_or_default();
        if !version.is_empty() && version != existing["metadata"]["resourceVersion"] {
            let message = format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your \
                 changes to the latest version and try again",
                kind.qualified()
            );
            return Err(failure(409, "Conflict", message, kind.details(name)));
        }
        Ok((200, self.put(kind, namespace, object)))
    }
}

/// A request body as JSON, or kube's 400 for one that is not.
fn decode(body: &[u8]) -> Result<Value, Answer> {
    serde_json::from_slice(body).map_err(|e| {
        failure(400, "BadRequest", format!("the body of the request could not be decoded: {e}"), json!({}))
    })
}

/// A failure `Status` in kube's shape; `details` is left out when `Null` (as in kube's 401).
fn failure(code: u16, reason: &str, message: String, details: Value) -> Answer {
    let mut status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    if !details.is_null() {
        status["details"] = details;
    }
    (code, status)
}

/// What kube's Secret strategy does on write: `stringData` merged into `data` (base64) and
/// dropped; `type` defaults to `Opaque`.
fn normalize_secret(secret: &mut Value) {
    if let Some(Value::Object(strings)) = secret.as_object_mut().and_then(|s| s.remove("stringData")) {
        for (key, value) in strings {
            secret["data"][key] =
                json!(base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or_default()));
        }
    }
    if secret["type"].is_null() {
        secret["type"] = json!("Opaque");
    }
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let Value::Object(fields) = target else { return };
    for (key, value) in patch {
        if value.is_null() {
            fields.remove(key);
        } else {
            merge_patch(fields.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Whether `labels` match an equality-based label selector: `k=v`, `k==v`, `k!=v`, `k`, `!k`,
/// comma-separated (set-based terms are not supported).
fn selects(selector: &str, labels: &Value) -> bool {
    selector.split(',').map(str::trim).filter(|term| !term.is_empty()).all(|term| {
        let label = |key: &str| labels.get(key.trim()).and_then(Value::as_str);
        if let Some((key, value)) = term.split_once("!=") {
            label(key) != Some(value.trim())
        } else if let Some((key, value)) = term.split_once('=') {
            label(key) == Some(value.trim_start_matches('=').trim())
        } else if let Some(key) = term.strip_prefix('!') {
            label(key).is_none()
        } else {
            label(term).is_some()
        }
    })
}

/// Decodes a query value as Go's `url.ParseQuery` does: `%XX` escapes, `+` as a space.
fn percent_decode(value: &str) -> String {
    let mut bytes = Vec::with_capacity(value.len());
    let mut input = value.bytes();
    while let Some(byte) = input.next() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex: Vec<u8> = input.by_ref().take(2).collect();
                match std::str::from_utf8(&hex).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(decoded) => bytes.push(decoded),
                    None => bytes.extend([b'%'].iter().chain(&hex)),
                }
            }
            _ => bytes.push(byte),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A UUID-shaped uid, distinct per `n`.
fn uid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// The current time in RFC 3339 (UTC, seconds), as `metadata.creationTimestamp`.
fn now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (non-negative here).
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let (day, month) = (doy - (153 * mp + 2) / 5 + 1, if mp < 10 { mp + 3 } else { mp - 9 });
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3_600, rem % 3_600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors_merge_patches_and_dates() {
        let labels = json!({"app.kubernetes.io/managed-by": "versa", "tier": "api"});
        let query = percent_decode("app.kubernetes.io%2Fmanaged-by%3Dversa,tier+!%3D+web");
        assert_eq!(query, "app.kubernetes.io/managed-by=versa,tier != web");
        for (selector, expected) in [(query.as_str(), true), ("tier==api", true), ("tier=web", false), ("!tier", false)]
        {
            assert_eq!(selects(selector, &labels), expected, "{selector}");
        }
        let mut object = json!({"spec": {"a": 1, "b": {"c": 2}}, "keep": true});
        merge_patch(&mut object, &json!({"spec": {"a": null, "b": {"d": 3}}}));
        assert_eq!(object, json!({"spec": {"b": {"c": 2, "d": 3}}, "keep": true}));
        let now = now();
        assert!(now.len() == 20 && now.starts_with("20") && now.ends_with('Z'), "{now}");
    }
}
