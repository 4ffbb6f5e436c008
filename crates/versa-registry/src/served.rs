//! The served set: which resources are served now, swapped whole on every change.
//!
//! The [`Registry`] holds one [`Snapshot`] (an `Arc`); a definition change builds a new
//! snapshot with the new [`Resource`] in it and swaps it in one step. Requests take the
//! snapshot at routing time and keep it to the end, so a request never sees half of an update.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use versa_apiextensions::ResourceDefinition;

use crate::resource::{AdmissionKind, Builtin, Face, Resource};

/// The served resources at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// By definition name (`<plural>.<group>`).
    by_name: BTreeMap<String, Arc<Resource>>,
    /// By (group, plural).
    by_route: HashMap<(String, String), Arc<Resource>>,
    /// Discovery documents, built on first use and kept until the next change.
    pub discovery: DiscoveryCache,
}

/// Discovery documents of one snapshot.
#[derive(Debug, Default)]
pub struct DiscoveryCache {
    pub group_list: OnceLock<bytes::Bytes>,
    pub aggregated: OnceLock<bytes::Bytes>,
}

impl Snapshot {
    /// The resource served at `/apis/<group>/<version>/<plural>`, if that version is served.
    pub fn route(&self, group: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.by_route.get(&(group.to_owned(), plural.to_owned()))
    }

    /// Every served resource, in definition-name order.
    pub fn resources(&self) -> impl Iterator<Item = &Arc<Resource>> {
        self.by_name.values()
    }

    /// The definitions of every served resource (the input of discovery and OpenAPI).
    pub fn definitions(&self) -> Vec<&ResourceDefinition> {
        self.by_name.values().map(|r| r.definition.as_ref()).collect()
    }

    /// A served resource by definition name.
    pub fn by_name(&self, name: &str) -> Option<&Arc<Resource>> {
        self.by_name.get(name)
    }
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

    /// Standalone mode's registry: the definitions API with both faces, and the core kinds
    /// operators need (Namespaces, Events).
    pub fn standalone() -> Registry {
        let registry = Registry::with_faces(&[Face::ResourceDefinition, Face::CustomResourceDefinition]);
        registry.update(|by_name| {
            let admission = AdmissionKind::ALL.map(Builtin::Admission);
            let core = [Builtin::Namespace, Builtin::Event, Builtin::EventV1, Builtin::Secret];
            for builtin in core.into_iter().chain(admission) {
                let resource = Resource::core(builtin);
                by_name.insert(resource.definition.name().to_owned(), Arc::new(resource));
            }
        });
        registry
    }

    /// The served resource of a core kind, if this registry serves it.
    pub fn core(&self, builtin: Builtin) -> Option<Arc<Resource>> {
        self.snapshot().by_name(builtin.name()).filter(|r| r.builtin == Some(builtin)).cloned()
    }

    /// A registry serving only the definitions API, with these faces.
    pub fn with_faces(faces: &[Face]) -> Registry {
        let registry = Registry {
            current: RwLock::new(Arc::new(Snapshot::default())),
            ready: AtomicBool::new(false),
            changes: tokio::sync::watch::Sender::new(0),
        };
        registry.update(|by_name| {
            for face in faces {
                let resource = Resource::definitions(*face);
                by_name.insert(resource.definition.name().to_owned(), Arc::new(resource));
            }
        });
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
        self.update(|by_name| {
            by_name.insert(name.to_owned(), resource);
        });
    }

    /// Stops serving `name`.
    pub fn remove(&self, name: &str) {
        self.update(|by_name| {
            by_name.remove(name);
        });
    }

    fn update(&self, change: impl FnOnce(&mut BTreeMap<String, Arc<Resource>>)) {
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut by_name = guard.by_name.clone();
        change(&mut by_name);
        let by_route = by_name.values().map(|r| ((r.group.clone(), r.plural.clone()), r.clone())).collect();
        *guard = Arc::new(Snapshot { by_name, by_route, discovery: DiscoveryCache::default() });
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
