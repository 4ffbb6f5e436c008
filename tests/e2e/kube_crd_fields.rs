//! The `managedFields` of CustomResourceDefinitions, kube-apiserver against standalone versa
//! (its `customresourcedefinitions` face): the same definitions — two published CRDs of
//! `../shared/conformance/crds/` and a small one, each in a group of its own (suffix `.sf`, out
//! of the way of the other scenarios) — written with the same requests to both servers, and
//! after each step the answer's status, its message when refused (apply conflicts), and the
//! definition's `managedFields` without their times compared: a first apply, the status
//! kube-apiserver's own controllers write (manager `kube-apiserver`, subresource `status`), a
//! second manager's apply of a change to one version (a conflict, then forced), a label applied
//! by that manager, an update, a merge patch, and the first manager's apply again (conflicts
//! with three managers, then forced); and the small one created with `POST`, its spec left to
//! the defaults, then updated by its creator, then deleted while an object with a finalizer holds
//! it (the cleanup's status write).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Client, Response};
use crate::kube_plane::Plane;

/// The suffix of every group (and so of every definition's name) this scenario writes.
const SUFFIX: &str = ".sf";

const COLLECTION: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const APPLY: &str = "application/apply-patch+yaml";

/// The definitions: published ones and a small one with both subresources, a conversion
/// strategy and columns, renamed into their own groups.
fn definitions() -> Vec<Value> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/crds");
    let mut out = Vec::new();
    for file in [
        "crossplane/environmentconfigs.apiextensions.crossplane.io.yaml",
        "kueue/workloadpriorityclasses.kueue.x-k8s.io.yaml",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        out.push(renamed(&crd));
    }
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {"size": {"type": "integer", "default": 1}}},
                   "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}}}},
               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready"}},
               "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]})
    };
    out.push(renamed(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.small.example.com", "labels": {"app": "small"}},
        "spec": {"group": "small.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
                 "conversion": {"strategy": "None"},
                 "versions": [version("v1", true), version("v1beta1", false)]},
    })));
    out
}

/// `crd` in group `<group>.sf`, with only what a user's apply configuration holds.
fn renamed(crd: &Value) -> Value {
    let mut out = json!({"apiVersion": crd["apiVersion"], "kind": crd["kind"], "metadata": {}, "spec": crd["spec"]});
    let group = format!("{}{SUFFIX}", crd["spec"]["group"].as_str().unwrap());
    out["spec"]["group"] = json!(group);
    out["metadata"]["name"] = json!(format!("{}.{group}", crd["spec"]["names"]["plural"].as_str().unwrap()));
    for field in ["labels", "annotations"] {
        if let Some(v) = crd["metadata"].get(field) {
            out["metadata"][field] = v.clone();
        }
    }
    out
}

/// What one step is compared by: the answer's status code, its message when it is refused, and
/// the definition's `managedFields` without their times — and so in an order of their own (kube
/// orders the entries of one operation by time, then by manager).
fn observed(step: &str, answer: &Response, stored: &Value) -> Value {
    let message = (answer.status >= 300).then(|| answer.json()["message"].clone());
    let mut fields: Vec<Value> = stored["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
    for entry in &mut fields {
        if let Some(e) = entry.as_object_mut() {
            e.remove("time");
        }
    }
    fields.sort_by_key(|e| (e["operation"].to_string(), e["manager"].to_string(), e["subresource"].to_string()));
    json!({"step": step, "status": answer.status, "message": message, "managedFields": fields})
}

/// Whether a definition's `Established` condition is true.
fn established(crd: &Value) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
}

/// The definition at `path` once `done` holds for it, or as it is after 30 s (the comparison then
/// shows what did not happen).
async fn once(client: &Client, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut now = client.get(path).await.json();
    while !done(&now) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        now = client.get(path).await.json();
    }
    now
}

