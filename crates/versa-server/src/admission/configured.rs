//! The admission configuration in force: the compiled `admissionregistration.k8s.io`
//! objects ([`versa_admission::Configuration`]), swapped whole when one of them changes
//! (`controllers/admission.rs` follows them), so a request sees one configuration from its
//! mutating to its validating half.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use versa_admission::Configuration;

/// The current configuration. Until the controller has read the stored objects once, it is not
/// [`Configured::is_loaded`], and writes are refused rather than admitted without it.
#[derive(Debug, Default)]
pub struct Configured {
    current: RwLock<Arc<Configuration>>,
    loaded: AtomicBool,
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

    /// Whether the stored configuration has been read.
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }
}
