//! Kubeconfigs: reading the file's current context (server URL, CA, client certificate or
//! bearer token), for `versa migrate` (a minimal blocking HTTPS client for the few requests it
//! makes to a running versa) and for `versa serve` in cluster mode (the [`endpoint`] of
//! kube-apiserver, from `--kubeconfig` or [`in_cluster`]).
//!
//! The kubeconfig is read the way kubectl reads it: `current-context` names a context, which
//! names a cluster and a user; `*-data` fields are base64 PEM, the file fields are paths
//! relative to the kubeconfig's directory, and `token`/`tokenFile` become `Authorization:
//! Bearer`. Resolving the file is pure ([`Kubeconfig::parse`]); the files it names are read only
//! when connecting. Credential plugins (`exec`, `auth-provider`), basic auth and
//! `insecure-skip-tls-verify` are refused with a message rather than ignored, so a kubeconfig
//! never silently means something else here than it does to kubectl.
//!
//! The client speaks HTTP/1.1 over rustls, one connection per request (`Connection: close`):
//! the commands make a handful of requests, and a fresh connection keeps each one independent.
//! Bodies are sent with `Content-Length`; responses may use `Content-Length`, `chunked` or end
//! at the close. This is the binary's only HTTP *client*: the server side stays in
//! `versa-server`.
//!
//! Input safety: a response head may be at most [`MAX_HEAD_BYTES`] and a body at most
//! [`MAX_BODY_BYTES`]; every socket read and write times out after [`IO_TIMEOUT`].

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;
use serde_json::Value;

/// The largest response head (status line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest response body accepted (a list of many large definitions fits easily).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// How long connecting, and each read or write, may take.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// Errors reading a kubeconfig or talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the kubeconfig {path}: {source} (pass --kubeconfig FILE or set KUBECONFIG)")]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid kubeconfig: {0}")]
    Invalid(String),
    #[error("{what}: {message}")]
    Credential { what: String, message: String },
    #[error("TLS configuration: {0}")]
    TlsConfig(#[source] rustls::Error),
    #[error("unable to connect to the server {address}: {message}")]
    Connect { address: String, message: String },
    #[error("{address}: {message}")]
    Exchange { address: String, message: String },
    /// The server refused the request; displayed as kubectl displays it.
    #[error("{}", server_error_text(.code, .reason, .message))]
    Server { code: u16, reason: String, message: String },
}

/// `Result` with this module's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The current context of a kubeconfig, resolved: where the server is, how to trust it and who
/// to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kubeconfig {
    pub server: ServerUrl,
    /// `tls-server-name`: the name to verify the serving certificate against, when not the
    /// URL's host.
    pub tls_server_name: Option<String>,
    /// The CA bundle (PEM); `None` trusts the system's roots, as kubectl does.
    pub certificate_authority: Option<Material>,
    pub identity: Identity,
}

/// A credential given inline (`*-data`, `token`) or by file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Material {
    Inline(Vec<u8>),
    File(PathBuf),
}

/// Who the client is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// No credentials (the server answers 401).
    Anonymous,
    /// A client certificate and its key (PEM).
    Certificate { certificate: Material, key: Material },
    /// A bearer token.
    Token(Material),
}

/// An `https://host[:port][/prefix]` server URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// Path before `/apis/...`, without a trailing slash (usually empty).
    pub prefix: String,
}

