//! Support for the end-to-end tests: start the real `versa serve` (the binary cargo built next
//! to the test executable) in a temporary data directory, and run the real `kubectl` against it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test support: failures should be loud")]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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
        let mut child = Command::new(versa_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(flags)
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

    /// Runs kubectl with the admin kubeconfig.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        kubectl(&self.kubeconfig(), args)
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
