//! Who is asking, and may they. Two traits keep handlers independent of how either question is
//! answered: [`Authenticator`] turns a request's credentials into a [`UserInfo`], and
//! [`Authorizer`] decides on (user, verb, group, resource, subresource, namespace, name) or a
//! non-resource path. Standalone mode uses client certificates issued by versa's CA and lets
//! only `system:masters` in; cluster mode uses the delegated implementations in `cluster/delegated.rs`
//! (front-proxy headers, client CA, TokenReview, SubjectAccessReview).
//!
//! Both questions are asked on every request, and most answers are known at once — a
//! connection's certificate names its user (made once per connection: [`ClientCert::user`]), a
//! member of `system:masters` may do anything — so the traits answer with a [`MaybeBoxed`]
//! future, boxed only when it has to wait (a TokenReview, a ServiceAccount's lookup).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::future::{Either, Ready};

use crate::request_info::RequestInfo;
pub use crate::tls::Trusted;

/// A boxed future (the traits are object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An answer known at once ([`now`]), or a boxed future of it ([`later`]).
pub type MaybeBoxed<'a, T> = Either<Ready<T>, BoxFuture<'a, T>>;

/// An answer known at once: nothing is boxed.
pub fn now<'a, T>(value: T) -> MaybeBoxed<'a, T> {
    Either::Left(futures_util::future::ready(value))
}

/// An answer that has to wait for `future`.
pub fn later<'a, T>(future: impl Future<Output = T> + Send + 'a) -> MaybeBoxed<'a, T> {
    Either::Right(Box::pin(future))
}

/// What an authenticator answers: the user, `None` for "no credentials this authenticator
/// knows", or a failure.
pub type Authenticated = Result<Option<Arc<UserInfo>>, AuthError>;

/// An authenticated user, as Kubernetes' `user.Info`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The client certificate of a connection: its subject's common name and organizations
/// (Kubernetes reads user and groups from these), which CAs it chains to, and its credential id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub trusted: Trusted,
    /// `X509SHA256=<hex SHA-256 of the DER>`: kube's x509 authenticator puts it in the user's
    /// extra as `authentication.kubernetes.io/credential-id` (it shows in audit events and
    /// SubjectAccessReviews).
    pub credential_id: String,
    /// The user it names, made once (for every request of the connection).
    user: Arc<UserInfo>,
}

impl ClientCert {
    /// A certificate's subject, `trusted` as the TLS layer found it, and its credential id.
    pub fn new(common_name: String, organizations: Vec<String>, trusted: Trusted, credential_id: String) -> Self {
        let mut groups = organizations.clone();
        add_authenticated(&mut groups);
        let extra = BTreeMap::from([(CREDENTIAL_ID_KEY.to_owned(), vec![credential_id.clone()])]);
        let user = Arc::new(UserInfo { name: common_name.clone(), groups, extra, ..Default::default() });
        ClientCert { common_name, organizations, trusted, credential_id, user }
    }

    /// Reads the subject of a DER certificate; `trusted` is what the TLS layer found.
    pub fn from_der(der: &[u8], trusted: Trusted) -> Option<ClientCert> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = cert.subject();
        let common_name = subject.iter_common_name().next().and_then(|c| c.as_str().ok()).unwrap_or("").to_string();
        let organizations = subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect();
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        Some(ClientCert::new(common_name, organizations, trusted, format!("X509SHA256={hex}")))
    }

    /// The user a certificate from the client CA names: CN, with the O entries as groups, and
    /// the certificate's credential id as kube's x509 authenticator records it.
    pub fn user(&self) -> Arc<UserInfo> {
        self.user.clone()
    }
}

/// Adds `system:authenticated` to an authenticated user's groups, as kube does.
pub fn add_authenticated(groups: &mut Vec<String>) {
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_string());
    }
}

/// The user-extra key of the credential a user authenticated with (kube's `CredentialIDKey`).
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// What a request presents.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    pub client_cert: Option<&'a ClientCert>,
    pub headers: &'a http::HeaderMap,
}

/// A failure to authenticate (as opposed to "no credentials").
#[derive(Debug, thiserror::Error)]
#[error("authentication failed: {0}")]
pub struct AuthError(pub String);

/// Turns credentials into a user; `Ok(None)` means "no credentials this authenticator knows".
pub trait Authenticator: Send + Sync + std::fmt::Debug {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> MaybeBoxed<'a, Authenticated>;
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, with the authorizer's reason (audited as `authorization.k8s.io/reason`; kube's
    /// privileged-group authorizer gives none).
    Allow(String),
    /// Denied, with an optional reason appended to the 403 message.
    Deny(String),
    /// The authorizer could not decide (its backend failed): 500.
    Error(String),
}