/// The kubeconfig to use: `--kubeconfig`, else the first existing file of `$KUBECONFIG` (a
/// path list, as for kubectl; the first entry when none exists, so that the error names it),
/// else `./versa-data/admin.kubeconfig` — where `versa serve` writes it by default.
pub fn locate(flag: Option<&Path>, env: Option<&std::ffi::OsStr>) -> PathBuf {
    if let Some(path) = flag {
        return path.to_path_buf();
    }
    let listed: Vec<PathBuf> =
        env.map(|e| std::env::split_paths(e).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default();
    if let Some(found) = listed.iter().find(|p| p.exists()) {
        return found.clone();
    }
    match listed.into_iter().next() {
        Some(first) => first,
        None => Path::new("versa-data").join(versa_server::pki::KUBECONFIG),
    }
}

impl Kubeconfig {
    /// Reads and resolves the kubeconfig at `path`.
    pub fn load(path: &Path) -> Result<Kubeconfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::ReadKubeconfig { path: path.to_path_buf(), source })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Kubeconfig::parse(&text, dir).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Resolves the current context of kubeconfig `text` (YAML or JSON); relative file paths
    /// are taken from `dir`, the kubeconfig's directory.
    pub fn parse(text: &str, dir: &Path) -> Result<Kubeconfig> {
        let docs = crate::documents::parse(text).map_err(|e| Error::Invalid(format!("{e:#}")))?;
        let [doc] = <[Value; 1]>::try_from(docs)
            .map_err(|d| Error::Invalid(format!("expected one document, found {}", d.len())))?;
        let file = File::deserialize(&doc).map_err(|e| Error::Invalid(e.to_string()))?;
        let context_name = file.current_context.filter(|c| !c.is_empty()).ok_or_else(|| {
            Error::Invalid("current-context is not set (kubectl config use-context NAME sets it)".into())
        })?;
        let context = find(&file.contexts, &context_name, "context")?;
        let cluster = find(&file.clusters, &context.cluster, "cluster")?;
        let user = match context.user.as_str() {
            "" => User::default(),
            name => find(&file.users, name, "user")?,
        };
        let in_cluster = |m: String| Error::Invalid(format!("cluster {:?}: {m}", context.cluster));
        let in_user = |m: String| Error::Invalid(format!("user {:?}: {m}", context.user));

        let server = ServerUrl::parse(&cluster.server).map_err(in_cluster)?;
        if cluster.insecure_skip_tls_verify {
            return Err(in_cluster(
                "insecure-skip-tls-verify is not supported: give the CA (certificate-authority-data)".into(),
            ));
        }
        let certificate_authority = material(cluster.certificate_authority_data, cluster.certificate_authority, dir)
            .map_err(|m| in_cluster(format!("certificate-authority-data: {m}")))?;

        for (set, what) in [
            (user.exec.is_some(), "exec credential plugins"),
            (user.auth_provider.is_some(), "auth-provider plugins"),
            (!user.username.is_empty() || !user.password.is_empty(), "basic authentication (username/password)"),
        ] {
            if set {
                return Err(in_user(format!("{what} are not supported by versa")));
            }
        }
        let certificate = material(user.client_certificate_data, user.client_certificate, dir)
            .map_err(|m| in_user(format!("client-certificate-data: {m}")))?;
        let key = material(user.client_key_data, user.client_key, dir)
            .map_err(|m| in_user(format!("client-key-data: {m}")))?;
        let token = match (user.token.is_empty(), user.token_file.is_empty()) {
            (false, _) => Some(Material::Inline(user.token.into_bytes())),
            (true, false) => Some(Material::File(dir.join(&user.token_file))),
            (true, true) => None,
        };
        let identity = match (certificate, key, token) {
            (Some(certificate), Some(key), _) => Identity::Certificate { certificate, key },
            (Some(_), None, _) => return Err(in_user("client-certificate without client-key".into())),
            (None, Some(_), _) => return Err(in_user("client-key without client-certificate".into())),
            (None, None, Some(token)) => Identity::Token(token),
            (None, None, None) => Identity::Anonymous,
        };
        let tls_server_name = Some(cluster.tls_server_name).filter(|n| !n.is_empty());
        Ok(Kubeconfig { server, tls_server_name, certificate_authority, identity })
    }
}

