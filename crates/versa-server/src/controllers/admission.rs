//! Follows the admission configuration (`admissionregistration.k8s.io/v1` webhook
//! configurations, policies and bindings) and swaps a freshly compiled
//! [`versa_admission::Configuration`] into the state whenever it changes. Every replica runs
//! it: each admits the writes it serves.
//!
//! - Standalone versa serves those kinds itself: [`run`] reads them from the store (one watch
//!   on the group's key prefix).
//! - Cluster mode: they are kube-apiserver's, and so are the Namespaces admission needs
//!   (selectors, `namespaceObject`, namespace lifecycle): [`follow_kube`], started once
//!   kube-apiserver has been reached, watches them with kube-rs's watcher and keeps them in its
//!   reflector stores; the Namespaces' store is read by admission directly, the configuration
//!   is rebuilt when one of its objects changes. Until every first list is in, writes are
//!   refused. MutatingAdmissionPolicies and their bindings are read at `v1` (1.36), or at
//!   `v1beta1` from a kube-apiserver that does not serve `v1` (1.34, 1.35: the same fields, read
//!   as `v1` objects by [`v1_of`]).
//!
//! What does not compile is logged (the object is still used, as kube uses it: the part fails
//! when a request needs it, under its failure policy).

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{BoxStream, StreamExt as _, select_all};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ValidatingAdmissionPolicy,
};
use k8s_openapi::api::admissionregistration::v1beta1;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use serde::de::DeserializeOwned;
use versa_admission::{BuildOptions, Configuration, Sources};
use versa_registry::{ADMISSION_GROUP, AdmissionKind, Builtin};
use versa_storage::{ListOptions, Update};

use crate::admission::StoreHost;
use crate::cluster::kube::KubeClient;
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