/// Decides whether a user may make a request.
pub trait Authorizer: Send + Sync + std::fmt::Debug {
    fn authorize<'a>(&'a self, user: &'a UserInfo, request: &'a RequestInfo) -> MaybeBoxed<'a, Decision>;

    /// The RBAC policy the authorizer decides with, when it is standalone's RBAC authorizer:
    /// what SelfSubjectRulesReviews list and the escalation check compares with.
    fn policy(&self) -> BoxFuture<'_, Option<Arc<crate::rbac::Policy>>> {
        Box::pin(async { None })
    }

    /// Why the authorizer cannot decide as it should yet (`/readyz` fails with it), if so.
    fn not_ready(&self) -> Option<&'static str> {
        None
    }
}

/// Standalone authentication: a client certificate issued by versa's CA; its CN is the user,
/// its O entries the groups.
#[derive(Debug, Default)]
pub struct ClientCertAuthenticator;

impl Authenticator for ClientCertAuthenticator {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> MaybeBoxed<'a, Authenticated> {
        now(Ok(credentials.client_cert.filter(|c| c.trusted.client_ca).map(ClientCert::user)))
    }
}

/// Several authenticators asked in order, as kube's union authenticator: the first user found
/// wins; when none finds one, the first failure (a presented credential that is wrong) is the
/// answer, else "no credentials".
#[derive(Debug)]
pub struct UnionAuthenticator(pub Vec<Arc<dyn Authenticator>>);

impl Authenticator for UnionAuthenticator {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> MaybeBoxed<'a, Authenticated> {
        // The answers known at once are taken at once; from the first that has to wait on, the
        // rest are asked in a boxed future.
        let mut failure = None;
        for (i, authenticator) in self.0.iter().enumerate() {
            let answer = match authenticator.authenticate(credentials) {
                Either::Left(answer) => answer.into_inner(),
                Either::Right(waiting) => {
                    let mut rest = self.0[i + 1..].iter();
                    return later(async move {
                        let mut answer = waiting.await;
                        loop {
                            if let Some(user) = found(answer, &mut failure) {
                                return Ok(Some(user));
                            }
                            match rest.next() {
                                Some(authenticator) => answer = authenticator.authenticate(credentials).await,
                                None => return failure.map_or(Ok(None), Err),
                            }
                        }
                    });
                }
            };
            if let Some(user) = found(answer, &mut failure) {
                return now(Ok(Some(user)));
            }
        }
        now(failure.map_or(Ok(None), Err))
    }
}

/// The user one of a union's authenticators found, if any; its failure, if it is the first,
/// goes to `failure`.
fn found(answer: Authenticated, failure: &mut Option<AuthError>) -> Option<Arc<UserInfo>> {
    match answer {
        Ok(user) => user,
        Err(e) => {
            failure.get_or_insert(e);
            None
        }
    }
}

/// Standalone authorization: members of `system:masters` may do anything; every authenticated
/// user may read what kube's bootstrap policy lets `system:authenticated` read (the
/// `system:discovery` and `system:public-info-viewer` ClusterRoles: discovery, OpenAPI, version
/// and health), so that kubectl can discover the API and say what it is refused, and ask what
/// it may do (`system:basic-user`: SelfSubjectAccessReviews); nobody else anything.
#[derive(Debug, Default)]
pub struct MastersAuthorizer;

/// The non-resource paths kube's `system:discovery` and `system:public-info-viewer` ClusterRoles
/// let every authenticated user GET (`*` at the end: any path below).
const DISCOVERY_PATHS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/openapi",
    "/openapi/*",
    "/version",
    "/version/",
    "/healthz",
    "/livez",
    "/readyz",
];

/// Whether a non-resource `path` is one of [`DISCOVERY_PATHS`].
fn discovery_path(path: &str) -> bool {
    DISCOVERY_PATHS.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => path == *p,
    })
}

impl Authorizer for MastersAuthorizer {
    fn authorize<'a>(&'a self, user: &'a UserInfo, request: &'a RequestInfo) -> MaybeBoxed<'a, Decision> {
        let authenticated = user.groups.iter().any(|g| g == AUTHENTICATED_GROUP);
        let allowed = user.groups.iter().any(|g| g == crate::pki::ADMIN_GROUP)
            || (authenticated && !request.is_resource_request && request.verb == "get" && discovery_path(&request.path))
            // kube's `system:basic-user`: anyone may ask what they may do, and who they are.
            || (authenticated
                && request.is_resource_request
                && request.verb == "create"
                && matches!(
                    (request.api_group.as_str(), request.resource.as_str()),
                    ("authorization.k8s.io", "selfsubjectaccessreviews" | "selfsubjectrulesreviews")
                        | ("authentication.k8s.io", "selfsubjectreviews")
                ));
        now(if allowed { Decision::Allow(String::new()) } else { Decision::Deny(String::new()) })
    }
}

/// kube-apiserver's 403 message for a denied request.
pub fn forbidden_message(user: &UserInfo, request: &RequestInfo, reason: &str) -> String {
    let mut message = if !request.is_resource_request {
        format!("forbidden: User \"{}\" cannot {} path \"{}\"", user.name, request.verb, request.path)
    } else {
        let qualified = if request.api_group.is_empty() {
            request.resource.clone()
        } else {
            format!("{}.{}", request.resource, request.api_group)
        };
        let object = if request.name.is_empty() { qualified } else { format!("{qualified} \"{}\"", request.name) };
        let resource = if request.subresource.is_empty() {
            request.resource.clone()
        } else {
            format!("{}/{}", request.resource, request.subresource)
        };
        let scope = if request.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{}\"", request.namespace)
        };
        format!(
            "{object} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            user.name, request.verb, request.api_group
        )
    };
    if !reason.is_empty() {
        message.push_str(": ");
        message.push_str(reason);
    }
    message
}

