//! The standalone PKI in the data directory: a CA, an admin client certificate (user
//! `versa-admin`, group `system:masters`) and `admin.kubeconfig`, created on first start and
//! reused afterwards — so two replicas started from copies of one data directory accept the same
//! admin credentials. The serving certificate is re-issued from the CA on every start, for the
//! hosts of that start's listen address, so changing `--listen` never leaves a stale name.
//!
//! Private keys are written with mode 0600. [`issue_user`] signs a client certificate for any
//! user and groups with the same CA and renders its kubeconfig (`versa kubeconfig --user`).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// The admin identity written into `admin.kubeconfig`.
pub const ADMIN_USER: &str = "versa-admin";
/// The admin's group: every permission (as in Kubernetes).
pub const ADMIN_GROUP: &str = "system:masters";

pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const ADMIN_CERT: &str = "admin.crt";
pub const ADMIN_KEY: &str = "admin.key";
pub const SERVING_CERT: &str = "serving.crt";
pub const SERVING_KEY: &str = "serving.key";
pub const KUBECONFIG: &str = "admin.kubeconfig";

/// Errors creating or reading the PKI.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: {source}")]
    Cert {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
    /// A request for a certificate that cannot be issued (a bad name or validity).
    #[error("{0}")]
    Invalid(String),
}

/// The PEM material a server start needs.
#[derive(Debug, Clone)]
pub struct Pki {
    pub ca_cert_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    /// Where `admin.kubeconfig` was written.
    pub kubeconfig: PathBuf,
}

fn cert_err(what: &'static str) -> impl FnOnce(rcgen::Error) -> PkiError {
    move |source| PkiError::Cert { what, source }
}

fn read(path: &Path) -> Result<String, PkiError> {
    std::fs::read_to_string(path).map_err(|source| PkiError::Io { path: path.to_path_buf(), source })
}

fn write(path: &Path, contents: &str, private: bool) -> Result<(), PkiError> {
    let io = |source| PkiError::Io { path: path.to_path_buf(), source };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    let mut file = options.open(path).map_err(io)?;
    std::io::Write::write_all(&mut file, contents.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

fn name(common_name: &str, organizations: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    for o in organizations {
        dn.push(DnType::OrganizationName, *o);
    }
    dn
}

/// Loads the PKI in `dir`, creating the CA and admin credentials on first use, issues a serving
/// certificate for `hosts` (DNS names or IP addresses), and writes `admin.kubeconfig` pointing at
/// `server_url`.
pub fn load_or_create(dir: &Path, hosts: &[String], server_url: &str) -> Result<Pki, PkiError> {
    let (ca_cert_path, ca_key_path) = (dir.join(CA_CERT), dir.join(CA_KEY));
    if !ca_cert_path.exists() || !ca_key_path.exists() {
        create_ca_and_admin(dir)?;
    }
    let ca_cert_pem = read(&ca_cert_path)?;
    let (serving_cert_pem, serving_key_pem) = issue_serving(&ca_cert_pem, &read(&ca_key_path)?, hosts)?;
    write(&dir.join(SERVING_CERT), &serving_cert_pem, false)?;
    write(&dir.join(SERVING_KEY), &serving_key_pem, true)?;

    let kubeconfig = dir.join(KUBECONFIG);
    let admin_cert = read(&dir.join(ADMIN_CERT))?;
    let admin_key = read(&dir.join(ADMIN_KEY))?;
    write(&kubeconfig, &render_kubeconfig(server_url, &ca_cert_pem, &admin_cert, &admin_key), true)?;
    Ok(Pki { ca_cert_pem, serving_cert_pem, serving_key_pem, kubeconfig })
}

fn create_ca_and_admin(dir: &Path) -> Result<(), PkiError> {
    let (ca_cert, issuer) = ca("versa-ca")?;

    let admin_key = KeyPair::generate().map_err(cert_err("admin key"))?;
    let mut admin = CertificateParams::new(Vec::<String>::new()).map_err(cert_err("admin certificate"))?;
    admin.distinguished_name = name(ADMIN_USER, &[ADMIN_GROUP]);
    admin.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    admin.not_after = rcgen::date_time_ymd(2125, 1, 1);
    let admin_cert = admin.signed_by(&admin_key, &issuer).map_err(cert_err("admin certificate"))?;

    // The CA files go last: their presence means the set is complete.
    write(&dir.join(ADMIN_CERT), &admin_cert.pem(), false)?;
    write(&dir.join(ADMIN_KEY), &admin_key.serialize_pem(), true)?;
    write(&dir.join(CA_KEY), &issuer.key().serialize_pem(), true)?;
    write(&dir.join(CA_CERT), &ca_cert.pem(), false)?;
    Ok(())
}

/// A new self-signed CA.
fn ca(common_name: &str) -> Result<(rcgen::Certificate, Issuer<'static, KeyPair>), PkiError> {
    let ca_key = KeyPair::generate().map_err(cert_err("CA key"))?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_err("CA certificate"))?;
    ca.distinguished_name = name(common_name, &[]);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    ca.not_after = rcgen::date_time_ymd(2125, 1, 1);
    let ca_cert = ca.self_signed(&ca_key).map_err(cert_err("CA certificate"))?;
    Ok((ca_cert, Issuer::new(ca, ca_key)))
}

/// A new self-signed CA named `common_name`, as (certificate PEM, key PEM).
pub fn new_ca(common_name: &str) -> Result<(String, String), PkiError> {
    let (cert, issuer) = ca(common_name)?;
    Ok((cert.pem(), issuer.key().serialize_pem()))
}

/// A serving certificate for `hosts` (DNS names or IP addresses) issued by the CA given as
/// PEM, as (certificate PEM, key PEM).
pub fn issue_serving(ca_cert_pem: &str, ca_key_pem: &str, hosts: &[String]) -> Result<(String, String), PkiError> {
    let ca_key = KeyPair::from_pem(ca_key_pem).map_err(cert_err("CA key"))?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert_pem, ca_key).map_err(cert_err("CA certificate"))?;
    let key = KeyPair::generate().map_err(cert_err("serving key"))?;
    let mut params = CertificateParams::new(hosts.to_vec()).map_err(cert_err("serving certificate names"))?;
    params.distinguished_name = name("versa", &[]);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving = params.signed_by(&key, &issuer).map_err(cert_err("serving certificate"))?;
    Ok((serving.pem(), key.serialize_pem()))
}

