//! Cluster mode before kube-apiserver is there (issue 21): versa starts anyway and waits for it
//! — `/livez` passes, `/readyz` fails saying why, other requests get 503 — retrying with backoff;
//! once the (fake, `fake_kube.rs`) kube-apiserver comes up, versa keeps its CA in the Secret,
//! serves a certificate from it, becomes ready and registers its APIServices. Its identity comes
//! from an `exec` credential plugin (a script printing the service-account token as an
//! ExecCredential), as with cloud kubeconfigs. Probes before the real certificate exists go
//! through the real `kubectl` with `insecure-skip-tls-verify`, as the kubelet's probes do not
//! verify either.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "client.rs"]
mod client;
#[path = "fake_kube.rs"]
mod fake_kube;

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use client::Client;
use fake_kube::{FakeKube, SERVICE_ACCOUNT_TOKEN};
use versa_e2e::{Versa, kubectl};

const NAMESPACE: &str = "versa-system";

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `kubectl get --raw PATH` against versa without verifying its certificate: (success, output).
fn probe(kubeconfig: &Path, path: &str) -> (bool, String) {
    let out = kubectl(kubeconfig, &["get", "--raw", path]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test]
async fn waits_for_kube_apiserver() {
    let dir = tempfile::tempdir().unwrap();
    // Where kube-apiserver will be, and its CA: known before it runs.
    let kube_addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (kube_ca, kube_tls) = fake_kube::tls();

    let plugin = dir.path().join("service-account-token");
    let calls = dir.path().join("plugin-calls");
    script(
        &plugin,
        &format!(
            "#!/bin/sh\necho run >> '{}'\nprintf '%s' \
             '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{SERVICE_ACCOUNT_TOKEN}\"}}}}'\n",
            calls.display()
        ),
    );
    let kubeconfig = dir.path().join("kube.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: versa\ncontexts:\n- name: versa\n  context: {{cluster: kube, user: versa}}\n\
             clusters:\n- name: kube\n  cluster:\n    server: https://{kube_addr}\n    certificate-authority-data: {}\n\
             users:\n- name: versa\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      \
             command: {}\n      interactiveMode: Never\n",
            base64::engine::general_purpose::STANDARD.encode(&kube_ca),
            plugin.display()
        ),
    )
    .unwrap();

    let versa = Versa::start_with(
        &dir.path().join("data"),
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--service-namespace",
            NAMESPACE,
            "--cluster-resync-period",
            "1",
        ],
    );
    let prober = dir.path().join("probe.kubeconfig");
    std::fs::write(
        &prober,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: versa\ncontexts:\n- name: versa\n  context: {{cluster: versa, user: probe}}\n\
             clusters:\n- name: versa\n  cluster: {{server: 'https://{}', insecure-skip-tls-verify: true}}\n\
             users:\n- name: probe\n  user: {{token: probe}}\n",
            versa.address
        ),
    )
    .unwrap();

    // Serving, alive, not ready, and saying why.
    assert_eq!(probe(&prober, "/livez"), (true, "ok".to_string()));
    let (ready, why) = probe(&prober, "/readyz");
    assert!(!ready, "{why}");
    let reason = format!("[-]kube-apiserver failed: waiting for kube-apiserver at https://{kube_addr}: ");
    assert!(why.contains(&reason), "{why}");
    let (served, answer) = probe(&prober, "/apis");
    assert!(!served, "{answer}");
    assert!(answer.contains("ServiceUnavailable") && answer.contains("versa is not ready"), "{answer}");

    // kube-apiserver comes up; versa gets there by itself.
    let fake = FakeKube::start_at(kube_addr, (kube_ca, kube_tls));
    let mut last = String::new();
    for _ in 0..600 {
        let (ready, text) = probe(&prober, "/readyz");
        if ready {
            last.clear();
            break;
        }
        last = text;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(last.is_empty(), "not ready within 60 s: {last}");

    // The serving certificate is now from the CA in the Secret, and requests are handled.
    let secret = fake.secrets(NAMESPACE).remove("versa-serving-ca").expect("versa keeps its CA in a Secret");
    let ca_b64 = secret["data"]["ca.crt"].as_str().unwrap();
    let serving_ca = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(ca_b64).unwrap()).unwrap();
    let anonymous = Client::from_pem(&serving_ca, None, &versa.address);
    assert_eq!(anonymous.request("GET", "/readyz", &[], String::new()).await.status, 200);
    assert_eq!(anonymous.request("GET", "/apis", &[], String::new()).await.status, 401, "authentication runs now");
    let mut registered = false;
    for _ in 0..300 {
        if let Some(service) = fake.api_services().get("v1.versa.dev") {
            assert_eq!(service["spec"]["caBundle"], ca_b64);
            registered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(registered, "v1.versa.dev registered: {:?}", fake.api_services().keys().collect::<Vec<_>>());
    assert!(std::fs::read_to_string(&calls).unwrap().contains("run"), "the credential plugin ran");
    assert!(versa.stop(), "versa exits 0 on SIGTERM");
}
