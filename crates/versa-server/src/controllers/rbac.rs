//! Standalone's RBAC housekeeping, as kube splits it between kube-apiserver and
//! kube-controller-manager: at the start of each term, kube's default policy is created or
//! reconciled ([`crate::rbac::bootstrap`], retried until it is in); then aggregated ClusterRoles
//! are kept current ([`crate::rbac::aggregation`]): after every change to a ClusterRole, each
//! aggregated one whose rules differ from what its selectors gather gets them by a server-side
//! apply of `clusterrole-aggregation-controller`, as kube's controller writes them. Writes go
//! through the API ([`super::loopback`]) as `system:apiserver` in `system:masters`.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use versa_registry::Resource;
use versa_registry::kinds::rbac::{CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES};

use super::loopback::{Loopback, ObjectRef};
use crate::follow::Followed;
use crate::rbac::aggregation::{self, FIELD_MANAGER};
use crate::rbac::bootstrap::{self, Action, Defaults};
use crate::state::State;

/// How long after a failed pass the next one starts.
const RETRY: Duration = Duration::from_secs(1);

/// Runs until shutdown; does nothing where versa does not serve RBAC (cluster mode).
pub async fn run(state: Arc<State>) {
    let Some(defaults) = Bootstrap::of(&state) else { return };
    while !state.shutdown.is_cancelled() {
        match defaults.pass().await {
            Ok(()) => break,
            Err(e) => tracing::warn!(error = e, "writing the default RBAC policy; trying again"),
        }
        tokio::time::sleep(RETRY).await;
    }
    let client =
        Loopback::new(state.clone(), "system:kube-controller-manager", &[crate::pki::ADMIN_GROUP], FIELD_MANAGER);
    while !state.shutdown.is_cancelled() {
        if let Err(e) = aggregate(&state, &client, &defaults.roles).await {
            tracing::warn!(error = e, "aggregating ClusterRoles; trying again");
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Standalone, before the server answers: one pass of the default policy, then until the
/// authorizer has it in force — so that a new data directory's server is ready, and its first
/// non-admin clients can discover the API, from its first request. The caller bounds the wait;
/// the controller's own pass ([`run`]) covers what this one could not do.
pub async fn before_serving(state: Arc<State>) {
    let Some(defaults) = Bootstrap::of(&state) else { return };
    if let Err(e) = defaults.pass().await {
        tracing::warn!(error = e, "writing the default RBAC policy before serving; the controller will");
        return;
    }
    while state.auth.authorizer.not_ready().is_some() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// kube's default policy and what writes it: the two resources, and a client in
/// `system:masters`.
struct Bootstrap {
    client: Loopback,
    roles: Arc<Resource>,
    bindings: Arc<Resource>,
    defaults: Defaults,
}

impl Bootstrap {
    /// `None` where versa does not serve RBAC (cluster mode).
    fn of(state: &Arc<State>) -> Option<Bootstrap> {
        Some(Bootstrap {
            client: Loopback::new(
                state.clone(),
                "system:apiserver",
                &[crate::pki::ADMIN_GROUP],
                "versa-rbac-bootstrap",
            ),
            roles: state.registry.core(CLUSTER_ROLES)?,
            bindings: state.registry.core(CLUSTER_ROLE_BINDINGS)?,
            defaults: Defaults::load(),
        })
    }

    /// One pass: each default object created or reconciled.
    async fn pass(&self) -> Result<(), String> {
        let (client, roles, bindings) = (&self.client, &self.roles, &self.bindings);
        for expected in &self.defaults.cluster_roles {
            let name = expected.metadata.name.as_deref().unwrap_or_default();
            let existing: Option<ClusterRole> = read(client, &object(roles, name)).await?;
            act(client, roles, name, bootstrap::reconcile_role(existing.as_ref(), expected)).await?;
        }
        for expected in &self.defaults.cluster_role_bindings {
            let name = expected.metadata.name.as_deref().unwrap_or_default();
            let existing: Option<ClusterRoleBinding> = read(client, &object(bindings, name)).await?;
            act(client, bindings, name, bootstrap::reconcile_binding(existing.as_ref(), expected)).await?;
        }
        Ok(())
    }
}

fn object(res: &Arc<Resource>, name: &str) -> ObjectRef {
    ObjectRef { res: res.clone(), namespace: None, name: name.to_owned() }
}

/// The stored object of `obj`, or none.
async fn read<T: DeserializeOwned>(client: &Loopback, obj: &ObjectRef) -> Result<Option<T>, String> {
    let answer = client.get(obj).await;
    match answer.code {
        StatusCode::NOT_FOUND => Ok(None),
        code if code.is_success() => serde_json::from_value(answer.body).map(Some).map_err(|e| e.to_string()),
        _ => Err(answer.message()),
    }
}

/// Carries out one reconciliation decision.
async fn act<T: Serialize>(
    client: &Loopback,
    res: &Arc<Resource>,
    name: &str,
    action: Action<T>,
) -> Result<(), String> {
    let as_json = |o: &T| {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        v["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        v["kind"] = json!(res.kind);
        v
    };
    let answer = match action {
        Action::None => return Ok(()),
        Action::Create(o) => client.create(res.clone(), None, &as_json(&o)).await,
        Action::Update(o) => client.update(&object(res, name), &as_json(&o)).await,
        Action::Recreate(o) => {
            let deleted = client.delete(&object(res, name), &json!({})).await;
            if !deleted.is_success() && deleted.code != StatusCode::NOT_FOUND {
                return Err(deleted.message());
            }
            client.create(res.clone(), None, &as_json(&o)).await
        }
    };
    // Created meanwhile by another writer of the same defaults (this replica's pass before
    // serving, or another replica's): the next pass reconciles it.
    let created_meanwhile = answer.code == StatusCode::CONFLICT && answer.body["reason"] == "AlreadyExists";
    if answer.is_success() || created_meanwhile {
        Ok(())
    } else {
        Err(format!("{} {name}: {}", res.kind, answer.message()))
    }
}

/// Lists the ClusterRoles, writes the stale aggregations, and does so again after each change
/// the watch brings; returns when the watch ends or fails.
async fn aggregate(state: &State, client: &Loopback, roles: &Arc<Resource>) -> Result<(), String> {
    let (group, plural) = roles.stored_as();
    let prefix = state.keys.resource(group, plural);
    let parse = |_: &str, value: &[u8]| serde_json::from_slice::<ClusterRole>(value).ok();
    let mut followed = Followed::start(&*state.store, &prefix, parse).await.map_err(|e| e.to_string())?;
    loop {
        let current: Vec<&ClusterRole> = followed.objects().values().collect();
        for (name, rules) in aggregation::stale(&current) {
            let patch = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name}, "rules": rules});
            let answer = client.apply(&object(roles, &name), &patch, FIELD_MANAGER).await;
            if !answer.is_success() && answer.code != StatusCode::NOT_FOUND {
                tracing::warn!(role = name, error = answer.message(), "aggregating a ClusterRole");
            }
        }
        let changed = tokio::select! {
            changed = followed.changed() => changed,
            () = state.shutdown.cancelled() => return Ok(()),
        };
        if !changed.map_err(|e| e.to_string())? {
            return Ok(());
        }
    }
}
