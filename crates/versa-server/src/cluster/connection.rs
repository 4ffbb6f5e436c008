//! What cluster mode knows of the cluster once kube-apiserver has been reached ([`Cluster`]):
//! the client, versa's Service and where the APIServices' `caBundle` comes from — shared by the
//! set-up (`mod.rs`) and APIService registration (`apiservice.rs`).

use std::path::PathBuf;
use std::time::Duration;

use super::kube::KubeClient;

/// versa's Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

impl ServiceRef {
    /// The names the serving certificate must carry for kube-aggregator to reach versa
    /// through the Service.
    pub fn dns_names(&self) -> Vec<String> {
        let (n, ns) = (&self.name, &self.namespace);
        vec![n.clone(), format!("{n}.{ns}"), format!("{n}.{ns}.svc"), format!("{n}.{ns}.svc.cluster.local")]
    }
}

/// Where the APIServices' `caBundle` comes from.
#[derive(Debug, Clone)]
pub enum CaBundle {
    /// The generated CA (PEM).
    Generated(String),
    /// A file, re-read on every reconciliation (so a rotated CA propagates).
    File(PathBuf),
    /// The last certificate of the serving chain (a self-signed certificate is its own CA).
    ServingChain(PathBuf),
}

impl CaBundle {
    /// The CA certificate (PEM), read again from its file if it has one.
    pub fn pem(&self) -> Result<String, CaBundleError> {
        let read = |path: &PathBuf| {
            std::fs::read_to_string(path).map_err(|error| CaBundleError::Read { path: path.clone(), error })
        };
        match self {
            CaBundle::Generated(pem) => Ok(pem.clone()),
            CaBundle::File(path) => read(path),
            CaBundle::ServingChain(path) => {
                let text = read(path)?;
                let start = text.rfind("-----BEGIN CERTIFICATE-----").ok_or(CaBundleError::NoCertificate)?;
                Ok(text[start..].to_owned())
            }
        }
    }
}

/// Why the CA bundle could not be had.
#[derive(Debug, thiserror::Error)]
pub enum CaBundleError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The serving chain file holds no PEM certificate.
    #[error("no PEM certificate found")]
    NoCertificate,
}

/// Cluster mode, running (once kube-apiserver has been reached).
#[derive(Debug)]
pub struct Cluster {
    pub kube: KubeClient,
    pub service: ServiceRef,
    pub ca_bundle: CaBundle,
    pub resync: Duration,
}
