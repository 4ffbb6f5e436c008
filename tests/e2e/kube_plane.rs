//! The real control plane for the tests behind kube-apiserver (`kube.rs`): etcd, kube-apiserver
//! and kube-controller-manager built by `hack/kube.sh` from the `k8s.io/kubernetes` Go module at
//! its pinned release, and versa installed into them with its Helm chart.
//!
//! How versa is reached. kube-apiserver refuses loopback addresses in EndpointSlices, so versa
//! runs where a pod would: in a network namespace of its own (`versa-e2e-<pid>`), joined to the
//! host by a veth pair — the host side `10.250.N.1`, versa's side `10.250.N.2`, a /24 used by
//! nothing else on the machine. kube-apiserver runs with `--enable-aggregator-routing=true`, so
//! the aggregator dials the endpoint of versa's Service, as a cluster whose control plane sits
//! outside the service network does; versa reaches kube-apiserver at `10.250.N.1`.
//!
//! What stands in for the missing node. The chart is installed unchanged with the real helm; the
//! real StatefulSet controller creates the pod `versa-0`. Nothing runs pods here, so the harness
//! does the kubelet's part for that one pod, through the API as a kubelet would: it registers a
//! Node, binds the pod to it, starts `versa serve` with the container's own arguments (the data
//! directory moved to a temporary one) and a kubeconfig holding a token bound to the pod (the
//! TokenRequest API, as the projected service-account volume gets it), and, once versa's
//! `/readyz` passes, writes the pod's status (Running, Ready, the pod IP). From there everything
//! is kube's own: the EndpointSlice controller publishes the endpoint, the aggregator's
//! availability controller marks the APIServices `Available`, and versa talks to kube-apiserver
//! with the chart's RBAC and nothing more.
//!
//! Every process is started through `setpriv --pdeathsig KILL` from the thread that builds the
//! plane (the test binary's main thread), so that nothing outlives a test binary that is killed;
//! [`Plane::drop`] stops them and removes the network namespace. Needs root (network namespaces).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test harness")]

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rcgen::KeyPair;
use serde_json::{Value, json};
pub use versa_e2e::{Ca, wait_for};
use versa_e2e::{free_port, versa_bin};

/// The release and namespace the chart is installed as.
pub const RELEASE: &str = "versa";
pub const NAMESPACE: &str = "versa";
/// The node the harness registers for versa's pod.
const NODE: &str = "versa-e2e-node";
/// kube-apiserver's service network: only allocated, never routed (the aggregator dials endpoints).
const SERVICE_CIDR: &str = "10.96.0.0/24";

/// A network namespace joined to the host by a veth pair.
struct Netns {
    name: String,
    host_ip: String,
    inner_ip: String,
}

impl Netns {
    fn create() -> Netns {
        remove_stale_namespaces();
        let pid = std::process::id();
        let name = format!("versa-e2e-{pid}");
        let subnet = format!("10.250.{}", pid % 250);
        let (host_if, inner_if) = (format!("vk{pid}h"), format!("vk{pid}n"));
        let (host_ip, inner_ip) = (format!("{subnet}.1"), format!("{subnet}.2"));
        let ns = |args: &[&str]| {
            let mut all = vec!["netns", "exec", name.as_str(), "ip"];
            all.extend_from_slice(args);
            all.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let steps: Vec<Vec<String>> = vec![
            vec!["netns".into(), "add".into(), name.clone()],
            ["link", "add", &host_if, "type", "veth", "peer", "name", &inner_if].map(String::from).to_vec(),
            ["link", "set", &inner_if, "netns", &name].map(String::from).to_vec(),
            ["addr", "add", &format!("{host_ip}/24"), "dev", &host_if].map(String::from).to_vec(),
            ["link", "set", &host_if, "up"].map(String::from).to_vec(),
            ns(&["addr", "add", &format!("{inner_ip}/24"), "dev", &inner_if]),
            ns(&["link", "set", &inner_if, "up"]),
            ns(&["link", "set", "lo", "up"]),
        ];
        let netns = Netns { name, host_ip, inner_ip };
        for step in steps {
            let out = Command::new("ip")
                .args(&step)
                .output()
                .expect("`ip` (iproute2) is needed: hack/install-deps.sh installs it");
            assert!(
                out.status.success(),
                "ip {}: {} (the tests behind kube-apiserver need root for a network namespace)",
                step.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        netns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// Removes the namespaces of earlier runs whose test binary is gone (killed before its drop).
fn remove_stale_namespaces() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(pid) = name.strip_prefix("versa-e2e-")
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = Command::new("ip").args(["netns", "del", name]).output();
        }
    }
}

/// A child process with its output in a log file.
struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `program` so that it dies with this thread (`setpriv --pdeathsig KILL`), its
    /// stdout and stderr into `<dir>/<name>.log`.
    fn spawn(name: &'static str, dir: &Path, program: &Path, args: &[String], netns: Option<&str>) -> Process {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let mut command = Command::new("setpriv");
        command.args(["--pdeathsig", "KILL", "--"]);
        if let Some(ns) = netns {
            command.args(["ip", "netns", "exec", ns]);
        }
        command.arg(program).args(args).stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file);
        let child = command.spawn().unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        Process { name, child, log }
    }

