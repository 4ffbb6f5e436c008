//! The admission configuration in force: the compiled `admissionregistration.k8s.io`
//! objects ([`versa_admission::Configuration`]), swapped whole when one of them changes
//! (`controllers/admission.rs` follows them), so a request sees one configuration from its
//! mutating to its validating half; in cluster mode also kube-apiserver's Namespaces.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;
use versa_admission::Configuration;

/// kube-apiserver's Namespaces by name (cluster mode), as last listed.
pub type Namespaces = HashMap<String, Arc<Value>>;

/// The current configuration. Until the controller has read the stored objects once, it is not
/// [`Configured::is_loaded`], and writes are refused rather than admitted without it.
#[derive(Debug, Default)]
pub struct Configured {
    current: RwLock<Arc<Configuration>>,
    loaded: AtomicBool,
    /// Cluster mode: kube-apiserver's Namespaces, for namespace selectors, `namespaceObject`
    /// and namespace lifecycle (standalone reads its own from the store).
    namespaces: RwLock<Option<Arc<Namespaces>>>,
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
    }

    /// kube-apiserver's Namespaces (cluster mode), `None` where versa serves its own.
    pub fn namespaces(&self) -> Option<Arc<Namespaces>> {
        match self.namespaces.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn set_namespaces(&self, namespaces: Namespaces) {
        let namespaces = Some(Arc::new(namespaces));
        match self.namespaces.write() {
            Ok(mut g) => *g = namespaces,
            Err(poisoned) => *poisoned.into_inner() = namespaces,
        }
    }

    /// Whether the stored configuration has been read.
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }
}
