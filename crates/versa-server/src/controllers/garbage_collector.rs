//! Standalone's garbage collector: kube-controller-manager's `garbagecollector` for every
//! resource versa serves (custom resources of every definition, the definitions, the core
//! kinds). It runs only in the leader's term (`leader::while_leading`); behind kube-apiserver
//! kube's collector does this job.
//!
//! The owner graph (`versa_registry::gc::Graph`) is built from one list of everything stored
//! under the installation's prefix and kept by one watch from that list's revision, so it is
//! always storage as of one revision: an owner created before its dependent is in the graph
//! before the dependent is (watches of each resource apart would not promise that, and a
//! dependent seen before its owner would be taken for an orphan). Each change puts the objects
//! whose decisions it can change on the work queue (`Graph::affected_by`); a worker takes an
//! object, asks `Graph::decide`, and carries the actions out as kube's collector does, as a
//! client of the API (`loopback.rs`, as `system:serviceaccount:kube-system:generic-garbage-collector`):
//!
//! - deletes carry the object's uid and the `resourceVersion` decided on as preconditions; on a
//!   conflict the object is read again and, when only its `resourceVersion` moved (same uid, same
//!   `ownerReferences`), deleted with the uid alone (kube's `deleteObject`);
//! - references are removed (or unblocked) by a JSON merge patch naming the `resourceVersion`
//!   read and the references kept (kube's `deleteOwnerRefJSONMergePatch`,
//!   `unblockOwnerReferencesJSONMergePatch`);
//! - `orphan` / `foregroundDeletion` go by a merge patch of the finalizers with the
//!   `resourceVersion` read, retried on conflicts (kube's `removeFinalizer`);
//! - `OwnerRefInvalidNamespace` is a core Warning Event on the dependent from
//!   `garbage-collector-controller`, as client-go's recorder writes one (recorded again only
//!   when the object changes, or after a restart, as kube's).
//!
//! Of the objects it may not act on (no references, no `orphan` / `foregroundDeletion`) the
//! graph keeps only the uid and namespace, and this module nothing: a store of a million plain
//! objects costs a few tens of MiB here, not a copy of its metadata.
//!
//! Nothing is kept but in memory: a new term, a restart or a lost watch lists again and
//! re-derives every decision from what storage holds; a step that failed is retried with a
//! growing delay; an object that waits for a kind or resource not served yet (kube's collector
//! has no REST mapping for it either) is also looked at again as soon as what is served
//! changes. The queue holds each object at most once ([`WORKERS`] at a time in flight), so
//! it is bounded by the number of stored objects. An object acted on is not decided again until
//! it changes (the watch brings the effect of the action).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;
use versa_registry::gc::{Action, Graph, Node, OwnerRef};
use versa_registry::{Resource, meta};
use versa_storage::{KeyValue, ListOptions, WatchEvent};

use crate::controllers::loopback::{Loopback, ObjectRef};
use crate::state::State;

/// Objects worked on at once.
pub const WORKERS: usize = 16;
/// Objects read per page of the start-up list.
const PAGE: usize = 1000;
/// The first and the longest delay before a failed object is tried again.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// The collector's identity, as kube-controller-manager's with `--use-service-account-credentials`.
const USER: &str = "system:serviceaccount:kube-system:generic-garbage-collector";
const USER_AGENT: &str = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/versa/system:serviceaccount:kube-system:generic-garbage-collector";
/// The component of the Events it records.
const COMPONENT: &str = "garbage-collector-controller";

