//! The served set: which resources are served now, swapped whole on every change.
//!
//! The [`Registry`] holds one [`Snapshot`] (an `Arc`); a definition change builds a new
//! snapshot with the new [`Resource`] in it and swaps it in one step. Requests take the
//! snapshot at routing time and keep it to the end, so a request never sees half of an update.
//!
//! A snapshot is split by API group ([`Group`], each an `Arc`): a change copies the map of
//! groups (one pointer per group) and rebuilds only the groups it touches, so publishing costs
//! the number of groups plus the size of the touched groups, not the number of resources — and
//! a group that did not change keeps its discovery documents, built on first use. Changes that
//! arrive together are published together ([`Registry::apply`]): one swap for a whole batch.
//!
//! Every served resource's name is `<plural>.<group>` (just `<plural>` in the core group, `""`):
//! definitions are validated so, and the built-in ones are named so. Lookups by name go to the
//! group the name ends with.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use versa_apiextensions::ResourceDefinition;

use crate::resource::{Builtin, Face, Resource};

/// The served resources at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// By group name (`""` for the core group). The names are shared by every snapshot, which
    /// copies this map.
    groups: BTreeMap<Arc<str>, Arc<Group>>,
    /// How many resources are served.
    len: usize,
    /// Discovery documents spanning every group, built on first use and kept until the next
    /// change.
    pub discovery: DiscoveryCache,
}

/// Discovery documents of one snapshot (as the HTTP side keeps them: gzip-compressed JSON).
#[derive(Debug, Default)]
pub struct DiscoveryCache {
    pub group_list: OnceLock<bytes::Bytes>,
    pub aggregated: OnceLock<bytes::Bytes>,
}

/// The served resources of one API group, shared by every snapshot in which the group did not
/// change.
///
/// Both indexes are sorted vectors searched by bisection, not maps: most groups hold one or a
/// few resources, and kept for every group a B-tree leaf and a hash table cost more than the
/// resource's own names (docs/memory.md). An edit copies the group anyway, so inserting into
/// the middle of a vector costs nothing a map would have saved.
#[derive(Default)]
pub struct Group {
    /// By definition name.
    by_name: Vec<(Box<str>, Arc<Resource>)>,
    /// By plural (the accepted one, [`Resource::plural`]): at most one resource per plural.
    by_plural: Vec<Arc<Resource>>,
    /// What the HTTP side derives from this group alone (its discovery documents), built on
    /// first use: a group that did not change keeps it across snapshots. The registry knows
    /// nothing of its shape.
    pub derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("by_name", &self.by_name.iter().map(|(n, _)| n)).finish_non_exhaustive()
    }
}

