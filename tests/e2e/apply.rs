//! Server-side apply and `managedFields` (issue 20), end to end with the real `versa serve` and
//! the real `kubectl`: `kubectl apply --server-side` installs a definition (also one larger than
//! the 256 KiB that client-side apply's annotation allows) and creates and updates objects; two
//! managers conflict with kube's message and `--force-conflicts` takes the field; a field a
//! manager stops applying is removed; items of a map list applied by two managers are merged by
//! key; `kubectl diff --server-side` shows a change without making it; `--subresource=status`
//! applies status; and every write leaves kube-shaped `managedFields`
//! (`--show-managed-fields`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "client.rs"]
mod client;

use std::path::Path;
use std::time::Duration;

use client::Client;
use serde_json::{Value, json};
use versa_e2e::{Versa, fails, kubectl_command, ok};

const DEFINITION: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              color: {type: string}
              size: {type: string, default: medium}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
              replicas: {type: integer}
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn get(versa: &Versa, what: &[&str]) -> Value {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend(["-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&ok(versa.kubectl(&args))).unwrap()
}

/// The `managedFields` entry of `manager`, without its time.
fn entry(obj: &Value, manager: &str) -> Value {
    let entries = obj["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
    let mut found: Vec<Value> = entries.into_iter().filter(|e| e["manager"] == manager).collect();
    assert_eq!(found.len(), 1, "one entry for {manager}: {:#}", obj["metadata"]["managedFields"]);
    let mut e = found.remove(0);
    assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 20), "time: {e}");
    e.as_object_mut().unwrap().remove("time");
    e
}

/// kubectl, retried while the kind is not yet discoverable.
fn kubectl_settled(versa: &Versa, args: &[&str]) -> String {
    for _ in 0..100 {
        let out = versa.kubectl(args);
        if out.status.success() {
            return String::from_utf8(out.stdout).unwrap();
        }
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            stderr.contains("no matches for kind") || stderr.contains("the server could not find"),
            "kubectl {args:?}: {stderr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("kubectl {args:?} kept failing");
}

#[test]
fn kubectl_server_side_apply() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let files = dir.path();

    // The definition itself, applied server-side.
    let crd = write(files, "crd.yaml", DEFINITION);
    let out = ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    assert_eq!(out.trim(), "customresourcedefinition.apiextensions.k8s.io/widgets.example.com serverside-applied");
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s"]));
    let def = get(&versa, &["crd", "widgets.example.com"]);
    let e = entry(&def, "kubectl");
    assert_eq!(
        (&e["operation"], &e["apiVersion"], &e["fieldsType"]),
        (&json!("Apply"), &json!("apiextensions.k8s.io/v1"), &json!("FieldsV1"))
    );
    assert!(e["fieldsV1"]["f:spec"]["f:group"].is_object(), "{e}");

    // Create on apply.
    let first = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\nspec:\n  replicas: 1\n  color: red\n  tags: [a, b]\n  ports:\n  - {name: http, port: 80}\n";
    let w1 = write(files, "w1.yaml", first);
    let out = kubectl_settled(&versa, &["apply", "--server-side", "-f", &w1]);
    assert_eq!(out.trim(), "widget.example.com/w serverside-applied");
    let obj = get(&versa, &["widget", "w"]);
    assert_eq!(obj["spec"]["size"], "medium", "defaulted after the merge");
    assert_eq!(
        entry(&obj, "kubectl"),
        json!({
            "manager": "kubectl", "operation": "Apply", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:color": {}, "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
                                    "f:replicas": {}, "f:tags": {"v:\"a\"": {}, "v:\"b\"": {}}}},
        })
    );
    let rv = obj["metadata"]["resourceVersion"].clone();
    // The same configuration again changes nothing: no write.
    ok(versa.kubectl(&["apply", "--server-side", "-f", &w1]));
    assert_eq!(get(&versa, &["widget", "w"])["metadata"]["resourceVersion"], rv);

    // Another manager: a conflict on replicas, in kube's words; its own map-list item merges.
    let second = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\nspec:\n  replicas: 3\n  ports:\n  - {name: metrics, port: 9090}\n";
    let w2 = write(files, "w2.yaml", second);
    let err = fails(versa.kubectl(&["apply", "--server-side", "--field-manager=scaler", "-f", &w2]));
    assert!(err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas"#), "{err}");
    let out = ok(versa.kubectl(&["apply", "--server-side", "--field-manager=scaler", "--force-conflicts", "-f", &w2]));
    assert_eq!(out.trim(), "widget.example.com/w serverside-applied");
    let obj = get(&versa, &["widget", "w"]);
    assert_eq!(obj["spec"]["replicas"], 3);
    let ports: Vec<&str> =
        obj["spec"]["ports"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(ports, ["http", "metrics"]);
    assert!(entry(&obj, "scaler")["fieldsV1"]["f:spec"]["f:replicas"].is_object());
    assert!(entry(&obj, "kubectl")["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "forced away");

    // The first manager stops applying color and a tag: removed, as nobody else owns them.
    let third = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\nspec:\n  tags: [a]\n  ports:\n  - {name: http, port: 80}\n";
    let w3 = write(files, "w3.yaml", third);
    ok(versa.kubectl(&["apply", "--server-side", "-f", &w3]));
    let obj = get(&versa, &["widget", "w"]);
    assert!(obj["spec"].get("color").is_none(), "{obj}");
    assert_eq!(obj["spec"]["tags"], json!(["a"]));
    assert_eq!(obj["spec"]["replicas"], 3, "the scaler's field stays");

    // diff --server-side shows the change and makes none.
    let fourth = third.replace("port: 80", "port: 8080");
    let w4 = write(files, "w4.yaml", &fourth);
    let out = kubectl_command(&versa.kubeconfig()).args(["diff", "--server-side", "-f", &w4]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("-    port: 80") && diff.contains("+    port: 8080"), "{diff}");
    assert_eq!(get(&versa, &["widget", "w"])["spec"]["ports"][0]["port"], 80);

    // Status through its subresource: owned under subresource "status"; status is not taken
    // through the main endpoint.
    let status = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\nstatus:\n  phase: Ready\n";
    let st = write(files, "status.yaml", status);
    ok(versa.kubectl(&["apply", "--server-side", "--subresource=status", "--field-manager=controller", "-f", &st]));
    let obj = get(&versa, &["widget", "w"]);
    assert_eq!(obj["status"]["phase"], "Ready");
    let e = entry(&obj, "controller");
    assert_eq!((&e["subresource"], &e["fieldsV1"]), (&json!("status"), &json!({"f:status": {"f:phase": {}}})));

    // kubectl scale writes through /scale (its manager is its user agent's, `kubectl`): an
    // Update entry under subresource "scale" takes .spec.replicas from the scaler.
    ok(versa.kubectl(&["scale", "widget", "w", "--replicas=4"]));
    let obj = get(&versa, &["widget", "w"]);
    assert_eq!(obj["spec"]["replicas"], 4);
    let scaled: Vec<&Value> =
        obj["metadata"]["managedFields"].as_array().unwrap().iter().filter(|e| e["subresource"] == "scale").collect();
    assert_eq!(scaled.len(), 1, "{obj:#}");
    assert_eq!(
        (&scaled[0]["manager"], &scaled[0]["operation"], &scaled[0]["fieldsV1"]),
        (&json!("kubectl"), &json!("Update"), &json!({"f:spec": {"f:replicas": {}}}))
    );
    assert!(entry(&obj, "scaler").get("fieldsV1").is_none_or(|f| f["f:spec"].get("f:replicas").is_none()));

    // Updates are tracked too: kubectl's label command is an Update manager.
    ok(versa.kubectl(&["label", "widget", "w", "team=blue"]));
    let obj = get(&versa, &["widget", "w"]);
    let e = entry(&obj, "kubectl-label");
    assert_eq!(
        (&e["operation"], &e["apiVersion"], &e["fieldsV1"]),
        (&json!("Update"), &json!("example.com/v1"), &json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}))
    );
    // A field the configuration does not know is refused as kube refuses it.
    let unknown = first.replace("color: red", "colour: red");
    let bad = write(files, "bad.yaml", &unknown);
    let err = fails(versa.kubectl(&["apply", "--server-side", "-f", &bad]));
    assert!(err.contains("failed to create typed patch object (default/w; example.com/v1, Kind=Widget): .spec.colour: field not declared in schema"), "{err}");
}

#[tokio::test(flavor = "current_thread")]
async fn apply_options_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let crd = write(dir.path(), "crd.yaml", DEFINITION);
    ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s"]));
    let client = Client::admin(&versa.data_dir, &versa.address);
    let path = "/apis/example.com/v1/namespaces/default/widgets/w";
    let body = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":1}}"#;
    let send = |query: String, content_type: &'static str, body: String| {
        let client = client.clone();
        async move {
            let answer =
                client.request("PATCH", &format!("{path}{query}"), &[("content-type", content_type)], body).await;
            (answer.status, answer.json())
        }
    };
    let apply = "application/apply-patch+yaml";
    let (code, answer) = send(String::new(), apply, body.into()).await;
    assert_eq!(code, 422, "{answer}");
    assert_eq!(
        answer["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
    let (code, answer) = send("?force=true".into(), "application/merge-patch+json", "{}".into()).await;
    assert_eq!(code, 422, "{answer}");
    assert_eq!(
        answer["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch"#
    );
    let m = || "?fieldManager=m".to_string();
    let (code, answer) = send(m(), apply, body.replace("example.com/v1", "example.com/v2")).await;
    assert_eq!((code, answer["message"].as_str()), (400, Some("invalid object type: example.com/v2, Kind=Widget")));
    let with_managed = body.replace(r#""name":"w""#, r#""name":"w","managedFields":[{"manager":"x"}]"#);
    let (code, answer) = send(m(), apply, with_managed).await;
    assert_eq!((code, answer["message"].as_str()), (400, Some("metadata.managedFields must be nil")));
    // /status of a missing object is not created.
    let (code, _) = send("/status?fieldManager=m".into(), apply, body.into()).await;
    assert_eq!(code, 404);
    // Dry run: answered as created, nothing stored.
    let (code, answer) = send("?fieldManager=m&dryRun=All".into(), apply, body.into()).await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["metadata"]["managedFields"][0]["manager"], "m");
    assert_eq!(client.get(path).await.status, 404);
    // YAML bodies; created, then applied again.
    let yaml = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  replicas: 1\n";
    let (code, answer) = send(m(), apply, yaml.into()).await;
    assert_eq!(code, 201, "{answer}");
    let (code, answer) = send(m(), apply, yaml.into()).await;
    assert_eq!(code, 200, "{answer}");
    // A resourceVersion in the configuration is a precondition.
    let stale = body.replace(r#""name":"w""#, r#""name":"w","resourceVersion":"1""#);
    let (code, answer) = send(m(), apply, stale).await;
    assert_eq!((code, answer["reason"].as_str()), (409, Some("Conflict")), "{answer}");
    // Two conflicts from one manager: kube's several-conflicts text and one cause per field.
    let other =
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":2,"color":"x"}}"#;
    send(m(), apply, body.replace(r#""replicas":1"#, r#""replicas":1,"color":"y""#)).await;
    let (code, answer) = send("?fieldManager=n".into(), apply, other.into()).await;
    assert_eq!(code, 409, "{answer}");
    assert_eq!(
        answer["message"],
        "Apply failed with 2 conflicts: conflicts with \"m\":\n- .spec.color\n- .spec.replicas"
    );
    assert_eq!(
        answer["details"]["causes"],
        json!([
            {"reason": "FieldManagerConflict", "message": "conflict with \"m\"", "field": ".spec.color"},
            {"reason": "FieldManagerConflict", "message": "conflict with \"m\"", "field": ".spec.replicas"},
        ])
    );
    // An applied Scale: the replicas field's owner conflicts; force takes it.
    let scale = r#"{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w"},"spec":{"replicas":7}}"#;
    let (code, answer) = send("/scale?fieldManager=hpa".into(), apply, scale.into()).await;
    assert_eq!(
        (code, answer["message"].as_str()),
        (409, Some("Apply failed with 1 conflict: conflict with \"m\": .spec.replicas")),
        "{answer}"
    );
    let (code, answer) = send("/scale?fieldManager=hpa&force=true".into(), apply, scale.into()).await;
    assert_eq!((code, &answer["kind"], &answer["spec"]["replicas"]), (200, &json!("Scale"), &json!(7)), "{answer}");
    let obj = client.get(path).await.json();
    let hpa = obj["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "hpa").cloned();
    assert_eq!(
        hpa.map(|e| (e["operation"].clone(), e["subresource"].clone(), e["fieldsV1"].clone())),
        Some((json!("Apply"), json!("scale"), json!({"f:spec": {"f:replicas": {}}})))
    );

    // A too long fieldManager, on any write.
    let long = format!("?fieldManager={}", "x".repeat(129));
    let (code, answer) = send(long, "application/merge-patch+json", "{}".into()).await;
    assert_eq!(code, 422, "{answer}");
    assert_eq!(
        answer["message"],
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes"#
    );
}

/// The official Python client's `DynamicClient.server_side_apply` (kubernetes 37, pinned by
/// hack/install-deps.sh beside kopf): create on apply, a conflict as the client raises it, and
/// `force_conflicts`.
#[test]
fn python_client_server_side_apply() {
    let Ok(pythonpath) = std::env::var("VERSA_KOPF_PYTHONPATH") else {
        panic!(
            "VERSA_KOPF_PYTHONPATH is not set: run the tests through hack/test.sh, or set it to the directory `hack/install-deps.sh --kopf-path` prints"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let crd = write(dir.path(), "crd.yaml", DEFINITION);
    ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s"]));
    let script = r#"
import json, sys
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
dyn = dynamic.DynamicClient(client.ApiClient())
widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
body = {"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "py", "namespace": "default"}, "spec": {"replicas": 2, "ports": [{"name": "a", "port": 1}]}}
made = dyn.server_side_apply(widgets, body=body, field_manager="python-app").to_dict()
body["spec"]["replicas"] = 5
try:
    dyn.server_side_apply(widgets, body=body, field_manager="other")
    conflict = None
except ApiException as e:
    conflict = {"status": e.status, "body": json.loads(e.body)}
forced = dyn.server_side_apply(widgets, body=body, field_manager="other", force_conflicts=True).to_dict()
print(json.dumps({"made": made, "conflict": conflict, "forced": forced}))
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(versa.kubeconfig())
        .env("PYTHONPATH", pythonpath)
        .output()
        .unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["made"]["spec"]["replicas"], 2);
    assert_eq!(result["made"]["metadata"]["managedFields"][0]["manager"], "python-app");
    assert_eq!(result["conflict"]["status"], 409);
    assert_eq!(
        result["conflict"]["body"]["message"],
        "Apply failed with 1 conflict: conflict with \"python-app\": .spec.replicas"
    );
    assert_eq!(result["forced"]["spec"]["replicas"], 5);
    let mut managers: Vec<&str> = result["forced"]["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    // Entries are ordered by time, then name (kube's order); the two may share a second.
    managers.sort_unstable();
    assert_eq!(managers, ["other", "python-app"]);
}

/// kube-rs as operators use it: `Api::patch_status` with `Patch::Apply` and
/// `PatchParams::apply(manager)` writes status only, owned under the status subresource, and
/// the main endpoint's applier keeps its fields.
#[tokio::test(flavor = "current_thread")]
async fn kube_rs_applies_status() {
    use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};

    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let crd = write(dir.path(), "crd.yaml", DEFINITION);
    ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s"]));
    let kubeconfig = Kubeconfig::read_from(versa.kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let resource = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let spec =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "rs"}, "spec": {"replicas": 1}});
    api.patch("rs", &PatchParams::apply("deployer"), &Patch::Apply(&spec)).await.unwrap();
    // A controller's status, applied: the spec it does not mention is kept.
    let status = json!({"apiVersion": "example.com/v1", "kind": "Widget", "status": {"phase": "Running"}});
    let got = api.patch_status("rs", &PatchParams::apply("widget-controller"), &Patch::Apply(&status)).await.unwrap();
    assert_eq!(got.data["status"]["phase"], "Running");
    assert_eq!(got.data["spec"]["replicas"], 1);
    let entries = got.metadata.managed_fields.unwrap_or_default();
    let controller =
        entries.iter().find(|e| e.manager.as_deref() == Some("widget-controller")).expect("controller's entry");
    assert_eq!((controller.operation.as_deref(), controller.subresource.as_deref()), (Some("Apply"), Some("status")));
    // Status sent to the main endpoint is not taken.
    let both = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "rs"},
                      "spec": {"replicas": 2}, "status": {"phase": "Lost"}});
    let got = api.patch("rs", &PatchParams::apply("deployer"), &Patch::Apply(&both)).await.unwrap();
    assert_eq!((&got.data["spec"]["replicas"], &got.data["status"]["phase"]), (&json!(2), &json!("Running")));
}

/// A definition larger than the 256 KiB that client-side apply's
/// `last-applied-configuration` annotation can hold (as prometheus-operator's published CRDs
/// are) installs with `kubectl apply --server-side`, and applies again unchanged.
#[test]
fn large_definition_applies_server_side() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let words = "A field described at length, as generated CRDs describe theirs. ".repeat(5_000);
    let big =
        DEFINITION.replace("color: {type: string}", &format!("color: {{type: string, description: \"{words}\"}}"));
    assert!(big.len() > 300 * 1024);
    let crd = write(dir.path(), "big.yaml", &big);
    let err = fails(versa.kubectl(&["apply", "-f", &crd]));
    assert!(err.contains("metadata.annotations: Too long"), "client-side apply cannot: {err}");
    let out = ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    assert_eq!(out.trim(), "customresourcedefinition.apiextensions.k8s.io/widgets.example.com serverside-applied");
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s"]));
    let rv = get(&versa, &["crd", "widgets.example.com"])["metadata"]["resourceVersion"].clone();
    ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    let def = get(&versa, &["crd", "widgets.example.com"]);
    assert_eq!(def["metadata"]["resourceVersion"], rv, "unchanged: no write");
    let described =
        &def["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"];
    assert_eq!(described["description"].as_str().map(str::len), Some(words.len()));
}

/// The way from client-side to server-side apply, as kubectl takes it: an object made by
/// `kubectl apply` applies server-side without conflicts on the fields its last-applied
/// configuration describes (the annotation is rewritten to what was applied), and kubectl then
/// hands the client-side manager's fields to `kubectl`'s Apply entry.
#[test]
fn client_side_apply_upgrades_to_server_side() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let crd = write(dir.path(), "crd.yaml", DEFINITION);
    ok(versa.kubectl(&["apply", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s"]));
    let w = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\nspec:\n  replicas: 1\n  color: red\n";
    let file = write(dir.path(), "w.yaml", w);
    kubectl_settled(&versa, &["apply", "-f", &file]);
    let file = write(dir.path(), "w.yaml", &w.replace("replicas: 1", "replicas: 2"));
    let out = ok(versa.kubectl(&["apply", "--server-side", "-f", &file]));
    assert_eq!(out.trim(), "widget.example.com/w serverside-applied");
    let obj = get(&versa, &["widget", "w"]);
    assert_eq!(obj["spec"]["replicas"], 2);
    let last: Value = serde_json::from_str(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(last["spec"], json!({"replicas": 2, "color": "red"}));
    let e = entry(&obj, "kubectl");
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["fieldsV1"]["f:spec"], json!({"f:color": {}, "f:replicas": {}}));
    // Nothing is left to the client-side manager on spec.
    let managers: Vec<&Value> = obj["metadata"]["managedFields"].as_array().unwrap().iter().collect();
    assert!(
        managers.iter().all(|m| m["manager"] != "kubectl-client-side-apply" || m["fieldsV1"].get("f:spec").is_none()),
        "{managers:#?}"
    );
}

/// Ownership across versions, as kube's field manager keeps it: a definition whose v2 calls
/// v1's `spec.color` `spec.colour` (converted by CEL rules); an owner that applied at v1
/// conflicts with an apply of the same field at v2 under its v2 name, the conflict naming the
/// owner's own path, and a forced apply at v2 takes it.
#[tokio::test(flavor = "current_thread")]
async fn ownership_follows_the_field_across_versions() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let definition = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: paints.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: paints, singular: paint, kind: Paint}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            properties:
              color: {type: string, maxLength: 32}
              coats: {type: integer}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            properties:
              colour: {type: string, maxLength: 32}
              coats: {type: integer}
  conversion:
    strategy: CEL
    cel:
      conversions:
      - from: v1
        to: v2
        fields:
        - path: spec.colour
          expression: "self.spec.?color"
      - from: v2
        to: v1
        fields:
        - path: spec.color
          expression: "self.spec.?colour"
"#;
    let crd = write(dir.path(), "paint.yaml", definition);
    ok(versa.kubectl(&["apply", "--server-side", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/paints.example.com", "--timeout=60s"]));
    let client = Client::admin(&versa.data_dir, &versa.address);
    let apply = |version: &'static str, manager: &'static str, spec: Value, force: bool| {
        let client = client.clone();
        async move {
            let path = format!(
                "/apis/example.com/{version}/namespaces/default/paints/p?fieldManager={manager}{}",
                if force { "&force=true" } else { "" }
            );
            let body = json!({"apiVersion": format!("example.com/{version}"), "kind": "Paint",
                              "metadata": {"name": "p"}, "spec": spec});
            let r = client.patch(&path, "application/apply-patch+yaml", &body).await;
            (r.status, r.json())
        }
    };
    let (code, answer) = apply("v1", "painter", json!({"color": "red", "coats": 1}), false).await;
    assert_eq!(code, 201, "{answer}");
    let (code, answer) = apply("v2", "repainter", json!({"colour": "blue"}), false).await;
    assert_eq!(code, 409, "{answer}");
    assert_eq!(answer["message"], "Apply failed with 1 conflict: conflict with \"painter\": .spec.color");
    let (code, answer) = apply("v2", "repainter", json!({"colour": "blue"}), true).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["spec"], json!({"colour": "blue", "coats": 1}));
    let at_v1 = client.get("/apis/example.com/v1/namespaces/default/paints/p").await.json();
    assert_eq!(at_v1["spec"], json!({"color": "blue", "coats": 1}));
    let entries = at_v1["metadata"]["managedFields"].as_array().unwrap();
    let painter = entries.iter().find(|e| e["manager"] == "painter").unwrap();
    assert_eq!(
        (&painter["apiVersion"], &painter["fieldsV1"]),
        (&json!("example.com/v1"), &json!({"f:spec": {"f:coats": {}}}))
    );
    let repainter = entries.iter().find(|e| e["manager"] == "repainter").unwrap();
    assert_eq!(
        (&repainter["apiVersion"], &repainter["fieldsV1"]),
        (&json!("example.com/v2"), &json!({"f:spec": {"f:colour": {}}}))
    );
    // The v1 applier drops coats at v2's version: removed, as nobody else owns it.
    let (code, answer) = apply("v2", "painter", json!({}), false).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["spec"], json!({"colour": "blue"}));
}
