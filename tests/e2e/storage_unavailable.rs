//! Storage that cannot answer (issue 15): `versa serve --storage etcd` with a real etcd that is
//! killed while versa runs. Requests get 503 `ServiceUnavailable` with `Retry-After` — a client
//! retries — never a 500; `/readyz` says storage failed; once etcd is back on the same data,
//! everything answers as before and nothing acknowledged was lost.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "client.rs"]
mod client;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use client::Client;
use serde_json::json;
use versa_e2e::Versa;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A single-member etcd on `port` with its data in `dir` (the same data on a restart).
fn etcd(dir: &Path, port: u16, peer: u16) -> Child {
    let bin = std::env::var("VERSA_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
    let client = format!("http://127.0.0.1:{port}");
    let peer = format!("http://127.0.0.1:{peer}");
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

/// Calls `f` every 100 ms until it returns `Some`, for at most a minute (a bound so that a
/// broken run fails, not a timing claim).
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(what: &str, mut f: impl FnMut() -> F) -> T {
    for _ in 0..600 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not reached within a minute");
}

#[tokio::test]
async fn etcd_down_is_503_with_retry_after_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (port, peer) = (free_port(), free_port());
    let etcd_dir = dir.path().join("etcd");
    let mut etcd_process = etcd(&etcd_dir, port, peer);
    let endpoint = format!("http://127.0.0.1:{port}");
    eventually("etcd answering", || async {
        let health = format!("127.0.0.1:{port}");
        std::net::TcpStream::connect(&health).ok().map(|_| ())
    })
    .await;
    let versa = Versa::start_with(&dir.path().join("versa"), &["--storage", "etcd", "--etcd-endpoints", &endpoint]);
    let c = Client::admin(&versa.data_dir, &versa.address);
    eventually("versa ready", || {
        let c = c.clone();
        async move { (c.get("/readyz").await.status == 200).then_some(()) }
    })
    .await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kept"}});
    let r = c.post("/api/v1/namespaces", &ns).await;
    assert_eq!(r.status, 201, "{}", r.text());

    etcd_process.kill().unwrap();
    etcd_process.wait().unwrap();
    let r = eventually("a 503 while etcd is down", || {
        let c = c.clone();
        async move {
            let r = c.get("/api/v1/namespaces/kept").await;
            assert_ne!(r.status, 500, "storage unavailable must not be a 500: {}", r.text());
            (r.status == 503).then_some(r)
        }
    })
    .await;
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
    let body = r.json();
    assert_eq!((&body["reason"], &body["code"]), (&json!("ServiceUnavailable"), &json!(503)));
    let r = c
        .post("/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lost"}}))
        .await;
    assert_eq!(r.status, 503, "a write while etcd is down: {}", r.text());
    let ready = c.get("/readyz").await;
    assert_ne!(ready.status, 200);
    assert!(ready.text().contains("[-]storage failed"), "{}", ready.text());

    // Back on the same data: served again, the acknowledged write is there, the refused one not.
    let mut etcd_process = etcd(&etcd_dir, port, peer);
    let kept = eventually("served again once etcd is back", || {
        let c = c.clone();
        async move {
            let r = c.get("/api/v1/namespaces/kept").await;
            (r.status == 200).then(|| r.json())
        }
    })
    .await;
    assert_eq!(kept["metadata"]["name"], "kept");
    assert_eq!(c.get("/api/v1/namespaces/lost").await.status, 404);
    eventually("ready again", || {
        let c = c.clone();
        async move { (c.get("/readyz").await.status == 200).then_some(()) }
    })
    .await;
    etcd_process.kill().unwrap();
    let _ = etcd_process.wait();
}
