//! Follows the admission configuration objects standalone versa serves
//! (`admissionregistration.k8s.io/v1` webhook configurations, policies and bindings, all under
//! one key prefix) and swaps a freshly compiled [`versa_admission::Configuration`] into the
//! state whenever one of them changes. Every replica runs it: each admits the writes it serves.
//! Where versa serves no such kinds (cluster mode: they are kube-apiserver's), the
//! configuration is empty from the start.
//!
//! What does not compile is logged (the object is still used, as kube uses it: the part fails
//! when a request needs it, under its failure policy).

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use versa_admission::{BuildOptions, Configuration, Sources};
use versa_registry::{ADMISSION_GROUP, AdmissionKind, Builtin};
use versa_storage::ListOptions;

use crate::state::State;

/// Keeps the configuration current until shutdown.
pub async fn run(state: Arc<State>) {
    if state.registry.core(Builtin::Admission(AdmissionKind::ValidatingWebhookConfiguration)).is_none() {
        state.admission.set(Configuration::default());
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
    let (configuration, problems) = Configuration::build(&sources, &BuildOptions::default());
    for p in problems {
        tracing::warn!(kind = p.kind, name = %p.name, problem = %p.message, "admission configuration");
    }
    state.admission.set(configuration);
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
