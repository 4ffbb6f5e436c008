//! The providers' formats against Kubernetes' own transformers (`hack/encryption-oracle`:
//! k8s.io/apiserver v0.36.3's `encrypt/aes` and `encrypt/secretbox` behind its prefix
//! transformer):
//!
//! - [`versa_opens_what_kube_sealed`] (always): values kube sealed, recorded in
//!   `tests/data/kube_sealed.json`, open in versa to the same plaintext — and not under another
//!   storage key where kube binds the key (aesgcm);
//! - [`kube_and_versa_read_each_other`] (with `VERSA_ENCRYPTION_ORACLE=1`; needs Go and the
//!   module cache or proxy): builds the oracle, has versa seal and kube open, and kube seal and
//!   versa open, for every provider and key size; `VERSA_ENCRYPTION_ORACLE_RECORD=1` rewrites the
//!   recorded file.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde_json::{Value, json};
use versa_storage_encryption::config::Provider;
use versa_storage_encryption::transform::{keyed, open, seal};

const RECORDED: &str = "tests/data/kube_sealed.json";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}

fn provider(kind: &str, name: &str, secret: &[u8]) -> Provider {
    let keys = vec![(name.to_owned(), secret.to_vec())];
    match kind {
        "aesgcm" => Provider::AesGcm(keys),
        "aescbc" => Provider::AesCbc(keys),
        _ => Provider::Secretbox(keys),
    }
}

/// Every provider with every key size kube accepts, and a few values (empty, short, a block's
/// size exactly, longer).
fn cases() -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let values: [&[u8]; 4] = [b"", b"{\"kind\":\"Secret\"}", &[7u8; 16], &[42u8; 1000]];
    for (kind, sizes) in [("aesgcm", &[16usize, 24, 32][..]), ("aescbc", &[16, 24, 32]), ("secretbox", &[32])] {
        for size in sizes {
            let secret: Vec<u8> = (0..*size as u8).collect();
            for value in values {
                out.push((kind.to_owned(), secret.clone(), value.to_vec()));
            }
        }
    }
    out
}

const STORAGE_KEY: &str = "/registry/secrets/default/a";

#[test]
fn versa_opens_what_kube_sealed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDED);
    let recorded: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(recorded.len() >= 28, "{} recorded cases", recorded.len());
    for case in &recorded {
        let kind = case["provider"].as_str().unwrap();
        let keys = keyed(&[provider(kind, "k1", &unb64(case["secret"].as_str().unwrap()))]);
        let sealed = unb64(case["sealed"].as_str().unwrap());
        let opened = open(&keys, STORAGE_KEY, &sealed).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(b64(&opened), case["value"].as_str().unwrap(), "{case}");
        if kind == "aesgcm" {
            assert!(open(&keys, "/registry/secrets/default/b", &sealed).is_err(), "aesgcm binds the storage key");
        }
    }
}

/// The oracle, built and started.
fn oracle() -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hack/encryption-oracle");
    let home = std::env::var("HOME").unwrap();
    let binary = Path::new(&home).join(".cache/versa-encryption-oracle/encryption-oracle");
    let built =
        Command::new("go").args(["build", "-mod=mod", "-o"]).arg(&binary).arg(".").current_dir(&dir).status().unwrap();
    assert!(built.success(), "go build of hack/encryption-oracle failed");
    let mut child = Command::new(binary).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn ask(child: &mut std::process::Child, out: &mut BufReader<std::process::ChildStdout>, request: Value) -> Value {
    writeln!(child.stdin.as_mut().unwrap(), "{request}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn kube_and_versa_read_each_other() {
    if std::env::var_os("VERSA_ENCRYPTION_ORACLE").is_none() {
        return;
    }
    let (mut child, mut out) = oracle();
    let mut recorded = Vec::new();
    for (kind, secret, value) in cases() {
        let keys = keyed(&[provider(&kind, "k1", &secret)]);
        let request = |op: &str, data: &[u8]| json!({"op": op, "provider": kind, "keyName": "k1", "secret": b64(&secret), "storageKey": STORAGE_KEY, "data": b64(data)});
        // versa seals, kube opens.
        let sealed = seal(&keys, STORAGE_KEY, &value).unwrap();
        let answer = ask(&mut child, &mut out, request("open", &sealed));
        assert_eq!(
            answer["data"].as_str().map(unb64),
            Some(value.clone()),
            "{kind}/{}: kube could not open: {answer}",
            secret.len()
        );
        // kube seals, versa opens.
        let answer = ask(&mut child, &mut out, request("seal", &value));
        let kube_sealed = unb64(answer["data"].as_str().unwrap());
        assert_eq!(open(&keys, STORAGE_KEY, &kube_sealed).unwrap(), value, "{kind}/{}", secret.len());
        recorded
            .push(json!({"provider": kind, "secret": b64(&secret), "value": b64(&value), "sealed": b64(&kube_sealed)}));
    }
    drop(child.stdin.take());
    let _ = child.wait();
    if std::env::var_os("VERSA_ENCRYPTION_ORACLE_RECORD").is_some() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDED);
        std::fs::write(path, serde_json::to_string_pretty(&recorded).unwrap() + "\n").unwrap();
    }
}
