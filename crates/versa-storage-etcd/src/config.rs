//! How to reach etcd: endpoints, client certificates and the time limits of requests, watches
//! and reconnection. [`EtcdConfig::new`] fills in the defaults; fields are public so the binary
//! can set them from flags.

use std::path::PathBuf;
use std::time::Duration;

use etcd_client::{Certificate, Identity, TlsOptions};
use versa_storage::{Error, Result};

/// Connection settings for [`crate::EtcdStore::connect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs of the cluster's members (`http://host:2379`, `https://…`); requests are
    /// balanced over them.
    pub endpoints: Vec<String>,
    /// Client TLS, for clusters that require it (endpoints are then `https://`).
    pub tls: Option<EtcdTls>,
    /// How long to wait for a connection to an endpoint, and for the first answer at start-up.
    pub connect_timeout: Duration,
    /// How long one request may take before it fails with `Unavailable`. Watches are streams
    /// and are not bounded by it.
    pub request_timeout: Duration,
    /// How often each watch asks etcd for a progress notification, which it passes on as
    /// `WatchEvent::Progress` (a bookmark for consumers and a liveness check of the stream).
    /// etcd before 3.4.31/3.5.13 answers such requests out of order, so there the watch asks
    /// nothing and passes on etcd's periodic notifications instead, at the interval etcd was
    /// started with (`--experimental-watch-progress-notify-interval`).
    pub progress_interval: Duration,
    /// How long a watch keeps trying to re-establish a broken stream before it ends with
    /// `Unavailable`.
    pub watch_reconnect_timeout: Duration,
    /// Undelivered events a watch buffers before it stops reading from etcd (etcd then holds
    /// them and catches the watch up later).
    pub watch_buffer: usize,
}

/// Client TLS: the CA that signs the servers' certificates and, for clusters that authenticate
/// clients by certificate, the client's certificate and key (all PEM files). There is no
/// fallback to the system's roots: etcd clusters sign with their own CA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdTls {
    /// CA bundle to verify the servers with.
    pub ca_file: PathBuf,
    /// Client certificate, given together with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key.
    pub key_file: Option<PathBuf>,
}

impl EtcdConfig {
    /// Defaults for the given endpoints: 5 s to connect, 10 s per request, a progress
    /// notification every 5 s, a minute to reconnect a watch.
    pub fn new<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> Self {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            tls: None,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            progress_interval: Duration::from_secs(5),
            watch_reconnect_timeout: Duration::from_secs(60),
            watch_buffer: 256,
        }
    }
}

impl EtcdTls {
    /// The client's TLS options, read from the PEM files (the store's connection and the lock's).
    pub(crate) fn client_options(&self) -> Result<TlsOptions> {
        let read = |path: &std::path::Path, what: &str| {
            std::fs::read(path)
                .map_err(|e| Error::unavailable(format!("reading the etcd {what} {}", path.display()), e))
        };
        let mut options = TlsOptions::new().ca_certificate(Certificate::from_pem(read(&self.ca_file, "CA file")?));
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                options =
                    options.identity(Identity::from_pem(read(cert, "client certificate")?, read(key, "client key")?));
            }
            (None, None) => {}
            _ => {
                return Err(Error::unavailable_msg("etcd client TLS needs both a certificate and a key file"));
            }
        }
        Ok(options)
    }
}