/// The longest a user's client certificate may be valid: kube's client certificates
/// (kubeadm's, the CSR signer's default) last a year.
pub const MAX_USER_DAYS: u32 = 365;

/// A kubeconfig for `user` in `groups`, with a client certificate signed by the CA of the data
/// directory `dir`, valid from now for `days` (at most [`MAX_USER_DAYS`]), for the server at
/// `server_url` (`None`: the one the data directory's admin kubeconfig names). The user and
/// groups are the certificate's subject (CN and O), as kube's x509 authenticator reads them.
pub fn issue_user(
    dir: &Path,
    user: &str,
    groups: &[String],
    days: u32,
    server_url: Option<&str>,
) -> Result<String, PkiError> {
    if user.is_empty() || user.contains(char::is_control) {
        return Err(PkiError::Invalid(format!("{user:?} is not a user name")));
    }
    if let Some(group) = groups.iter().find(|g| g.is_empty() || g.contains(char::is_control)) {
        return Err(PkiError::Invalid(format!("{group:?} is not a group name")));
    }
    if days == 0 || days > MAX_USER_DAYS {
        return Err(PkiError::Invalid(format!("--days must be between 1 and {MAX_USER_DAYS}, not {days}")));
    }
    let ca_cert_pem = read(&dir.join(CA_CERT))?;
    let ca_key = KeyPair::from_pem(&read(&dir.join(CA_KEY))?).map_err(cert_err("CA key"))?;
    let issuer = Issuer::from_ca_cert_pem(&ca_cert_pem, ca_key).map_err(cert_err("CA certificate"))?;
    let server = match server_url {
        Some(url) => url.to_owned(),
        None => {
            let admin = read(&dir.join(KUBECONFIG))?;
            admin
                .lines()
                .find_map(|l| l.trim().strip_prefix("server: ").map(str::to_owned))
                .ok_or_else(|| PkiError::Invalid(format!("{} names no server", dir.join(KUBECONFIG).display())))?
        }
    };
    let key = KeyPair::generate().map_err(cert_err("user key"))?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err("user certificate"))?;
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    params.distinguished_name = name(user, &groups);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + time::Duration::days(i64::from(days));
    let cert = params.signed_by(&key, &issuer).map_err(cert_err("user certificate"))?;
    Ok(render_kubeconfig_for(user, &server, &ca_cert_pem, &cert.pem(), &key.serialize_pem()))
}

fn render_kubeconfig(server: &str, ca: &str, cert: &str, key: &str) -> String {
    render_kubeconfig_for(ADMIN_USER, server, ca, cert, key)
}

/// A kubeconfig of one cluster (`versa`), one user and one context (`versa`).
fn render_kubeconfig_for(user: &str, server: &str, ca: &str, cert: &str, key: &str) -> String {
    let b64 = |s: &str| STANDARD.encode(s.as_bytes());
    // The user's entry is named after the user, quoted as YAML (any name is allowed).
    let user = serde_json::to_string(user).unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: versa
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {user}
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
contexts:
- name: versa
  context:
    cluster: versa
    user: {user}
current-context: versa
",
        ca = b64(ca),
        cert = b64(cert),
        key = b64(key),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        let first = load_or_create(dir.path(), &hosts, "https://127.0.0.1:8443").unwrap();
        let admin = std::fs::read_to_string(dir.path().join(ADMIN_CERT)).unwrap();
        let second = load_or_create(dir.path(), &hosts, "https://127.0.0.1:9443").unwrap();
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem, "the CA is reused");
        assert_eq!(admin, std::fs::read_to_string(dir.path().join(ADMIN_CERT)).unwrap());
        assert_ne!(first.serving_cert_pem, second.serving_cert_pem, "serving certificates are per start");
        let kubeconfig = std::fs::read_to_string(&second.kubeconfig).unwrap();
        assert!(kubeconfig.contains("server: https://127.0.0.1:9443"), "{kubeconfig}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(CA_KEY)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
