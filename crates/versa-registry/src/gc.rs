//! The garbage collector's decisions, without sockets: given the owner graph (every object's
//! identity, `ownerReferences`, finalizers and deletion mark), what kube's collector
//! (`pkg/controller/garbagecollector`) would do next. The standalone controller feeds it what
//! storage holds and carries out the [`Action`]s through the same delete and update paths the
//! API uses; `tests/gc_cases.rs` runs owner graphs from `tests/data/gc/*.yaml` through it.
//!
//! kube's rules, as its `attemptToDeleteItem`, `processDeletingDependentsItem`,
//! `orphanDependents` and `isDangling` apply them:
//!
//! - A reference is *dangling* when no object with its uid exists where the owner would be: in
//!   the dependent's namespace for a namespaced owner kind, at cluster scope otherwise. An
//!   object with the uid elsewhere (another namespace) is no owner: the reference dangles, and
//!   kube reports `OwnerRefInvalidNamespace` on the dependent.
//! - A reference is *waiting* when its owner is being deleted in the foreground (deletion mark
//!   and the `foregroundDeletion` finalizer); otherwise it is *solid*.
//! - A dependent with a solid owner stays; its dangling and waiting references are removed. One
//!   without solid owners is deleted: in the foreground when an owner waits for it and it has
//!   dependents of its own (its references' `blockOwnerDeletion` cleared first when one of those
//!   is itself deleting in the foreground, to break cycles), else with the policy its own
//!   finalizers name (Orphan, Foreground), else in the background. Every delete carries a uid
//!   precondition.
//! - A cluster-scoped dependent that names a namespaced owner kind is left alone (kube's
//!   `namespacedOwnerOfClusterScopedObjectErr`), with the event.
//! - An owner being deleted with `foregroundDeletion` loses that finalizer once no dependent
//!   referencing it with `blockOwnerDeletion: true` remains; one with `orphan` has its
//!   references removed from every dependent, then loses the finalizer.
//!
//! An object being deleted is never deleted again; one without references needs nothing.

use std::collections::{HashMap, HashSet};

use crate::strategy::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

/// One `ownerReferences` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block_owner_deletion: bool,
}

/// An object as the collector sees it (kube's graph `node`, with what it reads of the object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub uid: String,
    pub api_version: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    pub owners: Vec<OwnerRef>,
    pub finalizers: Vec<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl Node {
    /// Whether the collector may act on the object, so that the graph keeps it whole.
    fn acted_on(&self) -> bool {
        !self.owners.is_empty() || self.has(ORPHAN_FINALIZER) || self.has(FOREGROUND_FINALIZER)
    }

    fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// Being deleted in the foreground: kube's `isDeletingDependents`.
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.has(FOREGROUND_FINALIZER)
    }
}

/// The deletion propagation the collector asks for when it deletes a dependent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Background,
    Foreground,
    Orphan,
}

impl Policy {
    /// The `propagationPolicy` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Background => "Background",
            Policy::Foreground => "Foreground",
            Policy::Orphan => "Orphan",
        }
    }
}

/// What the collector does next to one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// DELETE with `propagationPolicy` and preconditions: the uid, and the `resourceVersion` the
    /// decision was made on; on a conflict kube's `deleteObject` reads the object again and
    /// retries with the uid alone if its `ownerReferences` are unchanged.
    Delete { uid: String, policy: Policy },
    /// Remove the references to `owners` from the object's `ownerReferences`.
    RemoveOwnerRefs { uid: String, owners: Vec<String> },
    /// Set `blockOwnerDeletion: false` on every reference of the object (kube's
    /// `unblockOwnerReferences`, which breaks foreground cycles).
    UnblockOwnerRefs { uid: String },
    /// Remove a finalizer (`orphan`, `foregroundDeletion`) from the object.
    RemoveFinalizer { uid: String, finalizer: &'static str },
    /// A Warning event on the object.
    Event { uid: String, reason: &'static str, message: String },
}

/// The owner graph: objects by uid, each object's dependents, and which kinds are
/// cluster-scoped (an owner reference names a kind, not a scope).
///
/// Only objects the collector may act on are kept whole (those with `ownerReferences` or an
/// `orphan` / `foregroundDeletion` finalizer); of every other object — most of a store — only
/// that its uid exists and in which namespace, in about 24 bytes, so that the graph of a
/// million objects stays small. Such an object is a solid owner, never waiting, and has nothing
/// to do itself.
#[derive(Debug, Default, Clone)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    /// Owner uid → uids of the objects that reference it (whether or not the owner exists).
    dependents: HashMap<String, Vec<String>>,
    /// `group/kind` of the cluster-scoped kinds (the core group is empty).
    cluster_scoped: HashSet<String>,
    /// The other objects: uid (a UUID's 16 bytes) → namespace (an index into `namespaces`).
    present: HashMap<[u8; 16], u32>,
    namespaces: Vec<String>,
    namespace_ids: HashMap<String, u32>,
}

