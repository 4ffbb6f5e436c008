//! A real etcd for the tests and the benchmark: a single-member cluster on free loopback ports
//! with its data in a temporary directory, killed when dropped (or, should the test process be
//! killed, by a watchdog). It can be stopped and started
//! again on the same ports and data, as an etcd restart looks to clients. [`EtcdServer::start_tls`]
//! starts one that serves clients over TLS only and requires client certificates.
//!
//! The binary is `$VERSA_ETCD_BIN` or `etcd` on the `PATH`; without one the tests fail (never
//! skip) and say how to install it.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: each test binary uses a part of it, and failing loudly is its job"
)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use versa_storage::{Watch, WatchEvent};
use versa_storage_etcd::{EtcdConfig, EtcdStore, EtcdTls};

/// How long etcd may take to answer after it was started.
const READY_WAIT: Duration = Duration::from_secs(30);

/// The server side of TLS (PEM files): etcd's certificate and key, and the CA its clients'
/// certificates must be signed by (`--client-cert-auth`).
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub trusted_ca_file: PathBuf,
}

/// A running (or stopped) single-member etcd.
#[derive(Debug)]
pub struct EtcdServer {
    bin: PathBuf,
    /// With TLS: the server's files, and the client TLS that [`EtcdServer::config`] (and the
    /// readiness check) connect with.
    tls: Option<(ServerTls, EtcdTls)>,
    client_port: u16,
    peer_port: u16,
    /// Holds `data/` and `etcd.log`; removed on drop.
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// Kills etcd if this process dies without dropping the server (a killed test run).
    watchdog: Option<Child>,
}

impl EtcdServer {
    /// Starts a fresh etcd and waits until it answers.
    pub async fn start() -> EtcdServer {
        EtcdServer::start_with(None).await
    }

    /// Starts a fresh etcd that serves clients over TLS only (`https://` client URL) and
    /// requires a client certificate signed by `server.trusted_ca_file`; waits until it answers
    /// a client with the TLS settings `client`, which [`EtcdServer::config`] then uses. Peers
    /// still talk plain HTTP (a single member has none). [`EtcdServer::metric`] is unavailable.
    pub async fn start_tls(server: ServerTls, client: EtcdTls) -> EtcdServer {
        EtcdServer::start_with(Some((server, client))).await
    }

    async fn start_with(tls: Option<(ServerTls, EtcdTls)>) -> EtcdServer {
        let bin = etcd_bin();
        let dir = tempfile::Builder::new().prefix("versa-etcd-").tempdir().expect("temp dir for etcd");
        // A port found free can be taken by someone else before etcd binds it: try again with
        // new ports a few times.
        let mut server = EtcdServer { bin, tls, client_port: 0, peer_port: 0, dir, child: None, watchdog: None };
        for attempt in 1..=3 {
            (server.client_port, server.peer_port) = (free_port(), free_port());
            server.spawn();
            match server.wait_ready().await {
                Ok(()) => return server,
                Err(e) if attempt < 3 => {
                    eprintln!("etcd did not come up ({e}); retrying on other ports");
                    server.stop();
                    let _ = std::fs::remove_dir_all(server.data_dir());
                }
                Err(e) => panic!("etcd did not come up: {e}\n--- etcd.log ---\n{}", server.log_tail()),
            }
        }
        unreachable!("the last attempt panics")
    }

    /// The client URL (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// Store settings for this server (with a short progress interval, as tests wait on it, and
    /// the client TLS it was started with).
    pub fn config(&self) -> EtcdConfig {
        let mut config = EtcdConfig::new([self.endpoint()]);
        config.progress_interval = Duration::from_secs(1);
        config.tls = self.tls.as_ref().map(|(_, client)| client.clone());
        config
    }

    /// A new client of this server.
    pub async fn store(&self) -> EtcdStore {
        EtcdStore::connect(self.config()).await.expect("connect to the test etcd")
    }