/// Runs until the term ends (the future is dropped) or shutdown; after a failure (storage
/// unavailable, a watch expired) starts over from a new list.
pub async fn run(state: Arc<State>) {
    loop {
        let mut collector = Collector::new(state.clone());
        match collector.run().await {
            Ok(()) => return,
            Err(e) => tracing::warn!(error = %e, "garbage collector: starting over"),
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// What the collector knows of one stored object besides its graph node.
#[derive(Debug, Clone)]
struct Stored {
    key: String,
    revision: i64,
}

/// One object's pass: the actions decided for it, each with where its target is.
#[derive(Debug)]
struct Work {
    uid: String,
    revision: i64,
    steps: Vec<(Action, Target)>,
}

/// An action's object: where it is, and its `ownerReferences` and revision as decided on.
#[derive(Debug, Clone)]
struct Target {
    at: ObjectRef,
    uid: String,
    revision: i64,
    kind: String,
    api_version: String,
}

/// The end of a pass.
#[derive(Debug)]
struct Done {
    uid: String,
    revision: i64,
    result: Result<(), String>,
}

struct Collector {
    state: Arc<State>,
    client: Loopback,
    graph: Graph,
    stored: HashMap<String, Stored>,
    by_key: HashMap<String, String>,
    queue: VecDeque<String>,
    queued: HashSet<String>,
    running: HashSet<String>,
    /// Changed while running: queued again when the pass ends.
    dirty: HashSet<String>,
    /// Failed passes: when each is tried again, and how many times it failed.
    delayed: BinaryHeap<Reverse<(Instant, String)>>,
    /// The objects in `delayed` (each once).
    waiting: HashSet<String>,
    failures: HashMap<String, u32>,
    /// The revision each object was last acted on at (its change has not been seen yet).
    acted: HashMap<String, i64>,
    /// `<group>/<plural>` as stored → the served resource.
    resources: HashMap<(String, String), Arc<Resource>>,
    /// `<group>/<kind>` of every served kind.
    kinds: HashSet<String>,
    /// The served set changed since `resources` and `kinds` were learned: they are learned
    /// again before the next decision, not on every change — a burst of definitions (thousands
    /// installed at once) changes the served set once per batch, and each learning walks every
    /// served resource.
    resources_stale: bool,
}

/// Why a collector starts over.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("storage: {0}")]
    Storage(#[from] versa_storage::Error),
    #[error("the watch ended")]
    WatchEnded,
}

impl Collector {
    fn new(state: Arc<State>) -> Collector {
        let client = Loopback::new(
            state.clone(),
            USER,
            &["system:serviceaccounts", "system:serviceaccounts:kube-system", crate::auth::AUTHENTICATED_GROUP],
            USER_AGENT,
        );
        Collector {
            state,
            client,
            graph: Graph::default(),
            stored: HashMap::new(),
            by_key: HashMap::new(),
            queue: VecDeque::new(),
            queued: HashSet::new(),
            running: HashSet::new(),
            dirty: HashSet::new(),
            delayed: BinaryHeap::new(),
            waiting: HashSet::new(),
            failures: HashMap::new(),
            acted: HashMap::new(),
            resources: HashMap::new(),
            kinds: HashSet::new(),
            resources_stale: false,
        }
    }

    async fn run(&mut self) -> Result<(), Error> {
        self.learn_resources();
        let mut registry_changes = self.state.registry.subscribe();
        let prefix = format!("{}/", self.state.keys.prefix());
        let mut options = ListOptions { limit: PAGE, ..Default::default() };
        let revision = loop {
            let page = self.state.store.list(&prefix, options.clone()).await?;
            for kv in &page.items {
                self.upsert(kv, false);
            }
            match page.continue_token {
                Some(token) => options.continue_token = Some(token),
                None => break page.revision,
            }
        };
        let mut uids: Vec<String> = self.stored.keys().cloned().collect();
        uids.sort();
        for uid in uids {
            self.enqueue(uid);
        }
        tracing::info!(objects = self.graph.len(), revision, "garbage collector: graph built");
        let mut watch = self.state.store.watch(&prefix, revision).await?;
        let mut tasks: JoinSet<Done> = JoinSet::new();
        loop {
            self.release_delayed();
            while tasks.len() < WORKERS {
                let Some(work) = self.next_work() else { break };
                let client = self.client.clone();
                let state = self.state.clone();
                tasks.spawn(carry_out(state, client, work));
            }
            let next_retry = self.delayed.peek().map(|Reverse((at, _))| *at);
            tokio::select! {
                biased;
                () = self.state.shutdown.cancelled() => return Ok(()),
                Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                    if let Ok(done) = done {
                        self.finished(done);
                    }
                }
                event = watch.next() => match event {
                    Some(Ok(event)) => self.apply(event),
                    Some(Err(e)) => return Err(e.into()),
                    None => return Err(Error::WatchEnded),
                },
                changed = registry_changes.changed() => {
                    if changed.is_ok() {
                        self.resources_stale = true;
                        // New kinds can make references resolvable: the objects waiting for a
                        // kind or a resource (`next_work`) are looked at again now. Nothing else
                        // depends on what is served, so the others stay where they are — with
                        // thousands of definitions, every object again on each change made a
                        // burst of definitions quadratic.
                        let waiting: Vec<String> = self.waiting.iter().cloned().collect();
                        for uid in waiting {
                            self.enqueue(uid);
                        }
                    }
                }
                () = sleep_until(next_retry) => {}
            }
        }
    }

    /// The served resources and their scopes, from the registry's current snapshot.
    fn learn_resources(&mut self) {
        self.resources_stale = false;
        let snapshot = self.state.registry.snapshot();
        self.resources.clear();
        self.kinds.clear();
        for res in snapshot.resources() {
            let (group, plural) = res.stored_as();
            let primary = res.group == group && res.plural == plural;
            let entry = self.resources.entry((group.to_owned(), plural.to_owned()));
            match entry {
                std::collections::hash_map::Entry::Occupied(mut o) if primary => {
                    o.insert(res.clone());
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(res.clone());
                }
            }
            self.kinds.insert(format!("{}/{}", res.group, res.kind));
            if !res.namespaced {
                self.graph.cluster_scoped(&res.api_version(&res.storage_version), &res.kind);
            }
        }
    }

    /// Takes a stored object into the graph (`queue`: what its change affects goes on the queue).
    fn upsert(&mut self, kv: &KeyValue, queue: bool) {
        let Some(node) = node_of(&kv.value) else {
            // Not an object (or unreadable): forget what was at the key.
            self.forget(&kv.key, None, queue);
            return;
        };
        if let Some(old_uid) = self.by_key.get(&kv.key).cloned()
            && old_uid != node.uid
        {
            self.forget(&kv.key, Some(old_uid), queue);
        }
        let mut affected = Vec::new();
        if queue {
            if let Some(old) = self.graph.get(&node.uid) {
                affected.extend(self.graph.affected_by(old));
            }
            affected.extend(self.graph.affected_by(&node));
        }
        let uid = node.uid.clone();
        self.graph.upsert(node);
        // Where it is and at which revision, for the objects the collector may act on (the
        // graph keeps only their uid and namespace of the others).
        if self.graph.get(&uid).is_some() {
            self.by_key.insert(kv.key.clone(), uid.clone());
            self.stored.insert(uid, Stored { key: kv.key.clone(), revision: kv.mod_revision });
        } else {
            self.by_key.remove(&kv.key);
            self.stored.remove(&uid);
            self.acted.remove(&uid);
        }
        for uid in affected {
            self.enqueue(uid);
        }
    }

    /// The object at `key` (`uid`, when known from its last value) is gone.
    fn forget(&mut self, key: &str, uid: Option<String>, queue: bool) {
        let known = self.by_key.remove(key);
        let Some(uid) = uid.or(known) else { return };
        self.stored.remove(&uid);
        self.acted.remove(&uid);
        self.failures.remove(&uid);
        let node = self.graph.remove(&uid);
        if queue {
            // Its owners (a foreground deletion may be over) and dependents (now dangling).
            for owner in node.iter().flat_map(|n| &n.owners) {
                self.enqueue(owner.uid.clone());
            }
            let deps: Vec<String> = self.graph.dependents_of(&uid).map(|d| d.uid.clone()).collect();
            for dep in deps {
                self.enqueue(dep);
            }
        }
    }

    fn apply(&mut self, event: WatchEvent) {
        match event {
            WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => self.upsert(&kv, true),
            WatchEvent::Deleted { prev, .. } => {
                let uid = node_of(&prev.value).map(|n| n.uid);
                self.forget(&prev.key, uid, true);
            }
            WatchEvent::Progress { .. } => {}
        }
    }

    fn enqueue(&mut self, uid: String) {
        if !self.stored.contains_key(&uid) {
            return;
        }
        if self.running.contains(&uid) {
            self.dirty.insert(uid);
        } else if self.queued.insert(uid.clone()) {
            self.queue.push_back(uid);
        }
    }

    fn release_delayed(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((at, _))) = self.delayed.peek() {
            if *at > now {
                break;
            }
            if let Some(Reverse((_, uid))) = self.delayed.pop() {
                self.waiting.remove(&uid);
                self.enqueue(uid);
            }
        }
    }

    /// The next object with something to do, its actions resolved to their targets.
    fn next_work(&mut self) -> Option<Work> {
        while let Some(uid) = self.queue.pop_front() {
            self.queued.remove(&uid);
            let Some(stored) = self.stored.get(&uid) else { continue };
            let revision = stored.revision;
            if self.acted.get(&uid) == Some(&revision) {
                continue;
            }
            if self.resources_stale {
                self.learn_resources();
            }
            let Some(node) = self.graph.get(&uid) else { continue };
            // kube's collector cannot judge a reference to a kind it has no REST mapping for: it
            // tries again later.
            if !node.deleting && node.owners.iter().any(|o| !self.kinds.contains(&group_kind(&o.api_version, &o.kind)))
            {
                self.retry_later(uid);
                continue;
            }
            let actions = self.graph.decide(&uid);
            if actions.is_empty() {
                continue;
            }
            tracing::debug!(uid, ?actions, "garbage collector: acting");
            let mut steps = Vec::with_capacity(actions.len());
            for action in actions {
                match self.target(action_uid(&action)) {
                    Some(target) => steps.push((action, target)),
                    // Not served (a definition on its way): later.
                    None => break,
                }
            }
            if steps.is_empty() {
                self.retry_later(uid);
                continue;
            }
            self.running.insert(uid.clone());
            return Some(Work { uid, revision, steps });
        }
        None
    }

    /// Where the object `uid` is, as the graph last saw it.
    fn target(&self, uid: &str) -> Option<Target> {
        let stored = self.stored.get(uid)?;
        let node = self.graph.get(uid)?;
        let rest = stored.key.strip_prefix(self.state.keys.prefix())?.strip_prefix('/')?;
        let (group, rest) = rest.split_once('/')?;
        let (plural, _) = rest.split_once('/')?;
        let res = self.resources.get(&(group.to_owned(), plural.to_owned()))?.clone();
        let namespace = (!node.namespace.is_empty()).then(|| node.namespace.clone());
        Some(Target {
            at: ObjectRef { res, namespace, name: node.name.clone() },
            uid: uid.to_owned(),
            revision: stored.revision,
            kind: node.kind.clone(),
            api_version: node.api_version.clone(),
        })
    }

    fn finished(&mut self, done: Done) {
        self.running.remove(&done.uid);
        match done.result {
            Ok(()) => {
                self.failures.remove(&done.uid);
                if self.stored.get(&done.uid).is_some_and(|s| s.revision == done.revision) {
                    self.acted.insert(done.uid.clone(), done.revision);
                }
            }
            Err(e) => {
                tracing::debug!(uid = done.uid, error = e, "garbage collector: trying again later");
                self.retry_later(done.uid.clone());
            }
        }
        if self.dirty.remove(&done.uid) {
            self.enqueue(done.uid);
        }
    }

    fn retry_later(&mut self, uid: String) {
        if !self.waiting.insert(uid.clone()) {
            return;
        }
        let failures = self.failures.entry(uid.clone()).or_insert(0);
        *failures = failures.saturating_add(1);
        let delay = RETRY_FIRST.saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(16))).min(RETRY_MAX);
        self.delayed.push(Reverse((Instant::now() + delay, uid)));
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn action_uid(action: &Action) -> &str {
    match action {
        Action::Delete { uid, .. }
        | Action::RemoveOwnerRefs { uid, .. }
        | Action::UnblockOwnerRefs { uid }
        | Action::RemoveFinalizer { uid, .. }
        | Action::Event { uid, .. } => uid,
    }
}

fn group_kind(api_version: &str, kind: &str) -> String {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    format!("{group}/{kind}")
}

/// What the collector reads of a stored object: its type and metadata; everything else is
/// skipped by the parser, not built (every write of the store passes through here).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredObject {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<StoredMeta>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredMeta {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    owner_references: Option<Vec<StoredRef>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRef {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

/// The graph node of a stored object (`None`: not an object with a uid).
fn node_of(value: &[u8]) -> Option<Node> {
    // Every field may be absent or null.
    let obj: StoredObject = serde_json::from_slice(value).ok()?;
    let meta = obj.metadata?;
    let uid = meta.uid.filter(|u| !u.is_empty())?;
    let owners = meta
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| OwnerRef {
            api_version: r.api_version.unwrap_or_default(),
            kind: r.kind.unwrap_or_default(),
            name: r.name.unwrap_or_default(),
            uid: r.uid.unwrap_or_default(),
            block_owner_deletion: r.block_owner_deletion.unwrap_or(false),
        })
        .collect();
    Some(Node {
        uid,
        api_version: obj.api_version.unwrap_or_default(),
        kind: obj.kind.unwrap_or_default(),
        namespace: meta.namespace.unwrap_or_default(),
        name: meta.name.unwrap_or_default(),
        owners,
        finalizers: meta.finalizers.unwrap_or_default(),
        deleting: meta.deletion_timestamp.is_some(),
    })
}

