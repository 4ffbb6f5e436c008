//! TLS: the serving certificate (replaceable while serving, so that files rotated by
//! cert-manager or an admin are picked up without a restart), HTTP/2 and HTTP/1.1 by ALPN, and
//! client certificates.
//!
//! Client certificates are handled as kube-apiserver handles them (`tls.RequestClientCert`):
//! the handshake asks for one and checks that the client holds its key, but does not decide
//! whether it is trusted — a certificate from an unknown CA must get a 401 `Status`, not a
//! failed handshake. Trust is decided once per connection by [`ClientTrust::classify`], against
//! each CA pool separately, because what a certificate may do depends on who signed it: the
//! client CA makes its subject the user, the requestheader CA makes the front-proxy headers
//! believable. The pools can be replaced at run time (the authentication ConfigMap changes).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the server's TLS configuration.
pub fn server_config(cert: Arc<ServingCert>) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = provider();
    let verifier = Arc::new(AnyClientCert { algorithms: provider.signature_verification_algorithms });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Parses a PEM certificate chain and key into what rustls serves.
pub fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> anyhow::Result<Arc<CertifiedKey>> {
    let chain = CertificateDer::pem_slice_iter(cert_pem).collect::<Result<Vec<_>, _>>()?;
    anyhow::ensure!(!chain.is_empty(), "no PEM certificate found");
    let key = PrivateKeyDer::from_pem_slice(key_pem)?;
    Ok(Arc::new(CertifiedKey::from_der(chain, key, &provider())?))
}

/// The serving certificate, swappable while serving.
#[derive(Debug)]
pub struct ServingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ServingCert {
    pub fn new(key: Arc<CertifiedKey>) -> Arc<ServingCert> {
        Arc::new(ServingCert { current: RwLock::new(key) })
    }

    pub fn set(&self, key: Arc<CertifiedKey>) {
        match self.current.write() {
            Ok(mut g) => *g = key,
            Err(poisoned) => *poisoned.into_inner() = key,
        }
    }

    /// Loads the certificate and key files.
    pub fn load(cert_file: &Path, key_file: &Path) -> anyhow::Result<Arc<CertifiedKey>> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()));
        certified_key(&read(cert_file)?, &read(key_file)?)
            .map_err(|e| anyhow::anyhow!("{} / {}: {e}", cert_file.display(), key_file.display()))
    }

    /// Re-reads the files whenever either changes (checked every `interval`), until
    /// `shutdown`. A pair that does not load (say, the certificate already replaced but not yet
    /// the key) is logged and the current one kept.
    pub async fn reload_from(
        self: Arc<Self>,
        cert_file: PathBuf,
        key_file: PathBuf,
        interval: Duration,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let mut seen: (Option<SystemTime>, Option<SystemTime>) = (stamp(&cert_file), stamp(&key_file));
        loop {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = shutdown.cancelled() => return,
            }
            let now = (stamp(&cert_file), stamp(&key_file));
            if now == seen {
                continue;
            }
            match ServingCert::load(&cert_file, &key_file) {
                Ok(key) => {
                    self.set(key);
                    seen = now;
                    tracing::info!(cert = %cert_file.display(), "serving certificate reloaded");
                }
                Err(e) => tracing::warn!(error = %e, "serving certificate not reloaded"),
            }
        }
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match self.current.read() {
            Ok(g) => Some(g.clone()),
            Err(poisoned) => Some(poisoned.into_inner().clone()),
        }
    }
}

/// Accepts any client certificate whose key the client holds; trust is decided later.
#[derive(Debug)]
struct AnyClientCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Which CA pools a client certificate chains to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trusted {
    /// `--client-ca-file` (standalone: versa's own CA): the subject is the user.
    pub client_ca: bool,
    /// `--requestheader-client-ca-file`: the front proxy, whose headers name the user.
    pub requestheader: bool,
}

/// The CA pools client certificates are checked against, replaceable at run time.
#[derive(Debug, Default)]
pub struct ClientTrust {
    pools: RwLock<Pools>,
}

#[derive(Debug, Default, Clone)]
struct Pools {
    client_ca: Option<Arc<dyn ClientCertVerifier>>,
    requestheader: Option<Arc<dyn ClientCertVerifier>>,
}

/// A verifier for certificates issued (directly or through the presented intermediates) by
/// the CAs in `pem`, for client authentication; `None` when `pem` holds no certificate.
fn pool(pem: Option<&str>) -> anyhow::Result<Option<Arc<dyn ClientCertVerifier>>> {
    let Some(pem) = pem.filter(|p| !p.trim().is_empty()) else { return Ok(None) };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots.add(cert?)?;
    }
    if roots.is_empty() {
        anyhow::bail!("no PEM certificate found");
    }
    Ok(Some(WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider()).build()?))
}