    /// The last lines of its log, for a failure message.
    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    fn stop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where the kube binaries are: `VERSA_KUBE_BIN_DIR`, else what `hack/kube.sh` builds (or has
/// built: it returns at once when the pinned build is cached).
pub fn kube_bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("VERSA_KUBE_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/kube.sh");
    let out = Command::new("bash").arg(&script).stderr(Stdio::inherit()).output().unwrap();
    assert!(out.status.success(), "{} failed: the tests behind kube-apiserver need its build", script.display());
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// kubectl of the pinned release (built beside kube-apiserver) with `kubeconfig` and a discovery
/// cache of its own beside it.
pub fn kubectl_command(bin: &Path, kubeconfig: &Path) -> Command {
    let cache = kubeconfig.parent().unwrap_or(Path::new(".")).join("kubectl-cache");
    let mut command = Command::new(bin.join("kubectl"));
    command.arg("--kubeconfig").arg(kubeconfig).arg("--cache-dir").arg(cache);
    command
}

/// The helm binary (`VERSA_HELM_BIN`, as hack/test.sh sets it, else `helm` on PATH).
pub fn helm_bin() -> String {
    std::env::var("VERSA_HELM_BIN").unwrap_or_else(|_| "helm".into())
}

/// The running control plane, with versa installed by its chart.
pub struct Plane {
    pub dir: tempfile::TempDir,
    /// Where kube-apiserver, kube-controller-manager and kubectl are.
    pub bin: PathBuf,
    /// kube-apiserver's secure port on every address of the host.
    pub port: u16,
    /// A kubeconfig for `system:masters` (the cluster admin).
    pub admin: PathBuf,
    /// The admin's client certificate and key (PEM), for raw HTTPS requests.
    pub admin_identity: (String, String),
    pub cluster_ca: Ca,
    pub front_proxy_ca: Ca,
    /// kube-apiserver's audit log.
    pub kube_audit: PathBuf,
    /// versa's audit log.
    pub versa_audit: PathBuf,
    versa: Mutex<Option<Process>>,
    /// How versa is started (program arguments inside the network namespace).
    versa_args: Vec<String>,
    /// kube-controller-manager, kube-apiserver, etcd: stopped in that order.
    processes: Mutex<Vec<Process>>,
    netns: Netns,
}

impl Plane {
    /// Stops every process and removes the network namespace and the temporary directory
    /// (the test binary keeps the plane in a cell that is never dropped).
    pub fn shutdown(&self) {
        if let Some(mut versa) = self.versa.lock().unwrap().take() {
            versa.stop();
        }
        for mut p in self.processes.lock().unwrap().drain(..) {
            p.stop();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.netns.name]).output();
        if std::env::var_os("VERSA_KUBE_KEEP").is_some() {
            eprintln!(
                "VERSA_KUBE_KEEP: the plane's files (logs, audit logs, certificates) are in {}",
                self.dir.path().display()
            );
        } else {
            let _ = std::fs::remove_dir_all(self.dir.path());
        }
    }
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A kubeconfig for `server` trusting `ca` with `user` (client certificate or token).
pub fn kubeconfig(path: &Path, server: &str, ca: &str, user: Value) -> PathBuf {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kube", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "kube", "context": {"cluster": "kube", "user": "user"}}],
        "current-context": "kube",
    });
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, config.to_string()).unwrap();
    path.to_owned()
}