    /// The value of one of etcd's Prometheus metrics (such as `etcd_debugging_mvcc_watcher_total`,
    /// the number of open watches), read from its `/metrics` page.
    pub fn metric(&self, name: &str) -> f64 {
        use std::io::{Read, Write};
        assert!(self.tls.is_none(), "metric() reads plain HTTP; this etcd serves TLS only");
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", self.client_port)).expect("connect to etcd");
        conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut page = String::new();
        conn.read_to_string(&mut page).unwrap();
        page.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("etcd reports no metric {name}"))
    }

    /// Kills etcd (SIGKILL: whatever it acknowledged must survive that) and waits for it.
    pub fn stop(&mut self) {
        for mut child in [self.child.take(), self.watchdog.take()].into_iter().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the stopped etcd again on the same ports and data directory.
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "restart of a running etcd");
        self.spawn();
        if let Err(e) = self.wait_ready().await {
            panic!("etcd did not come back: {e}\n--- etcd.log ---\n{}", self.log_tail());
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    fn spawn(&mut self) {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).expect("etcd log file");
        let mut command = Command::new(&self.bin);
        if let Some((tls, _)) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.cert_file)
                .arg("--key-file")
                .arg(&tls.key_file)
                .arg("--trusted-ca-file")
                .arg(&tls.trusted_ca_file)
                .arg("--client-cert-auth");
        }
        let child = command
            .args(["--name", "default", "--data-dir"])
            .arg(self.data_dir())
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("default={peer}"), "--initial-cluster-state", "new"])
            // A single member need not wait a second to elect itself.
            .args(["--heartbeat-interval", "20", "--election-timeout", "200"])
            .args(["--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"])
            .args(["--experimental-watch-progress-notify-interval", "1s"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.display()));
        // Statics are never dropped and a killed test process drops nothing: a watchdog
        // process kills etcd once this process is gone.
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg("while kill -0 \"$0\" 2>/dev/null; do sleep 1; done; kill -9 \"$1\" 2>/dev/null")
            .arg(std::process::id().to_string())
            .arg(child.id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the etcd watchdog");
        self.child = Some(child);
        self.watchdog = Some(watchdog);
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_WAIT;
        let mut config = self.config();
        config.connect_timeout = Duration::from_secs(1);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("etcd exited with {status}"));
            }
            match EtcdStore::connect(config.clone()).await {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() > deadline => return Err(format!("not ready after {READY_WAIT:?}: {e}")),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<_> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The etcd binary: `$VERSA_ETCD_BIN`, else `etcd` on the `PATH`.
fn etcd_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("VERSA_ETCD_BIN") {
        let bin = PathBuf::from(bin);
        assert!(bin.is_file(), "VERSA_ETCD_BIN={} is not a file", bin.display());
        return bin;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join("etcd")).find(|p| is_executable(p)).unwrap_or_else(|| {
        panic!(
            "etcd not found: the etcd backend's tests run a real etcd. Run `bash hack/install-deps.sh` \
             (or set VERSA_ETCD_BIN to an etcd binary)"
        )
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

/// The etcd a conformance case runs on: its own for the cases that need one (they compact),
/// else the one the running cases share — held by a `Weak`, so that it stops when the last case
/// using it ends (statics are never dropped, and an etcd must not outlive the test process).
pub async fn for_case(case: &'static str) -> Arc<EtcdServer> {
    static SHARED: tokio::sync::Mutex<Weak<EtcdServer>> = tokio::sync::Mutex::const_new(Weak::new());
    if versa_storage::conformance::needs_own_store(case) {
        return Arc::new(EtcdServer::start().await);
    }
    let mut shared = SHARED.lock().await;
    if let Some(server) = shared.upgrade() {
        return server;
    }
    let server = Arc::new(EtcdServer::start().await);
    *shared = Arc::downgrade(&server);
    server
}

/// The watch's next event, past progress notifications; `wait` is a hang guard, not a timing
/// claim.
pub async fn next_event(watch: &mut Watch, wait: Duration) -> WatchEvent {
    loop {
        match tokio::time::timeout(wait, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
            Ok(Some(Ok(event))) => return event,
            other => panic!("expected a watch event, got {other:?}"),
        }
    }
}
