//! Encryption at rest (`versa serve --encryption-provider-config`, issue 38) as an admin uses
//! it, with the real `kubectl`: kube's EncryptionConfiguration file; a Secret's value is nowhere
//! in the data directory while kubectl reads it back; key rotation as kube documents it (new
//! key first, `kubectl get secrets -o json | kubectl replace -f -`, old key dropped); a key
//! dropped too early fails the reads of what it still holds with kube's error and nothing else;
//! a malformed file stops versa at start with kube's messages.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::{Command, Stdio};

use versa_e2e::{Versa, fails, ok};

const KEY1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // 32 bytes
const KEY2: &str = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVoxMjM0NTY="; // 32 bytes

/// A configuration encrypting Secrets with aescbc `keys` (name, secret) in order, identity last.
fn config(keys: &[(&str, &str)]) -> String {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| format!("            - name: {name}\n              secret: {secret}\n"))
        .collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n{keys}      - identity: {{}}\n"
    )
}

fn start(data: &Path, config_file: &Path, text: &str) -> Versa {
    std::fs::write(config_file, text).unwrap();
    Versa::start_with(data, &["--encryption-provider-config", config_file.to_str().unwrap()])
}

/// Whether any file of `dir` contains `needle`.
fn on_disk(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        let path = e.unwrap().path();
        path.is_file() && std::fs::read(&path).unwrap().windows(needle.len()).any(|w| w == needle)
    })
}

#[test]
fn secrets_are_encrypted_at_rest_and_keys_rotate_as_kube_documents() {
    let dir = tempfile::tempdir().unwrap();
    let (data, config_file) = (dir.path().join("data"), dir.path().join("encryption.yaml"));
    let versa = start(&data, &config_file, &config(&[("key1", KEY1)]));
    ok(versa.kubectl(&["create", "secret", "generic", "db", "--from-literal=password=TOPSECRET-4711"]));
    ok(versa.kubectl(&["create", "namespace", "visible-team"]));
    let read = ok(versa.kubectl(&["get", "secret", "db", "-o", "jsonpath={.data.password}"]));
    assert_eq!(read, "VE9QU0VDUkVULTQ3MTE=");
    assert!(versa.stop());
    // Neither the value nor its base64 is anywhere on disk; what is not listed is stored as it
    // comes.
    for needle in [&b"TOPSECRET-4711"[..], b"VE9QU0VDUkVULTQ3MTE="] {
        assert!(!on_disk(&data, needle), "{} found in the data directory", String::from_utf8_lossy(needle));
    }
    assert!(on_disk(&data, b"k8s:enc:aescbc:v1:key1:"));
    assert!(on_disk(&data, b"visible-team"));

    // Rotation: key2 first (it writes), key1 kept (it reads); everything rewritten; key1 dropped.
    let versa = start(&data, &config_file, &config(&[("key2", KEY2), ("key1", KEY1)]));
    assert_eq!(ok(versa.kubectl(&["get", "secret", "db", "-o", "jsonpath={.data.password}"])), "VE9QU0VDUkVULTQ3MTE=");
    let all = ok(versa.kubectl(&["get", "secrets", "--all-namespaces", "-o", "json"]));
    let mut replace = versa_e2e::kubectl_command(&versa.kubeconfig())
        .args(["replace", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(replace.stdin.as_mut().unwrap(), all.as_bytes()).unwrap();
    drop(replace.stdin.take());
    assert!(replace.wait().unwrap().success());
    assert!(versa.stop());
    let versa = start(&data, &config_file, &config(&[("key2", KEY2)]));
    assert_eq!(ok(versa.kubectl(&["get", "secret", "db", "-o", "jsonpath={.data.password}"])), "VE9QU0VDUkVULTQ3MTE=");

    // A key dropped while data still uses it: those reads fail, kube's way; the rest works.
    ok(versa.kubectl(&["create", "secret", "generic", "later", "--from-literal=k=v"]));
    assert!(versa.stop());
    let versa = start(&data, &config_file, &config(&[("key1", KEY1)]));
    let err = fails(versa.kubectl(&["get", "secret", "db"]));
    assert!(
        err.contains("Error from server (InternalError): Internal error occurred: no matching prefix found"),
        "{err}"
    );
    let err = fails(versa.kubectl(&["get", "secrets"]));
    assert!(
        err.contains(r#"Internal error occurred: unable to transform key "/registry//secrets/default/db": no matching prefix found"#),
        "{err}"
    );
    ok(versa.kubectl(&["get", "namespace", "visible-team"]));
}

#[test]
fn a_malformed_configuration_stops_versa_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("encryption.yaml");
    std::fs::write(&file, config(&[("key1", "c2hvcnQ=")])).unwrap();
    let out = Command::new(versa_e2e::versa_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--encryption-provider-config")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "--encryption-provider-config {}: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]",
            file.display()
        )),
        "{said}"
    );
    assert!(!dir.path().join("data").join("store.redb").exists(), "the store was opened");
}