/// One pass: the steps in order, stopping at the first that fails.
async fn carry_out(state: Arc<State>, client: Loopback, work: Work) -> Done {
    let mut result = Ok(());
    for (action, target) in &work.steps {
        let step = match action {
            Action::Delete { policy, .. } => delete(&client, target, policy.as_str()).await,
            Action::RemoveOwnerRefs { owners, .. } => {
                patch_references(&client, target, |refs| {
                    refs.retain(|r| !owners.iter().any(|o| r.get("uid").and_then(Value::as_str) == Some(o.as_str())));
                })
                .await
            }
            Action::UnblockOwnerRefs { .. } => {
                patch_references(&client, target, |refs| {
                    for r in refs.iter_mut() {
                        r["blockOwnerDeletion"] = json!(false);
                    }
                })
                .await
            }
            Action::RemoveFinalizer { finalizer, .. } => remove_finalizer(&client, target, finalizer).await,
            Action::Event { reason, message, .. } => record_event(&state, &client, target, reason, message).await,
        };
        if let Err(e) = step {
            result = Err(e);
            break;
        }
    }
    Done { uid: work.uid, revision: work.revision, result }
}

/// kube's `deleteObject`.
async fn delete(client: &Loopback, target: &Target, policy: &str) -> Result<(), String> {
    let with_revision = json!({
        "kind": "DeleteOptions", "apiVersion": "v1",
        "preconditions": {"uid": target.uid, "resourceVersion": target.revision.to_string()},
        "propagationPolicy": policy,
    });
    let answer = client.delete(&target.at, &with_revision).await;
    if answer.is_success() || answer.code == http::StatusCode::NOT_FOUND {
        return Ok(());
    }
    if answer.code != http::StatusCode::CONFLICT {
        return Err(answer.message());
    }
    // Changed since: deleted with the uid alone when only its resourceVersion moved.
    let live = client.get(&target.at).await;
    if live.code == http::StatusCode::NOT_FOUND {
        return Ok(());
    }
    let same_uid = live.body.pointer("/metadata/uid").and_then(Value::as_str) == Some(target.uid.as_str());
    let refs_then = owner_refs_at(client, target).await;
    let refs_now = live.body.pointer("/metadata/ownerReferences").cloned();
    if !(live.is_success() && same_uid && refs_then.as_ref() == Some(&refs_now)) {
        return Err(answer.message());
    }
    let uid_only = json!({
        "kind": "DeleteOptions", "apiVersion": "v1",
        "preconditions": {"uid": target.uid},
        "propagationPolicy": policy,
    });
    let answer = client.delete(&target.at, &uid_only).await;
    if answer.is_success() || answer.code == http::StatusCode::NOT_FOUND { Ok(()) } else { Err(answer.message()) }
}