impl ServerUrl {
    /// Parses `https://host[:port][/prefix]`; the error says what is wrong.
    pub fn parse(url: &str) -> Result<ServerUrl, String> {
        if url.is_empty() {
            return Err("server is not set".into());
        }
        let bad = |why: &str| format!("server {url:?}: {why}");
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => rest,
            Some((scheme, _)) => return Err(bad(&format!("scheme {scheme:?} is not supported (versa serves https)"))),
            None => return Err(bad("expected https://host[:port]")),
        };
        let (authority, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
        if authority.contains('@') {
            return Err(bad("user information in the URL is not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed '[' in the host"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            None => 443,
            Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad(&format!("invalid port {p:?}")))?,
        };
        if path.contains(['?', '#']) {
            return Err(bad("query and fragment are not supported"));
        }
        Ok(ServerUrl { host: host.to_owned(), port, prefix: path.trim_end_matches('/').to_owned() })
    }

    /// `host:port`, with IPv6 addresses in brackets.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl Material {
    /// The bytes, reading the file if it is one.
    pub fn read(&self) -> Result<Vec<u8>> {
        match self {
            Material::Inline(bytes) => Ok(bytes.clone()),
            Material::File(path) => std::fs::read(path).map_err(|source| Error::Read { path: path.clone(), source }),
        }
    }
}

/// A kubeconfig `*-data` field (base64) or its file twin; `*-data` wins, as in kubectl.
fn material(data: String, file: String, dir: &Path) -> Result<Option<Material>, String> {
    if !data.is_empty() {
        // Tolerate line breaks in the base64 (hand-written files wrap it).
        let compact: String = data.split_whitespace().collect();
        let bytes =
            base64::engine::general_purpose::STANDARD.decode(compact).map_err(|e| format!("invalid base64: {e}"))?;
        return Ok(Some(Material::Inline(bytes)));
    }
    Ok((!file.is_empty()).then(|| Material::File(dir.join(file))))
}

fn find<T: Clone>(list: &[Named<T>], name: &str, what: &str) -> Result<T> {
    list.iter()
        .find(|n| n.name == name)
        .map(|n| n.value.clone())
        .ok_or_else(|| Error::Invalid(format!("{what} {name:?} is not defined")))
}

/// The file as written; only the fields used here (others are ignored, as kubectl ignores
/// fields it does not know).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct File {
    #[serde(default)]
    current_context: Option<String>,
    #[serde(default, deserialize_with = "null_is_empty")]
    clusters: Vec<Named<Cluster>>,
    #[serde(default, deserialize_with = "null_is_empty")]
    users: Vec<Named<User>>,
    #[serde(default, deserialize_with = "null_is_empty")]
    contexts: Vec<Named<Context>>,
}

#[derive(Debug, Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
struct Cluster {
    server: String,
    certificate_authority: String,
    certificate_authority_data: String,
    insecure_skip_tls_verify: bool,
    tls_server_name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
struct User {
    client_certificate: String,
    client_certificate_data: String,
    client_key: String,
    client_key_data: String,
    token: String,
    #[serde(rename = "tokenFile")]
    token_file: String,
    username: String,
    password: String,
    exec: Option<Value>,
    auth_provider: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Context {
    cluster: String,
    user: String,
}

fn null_is_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// A blocking HTTPS client for the server of one kubeconfig.
#[derive(Debug, Clone)]
pub struct Client {
    tls: Arc<rustls::ClientConfig>,
    server: ServerUrl,
    server_name: ServerName<'static>,
    /// `Authorization` header value, when the identity is a token.
    authorization: Option<String>,
}

/// The TLS side of a kubeconfig: trust roots (its CA, else the system's) and the client
/// certificate, if it names one.
pub fn tls_config(config: &Kubeconfig) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    match &config.certificate_authority {
        Some(ca) => {
            let pem = ca.read()?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| credential("certificate authority", e))?;
                roots.add(cert).map_err(|e| credential("certificate authority", e))?;
            }
            if roots.is_empty() {
                return Err(credential("certificate authority", "no PEM certificate found"));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            let _ = roots.add_parsable_certificates(native.certs);
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::TlsConfig)?
        .with_root_certificates(roots);
    match &config.identity {
        Identity::Certificate { certificate, key } => {
            let chain = CertificateDer::pem_slice_iter(&certificate.read()?)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| credential("client certificate", e))?;
            if chain.is_empty() {
                return Err(credential("client certificate", "no PEM certificate found"));
            }
            let key = PrivateKeyDer::from_pem_slice(&key.read()?).map_err(|e| credential("client key", e))?;
            builder.with_client_auth_cert(chain, key).map_err(Error::TlsConfig)
        }
        Identity::Anonymous | Identity::Token(_) => Ok(builder.with_no_client_auth()),
    }
}