/// Cluster mode: follows kube-apiserver's admission configuration and Namespaces with kube-rs
/// watchers until shutdown, and rebuilds the configuration whenever one of its kinds changes.
/// Each kind is one reflector (a list from the watch cache, then a watch, relisted by the
/// watcher after a 410 or a broken stream, with kube-rs's default backoff). A kind this
/// kube-apiserver does not serve (404 on the list) counts as none of it. Until every list is
/// in, nothing is installed, so writes stay refused.
pub async fn follow_kube(state: Arc<State>, kube: KubeClient) {
    let client = kube.client().clone();
    let (namespaces, namespaces_writer) = reflector::store::<Namespace>();
    state.admission.set_kube_namespaces(namespaces);
    let (validating_webhooks, validating_webhooks_writer) = reflector::store();
    let (mutating_webhooks, mutating_webhooks_writer) = reflector::store();
    let (validating_policies, validating_policies_writer) = reflector::store::<ValidatingAdmissionPolicy>();
    let (validating_bindings, validating_bindings_writer) = reflector::store();
    let (mutating_policies, mutating_policies_writer) = reflector::store::<MutatingAdmissionPolicy>();
    let (mutating_bindings, mutating_bindings_writer) = reflector::store::<MutatingAdmissionPolicyBinding>();
    let (beta_policies, beta_policies_writer) = reflector::store::<v1beta1::MutatingAdmissionPolicy>();
    let (beta_bindings, beta_bindings_writer) = reflector::store::<v1beta1::MutatingAdmissionPolicyBinding>();
    let mut streams = select_all([
        signals(0, &client, validating_webhooks_writer),
        signals(1, &client, mutating_webhooks_writer),
        signals(2, &client, validating_policies_writer),
        signals(3, &client, validating_bindings_writer),
        signals(4, &client, mutating_policies_writer),
        signals(5, &client, mutating_bindings_writer),
        signals(NAMESPACES, &client, namespaces_writer),
        signals(BETA_POLICIES, &client, beta_policies_writer),
        signals(BETA_BINDINGS, &client, beta_bindings_writer),
    ]);
    let mut synced = [false; SOURCES];
    // Which sources kube-apiserver serves (a 404 on the list: not served).
    let mut served = [true; SOURCES];
    // When the configuration is rebuilt next: a burst of changes (kubectl apply of several
    // objects) settles into one rebuild, [`SETTLE`] after its first change — however many
    // follow, so that a steady stream of events cannot put the rebuild off.
    let mut due: Option<tokio::time::Instant> = None;
    let changed = |due: &mut Option<tokio::time::Instant>| {
        due.get_or_insert_with(|| tokio::time::Instant::now() + SETTLE);
    };
    loop {
        let ready = due.filter(|_| synced.iter().all(|s| *s));
        tokio::select! {
            signal = streams.next() => match signal {
                Some((source, Signal::Synced { served: is_served })) => {
                    // A kind that is not served is retried by its watcher: each 404 again is no news.
                    let news = is_served || !synced[source] || served[source];
                    synced[source] = true;
                    served[source] = is_served;
                    if news {
                        changed(&mut due);
                    }
                }
                // The Namespaces are read from their store directly: nothing to rebuild.
                Some((source, Signal::Changed)) if source != NAMESPACES => changed(&mut due),
                Some((_, Signal::Changed)) => {}
                None => return,
            },
            () = sleep_until_due(ready), if ready.is_some() => {
                // MutatingAdmissionPolicies at v1beta1 only where v1 is not served (where both
                // are, they are the same objects).
                let (policies, bindings) = if served[4] || !served[BETA_POLICIES] {
                    (cloned(&mutating_policies), cloned(&mutating_bindings))
                } else {
                    (
                        cloned(&beta_policies).iter().filter_map(v1_of).collect(),
                        cloned(&beta_bindings).iter().filter_map(v1_of).collect(),
                    )
                };
                let sources = (
                    cloned(&validating_webhooks),
                    cloned(&mutating_webhooks),
                    cloned(&validating_policies),
                    cloned(&validating_bindings),
                    policies,
                    bindings,
                );
                let param_kinds = sources.2.iter().filter_map(|p| p.spec.as_ref()?.param_kind.as_ref())
                    .chain(sources.4.iter().filter_map(|p| p.spec.as_ref()?.param_kind.as_ref()));
                for kind in param_kinds {
                    follow_param_kind(&state, &client, kind.api_version.as_deref(), kind.kind.as_deref()).await;
                }
                install(&state, &Sources {
                    validating_webhooks: &sources.0,
                    mutating_webhooks: &sources.1,
                    validating_policies: &sources.2,
                    validating_bindings: &sources.3,
                    mutating_policies: &sources.4,
                    mutating_bindings: &sources.5,
                });
                due = None;
            }
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Follows the parameter objects of a policy's `paramKind` when it is one of kube-apiserver's
/// kinds (versa's own are read from its store).
async fn follow_param_kind(state: &State, client: &kube::Client, api_version: Option<&str>, kind: Option<&str>) {
    let (Some(api_version), Some(kind)) = (api_version, kind) else { return };
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if state.registry.snapshot().by_kind(group, kind).is_some() {
        return;
    }
    let param_kind = versa_admission::ParamKind { api_version: api_version.to_owned(), kind: kind.to_owned() };
    state.admission.kube_params.follow(client, &param_kind, &state.shutdown).await;
}

/// Sleeps until `due` (never returns without one; the caller polls it only with one).
async fn sleep_until_due(due: Option<tokio::time::Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The index of the Namespaces' stream among [`follow_kube`]'s.
const NAMESPACES: usize = 6;
/// The indexes of the `v1beta1` MutatingAdmissionPolicies' and bindings' streams.
const BETA_POLICIES: usize = 7;
const BETA_BINDINGS: usize = 8;
/// How many streams [`follow_kube`] follows.
const SOURCES: usize = 9;

/// A `v1beta1` object as its `v1` kind (MutatingAdmissionPolicy and its binding have the same
/// fields at both versions); `None`, logged, for one that does not read as `v1`.
fn v1_of<B: serde::Serialize, V: DeserializeOwned + kube::Resource<DynamicType = ()>>(beta: &B) -> Option<V> {
    let mut doc = serde_json::to_value(beta).ok()?;
    doc["apiVersion"] = serde_json::json!(V::api_version(&()));
    match serde_json::from_value(doc) {
        Ok(v1) => Some(v1),
        Err(e) => {
            tracing::warn!(kind = V::kind(&()).as_ref(), error = %e, "a v1beta1 object does not read as v1");
            None
        }
    }
}
/// How long a change waits for the changes that come with it before the rebuild.
const SETTLE: Duration = Duration::from_millis(20);

/// What a watch stream tells [`follow_kube`].
enum Signal {
    /// The (re)list is complete: the store holds the kind's objects (or, `served: false`,
    /// there are none: a kind kube-apiserver does not serve).
    Synced { served: bool },
    /// An object was added, changed or deleted.
    Changed,
}

/// The reflector of kind `K` (all namespaces), as `(source, signal)` pairs; errors are logged
/// and retried with backoff.
fn signals<K>(
    source: usize,
    client: &kube::Client,
    writer: reflector::store::Writer<K>,
) -> BoxStream<'static, (usize, Signal)>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + DeserializeOwned + Send + Sync + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    let events = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default().any_semantic()))
        .default_backoff();
    events
        .filter_map(move |event| {
            let signal = match event {
                Ok(watcher::Event::InitDone) => Some(Signal::Synced { served: true }),
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => Some(Signal::Changed),
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => None,
                // Not served by this kube-apiserver: none of it (the watcher keeps trying).
                Err(watcher::Error::InitialListFailed(kube::Error::Api(status))) if status.code == 404 => {
                    Some(Signal::Synced { served: false })
                }
                Err(e) => {
                    tracing::warn!(kind = K::kind(&()).as_ref(), error = %e, "watching kube-apiserver's admission configuration");
                    None
                }
            };
            std::future::ready(signal.map(|s| (source, s)))
        })
        .boxed()
}

/// A store's objects, as owned values.
fn cloned<K: kube::Resource + Clone>(store: &reflector::Store<K>) -> Vec<K>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store.state().iter().map(|o| (**o).clone()).collect()
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
    type_check(state, &validating_policies).await?;
    Ok(revision)
}

/// kube's ValidatingAdmissionPolicy status controller (`validatingadmissionpolicy-status`, in
/// kube-controller-manager): each policy whose `metadata.generation` is past its
/// `status.observedGeneration` gets its expressions type-checked against the schemas of the
/// kinds it matches, and `status.typeChecking` (present, with or without warnings, once
/// checked) and `status.observedGeneration` written. Standalone only: in cluster mode the
/// policies are kube-apiserver's and kube-controller-manager checks them (against versa's
/// published OpenAPI). The write is in place, like the other controllers' status writes; it is
/// a change of the watched prefix, and the next round finds nothing to do.
async fn type_check(state: &State, policies: &[ValidatingAdmissionPolicy]) -> versa_storage::Result<()> {
    let (_, plural, _) = AdmissionKind::ValidatingAdmissionPolicy.names();
    for policy in policies {
        let generation = policy.metadata.generation.unwrap_or(0);
        let observed = policy.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
        if generation <= observed {
            continue;
        }
        let host = StoreHost { state, snapshot: state.registry.snapshot() };
        let checked = versa_admission::type_checking(policy, &host).unwrap_or_default();
        let status = serde_json::json!({"observedGeneration": generation, "typeChecking": checked});
        let name = policy.metadata.name.as_deref().unwrap_or_default();
        let key = state.keys.object(ADMISSION_GROUP, plural, None, name);
        versa_storage::guaranteed_update::<versa_storage::Error, _>(&*state.store, &key, |current| {
            let Some(kv) = current else { return Ok(Update::Keep) };
            let Ok(mut stored) = serde_json::from_slice::<serde_json::Value>(&kv.value) else {
                return Ok(Update::Keep);
            };
            // Only the generation that was checked (a newer one is checked in the next round).
            if stored.pointer("/metadata/generation").and_then(serde_json::Value::as_i64) != Some(generation) {
                return Ok(Update::Keep);
            }
            let Some(object) = stored.as_object_mut() else { return Ok(Update::Keep) };
            let mut merged = object.get("status").cloned().unwrap_or_else(|| serde_json::json!({}));
            if let (Some(merged), Some(new)) = (merged.as_object_mut(), status.as_object()) {
                merged.extend(new.clone());
            }
            object.insert("status".into(), merged);
            // (A JSON value always serialises.)
            Ok(serde_json::to_vec(&stored).map_or(Update::Keep, |bytes| Update::Set(bytes.into())))
        })
        .await?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// A 1.34/1.35 cluster's `v1beta1` policy and binding read as the `v1` objects the
    /// configuration compiles, every field kept.
    #[test]
    fn v1beta1_mutating_policies_read_as_v1() {
        let policy = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["*"],
                    "operations": ["CREATE"], "resources": ["widgets"]}]},
                "variables": [{"name": "v", "expression": "1"}],
                "mutations": [{"patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}],
                "failurePolicy": "Ignore", "reinvocationPolicy": "IfNeeded",
                "matchConditions": [{"name": "m", "expression": "true"}],
            },
        });
        let binding = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": "b"},
            "spec": {"policyName": "p", "paramRef": {"name": "c", "parameterNotFoundAction": "Deny"}},
        });
        let beta: v1beta1::MutatingAdmissionPolicy = serde_json::from_value(policy.clone()).unwrap();
        let v1: MutatingAdmissionPolicy = v1_of(&beta).unwrap();
        let mut want = policy;
        want["apiVersion"] = serde_json::json!("admissionregistration.k8s.io/v1");
        assert_eq!(serde_json::to_value(&v1).unwrap(), want);
        let beta: v1beta1::MutatingAdmissionPolicyBinding = serde_json::from_value(binding.clone()).unwrap();
        let v1: MutatingAdmissionPolicyBinding = v1_of(&beta).unwrap();
        let mut want = binding;
        want["apiVersion"] = serde_json::json!("admissionregistration.k8s.io/v1");
        assert_eq!(serde_json::to_value(&v1).unwrap(), want);
    }
}
