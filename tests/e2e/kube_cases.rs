//! The data tests that state kube's answer, asked of the real kube-apiserver:
//!
//! - each case of `crates/versa-registry/tests/data/write/*.yaml` marked `kube: same` (the
//!   registry's runner checks versa gives the stated answer; this checks the statement is
//!   kube's): definitions sent as the CustomResourceDefinitions they stand for, admission
//!   configuration kinds as they are;
//! - every create case of `crates/versa-admission/tests/data/objects.yaml` (kube's decoding,
//!   defaults and validation of those kinds) but those marked `kube: unit only` (a known
//!   difference states kube's lines under `kube`): its error lines are the causes of kube's 422,
//!   its decoding error the end of kube's 400, its prepared object kube's answer.
//!
//! A create is a `dryRun=All` POST; an update creates the case's stored definition, sends the
//! case's object over it with PUT (to `/status` for `part: status`) with `dryRun=All`, and
//! deletes it again. Compared: the error message (with `ResourceDefinition.versa.dev` read as
//! `CustomResourceDefinition.apiextensions.k8s.io`, the kind `ResourceDefinition` as
//! `CustomResourceDefinition`, and the conversion webhook's path as kube's internal one) or
//! success, and the warnings — as a set,
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
    let client = plane.admin_client();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut differences = Vec::new();
    let mut asked = 0;
    let write = root.join("crates/versa-registry/tests/data/write");
    let mut files: Vec<_> = std::fs::read_dir(&write).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in files {
        let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let target = Target::of(doc["resource"].as_str().unwrap());
        for case in doc["cases"].as_array().unwrap() {
            if case.get("kube").and_then(Value::as_str) != Some("same") {
                continue;
            }
            let target = target.as_ref().unwrap_or_else(|| panic!("{}: no kube resource", file.display()));
            asked += 1;
            let name = case["name"].as_str().unwrap();
            let answer = ask(&client, target, case).await;
            if let Err(why) = compare(&answer, &case["expect"], target) {
                differences.push(format!("{name}: {why}\nkube: {} {}", answer.status, answer.text()));
            }
        }
    }
    assert!(asked > 0, "no case of {} is marked `kube: same`", write.display());
    let objects = root.join("crates/versa-admission/tests/data/objects.yaml");
    let cases: Value = serde_saphyr::from_str(&std::fs::read_to_string(&objects).unwrap()).unwrap();
    for case in cases.as_array().unwrap() {
        let unit_only = case.get("kube").is_some_and(Value::is_string);
        if case.get("old").is_none()
            && !unit_only
            && let Err(why) = admission_object(&client, case).await
        {
            differences.push(format!("objects.yaml: {}: {why}", case["name"].as_str().unwrap()));
        }
    }
    differences
}

/// Where a case file's resource lives in kube, and how its texts read there.
struct Target {
    collection: String,
    /// The definitions API's cases stand for CRDs.
    definitions: bool,
}

impl Target {
    fn of(resource: &str) -> Option<Target> {
        if resource == "definitions" {
            return Some(Target { collection: CRDS.to_owned(), definitions: true });
        }
        let kind = resource.strip_prefix("builtin:")?;
        // The namespaced core kinds' cases are in `default`, which every cluster has.
        let namespaced = match kind {
            "ConfigMap" => Some("/api/v1/namespaces/default/configmaps"),
            "Secret" => Some("/api/v1/namespaces/default/secrets"),
            "Lease" => Some("/apis/coordination.k8s.io/v1/namespaces/default/leases"),
            _ => None,
        };
        if let Some(collection) = namespaced {
            return Some(Target { collection: collection.to_owned(), definitions: false });
        }
        let plural = match kind {
            "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "MutatingAdmissionPolicy"
            | "MutatingAdmissionPolicyBinding" => {
                let lower = kind.to_lowercase();
                match lower.strip_suffix('y') {
                    Some(stem) => format!("{stem}ies"),
                    None => format!("{lower}s"),
                }
            }
            _ => return None,
        };
        Some(Target { collection: format!("/apis/admissionregistration.k8s.io/v1/{plural}"), definitions: false })
    }

    /// A case's document as kube takes it.
    fn document(&self, doc: &Value) -> Value {
        if self.definitions { as_crd(doc) } else { doc.clone() }
    }

    /// A case's stated error as kube words it.
    fn error(&self, error: &str) -> String {
        if !self.definitions {
            return error.to_owned();
        }
        // kube validates its internal form and prints some paths that the v1 document does not
        // have; versa points at the field the user wrote (versa-apiextensions' validation).
        error
            .replace("ResourceDefinition.versa.dev", "\0")
            .replace("ResourceDefinition", "CustomResourceDefinition")
            .replace('\0', "CustomResourceDefinition.apiextensions.k8s.io")
            .replace("spec.conversion.webhook.clientConfig", "spec.conversion.webhookClientConfig")
    }
}