/// What `versa serve` in cluster mode needs to reach kube-apiserver, from a kubeconfig.
pub fn endpoint(config: &Kubeconfig) -> Result<versa_server::kube::Endpoint> {
    use versa_server::kube::Token;
    let token = match &config.identity {
        Identity::Token(Material::Inline(bytes)) => {
            Token::Inline(String::from_utf8(bytes.clone()).map_err(|e| credential("token", e))?.trim().to_owned())
        }
        Identity::Token(Material::File(path)) => Token::File(path.clone()),
        Identity::Anonymous | Identity::Certificate { .. } => Token::None,
    };
    Ok(versa_server::kube::Endpoint {
        base_url: format!("https://{}{}", config.server.authority(), config.server.prefix),
        tls_server_name: config.tls_server_name.clone(),
        tls: Arc::new(tls_config(config)?),
        token,
    })
}

/// Where the pod's service account files are.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The in-cluster configuration (as client-go's `rest.InClusterConfig`): kube-apiserver at
/// `KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT`, trusted by the service account's
/// `ca.crt`, authenticated by its (rotated, so re-read) token.
pub fn in_cluster(host: &str, port: &str) -> Result<Kubeconfig> {
    let dir = Path::new(SERVICE_ACCOUNT_DIR);
    let host = if host.contains(':') { format!("[{host}]") } else { host.to_owned() };
    let server = ServerUrl::parse(&format!("https://{host}:{port}")).map_err(Error::Invalid)?;
    Ok(Kubeconfig {
        server,
        tls_server_name: None,
        certificate_authority: Some(Material::File(dir.join("ca.crt"))),
        identity: Identity::Token(Material::File(dir.join("token"))),
    })
}

/// An HTTP response, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Client {
    /// Reads the credentials the kubeconfig names and prepares TLS (no connection yet).
    pub fn new(config: &Kubeconfig) -> Result<Client> {
        let tls = tls_config(config)?;
        let authorization = match &config.identity {
            Identity::Token(token) => {
                let token = String::from_utf8(token.read()?).map_err(|e| credential("token", e))?;
                Some(format!("Bearer {}", token.trim()))
            }
            Identity::Anonymous | Identity::Certificate { .. } => None,
        };
        let name = config.tls_server_name.clone().unwrap_or_else(|| config.server.host.clone());
        let server_name = ServerName::try_from(name).map_err(|e| credential("server name", e))?;
        Ok(Client { tls: Arc::new(tls), server: config.server.clone(), server_name, authorization })
    }

    /// `GET path` (path from `/apis/...`), decoding a JSON answer; non-2xx is
    /// [`Error::Server`].
    pub fn get(&self, path: &str) -> Result<Value> {
        self.send("GET", path, None)?.json(&self.server)
    }

    /// `PATCH path` with a JSON merge patch (RFC 7386).
    pub fn merge_patch(&self, path: &str, patch: &Value) -> Result<Value> {
        let body = serde_json::to_vec(patch).map_err(|e| self.exchange(e))?;
        self.send("PATCH", path, Some(("application/merge-patch+json", &body)))?.json(&self.server)
    }

    /// One request on a fresh connection.
    pub fn send(&self, method: &str, path: &str, body: Option<(&str, &[u8])>) -> Result<Response> {
        let address = self.server.authority();
        let connect_error = |message: String| Error::Connect { address: address.clone(), message };
        let addrs = (self.server.host.as_str(), self.server.port)
            .to_socket_addrs()
            .map_err(|e| connect_error(e.to_string()))?;
        let mut last = String::from("the host name resolves to no address");
        let mut tcp = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, IO_TIMEOUT) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let mut tcp = tcp.ok_or_else(|| connect_error(last))?;
        tcp.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| self.exchange(e))?;
        tcp.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| self.exchange(e))?;
        let mut tls =
            rustls::ClientConnection::new(Arc::clone(&self.tls), self.server_name.clone()).map_err(Error::TlsConfig)?;
        // Handshake first, so that certificate problems are reported as such.
        while tls.is_handshaking() {
            tls.complete_io(&mut tcp).map_err(|e| connect_error(format!("TLS handshake: {e}")))?;
        }
        let mut stream = rustls::StreamOwned::new(tls, tcp);

        let mut head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {address}\r\nUser-Agent: versa/{} (migrate)\r\nAccept: application/json\r\nConnection: close\r\n",
            self.server.prefix,
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(auth) = &self.authorization {
            head.push_str(&format!("Authorization: {auth}\r\n"));
        }
        if let Some((content_type, bytes)) = body {
            head.push_str(&format!("Content-Type: {content_type}\r\nContent-Length: {}\r\n", bytes.len()));
        }
        head.push_str("\r\n");
        let mut request = head.into_bytes();
        if let Some((_, bytes)) = body {
            request.extend_from_slice(bytes);
        }
        stream.write_all(&request).and_then(|()| stream.flush()).map_err(|e| self.exchange(e))?;
        read_response(&mut BufReader::new(stream)).map_err(|e| self.exchange(e))
    }

    fn exchange(&self, e: impl std::fmt::Display) -> Error {
        Error::Exchange { address: self.server.authority(), message: e.to_string() }
    }
}