/// The authentication and authorization a server runs with.
#[derive(Debug, Clone)]
pub struct Auth {
    pub authenticator: Arc<dyn Authenticator>,
    pub authorizer: Arc<dyn Authorizer>,
}

impl Auth {
    /// Standalone mode: client certificates from versa's CA; only `system:masters`.
    pub fn standalone() -> Self {
        Auth { authenticator: Arc::new(ClientCertAuthenticator), authorizer: Arc::new(MastersAuthorizer) }
    }

    /// Standalone mode with more authenticators (a token file) after the client certificates.
    pub fn standalone_with(more: Vec<Arc<dyn Authenticator>>) -> Self {
        let mut all: Vec<Arc<dyn Authenticator>> = vec![Arc::new(ClientCertAuthenticator)];
        all.extend(more);
        Auth { authenticator: Arc::new(UnionAuthenticator(all)), authorizer: Arc::new(MastersAuthorizer) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::parse;

    #[test]
    fn forbidden_messages() {
        let bob = UserInfo { name: "bob".into(), ..Default::default() };
        let cases = [
            (
                "GET",
                "/apis/stable.example.com/v1/namespaces/default/crontabs/x",
                "crontabs.stable.example.com \"x\" is forbidden: User \"bob\" cannot get resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"default\"",
            ),
            (
                "GET",
                "/apis/stable.example.com/v1/crontabs",
                "crontabs.stable.example.com is forbidden: User \"bob\" cannot list resource \"crontabs\" in API group \"stable.example.com\" at the cluster scope",
            ),
            (
                "PUT",
                "/apis/stable.example.com/v1/namespaces/ns/crontabs/x/status",
                "crontabs.stable.example.com \"x\" is forbidden: User \"bob\" cannot update resource \"crontabs/status\" in API group \"stable.example.com\" in the namespace \"ns\"",
            ),
            ("GET", "/version", "forbidden: User \"bob\" cannot get path \"/version\""),
        ];
        for (method, path, want) in cases {
            let info = parse(&method.parse().unwrap(), path, None);
            assert_eq!(forbidden_message(&bob, &info, ""), want);
        }
    }

    /// An authenticator with a fixed answer — `none`, `fail:<why>` or `user:<name>` — known at
    /// once, or (`~` before it) only in a boxed future.
    #[derive(Debug)]
    struct Fixed(&'static str);

    impl Authenticator for Fixed {
        fn authenticate<'a>(&'a self, _: Credentials<'a>) -> MaybeBoxed<'a, Authenticated> {
            let (waits, answer) = match self.0.strip_prefix('~') {
                Some(answer) => (true, answer),
                None => (false, self.0),
            };
            let answer = match answer.split_once(':') {
                Some(("fail", why)) => Err(AuthError(why.into())),
                Some((_, name)) => Ok(Some(Arc::new(UserInfo { name: name.into(), ..Default::default() }))),
                None => Ok(None),
            };
            if waits { later(async move { answer }) } else { now(answer) }
        }
    }

    /// kube's union: the first user wins, else the first failure, else no credentials — and the
    /// answer is boxed only when an authenticator that waits had to be asked.
    #[test]
    fn union_of_authenticators() {
        use futures_util::FutureExt as _;
        let cases: &[(&[&'static str], &str, bool)] = &[
            (&[], "none", false),
            (&["none", "user:a"], "user:a", false),
            (&["fail:1", "user:a"], "user:a", false),
            (&["fail:1", "fail:2", "none"], "fail:1", false),
            (&["user:a", "~user:b"], "user:a", false),
            (&["none", "~fail:1", "none"], "fail:1", true),
            (&["fail:1", "~fail:2"], "fail:1", true),
            (&["~none", "fail:2", "~user:b", "user:c"], "user:b", true),
            (&["~none", "none"], "none", true),
        ];
        let headers = http::HeaderMap::new();
        for (authenticators, want, boxed) in cases {
            let union = UnionAuthenticator(
                authenticators.iter().map(|a| Arc::new(Fixed(a)) as Arc<dyn Authenticator>).collect(),
            );
            let answer = union.authenticate(Credentials { client_cert: None, headers: &headers });
            assert_eq!(matches!(answer, Either::Right(_)), *boxed, "{authenticators:?}: boxed");
            let got = match answer.now_or_never().unwrap() {
                Ok(Some(user)) => format!("user:{}", user.name),
                Ok(None) => "none".to_owned(),
                Err(e) => format!("fail:{}", e.0),
            };
            assert_eq!(got, *want, "{authenticators:?}");
        }
    }
}