/// The `ownerReferences` of the object as decided on (its stored revision), when storage still
/// has that revision: what kube compares the live object's with.
async fn owner_refs_at(client: &Loopback, target: &Target) -> Option<Option<Value>> {
    let state = client.state();
    let (group, plural) = target.at.res.stored_as();
    let key = state.keys.object(group, plural, target.at.namespace.as_deref(), &target.at.name);
    let page =
        state.store.list(&key, ListOptions { limit: 1, continue_token: None, revision: target.revision }).await.ok()?;
    let kv = page.items.into_iter().find(|kv| kv.key == key)?;
    let obj: Value = serde_json::from_slice(&kv.value).ok()?;
    Some(obj.pointer("/metadata/ownerReferences").cloned())
}

/// Reads the object, changes its references with `change`, and writes them back with the
/// `resourceVersion` read (kube's JSON merge patches; no references left is `null`).
async fn patch_references(client: &Loopback, target: &Target, change: impl Fn(&mut Vec<Value>)) -> Result<(), String> {
    let live = client.get(&target.at).await;
    if live.code == http::StatusCode::NOT_FOUND {
        return Ok(());
    }
    if !live.is_success() {
        return Err(live.message());
    }
    if live.body.pointer("/metadata/uid").and_then(Value::as_str) != Some(target.uid.as_str()) {
        return Ok(());
    }
    let before = live.body.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut refs = before.clone();
    change(&mut refs);
    if refs == before {
        return Ok(());
    }
    let refs = if refs.is_empty() { Value::Null } else { Value::Array(refs) };
    let patch =
        json!({"metadata": {"resourceVersion": live.resource_version().unwrap_or(""), "ownerReferences": refs}});
    let answer = client.merge_patch(&target.at, &patch).await;
    if answer.is_success() || answer.code == http::StatusCode::NOT_FOUND { Ok(()) } else { Err(answer.message()) }
}

