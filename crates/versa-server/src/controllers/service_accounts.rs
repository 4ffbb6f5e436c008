//! Standalone's ServiceAccounts controller (kube-controller-manager's `serviceaccount-controller`):
//! every namespace has a ServiceAccount `default` — created when the namespace is, and again
//! when it is deleted. A namespace being deleted gets none. Writes go through the API
//! ([`Loopback`]) as kube's controller's user, so admission and audit see them.
//!
//! Passes run when namespaces or ServiceAccounts change (a store watch of each), and every
//! [`RESYNC`] besides (a watch that ended is opened again then).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use versa_registry::Builtin;
use versa_storage::ListOptions;

use crate::controllers::loopback::Loopback;
use crate::state::State;

/// The ServiceAccount every namespace has.
pub const DEFAULT: &str = "default";
/// How often every namespace is checked even when nothing was heard.
pub const RESYNC: Duration = Duration::from_secs(30);

const USER: &str = "system:serviceaccount:kube-system:service-account-controller";
const USER_AGENT: &str = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/versa/system:serviceaccount:kube-system:service-account-controller";

/// Runs until shutdown; does nothing where versa serves no Namespaces or ServiceAccounts.
pub async fn run(state: Arc<State>) {
    let (Some(namespaces), Some(accounts)) =
        (state.registry.core(Builtin::Namespace), state.registry.core(Builtin::ServiceAccount))
    else {
        return;
    };
    let client = Loopback::new(
        state.clone(),
        USER,
        &["system:serviceaccounts", "system:serviceaccounts:kube-system", crate::auth::AUTHENTICATED_GROUP],
        USER_AGENT,
    );
    let (ns_group, ns_plural) = namespaces.stored_as();
    let (sa_group, sa_plural) = accounts.stored_as();
    let ns_prefix = state.keys.resource(ns_group, ns_plural);
    let sa_prefix = state.keys.resource(sa_group, sa_plural);
    let (mut ns_watch, mut sa_watch) = (None, None);
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        if let Some(revision) = pass(&state, &client, &accounts, &ns_prefix).await {
            if ns_watch.is_none() {
                ns_watch = state.store.watch(&ns_prefix, revision).await.ok();
            }
            if sa_watch.is_none() {
                sa_watch = state.store.watch(&sa_prefix, revision).await.ok();
            }
        }
        let next = |w: &mut Option<versa_storage::Watch>| {
            let w = w.take();
            async move {
                match w {
                    Some(mut w) => w.next().await.is_some().then_some(w),
                    None => std::future::pending().await,
                }
            }
        };
        tokio::select! {
            w = next(&mut ns_watch) => ns_watch = w,
            w = next(&mut sa_watch) => sa_watch = w,
            () = tokio::time::sleep(RESYNC) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Creates the missing `default` ServiceAccounts; returns the revision the namespaces were
/// listed at.
async fn pass(
    state: &State,
    client: &Loopback,
    accounts: &Arc<versa_registry::Resource>,
    ns_prefix: &str,
) -> Option<i64> {
    let page = match state.store.list(ns_prefix, ListOptions::default()).await {
        Ok(page) => page,
        Err(e) => {
            tracing::warn!(error = %e, "listing namespaces");
            return None;
        }
    };
    let (group, plural) = accounts.stored_as();
    for kv in &page.items {
        let Ok(namespace) = serde_json::from_slice::<Value>(&kv.value) else { continue };
        let Some(name) = namespace.pointer("/metadata/name").and_then(Value::as_str) else { continue };
        let terminating = namespace.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
            || namespace.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
        if terminating {
            continue;
        }
        match state.store.get(&state.keys.object(group, plural, Some(name), DEFAULT)).await {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(namespace = name, error = %e, "reading the default ServiceAccount");
                continue;
            }
        }
        let object = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}});
        let answer = client.create(accounts.clone(), Some(name), &object).await;
        if !answer.is_success() && answer.code != http::StatusCode::CONFLICT {
            tracing::warn!(namespace = name, error = answer.message(), "creating the default ServiceAccount");
        }
    }
    Some(page.revision)
}
