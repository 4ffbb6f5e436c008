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
//! Work is proportional to the change, so that a definition is served as fast with 10,000
//! others as alone (issue 19). Changes are taken from the watch in batches — whatever has
//! arrived, up to [`MAX_BATCH`] events — and a batch is published as one registry snapshot and
//! one OpenAPI update, and only then are its status writes sent (`Batch`). Names are checked
//! against the group's counted index (`names.rs`), not by walking the group; when the names held
//! in a group change, only its members still waiting for names are looked at again.
//!
//! After each batch is served (and after the first list), it tells [`crate::replicas`] the
//! revision it has reached — what this replica's writes follow, which a storage migration waits
//! on — and the replica is ready (`/readyz`) only once the others can know that.
//!
//! A test hook, off unless set: while the file named by the environment variable
//! `VERSA_TEST_HOLD_DEFINITIONS` exists, the controller takes no change from its watch — a
//! replica that lags behind the definitions, on demand (`tests/e2e/replicas.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use versa_apiextensions::ResourceDefinition;
use versa_registry::definitions::{CLEANUP_FINALIZER, set_condition, track_status_write};
use versa_registry::meta;
use versa_registry::{Change, Compact, Resource, SchemaTexts, Snapshot};
use versa_storage::{KeyValue, ListOptions, WatchEvent};

use crate::controllers::definition_status::{accepted, compute_status, structural_violations};
use crate::controllers::echoes::Echoes;
use crate::controllers::names::{Held, NameIndex};
use crate::controllers::{migration, stored_objects};
use crate::state::State;

/// One known definition: where it is stored and at which revision, its stored `status`, and
/// its typed form, compacted (`registry::Compact`: the schemas as text), shared with the
/// registry when it is the state being served. Not the stored document: a status write reads it
/// again from the store ([`write_status`]), so that a thousand real definitions — tens of KiB
/// each, most of it schema — are not held twice.
#[derive(Debug, Clone)]
struct Known {
    key: String,
    revision: i64,
    /// The stored `status` as `{"status": ...}` (`{}` without one), as compact JSON — or `None`
    /// when the typed status (`def.status`) says exactly the same, as it does unless the stored
    /// one has fields the typed form lacks (storage migration's checkpoint): what
    /// [`compute_status`] reads and writes ([`Known::status`]). Kept as a tree it cost a few KiB
    /// per definition, and as text half a KiB that the typed status already holds.
    status: Option<Arc<str>>,
    def: Arc<ResourceDefinition>,
    schemas: Arc<SchemaTexts>,
    /// What makes the schemas non-structural (condition `NonStructuralSchema`): computed once
    /// per spec, not on every reconciliation (it lowers every version's schema).
    violations: Arc<Vec<String>>,
}

impl Known {
    /// The stored `status` as `{"status": ...}`.
    fn status(&self) -> Value {
        match &self.status {
            // Only what `Known::status_text` serialized is parsed here.
            Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Default::default())),
            None => typed_status_doc(&self.def),
        }
    }

    /// What [`Known::status`] keeps of `status` (a `{"status": ...}` document) for `def`.
    fn status_text(status: &Value, def: &ResourceDefinition) -> Option<Arc<str>> {
        (*status != typed_status_doc(def)).then(|| status.to_string().into())
    }

    /// The compact form, as the registry and the OpenAPI cache keep it.
    fn kept(&self) -> Compact {
        Compact { def: self.def.clone(), schemas: self.schemas.clone() }
    }
}

/// A typed definition's `status`, as `{"status": ...}` (`{}` without one).
fn typed_status_doc(def: &ResourceDefinition) -> Value {
    wrapped_status(def.status.as_ref().and_then(|s| serde_json::to_value(s).ok()))
}

/// A definition document's `status`, as `{"status": ...}` (`{}` without one).
fn status_doc(doc: &Value) -> Value {
    wrapped_status(doc.get("status").cloned())
}