/// The `user` part of a kubeconfig presenting a client certificate.
pub fn cert_user((cert, key): &(String, String)) -> Value {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({"client-certificate-data": b64(cert), "client-key-data": b64(key)})
}

/// stdout of a run, or its stderr as the error.
pub fn output(out: Output) -> Result<String, String> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

impl Plane {
    /// Starts etcd, kube-apiserver and kube-controller-manager, then installs versa with its
    /// chart and waits until kube's availability controller marks `v1.versa.dev` Available.
    pub fn start() -> Plane {
        Plane::start_with(&[])
    }

    /// [`Plane::start`] with more kube-apiserver flags (e.g. `--runtime-config` serving the
    /// API versions of an older release).
    pub fn start_with(apiserver_flags: &[&str]) -> Plane {
        let bin = kube_bin_dir();
        let dir = tempfile::Builder::new().prefix("versa-kube-").tempdir().unwrap();
        let path = |f: &str| dir.path().join(f);
        let netns = Netns::create();

        let (etcd_port, peer_port) = (free_port(), free_port());
        let (client_url, peer_url) = (format!("http://127.0.0.1:{etcd_port}"), format!("http://127.0.0.1:{peer_port}"));
        let etcd_flags = [
            format!("--data-dir={}", path("etcd").display()),
            "--name=versa-e2e".into(),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=versa-e2e={peer_url}"),
        ];
        let etcd_bin = std::env::var("VERSA_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
        let etcd = Process::spawn("etcd", dir.path(), Path::new(&etcd_bin), &etcd_flags, None);
        wait_for("etcd", Duration::from_secs(30), || {
            TcpStream::connect(("127.0.0.1", etcd_port)).map(drop).map_err(|e| e.to_string())
        });

        let cluster_ca = Ca::new("versa-e2e-cluster-ca");
        let front_proxy_ca = Ca::new("versa-e2e-front-proxy-ca");
        let ca_file = write(&path("ca.crt"), &cluster_ca.pem());
        let fp_ca_file = write(&path("front-proxy-ca.crt"), &front_proxy_ca.pem());
        let (serving_cert, serving_key) = cluster_ca.server(
            "kube-apiserver",
            &[
                "127.0.0.1",
                &netns.host_ip,
                "10.96.0.1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
        );
        let (proxy_cert, proxy_key) = front_proxy_ca.client("front-proxy-client", &[]);
        let sa = KeyPair::generate().unwrap();
        let sa_key = write(&path("sa.key"), &sa.serialize_pem());
        let sa_pub = write(&path("sa.pub"), &sa.public_key_pem());
        let audit_policy = write(
            &path("audit-policy.yaml"),
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
        );
        let kube_audit = path("kube-audit.log");
        let port = free_port();
        let server = format!("https://127.0.0.1:{port}");
        let flags = [
            format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            format!("--secure-port={port}"),
            "--bind-address=0.0.0.0".into(),
            format!("--advertise-address={}", netns.host_ip),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            format!("--cert-dir={}", path("kube-certs").display()),
            format!("--tls-cert-file={}", write(&path("apiserver.crt"), &serving_cert)),
            format!("--tls-private-key-file={}", write(&path("apiserver.key"), &serving_key)),
            format!("--client-ca-file={ca_file}"),
            format!("--requestheader-client-ca-file={fp_ca_file}"),
            "--requestheader-allowed-names=front-proxy-client".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            "--requestheader-uid-headers=X-Remote-Uid".into(),
            format!("--proxy-client-cert-file={}", write(&path("front-proxy-client.crt"), &proxy_cert)),
            format!("--proxy-client-key-file={}", write(&path("front-proxy-client.key"), &proxy_key)),
            "--enable-aggregator-routing=true".into(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={sa_pub}"),
            format!("--service-account-signing-key-file={sa_key}"),
            "--authorization-mode=RBAC".into(),
            format!("--audit-policy-file={audit_policy}"),
            format!("--audit-log-path={}", kube_audit.display()),
            "--profiling=false".into(),
        ];
        let flags: Vec<String> = flags.into_iter().chain(apiserver_flags.iter().map(|f| (*f).to_owned())).collect();
        let apiserver = Process::spawn("kube-apiserver", dir.path(), &bin.join("kube-apiserver"), &flags, None);
        let admin_identity = cluster_ca.client("kube-admin", &["system:masters"]);
        let admin_user = cert_user(&admin_identity);
        let admin = kubeconfig(&path("admin/kubeconfig"), &server, &cluster_ca.pem(), admin_user);
        let mut plane_apiserver = apiserver;
        wait_for("kube-apiserver /readyz", Duration::from_secs(180), || {
            if let Some(status) = plane_apiserver.exited() {
                panic!("kube-apiserver exited ({status}):\n{}", plane_apiserver.tail());
            }
            output(kubectl_command(&bin, &admin).args(["get", "--raw", "/readyz"]).output().unwrap())
        });

        let kcm_user = cert_user(&cluster_ca.client("system:kube-controller-manager", &["system:masters"]));
        let kcm_config = kubeconfig(&path("kcm/kubeconfig"), &server, &cluster_ca.pem(), kcm_user);
        let kcm_flags = [
            format!("--kubeconfig={}", kcm_config.display()),
            "--controllers=garbage-collector-controller,namespace-controller,endpointslice-controller,statefulset-controller,serviceaccount-controller,clusterrole-aggregation-controller".into(),
            "--leader-elect=false".into(),
            "--secure-port=0".into(),
            "--use-service-account-credentials=false".into(),
            // The collector and the namespace controller pick up versa's resources from
            // discovery; kube's default resync of discovery is 30 s.
            "--concurrent-gc-syncs=5".into(),
        ];
        let kcm = Process::spawn(
            "kube-controller-manager",
            dir.path(),
            &bin.join("kube-controller-manager"),
            &kcm_flags,
            None,
        );

        let mut plane = Plane {
            bin,
            port,
            admin,
            admin_identity,
            cluster_ca,
            front_proxy_ca,
            kube_audit,
            versa_audit: path("versa-audit.log"),
            versa: Mutex::new(None),
            versa_args: Vec::new(),
            processes: Mutex::new(vec![kcm, plane_apiserver, etcd]),
            netns,
            dir,
        };
        plane.install_versa();
        plane
    }

    /// An HTTP client of kube-apiserver as its admin (`system:masters`), trusting the cluster's
    /// CA.
    pub fn admin_client(&self) -> crate::client::Client {
        let (cert, key) = &self.admin_identity;
        crate::client::Client::from_pem(&self.cluster_ca.pem(), Some((cert, key)), &format!("127.0.0.1:{}", self.port))
    }

    /// kube-apiserver's process id.
    pub fn apiserver_pid(&self) -> u32 {
        self.processes.lock().unwrap().iter().find(|p| p.name == "kube-apiserver").map(|p| p.child.id()).unwrap()
    }

    /// Where versa's pod listens, from the host: `<pod IP>:8443`.
    pub fn versa_address(&self) -> String {
        format!("{}:8443", self.netns.inner_ip)
    }

    /// A file in the plane's directory with `text` in it.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// versa's process id (it runs as the pod's container).
    pub fn versa_pid(&self) -> u32 {
        self.versa.lock().unwrap().as_ref().map(|p| p.child.id()).unwrap()
    }

    /// The host's address on the network namespace's link: where a server of the test is
    /// reachable from both kube-apiserver and versa (a webhook, say).
    pub fn host_ip(&self) -> &str {
        &self.netns.host_ip
    }

    /// kube-apiserver's URL on loopback.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// kubectl as the cluster admin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_as(&self.admin, args)
    }

    /// kubectl with `kubeconfig`.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        kubectl_command(&self.bin, kubeconfig).args(args).output().unwrap()
    }

    /// kubectl as the admin, stdout or a panic with stderr.
    pub fn ok(&self, args: &[&str]) -> String {
        output(self.kubectl(args)).unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
    }

    /// `kubectl get -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get", "-o", "json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    /// `kubectl apply -f -` of `doc` (JSON or YAML text) as the admin, with more flags.
    pub fn apply(&self, doc: &str, flags: &[&str]) -> Result<String, String> {
        self.stdin(&[&["apply", "-f", "-"], flags].concat(), doc)
    }

    /// kubectl as the admin with `input` on stdin.
    pub fn stdin(&self, args: &[&str], input: &str) -> Result<String, String> {
        use std::io::Write as _;
        let mut child = kubectl_command(&self.bin, &self.admin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        output(child.wait_with_output().unwrap())
    }

    /// A kubeconfig for a user with a certificate from the cluster CA.
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> PathBuf {
        let path = self.dir.path().join(format!("users/{user}/kubeconfig"));
        kubeconfig(&path, &self.server(), &self.cluster_ca.pem(), cert_user(&self.cluster_ca.client(user, groups)))
    }

    /// helm with the admin kubeconfig.
    pub fn helm(&self, args: &[&str]) -> Output {
        Command::new(helm_bin())
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.admin)
            .env("HELM_CACHE_HOME", self.dir.path().join("helm/cache"))
            .env("HELM_CONFIG_HOME", self.dir.path().join("helm/config"))
            .env("HELM_DATA_HOME", self.dir.path().join("helm/data"))
            .output()
            .expect("helm: hack/install-deps.sh installs it (VERSA_HELM_BIN)")
    }

    /// Installs the chart with helm, then plays the kubelet for the pod the StatefulSet
    /// controller creates (see the module doc).
    fn install_versa(&mut self) {
        let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/helm/versa");
        self.ok(&["create", "namespace", NAMESPACE]);
        let out = self.helm(&[
            "install",
            RELEASE,
            chart.to_str().unwrap(),
            "--namespace",
            NAMESPACE,
            "--set",
            "image.repository=versa-e2e",
            // The backup CronJob's objects (kube_plane plays its pod: tests/e2e/kube.rs).
            "--set",
            "backup.enabled=true",
        ]);
        output(out).unwrap_or_else(|e| panic!("helm install: {e}"));

        // The container's arguments, as the StatefulSet says, with the data directory moved.
        let sts = self.get_json(&["-n", NAMESPACE, "statefulset", RELEASE]);
        let container = &sts["spec"]["template"]["spec"]["containers"][0];
        let data = self.dir.path().join("versa-data");
        let mut args: Vec<String> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace("/var/lib/versa", data.to_str().unwrap()))
            .collect();
        // The same audit policy as kube-apiserver's, so that both trails record the same requests.
        let audit_policy = self.dir.path().join("audit-policy.yaml");
        args.push(format!("--audit-policy-file={}", audit_policy.display()));
        args.push(format!("--audit-log-path={}", self.versa_audit.display()));

        // The pod, created by the StatefulSet controller: bind it to a node of ours.
        wait_for("pod versa-0 from the StatefulSet", Duration::from_secs(60), || {
            output(self.kubectl(&["-n", NAMESPACE, "get", "pod", &format!("{RELEASE}-0")]))
        });
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}});
        self.apply(&node.to_string(), &[]).unwrap();
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": format!("{RELEASE}-0")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
        });
        self.stdin(
            &["create", "--raw", &format!("/api/v1/namespaces/{NAMESPACE}/pods/{RELEASE}-0/binding"), "-f", "-"],
            &binding.to_string(),
        )
        .unwrap();

        self.versa_args = args;
        self.start_versa();
    }

    /// Starts versa (again) as the pod's container, and marks the pod ready once versa is.
    pub fn start_versa(&self) {
        let pod = format!("{RELEASE}-0");
        // A token bound to the pod, as the projected service-account volume holds.
        let token = self
            .ok(&[
                "-n",
                NAMESPACE,
                "create",
                "token",
                RELEASE,
                "--duration=24h",
                "--bound-object-kind=Pod",
                &format!("--bound-object-name={pod}"),
            ])
            .trim()
            .to_owned();
        let server = format!("https://{}:{}", self.netns.host_ip, self.port);
        let config = kubeconfig(
            &self.dir.path().join("versa/kubeconfig"),
            &server,
            &self.cluster_ca.pem(),
            json!({"token": token}),
        );
        let mut args = self.versa_args.clone();
        args.push(format!("--kubeconfig={}", config.display()));
        let mut versa = Process::spawn("versa", self.dir.path(), &versa_bin(), &args, Some(&self.netns.name));
        // Ready as the chart's readiness probe sees it: /readyz on the pod IP.
        let ca = wait_for("versa's serving CA Secret", Duration::from_secs(60), || {
            if let Some(status) = versa.exited() {
                panic!("versa exited ({status}):\n{}", versa.tail());
            }
            let out = self.kubectl(&[
                "-n",
                NAMESPACE,
                "get",
                "secret",
                &format!("{RELEASE}-serving-ca"),
                "-o",
                "jsonpath={.data.ca\\.crt}",
            ]);
            let b64 = output(out)?;
            if b64.is_empty() {
                return Err("no ca.crt yet".into());
            }
            use base64::Engine as _;
            Ok(String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64.trim()).unwrap()).unwrap())
        });
        let address = format!("{}:8443", self.netns.inner_ip);
        wait_for("versa /readyz", Duration::from_secs(60), || {
            if let Some(status) = versa.exited() {
                panic!("versa exited ({status}):\n{}", versa.tail());
            }
            readyz(&ca, &address).map_err(|e| format!("{e}\n--- versa's log ---\n{}", versa.tail()))
        });
        *self.versa.lock().unwrap() = Some(versa);
        self.set_pod_ready(true);
        // Served through kube: the APIService Available and the definitions in kube's discovery.
        self.wait_available("v1.versa.dev");
        wait_for("versa.dev in kube's discovery", Duration::from_secs(60), || {
            let out = output(self.kubectl(&["api-resources", "--api-group", "versa.dev", "-o", "name"]))?;
            if out.lines().any(|l| l == "resourcedefinitions.versa.dev") { Ok(()) } else { Err(out) }
        });
    }

    /// Stops versa (SIGTERM, as kubelet stops a container) and marks the pod not ready.
    pub fn stop_versa(&self) {
        if let Some(mut versa) = self.versa.lock().unwrap().take() {
            versa.stop();
        }
        self.set_pod_ready(false);
    }

    /// Writes the pod's status as the kubelet would for a running (ready or not) container.
    fn set_pod_ready(&self, ready: bool) {
        let now = "2026-01-01T00:00:00Z";
        let status = if ready { "True" } else { "False" };
        let patch = json!({"status": {
            "phase": "Running",
            "hostIP": self.netns.host_ip,
            "hostIPs": [{"ip": self.netns.host_ip}],
            "podIP": self.netns.inner_ip,
            "podIPs": [{"ip": self.netns.inner_ip}],
            "startTime": now,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
                {"type": "Ready", "status": status, "lastTransitionTime": now},
            ],
            "containerStatuses": [{
                "name": "versa", "image": "versa-e2e", "imageID": "", "ready": ready, "restartCount": 0,
                "started": ready, "state": {"running": {"startedAt": now}},
            }],
        }});
        self.ok(&[
            "-n",
            NAMESPACE,
            "patch",
            "pod",
            &format!("{RELEASE}-0"),
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    }

    /// The versa log so far (for failure messages).
    pub fn versa_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("versa.log")).unwrap_or_default()
    }

    /// Waits until the APIService `name` is `Available=True` by kube's availability controller.
    pub fn wait_available(&self, name: &str) -> Value {
        wait_for(&format!("APIService {name} Available"), Duration::from_secs(90), || {
            let service =
                serde_json::from_str::<Value>(&output(self.kubectl(&["get", "apiservice", name, "-o", "json"]))?)
                    .map_err(|e| e.to_string())?;
            let available = service["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
                .cloned()
                .unwrap_or(Value::Null);
            if available["status"] == "True" { Ok(service) } else { Err(available.to_string()) }
        })
    }
}

/// One GET of `/readyz` at `address`, trusting `ca`: Ok when it answers 200.
fn readyz(ca: &str, address: &str) -> Result<(), String> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, ServerName};
    use std::io::{Read as _, Write as _};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The name kube-apiserver checks: the Service's DNS name.
    let name = ServerName::try_from(format!("{RELEASE}.{NAMESPACE}.svc")).unwrap();
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut tcp = TcpStream::connect(address).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut tcp);
    tls.write_all(b"GET /readyz HTTP/1.1\r\nHost: versa\r\nConnection: close\r\n\r\n").map_err(|e| e.to_string())?;
    let mut answer = String::new();
    let _ = tls.read_to_string(&mut answer);
    if answer.starts_with("HTTP/1.1 200") { Ok(()) } else { Err(answer) }
}

/// Reads a JSON-lines log file.
pub fn json_lines(path: &Path) -> Vec<Value> {
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    BufReader::new(file).lines().map_while(Result::ok).filter_map(|l| serde_json::from_str(&l).ok()).collect()
}
