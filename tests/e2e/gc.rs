//! Standalone versa's garbage collector (issue 37) judged by kube: the cascading-deletion
//! scenario of `gc_cascade.rs`, played with kubectl (`delete --cascade=foreground|orphan|background`,
//! a deletecollection with `propagationPolicy`), step by step against the results kube's
//! collector gave for the same steps (`data/gc_cascade.yaml`, recorded by `kube.rs`), with
//! versa restarted while a foreground deletion waits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "gc_cascade.rs"]
mod gc_cascade;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;

use versa_e2e::{Versa, kubectl_command};

/// Standalone versa in a data directory of its own, restarted on the same data.
struct Standalone {
    data: PathBuf,
    versa: Option<Versa>,
}

impl gc_cascade::Cluster for Standalone {
    fn kubectl(&mut self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let kubeconfig = self.versa.as_ref().unwrap().kubeconfig();
        let mut child = kubectl_command(&kubeconfig)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            let mut input = input;
            input.write_all(text.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn restart(&mut self) {
        assert!(self.versa.take().unwrap().stop(), "versa stops cleanly");
        self.versa = Some(Versa::start(&self.data));
    }
}

#[test]
fn cascading_deletion_gives_kubes_results_step_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let versa = Versa::start(&data);
    let mut cluster = Standalone { data, versa: Some(versa) };
    gc_cascade::run(&mut cluster, false);
}
