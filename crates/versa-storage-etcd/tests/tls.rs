//! Client TLS against an etcd that serves clients over TLS only and requires client
//! certificates (`--client-cert-auth`): with the cluster's CA and a client certificate signed by
//! it the store works; without a client certificate, or trusting another CA, connecting fails
//! with `Unavailable` within the connect timeout instead of hanging.
//!
//! The certificates are made afresh for each test: a CA, a server certificate for
//! `127.0.0.1`/`localhost` and a client certificate signed by it, and an unrelated second CA.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "helpers of tests fail loudly")]

mod support;

use std::error::Error as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use support::{EtcdServer, ServerTls};
use versa_storage::{Error, Store, WatchEvent};
use versa_storage_etcd::{EtcdConfig, EtcdStore, EtcdTls};

/// A hang guard for watch events, not a timing claim.
const EVENT_WAIT: Duration = Duration::from_secs(10);

/// The connect timeout of the clients that must fail.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// PEM files of a small PKI in a temporary directory.
struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    /// A CA that signed none of the above.
    other_ca: PathBuf,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::Builder::new().prefix("versa-etcd-pki-").tempdir().unwrap();
        let write = |name: &str, pem: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, pem).unwrap();
            path
        };

        let ca = new_ca("versa test CA");
        let other_ca = new_ca("some other CA");

        let mut server = CertificateParams::new(["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        server.distinguished_name.push(DnType::CommonName, "etcd");
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().unwrap();
        let server_cert = server.signed_by(&server_key, &ca).unwrap();

        let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
        client.distinguished_name.push(DnType::CommonName, "versa");
        client.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().unwrap();
        let client_cert = client.signed_by(&client_key, &ca).unwrap();

        Pki {
            ca: write("ca.pem", ca.pem()),
            server_cert: write("server.pem", server_cert.pem()),
            server_key: write("server-key.pem", server_key.serialize_pem()),
            client_cert: write("client.pem", client_cert.pem()),
            client_key: write("client-key.pem", client_key.serialize_pem()),
            other_ca: write("other-ca.pem", other_ca.pem()),
            _dir: dir,
        }
    }

    fn server_tls(&self) -> ServerTls {
        ServerTls {
            cert_file: self.server_cert.clone(),
            key_file: self.server_key.clone(),
            trusted_ca_file: self.ca.clone(),
        }
    }

    /// Client TLS trusting `ca`, with the client certificate.
    fn client_tls(&self, ca: &Path) -> EtcdTls {
        EtcdTls {
            ca_file: ca.to_path_buf(),
            cert_file: Some(self.client_cert.clone()),
            key_file: Some(self.client_key.clone()),
        }
    }
}

fn new_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// Connects with `tls` and expects `Unavailable` within the connect timeout (plus slack for a
/// loaded machine); returns the message with its causes.
async fn expect_unavailable(server: &EtcdServer, tls: EtcdTls) -> String {
    let mut config = EtcdConfig::new([server.endpoint()]);
    config.tls = Some(tls);
    config.connect_timeout = CONNECT_TIMEOUT;
    let started = Instant::now();
    let result = tokio::time::timeout(CONNECT_TIMEOUT * 3, EtcdStore::connect(config))
        .await
        .unwrap_or_else(|_| panic!("connect hung for {:?}", CONNECT_TIMEOUT * 3));
    let elapsed = started.elapsed();
    let error = match result {
        Err(error @ Error::Unavailable { .. }) => error,
        other => panic!("expected Unavailable, got {other:?}"),
    };
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    eprintln!("failed after {elapsed:?} with: {text}");
    assert!(elapsed < CONNECT_TIMEOUT * 2, "took {elapsed:?}: {text}");
    assert!(text.contains(&server.endpoint()), "the message names the endpoint: {text}");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate_connects_and_works() {
    let pki = Pki::new();
    let server = EtcdServer::start_tls(pki.server_tls(), pki.client_tls(&pki.ca)).await;
    assert!(server.endpoint().starts_with("https://"));
    let store = server.store().await;

    let mut watch = store.watch("/tls/", 0).await.unwrap();
    let created = store.create("/tls/a", Bytes::from_static(b"over TLS")).await.unwrap();
    assert_eq!(created.value, Bytes::from_static(b"over TLS"));
    assert_eq!(store.get("/tls/a").await.unwrap(), Some(created.clone()));
    let event = loop {
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
            Ok(Some(Ok(event))) => break event,
            other => panic!("expected a watch event, got {other:?}"),
        }
    };
    assert_eq!(event, WatchEvent::Added(created));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_certificate_is_unavailable() {
    let pki = Pki::new();
    let server = EtcdServer::start_tls(pki.server_tls(), pki.client_tls(&pki.ca)).await;
    let tls = EtcdTls { ca_file: pki.ca.clone(), cert_file: None, key_file: None };
    expect_unavailable(&server, tls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ca_is_unavailable() {
    let pki = Pki::new();
    let server = EtcdServer::start_tls(pki.server_tls(), pki.client_tls(&pki.ca)).await;
    let message = expect_unavailable(&server, pki.client_tls(&pki.other_ca)).await;
    assert!(message.to_lowercase().contains("certificate"), "the message says why: {message}");
}
