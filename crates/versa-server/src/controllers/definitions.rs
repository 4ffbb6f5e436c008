//! The definitions controller: keeps every definition's `status` true and the serving state in
//! step with the definitions, without restarts.
//!
//! It lists the definitions, then watches them. For each change it recomputes, as
//! kube-apiserver's naming and establishing controllers do:
//!
//! - `status.acceptedNames` and `NamesAccepted` — a requested name is adopted unless another
//!   definition of the same group already holds it (`PluralConflict`, `SingularConflict`,
//!   `ShortNamesConflict`, `KindConflict`, `ListKindConflict`, message `"<name>" is already in
//!   use`); names already accepted stay accepted;
//! - `Established` — true once the names are accepted, and from then on for good;
//!
//! writes the status when it changed (compare-and-swap; a lost race just means a newer event is
//! coming), and swaps the compiled [`Resource`] into the registry when the spec, the accepted
//! names or the deletion state changed. A deleted definition (the finalizer from
//! `versa_registry::definitions`) has its objects removed — objects with finalizers are marked and waited
//! for — and then loses the finalizer, which deletes it. A broken watch means a fresh list.
//!
//! After each change is served (and after the first list), it tells [`crate::replicas`] the
//! revision it has reached — what this replica's writes follow, which a storage migration waits
//! on — and the replica is ready (`/readyz`) only once the others can know that.
//!
//! A test hook, off unless set: while the file named by the environment variable
//! `VERSA_TEST_HOLD_DEFINITIONS` exists, the controller takes no change from its watch — a
//! replica that lags behind the definitions, on demand (`tests/e2e/replicas.rs`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use versa_apiextensions::ResourceDefinition;
use versa_registry::definitions::{CLEANUP_FINALIZER, remove_condition, set_condition};
use versa_registry::meta;
use versa_registry::{Compact, Resource, SchemaTexts};
use versa_storage::{KeyValue, ListOptions, WatchEvent};

use crate::controllers::migration;
use crate::state::State;

/// One known definition: its stored form (the bytes; the JSON tree is rebuilt when a status
/// write needs it, which keeps a thousand definitions small) and its typed form, compacted
/// (`registry::compact`: the schemas as text), shared with the registry when it is the state
/// being served.
#[derive(Debug, Clone)]
struct Known {
    kv: KeyValue,
    def: Arc<ResourceDefinition>,
    schemas: Arc<SchemaTexts>,
    /// What makes the schemas non-structural (condition `NonStructuralSchema`): computed once
    /// per spec, not on every reconciliation (it lowers every version's schema).
    violations: Arc<Vec<String>>,
}

impl Known {
    /// The stored document (it parsed when this was made).
    fn doc(&self) -> Value {
        serde_json::from_slice(&self.kv.value).unwrap_or(Value::Null)
    }

    /// The compact form, as the registry and the OpenAPI cache keep it.
    fn kept(&self) -> Compact {
        Compact { def: self.def.clone(), schemas: self.schemas.clone() }
    }

    /// The full typed definition, schemas included (parsed again from the stored form).
    fn full(&self) -> Option<ResourceDefinition> {
        ResourceDefinition::from_document(&self.doc()).ok()
    }

    /// Only the stored `status`, as `{"status": ...}` — what [`compute_status`] reads and
    /// writes — without building the rest of the document's tree.
    fn status_doc(&self) -> Value {
        #[derive(serde::Deserialize)]
        struct StatusOnly {
            #[serde(default)]
            status: Option<Value>,
        }
        let status = serde_json::from_slice::<StatusOnly>(&self.kv.value).ok().and_then(|s| s.status);
        let mut doc = serde_json::Map::new();
        if let Some(status) = status {
            doc.insert("status".into(), status);
        }
        Value::Object(doc)
    }
}

