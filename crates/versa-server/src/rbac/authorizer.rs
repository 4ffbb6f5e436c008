//! Standalone's authorizer: kube's order of authorizers, in versa's terms — `system:masters`
//! may do anything (kube's privileged-group authorizer); then the RBAC objects in force
//! ([`crate::rbac::Policy`]: the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings
//! stored under `rbac.authorization.k8s.io`, kube's default policy among them — discovery and
//! the rest every authenticated user may do come from its `system:discovery`,
//! `system:public-info-viewer` and `system:basic-user` bindings, as in kube; until they are in
//! force, in a new data directory's first moments, [`MastersAuthorizer`] grants the same).
//!
//! The policy is read from storage, never per request: one list of the group's prefix and one
//! watch from its revision keep it current (a binding written is in force as soon as the watch
//! brings it — for the next request, as in kube, which does not re-decide open watches). A
//! lost watch lists again. Until the first list has been read, requests wait for it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use tokio::sync::watch;
use versa_storage::{Keys, Store};

use super::{Attributes, Policy};
use crate::auth::{Authorizer, BoxFuture, Decision, MastersAuthorizer, MaybeBoxed, UserInfo, later, now};
use crate::follow::Followed;
use crate::request_info::RequestInfo;

/// The group whose objects make the policy.
const GROUP: &str = "rbac.authorization.k8s.io";

/// Standalone authorization with RBAC (see the module's documentation).
#[derive(Debug)]
pub struct RbacAuthorizer {
    policy: watch::Receiver<Option<Arc<Policy>>>,
    /// Latched once the policy in force holds kube's default bindings (what kube's
    /// `poststarthook/rbac/bootstrap-roles` readiness check waits for).
    ready: std::sync::atomic::AtomicBool,
}

impl RbacAuthorizer {
    /// Starts keeping the policy of `store` (under `keys`) current, on the running runtime.
    pub fn start(store: Arc<dyn Store>, keys: Keys) -> RbacAuthorizer {
        let (send, policy) = watch::channel(None);
        tokio::spawn(keep(store, keys, send));
        RbacAuthorizer { policy, ready: std::sync::atomic::AtomicBool::new(false) }
    }

    /// The policy in force, once it has been read.
    async fn current(&self) -> Option<Arc<Policy>> {
        let mut policy = self.policy.clone();
        let read = policy.wait_for(Option::is_some).await.ok()?;
        read.clone()
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize<'a>(&'a self, user: &'a UserInfo, request: &'a RequestInfo) -> MaybeBoxed<'a, Decision> {
        if user.groups.iter().any(|g| g == crate::pki::ADMIN_GROUP) {
            return now(Decision::Allow(String::new()));
        }
        later(async move {
            let Some(policy) = self.current().await else {
                return Decision::Error("the RBAC policy cannot be read".into());
            };
            let attrs = Attributes {
                user: &user.name,
                groups: &user.groups,
                verb: &request.verb,
                namespace: &request.namespace,
                resource_request: request.is_resource_request,
                api_group: &request.api_group,
                resource: &request.resource,
                subresource: &request.subresource,
                name: &request.name,
                path: &request.path,
            };
            let decision = policy.authorize(&attrs);
            if decision.allowed {
                return Decision::Allow(decision.reason);
            }
            // Until the default policy is in (the first moments of a new data directory), what
            // it grants every authenticated user is granted as it will be.
            if self.not_ready().is_some()
                && let allowed @ Decision::Allow(_) = MastersAuthorizer.authorize(user, request).await
            {
                return allowed;
            }
            Decision::Deny(decision.reason)
        })
    }

    fn policy(&self) -> BoxFuture<'_, Option<Arc<Policy>>> {
        Box::pin(self.current())
    }

    fn not_ready(&self) -> Option<&'static str> {
        use std::sync::atomic::Ordering;
        if self.ready.load(Ordering::Relaxed) {
            return None;
        }
        // The default bindings are written in order; the last one in place means all are.
        let last = super::bootstrap::LAST_BINDING;
        let ready = self.policy.borrow().as_ref().is_some_and(|p| p.has_cluster_role_binding(last));
        if ready {
            self.ready.store(true, Ordering::Relaxed);
            None
        } else {
            Some("rbac/bootstrap-roles")
        }
    }
}

/// Lists the group, publishes the policy, and follows the watch; again after any failure.
async fn keep(store: Arc<dyn Store>, keys: Keys, send: watch::Sender<Option<Arc<Policy>>>) {
    let prefix = format!("{}/{GROUP}/", keys.prefix());
    loop {
        if let Err(e) = follow(&*store, &prefix, &send).await {
            tracing::warn!(error = %e, "reading the RBAC policy; trying again");
        }
        if send.is_closed() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One stored RBAC object, parsed once, when it is listed or its event arrives.
#[derive(Clone)]
enum Object {
    Role(Role),
    ClusterRole(ClusterRole),
    RoleBinding(RoleBinding),
    ClusterRoleBinding(ClusterRoleBinding),
}

impl Object {
    /// The object of `key` (`<prefix><plural>/…`, `prefix` the group's); `None` for one that
    /// does not parse (the write path admitted it, so it does not happen).
    fn parse(prefix: &str, key: &str, value: &[u8]) -> Option<Object> {
        Some(match key.strip_prefix(prefix)?.split('/').next()? {
            "roles" => Object::Role(serde_json::from_slice(value).ok()?),
            "clusterroles" => Object::ClusterRole(serde_json::from_slice(value).ok()?),
            "rolebindings" => Object::RoleBinding(serde_json::from_slice(value).ok()?),
            "clusterrolebindings" => Object::ClusterRoleBinding(serde_json::from_slice(value).ok()?),
            _ => return None,
        })
    }
}

/// One list and the watch after it, publishing the policy after each change, until the watch
/// ends.
async fn follow(
    store: &dyn Store,
    prefix: &str,
    send: &watch::Sender<Option<Arc<Policy>>>,
) -> Result<(), versa_storage::Error> {
    let mut followed = Followed::start(store, prefix, |key, value| Object::parse(prefix, key, value)).await?;
    loop {
        send.send_replace(Some(Arc::new(policy_of(followed.objects()))));
        if send.is_closed() || !followed.changed().await? {
            return Ok(());
        }
    }
}

/// The policy of the stored objects.
fn policy_of(objects: &BTreeMap<String, Object>) -> Policy {
    let (mut roles, mut cluster_roles, mut role_bindings, mut cluster_role_bindings) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for object in objects.values().cloned() {
        match object {
            Object::Role(o) => roles.push(o),
            Object::ClusterRole(o) => cluster_roles.push(o),
            Object::RoleBinding(o) => role_bindings.push(o),
            Object::ClusterRoleBinding(o) => cluster_role_bindings.push(o),
        }
    }
    Policy::new(roles, cluster_roles, role_bindings, cluster_role_bindings)
}
