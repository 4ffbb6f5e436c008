//! Cluster mode: policy parameters of kube-apiserver's own kinds (a `paramKind` of
//! `v1 ConfigMap`, say), which versa does not serve. For each such kind a policy names, the
//! admission controller finds its resource and scope by discovery and keeps its objects in a
//! kube-rs reflector store (one list, then a watch), as kube's policy plugin keeps a param
//! informer per kind; [`KubeParams`] answers the lookups from those stores. A kind whose store
//! has not finished its first list answers an error (the policy's `failurePolicy` decides),
//! never "no parameter".

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use futures_util::StreamExt as _;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};
use kube::discovery::Scope;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use versa_admission::{HostError, ParamKind, ParamScope};

/// The followed kinds.
#[derive(Debug, Default)]
pub struct KubeParams {
    kinds: RwLock<HashMap<ParamKind, Arc<Followed>>>,
}

/// One followed kind: its resource, scope and objects.
#[derive(Debug)]
struct Followed {
    resource: ApiResource,
    scope: ParamScope,
    store: Store<DynamicObject>,
    synced: AtomicBool,
}

impl KubeParams {
    fn followed(&self, kind: &ParamKind) -> Option<Arc<Followed>> {
        match self.kinds.read() {
            Ok(kinds) => kinds.get(kind).cloned(),
            Err(poisoned) => poisoned.into_inner().get(kind).cloned(),
        }
    }

    /// Whether `kind` is followed (found by discovery), and its scope.
    pub fn scope(&self, kind: &ParamKind) -> Option<ParamScope> {
        self.followed(kind).map(|f| f.scope)
    }

    /// The object `name` of `kind` (in `namespace` when namespaced).
    pub fn get(&self, kind: &ParamKind, namespace: Option<&str>, name: &str) -> Result<Option<Arc<Value>>, HostError> {
        let followed = self.synced(kind)?;
        let mut reference = ObjectRef::new_with(name, followed.resource.clone());
        if let Some(ns) = namespace.filter(|_| followed.scope == ParamScope::Namespaced) {
            reference = reference.within(ns);
        }
        Ok(followed.store.get(&reference).and_then(|o| serde_json::to_value(&*o).ok()).map(Arc::new))
    }

    /// Every object of `kind` (in `namespace` when namespaced).
    pub fn list(&self, kind: &ParamKind, namespace: Option<&str>) -> Result<Vec<Arc<Value>>, HostError> {
        let followed = self.synced(kind)?;
        let namespace = namespace.filter(|_| followed.scope == ParamScope::Namespaced);
        let objects = followed.store.state().into_iter();
        let objects = objects.filter(|o| namespace.is_none() || o.metadata.namespace.as_deref() == namespace);
        Ok(objects.filter_map(|o| serde_json::to_value(&*o).ok()).map(Arc::new).collect())
    }

    fn synced(&self, kind: &ParamKind) -> Result<Arc<Followed>, HostError> {
        let not_followed = || HostError::NotReady(format!("paramKind {} is not followed", show(kind)));
        let followed = self.followed(kind).ok_or_else(not_followed)?;
        if !followed.synced.load(Ordering::Acquire) {
            let listed = format!("the parameters of kind {} have not been listed from kube-apiserver yet", show(kind));
            return Err(HostError::NotReady(listed));
        }
        Ok(followed)
    }

    /// Starts following `kind` (once): discovery, then a reflector until `shutdown`. A kind
    /// discovery does not find is left alone (lookups then say kube's "failed to find
    /// resource referenced by paramKind"), and tried again the next time it is asked for.
    pub async fn follow(&self, client: &kube::Client, kind: &ParamKind, shutdown: &CancellationToken) {
        if self.followed(kind).is_some() {
            return;
        }
        let (group, version) = kind.api_version.rsplit_once('/').unwrap_or(("", &kind.api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind.kind);
        let (resource, capabilities) = match kube::discovery::pinned_kind(client, &gvk).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(param_kind = %show(kind), error = %e, "discovering a policy's paramKind");
                return;
            }
        };
        let scope = match capabilities.scope {
            Scope::Namespaced => ParamScope::Namespaced,
            Scope::Cluster => ParamScope::Cluster,
        };
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let followed = Arc::new(Followed { resource: resource.clone(), scope, store, synced: AtomicBool::new(false) });
        match self.kinds.write() {
            Ok(mut kinds) => kinds.insert(kind.clone(), followed.clone()),
            Err(poisoned) => poisoned.into_inner().insert(kind.clone(), followed.clone()),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let events = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default().any_semantic()))
            .default_backoff();
        let (shutdown, name) = (shutdown.clone(), show(kind));
        tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            loop {
                let event = tokio::select! {
                    event = events.next() => event,
                    () = shutdown.cancelled() => return,
                };
                match event {
                    Some(Ok(watcher::Event::InitDone)) => followed.synced.store(true, Ordering::Release),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => tracing::warn!(param_kind = %name, error = %e, "watching a policy's parameters"),
                    None => return,
                }
            }
        });
    }
}

/// `v1 ConfigMap`, `example.com/v1 Widget`.
fn show(kind: &ParamKind) -> String {
    format!("{} {}", kind.api_version, kind.kind)
}