impl Group {
    /// The group's resources, in definition-name order.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.by_name.iter().map(|(_, r)| r)
    }

    /// The definitions of the group's resources (the input of its discovery documents).
    pub fn definitions(&self) -> Vec<&ResourceDefinition> {
        self.resources().map(|r| r.definition.as_ref()).collect()
    }

    /// The resource served under definition name `name`.
    fn named(&self, name: &str) -> Option<&Arc<Resource>> {
        let at = find_key(&self.by_name, name).ok()?;
        Some(&self.by_name[at].1)
    }

    /// The resource routed at `plural`.
    fn routed(&self, plural: &str) -> Option<&Arc<Resource>> {
        let at = self.plural_at(plural).ok()?;
        Some(&self.by_plural[at])
    }

    /// Where `plural` is in `by_plural`, or where it would go.
    fn plural_at(&self, plural: &str) -> Result<usize, usize> {
        self.by_plural.binary_search_by(|r| r.plural.as_str().cmp(plural))
    }

    /// A copy to change (the derived documents are not copied: they are of the old content).
    fn edit(&self) -> Group {
        Group { by_name: self.by_name.clone(), by_plural: self.by_plural.clone(), derived: OnceLock::new() }
    }

    /// Routes `plural` to `resource` (replacing the resource routed there).
    fn route(&mut self, resource: Arc<Resource>) {
        match self.plural_at(&resource.plural) {
            Ok(at) => self.by_plural[at] = resource,
            Err(at) => self.by_plural.insert(at, resource),
        }
    }

    fn insert(&mut self, name: &str, resource: Arc<Resource>) {
        let old = match find_key(&self.by_name, name) {
            Ok(at) => Some(std::mem::replace(&mut self.by_name[at].1, resource.clone())),
            Err(at) => {
                self.by_name.insert(at, (name.into(), resource.clone()));
                None
            }
        };
        if let Some(old) = old
            && old.plural != resource.plural
        {
            self.unroute(&old);
        }
        self.route(resource);
    }

    fn remove(&mut self, name: &str) {
        let Ok(at) = find_key(&self.by_name, name) else { return };
        let (_, old) = self.by_name.remove(at);
        if self.unroute(&old) {
            // Another definition of the group may serve the same plural (it is then refused its
            // names, but a stale state could hold both for a moment): it is the route now.
            let other = self.resources().find(|r| r.plural == old.plural).cloned();
            if let Some(other) = other {
                self.route(other);
            }
        }
    }

    /// Stops routing `old`'s plural when it is `old` that is routed there; says whether it was.
    fn unroute(&mut self, old: &Arc<Resource>) -> bool {
        match self.plural_at(&old.plural) {
            Ok(at) if Arc::ptr_eq(&self.by_plural[at], old) => {
                self.by_plural.remove(at);
                true
            }
            _ => false,
        }
    }

    /// Gives back what the edits left spare (the group is kept as it is until its next edit).
    fn shrink(&mut self) {
        self.by_name.shrink_to_fit();
        self.by_plural.shrink_to_fit();
    }
}

/// Where `key` is in `entries`, sorted by key, or where it would go: the lookup of the sorted
/// vectors kept per group instead of maps (here, and the HTTP side's per-group documents and
/// name index).
pub fn find_key<V>(entries: &[(Box<str>, V)], key: &str) -> Result<usize, usize> {
    entries.binary_search_by(|(k, _)| (**k).cmp(key))
}

/// The group a served resource's name belongs to (see the module documentation).
fn group_of(name: &str) -> &str {
    name.split_once('.').map_or("", |(_, group)| group)
}

impl Snapshot {
    /// The resource served at `/apis/<group>/<version>/<plural>`, if that version is served.
    pub fn route(&self, group: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.groups.get(group)?.routed(plural)
    }

    /// Every served resource, by group, then by definition name.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.groups.values().flat_map(|g| g.resources())
    }

    /// How many resources are served.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is served.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The definitions of every served resource (the input of discovery and OpenAPI).
    pub fn definitions(&self) -> Vec<&ResourceDefinition> {
        self.resources().map(|r| r.definition.as_ref()).collect()
    }

    /// The served resource of `group` with kind `kind` (a look in that group only: admission
    /// asks this on writes).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&Arc<Resource>> {
        self.groups.get(group)?.resources().find(|r| r.group == group && r.kind == kind)
    }

    /// A served resource by definition name.
    pub fn by_name(&self, name: &str) -> Option<&Arc<Resource>> {
        self.groups.get(group_of(name))?.named(name)
    }

    /// The served resources of `group`, if any.
    pub fn group(&self, group: &str) -> Option<&Arc<Group>> {
        self.groups.get(group)
    }

    /// Every group with a served resource, by name.
    pub fn groups(&self) -> impl Iterator<Item = (&str, &Arc<Group>)> {
        self.groups.iter().map(|(name, group)| (&**name, group))
    }
}

/// One change of the served set: serve a resource under a name (replacing what was served
/// under it), or stop serving the name.
#[derive(Debug, Clone)]
pub enum Change {
    Serve(String, Arc<Resource>),
    Remove(String),
}