/// A UUID in the canonical lowercase form the API server writes, as its 16 bytes (`None` for
/// any other text: such an object is kept whole).
fn uuid_bytes(uid: &str) -> Option<[u8; 16]> {
    let b = uid.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut nibbles = 0usize;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        out[nibbles / 2] |= if nibbles.is_multiple_of(2) { v << 4 } else { v };
        nibbles += 1;
    }
    Some(out)
}

/// `group/kind` of an `apiVersion` and kind.
fn group_kind(api_version: &str, kind: &str) -> String {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    format!("{group}/{kind}")
}

impl Graph {
    /// Declares a kind cluster-scoped (every kind is namespaced unless declared).
    pub fn cluster_scoped(&mut self, api_version: &str, kind: &str) {
        self.cluster_scoped.insert(group_kind(api_version, kind));
    }

    fn is_cluster_scoped(&self, api_version: &str, kind: &str) -> bool {
        self.cluster_scoped.contains(&group_kind(api_version, kind))
    }

    /// Adds or replaces an object.
    pub fn upsert(&mut self, node: Node) {
        self.remove(&node.uid.clone());
        if !node.acted_on()
            && let Some(key) = uuid_bytes(&node.uid)
        {
            let id = match self.namespace_ids.get(&node.namespace) {
                Some(id) => *id,
                None => {
                    let id = u32::try_from(self.namespaces.len()).unwrap_or(u32::MAX);
                    self.namespaces.push(node.namespace.clone());
                    self.namespace_ids.insert(node.namespace.clone(), id);
                    id
                }
            };
            self.present.insert(key, id);
            return;
        }
        for owner in &node.owners {
            self.dependents.entry(owner.uid.clone()).or_default().push(node.uid.clone());
        }
        self.nodes.insert(node.uid.clone(), node);
    }