/// `{"status": status}`, or `{}` when there is none (or it is `null`).
fn wrapped_status(status: Option<Value>) -> Value {
    Value::Object(status.filter(|s| !s.is_null()).map(|s| ("status".to_owned(), s)).into_iter().collect())
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

/// The most watch events handled as one batch: bounds how long the first change of a burst
/// waits for the batch to be published.
const MAX_BATCH: usize = 256;

/// How many times a batch looks again at the members still waiting for names in groups whose
/// names changed (each look can free or take names again; kube requeues the group after every
/// status write, to the same end).
const NEIGHBOUR_ROUNDS: usize = 8;

/// `term`: this replica leads (and does the once-only work) until it is cancelled;
/// `hold_file`: the test hook's file.
async fn sync(
    state: &Arc<State>,
    running: &Running,
    term: Option<&CancellationToken>,
    hold_file: Option<&Path>,
) -> anyhow::Result<()> {
    let prefix = definitions_prefix(state);
    let mut view = View::default();
    let mut token = None;
    let revision = loop {
        let page =
            state.store.list(&prefix, ListOptions { limit: 500, continue_token: token.take(), revision: 0 }).await?;
        for kv in page.items {
            if let Some(k) = parse(kv, &view.known, &state.registry) {
                view.insert(k);
            }
        }
        match page.continue_token {
            Some(t) => token = Some(t),
            None => break page.revision,
        }
    };
    let mut batch = Batch::new(state.registry.snapshot());
    // Forget served resources whose definitions disappeared while we were not watching.
    let gone: Vec<String> = batch
        .base
        .resources()
        .filter(|res| res.is_custom())
        .map(|res| res.definition.name().to_owned())
        .filter(|name| !view.known.contains_key(name))
        .collect();
    for name in gone {
        batch.unserve(&name);
    }
    let names: Vec<String> = view.known.keys().cloned().collect();
    reconcile_all(state, &mut view, &names, &mut batch, term);
    batch.finish(state, running, term, &view.echoes);
    state.replicas.applied(revision);
    if !state.registry.is_ready() {
        // Ready once the other replicas can know which definitions this one serves.
        state.replicas.registered().await;
    }
    state.registry.set_ready();
    let mut watch = state.store.watch(&prefix, revision).await?;
    while let Some(event) = watch.next().await {
        let mut events = vec![event?];
        hold(hold_file).await;
        // Whatever else has arrived joins the batch.
        while events.len() < MAX_BATCH
            && let Some(Some(event)) = watch.next().now_or_never()
        {
            events.push(event?);
        }
        let revision = events.iter().map(WatchEvent::revision).max().unwrap_or(0);
        handle(state, &mut view, events, running, term);
        state.replicas.applied(revision);
    }
    anyhow::bail!("the definitions watch ended")
}

/// One batch of changes from the watch: the definitions they are about, then the members of
/// their groups that were waiting for names, if the names held there changed.
fn handle(
    state: &Arc<State>,
    view: &mut View,
    events: Vec<WatchEvent>,
    running: &Running,
    term: Option<&CancellationToken>,
) {
    let mut batch = Batch::new(state.registry.snapshot());
    let mut changed: Vec<String> = Vec::new();
    for event in events {
        match event {
            WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => {
                let (revision, value) = (kv.mod_revision, kv.value.clone());
                let k = match view.echoes.take(&kv.key, &kv.value) {
                    // The controller's own status write: what it means is known already.
                    Some(written) => echo(written, kv, &view.known, &state.registry),
                    None => parse(kv, &view.known, &state.registry),
                };
                let Some(k) = k else { continue };
                changed.push(k.def.name().to_owned());
                batch.docs.insert(k.def.name().to_owned(), (revision, value));
                view.insert(k);
            }
            WatchEvent::Deleted { prev, .. } => {
                view.echoes.take(&prev.key, &[]);
                let Some(k) = parse(prev, &view.known, &state.registry) else { continue };
                let name = k.def.name().to_owned();
                view.remove(&name);
                batch.unserve(&name);
            }
            WatchEvent::Progress { .. } => {}
        }
    }
    // Each once, in the order of their last change.
    let mut seen = HashSet::new();
    let mut order: Vec<String> = changed.into_iter().rev().filter(|n| seen.insert(n.clone())).collect();
    order.reverse();
    reconcile_all(state, view, &order, &mut batch, term);
    batch.finish(state, running, term, &view.echoes);
}

/// Reconciles `names`, then (on the leader) the members waiting for names in the groups whose
/// names changed, until no more change or [`NEIGHBOUR_ROUNDS`].
fn reconcile_all(
    state: &Arc<State>,
    view: &mut View,
    names: &[String],
    batch: &mut Batch,
    term: Option<&CancellationToken>,
) {
    for name in names {
        reconcile(state, view, name, batch, term);
    }
    if term.is_none() {
        // A follower serves what the leader decided: the others' names change nothing.
        view.names.clear_dirty();
        return;
    }
    for _ in 0..NEIGHBOUR_ROUNDS {
        let dirty = view.names.take_dirty();
        if dirty.is_empty() {
            break;
        }
        for (_, waiting) in dirty {
            for name in waiting {
                // One whose status write is on its way is looked at again when it lands.
                let written = view.known.get(&name).is_some_and(|k| view.writing.get(&name) == Some(&k.revision));
                if !written {
                    reconcile(state, view, &name, batch, term);
                }
            }
        }
    }
    view.names.clear_dirty();
}

/// The controller's view of the definitions.
#[derive(Debug, Default)]
struct View {
    known: BTreeMap<String, Known>,
    /// The names each group's definitions hold.
    names: NameIndex,
    /// Definitions whose status this controller is writing, with the revision written over.
    writing: HashMap<String, i64>,
    /// Those writes, to be recognised when they come back.
    echoes: Echoes<Known>,
}

impl View {
    fn insert(&mut self, k: Known) {
        let name = k.def.name().to_owned();
        let (group, held) = (k.def.spec.group.clone(), Held::of(&k.def));
        if self.writing.get(&name).is_some_and(|written| *written < k.revision) {
            self.writing.remove(&name);
        }
        if let Some(old) = self.known.insert(name.clone(), k)
            && old.def.spec.group != group
        {
            self.names.hold(&old.def.spec.group, &name, None);
        }
        self.names.hold(&group, &name, Some(held));
    }

    fn remove(&mut self, name: &str) {
        if let Some(old) = self.known.remove(name) {
            self.names.hold(&old.def.spec.group, name, None);
        }
        self.writing.remove(name);
    }
}

/// Reads a stored definition; the structural verdict of the one in `known` under its name is
/// reused when the spec did not change.
fn parse(kv: KeyValue, known: &BTreeMap<String, Known>, registry: &versa_registry::Registry) -> Option<Known> {
    let doc: Value = serde_json::from_slice(&kv.value).ok()?;
    let full = ResourceDefinition::from_document(&doc).ok()?;
    let before = known.get(full.name());
    let served = registry.snapshot().by_name(full.name()).map(|r| r.kept());
    let kept = Compact::of_like(&full, served.iter().chain(before.map(Known::kept).as_ref()));
    // The verdict reads the versions' schemas alone: a status write does not lower them again.
    let violations = match before {
        Some(before) if before.def.spec == kept.def.spec && before.schemas == kept.schemas => before.violations.clone(),
        _ => {
            // Most definitions have none: they share one empty list.
            static NONE: std::sync::LazyLock<Arc<Vec<String>>> = std::sync::LazyLock::new(Arc::default);
            let violations = structural_violations(&full);
            if violations.is_empty() { NONE.clone() } else { Arc::new(violations) }
        }
    };
    // One copy per definition: the one being served, when it is this very state.
    let kept = match served {
        Some(served) if served == kept => served,
        _ => kept,
    };
    let status = Known::status_text(&status_doc(&doc), &kept.def);
    Some(Known { key: kv.key, revision: kv.mod_revision, status, def: kept.def, schemas: kept.schemas, violations })
}

/// A definition as the controller's own status write left it (`written`, what the controller
/// meant by the bytes the event brings back), at the event's revision. Debug builds read the
/// stored definition too, and check that both say the same.
#[cfg_attr(not(debug_assertions), allow(unused_variables, reason = "read only to check, in debug builds"))]
fn echo(
    written: Known,
    kv: KeyValue,
    known: &BTreeMap<String, Known>,
    registry: &versa_registry::Registry,
) -> Option<Known> {
    let revision = kv.mod_revision;
    #[cfg(debug_assertions)]
    {
        let read = parse(kv, known, registry)?;
        assert!(
            read.def == written.def
                && read.status == written.status
                && read.schemas == written.schemas
                && read.violations == written.violations,
            "a status write read back differs from what the controller wrote:\n  read    {read:?}\n  written {written:?}"
        );
    }
    Some(Known { revision, ..written })
}

/// What one batch changes, gathered while its definitions are reconciled and carried out at its
/// end ([`Batch::finish`]): the served set as one snapshot, the OpenAPI parts, then the status
/// writes — a client that sees `Established` must find the resource (kube sets Established in
/// a separate step for the same reason) — and the per-definition tasks.
struct Batch {
    /// The snapshot the batch started from.
    base: Arc<Snapshot>,
    changes: Vec<Change>,
    /// What each changed name will serve, as of the latest change (`None`: nothing).
    staged: HashMap<String, Option<Arc<Resource>>>,
    openapi: Vec<OpenApiChange>,
    writes: Vec<StatusWrite>,
    /// The stored documents this batch's events brought, by definition name, with their
    /// revisions: a status write over one of them need not read it again.
    docs: HashMap<String, (i64, Bytes)>,
    cleanups: Vec<String>,
    migrations: Vec<String>,
    /// Definitions whose stored objects are to be judged again (`stored_objects`).
    judgements: Vec<String>,
}

/// A status write: over the revision `revision` of the definition `name` at `key`.
struct StatusWrite {
    key: String,
    status: Value,
    revision: i64,
    name: String,
    /// The stored document at that revision, and the definition as the write leaves it, when
    /// the batch has them.
    over: Option<(Bytes, Known)>,
}

enum OpenApiChange {
    Upsert(Compact),
    Remove(String),
}

impl Batch {
    fn new(base: Arc<Snapshot>) -> Batch {
        Batch {
            base,
            changes: Vec::new(),
            staged: HashMap::new(),
            openapi: Vec::new(),
            writes: Vec::new(),
            docs: HashMap::new(),
            cleanups: Vec::new(),
            migrations: Vec::new(),
            judgements: Vec::new(),
        }
    }

    /// What `name` serves as of this batch.
    fn served(&self, name: &str) -> Option<&Arc<Resource>> {
        match self.staged.get(name) {
            Some(staged) => staged.as_ref(),
            None => self.base.by_name(name),
        }
    }

    /// Serves (or stops serving) a definition according to its status; rebuilds only when what
    /// serving depends on changed.
    fn serve(&mut self, state: &State, k: &Known) {
        let name = k.def.name();
        if !k.def.is_established() {
            self.unserve(name);
            return;
        }
        if let Some(current) = self.served(name) {
            let same = current.definition.spec == k.def.spec
                && current.definition.conversion_cel == k.def.conversion_cel
                && current.schemas == k.schemas
                && accepted(&current.definition) == accepted(&k.def)
                && current.definition.metadata.deletion_timestamp == k.def.metadata.deletion_timestamp;
            if same {
                return;
            }
        }
        let resource = Arc::new(Resource::build(&k.def, k.kept(), &state.conversion));
        self.staged.insert(name.to_owned(), Some(resource.clone()));
        self.changes.push(Change::Serve(name.to_owned(), resource));
        self.openapi.push(OpenApiChange::Upsert(k.kept()));
    }

    /// Stops serving `name`, if it is served.
    fn unserve(&mut self, name: &str) {
        if self.served(name).is_none() {
            return;
        }
        self.staged.insert(name.to_owned(), None);
        self.changes.push(Change::Remove(name.to_owned()));
        self.openapi.push(OpenApiChange::Remove(name.to_owned()));
    }

    fn finish(self, state: &Arc<State>, running: &Running, term: Option<&CancellationToken>, echoes: &Echoes<Known>) {
        if !self.changes.is_empty() {
            state.registry.apply(self.changes);
            if let Ok(mut openapi) = state.openapi.lock() {
                for change in self.openapi {
                    match change {
                        OpenApiChange::Upsert(kept) => openapi.upsert(kept),
                        OpenApiChange::Remove(name) => openapi.remove(&name),
                    }
                }
            }
        }
        state.metrics.served_resources.set(state.registry.snapshot().len() as i64);
        // Each write comes back as a watch event and is served from there. It runs on its own
        // so that the next batch is handled meanwhile and many definitions loaded at once share
        // the store's group commits; compare-and-swap keeps it safe (a lost race means a newer
        // event is on its way).
        for StatusWrite { key, status, revision, name, over } in self.writes {
            let state = state.clone();
            // Over a document the batch has, the new one is made here and recognised when it
            // comes back; otherwise the task reads the stored one.
            let ready = over.and_then(|(doc, written)| {
                let bytes = with_status(&doc, status.clone(), state.startup.is_none())?;
                echoes.expect(&key, bytes.clone(), written);
                Some(bytes)
            });
            let echoes = echoes.clone();
            tokio::spawn(async move {
                let result = match &ready {
                    Some(bytes) => state.store.update(&key, bytes.clone(), revision).await.map(|_| ()),
                    None => write_status(&state, &key, status, revision).await,
                };
                if let (Err(_), Some(bytes)) = (&result, &ready) {
                    echoes.failed(&key, bytes);
                }
                match result {
                    Ok(()) | Err(versa_storage::Error::Conflict { .. } | versa_storage::Error::NotFound { .. }) => {}
                    Err(e) => tracing::warn!(definition = name, error = %e, "cannot write definition status"),
                }
            });
        }
        let Some(term) = term else { return };
        for name in self.cleanups {
            let state = state.clone();
            running.spawn(&running.cleanups, &name, term, move |name| async move { cleanup(&state, &name).await });
        }
        for name in self.migrations {
            let state = state.clone();
            running.spawn(&running.migrations, &name, term, move |name| migration::run(state, name));
        }
        for name in self.judgements {
            let state = state.clone();
            running.spawn(&running.judgements, &name, term, move |name| stored_objects::run(state, name));
        }
    }
}

/// Brings one definition's serving state — and, on the leader (`term`), its status — up to date,
/// in `batch`.
fn reconcile(state: &State, view: &mut View, name: &str, batch: &mut Batch, term: Option<&CancellationToken>) {
    let Some(k) = view.known.get(name) else { return };
    let deleting = k.def.metadata.deletion_timestamp.is_some();
    if term.is_none() {
        // A follower serves what the leader decided.
        batch.serve(state, k);
        return;
    }
    if !deleting {
        // The status alone first: most reconciliations change nothing, and the whole document
        // is parsed only when something does.
        let before = k.status();
        let mut status = before.clone();
        compute_status(&mut status, &k.def, &k.violations, &view.names.in_use(&k.def.spec.group, name));
        if status != before {
            let mut next = (*k.def).clone();
            next.status = status.get("status").and_then(|s| serde_json::from_value(s.clone()).ok());
            let held = Held::of(&next);
            let written = Known { status: Known::status_text(&status, &next), def: Arc::new(next), ..k.clone() };
            if written.def.is_established() {
                batch.serve(state, &written);
            }
            let (group, revision) = (k.def.spec.group.clone(), k.revision);
            let new = status.get_mut("status").map(Value::take).unwrap_or(Value::Null);
            let doc = batch.docs.get(name).filter(|(at, _)| *at == revision).map(|(_, doc)| doc.clone());
            batch.writes.push(StatusWrite {
                key: k.key.clone(),
                status: new,
                revision,
                name: name.to_owned(),
                over: doc.map(|doc| (doc, written)),
            });
            // What it holds from now on, for the others' checks (kube's crdMutationCache).
            view.writing.insert(name.to_owned(), revision);
            view.names.hold(&group, name, Some(held));
            return;
        }
    }
    batch.serve(state, k);
    if deleting {
        batch.cleanups.push(name.to_owned());
    } else {
        if migration::wanted(&k.def, &state.migration) {
            batch.migrations.push(name.to_owned());
        }
        if stored_objects::wanted(&k.def) {
            batch.judgements.push(name.to_owned());
        }
    }
}

/// Writes a definition's new `status` over the stored revision `revision`: the document is read
/// again from the store (the controller does not keep it). A document changed since is left
/// alone — its watch event is on its way and will be reconciled — as a failed compare-and-swap
/// would leave it.
async fn write_status(state: &State, key: &str, status: Value, revision: i64) -> versa_storage::Result<()> {
    let Some(kv) = state.store.get(key).await? else { return Ok(()) };
    if kv.mod_revision != revision {
        return Ok(());
    }
    let Some(bytes) = with_status(&kv.value, status, state.startup.is_none()) else { return Ok(()) };
    state.store.update(key, bytes, revision).await.map(|_| ())
}

/// A stored definition document with `status` in place of its own (`None`: not a JSON
/// object), the write recorded in `managedFields` ([`track_status_write`]). Only the top level,
/// `metadata` and `status` are read: the other fields are copied as they are written (the
/// stored text is serde's, its keys sorted, as a tree would write them again).
fn with_status(doc: &[u8], status: Value, standalone: bool) -> Option<Bytes> {
    use serde_json::value::RawValue;
    let mut fields = serde_json::from_slice::<BTreeMap<std::borrow::Cow<'_, str>, &RawValue>>(doc).ok()?;
    let read = |k: &str| fields.get(k).and_then(|v| serde_json::from_str::<Value>(v.get()).ok());
    let tracked = read("metadata")
        .and_then(|m| track_status_write(&m, read("status").as_ref(), &status, standalone, &meta::now()));
    let metadata = tracked.and_then(|m| serde_json::value::to_raw_value(&m).ok());
    if let Some(metadata) = &metadata {
        fields.insert("metadata".into(), metadata);
    }
    let status = serde_json::value::to_raw_value(&status).ok()?;
    fields.insert("status".into(), &status);
    serde_json::to_vec(&fields).ok().map(Bytes::from)
}

/// The per-definition tasks running (at most one of each kind per definition).
#[derive(Debug, Default, Clone)]
struct Running {
    cleanups: Arc<Mutex<HashSet<String>>>,
    migrations: Arc<Mutex<HashSet<String>>>,
    judgements: Arc<Mutex<HashSet<String>>>,
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

/// Deletes a terminating definition's objects, then removes its finalizer.
async fn cleanup(state: &Arc<State>, name: &str) {
    let def_key = state.keys.object(versa_apiextensions::types::GROUP, "resourcedefinitions", None, name);
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        let Ok(Some(kv)) = state.store.get(&def_key).await else { return };
        let Ok(stored) = serde_json::from_slice::<Value>(&kv.value) else { return };
        let Ok(def) = ResourceDefinition::from_document(&stored) else { return };
        let revision = kv.mod_revision;
        let prefix = state.keys.resource(&def.spec.group, &def.spec.names.plural);
        let remaining = match delete_objects(state, &prefix).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(definition = name, error = %e, "cleaning up objects");
                usize::MAX
            }
        };
        let standalone = state.startup.is_none();
        if remaining == 0 {
            let finalizers: Vec<Value> = stored
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|f| f.iter().filter(|x| *x != CLEANUP_FINALIZER).cloned().collect())
                .unwrap_or_default();
            let done = if finalizers.is_empty() {
                // The last finalizer gone: the definition goes, with no status to write first.
                state.store.delete(&def_key, Some(revision)).await.map(|_| ())
            } else {
                let mut doc = stored;
                set_terminating(&mut doc, "False", "InstanceDeletionCompleted", "removed all instances", standalone);
                doc["metadata"]["finalizers"] = Value::Array(finalizers);
                let bytes = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
                state.store.update(&def_key, bytes, revision).await.map(|_| ())
            };
            match done {
                Ok(()) => return,
                Err(versa_storage::Error::Conflict { .. }) => continue,
                Err(e) => tracing::warn!(definition = name, error = %e, "removing the cleanup finalizer"),
            }
        } else if !def.condition_is_true("Terminating")
            || stored.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|cs| {
                cs.iter().any(|c| c["type"] == "Terminating" && c["reason"] == "InstanceDeletionPending")
            })
        {
            let mut doc = stored;
            set_terminating(
                &mut doc,
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
                standalone,
            );
            let bytes = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
            let _ = state.store.update(&def_key, bytes, revision).await;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(if remaining == 0 { 50 } else { 1000 })) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Sets a definition document's `Terminating` condition, as the cleanup does, and records the
