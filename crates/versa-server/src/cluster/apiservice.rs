//! APIService registration (cluster mode): one `apiregistration.k8s.io/v1` APIService named
//! `<version>.<group>` for every group-version versa serves — `v1.versa.dev` included — pointing
//! at versa's Service, so that kube-apiserver proxies those paths here.
//!
//! The controller compares what should exist with what does, whenever the served set changes
//! and every resync period (to repair drift and pick up a rotated CA): it creates what is
//! missing, updates what differs (`caBundle`, priorities, the Service port) and deletes what is
//! no longer served. It only ever touches APIServices that carry its label
//! ([`MANAGED_BY`]=[`MANAGER`]) *and* point at its own Service, so other APIServices — kube's
//! built-in groups, other aggregated servers, another versa installation — are left alone. When
//! a name versa needs is taken by an APIService it does not own (a group kube-apiserver
//! already serves, say), the group is refused: the definitions in it get condition
//! `APIServiceRegistered=False` (reason `GroupConflict`) saying so, and nothing is written.
//!
//! Priorities: `groupPriorityMinimum` 1000 (what kube-apiserver gives CRD groups) and a
//! `versionPriority` that follows Kubernetes' version order, so kube-aggregator picks the same
//! preferred version versa's own discovery does; `v1.versa.dev` has 1000/15, as the chart
//! renders it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use versa_registry::definitions::set_condition;

use super::connection::Cluster;
use crate::state::State;

/// The label marking the APIServices (and the Secret) versa manages.
pub const MANAGED_BY: &str = "versa.dev/managed-by";
pub const MANAGER: &str = "versa";

/// The condition reporting registration on each definition.
pub const CONDITION: &str = "APIServiceRegistered";

const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// What an APIService of versa's should say.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Desired {
    group: String,
    version: String,
    group_priority_minimum: i64,
    version_priority: i64,
}