impl ClientTrust {
    pub fn new() -> Arc<ClientTrust> {
        Arc::new(ClientTrust::default())
    }

    /// Replaces both pools (PEM bundles; `None` or empty: no such CA).
    pub fn set(&self, client_ca: Option<&str>, requestheader_ca: Option<&str>) -> anyhow::Result<()> {
        let client_ca = pool(client_ca).map_err(|e| anyhow::anyhow!("client CA: {e}"))?;
        let requestheader = pool(requestheader_ca).map_err(|e| anyhow::anyhow!("requestheader client CA: {e}"))?;
        let pools = Pools { client_ca, requestheader };
        match self.pools.write() {
            Ok(mut g) => *g = pools,
            Err(poisoned) => *poisoned.into_inner() = pools,
        }
        Ok(())
    }

    /// Which pools `chain` (leaf first) is valid in, now.
    pub fn classify(&self, chain: &[CertificateDer<'_>]) -> Trusted {
        let Some((leaf, intermediates)) = chain.split_first() else { return Trusted::default() };
        let pools = match self.pools.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let now = UnixTime::now();
        let valid = |v: &Option<Arc<dyn ClientCertVerifier>>| {
            v.as_ref().is_some_and(|v| v.verify_client_cert(leaf, intermediates, now).is_ok())
        };
        Trusted { client_ca: valid(&pools.client_ca), requestheader: valid(&pools.requestheader) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serving(ca: &(String, String), host: &str) -> (String, String) {
        crate::pki::issue_serving(&ca.0, &ca.1, &[host.to_owned()]).unwrap()
    }

    fn leaf(key: &CertifiedKey) -> Vec<u8> {
        key.cert[0].as_ref().to_vec()
    }

    #[tokio::test]
    async fn serving_certificate_files_are_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let ca = crate::pki::new_ca("test-ca").unwrap();
        let (cert, key) = serving(&ca, "first.example.com");
        std::fs::write(&cert_file, &cert).unwrap();
        std::fs::write(&key_file, &key).unwrap();
        let current = ServingCert::new(ServingCert::load(&cert_file, &key_file).unwrap());
        let first = leaf(&current.current.read().unwrap());
        let shutdown = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(current.clone().reload_from(
            cert_file.clone(),
            key_file.clone(),
            Duration::from_millis(10),
            shutdown.clone(),
        ));

        // A half-written pair (the certificate without its key) is not taken.
        std::fs::write(&key_file, "not a key").unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(leaf(&current.current.read().unwrap()), first, "a broken pair keeps the old certificate");

        let (cert, key) = serving(&ca, "second.example.com");
        std::fs::write(&cert_file, &cert).unwrap();
        std::fs::write(&key_file, &key).unwrap();
        let mut reloaded = false;
        for _ in 0..500 {
            if leaf(&current.current.read().unwrap()) != first {
                reloaded = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(reloaded, "the new certificate is served");
        shutdown.cancel();
        task.await.unwrap();
    }

    #[test]
    fn certificates_are_classified_by_issuer() {
        let client = |ca: &(String, String), cn: &str| {
            let params = {
                let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
                p.distinguished_name.push(rcgen::DnType::CommonName, cn);
                p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
                p
            };
            let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.0, rcgen::KeyPair::from_pem(&ca.1).unwrap()).unwrap();
            let key = rcgen::KeyPair::generate().unwrap();
            params.signed_by(&key, &issuer).unwrap().der().clone()
        };
        let (client_ca, proxy_ca, other_ca) =
            (crate::pki::new_ca("c").unwrap(), crate::pki::new_ca("p").unwrap(), crate::pki::new_ca("o").unwrap());
        let trust = ClientTrust::new();
        trust.set(Some(&client_ca.0), Some(&proxy_ca.0)).unwrap();
        let cases = [
            (client(&client_ca, "carol"), Trusted { client_ca: true, requestheader: false }),
            (client(&proxy_ca, "front-proxy-client"), Trusted { client_ca: false, requestheader: true }),
            (client(&other_ca, "mallory"), Trusted::default()),
        ];
        for (cert, want) in cases {
            assert_eq!(trust.classify(&[cert]), want);
        }
        // A serving certificate (no clientAuth usage) is not a client certificate.
        let (serving_pem, _) = serving(&client_ca, "server.example.com");
        let der = CertificateDer::pem_slice_iter(serving_pem.as_bytes()).next().unwrap().unwrap();
        assert_eq!(trust.classify(&[der]), Trusted::default());
    }
}