/// write in its `managedFields` ([`track_status_write`]) as kube's finalizer controller's: an
/// update of the `status` subresource by kube's own manager (behind kube-apiserver, versa's).
/// The finalizer leaves in the same write, as kube's controller removes it through `/status`.
fn set_terminating(doc: &mut Value, status: &str, reason: &str, message: &str, standalone: bool) {
    let old = doc.get("status").cloned();
    let now = meta::now();
    set_condition(doc, "Terminating", status, reason, message, &now);
    let (Some(metadata), Some(new)) = (doc.get("metadata"), doc.get("status")) else { return };
    if let Some(tracked) = track_status_write(metadata, old.as_ref(), new, standalone, &now) {
        doc["metadata"] = tracked;
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
    use serde_json::json;

    use super::*;
    use crate::controllers::names::Taken;

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
        compute_status(&mut doc, &def, &structural_violations(&def), &Taken::of([&holder]));
        assert_eq!(condition(&doc, "NamesAccepted").unwrap().1, "NoConflicts");
        assert_eq!(condition(&doc, "Established").unwrap().1, "InitialNamesAccepted");
        assert_eq!(doc["status"]["acceptedNames"]["kind"], "Gadget");
        assert_eq!(condition(&doc, "NonStructuralSchema"), None);

        // A kind (and list kind) another definition of the group holds: refused, not
        // established; as in kube, the last conflict checked names the reason.
        let (mut doc, def) = definition("others", "Widget", object.clone(), false);
        compute_status(&mut doc, &def, &structural_violations(&def), &Taken::of([&holder]));
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
        compute_status(&mut doc, &def, &structural_violations(&def), &Taken::of([&holder]));
        assert_eq!(condition(&doc, "NamesAccepted").unwrap().1, "PluralConflict");

        // A conversion webhook with a caBundle that is not PEM: not established.
        let (mut doc, _) = definition("hooks", "Hook", json!({"type": "object"}), false);
        doc["spec"]["versions"][0]["name"] = json!("v1");
        doc["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:9/convert", "caBundle": "bm90IGEgY2VydGlmaWNhdGU="}}});
        let def = ResourceDefinition::from_document(&doc).unwrap();
        compute_status(&mut doc, &def, &structural_violations(&def), &Taken::default());
        assert_eq!(
            condition(&doc, "Established").unwrap(),
            ("False".into(), "InvalidCABundle".into(), "The conversion webhook CABundle is invalid".into())
        );

        // A schema kept from before that is not structural.
        let (mut doc, def) = definition("legacies", "Legacy", json!({"type": "object", "properties": {"a": {}}}), true);
        compute_status(&mut doc, &def, &structural_violations(&def), &Taken::default());
        let (status, reason, message) = condition(&doc, "NonStructuralSchema").unwrap();
        assert_eq!((status.as_str(), reason.as_str()), ("True", "Violations"));
        assert!(
            message.contains("spec.versions[0].schema.openAPIV3Schema.properties[a].type: Required value"),
            "{message}"
        );
    }

    /// A status the typed form says in full is not kept again as text; one with a field the
    /// typed form lacks (storage migration's checkpoint) is, and reads back whole.
    #[test]
    fn status_kept_as_text_only_when_the_typed_form_loses_some() {
        let (mut doc, def) = definition("gadgets", "Gadget", json!({"type": "object"}), false);
        compute_status(&mut doc, &def, &[], &Taken::default());
        let typed = ResourceDefinition::from_document(&doc).unwrap();
        let status = status_doc(&doc);
        assert_eq!(Known::status_text(&status, &typed), None);
        assert_eq!(Known::status_text(&json!({}), &def), None, "no status at all");

        doc["status"][migration::CHECKPOINT_FIELD] = json!({"continue": "abc"});
        let status = status_doc(&doc);
        let text = Known::status_text(&status, &typed).unwrap();
        let known = Known {
            key: String::new(),
            revision: 1,
            status: Some(text),
            def: Arc::new(typed),
            schemas: Arc::default(),
            violations: Arc::default(),
        };
        assert_eq!(known.status(), status);
        assert_eq!(Known { status: None, ..known.clone() }.status()["status"].get(migration::CHECKPOINT_FIELD), None);
    }
}
