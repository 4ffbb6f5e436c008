//! Storage that cannot answer (issue 15): `versa serve --storage etcd` with a real etcd that is
//! killed while versa runs. Requests get 503 `ServiceUnavailable` with `Retry-After` — a client
//! retries — never a 500; `/readyz` says storage failed; once etcd is back on the same data,
//! everything answers as before and nothing acknowledged was lost.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "client.rs"]
mod client;

use std::time::Duration;

use client::Client;
use serde_json::json;
use versa_e2e::{Versa, free_port, spawn_etcd};

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
    let mut etcd_process = spawn_etcd(&etcd_dir, port, peer);
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
    let mut etcd_process = spawn_etcd(&etcd_dir, port, peer);
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
