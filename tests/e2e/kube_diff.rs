//! Differential conformance against the real kube-apiserver: every published CRD of
//! `../shared/conformance/crds/` installed twice in the same kube-apiserver — as a
//! CustomResourceDefinition (kube's apiextensions-apiserver answers) and as a versa
//! ResourceDefinition in a renamed group (`<group>.vd`, versa answers through kube's
//! aggregator) — and the same requests sent to both through kube, the answers compared; and a
//! third time, unchanged, in a standalone versa (its `customresourcedefinitions` face), whose
//! answers are compared with kube's too.
//!
//! What is compared: whether each definition is accepted (and kube's error text when not: CEL
//! cost refusals included); for each accepted pair, at its storage version, objects created with
//! `dryRun=All` — a minimal object, one with an empty `spec`, one with an unknown field (strict
//! and default field validation), and one per top-level `spec` property with a value of the wrong
//! type — the status code, the `Status` (reason, message, causes; error lines compared as a set,
//! since kube lists sibling properties in Go's map order), the `Warning` headers, and the object
//! answered after defaulting and pruning (without the fields the server makes up: uid,
//! timestamps, resourceVersion). Where the minimal object is valid, a real one's life: create,
//! Table list, server-side apply, get, merge / JSON / strategic merge patches, updates (a label;
//! each wrongly typed property, dry run; `/status`), `/scale`, delete. The group's rename is undone in versa's answers before
//! comparing.
//!
//! Known differences are listed in `KNOWN` with their reason (each is in docs/serving.md
//! "Differences"); any other difference fails the scenario, and the summary line says how many
//! requests were compared and how many differed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Client, Response};
use crate::kube_plane::Plane;

/// The suffix that moves a definition's group out of kube's way.
const SUFFIX: &str = ".vd";
const NAMESPACE: &str = "diff";

/// Differences known and explained: (a substring of the case's label, a substring of the
/// difference, the reason). Each reason is in docs/serving.md "Differences".
const KNOWN: &[(&str, &str, &str)] = &[(
    "crafted: a rule that does not compile",
    "Syntax error:",
    "a CEL syntax error's text is ANTLR's error recovery in cel-go's generated parser (`mismatched input ')' \
     expecting {'[', '{', ...}`); versa's parser reports the same position and caret but its own expectation list",
)];

/// One published CRD: its file and its two forms.
struct Pair {
    file: String,
    group: String,
    kube: Value,
    versa: Value,
}

/// Every CRD of the corpus, the first of each name (the Gateway API's two channels share names).
fn corpus() -> Vec<(String, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/crds");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
        if seen.insert(name) {
            let rel = path.strip_prefix(&root).unwrap().display().to_string();
            out.push((rel, crd));
        }
    }
    out
}

/// Definitions written to be refused, for what kube says of CEL rules at definition time: a
/// rule over unbounded lists whose estimated cost exceeds the budget, one that does not compile,
/// one of the wrong type.
fn crafted() -> Vec<(String, Value)> {
    let crd = |name: &str, schema: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{name}s.crafted.example.com")},
            "spec": {"group": "crafted.example.com", "scope": "Namespaced",
                     "names": {"plural": format!("{name}s"), "kind": name.to_uppercase()},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": schema}}}}]},
        })
    };
    let unbounded = |rule: &str| {
        json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}],
               "properties": {"items": {"type": "array", "items": {"type": "string"}}}})
    };
    vec![
        (
            "crafted: cost over the budget".into(),
            crd("costly", unbounded("self.items.all(x, self.items.all(y, x == y))")),
        ),
        ("crafted: a rule that does not compile".into(), crd("broken", unbounded("self.items.all(x, x ==)"))),
        ("crafted: a rule of the wrong type".into(), crd("mistyped", unbounded("self.items.size()"))),
        (
            "crafted: a message expression over the budget".into(),
            crd(
                "chatty",
                json!({"type": "object", "x-kubernetes-validations": [{"rule": "true",
                       "messageExpression": "self.items.map(x, self.items.map(y, x + y)).join(',')"}],
                       "properties": {"items": {"type": "array", "items": {"type": "string"}}}}),
            ),
        ),
    ]
}

