//! Standalone mode's namespace controller and event expiry — the parts of kube-controller-manager
//! and kube-apiserver that a cluster would run for the core kinds versa serves itself
//! (`versa_registry::Builtin`; the rules of the kinds are in `versa_registry::kinds`).
//!
//! - At start, `default`, `kube-system` and `kube-public` are created when missing.
//! - A namespace marked for deletion (`Terminating`) is emptied: every object of every served
//!   namespaced resource in it is deleted (objects with finalizers are marked and waited for),
//!   then the `kubernetes` finalizer is removed from `spec.finalizers`, and the namespace goes
//!   once no finalizer is left — as kube's namespace controller does.
//! - Events expire [`EVENT_TTL`] after they were last seen (kube-apiserver's `--event-ttl`
//!   default), checked every [`EVENT_SWEEP`].
//!
//! Passes run when namespaces change (a store watch) and at least every second while a
//! namespace is terminating, so a namespace waiting for an object's finalizer goes as soon as
//! the object does.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use serde_json::Value;
use versa_registry::kinds::namespace::{IMMORTAL, KUBERNETES_FINALIZER, new_namespace};
use versa_registry::{Builtin, Resource};
use versa_storage::{KeyValue, ListOptions};

use crate::controllers::definitions::delete_objects;
use crate::state::State;

/// How long an Event is kept after it was last seen (kube-apiserver's `--event-ttl` default).
pub const EVENT_TTL: Duration = Duration::from_secs(3600);
/// How often expired Events are looked for.
pub const EVENT_SWEEP: Duration = Duration::from_secs(60);

/// Runs until shutdown; does nothing where versa does not serve Namespaces (cluster mode).
pub async fn run(state: Arc<State>) {
    let Some(namespaces) = state.registry.core(Builtin::Namespace) else { return };
    let (group, plural) = namespaces.stored_as();
    let prefix = state.keys.resource(group, plural);
    create_initial(&state, &namespaces).await;
    let mut swept = None::<Instant>;
    let mut watch = None;
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        let revision = match state.store.list(&prefix, ListOptions::default()).await {
            Ok(page) => {
                for kv in page.items {
                    if let Err(e) = finalize(&state, &kv).await {
                        tracing::warn!(key = kv.key, error = %e, "emptying a terminating namespace");
                    }
                }
                Some(page.revision)
            }
            Err(e) => {
                tracing::warn!(error = %e, "listing namespaces");
                None
            }
        };
        if swept.is_none_or(|t| t.elapsed() >= EVENT_SWEEP) {
            expire_events(&state).await;
            swept = Some(Instant::now());
        }
        if watch.is_none()
            && let Some(revision) = revision
        {
            watch = state.store.watch(&prefix, revision).await.ok();
        }
        let changed = async {
            match watch.as_mut() {
                Some(w) => {
                    if w.next().await.is_none() {
                        // The watch ended: open another on the next pass.
                        watch = None;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Standalone: `default`, `kube-system` and `kube-public`, created unless they exist — before
/// the server answers (`Prepared::run`), so that a client's first write in `default` finds it,
/// and again at each term's start. Nothing where versa does not serve Namespaces.
pub async fn ensure_initial(state: &State) {
    if let Some(namespaces) = state.registry.core(Builtin::Namespace) {
        create_initial(state, &namespaces).await;
    }
}

/// `default`, `kube-system` and `kube-public`, created unless they exist.
async fn create_initial(state: &State, namespaces: &Resource) {
    let (group, plural) = namespaces.stored_as();
    for name in IMMORTAL {
        let key = state.keys.object(group, plural, None, name);
        let Ok(bytes) = serde_json::to_vec(&new_namespace(name)) else { continue };
        match state.store.create(&key, Bytes::from(bytes)).await {
            Ok(_) | Err(versa_storage::Error::AlreadyExists { .. }) => {}
            Err(e) => tracing::warn!(namespace = name, error = %e, "creating an initial namespace"),
        }
    }
}

/// One step for one namespace: nothing unless it is terminating; else its content is deleted,
/// and once none is left its `kubernetes` finalizer goes, then the namespace.
async fn finalize(state: &State, kv: &KeyValue) -> versa_storage::Result<()> {
    let Ok(mut ns) = serde_json::from_slice::<Value>(&kv.value) else { return Ok(()) };
    if ns.pointer("/metadata/deletionTimestamp").is_none() {
        return Ok(());
    }
    let name = ns.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
    let list = |v: &Value, path: &str| v.pointer(path).and_then(Value::as_array).cloned().unwrap_or_default();
    let spec_finalizers = list(&ns, "/spec/finalizers");
    if spec_finalizers.iter().any(|f| f == KUBERNETES_FINALIZER) {
        let snapshot = state.registry.snapshot();
        let mut remaining = 0;
        for res in snapshot.resources().filter(|r| r.namespaced) {
            let (group, plural) = res.stored_as();
            remaining += delete_objects(state, &state.keys.namespace(group, plural, &name)).await?;
        }
        if remaining > 0 {
            return Ok(());
        }
        let kept: Vec<Value> = spec_finalizers.into_iter().filter(|f| f != KUBERNETES_FINALIZER).collect();
        if let Some(spec) = ns.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("finalizers".into(), Value::Array(kept.clone()));
        }
        if !kept.is_empty() || !list(&ns, "/metadata/finalizers").is_empty() {
            let bytes = serde_json::to_vec(&ns).unwrap_or_default();
            return state.store.update(&kv.key, Bytes::from(bytes), kv.mod_revision).await.map(|_| ());
        }
    } else if !spec_finalizers.is_empty() || !list(&ns, "/metadata/finalizers").is_empty() {
        // Someone else's finalizer still holds it.
        return Ok(());
    }
    match state.store.delete(&kv.key, Some(kv.mod_revision)).await {
        Ok(_) | Err(versa_storage::Error::NotFound { .. }) => {
            tracing::info!(namespace = name, "namespace deleted");
            Ok(())
        }
        // Changed meanwhile: the next pass looks again.
        Err(versa_storage::Error::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the Events last seen more than [`EVENT_TTL`] ago.
async fn expire_events(state: &State) {
    let Some(events) = state.registry.core(Builtin::Event) else { return };
    let (group, plural) = events.stored_as();
    let Ok(page) = state.store.list(&state.keys.resource(group, plural), ListOptions::default()).await else { return };
    let now = SystemTime::now();
    for kv in page.items {
        let Ok(event) = serde_json::from_slice::<Value>(&kv.value) else { continue };
        let seen = ["/series/lastObservedTime", "/lastTimestamp", "/eventTime", "/metadata/creationTimestamp"]
            .iter()
            .filter_map(|p| event.pointer(p).and_then(Value::as_str))
            .filter_map(versa_registry::table::parse_rfc3339)
            .max();
        if seen.is_some_and(|t| now.duration_since(t).is_ok_and(|age| age > EVENT_TTL)) {
            let _ = state.store.delete(&kv.key, Some(kv.mod_revision)).await;
        }
    }
}