impl Response {
    /// The body as JSON when the status is 2xx; otherwise the server's `metav1.Status` as
    /// [`Error::Server`].
    pub fn json(self, server: &ServerUrl) -> Result<Value> {
        let parsed: Result<Value, _> = serde_json::from_slice(&self.body);
        if (200..300).contains(&self.status) {
            return parsed.map_err(|e| Error::Exchange {
                address: server.authority(),
                message: format!("status {}: the body is not JSON: {e}", self.status),
            });
        }
        let status = parsed.ok().filter(|v| v.get("kind").and_then(Value::as_str) == Some("Status"));
        let (reason, message) = match status {
            Some(s) => (
                s.get("reason").and_then(Value::as_str).unwrap_or_default().to_owned(),
                s.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
            ),
            None => (String::new(), String::from_utf8_lossy(&self.body).trim().chars().take(1024).collect()),
        };
        Err(Error::Server { code: self.status, reason, message })
    }
}

/// kubectl's wording: `Error from server (NotFound): <message>`.
fn server_error_text(code: &u16, reason: &str, message: &str) -> String {
    match (reason.is_empty(), message.is_empty()) {
        (false, _) => format!("Error from server ({reason}): {message}"),
        (true, false) => format!("Error from server: {message}"),
        (true, true) => format!("Error from server: status {code}"),
    }
}

fn credential(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Credential { what: what.to_owned(), message: e.to_string() }
}

/// Reads one HTTP/1.1 response (skipping `1xx` interim responses).
pub fn read_response(r: &mut impl BufRead) -> Result<Response, String> {
    loop {
        let mut head_budget = MAX_HEAD_BYTES;
        let status_line = read_line(r, &mut head_budget)?;
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default();
        if !version.starts_with("HTTP/1.") {
            return Err(format!("not an HTTP/1.x response: {:?}", status_line.chars().take(80).collect::<String>()));
        }
        let status = parts
            .next()
            .and_then(|s| s.parse::<u16>().ok())
            .filter(|s| (100..1000).contains(s))
            .ok_or_else(|| format!("malformed status line {status_line:?}"))?;
        let (mut chunked, mut length) = (false, None);
        loop {
            let line = read_line(r, &mut head_budget)?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').ok_or_else(|| format!("malformed header line {line:?}"))?;
            let value = value.trim();
            if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.rsplit(',').next().is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            } else if name.eq_ignore_ascii_case("content-length") {
                let n = value.parse::<usize>().map_err(|_| format!("invalid Content-Length {value:?}"))?;
                if length.is_some_and(|l| l != n) {
                    return Err("conflicting Content-Length headers".into());
                }
                length = Some(n);
            }
        }
        if (100..200).contains(&status) {
            continue;
        }
        let body = if chunked {
            read_chunked(r)?
        } else if let Some(n) = length {
            if n > MAX_BODY_BYTES {
                return Err(format!("response body of {n} bytes is larger than the limit of {MAX_BODY_BYTES}"));
            }
            let mut body = vec![0; n];
            r.read_exact(&mut body).map_err(|e| format!("reading the body: {e}"))?;
            body
        } else if status == 204 || status == 304 {
            Vec::new()
        } else {
            // Delimited by the end of the connection.
            let mut body = Vec::new();
            r.take(MAX_BODY_BYTES as u64 + 1).read_to_end(&mut body).map_err(|e| format!("reading the body: {e}"))?;
            if body.len() > MAX_BODY_BYTES {
                return Err(format!("response body larger than the limit of {MAX_BODY_BYTES} bytes"));
            }
            body
        };
        return Ok(Response { status, body });
    }
}