/// The two forms of a CRD: kube's with conversion `None` (no webhook runs here; requests use
/// the storage version), versa's the same in group `<group>.vd`.
fn pair(file: String, crd: &Value) -> Pair {
    let group = crd["spec"]["group"].as_str().unwrap().to_owned();
    let mut kube = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd["metadata"]["name"]},
        "spec": crd["spec"],
    });
    if let Some(annotations) = crd["metadata"].get("annotations") {
        kube["metadata"]["annotations"] = annotations.clone();
    }
    kube["spec"]["conversion"] = json!({"strategy": "None"});
    let mut versa = kube.clone();
    versa["apiVersion"] = json!("versa.dev/v1");
    versa["kind"] = json!("ResourceDefinition");
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap();
    versa["metadata"]["name"] = json!(format!("{plural}.{group}{SUFFIX}"));
    versa["spec"]["group"] = json!(format!("{group}{SUFFIX}"));
    // The renamed group is no longer a protected one, where kube refuses the approval annotation.
    if let Some(a) = versa["metadata"].get_mut("annotations").and_then(Value::as_object_mut) {
        a.remove("api-approved.kubernetes.io");
    }
    Pair { file, group, kube, versa }
}

/// What a request's answer says, made comparable: the status, the warnings, and the body with
/// the server's made-up fields removed and error lines sorted; versa's group renamed back.
fn comparable(r: &Response, group: &str) -> Value {
    let rename = |s: &str| s.replace(&format!("{group}{SUFFIX}"), group);
    let mut body: Value = serde_json::from_str(&rename(&r.text())).unwrap_or_else(|_| json!(rename(&r.text())));
    if body["kind"] == "Status" {
        let message = body["message"].as_str().unwrap_or("").to_owned();
        // An Invalid Status lists its causes in its message (`... is invalid: [a, b]`): kube in
        // Go's map order for sibling properties, versa by key. The causes are compared as a
        // set below; of the message, what comes before them.
        let head = match (body["reason"] == "Invalid", message.find(" is invalid: ")) {
            (true, Some(at)) if body["details"]["causes"].as_array().is_some_and(|c| !c.is_empty()) => {
                format!("{} is invalid: <causes>", &message[..at])
            }
            _ => message,
        };
        let mut lines: Vec<String> = head.split('\n').map(str::to_owned).collect();
        lines.sort();
        body["message"] = json!(lines);
        if let Some(causes) = body["details"]["causes"].as_array_mut() {
            causes.sort_by_key(|c| c.to_string());
        }
        body["metadata"] = json!({});
        body["details"].as_object_mut().map(|d| d.remove("uid"));
    } else {
        strip_made_up(&mut body);
    }
    let mut warnings: Vec<String> = r.warnings().iter().map(|w| rename(w)).collect();
    warnings.sort();
    json!({"code": r.status, "warnings": warnings, "body": body})
}

/// Removes, anywhere in `v`, what each server makes up for itself: uids, timestamps,
/// resourceVersions, managedFields' times, and a Table's cells of `date` columns (ages) or
/// holding a time.
fn strip_made_up(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for f in ["uid", "creationTimestamp", "resourceVersion", "time", "deletionTimestamp"] {
                map.remove(f);
            }
            if map.get("kind").and_then(Value::as_str) == Some("Table") {
                let ages: Vec<usize> = map["columnDefinitions"]
                    .as_array()
                    .map(|cs| cs.iter().enumerate().filter(|(_, c)| c["type"] == "date").map(|(i, _)| i).collect())
                    .unwrap_or_default();
                if let Some(rows) = map.get_mut("rows").and_then(Value::as_array_mut) {
                    for row in rows {
                        if let Some(cells) = row.get_mut("cells").and_then(Value::as_array_mut) {
                            for &i in &ages {
                                if i < cells.len() {
                                    cells[i] = Value::Null;
                                }
                            }
                            // A `string` column showing a time the server made up (tekton's
                            // StartTime is `.metadata.creationTimestamp`).
                            for cell in cells.iter_mut() {
                                if cell.as_str().is_some_and(is_timestamp) {
                                    *cell = Value::Null;
                                }
                            }
                        }
                    }
                }
            }
            map.values_mut().for_each(strip_made_up);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_made_up),
        _ => {}
    }
}