    /// Whether an object with this uid is in the graph (whole or not).
    pub fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(uid) || uuid_bytes(uid).is_some_and(|k| self.present.contains_key(&k))
    }

    /// Where the object `uid` is (its namespace) and whether it is being deleted in the
    /// foreground: what a dependent needs of its owner.
    fn locate(&self, uid: &str) -> Option<(&str, bool)> {
        if let Some(node) = self.nodes.get(uid) {
            return Some((&node.namespace, node.deleting_dependents()));
        }
        let id = *self.present.get(&uuid_bytes(uid)?)?;
        Some((self.namespaces.get(id as usize).map_or("", String::as_str), false))
    }

    /// Forgets an object (deleted from storage); returns it when it was kept whole.
    pub fn remove(&mut self, uid: &str) -> Option<Node> {
        if let Some(key) = uuid_bytes(uid)
            && self.present.remove(&key).is_some()
        {
            return None;
        }
        let node = self.nodes.remove(uid)?;
        for owner in &node.owners {
            if let Some(deps) = self.dependents.get_mut(&owner.uid) {
                deps.retain(|d| d != uid);
                if deps.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
        Some(node)
    }

    /// The object `uid`, when kept whole (one the collector may act on).
    pub fn get(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len() + self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.present.is_empty()
    }

    /// The objects referencing `uid` (existing ones only).
    pub fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &Node> {
        self.dependents.get(uid).into_iter().flatten().filter_map(|d| self.nodes.get(d))
    }

    /// The uids whose decisions an event on `uid` can change: the object, its owners, and its
    /// dependents (the controller's queue takes these, never the whole graph).
    pub fn affected_by(&self, node: &Node) -> Vec<String> {
        let mut out = vec![node.uid.clone()];
        out.extend(node.owners.iter().map(|o| o.uid.clone()));
        out.extend(self.dependents.get(&node.uid).into_iter().flatten().cloned());
        out
    }

    /// What happens to every object, in uid order: the whole graph's next step.
    pub fn decide_all(&self) -> Vec<Action> {
        let uids: std::collections::BTreeSet<&String> = self.nodes.keys().collect();
        uids.into_iter().flat_map(|uid| self.decide(uid)).collect()
    }

    /// What happens next to the object `uid`: as an owner being deleted (orphaning, or the end
    /// of a foreground deletion), then as a dependent.
    pub fn decide(&self, uid: &str) -> Vec<Action> {
        let Some(node) = self.nodes.get(uid) else { return Vec::new() };
        let mut out = Vec::new();
        if node.deleting {
            if node.has(ORPHAN_FINALIZER) {
                // kube's attemptToOrphan: references first, then the finalizer.
                let orphans: Vec<&Node> = self.dependents_of(uid).collect();
                // Carried out in order; the finalizer goes only once every removal succeeded.
                for dep in &orphans {
                    out.push(Action::RemoveOwnerRefs { uid: dep.uid.clone(), owners: vec![uid.to_owned()] });
                }
                out.push(Action::RemoveFinalizer { uid: uid.to_owned(), finalizer: ORPHAN_FINALIZER });
                return out;
            }
            if node.has(FOREGROUND_FINALIZER) {
                return self.deleting_dependents(node);
            }
            // Being deleted some other way: nothing to do.
            return out;
        }
        if node.owners.is_empty() {
            return out;
        }
        self.as_dependent(node, &mut out);
        out
    }

    /// kube's `processDeletingDependentsItem`.
    fn deleting_dependents(&self, node: &Node) -> Vec<Action> {
        let blocking: Vec<&Node> = self
            .dependents_of(&node.uid)
            .filter(|d| d.owners.iter().any(|o| o.uid == node.uid && o.block_owner_deletion))
            .collect();
        if blocking.is_empty() {
            return vec![Action::RemoveFinalizer { uid: node.uid.clone(), finalizer: FOREGROUND_FINALIZER }];
        }
        // The blocking dependents are handled as dependents (they are deleted in the
        // foreground: their owner waits); nothing to do on the owner itself.
        Vec::new()
    }

    /// kube's `attemptToDeleteItem` for an object that is not being deleted.
    fn as_dependent(&self, node: &Node, out: &mut Vec<Action>) {
        let mut solid = false;
        let mut dangling = Vec::new();
        let mut waiting = Vec::new();
        for owner in &node.owners {
            let namespaced_owner = !self.is_cluster_scoped(&owner.api_version, &owner.kind);
            if node.namespace.is_empty() && namespaced_owner {
                // kube's namespacedOwnerOfClusterScopedObjectErr: the item is left alone.
                out.push(invalid_namespace(node, owner));
                return;
            }
            let want_ns = if namespaced_owner { node.namespace.as_str() } else { "" };
            match self.locate(&owner.uid) {
                Some((namespace, deleting_dependents)) if namespace == want_ns => {
                    if deleting_dependents {
                        waiting.push(owner.uid.clone());
                    } else {
                        solid = true;
                    }
                }
                Some((namespace, _)) => {
                    // The uid exists, but not where this reference can point.
                    if !namespace.is_empty() && namespace != node.namespace {
                        out.push(invalid_namespace(node, owner));
                    }
                    dangling.push(owner.uid.clone());
                }
                None => dangling.push(owner.uid.clone()),
            }
        }
        if solid {
            if !dangling.is_empty() || !waiting.is_empty() {
                let mut owners = dangling;
                owners.extend(waiting);
                out.push(Action::RemoveOwnerRefs { uid: node.uid.clone(), owners });
            }
            return;
        }
        // In the foreground only when an owner waits and the object has dependents of its
        // own to wait for; otherwise by its own finalizers, as any collected object.
        if !waiting.is_empty() && self.dependents_of(&node.uid).next().is_some() {
            if self.dependents_of(&node.uid).any(Node::deleting_dependents) {
                out.push(Action::UnblockOwnerRefs { uid: node.uid.clone() });
            }
            out.push(Action::Delete { uid: node.uid.clone(), policy: Policy::Foreground });
            return;
        }
        let policy = if node.has(ORPHAN_FINALIZER) {
            Policy::Orphan
        } else if node.has(FOREGROUND_FINALIZER) {
            Policy::Foreground
        } else {
            Policy::Background
        };
        out.push(Action::Delete { uid: node.uid.clone(), policy });
    }
}

/// kube's `OwnerRefInvalidNamespace` warning on `node` for `owner`.
fn invalid_namespace(node: &Node, owner: &OwnerRef) -> Action {
    Action::Event {
        uid: node.uid.clone(),
        reason: "OwnerRefInvalidNamespace",
        message: format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
            owner.api_version, owner.kind, node.namespace, owner.name, owner.uid, node.namespace
        ),
    }
}

