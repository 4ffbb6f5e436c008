//! Support for the end-to-end tests: start the real `versa serve` (the binary cargo built next
//! to the test executable) in a temporary data directory, and run the real `kubectl` against it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test support: failures should be loud")]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A count a benchmark takes from the environment (`VERSA_BENCH_*`): `default` when the variable
/// is unset or not a number.
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The `versa` binary built in the same target directory as the running test.
pub fn versa_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> → target/<profile>/versa
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = dir.join("versa");
    assert!(bin.exists(), "{} is missing: build it first (`cargo build -p versa`, or run hack/test.sh)", bin.display());
    bin
}

/// A running `versa serve`.
#[derive(Debug)]
pub struct Versa {
    pub child: Child,
    pub data_dir: PathBuf,
    pub address: String,
}

impl Versa {
    /// Starts versa on a free loopback port with its data in `data_dir`, and waits until it
    /// reports where it serves.
    pub fn start(data_dir: &Path) -> Versa {
        Self::start_with(data_dir, &[])
    }

    /// Like [`Versa::start`], with more `versa serve` flags.
    pub fn start_with(data_dir: &Path, flags: &[&str]) -> Versa {
        Self::start_with_env(data_dir, flags, &[])
    }

    /// Like [`Versa::start_with`], with environment variables set for versa (test hooks).
    pub fn start_with_env(data_dir: &Path, flags: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Versa {
        let mut child = Command::new(versa_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(flags)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let address = loop {
            let line = lines.next().expect("versa exited before serving").unwrap();
            if let Some(url) = line.strip_prefix("versa is serving on https://") {
                break url.to_string();
            }
        };
        // Keep draining stdout so versa never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Versa { child, data_dir: data_dir.to_path_buf(), address }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    /// A kubeconfig for this server with a bearer `token` as user `name`, written to
    /// `<dir>/<name>.kubeconfig`.
    pub fn token_kubeconfig(&self, dir: &Path, name: &str, token: &str) -> PathBuf {
        let admin = std::fs::read_to_string(self.kubeconfig()).unwrap();
        let cluster: String =
            admin.lines().take_while(|l| !l.starts_with("users:")).map(|l| format!("{l}\n")).collect();
        let text = format!(
            "{cluster}users:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: versa\n  context:\n    cluster: versa\n    user: {name}\ncurrent-context: versa\n"
        );
        let path = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs kubectl with the admin kubeconfig.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        kubectl(&self.kubeconfig(), args)
    }

    /// `kubectl <verb> -f <dir>/<name>.yaml` with `yaml` written to that file first (verb:
    /// `apply`, `create`, ...), as a user applies a manifest.
    pub fn kubectl_file(&self, verb: &str, dir: &Path, name: &str, yaml: &str) -> Output {
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        self.kubectl(&[verb, "-f", &path.to_string_lossy()])
    }

    /// Sends SIGTERM and waits; returns whether versa exited successfully.
    pub fn stop(mut self) -> bool {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let ok = self.child.wait().map(|s| s.success()).unwrap_or(false);
        std::mem::forget(self);
        ok
    }
}

impl Drop for Versa {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the real kubectl with `kubeconfig`. Its discovery cache lives beside the kubeconfig:
/// kubectl keys the cache by host and port, and later test servers reuse ports.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    kubectl_command(kubeconfig).args(args).output().expect("kubectl is not on PATH (set VERSA_KUBECTL)")
}

/// A kubectl command with `kubeconfig` and its own discovery cache, to add arguments to (for
/// runs that need an environment or a pipe).
pub fn kubectl_command(kubeconfig: &Path) -> Command {
    let cache = kubeconfig.parent().unwrap_or(Path::new(".")).join("kubectl-cache");
    let mut command = Command::new(std::env::var("VERSA_KUBECTL").unwrap_or_else(|_| "kubectl".into()));
    command.arg("--kubeconfig").arg(kubeconfig).arg("--cache-dir").arg(cache);
    command
}

/// stdout of a successful run, or a panic showing stderr.
pub fn ok(output: Output) -> String {
    assert!(output.status.success(), "kubectl failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// stderr of a failed run, or a panic.
pub fn fails(output: Output) -> String {
    assert!(!output.status.success(), "expected failure, got: {}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8(output.stderr).unwrap()
}

/// Waits (up to 30 s) until kubectl as `kubeconfig` with `args` succeeds (`allowed`) or fails,
/// as a grant or its withdrawal comes into force; what kubectl printed then.
pub fn until(kubeconfig: &Path, args: &[&str], allowed: bool) -> String {
    wait_for(&format!("{args:?} allowed={allowed}"), Duration::from_secs(30), || {
        let out = kubectl(kubeconfig, args);
        let text = String::from_utf8_lossy(if out.status.success() { &out.stdout } else { &out.stderr }).into_owned();
        if out.status.success() == allowed { Ok(text) } else { Err(text) }
    })
}

/// JSON equality with numbers compared by value (`1` equals `1.0`), for comparing what the
/// server answers with what a test expects.
pub fn json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// A new CA named `ca_name` and a serving certificate from it for `127.0.0.1` and `localhost`
/// (CN `server_cn`), for the test servers (the conversion webhook, the fake kube-apiserver):
/// the CA's PEM, and the server's rustls configuration offering `alpn`.
pub fn serving_tls(ca_name: &str, server_cn: &str, alpn: &[&[u8]]) -> (String, std::sync::Arc<rustls::ServerConfig>) {
    let ca = Ca::new(ca_name);
    (ca.pem(), ca.server_config(server_cn, &["127.0.0.1", "localhost"], alpn))
}

/// A client certificate (PEM, key PEM) issued by `issuer` for `cn` in `organizations` (kube's
/// user and groups).
pub fn client_certificate<S: rcgen::SigningKey>(
    issuer: &rcgen::Issuer<'_, S>,
    cn: &str,
    organizations: &[&str],
) -> (String, String) {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    for o in organizations {
        params.distinguished_name.push(DnType::OrganizationName, *o);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A certificate authority of a test (a front proxy's, a cluster's): issues client and
/// serving certificates.
pub struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        Ca { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A client certificate (PEM, key PEM) for `cn` in `organizations`.
    pub fn client(&self, cn: &str, organizations: &[&str]) -> (String, String) {
        client_certificate(&self.issuer, cn, organizations)
    }

    /// A rustls server configuration with a serving certificate for `names`, offering `alpn`.
    pub fn server_config(&self, cn: &str, names: &[&str], alpn: &[&[u8]]) -> std::sync::Arc<rustls::ServerConfig> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let (cert, key) = self.server(cn, names);
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                CertificateDer::pem_slice_iter(cert.as_bytes()).map(Result::unwrap).collect(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        std::sync::Arc::new(config)
    }

    /// A serving certificate (PEM, key PEM) for `names` (DNS names and IP addresses).
    pub fn server(&self, cn: &str, names: &[&str]) -> (String, String) {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose, SanType};
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.subject_alt_names = names
            .iter()
            .map(|n| match n.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*n).try_into().unwrap()),
            })
            .collect();
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// Retries `f` every 200 ms until it gives `Ok` (what converges through a watch or a
/// controller takes moments, not no time), for up to `limit`; then panics with `what` and the
/// last `Err`.
pub fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match f() {
            Ok(t) => return t,
            Err(e) if Instant::now() >= deadline => panic!("{what}: not within {limit:?}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// A free loopback port (bound and released; a test server takes it right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts a single-member etcd (`VERSA_ETCD_BIN`, else `etcd` on PATH) serving clients on
/// `port` with its data in `dir` (the same data on a restart); its output is discarded.
pub fn spawn_etcd(dir: &Path, port: u16, peer_port: u16) -> Child {
    let bin = std::env::var("VERSA_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
    let client = format!("http://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    Command::new(&bin)
        .arg("--data-dir")
        .arg(dir)
        .args(["--name", "versa-test", "--listen-client-urls", &client, "--advertise-client-urls", &client])
        .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", &format!("versa-test={peer}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{bin}: {e} (hack/install-deps.sh installs etcd; or set VERSA_ETCD_BIN)"))
}

/// The Go program of `hack/<module>` (its `go test -c` binary when `test`), built from the Go
/// module cache into the target directory. The tests run with `GOPROXY=off`: hack/test.sh
/// downloads the modules first (`hack/install-deps.sh --go-modules`).
pub fn go_program(module: &str, test: bool) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = versa_bin().parent().unwrap().join("go");
    std::fs::create_dir_all(&dir).unwrap();
    let name = if test { format!("{module}.test") } else { module.to_owned() };
    let out = dir.join(&name);
    // Built under a name of its own and renamed: tests building the same program at once each
    // get a whole one.
    let tmp = dir.join(format!("{name}.{}.{:?}", std::process::id(), std::thread::current().id()));
    let mut go = Command::new("go");
    if test {
        go.args(["test", "-c", "-o"]);
    } else {
        go.args(["build", "-o"]);
    }
    let built = go
        .arg(&tmp)
        .arg(".")
        .current_dir(root.join("hack").join(module))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .status()
        .expect("go is not on PATH");
    assert!(built.success(), "building hack/{module}");
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// A running program and the lines it prints on standard output.
#[derive(Debug)]
pub struct Printing {
    pub child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Printing {
    /// Starts `command` with its standard output read line by line.
    pub fn start(command: &mut Command) -> Printing {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if send.send(line.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        Printing { child, lines }
    }

    /// Waits (up to two minutes) for a line `wanted` accepts and returns it; what the program
    /// printed before it is dropped.
    pub fn wait_for(&self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(_) => {}
                Err(e) => panic!("waiting for {what}: {e}"),
            }
        }
    }

    /// Kills the program and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Printing {
    fn drop(&mut self) {
        self.kill();
    }
}