/// Whether `s` is an RFC 3339 time as servers write them (`2026-11-28T17:31:31Z`).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Every CRD of the corpus as its two forms (kube's, versa's in the renamed group), for the
/// side-by-side benchmark (`bench_kube.rs`).
#[allow(dead_code, reason = "the test binary compares; the benchmark uses the pairs")]
pub fn corpus_pairs() -> Vec<(Value, Value)> {
    corpus().into_iter().map(|(file, crd)| pair(file, &crd)).map(|p| (p.kube, p.versa)).collect()
}

/// versa's refusal of a ResourceDefinition in the words kube uses for the same CRD: the kind
/// (`ResourceDefinition.versa.dev` is `CustomResourceDefinition.apiextensions.k8s.io`), and,
/// for a CRD of one version, the schema's path: kube validates its internal form, where a lone
/// version's schema is `spec.validation`.
fn as_crd_refusal(answer: Value, pair: &Pair) -> Value {
    let single = pair.kube["spec"]["versions"].as_array().is_some_and(|v| v.len() == 1);
    let mut text = answer["body"].to_string();
    text = text.replace("ResourceDefinition.versa.dev", "CustomResourceDefinition.apiextensions.k8s.io");
    text = text.replace(r#""kind":"ResourceDefinition""#, r#""kind":"CustomResourceDefinition""#);
    text = text.replace(r#""group":"versa.dev""#, r#""group":"apiextensions.k8s.io""#);
    if single {
        text = text.replace("spec.versions[0].schema.openAPIV3Schema", "spec.validation.openAPIV3Schema");
    }
    serde_json::from_str(&text).unwrap()
}

/// A value of the wrong type for a property of `schema`.
fn wrong_value(schema: &Value) -> Option<Value> {
    if schema["x-kubernetes-int-or-string"] == true || schema["x-kubernetes-preserve-unknown-fields"] == true {
        return None;
    }
    match schema["type"].as_str()? {
        "string" => Some(json!(12345)),
        "integer" | "number" | "boolean" | "object" | "array" => Some(json!("not-of-this-type")),
        _ => None,
    }
}

/// Objects generated from the storage version's schema (`versa_conversion::samples`), as a
/// client would send them: most valid (enums, bounds, required fields, formats, patterns kept),
/// some not. What each server does with them (defaulting, pruning, validation, CEL rules) is
/// compared.
const GENERATED: usize = 4;

fn generated(pair: &Pair, version: &str) -> Vec<Value> {
    let Ok(def) = versa_apiextensions::ResourceDefinition::from_document(&pair.kube) else { return Vec::new() };
    let schemas = versa_apiextensions::cel_conversion::lower_schemas(&def);
    let Some(schema) = schemas.get(version) else { return Vec::new() };
    versa_conversion::samples::generate_unchecked(&def, version, schema, GENERATED, pair.file.len() as u64)
}

/// The test requests for one definition: (label, body, query).
fn cases(pair: &Pair) -> Vec<(String, Value, &'static str)> {
    let spec = &pair.kube["spec"];
    let version = spec["versions"].as_array().unwrap().iter().find(|v| v["storage"] == true).unwrap();
    let kind = spec["names"]["kind"].as_str().unwrap();
    let api_version = format!("{}/{}", pair.group, version["name"].as_str().unwrap());
    let object = |name: &str| json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    let mut cases = vec![("minimal".to_owned(), object("minimal"), "")];
    for (i, mut o) in generated(pair, version["name"].as_str().unwrap()).into_iter().enumerate() {
        o["metadata"] = json!({"name": format!("generated-{i}")});
        cases.push((format!("generated object {i}"), o, "&fieldValidation=Strict"));
    }
    let schema = &version["schema"]["openAPIV3Schema"];
    let mut unknown = object("unknown");
    unknown["zzUnknown"] = json!(1);
    cases.push(("unknown field, strict".into(), unknown.clone(), "&fieldValidation=Strict"));
    cases.push(("unknown field, default".into(), unknown, ""));
    if let Some(props) = schema["properties"]["spec"]["properties"].as_object() {
        let mut empty = object("empty-spec");
        empty["spec"] = json!({});
        cases.push(("empty spec".into(), empty, ""));
        for (name, prop) in props.iter().take(12) {
            if let Some(bad) = wrong_value(prop) {
                let mut o = object(&format!(
                    "wrong-{}",
                    name.to_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "-")
                ));
                o["spec"] = json!({name: bad});
                cases.push((format!("spec.{name} of the wrong type"), o, ""));
            }
        }
    }
    cases
}

/// A real object's life on one server, in `group` (kube's, or the renamed one behind kube) —
/// created; where that succeeds, listed as a Table, applied server-side by a second manager,
/// read, patched (merge, JSON, a failing JSON patch test, strategic merge), updated (a label;
/// each wrongly typed property, dry run; `/status`), its `/scale` read, deleted: each step's
/// label and answer.
async fn life(
    client: &Client,
    cases: &[(String, Value, &'static str)],
    group: &str,
    version: &str,
    plural: &str,
    namespaced: bool,
) -> Vec<(String, Response)> {
    let base = |g: &str| collection(g, version, plural, namespaced);
    let mut minimal = cases[0].1.clone();
    minimal["apiVersion"] = json!(format!("{group}/{version}"));
    let created = client.post(&base(group), &minimal).await;
    let ok = created.status == 201;
    let mut steps = vec![("create".to_owned(), created)];
    if !ok {
        return steps;
    }
    let table = [("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
    steps.push(("list as Table".into(), client.get_with(&base(group), &table).await));
    let mut apply = json!({"apiVersion": minimal["apiVersion"], "kind": minimal["kind"],
                           "metadata": {"name": "minimal", "labels": {"diff": "applied"}}});
    if namespaced {
        apply["metadata"]["namespace"] = json!(NAMESPACE);
    }
    let query = "/minimal?fieldManager=diff&force=true";
    let ssa = "application/apply-patch+yaml";
    steps.push(("server-side apply".into(), client.patch(&format!("{}{query}", base(group)), ssa, &apply).await));
    let one = |rest: &str| format!("{}/minimal{rest}", base(group));
    steps.push(("get".into(), client.get(&one("")).await));
    for (label, content_type, patch) in [
        ("merge patch", "application/merge-patch+json", json!({"metadata": {"labels": {"diff": "merged"}}})),
        (
            "JSON patch",
            "application/json-patch+json",
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"diff": "patched"}}]),
        ),
        (
            "JSON patch that fails its test",
            "application/json-patch+json",
            json!([{"op": "test", "path": "/metadata/name", "value": "other"}]),
        ),
        ("strategic merge patch", "application/strategic-merge-patch+json", json!({"metadata": {}})),
    ] {
        steps.push((label.into(), client.patch(&one(""), content_type, &patch).await));
    }
    // Updates (PUT) of the object as read back: a label changed, then — dry run — each wrongly
    // typed spec property in turn (an update's validation), then the status.
    let read = client.get(&one("")).await.json();
    let put = async |change: &dyn Fn(&mut Value), rest: &str| {
        let mut o = read.clone();
        change(&mut o);
        client.put(&one(rest), &o).await
    };
    steps.push(("update".into(), put(&|o: &mut Value| o["metadata"]["labels"]["diff"] = json!("updated"), "").await));
    for (label, bad, _) in cases.iter().filter(|(l, _, _)| l.ends_with("of the wrong type")) {
        let spec = bad["spec"].clone();
        steps.push((
            format!("update with {label}"),
            put(&|o: &mut Value| o["spec"] = spec.clone(), "?dryRun=All").await,
        ));
    }
    let served = client.get(&format!("/apis/{group}/{version}")).await.json();
    let has = |sub: &str| {
        let name = format!("{plural}/{sub}");
        served["resources"].as_array().is_some_and(|r| r.iter().any(|r| r["name"] == name.as_str()))
    };
    if has("status") {
        steps.push(("update of /status".into(), put(&|o: &mut Value| o["status"] = json!({}), "/status").await));
    }
    if has("scale") {
        steps.push(("get /scale".into(), client.get(&one("/scale")).await));
    }
    steps.push(("delete".into(), client.delete(&one("")).await));
    steps
}

fn collection(group: &str, version: &str, plural: &str, namespaced: bool) -> String {
    if namespaced {
        format!("/apis/{group}/{version}/namespaces/{NAMESPACE}/{plural}")
    } else {
        format!("/apis/{group}/{version}/{plural}")
    }
}

/// Polls `f` (async) every 250 ms until it holds or `limit` passes.
async fn until(limit: Duration, mut f: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

/// Whether a definition's (or a CRD's) `Established` condition is true.
pub fn established(definition: &Value) -> bool {
    definition["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
}

/// Runs the whole comparison; returns the differences not in [`KNOWN`] (label, difference).
pub fn run(plane: &Plane) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(run_async(plane))
}

async fn run_async(plane: &Plane) -> Vec<String> {
    let client = plane.admin_client();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    client.post("/api/v1/namespaces", &ns).await;
    // Standalone versa, with the CRDs as they are (its `customresourcedefinitions` face).
    let dir = tempfile::tempdir().unwrap();
    let alone_process = versa_e2e::Versa::start(&dir.path().join("data"));
    let standalone = Client::admin(&alone_process.data_dir, &alone_process.address);
    standalone.post("/api/v1/namespaces", &ns).await;

    let pairs: Vec<Pair> = corpus().into_iter().chain(crafted()).map(|(file, crd)| pair(file, &crd)).collect();
    let mut compared = 0usize;
    // Requests both answered with success (the rest both refused, or differed).
    let mut succeeded = 0usize;
    let mut differences: Vec<(String, String)> = Vec::new();
    let mut accepted = Vec::new();
    for p in &pairs {
        let k = client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &p.kube).await;
        let v = client.post("/apis/versa.dev/v1/resourcedefinitions", &p.versa).await;
        let a = standalone.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &p.kube).await;
        compared += 2;
        let (ck, ca) = (comparable(&k, &p.group), comparable(&a, &p.group));
        // The refusal's paths in kube's internal terms, as for versa's ResourceDefinitions.
        if (k.status == 201) != (a.status == 201) || (k.status != 201 && ck["body"] != as_crd_refusal(ca, p)) {
            differences.push((
                format!("{}: definition create (standalone versa)", p.file),
                format!("kube {} {}\nstandalone versa {} {}", k.status, k.text(), a.status, a.text()),
            ));
        }
        let (ok_k, ok_v) = (k.status == 201, v.status == 201);
        if ok_k != ok_v || (!ok_k && comparable(&k, &p.group)["body"] != as_crd_refusal(comparable(&v, &p.group), p)) {
            differences.push((
                format!("{}: definition create", p.file),
                format!("kube {} {}\nversa {} {}", k.status, k.text(), v.status, v.text()),
            ));
        }
        if ok_k && ok_v {
            accepted.push(p);
        }
    }

    // Both served: Established, and the storage version answering through kube.
    let mut ready = Vec::new();
    for p in accepted {
        let name_k = p.kube["metadata"]["name"].as_str().unwrap();
        let name_v = p.versa["metadata"]["name"].as_str().unwrap();
        let spec = &p.kube["spec"];
        let version = spec["versions"].as_array().unwrap().iter().find(|v| v["storage"] == true).unwrap();
        let version = version["name"].as_str().unwrap();
        let plural = spec["names"]["plural"].as_str().unwrap();
        let namespaced = spec["scope"] == "Namespaced";
        let vgroup = format!("{}{SUFFIX}", p.group);
        let served = until(Duration::from_secs(180), async || {
            let k = client.get(&format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name_k}")).await;
            let v = client.get(&format!("/apis/versa.dev/v1/resourcedefinitions/{name_v}")).await;
            if !(established(&k.json()) && established(&v.json())) {
                return false;
            }
            let la = standalone.get(&collection(&p.group, version, plural, namespaced)).await;
            let lk = client.get(&collection(&p.group, version, plural, namespaced)).await;
            let lv = client.get(&collection(&vgroup, version, plural, namespaced)).await;
            lk.status == 200 && lv.status == 200 && la.status == 200
        })
        .await;
        if served {
            ready.push((p, version.to_owned(), plural.to_owned(), namespaced));
        } else {
            differences.push((format!("{}: serving", p.file), "not served by both within 180 s".into()));
        }
    }

    for (p, version, plural, namespaced) in &ready {
        let vgroup = format!("{}{SUFFIX}", p.group);
        let cases = cases(p);
        for (label, body, query) in &cases {
            let mut versa_body = body.clone();
            versa_body["apiVersion"] = json!(format!("{vgroup}/{version}"));
            let path_k = format!("{}?dryRun=All{query}", collection(&p.group, version, plural, *namespaced));
            let path_v = format!("{}?dryRun=All{query}", collection(&vgroup, version, plural, *namespaced));
            let k = client.post(&path_k, body).await;
            let v = client.post(&path_v, &versa_body).await;
            let a = standalone.post(&path_k, body).await;
            compared += 2;
            succeeded += usize::from(k.status < 300 && v.status < 300) + usize::from(k.status < 300 && a.status < 300);
            let (ck, cv, ca) = (comparable(&k, &p.group), comparable(&v, &p.group), comparable(&a, &p.group));
            if ck != cv {
                differences.push((format!("{}: {label}", p.file), format!("kube  {ck}\nversa {cv}")));
            }
            if ck != ca {
                differences.push((
                    format!("{}: {label} (standalone versa)", p.file),
                    format!("kube  {ck}\nstandalone versa {ca}"),
                ));
            }
        }
        // A real object's life where the minimal object is valid, on kube, behind kube and
        // standalone.
        let on_kube = life(&client, &cases, &p.group, version, plural, *namespaced).await;
        let behind = life(&client, &cases, &vgroup, version, plural, *namespaced).await;
        let alone = life(&standalone, &cases, &p.group, version, plural, *namespaced).await;
        for (server, steps) in [("versa", &behind), ("standalone versa", &alone)] {
            if steps.len() != on_kube.len() {
                differences.push((
                    format!("{}: life ({server})", p.file),
                    format!("kube took {} steps, {server} {}", on_kube.len(), steps.len()),
                ));
            }
            for ((label, k), (_, v)) in on_kube.iter().zip(steps.iter()) {
                compared += 1;
                succeeded += usize::from(k.status < 300 && v.status < 300);
                let (ck, cv) = (comparable(k, &p.group), comparable(v, &p.group));
                if ck != cv {
                    let label = if server == "versa" { label.clone() } else { format!("{label} ({server})") };
                    differences.push((format!("{}: {label}", p.file), format!("kube  {ck}\n{server} {cv}")));
                }
            }
        }
    }

    // VERSA_KUBE_DIFF_OUT names a file to write every difference to, explained or not.
    if let Some(out) = std::env::var_os("VERSA_KUBE_DIFF_OUT") {
        let all: Vec<String> = differences.iter().map(|(label, diff)| format!("{label}\n{diff}\n")).collect();
        std::fs::write(out, all.join("\n")).unwrap();
    }
    let unexplained: Vec<String> = differences
        .iter()
        .filter(|(label, diff)| !KNOWN.iter().any(|(l, d, _)| label.contains(l) && diff.contains(d)))
        .map(|(label, diff)| format!("{label}\n{diff}"))
        .collect();
    let by_kind: BTreeMap<&str, usize> = differences.iter().fold(BTreeMap::new(), |mut m, (label, _)| {
        *m.entry(label.rsplit(": ").next().unwrap_or("")).or_default() += 1;
        m
    });
    println!(
        "differential: {compared} requests compared over {} definitions ({} served by both; {succeeded} requests succeeded on both), {} differed ({} known): {by_kind:?}",
        pairs.len(),
        ready.len(),
        differences.len(),
        differences.len() - unexplained.len()
    );
    unexplained
}