/// kube's `removeFinalizer`: read, drop the finalizer, merge-patch with the `resourceVersion`
/// read; again on a conflict (client-go's `retry.DefaultBackoff`: five tries).
async fn remove_finalizer(client: &Loopback, target: &Target, finalizer: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..5 {
        let live = client.get(&target.at).await;
        if live.code == http::StatusCode::NOT_FOUND {
            return Ok(());
        }
        if !live.is_success() {
            return Err(format!(
                "cannot finalize owner {}, because cannot get it: {}. The garbage collector will retry later",
                target.at.name,
                live.message()
            ));
        }
        let finalizers: Vec<Value> =
            live.body.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        if !finalizers.iter().any(|f| f == finalizer) {
            return Ok(());
        }
        let kept: Vec<Value> = finalizers.into_iter().filter(|f| f != finalizer).collect();
        let kept = if kept.is_empty() { Value::Null } else { Value::Array(kept) };
        let patch = json!({"metadata": {"resourceVersion": live.resource_version().unwrap_or(""), "finalizers": kept}});
        let answer = client.merge_patch(&target.at, &patch).await;
        if answer.is_success() || answer.code == http::StatusCode::NOT_FOUND {
            return Ok(());
        }
        if answer.code != http::StatusCode::CONFLICT {
            return Err(answer.message());
        }
        last = answer.message();
    }
    Err(format!(
        "updateMaxRetries(5) has reached. The garbage collector will retry later for owner {}: {last}",
        target.at.name
    ))
}

