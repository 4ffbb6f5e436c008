//! Follows the admission configuration (`admissionregistration.k8s.io/v1` webhook
//! configurations, policies and bindings) and swaps a freshly compiled
//! [`versa_admission::Configuration`] into the state whenever it changes. Every replica runs
//! it: each admits the writes it serves.
//!
//! - Standalone versa serves those kinds itself: [`run`] reads them from the store (one watch
//!   on the group's key prefix).
//! - Cluster mode: they are kube-apiserver's, and so are the Namespaces admission needs
//!   (selectors, `namespaceObject`, namespace lifecycle): [`follow_kube`], started once
//!   kube-apiserver has been reached, lists them every [`KUBE_POLL`] (from its watch cache,
//!   `resourceVersion=0`) and rebuilds when a list's resourceVersion moved. Until the first
//!   list, writes are refused.
//!
//! What does not compile is logged (the object is still used, as kube uses it: the part fails
//! when a request needs it, under its failure policy).

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;
use versa_admission::{BuildOptions, Configuration, Sources};
use versa_registry::{ADMISSION_GROUP, AdmissionKind, Builtin};
use versa_storage::ListOptions;

use crate::cluster::kube::{KubeClient, KubeError};
use crate::state::State;

/// Keeps the configuration current until shutdown.
pub async fn run(state: Arc<State>) {
    if !serves_admission(&state) {
        // Cluster mode: `follow_kube` loads it.
        return;
    }
    let prefix = format!("{}/{ADMISSION_GROUP}/", state.keys.prefix());
    let mut backoff = Duration::from_millis(200);
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        match follow(&state, &prefix).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, "following the admission configuration; retrying");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = state.shutdown.cancelled() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Whether this server serves the admission configuration kinds itself (standalone).
pub fn serves_admission(state: &State) -> bool {
    state.registry.core(Builtin::Admission(AdmissionKind::ValidatingWebhookConfiguration)).is_some()
}

/// How often cluster mode lists kube-apiserver's admission configuration and Namespaces.
pub const KUBE_POLL: Duration = Duration::from_secs(1);