/// A `Transfer-Encoding: chunked` body (extensions and trailers are read and ignored).
fn read_chunked(r: &mut impl BufRead) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let mut budget = MAX_HEAD_BYTES;
        let line = read_line(r, &mut budget)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| format!("invalid chunk size {size:?}"))?;
        if size == 0 {
            while !read_line(r, &mut budget)?.is_empty() {}
            return Ok(body);
        }
        if size > MAX_BODY_BYTES - body.len() {
            return Err(format!("response body larger than the limit of {MAX_BODY_BYTES} bytes"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..]).map_err(|e| format!("reading a chunk: {e}"))?;
        if !read_line(r, &mut budget)?.is_empty() {
            return Err("chunk not followed by CRLF".into());
        }
    }
}

/// One CRLF- (or LF-) terminated line, counted against `budget`.
fn read_line(r: &mut impl BufRead, budget: &mut usize) -> Result<String, String> {
    let mut line = Vec::new();
    let n = r.take(*budget as u64).read_until(b'\n', &mut line).map_err(|e| format!("reading the response: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(if n == *budget {
            format!("response head larger than {MAX_HEAD_BYTES} bytes")
        } else {
            "the connection closed before the response was complete".into()
        });
    }
    *budget -= n;
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| "response head is not UTF-8".into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

    use super::*;

    const B64_CA: &str = "Q0EgUEVN"; // "CA PEM"
    const B64_CERT: &str = "Q0VSVA=="; // "CERT"
    const B64_KEY: &str = "S0VZ"; // "KEY"

    fn kubeconfig(cluster: &str, user: &str) -> String {
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
{cluster}
users:
- name: u
  user:
{user}
contexts:
- name: other
  context: {{cluster: missing, user: missing}}
- name: ctx
  context: {{cluster: c, user: u}}
current-context: ctx
"
        )
    }

    fn inline(s: &str) -> Option<Material> {
        Some(Material::Inline(s.as_bytes().to_vec()))
    }

    fn file(p: &str) -> Option<Material> {
        Some(Material::File(PathBuf::from(p)))
    }

    /// One table: kubeconfig in, resolved context (or the error's text) out.
    #[test]
    fn parse_cases() {
        let url = |host: &str, port: u16, prefix: &str| ServerUrl { host: host.into(), port, prefix: prefix.into() };
        let certs =
            |c: &str, k: &str| Identity::Certificate { certificate: inline(c).unwrap(), key: inline(k).unwrap() };
        type Expected = Result<(ServerUrl, Option<Material>, Identity), &'static str>;
        let cases: Vec<(&str, String, Expected)> = vec![
            (
                "versa admin: *-data fields, IP address",
                kubeconfig(
                    &format!("    server: https://127.0.0.1:8443\n    certificate-authority-data: {B64_CA}"),
                    &format!("    client-certificate-data: {B64_CERT}\n    client-key-data: {B64_KEY}"),
                ),
                Ok((url("127.0.0.1", 8443, ""), inline("CA PEM"), certs("CERT", "KEY"))),
            ),
            (
                "files relative to the kubeconfig, absolute kept",
                kubeconfig(
                    "    server: https://versa.example.com/\n    certificate-authority: ca.crt",
                    "    client-certificate: /etc/versa/admin.crt\n    client-key: keys/admin.key",
                ),
                Ok((
                    url("versa.example.com", 443, ""),
                    file("/home/me/.kube/ca.crt"),
                    Identity::Certificate {
                        certificate: file("/etc/versa/admin.crt").unwrap(),
                        key: file("/home/me/.kube/keys/admin.key").unwrap(),
                    },
                )),
            ),
            (
                "data wins over the file; wrapped base64",
                kubeconfig(
                    "    server: https://h:1\n    certificate-authority: ca.crt\n    certificate-authority-data: |\n      Q0Eg\n      UEVN",
                    "    token: abc",
                ),
                Ok((url("h", 1, ""), inline("CA PEM"), Identity::Token(inline("abc").unwrap()))),
            ),
            (
                "token file, IPv6, path prefix, no CA",
                kubeconfig("    server: https://[::1]:6443/k8s/clusters/x/", "    tokenFile: token"),
                Ok((url("::1", 6443, "/k8s/clusters/x"), None, Identity::Token(file("/home/me/.kube/token").unwrap()))),
            ),
            (
                "no credentials",
                kubeconfig("    server: https://h", "    {}"),
                Ok((url("h", 443, ""), None, Identity::Anonymous)),
            ),
            (
                "http",
                kubeconfig("    server: http://h:8080", "    {}"),
                Err(
                    r#"invalid kubeconfig: cluster "c": server "http://h:8080": scheme "http" is not supported (versa serves https)"#,
                ),
            ),
            (
                "bad port",
                kubeconfig("    server: https://h:99999", "    {}"),
                Err(r#"invalid kubeconfig: cluster "c": server "https://h:99999": invalid port "99999""#),
            ),
            (
                "no server",
                kubeconfig("    certificate-authority-data: Q0E=", "    {}"),
                Err(r#"invalid kubeconfig: cluster "c": server is not set"#),
            ),
            (
                "insecure",
                kubeconfig("    server: https://h\n    insecure-skip-tls-verify: true", "    {}"),
                Err(
                    r#"invalid kubeconfig: cluster "c": insecure-skip-tls-verify is not supported: give the CA (certificate-authority-data)"#,
                ),
            ),
            (
                "bad base64",
                kubeconfig("    server: https://h\n    certificate-authority-data: '%%%'", "    {}"),
                Err(
                    r#"invalid kubeconfig: cluster "c": certificate-authority-data: invalid base64: Invalid symbol 37, offset 0."#,
                ),
            ),
            (
                "exec plugin",
                kubeconfig("    server: https://h", "    exec: {command: aws}"),
                Err(r#"invalid kubeconfig: user "u": exec credential plugins are not supported by versa"#),
            ),
            (
                "certificate without key",
                kubeconfig("    server: https://h", &format!("    client-certificate-data: {B64_CERT}")),
                Err(r#"invalid kubeconfig: user "u": client-certificate without client-key"#),
            ),
            (
                "context naming a missing cluster",
                kubeconfig("    server: https://h", "    {}").replace("current-context: ctx", "current-context: other"),
                Err(r#"invalid kubeconfig: cluster "missing" is not defined"#),
            ),
            (
                "unknown current context",
                kubeconfig("    server: https://h", "    {}").replace("current-context: ctx", "current-context: nope"),
                Err(r#"invalid kubeconfig: context "nope" is not defined"#),
            ),
            (
                "no current context",
                "apiVersion: v1\nkind: Config\nclusters: null\n".to_owned(),
                Err("invalid kubeconfig: current-context is not set (kubectl config use-context NAME sets it)"),
            ),
        ];
        let mut failures = Vec::new();
        for (what, text, expected) in cases {
            let got = Kubeconfig::parse(&text, Path::new("/home/me/.kube"))
                .map(|k| (k.server, k.certificate_authority, k.identity))
                .map_err(|e| e.to_string());
            let expected = expected.map_err(str::to_owned);
            if got != expected {
                failures.push(format!("{what}:\n  got      {got:?}\n  expected {expected:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn tls_server_name_is_read() {
        let text = kubeconfig("    server: https://10.0.0.1\n    tls-server-name: versa.internal", "    {}");
        let k = Kubeconfig::parse(&text, Path::new(".")).unwrap();
        assert_eq!(k.tls_server_name.as_deref(), Some("versa.internal"));
    }

    /// The kubeconfig `versa serve` writes (a real one, from the server's own PKI code) resolves
    /// to its inline credentials, and a client can be built from it (PEM parses, IP server name).
    #[test]
    fn the_admin_kubeconfig_of_versa_serve() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = vec!["127.0.0.1".to_owned()];
        let pki = versa_server::pki::load_or_create(dir.path(), &hosts, "https://127.0.0.1:8443").unwrap();
        let k = Kubeconfig::load(&pki.kubeconfig).unwrap();
        assert_eq!(k.server, ServerUrl { host: "127.0.0.1".into(), port: 8443, prefix: String::new() });
        assert_eq!(k.certificate_authority, Some(Material::Inline(pki.ca_cert_pem.into_bytes())));
        let admin_crt = std::fs::read(dir.path().join(versa_server::pki::ADMIN_CERT)).unwrap();
        let Identity::Certificate { certificate, .. } = &k.identity else { panic!("{:?}", k.identity) };
        assert_eq!(certificate, &Material::Inline(admin_crt));
        let client = Client::new(&k).unwrap();
        assert!(matches!(client.server_name, ServerName::IpAddress(_)), "{:?}", client.server_name);
    }

    #[test]
    fn locate_order() {
        let dir = tempfile::tempdir().unwrap();
        let exists = dir.path().join("exists");
        std::fs::write(&exists, "").unwrap();
        let missing = dir.path().join("missing");
        let flag = Path::new("/flag");
        let list = std::env::join_paths([&missing, &exists]).unwrap();
        assert_eq!(locate(Some(flag), Some(&list)), flag);
        assert_eq!(locate(None, Some(&list)), exists);
        assert_eq!(locate(None, Some(missing.as_os_str())), missing);
        let default = Path::new("versa-data/admin.kubeconfig");
        assert_eq!(locate(None, Some(std::ffi::OsStr::new(""))), default);
        assert_eq!(locate(None, None), default);
    }

    /// Raw responses in, status and body (or the error) out.
    #[test]
    fn responses() {
        type Expected = Result<(u16, &'static str), &'static str>;
        let cases: Vec<(&str, &str, Expected)> = vec![
            ("content-length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}trailing", Ok((200, "{}"))),
            (
                "chunked, with extension and trailer",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-T: 1\r\n\r\n",
                Ok((200, "{\"a\":1}")),
            ),
            (
                "chunked wins over length",
                "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
                Ok((200, "x")),
            ),
            ("close-delimited", "HTTP/1.1 404 Not Found\r\n\r\nbody", Ok((404, "body"))),
            (
                "interim response skipped",
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
                Ok((201, "")),
            ),
            ("LF only", "HTTP/1.1 204 No Content\n\n", Ok((204, ""))),
            (
                "truncated body",
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
                Err("reading the body: failed to fill whole buffer"),
            ),
            (
                "truncated head",
                "HTTP/1.1 200 OK\r\nContent-Le",
                Err("the connection closed before the response was complete"),
            ),
            (
                "bad chunk size",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                Err("invalid chunk size \"zz\""),
            ),
            ("not http", "SSH-2.0-OpenSSH\r\n", Err("not an HTTP/1.x response: \"SSH-2.0-OpenSSH\"")),
            (
                "conflicting lengths",
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                Err("conflicting Content-Length headers"),
            ),
        ];
        let mut failures = Vec::new();
        for (what, raw, expected) in cases {
            let got = read_response(&mut raw.as_bytes()).map(|r| (r.status, String::from_utf8(r.body).unwrap()));
            let expected = expected.map(|(s, b)| (s, b.to_owned())).map_err(str::to_owned);
            if got != expected {
                failures.push(format!("{what}:\n  got      {got:?}\n  expected {expected:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn oversized_head_is_refused() {
        let raw = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES));
        let err = read_response(&mut raw.as_bytes()).unwrap_err();
        assert_eq!(err, format!("response head larger than {MAX_HEAD_BYTES} bytes"));
    }

    #[test]
    fn server_errors_read_like_kubectl() {
        let server = ServerUrl { host: "h".into(), port: 1, prefix: String::new() };
        let status = |code: u16, body: &str| {
            Response { status: code, body: body.as_bytes().to_vec() }.json(&server).unwrap_err().to_string()
        };
        assert_eq!(
            status(
                404,
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","message":"resourcedefinitions.versa.dev \"x\" not found","code":404}"#
            ),
            r#"Error from server (NotFound): resourcedefinitions.versa.dev "x" not found"#
        );
        assert_eq!(status(502, "bad gateway\n"), "Error from server: bad gateway");
        assert_eq!(status(500, ""), "Error from server: status 500");
    }
}