/// The current [`Snapshot`], swapped whole on every change.
#[derive(Debug)]
pub struct Registry {
    current: RwLock<Arc<Snapshot>>,
    ready: AtomicBool,
    /// Counts changes, for whoever follows the served set (APIService registration).
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry serving only the definitions API (`versa.dev/v1`).
    pub fn new() -> Registry {
        Registry::with_faces(&[Face::ResourceDefinition])
    }

    /// Standalone mode's registry: the definitions API with both faces, and every core kind
    /// of the registration table (`crate::kinds::CORE`).
    pub fn standalone() -> Registry {
        let registry = Registry::with_faces(&[Face::ResourceDefinition, Face::CustomResourceDefinition]);
        registry.apply(
            crate::kinds::CORE
                .iter()
                .map(|kind| {
                    let resource = Resource::core(kind.builtin);
                    Change::Serve(resource.definition.name().to_owned(), Arc::new(resource))
                })
                .collect(),
        );
        registry
    }

    /// The served resource of a core kind, if this registry serves it.
    pub fn core(&self, builtin: Builtin) -> Option<Arc<Resource>> {
        self.snapshot().by_name(builtin.name()).filter(|r| r.is(builtin)).cloned()
    }

    /// A registry serving only the definitions API, with these faces.
    pub fn with_faces(faces: &[Face]) -> Registry {
        let registry = Registry {
            current: RwLock::new(Arc::new(Snapshot::default())),
            ready: AtomicBool::new(false),
            changes: tokio::sync::watch::Sender::new(0),
        };
        registry.apply(
            faces
                .iter()
                .map(|face| {
                    let resource = Resource::definitions(*face);
                    Change::Serve(resource.definition.name().to_owned(), Arc::new(resource))
                })
                .collect(),
        );
        registry
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves `resource` under `name`, replacing what was served under that name.
    pub fn upsert(&self, name: &str, resource: Arc<Resource>) {
        self.apply(vec![Change::Serve(name.to_owned(), resource)]);
    }

    /// Stops serving `name`.
    pub fn remove(&self, name: &str) {
        self.apply(vec![Change::Remove(name.to_owned())]);
    }

    /// Publishes `changes`, in order, as one new snapshot (nothing when there are none). Only
    /// the groups they touch are copied.
    pub fn apply(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut groups = guard.groups.clone();
        let mut edited: BTreeMap<String, Group> = BTreeMap::new();
        for change in changes {
            let name = match &change {
                Change::Serve(name, _) | Change::Remove(name) => name.as_str(),
            };
            let group_name = group_of(name);
            if !edited.contains_key(group_name) {
                let copy = groups.get(group_name).map(|g| g.edit()).unwrap_or_default();
                edited.insert(group_name.to_owned(), copy);
            }
            let Some(group) = edited.get_mut(group_name) else { continue };
            match change {
                Change::Serve(name, resource) => group.insert(&name, resource),
                Change::Remove(name) => group.remove(&name),
            }
        }
        for (name, mut group) in edited {
            if group.by_name.is_empty() {
                groups.remove(name.as_str());
            } else {
                group.shrink();
                groups.insert(name.into(), Arc::new(group));
            }
        }
        let len = groups.values().map(|g| g.by_name.len()).sum();
        *guard = Arc::new(Snapshot { groups, len, discovery: DiscoveryCache::default() });
        drop(guard);
        self.changes.send_modify(|n| *n += 1);
    }

    /// A receiver that is marked changed whenever the served set changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Definitions have been loaded: `/readyz` may say ready.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Compact;
    use versa_conversion::Options as ConversionOptions;

    /// A served definition `<plural>.<group>` whose accepted plural is `served_as`.
    fn resource(group: &str, plural: &str, served_as: &str) -> Arc<Resource> {
        let def = ResourceDefinition::from_document(&json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "kind": "Thing"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"acceptedNames": {"plural": served_as, "kind": "Thing"},
                       "conditions": [{"type": "Established", "status": "True"}]},
        }))
        .unwrap();
        Arc::new(Resource::build(&def, Compact::of(&def), &ConversionOptions::default()))
    }

    /// Routes, names and groups of a snapshot, as text: `group: name@plural ...`.
    fn served(snapshot: &Snapshot) -> Vec<String> {
        snapshot
            .groups()
            .map(|(name, group)| {
                let members: Vec<String> = group
                    .resources()
                    .map(|r| {
                        let routed = snapshot.route(name, &r.plural).is_some_and(|x| Arc::ptr_eq(x, r));
                        let named = snapshot.by_name(r.definition.name()).is_some_and(|x| Arc::ptr_eq(x, r));
                        format!("{}@{}{}", r.definition.name(), r.plural, if routed && named { "" } else { "!" })
                    })
                    .collect();
                format!("{name}: {}", members.join(" "))
            })
            .collect()
    }

    #[test]
    fn changes_touch_only_their_groups() {
        let registry = Registry::new();
        registry.apply(vec![
            Change::Serve("as.a.example".into(), resource("a.example", "as", "as")),
            Change::Serve("bs.a.example".into(), resource("a.example", "bs", "bs")),
            Change::Serve("cs.c.example".into(), resource("c.example", "cs", "cs")),
        ]);
        let before = registry.snapshot();
        assert_eq!(
            served(&before),
            [
                "a.example: as.a.example@as bs.a.example@bs",
                "c.example: cs.c.example@cs",
                "versa.dev: resourcedefinitions.versa.dev@resourcedefinitions"
            ]
        );
        assert_eq!(before.len(), 4);
        // A group's derived documents are built once and kept while it does not change.
        let c = before.group("c.example").unwrap();
        c.derived.get_or_init(|| Box::new(1_u8));

        // One batch: a plural changes (the old route goes), one is added, one removed.
        registry.apply(vec![
            Change::Serve("as.a.example".into(), resource("a.example", "as", "renamed")),
            Change::Serve("ds.a.example".into(), resource("a.example", "ds", "ds")),
            Change::Remove("bs.a.example".into()),
            Change::Remove("nothing.a.example".into()),
        ]);
        let after = registry.snapshot();
        assert_eq!(
            served(&after),
            [
                "a.example: as.a.example@renamed ds.a.example@ds",
                "c.example: cs.c.example@cs",
                "versa.dev: resourcedefinitions.versa.dev@resourcedefinitions"
            ]
        );
        assert!(after.route("a.example", "as").is_none() && after.route("a.example", "bs").is_none());
        assert_eq!(after.len(), 4);
        assert!(Arc::ptr_eq(after.group("c.example").unwrap(), c), "an untouched group is shared");
        assert!(after.group("c.example").unwrap().derived.get().is_some());
        assert!(after.group("a.example").unwrap().derived.get().is_none());
        // The snapshot taken before is unchanged.
        assert_eq!(before.len(), 4);
        assert!(before.route("a.example", "bs").is_some());

        // The last member of a group goes: so does the group.
        registry.remove("cs.c.example");
        assert!(registry.snapshot().group("c.example").is_none());
        assert_eq!(registry.snapshot().len(), 3);
    }

    /// Two members of a group serving one plural (a stale state, for a moment): the one served
    /// last is routed there, and when it goes the other is.
    #[test]
    fn a_shared_plural_falls_back_to_the_other_member() {
        let registry = Registry::new();
        registry.apply(vec![
            Change::Serve("xs.g.example".into(), resource("g.example", "xs", "things")),
            Change::Serve("ys.g.example".into(), resource("g.example", "ys", "things")),
        ]);
        assert_eq!(served(&registry.snapshot())[0], "g.example: xs.g.example@things! ys.g.example@things");
        registry.remove("ys.g.example");
        assert_eq!(served(&registry.snapshot())[0], "g.example: xs.g.example@things");
        assert!(registry.snapshot().route("g.example", "xs").is_none());
    }
}