/// Every step on one server, in order.
async fn steps(client: &Client, crd: &Value) -> Vec<Value> {
    let name = crd["metadata"]["name"].as_str().unwrap();
    let one = format!("{COLLECTION}/{name}");
    let apply = async |manager: &str, force: bool, body: &Value| {
        let path = format!("{one}?fieldManager={manager}{}", if force { "&force=true" } else { "" });
        client.patch(&path, APPLY, body).await
    };
    // The definition once the server's controllers have accepted its names (what the steps
    // that change names wait for: kube-apiserver's status write is in `managedFields` then).
    let stored = async || {
        once(client, &one, |now| {
            let accepted = ["shortNames", "categories"]
                .iter()
                .all(|k| now["status"]["acceptedNames"][k] == now["spec"]["names"][k]);
            accepted && established(now)
        })
        .await
    };
    let mut out = Vec::new();

    let answer = apply("first", false, crd).await;
    assert_eq!(answer.status, 201, "{name}: {}", answer.text());
    out.push(observed("first apply", &answer, &answer.json()));

    // The status kube-apiserver's controllers write, once the names are accepted and established.
    let now = stored().await;
    assert!(established(&now), "{name} not established: {now}");
    let managers = now["metadata"]["managedFields"].to_string();
    assert!(managers.contains(r#""manager":"kube-apiserver""#), "{name}: no status write recorded: {managers}");
    let ok = Response { status: 200, headers: Default::default(), body: Default::default() };
    out.push(observed("established", &ok, &now));

    // A second manager changes one version: versions is an atomic list, owned by the first.
    let mut change = crd.clone();
    change["spec"]["versions"][0]["deprecated"] = json!(true);
    let answer = apply("second", false, &change).await;
    out.push(observed("second manager changes a version", &answer, &stored().await));
    let answer = apply("second", true, &change).await;
    out.push(observed("second manager forces it", &answer, &stored().await));

    // The same manager adds a label in a configuration of its own: no conflict.
    let label = json!({"apiVersion": crd["apiVersion"], "kind": crd["kind"], "metadata": {"name": name, "labels": {"team": "second"}},
                       "spec": change["spec"]});
    let answer = apply("second", false, &label).await;
    out.push(observed("second manager adds a label", &answer, &stored().await));

    // An update: a short name more and a category.
    let mut current = stored().await;
    current["spec"]["names"]["shortNames"] = json!(["sfx"]);
    current["spec"]["names"]["categories"] = json!(["sf"]);
    let answer = client.put(&format!("{one}?fieldManager=updater"), &current).await;
    out.push(observed("update", &answer, &stored().await));

    // A merge patch of the scope-free part of a version.
    let mut versions = current["spec"]["versions"].clone();
    versions[0]["deprecationWarning"] = json!("going away");
    let answer = client
        .patch(
            &format!("{one}?fieldManager=patcher"),
            "application/merge-patch+json",
            &json!({"spec": {"versions": versions}}),
        )
        .await;
    out.push(observed("merge patch", &answer, &stored().await));

    // The first manager applies its configuration again: conflicts with all three.
    let answer = apply("first", false, crd).await;
    out.push(observed("first manager applies again", &answer, &stored().await));
    let answer = apply("first", true, crd).await;
    out.push(observed("first manager forces it", &answer, &stored().await));

    assert_eq!(client.delete(&one).await.status, 200, "{name}: delete");
    out
}

/// A definition made by a create (`POST`): its writer's `Update` entry as the object was
/// defaulted (`singular`, `listKind`, the conversion strategy), the status write, an update of
/// the same manager, and its deletion while an object with a finalizer holds it.
async fn created(client: &Client, crd: &Value) -> Vec<Value> {
    let name = crd["metadata"]["name"].as_str().unwrap();
    let one = format!("{COLLECTION}/{name}");
    let answer = client.post(&format!("{COLLECTION}?fieldManager=creator"), crd).await;
    assert_eq!(answer.status, 201, "{name}: {}", answer.text());
    let mut out = vec![observed("create", &answer, &answer.json())];
    let mut now = once(client, &one, established).await;
    let ok = Response { status: 200, headers: Default::default(), body: Default::default() };
    out.push(observed("created and established", &ok, &now));
    now["metadata"]["labels"] = json!({"app": "small", "stage": "two"});
    let answer = client.put(&format!("{one}?fieldManager=creator"), &now).await;
    out.push(observed("its creator updates it", &answer, &client.get(&one).await.json()));

    // Deleted while an object holds it with a finalizer: the cleanup's status write (kube's
    // finalizer controller: `Terminating` is `InstanceDeletionInProgress`) is recorded; then the
    // object is released and the definition goes.
    let group = crd["spec"]["group"].as_str().unwrap();
    let objects = format!("/apis/{group}/v1/namespaces/default/widgets");
    let held = json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
                      "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = client.post(&objects, &held).await;
        if answer.status == 201 {
            break;
        }
        assert!(Instant::now() < deadline, "{name}: creating the held object: {}", answer.text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(client.delete(&one).await.status, 200, "{name}: delete");
    let in_progress = |now: &Value| {
        now["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| c["type"] == "Terminating" && c["reason"] == "InstanceDeletionInProgress")
        })
    };
    let now = once(client, &one, in_progress).await;
    out.push(observed("deleted while an object holds it", &ok, &now));
    let release = json!({"metadata": {"finalizers": null}});
    let answer = client.merge_patch(&format!("{objects}/held"), &release).await;
    assert_eq!(answer.status, 200, "{name}: releasing the held object: {}", answer.text());
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get(&one).await.status != 404 {
        assert!(Instant::now() < deadline, "{name}: still there after its object was released");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    out
}

/// Runs the steps on kube-apiserver and on a standalone versa; returns the steps that differ,
/// with both answers.
pub fn run(plane: &Plane) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let kube = plane.admin_client();
        let dir = tempfile::tempdir().unwrap();
        let process = versa_e2e::Versa::start(&dir.path().join("data"));
        let standalone = Client::admin(&process.data_dir, &process.address);
        let mut differences = Vec::new();
        let definitions = definitions();
        let mut made = definitions.last().unwrap().clone();
        made["metadata"]["name"] = json!("widgets.made.example.com.sf");
        made["spec"]["group"] = json!("made.example.com.sf");
        // Left to the defaults, which the creator owns in kube.
        made["spec"].as_object_mut().unwrap().remove("conversion");
        made["spec"]["names"].as_object_mut().unwrap().remove("singular");
        let runs = definitions.iter().map(|crd| (crd, false)).chain([(&made, true)]);
        for (crd, post) in runs {
            let (k, v) = match post {
                false => (steps(&kube, crd).await, steps(&standalone, crd).await),
                true => (created(&kube, crd).await, created(&standalone, crd).await),
            };
            for (k, v) in k.iter().zip(&v) {
                if k != v {
                    differences.push(format!(
                        "{}: {}\n--- kube-apiserver ---\n{}\n--- standalone versa ---\n{}",
                        crd["metadata"]["name"],
                        k["step"],
                        serde_json::to_string_pretty(k).unwrap(),
                        serde_json::to_string_pretty(v).unwrap()
                    ));
                }
            }
        }
        differences
    })
}
