//! The admission configuration in force: the compiled `admissionregistration.k8s.io`
//! objects ([`versa_admission::Configuration`]), swapped whole when one of them changes
//! (`controllers/admission.rs` follows them), so a request sees one configuration from its
//! mutating to its validating half; in cluster mode also kube-apiserver's Namespaces, as the
//! watch cache (kube-rs's reflector store) the controller keeps current.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::Value;
use versa_admission::Configuration;

use super::kube_params::KubeParams;

/// The current configuration. Until the controller has read the stored objects once, it is not
/// [`Configured::is_loaded`], and writes are refused rather than admitted without it.
#[derive(Debug, Default)]
pub struct Configured {
    current: RwLock<Arc<Configuration>>,
    loaded: AtomicBool,
    /// Woken when the first configuration is installed.
    first: tokio::sync::Notify,
    /// Cluster mode: kube-apiserver's Namespaces, for namespace selectors, `namespaceObject`
    /// and namespace lifecycle (standalone reads its own from the store).
    namespaces: OnceLock<Store<Namespace>>,
    /// Cluster mode: the parameter objects of policies whose `paramKind` is one of
    /// kube-apiserver's kinds.
    pub kube_params: KubeParams,
}

impl Configured {
    pub fn current(&self) -> Arc<Configuration> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn set(&self, configuration: Configuration) {
        let configuration = Arc::new(configuration);
        match self.current.write() {
            Ok(mut g) => *g = configuration,
            Err(poisoned) => *poisoned.into_inner() = configuration,
        }
        self.loaded.store(true, Ordering::Release);
        self.first.notify_waiters();
    }

    /// Waits until the first configuration has been installed, or for `limit`.
    pub async fn wait_loaded(&self, limit: std::time::Duration) {
        let waiting = self.first.notified();
        if self.is_loaded() {
            return;
        }
        let _ = tokio::time::timeout(limit, waiting).await;
    }

    /// Whether the Namespaces are kube-apiserver's (cluster mode, once it has been reached).
    pub fn follows_kube_namespaces(&self) -> bool {
        self.namespaces.get().is_some()
    }

    /// kube-apiserver's Namespace `name` as JSON: `None` where versa serves its own Namespaces,
    /// `Some(None)` when kube-apiserver has none of that name.
    pub fn kube_namespace(&self, name: &str) -> Option<Option<Arc<Value>>> {
        let store = self.namespaces.get()?;
        let namespace = store.get(&ObjectRef::new(name))?;
        Some(serde_json::to_value(&*namespace).ok().map(Arc::new))
    }

    /// Cluster mode: where kube-apiserver's Namespaces are kept (set once).
    pub fn set_kube_namespaces(&self, store: Store<Namespace>) {
        let _ = self.namespaces.set(store);
    }

    /// Whether the stored configuration has been read.
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }
}