/// A Warning Event on the object, as client-go's recorder writes one for the collector.
async fn record_event(
    state: &State,
    client: &Loopback,
    target: &Target,
    reason: &str,
    message: &str,
) -> Result<(), String> {
    let Some(events) = state.registry.core(versa_registry::Builtin::Event) else { return Ok(()) };
    let namespace = target.at.namespace.clone().unwrap_or_else(|| "default".to_owned());
    let now = meta::now();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut involved =
        json!({"kind": target.kind, "name": target.at.name, "uid": target.uid, "apiVersion": target.api_version});
    if let Some(ns) = &target.at.namespace {
        involved["namespace"] = json!(ns);
    }
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.{nanos:x}", target.at.name), "namespace": namespace},
        "involvedObject": involved,
        "reason": reason, "message": message,
        "source": {"component": COMPONENT},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": "Warning",
        "reportingComponent": COMPONENT, "reportingInstance": "",
    });
    let answer = client.create(events, Some(&namespace), &event).await;
    if answer.is_success() || answer.code == http::StatusCode::CONFLICT { Ok(()) } else { Err(answer.message()) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::node_of;

    /// The collector reads type and metadata only, and takes nulls for absent fields.
    #[test]
    fn reads_what_the_collector_needs() {
        let text = br#"{"apiVersion":"g/v1","kind":"W","spec":{"deep":[1,{"x":null}]},"metadata":{"uid":"u","name":"n","namespace":"ns","finalizers":null,"deletionTimestamp":"2026-01-01T00:00:00Z","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"ou","blockOwnerDeletion":true,"controller":null}]}}"#;
        let node = node_of(text).unwrap();
        assert_eq!((node.uid.as_str(), node.namespace.as_str(), node.deleting), ("u", "ns", true));
        assert!(node.finalizers.is_empty());
        assert_eq!(node.owners[0].uid, "ou");
        assert!(node.owners[0].block_owner_deletion);
        let plain = br#"{"metadata":{"uid":"u","ownerReferences":null,"deletionTimestamp":null}}"#;
        let node = node_of(plain).unwrap();
        assert!(node.owners.is_empty() && !node.deleting);
        assert!(node_of(br#"{"metadata":{}}"#).is_none());
        assert!(node_of(b"not json").is_none());
    }
}