/// Runs until shutdown: list, watch, reconcile; relist after a broken watch or a change of
/// leadership.
pub async fn run(state: Arc<State>) {
    let cleanups = Running::default();
    let mut leadership = state.leadership.clone();
    let hold = std::env::var_os(HOLD_VARIABLE).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = &hold {
        tracing::warn!(file = %path.display(), "test hook {HOLD_VARIABLE} is set: definition changes wait while the file exists");
    }
    loop {
        let term = leadership.term();
        let outcome = tokio::select! {
            r = sync(&state, &cleanups, term.as_ref(), hold.as_deref()) => r,
            () = leadership.changed() => {
                tracing::info!(leading = leadership.is_leader(), "leadership changed: relisting definitions");
                continue;
            }
            () = state.shutdown.cancelled() => return,
        };
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "definitions controller: relisting");
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// The test hook's variable (see the module documentation).
pub const HOLD_VARIABLE: &str = "VERSA_TEST_HOLD_DEFINITIONS";

/// The test hook: waits while `file` exists.
async fn hold(file: Option<&Path>) {
    let Some(file) = file else { return };
    let mut said = false;
    while file.exists() {
        if !said {
            tracing::warn!(file = %file.display(), "holding definition changes (test hook)");
            said = true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn definitions_prefix(state: &State) -> String {
    state.keys.resource(versa_apiextensions::types::GROUP, "resourcedefinitions")
}

/// `term`: this replica leads (and does the once-only work) until it is cancelled;
/// `hold_file`: the test hook's file.
async fn sync(
    state: &Arc<State>,
    cleanups: &Running,
    term: Option<&CancellationToken>,
    hold_file: Option<&Path>,
) -> anyhow::Result<()> {
    let prefix = definitions_prefix(state);
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    let mut token = None;
    let revision = loop {
        let page =
            state.store.list(&prefix, ListOptions { limit: 500, continue_token: token.take(), revision: 0 }).await?;
        for kv in page.items {
            if let Some(k) = parse(kv, &known, &state.registry) {
                known.insert(k.def.name().to_owned(), k);
            }
        }
        match page.continue_token {
            Some(t) => token = Some(t),
            None => break page.revision,
        }
    };
    // Forget served resources whose definitions disappeared while we were not watching.
    let snapshot = state.registry.snapshot();
    for res in snapshot.resources() {
        let name = res.definition.name();
        if res.flavor == versa_registry::Flavor::Custom && res.builtin.is_none() && !known.contains_key(name) {
            unserve(state, name);
        }
    }
    let names: Vec<String> = known.keys().cloned().collect();
    for name in &names {
        reconcile(state, &known, name, cleanups, term).await;
    }
    state.replicas.applied(revision);
    if !state.registry.is_ready() {
        // Ready once the other replicas can know which definitions this one serves.
        state.replicas.registered().await;
    }
    state.registry.set_ready();
    let mut watch = state.store.watch(&prefix, revision).await?;
    while let Some(event) = watch.next().await {
        let event = event?;
        hold(hold_file).await;
        let revision = event.revision();
        handle(state, &mut known, event, cleanups, term).await;
        state.replicas.applied(revision);
    }
    anyhow::bail!("the definitions watch ended")
}

/// One change from the watch: the definition it is about, then — when the names it holds
/// changed — the others of its group.
async fn handle(
    state: &Arc<State>,
    known: &mut BTreeMap<String, Known>,
    event: WatchEvent,
    cleanups: &Running,
    term: Option<&CancellationToken>,
) {
    // Whether the names this definition holds changed (then the others of its group may
    // now get, or lose, theirs).
    let (name, group, names_changed) = match event {
        WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => {
            let Some(k) = parse(kv, known, &state.registry) else { return };
            let (name, group) = (k.def.name().to_owned(), k.def.spec.group.clone());
            let before = known.get(&name).map(|old| accepted(&old.def));
            let changed = before != Some(accepted(&k.def));
            known.insert(name.clone(), k);
            (name, group, changed)
        }
        WatchEvent::Deleted { prev, .. } => {
            let Some(k) = parse(prev, known, &state.registry) else { return };
            let (name, group) = (k.def.name().to_owned(), k.def.spec.group.clone());
            known.remove(&name);
            unserve(state, &name);
            (name, group, true)
        }
        WatchEvent::Progress { .. } => return,
    };
    if known.contains_key(&name) {
        reconcile(state, known, &name, cleanups, term).await;
    }
    if !names_changed {
        return;
    }
    // Names freed or taken in the group may change the others' acceptance.
    let same_group: Vec<String> = known
        .values()
        .filter(|k| k.def.spec.group == group && k.def.name() != name)
        .map(|k| k.def.name().to_owned())
        .collect();
    for other in same_group {
        reconcile(state, known, &other, cleanups, term).await;
    }
}

/// Reads a stored definition; the structural verdict of the one in `known` under its name is
/// reused when the spec did not change.
fn parse(kv: KeyValue, known: &BTreeMap<String, Known>, registry: &versa_registry::Registry) -> Option<Known> {
    let doc: Value = serde_json::from_slice(&kv.value).ok()?;
    let full = ResourceDefinition::from_document(&doc).ok()?;
    let kept = Compact::of(&full);
    let violations = match known.get(full.name()) {
        Some(before) if before.kept() == kept => before.violations.clone(),
        _ => Arc::new(structural_violations(&full)),
    };
    // One copy per definition: the one being served, when it is this very state.
    let kept = match registry.snapshot().by_name(full.name()) {
        Some(served) if served.kept() == kept => served.kept(),
        _ => kept,
    };
    Some(Known { kv, def: kept.def, schemas: kept.schemas, violations })
}

fn unserve(state: &State, name: &str) {
    state.registry.remove(name);
    count_served(state);
    if let Ok(mut openapi) = state.openapi.lock() {
        openapi.remove(name);
    }
}

/// Brings one definition's serving state — and, on the leader (`term`), its status — up to date.
async fn reconcile(
    state: &Arc<State>,
    known: &BTreeMap<String, Known>,
    name: &str,
    running: &Running,
    term: Option<&CancellationToken>,
) {
    let Some(k) = known.get(name) else { return };
    let deleting = k.def.metadata.deletion_timestamp.is_some();
    let Some(term) = term else {
        // A follower serves what the leader decided.
        serve(state, k, None);
        return;
    };
    if !deleting {
        let others = known.values().filter(|o| o.def.spec.group == k.def.spec.group && o.def.name() != name);
        // The status alone first: most reconciliations (a neighbour in the group changed)
        // change nothing, and the whole document is parsed only when something does.
        let current = k.status_doc();
        let mut status = current.clone();
        compute_status(&mut status, &k.def, &k.violations, others.map(|o| o.def.as_ref()));
        if status != current {
            let mut doc = k.doc();
            if let (Some(obj), Some(new)) = (doc.as_object_mut(), status.get_mut("status")) {
                obj.insert("status".into(), new.take());
            }
            // Serve before saying so: a client that sees `Established` must find the resource
            // (kube sets Established in a separate step for the same reason).
            if let Ok(next) = ResourceDefinition::from_document(&doc)
                && next.is_established()
            {
                let kept = Compact::of(&next);
                let known =
                    Known { kv: k.kv.clone(), def: kept.def, schemas: kept.schemas, violations: k.violations.clone() };
                serve(state, &known, Some(next));
            }
            // The write comes back as a watch event and is served from there. It runs on its
            // own so that the next event is handled meanwhile and many definitions loaded at
            // once share the store's group commits; compare-and-swap keeps it safe (a lost race
            // means a newer event is on its way).
            let bytes = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
            let (state, key, revision, name) = (state.clone(), k.kv.key.clone(), k.kv.mod_revision, name.to_owned());
            tokio::spawn(async move {
                match state.store.update(&key, bytes, revision).await {
                    Ok(_) | Err(versa_storage::Error::Conflict { .. } | versa_storage::Error::NotFound { .. }) => {}
                    Err(e) => tracing::warn!(definition = name, error = %e, "cannot write definition status"),
                }
            });
            return;
        }
    }
    serve(state, k, None);
    if deleting {
        let state = state.clone();
        running.spawn(&running.cleanups, name, term, move |name| async move { cleanup(&state, &name).await });
    } else if migration::wanted(&k.def, &state.migration) {
        let state = state.clone();
        running.spawn(&running.migrations, name, term, move |name| migration::run(state, name));
    }
}

/// The per-definition tasks running (at most one of each kind per definition).
#[derive(Debug, Default, Clone)]
struct Running {
    cleanups: Arc<Mutex<HashSet<String>>>,
    migrations: Arc<Mutex<HashSet<String>>>,
}

impl Running {
    /// Starts `task(name)` unless one is running for `name` in `set`; it stops when `term`
    /// ends.
    fn spawn<F, Fut>(&self, set: &Arc<Mutex<HashSet<String>>>, name: &str, term: &CancellationToken, task: F)
    where
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let fresh = set.lock().map(|mut s| s.insert(name.to_owned())).unwrap_or(false);
        if !fresh {
            return;
        }
        let (set, done, term) = (set.clone(), name.to_owned(), term.clone());
        let fut = task(name.to_owned());
        tokio::spawn(async move {
            tokio::select! {
                () = fut => {}
                () = term.cancelled() => {}
            }
            if let Ok(mut s) = set.lock() {
                s.remove(&done);
            }
        });
    }
}

/// Serves (or stops serving) a definition according to its status; rebuilds only when what
/// serving depends on changed.
/// `full` is the definition `k` holds, schemas included, when the caller has it at hand.
fn serve(state: &State, k: &Known, full: Option<ResourceDefinition>) {
    let name = k.def.name();
    if !k.def.is_established() {
        unserve(state, name);
        return;
    }
    let snapshot = state.registry.snapshot();
    if let Some(current) = snapshot.by_name(name) {
        let same = current.definition.spec == k.def.spec
            && current.definition.conversion_cel == k.def.conversion_cel
            && current.schemas == k.schemas
            && accepted(&current.definition) == accepted(&k.def)
            && current.definition.metadata.deletion_timestamp == k.def.metadata.deletion_timestamp;
        if same {
            return;
        }
    }
    let Some(full) = full.or_else(|| k.full()) else { return };
    state.registry.upsert(name, Arc::new(Resource::build(&full, k.kept(), &state.conversion)));
    count_served(state);
    if let Ok(mut openapi) = state.openapi.lock() {
        openapi.upsert(&full, k.kept());
    }
}

fn count_served(state: &State) {
    state.metrics.served_resources.set(state.registry.snapshot().resources().count() as i64);
}

fn accepted(def: &ResourceDefinition) -> Option<Value> {
    def.status.as_ref().and_then(|s| s.accepted_names.as_ref()).and_then(|n| serde_json::to_value(n).ok())
}

/// Sets `acceptedNames`, `NamesAccepted`, `NonStructuralSchema` (from `violations`, see
/// [`structural_violations`]) and `Established` in a definition document (only its `status` is
/// read or written).
pub fn compute_status<'a>(
    doc: &mut Value,
    def: &ResourceDefinition,
    violations: &[String],
    others: impl Iterator<Item = &'a ResourceDefinition>,
) {
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for o in others {
        if let Some(n) = o.status.as_ref().and_then(|s| s.accepted_names.as_ref()) {
            resources.insert(n.plural.clone());
            resources.extend(n.singular.clone());
            resources.extend(n.short_names.iter().flatten().cloned());
            kinds.insert(n.kind.clone());
            kinds.extend(n.list_kind.clone());
        }
    }
    resources.remove("");
    kinds.remove("");
    let requested = &def.spec.names;
    let old = def.status.as_ref().and_then(|s| s.accepted_names.clone()).unwrap_or_default();
    let mut new = old.clone();
    let mut conflict: Option<(&str, String)> = None;
    let fresh = |want: &str, have: &str, used: &BTreeSet<String>| want == have || !used.contains(want);
    if fresh(&requested.plural, &old.plural, &resources) {
        new.plural = requested.plural.clone();
    } else {
        conflict = Some(("PluralConflict", format!("{:?} is already in use", requested.plural)));
    }
    let want_singular = requested.singular.clone().unwrap_or_default();
    if fresh(&want_singular, old.singular.as_deref().unwrap_or(""), &resources) {
        new.singular = requested.singular.clone();
    } else {
        conflict = Some(("SingularConflict", format!("{want_singular:?} is already in use")));
    }
    let old_short: BTreeSet<String> = old.short_names.iter().flatten().cloned().collect();
    let mut short_ok = true;
    for s in requested.short_names.iter().flatten() {
        if !old_short.contains(s) && resources.contains(s) {
            conflict = Some(("ShortNamesConflict", format!("{s:?} is already in use")));
            short_ok = false;
        }
    }
    if short_ok {
        new.short_names = requested.short_names.clone();
    }
    if fresh(&requested.kind, &old.kind, &kinds) {
        new.kind = requested.kind.clone();
    } else {
        conflict = Some(("KindConflict", format!("{:?} is already in use", requested.kind)));
    }
    let want_list = requested.list_kind.clone().unwrap_or_default();
    if fresh(&want_list, old.list_kind.as_deref().unwrap_or(""), &kinds) {
        new.list_kind = requested.list_kind.clone();
    } else {
        conflict = Some(("ListKindConflict", format!("{want_list:?} is already in use")));
    }
    new.categories = requested.categories.clone();

    let now = meta::now();
    if let Some(o) = doc.as_object_mut() {
        let st = o.entry("status").or_insert_with(|| json!({}));
        if let Some(st) = st.as_object_mut() {
            st.insert("acceptedNames".into(), serde_json::to_value(&new).unwrap_or(json!({})));
        }
    }
    match &conflict {
        None => set_condition(doc, "NamesAccepted", "True", "NoConflicts", "no conflicts found", &now),
        Some((reason, message)) => set_condition(doc, "NamesAccepted", "False", reason, message, &now),
    }
    // `NonStructuralSchema`: only definitions kept from before (validation refuses new
    // non-structural schemas) can have one; the condition lists every violation.
    match violations.len() {
        0 => remove_condition(doc, "NonStructuralSchema"),
        1 => set_condition(doc, "NonStructuralSchema", "True", "Violations", &violations[0], &now),
        _ => set_condition(
            doc,
            "NonStructuralSchema",
            "True",
            "Violations",
            &format!("[{}]", violations.join(", ")),
            &now,
        ),
    }
    // A conversion webhook whose caBundle does not parse: the resource cannot be served.
    if invalid_ca_bundle(def) {
        set_condition(
            doc,
            "Established",
            "False",
            versa_conversion::INVALID_CA_BUNDLE_REASON,
            versa_conversion::INVALID_CA_BUNDLE_MESSAGE,
            &now,
        );
        return;
    }
    if !def.is_established() {
        if conflict.is_none() {
            set_condition(
                doc,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                &now,
            );
        } else {
            set_condition(doc, "Established", "False", "NotAccepted", "not all names are accepted", &now);
        }
    }
}

/// Whether the definition converts with a webhook whose `caBundle` is unusable.
fn invalid_ca_bundle(def: &ResourceDefinition) -> bool {
    let webhook = def.spec.conversion.as_ref().is_some_and(|c| c.strategy == "Webhook");
    webhook
        && versa_conversion::Converter::new(def, Default::default(), &Default::default())
            .err()
            .is_some_and(|e| e.is_invalid_ca_bundle())
}

/// Every way the versions' schemas are not structural, as kube words them.
fn structural_violations(def: &ResourceDefinition) -> Vec<String> {
    let mut out = Vec::new();
    for (i, v) in def.spec.versions.iter().enumerate() {
        let Some(schema) = v.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()) else { continue };
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match versa_schema::Structural::lower(schema) {
            Err(e) => out.push(format!("{path}: {e}")),
            Ok(lowered) => {
                let errs =
                    versa_schema::structural_check::validate_structural(&lowered, &versa_schema::Path::new(&path));
                out.extend(errs.deduplicated().into_iter().map(ToString::to_string));
            }
        }
    }
    out
}

/// Deletes a terminating definition's objects, then removes its finalizer.
async fn cleanup(state: &Arc<State>, name: &str) {
    let def_key = state.keys.object(versa_apiextensions::types::GROUP, "resourcedefinitions", None, name);
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        let Ok(Some(kv)) = state.store.get(&def_key).await else { return };
        let Some(k) = parse(kv, &BTreeMap::new(), &state.registry) else { return };
        let prefix = state.keys.resource(&k.def.spec.group, &k.def.spec.names.plural);
        let remaining = match delete_objects(state, &prefix).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(definition = name, error = %e, "cleaning up objects");
                usize::MAX
            }
        };
        if remaining == 0 {
            let mut doc = k.doc();
            set_condition(
                &mut doc,
                "Terminating",
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
                &meta::now(),
            );
            let finalizers: Vec<Value> = doc
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|f| f.iter().filter(|x| *x != CLEANUP_FINALIZER).cloned().collect())
                .unwrap_or_default();
            let done = if finalizers.is_empty() {
                state.store.delete(&def_key, Some(k.kv.mod_revision)).await.map(|_| ())
            } else {
                doc["metadata"]["finalizers"] = Value::Array(finalizers);
                let bytes = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
                state.store.update(&def_key, bytes, k.kv.mod_revision).await.map(|_| ())
            };
            match done {
                Ok(()) => return,
                Err(versa_storage::Error::Conflict { .. }) => continue,
                Err(e) => tracing::warn!(definition = name, error = %e, "removing the cleanup finalizer"),
            }
        } else if !k.def.condition_is_true("Terminating")
            || k.doc().pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
                cs.iter().any(|c| c["type"] == "Terminating" && c["reason"] == "InstanceDeletionPending")
            })
        {
            let mut doc = k.doc();
            set_condition(
                &mut doc,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
                &meta::now(),
            );
            let bytes = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
            let _ = state.store.update(&def_key, bytes, k.kv.mod_revision).await;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(if remaining == 0 { 50 } else { 1000 })) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// One pass over the objects under `prefix`: objects without finalizers are deleted, objects
