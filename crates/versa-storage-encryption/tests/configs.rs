//! `EncryptionConfiguration` files, case by case (`tests/data/configs.yaml`): accepted, or
//! refused with kube-apiserver's field errors.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Case {
    name: String,
    config: Value,
    #[serde(default)]
    ok: bool,
    error: Option<String>,
}

#[test]
fn configs() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/configs.yaml");
    let cases: Vec<Case> = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let mut doc = case.config.clone();
        doc["apiVersion"] = "apiserver.config.k8s.io/v1".into();
        doc["kind"] = "EncryptionConfiguration".into();
        let got = versa_storage_encryption::parse(&doc.to_string());
        match (&got, case.ok, &case.error) {
            (Ok(_), true, None) => {}
            (Err(e), false, Some(want)) if e.to_string() == *want => {}
            _ => failures.push(format!("{}:\n  got {got:?}\n  want ok={} error={:?}", case.name, case.ok, case.error)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