/// One create case of versa-admission's objects.yaml, asked of kube.
async fn admission_object(client: &Client, case: &Value) -> Result<(), String> {
    let kind = case["kind"].as_str().unwrap();
    let target = Target::of(&format!("builtin:{kind}")).unwrap();
    let mut object = case["object"].clone();
    object["apiVersion"] = json!("admissionregistration.k8s.io/v1");
    object["kind"] = json!(kind);
    if object.get("metadata").is_none() {
        object["metadata"] = json!({"name": "config"});
    }
    let answer = client.post(&format!("{}?dryRun=All", target.collection), &object).await;
    let seen = || format!("kube: {} {}", answer.status, answer.text());
    // A known difference states kube's lines beside versa's.
    let errors = case.get("kube").or_else(|| case.get("errors"));
    if let Some(lines) = errors.and_then(Value::as_array) {
        let want: BTreeSet<String> = lines.iter().map(|l| l.as_str().unwrap().to_owned()).collect();
        let got: BTreeSet<String> = answer.json()["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("{}: {}", c["field"].as_str().unwrap_or(""), c["message"].as_str().unwrap_or("")))
            .collect();
        if answer.status != 422 || got != want {
            return Err(format!("errors {want:?}\n{}", seen()));
        }
    } else if let Some(line) = case.get("decodeError").and_then(Value::as_str) {
        let detail = &line[line.find("json: ").unwrap_or(0)..];
        let message = if answer.status == 400 {
            answer.json()["message"].as_str().unwrap_or("").to_owned()
        } else {
            String::new()
        };
        if !message.ends_with(detail) {
            return Err(format!("decoding error ending {detail:?}\n{}", seen()));
        }
    } else if let Some(prepared) = case.get("prepared") {
        if answer.status != 201 {
            return Err(format!("accepted\n{}", seen()));
        }
        let mut got = answer.json();
        let mut want = prepared.clone();
        for o in [&mut got, &mut want] {
            let o = o.as_object_mut().unwrap();
            for field in ["apiVersion", "kind", "metadata"] {
                o.remove(field);
            }
        }
        if got != want {
            return Err(format!("prepared {want}\n{}", seen()));
        }
    } else if answer.status != 201 {
        return Err(format!("accepted\n{}", seen()));
    }
    Ok(())
}

/// A ResourceDefinition document as the CustomResourceDefinition it stands for.
fn as_crd(doc: &Value) -> Value {
    let mut crd = doc.clone();
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    crd
}

/// Sends the case to kube; returns the answer to the case's own request.
async fn ask(client: &Client, target: &Target, case: &Value) -> Response {
    let query = match case.get("fieldValidation").and_then(Value::as_str) {
        Some(mode) => format!("?dryRun=All&fieldValidation={mode}"),
        None => "?dryRun=All".to_owned(),
    };
    let object = target.document(&case["object"]);
    let collection = &target.collection;
    match case["verb"].as_str().unwrap() {
        "create" => client.post(&format!("{collection}{query}"), &object).await,
        "update" => {
            let mut stored = target.document(&case["stored"]);
            let meta = stored["metadata"].as_object_mut().unwrap();
            for made_up in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
                meta.remove(made_up);
            }
            stored.as_object_mut().unwrap().remove("status");
            let created = client.post(collection, &stored).await;
            assert_eq!(created.status, 201, "creating the stored definition: {}", created.text());
            let name = created.json()["metadata"]["name"].as_str().unwrap().to_owned();
            let path = match case.get("part").and_then(Value::as_str) {
                Some("status") => format!("{collection}/{name}/status{query}"),
                _ => format!("{collection}/{name}{query}"),
            };
            // kube's controllers write the new definition's status: update the latest one.
            let mut object = object;
            let mut answer = None;
            for _ in 0..50 {
                object["metadata"]["resourceVersion"] =
                    client.get(&format!("{collection}/{name}")).await.json()["metadata"]["resourceVersion"].clone();
                let put = client.put(&path, &object).await;
                if put.status != 409 {
                    answer = Some(put);
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            let answer = answer.expect("the update conflicted 50 times");
            let deleted = client.delete(&format!("{collection}/{name}")).await;
            assert!(deleted.status < 300, "deleting {name}: {}", deleted.text());
            // The next case may create it again: wait until kube's cleanup has let it go.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while client.get(&format!("{collection}/{name}")).await.status != 404 {
                assert!(std::time::Instant::now() < deadline, "{name} was not deleted within a minute");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            answer
        }
        other => panic!("verb {other}"),
    }
}

/// The case's expectation against kube's answer.
fn compare(answer: &Response, expect: &Value, target: &Target) -> Result<(), String> {
    match expect.get("error").and_then(Value::as_str) {
        Some(error) => {
            let want = target.error(error);
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
