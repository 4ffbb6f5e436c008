//! The data tests that state kube's answer, asked of the real kube-apiserver: each case of
//! `crates/versa-registry/tests/data/write/definitions.yaml` marked `kube: same` (the registry's
//! runner checks versa gives the stated answer; this checks the statement is kube's), sent as
//! the CustomResourceDefinition it stands for.
//!
//! A create is a `dryRun=All` POST; an update creates the case's stored definition, sends the
//! case's object over it with PUT (to `/status` for `part: status`) with `dryRun=All`, and
//! deletes it again. Compared: the error message (with `ResourceDefinition.versa.dev` read as
//! `CustomResourceDefinition.apiextensions.k8s.io`, and the kind `ResourceDefinition` as
//! `CustomResourceDefinition`) or success, and the warnings — as a set,
//! since kube walks a schema's properties in Go's map order (the registry's runner checks
//! versa's order, which is the schema's).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::client::{Client, Response};
use crate::kube_plane::Plane;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Every difference between a marked case's expectation and kube's answer.
pub fn run(plane: &Plane) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(run_async(plane))
}

async fn run_async(plane: &Plane) -> Vec<String> {
    let (cert, key) = &plane.admin_identity;
    let client = Client::from_pem(&plane.cluster_ca.pem(), Some((cert, key)), &format!("127.0.0.1:{}", plane.port));
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/versa-registry/tests/data/write/definitions.yaml");
    let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut differences = Vec::new();
    let mut asked = 0;
    for case in doc["cases"].as_array().unwrap() {
        if case.get("kube").and_then(Value::as_str) != Some("same") {
            continue;
        }
        asked += 1;
        let name = case["name"].as_str().unwrap();
        let answer = ask(&client, case).await;
        if let Err(why) = compare(&answer, &case["expect"]) {
            differences.push(format!("{name}: {why}\nkube: {} {}", answer.status, answer.text()));
        }
    }
    assert!(asked > 0, "no case of {} is marked `kube: same`", file.display());
    differences
}

/// A ResourceDefinition document as the CustomResourceDefinition it stands for.
fn as_crd(doc: &Value) -> Value {
    let mut crd = doc.clone();
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    crd
}

/// Sends the case to kube; returns the answer to the case's own request.
async fn ask(client: &Client, case: &Value) -> Response {
    let query = match case.get("fieldValidation").and_then(Value::as_str) {
        Some(mode) => format!("?dryRun=All&fieldValidation={mode}"),
        None => "?dryRun=All".to_owned(),
    };
    let object = as_crd(&case["object"]);
    match case["verb"].as_str().unwrap() {
        "create" => client.post(&format!("{CRDS}{query}"), &object).await,
        "update" => {
            let mut stored = as_crd(&case["stored"]);
            let meta = stored["metadata"].as_object_mut().unwrap();
            for made_up in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
                meta.remove(made_up);
            }
            stored.as_object_mut().unwrap().remove("status");
            let created = client.post(CRDS, &stored).await;
            assert_eq!(created.status, 201, "creating the stored definition: {}", created.text());
            let name = created.json()["metadata"]["name"].as_str().unwrap().to_owned();
            let path = match case.get("part").and_then(Value::as_str) {
                Some("status") => format!("{CRDS}/{name}/status{query}"),
                _ => format!("{CRDS}/{name}{query}"),
            };
            // kube's controllers write the new definition's status: update the latest one.
            let mut object = object;
            let mut answer = None;
            for _ in 0..50 {
                object["metadata"]["resourceVersion"] =
                    client.get(&format!("{CRDS}/{name}")).await.json()["metadata"]["resourceVersion"].clone();
                let put = client.put(&path, &object).await;
                if put.status != 409 {
                    answer = Some(put);
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            let answer = answer.expect("the update conflicted 50 times");
            let deleted = client.delete(&format!("{CRDS}/{name}")).await;
            assert!(deleted.status < 300, "deleting {name}: {}", deleted.text());
            // The next case may create it again: wait until kube's cleanup has let it go.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while client.get(&format!("{CRDS}/{name}")).await.status != 404 {
                assert!(std::time::Instant::now() < deadline, "{name} was not deleted within a minute");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            answer
        }
        other => panic!("verb {other}"),
    }
}

/// The case's expectation against kube's answer.
fn compare(answer: &Response, expect: &Value) -> Result<(), String> {
    match expect.get("error").and_then(Value::as_str) {
        Some(error) => {
            let want = error
                .replace("ResourceDefinition.versa.dev", "\0")
                .replace("ResourceDefinition", "CustomResourceDefinition")
                .replace('\0', "CustomResourceDefinition.apiextensions.k8s.io");
            let got = if answer.status >= 400 {
                answer.json()["message"].as_str().unwrap_or("").to_owned()
            } else {
                String::new()
            };
            if got != want {
                return Err(format!("error {got:?}, the case says {want:?}"));
            }
        }
        None if answer.status >= 300 => return Err("refused; the case says accepted".to_owned()),
        None => {}
    }
    let want: BTreeSet<String> = expect
        .get("warnings")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    let got: BTreeSet<String> = answer.warnings().iter().map(|w| warning_text(w)).collect();
    if got != want {
        return Err(format!("warnings {got:?}, the case says {want:?}"));
    }
    Ok(())
}

/// The text of a `Warning` header (`299 - "text"`, the text's quotes and backslashes escaped).
fn warning_text(header: &str) -> String {
    let quoted = header.strip_prefix("299 - ").unwrap_or(header);
    let inner = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')).unwrap_or(quoted);
    let mut text = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.extend(chars.next()),
            c => text.push(c),
        }
    }
    text
}