/// Runs until shutdown.
///
/// Nothing is compared before the definitions are loaded: until then the served set is empty,
/// and reconciling it would delete every APIService of the definitions for a moment at each
/// start — long enough for kube's namespace controller to find their groups gone from discovery
/// and finish deleting a namespace whose objects versa still holds (the real kube-apiserver
/// showed it: `tests/e2e/kube.rs`, `namespace_deletion_waits_for_versa`).
pub async fn run(state: Arc<State>, cluster: Arc<Cluster>) {
    let mut changes = state.registry.subscribe();
    let mut reported = Reported::new();
    while !state.registry.is_ready() {
        tokio::select! {
            _ = changes.changed() => {}
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
    loop {
        if let Err(e) = reconcile(&state, &cluster, &mut reported).await {
            tracing::warn!(error = %e, "APIService registration failed; retrying");
        }
        tokio::select! {
            _ = changes.changed() => {
                // Definitions often arrive in bursts: let the burst settle.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            () = tokio::time::sleep(cluster.resync) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// The APIServices the served set calls for, by name.
fn desired(state: &State) -> BTreeMap<String, Desired> {
    let snapshot = state.registry.snapshot();
    let mut versions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for resource in snapshot.resources() {
        let served = resource.versions.iter().filter(|v| v.served).map(|v| v.name.clone());
        versions.entry(resource.group.clone()).or_default().extend(served);
    }
    let mut out = BTreeMap::new();
    for (group, names) in versions {
        let mut ordered: Vec<String> = names.into_iter().collect();
        ordered.sort_by(|a, b| versa_apiextensions::version::compare_kube_aware_versions(b, a));
        for (rank, version) in ordered.iter().enumerate() {
            let (group_priority_minimum, version_priority) = if group == versa_apiextensions::types::GROUP {
                (1000, 15)
            } else {
                (1000, (100 - rank as i64).max(1))
            };
            out.insert(
                format!("{version}.{group}"),
                Desired { group: group.clone(), version: version.clone(), group_priority_minimum, version_priority },
            );
        }
    }
    out
}

fn object(name: &str, d: &Desired, cluster: &Cluster, ca_bundle: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name, "labels": {MANAGED_BY: MANAGER}},
        "spec": {
            "group": d.group,
            "version": d.version,
            "service": {"namespace": cluster.service.namespace, "name": cluster.service.name, "port": cluster.service.port},
            "caBundle": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca_bundle),
            "groupPriorityMinimum": d.group_priority_minimum,
            "versionPriority": d.version_priority,
        },
    })
}

/// Whether an existing APIService is versa's (label and Service both match).
fn owned(existing: &Value, cluster: &Cluster) -> bool {
    let service = &existing["spec"]["service"];
    existing["metadata"]["labels"][MANAGED_BY] == MANAGER
        && service["namespace"] == cluster.service.namespace.as_str()
        && service["name"] == cluster.service.name.as_str()
}

/// Whether `existing` already says what `want` says (ignoring fields the server fills in).
fn same_spec(existing: &Value, want: &Value) -> bool {
    let (e, w) = (&existing["spec"], &want["spec"]);
    let port = |v: &Value| v["service"]["port"].as_i64().unwrap_or(443);
    ["group", "version", "caBundle", "groupPriorityMinimum", "versionPriority"].iter().all(|k| e[*k] == w[*k])
        && port(e) == port(w)
}

/// The condition last written per definition, so that an unchanged one is not rewritten.
type Reported = std::collections::HashMap<String, (&'static str, String)>;

async fn reconcile(state: &State, cluster: &Cluster, reported: &mut Reported) -> Result<(), String> {
    let ca_bundle = cluster.ca_bundle.pem().map_err(|e| e.to_string())?;
    let desired = desired(state);
    let list = cluster.kube.get(API_SERVICES).await.map_err(|e| e.to_string())?;
    let existing: BTreeMap<String, Value> = list["items"]
        .as_array()
        .map(|items| {
            items.iter().filter_map(|i| Some((i["metadata"]["name"].as_str()?.to_owned(), i.clone()))).collect()
        })
        .unwrap_or_default();

    let mut conflicts: BTreeMap<String, String> = BTreeMap::new();
    let mut registered: BTreeSet<String> = BTreeSet::new();
    let mut errors = Vec::new();
    for (name, d) in &desired {
        let want = object(name, d, cluster, &ca_bundle);
        let path = format!("{API_SERVICES}/{name}");
        let result = match existing.get(name) {
            Some(current) if !owned(current, cluster) => {
                conflicts.entry(d.group.clone()).or_insert_with(|| name.clone());
                continue;
            }
            Some(current) if same_spec(current, &want) => Ok(()),
            Some(current) => {
                let mut update = want.clone();
                update["metadata"] = current["metadata"].clone();
                update["metadata"]["labels"][MANAGED_BY] = json!(MANAGER);
                let done = cluster.kube.replace(&path, &update).await;
                if done.is_ok() {
                    tracing::info!(apiservice = name, "APIService updated");
                }
                done.map(drop)
            }
            None => {
                let done = cluster.kube.create(API_SERVICES, &want).await;
                if done.is_ok() {
                    tracing::info!(apiservice = name, "APIService created");
                }
                done.map(drop)
            }
        };
        match result {
            Ok(()) => {
                registered.insert(d.group.clone());
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    for (name, current) in &existing {
        if desired.contains_key(name) || !owned(current, cluster) {
            continue;
        }
        match cluster.kube.delete(&format!("{API_SERVICES}/{name}")).await {
            Ok(_) => tracing::info!(apiservice = name, "APIService deleted (no longer served)"),
            Err(e) if e.is_not_found() => {}
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    report(state, &conflicts, &registered, reported).await;
    if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
}

/// Writes the registration condition on every served definition whose state changed.
async fn report(
    state: &State,
    conflicts: &BTreeMap<String, String>,
    registered: &BTreeSet<String>,
    reported: &mut Reported,
) {
    let snapshot = state.registry.snapshot();
    reported.retain(|name, _| snapshot.by_name(name).is_some());
    for resource in snapshot.resources() {
        if resource.group == versa_apiextensions::types::GROUP {
            continue;
        }
        let (status, reason, message) = if let Some(taken) = conflicts.get(&resource.group) {
            (
                "False",
                "GroupConflict",
                format!(
                    "group {:?} is already served by kube-apiserver or another API server (APIService {taken:?} is \
                     not managed by versa); choose another group",
                    resource.group
                ),
            )
        } else if registered.contains(&resource.group) {
            ("True", "Registered", format!("APIServices for group {:?} point at versa", resource.group))
        } else {
            continue;
        };
        let name = resource.definition.name().to_owned();
        if reported.get(&name).is_some_and(|(s, m)| *s == status && *m == message) {
            continue;
        }
        let now = versa_registry::meta::now();
        let written = crate::controllers::migration::update_status_if(state, &name, |_, doc| {
            let current = doc
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c["type"] == CONDITION));
            if current.is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == *message) {
                return false;
            }
            set_condition(doc, CONDITION, status, reason, &message, &now);
            true
        })
        .await;
        match written {
            Ok(_) => {
                reported.insert(name, (status, message));
            }
            Err(e) => tracing::warn!(definition = name, error = %e, "cannot write the APIServiceRegistered condition"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A runtime, because a kube client is built (no request is made).
    #[tokio::test]
    async fn ownership_and_sameness() {
        let cluster = Cluster {
            kube: crate::cluster::kube::KubeClient::new(crate::cluster::kube::Config::new(
                "https://127.0.0.1:1".parse().unwrap(),
            ))
            .unwrap(),
            service: crate::cluster::ServiceRef { namespace: "versa".into(), name: "versa".into(), port: 443 },
            ca_bundle: crate::cluster::CaBundle::Generated("CA".into()),
            resync: Duration::from_secs(30),
        };
        let d =
            Desired { group: "g".into(), version: "v1".into(), group_priority_minimum: 1000, version_priority: 100 };
        let want = object("v1.g", &d, &cluster, "CA");
        assert!(owned(&want, &cluster));
        assert!(same_spec(&want, &want));
        let mut local = want.clone();
        local["spec"]["service"] = Value::Null;
        assert!(!owned(&local, &cluster), "kube's own (local) APIService");
        let mut unlabelled = want.clone();
        unlabelled["metadata"]["labels"] = json!({});
        assert!(!owned(&unlabelled, &cluster));
        let mut other_ca = want.clone();
        other_ca["spec"]["caBundle"] = json!("b3RoZXI=");
        assert!(!same_spec(&other_ca, &want));
    }
}