/// Cluster mode: keeps the configuration and the Namespaces current from kube-apiserver until
/// shutdown.
pub async fn follow_kube(state: Arc<State>, kube: KubeClient) {
    let mut seen = String::new();
    loop {
        match list_kube(&state, &kube, &seen).await {
            Ok(fingerprint) => seen = fingerprint,
            Err(e) => tracing::warn!(error = %e, "listing kube-apiserver's admission configuration"),
        }
        tokio::select! {
            () = tokio::time::sleep(KUBE_POLL) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// One round of [`follow_kube`]: the lists, and — when their resourceVersions are not `seen` —
/// the configuration and Namespaces rebuilt. Returns the lists' resourceVersions.
async fn list_kube(state: &State, kube: &KubeClient, seen: &str) -> Result<String, KubeError> {
    let mut lists = Vec::new();
    for kind in AdmissionKind::ALL {
        let (_, plural, _) = kind.names();
        let path = format!("/apis/{ADMISSION_GROUP}/v1/{plural}?resourceVersion=0");
        match kube.get(&path).await {
            Ok(list) => lists.push(list),
            // A kube-apiserver that does not serve the kind (yet): none of it.
            Err(e) if e.is_not_found() => lists.push(Value::Null),
            Err(e) => return Err(e),
        }
    }
    let namespaces = kube.get("/api/v1/namespaces?resourceVersion=0").await?;
    let fingerprint = lists
        .iter()
        .chain(std::iter::once(&namespaces))
        .map(|l| l.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("-"))
        .collect::<Vec<_>>()
        .join(",");
    if fingerprint == seen {
        return Ok(fingerprint);
    }
    let validating_webhooks = typed(&lists[0]);
    let mutating_webhooks = typed(&lists[1]);
    let validating_policies = typed(&lists[2]);
    let validating_bindings = typed(&lists[3]);
    let mutating_policies = typed(&lists[4]);
    let mutating_bindings = typed(&lists[5]);
    let sources = Sources {
        validating_webhooks: &validating_webhooks,
        mutating_webhooks: &mutating_webhooks,
        validating_policies: &validating_policies,
        validating_bindings: &validating_bindings,
        mutating_policies: &mutating_policies,
        mutating_bindings: &mutating_bindings,
    };
    let by_name = namespaces
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ns| {
            let name = ns.pointer("/metadata/name").and_then(Value::as_str)?;
            Some((name.to_owned(), Arc::new(ns.clone())))
        })
        .collect();
    state.admission.set_namespaces(by_name);
    install(state, &sources);
    Ok(fingerprint)
}

/// A list's items as the API type (an item that does not parse is left out, and logged).
fn typed<T: DeserializeOwned>(list: &Value) -> Vec<T> {
    let items = list.get("items").and_then(Value::as_array).into_iter().flatten();
    items
        .filter_map(|o| match serde_json::from_value(o.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!(error = %e, "an admission configuration object that does not parse");
                None
            }
        })
        .collect()
}

/// Compiles `sources` and swaps the result in, logging what does not compile.
fn install(state: &State, sources: &Sources<'_>) {
    let (configuration, problems) = Configuration::build(sources, &BuildOptions::default());
    for p in problems {
        tracing::warn!(kind = p.kind, name = %p.name, problem = %p.message, "admission configuration");
    }
    state.admission.set(configuration);
}

/// Loads the configuration, then rebuilds it on every change under `prefix` (a batch of
/// changes at once is one rebuild).
async fn follow(state: &State, prefix: &str) -> versa_storage::Result<()> {
    let revision = load(state).await?;
    let mut watch = state.store.watch(prefix, revision).await?;
    loop {
        let event = tokio::select! {
            event = watch.next() => event,
            () = state.shutdown.cancelled() => return Ok(()),
        };
        let Some(event) = event else { return Err(versa_storage::Error::unavailable_msg("the watch ended")) };
        if event?.key().is_none() {
            continue;
        }
        // Let a burst of changes (kubectl apply of several objects) settle into one rebuild.
        tokio::time::sleep(Duration::from_millis(20)).await;
        load(state).await?;
    }
}

/// Reads every configuration object, compiles them and swaps the result in; returns the
/// revision read at.
async fn load(state: &State) -> versa_storage::Result<i64> {
    let revision = state.store.current_revision().await?;
    let validating_webhooks = read(state, AdmissionKind::ValidatingWebhookConfiguration, revision).await?;
    let mutating_webhooks = read(state, AdmissionKind::MutatingWebhookConfiguration, revision).await?;
    let validating_policies = read(state, AdmissionKind::ValidatingAdmissionPolicy, revision).await?;
    let validating_bindings = read(state, AdmissionKind::ValidatingAdmissionPolicyBinding, revision).await?;
    let mutating_policies = read(state, AdmissionKind::MutatingAdmissionPolicy, revision).await?;
    let mutating_bindings = read(state, AdmissionKind::MutatingAdmissionPolicyBinding, revision).await?;
    let sources = Sources {
        validating_webhooks: &validating_webhooks,
        mutating_webhooks: &mutating_webhooks,
        validating_policies: &validating_policies,
        validating_bindings: &validating_bindings,
        mutating_policies: &mutating_policies,
        mutating_bindings: &mutating_bindings,
    };
    install(state, &sources);
    Ok(revision)
}

/// The stored objects of one kind, as the API types (an object that does not parse as its kind
/// is logged and left out).
async fn read<T: DeserializeOwned>(state: &State, kind: AdmissionKind, revision: i64) -> versa_storage::Result<Vec<T>> {
    let (_, plural, _) = kind.names();
    let prefix = state.keys.resource(ADMISSION_GROUP, plural);
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let options = ListOptions { limit: 500, continue_token: token.take(), revision };
        let page = state.store.list(&prefix, options).await?;
        for kv in &page.items {
            match serde_json::from_slice::<T>(&kv.value) {
                Ok(object) => out.push(object),
                Err(e) => {
                    tracing::warn!(key = %kv.key, error = %e, "an admission configuration object that does not parse")
                }
            }
        }
        match page.continue_token {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
}
