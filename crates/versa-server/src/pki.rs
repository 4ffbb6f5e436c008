//! The standalone PKI in the data directory: a CA, an admin client certificate (user
//! `versa-admin`, group `system:masters`) and `admin.kubeconfig`, created on first start and
//! reused afterwards — so two replicas started from copies of one data directory accept the same
//! admin credentials. The serving certificate is re-issued from the CA on every start, for the
//! hosts of that start's listen address, so changing `--listen` never leaves a stale name.
//!
//! Private keys are written with mode 0600.

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
    #[error("a certificate holds at most {MAX_USER_GROUPS} groups")]
    TooManyGroups,
    #[error("the issued certificate's subject does not read back as the user and groups asked for")]
    Subject,
    #[error("{what}: {source}")]
    Cert {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
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
    write(&kubeconfig, &render_kubeconfig(server_url, &ca_cert_pem, ADMIN_USER, &admin_cert, &admin_key), true)?;
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

/// The longest validity [`issue_user_kubeconfig`] grants (ten years): a user certificate
/// cannot be revoked, so it should expire.
pub const MAX_USER_CERT_DAYS: u32 = 3650;

/// A kubeconfig for `user` in `groups`, with a new client certificate signed by the CA in `dir`
/// (which must exist: `versa serve` creates it on first start). The certificate is valid from
/// five minutes ago (clock skew, as kube's CSR signer backdates) for `days` days, at most
/// [`MAX_USER_CERT_DAYS`]; the subject is CN=`user`, one O per group, as kube's x509
/// authenticator reads it.
pub fn issue_user_kubeconfig(
    dir: &Path,
    user: &str,
    groups: &[String],
    days: u32,
    server_url: &str,
) -> Result<String, PkiError> {
    if groups.len() > MAX_USER_GROUPS {
        return Err(PkiError::TooManyGroups);
    }
    let ca_cert_pem = read(&dir.join(CA_CERT))?;
    let ca_key = KeyPair::from_pem(&read(&dir.join(CA_KEY))?).map_err(cert_err("CA key"))?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca_cert_pem, OrganizationsSigner(ca_key)).map_err(cert_err("CA certificate"))?;
    let key = KeyPair::generate().map_err(cert_err("user key"))?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err("user certificate"))?;
    params.distinguished_name.push(DnType::CommonName, user);
    for (i, group) in groups.iter().enumerate() {
        params.distinguished_name.push(OrganizationsSigner::placeholder(i), group.as_str());
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    let backdate = std::time::Duration::from_secs(5 * 60);
    let validity = std::time::Duration::from_secs(u64::from(days.min(MAX_USER_CERT_DAYS)) * 24 * 60 * 60);
    params.not_before = epoch + now.saturating_sub(backdate);
    params.not_after = epoch + now + validity;
    // The placeholders are rewritten to O in the certificate exactly as in what was signed; a
    // certificate whose subject then reads back other than asked (random bytes elsewhere that
    // matched a placeholder) is issued again with a new serial number and key.
    for _ in 0..4 {
        let cert = params.signed_by(&key, &issuer).map_err(cert_err("user certificate"))?;
        let der = OrganizationsSigner::rewrite(cert.der());
        if subject_reads(&der, user, groups) {
            let pem = pem_block("CERTIFICATE", &der);
            return Ok(render_kubeconfig(server_url, &ca_cert_pem, user, &pem, &key.serialize_pem()));
        }
    }
    Err(PkiError::Subject)
}

/// The most groups [`issue_user_kubeconfig`] writes into one certificate.
pub const MAX_USER_GROUPS: usize = 27;

/// rcgen keeps one value per attribute type in a name, and kube reads each group from its own
/// O attribute. So the groups are written under placeholder attribute types 2.5.4.100 to
/// 2.5.4.126 (unassigned; DER `06 03 55 04 xx`, the same length as O's `06 03 55 04 0a`), and
/// this signer signs the to-be-signed certificate with each placeholder replaced by O; the
/// issued DER gets the same same-length replacement, so the signature matches it.
struct OrganizationsSigner(KeyPair);

impl OrganizationsSigner {
    const FIRST: u8 = 100;

    fn placeholder(i: usize) -> DnType {
        DnType::CustomDnType(vec![2, 5, 4, u64::from(Self::FIRST) + i as u64])
    }

    fn rewrite(der: &[u8]) -> Vec<u8> {
        let mut out = der.to_vec();
        let last = Self::FIRST + MAX_USER_GROUPS as u8;
        let mut i = 0;
        while i + 5 <= out.len() {
            if out[i..i + 4] == [0x06, 0x03, 0x55, 0x04] && (Self::FIRST..last).contains(&out[i + 4]) {
                out[i + 4] = 0x0a;
                i += 5;
            } else {
                i += 1;
            }
        }
        out
    }
}

impl rcgen::PublicKeyData for OrganizationsSigner {
    fn der_bytes(&self) -> &[u8] {
        self.0.der_bytes()
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.0.algorithm()
    }
}

impl rcgen::SigningKey for OrganizationsSigner {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        self.0.sign(&Self::rewrite(msg))
    }
}

/// Whether the certificate's subject is CN=`user` with exactly `groups` as O, in order.
fn subject_reads(der: &[u8], user: &str, groups: &[String]) -> bool {
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else { return false };
    let subject = cert.subject();
    let cns: Vec<_> = subject.iter_common_name().map(|c| c.as_str().ok()).collect();
    let orgs: Vec<_> = subject.iter_organization().map(|o| o.as_str().ok()).collect();
    cns == [Some(user)] && orgs.iter().copied().eq(groups.iter().map(|g| Some(g.as_str())))
}

fn pem_block(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

fn render_kubeconfig(server: &str, ca: &str, user: &str, cert: &str, key: &str) -> String {
    let b64 = |s: &str| STANDARD.encode(s.as_bytes());
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

    fn pem_der(pem: &str) -> Vec<u8> {
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        STANDARD.decode(body).unwrap()
    }

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
        let alice =
            issue_user_kubeconfig(dir.path(), "alice", &["devs".into(), "ops".into()], 30, "https://h:1").unwrap();
        let cert_b64 = alice.lines().find_map(|l| l.trim().strip_prefix("client-certificate-data: ")).unwrap();
        let cert_pem = String::from_utf8(STANDARD.decode(cert_b64).unwrap()).unwrap();
        let der = pem_der(&cert_pem);
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let subject = cert.subject();
        assert_eq!(subject.iter_common_name().next().unwrap().as_str().unwrap(), "alice");
        let orgs: Vec<_> = subject.iter_organization().map(|o| o.as_str().unwrap()).collect();
        assert_eq!(orgs, ["devs", "ops"]);
        let days = (cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp()) / 86400;
        assert_eq!(days, 30, "30 days and the five minutes' backdating");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(CA_KEY)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
