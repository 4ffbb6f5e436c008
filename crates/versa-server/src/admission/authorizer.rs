//! The CEL `authorizer` of admission policies and `matchConditions`, answered by the server's
//! own authorizer — standalone's (`system:masters`, then RBAC: `crate::rbac`), or in cluster mode the
//! delegated one, which asks kube-apiserver with a SubjectAccessReview and keeps each answer
//! for `cluster::delegated::CACHE_TTL` (kube's delegated cache), never longer.
//!
//! A check is the request kube's CEL library builds (`k8s.io/apiserver/pkg/cel/library/authz.go`):
//! a resource check asks for any version (`*`) of `group`/`resource`, a path check for a
//! non-resource path. A check's field and label selectors (`fieldSelector(...)`,
//! `labelSelector(...)`) go with it, as a request's do: the delegated authorizer's
//! SubjectAccessReview carries them (kube's `AuthorizeWithSelectors`).
//!
//! CEL evaluates synchronously, the authorizer answers asynchronously: the evaluation waits for
//! the answer on the serving runtime's worker (`block_in_place`). On a runtime without worker
//! threads the check fails with an error decision, which the expression sees as an authorizer
//! error — never as an allow. (Structured merge no longer waits so for a conversion webhook: it
//! is run again once the conversions it lacked are made, `versa-registry`'s `versions.rs`. The
//! same would mean re-running a policy's whole evaluation, its cost budget included, per check.)

use std::sync::Arc;

use versa_cel::opaque::authz::{Authorize, AuthzCheck, AuthzDecision, AuthzUser};

use crate::auth::{Authorizer, Decision, UserInfo};
use crate::request_info::RequestInfo;

/// [`Authorize`] over the server's [`Authorizer`].
#[derive(Debug)]
pub struct ServerAuthorizer(pub Arc<dyn Authorizer>);

impl Authorize for ServerAuthorizer {
    fn authorize(&self, user: &AuthzUser, check: &AuthzCheck) -> AuthzDecision {
        let user = UserInfo {
            name: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
        };
        let request = request_info(check);
        let decision = match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| handle.block_on(self.0.authorize(&user, &request)))
            }
            _ => Decision::Error("the authorizer cannot be asked from a single-threaded runtime".into()),
        };
        match decision {
            Decision::Allow(reason) => AuthzDecision { allowed: true, reason, error: None },
            Decision::Deny(reason) => AuthzDecision { allowed: false, reason, error: None },
            Decision::Error(e) => AuthzDecision { allowed: false, reason: String::new(), error: Some(e) },
        }
    }
}

/// The request a check stands for.
fn request_info(check: &AuthzCheck) -> RequestInfo {
    match &check.path {
        Some(path) => RequestInfo {
            is_resource_request: false,
            path: path.clone(),
            verb: check.verb.clone(),
            ..RequestInfo::default()
        },
        None => RequestInfo {
            is_resource_request: true,
            verb: check.verb.clone(),
            api_group: check.group.clone(),
            api_version: "*".into(),
            namespace: check.namespace.clone(),
            resource: check.resource.clone(),
            subresource: check.subresource.clone(),
            name: check.name.clone(),
            field_selector: check.field_selector.clone(),
            label_selector: check.label_selector.clone(),
            ..RequestInfo::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{MaybeBoxed, now};

    /// Allows what user `alice` asks about `widgets`, records every request.
    #[derive(Debug, Default)]
    struct Recording(std::sync::Mutex<Vec<RequestInfo>>);

    impl Authorizer for Recording {
        fn authorize<'a>(&'a self, user: &'a UserInfo, request: &'a RequestInfo) -> MaybeBoxed<'a, Decision> {
            self.0.lock().unwrap().push(request.clone());
            let allowed = user.name == "alice" && request.resource == "widgets";
            now(if allowed { Decision::Allow("ok".into()) } else { Decision::Deny("no".into()) })
        }
    }

    fn alice() -> AuthzUser {
        AuthzUser { username: "alice".into(), ..AuthzUser::default() }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn checks_are_asked_as_requests_of_any_version() {
        let inner = Arc::new(Recording::default());
        let authorizer = ServerAuthorizer(inner.clone());
        let check = AuthzCheck {
            verb: "update".into(),
            group: "example.com".into(),
            resource: "widgets".into(),
            namespace: "team".into(),
            name: "w".into(),
            ..AuthzCheck::default()
        };
        assert_eq!(
            authorizer.authorize(&alice(), &check),
            AuthzDecision { allowed: true, reason: "ok".into(), error: None }
        );
        let path = AuthzCheck { verb: "get".into(), path: Some("/healthz".into()), ..AuthzCheck::default() };
        assert!(!authorizer.authorize(&alice(), &path).allowed);
        let asked = inner.0.lock().unwrap().clone();
        assert_eq!(
            (
                asked[0].api_group.as_str(),
                asked[0].api_version.as_str(),
                asked[0].namespace.as_str(),
                asked[0].verb.as_str()
            ),
            ("example.com", "*", "team", "update")
        );
        assert!(!asked[1].is_resource_request);
        assert_eq!(asked[1].path, "/healthz");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_runtime_without_workers_is_an_error_never_an_allow() {
        let authorizer = ServerAuthorizer(Arc::new(Recording::default()));
        let check = AuthzCheck { verb: "get".into(), resource: "widgets".into(), ..AuthzCheck::default() };
        let decision = authorizer.authorize(&alice(), &check);
        assert!(!decision.allowed && decision.error.is_some(), "{decision:?}");
    }
}