/// with finalizers are marked for deletion (the write strategy's mark, as a delete through the
/// API would). Returns how many were there.
pub(crate) async fn delete_objects(state: &State, prefix: &str) -> versa_storage::Result<usize> {
    let page = state.store.list(prefix, ListOptions::default()).await?;
    let count = page.items.len();
    for kv in page.items {
        let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else {
            state.store.delete(&kv.key, Some(kv.mod_revision)).await.ok();
            continue;
        };
        let has_finalizers =
            obj.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        if !has_finalizers {
            state.store.delete(&kv.key, Some(kv.mod_revision)).await.ok();
        } else if obj.pointer("/metadata/deletionTimestamp").is_none() {
            versa_registry::strategy::mark_deleting(&mut obj);
            let bytes = Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
            state.store.update(&kv.key, bytes, kv.mod_revision).await.ok();
        }
    }
    Ok(count)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn definition(plural: &str, kind: &str, schema: Value, accepted: bool) -> (Value, ResourceDefinition) {
        let mut doc = json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List")},
                     "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]},
        });
        if accepted {
            doc["status"] = json!({"acceptedNames": doc["spec"]["names"].clone(),
                                   "conditions": [{"type": "Established", "status": "True"}]});
        }
        let def = ResourceDefinition::from_document(&doc).unwrap();
        (doc, def)
    }

    fn condition(doc: &Value, type_: &str) -> Option<(String, String, String)> {
        let c = doc["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)?;
        Some((c["status"].as_str()?.into(), c["reason"].as_str()?.into(), c["message"].as_str()?.into()))
    }

    #[test]
    fn names_conditions_and_structure() {
        let object = json!({"type": "object"});
        let (_, holder) = definition("widgets", "Widget", object.clone(), true);

        // Fresh names: accepted and established.
        let (mut doc, def) = definition("gadgets", "Gadget", object.clone(), false);
        compute_status(&mut doc, &def, &structural_violations(&def), [&holder].into_iter());
        assert_eq!(condition(&doc, "NamesAccepted").unwrap().1, "NoConflicts");
        assert_eq!(condition(&doc, "Established").unwrap().1, "InitialNamesAccepted");
        assert_eq!(doc["status"]["acceptedNames"]["kind"], "Gadget");
        assert_eq!(condition(&doc, "NonStructuralSchema"), None);

        // A kind (and list kind) another definition of the group holds: refused, not
        // established; as in kube, the last conflict checked names the reason.
        let (mut doc, def) = definition("others", "Widget", object.clone(), false);
        compute_status(&mut doc, &def, &structural_violations(&def), [&holder].into_iter());
        assert_eq!(
            condition(&doc, "NamesAccepted").unwrap(),
            ("False".into(), "ListKindConflict".into(), "\"WidgetList\" is already in use".into())
        );
        assert_eq!(condition(&doc, "Established").unwrap().1, "NotAccepted");
        assert_eq!(doc["status"]["acceptedNames"].get("kind"), Some(&json!("")), "the kind is not adopted");

        // A plural held as another's singular.
        let (mut doc, _) = definition("widget", "Thing", object, false);
        doc["spec"]["names"]["singular"] = json!("thing");
        let def = ResourceDefinition::from_document(&doc).unwrap();
        compute_status(&mut doc, &def, &structural_violations(&def), [&holder].into_iter());
        assert_eq!(condition(&doc, "NamesAccepted").unwrap().1, "PluralConflict");

        // A conversion webhook with a caBundle that is not PEM: not established.
        let (mut doc, _) = definition("hooks", "Hook", json!({"type": "object"}), false);
        doc["spec"]["versions"][0]["name"] = json!("v1");
        doc["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:9/convert", "caBundle": "bm90IGEgY2VydGlmaWNhdGU="}}});
        let def = ResourceDefinition::from_document(&doc).unwrap();
        compute_status(&mut doc, &def, &structural_violations(&def), std::iter::empty());
        assert_eq!(
            condition(&doc, "Established").unwrap(),
            ("False".into(), "InvalidCABundle".into(), "The conversion webhook CABundle is invalid".into())
        );

        // A schema kept from before that is not structural.
        let (mut doc, def) = definition("legacies", "Legacy", json!({"type": "object", "properties": {"a": {}}}), true);
        compute_status(&mut doc, &def, &structural_violations(&def), std::iter::empty());
        let (status, reason, message) = condition(&doc, "NonStructuralSchema").unwrap();
        assert_eq!((status.as_str(), reason.as_str()), ("True", "Violations"));
        assert!(
            message.contains("spec.versions[0].schema.openAPIV3Schema.properties[a].type: Required value"),
            "{message}"
        );
    }
}