/// One line per action, as the data tests spell them.
pub fn describe(graph: &Graph, action: &Action) -> String {
    let name = |uid: &str| graph.get(uid).map_or_else(|| uid.to_owned(), |n| n.name.clone());
    match action {
        Action::Delete { uid, policy } => format!("delete {} ({})", name(uid), policy.as_str()),
        Action::RemoveOwnerRefs { uid, owners } => {
            let owners: Vec<String> = owners.iter().map(|o| name(o)).collect();
            format!("remove ownerReferences of {} to {}", name(uid), owners.join(", "))
        }
        Action::UnblockOwnerRefs { uid } => format!("unblock ownerReferences of {}", name(uid)),
        Action::RemoveFinalizer { uid, finalizer } => format!("remove finalizer {finalizer} of {}", name(uid)),
        Action::Event { uid, reason, message } => format!("event Warning {reason} on {}: {message}", name(uid)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn node(uid: &str, namespace: &str, owners: &[&str]) -> Node {
        Node {
            uid: uid.into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: namespace.into(),
            name: uid.into(),
            owners: owners
                .iter()
                .map(|o| OwnerRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: (*o).into(),
                    uid: (*o).into(),
                    block_owner_deletion: false,
                })
                .collect(),
            finalizers: Vec::new(),
            deleting: false,
        }
    }

    const OWNER: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    /// An object with no references and no collector's finalizer is kept as its uid and
    /// namespace only, and still owns, dangles across namespaces, and goes.
    #[test]
    fn objects_kept_small_still_own() {
        let mut g = Graph::default();
        g.upsert(node(OWNER, "a", &[]));
        assert!(g.get(OWNER).is_none() && g.contains(OWNER) && g.len() == 1);
        g.upsert(node("child", "a", &[OWNER]));
        assert_eq!(g.decide("child"), Vec::new(), "a solid owner");
        g.upsert(node("stray", "b", &[OWNER]));
        let actions = g.decide("stray");
        assert!(matches!(&actions[..], [Action::Event { .. }, Action::Delete { .. }]), "{actions:?}");
        g.remove(OWNER);
        assert!(!g.contains(OWNER));
        assert_eq!(g.decide("child"), vec![Action::Delete { uid: "child".into(), policy: Policy::Background }]);
        // Not a canonical lowercase UUID: kept whole.
        assert_eq!(uuid_bytes(&OWNER.to_uppercase()), None);
        assert_eq!(uuid_bytes("0f8fad5b-d9cb-469f-a165-70867728950"), None);
    }
}
