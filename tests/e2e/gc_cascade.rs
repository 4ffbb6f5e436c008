//! One cascading-deletion scenario, played step by step with kubectl against a cluster — the
//! real kube-apiserver with kube-controller-manager's garbage collector (`kube.rs`), or
//! standalone versa with its own (`gc.rs`) — and judged by one data file,
//! `data/gc_cascade.yaml`, which states kube's results: after each step, every object of the
//! scenario still there (its owners, finalizers, whether it is being deleted) and the
//! collector's Warning Events. `VERSA_GC_RECORD=1` on the kube run writes the file from what
//! kube did (each step's state once it stops changing).
//!
//! Owners and dependents are of several kinds: a namespaced custom resource (`Widget`), a
//! cluster-scoped one (`Realm`) and ConfigMaps. Steps: foreground deletion (the owner waits with
//! `foregroundDeletion` while a blocking dependent holds a finalizer of its own), orphaning (a
//! cluster-scoped owner), a restart while the foreground owner waits (standalone only: kube's
//! collector is not restarted), background deletion through a chain, a deletecollection with
//! `propagationPolicy=Orphan`, and references that cannot be (an owner in another namespace, a
//! namespaced owner of a cluster-scoped object).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The cluster the scenario runs against.
pub trait Cluster {
    /// kubectl as the admin, with `stdin` fed when given: stdout, or stderr as the error.
    fn kubectl(&mut self, args: &[&str], stdin: Option<&str>) -> Result<String, String>;
    /// Stops and starts the server (its collector included), when the cluster can.
    fn restart(&mut self);
}

pub const GROUP: &str = "gc.e2e.example.com";
pub const NS: &str = "gc-e2e";
pub const OTHER_NS: &str = "gc-e2e-other";
const HOLD: &str = "gc.e2e.example.com/hold";

/// The expected results: `data/gc_cascade.yaml`.
pub fn data_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/data/gc_cascade.yaml")
}

/// Plays the scenario; checks each step against the data file, or records kube's results into
/// it (`record`).
pub fn run(c: &mut dyn Cluster, record: bool) {
    let expected: Vec<Value> = if record {
        Vec::new()
    } else {
        let text = std::fs::read_to_string(data_path()).unwrap();
        let doc: Value = serde_saphyr::from_str(&text).unwrap();
        doc["steps"].as_array().unwrap().clone()
    };
    let mut s = Scenario { c, uids: BTreeMap::new(), expected, recorded: Vec::new(), record, step: 0 };
    s.define();

    // The owners and their dependents.
    s.create(widget("fg", NS, vec![], vec![]));
    let fg = s.owner_ref("widgets", Some(NS), "fg", true);
    let fg_free = s.owner_ref("widgets", Some(NS), "fg", false);
    s.create(configmap("fg-cm", NS, vec![fg.clone()]));
    s.create(widget("fg-child", NS, vec![fg.clone()], vec![HOLD]));
    s.create(configmap("fg-free", NS, vec![fg_free]));

    s.create(realm("gc-e2e-orph", vec![], vec![HOLD]));
    let orph = s.owner_ref("realms", None, "gc-e2e-orph", true);
    s.create(widget("orph-w", NS, vec![orph.clone()], vec![]));
    s.create(configmap("orph-cm", NS, vec![orph.clone()]));
    s.create(realm("gc-e2e-orph-r", vec![orph], vec![]));

    s.create(configmap("bg", NS, vec![]));
    let bg = s.owner_ref("configmaps", Some(NS), "bg", false);
    s.create(widget("bg-w", NS, vec![bg.clone()], vec![]));
    s.create(configmap("bg-cm", NS, vec![bg]));
    let bg_w = s.owner_ref("widgets", Some(NS), "bg-w", true);
    s.create(widget("bg-w2", NS, vec![bg_w], vec![]));

    let mut col = configmap("col", NS, vec![]);
    col["metadata"]["labels"] = json!({"gc-e2e": "collection"});
    s.create(col);
    let col = s.owner_ref("configmaps", Some(NS), "col", false);
    s.create(widget("col-w", NS, vec![col], vec![]));
    s.create(configmap("keep", NS, vec![]));
    s.check("created");

    s.kubectl(&["-n", NS, "delete", &format!("widgets.{GROUP}"), "fg", "--cascade=foreground", "--wait=false"]);
    s.check("foreground: the owner waits for its blocking dependent");

    s.kubectl(&["delete", &format!("realms.{GROUP}"), "gc-e2e-orph", "--cascade=orphan", "--wait=false"]);
    s.check("orphan: the dependents lose their reference, the owner its orphan finalizer");

    s.c.restart();
    s.check("after a restart: nothing changed");

    let unhold = json!({"metadata": {"finalizers": null}}).to_string();
    s.kubectl(&["-n", NS, "patch", &format!("widgets.{GROUP}"), "fg-child", "--type=merge", "-p", &unhold]);
    s.check("foreground: the blocking dependent gone, the owner goes");

    s.kubectl(&["patch", &format!("realms.{GROUP}"), "gc-e2e-orph", "--type=merge", "-p", &unhold]);
    s.check("orphan: the owner released, the orphans stay");

    s.kubectl(&["-n", NS, "delete", "configmap", "bg"]);
    s.check("background: dependents and theirs go");

    let path = format!("/api/v1/namespaces/{NS}/configmaps?labelSelector=gc-e2e%3Dcollection&propagationPolicy=Orphan");
    s.kubectl(&["delete", "--raw", &path]);
    s.check("deletecollection with propagationPolicy=Orphan");

    let keep = s.owner_ref("configmaps", Some(NS), "keep", false);
    s.create(widget("stray", OTHER_NS, vec![keep.clone()], vec![]));
    s.create(realm("gc-e2e-bad", vec![keep], vec![]));
    s.check("references that cannot be");

    if record {
        let doc = json!({
            "about": "kube v1.36.3's results (kube-apiserver + kube-controller-manager's garbagecollector) for tests/e2e/gc_cascade.rs, recorded by tests/e2e/kube.rs with VERSA_GC_RECORD=1",
            "steps": s.recorded,
        });
        std::fs::write(data_path(), serde_saphyr::to_string(&doc).unwrap()).unwrap();
    }
}

struct Scenario<'a> {
    c: &'a mut dyn Cluster,
    /// Every uid seen → `Kind/name`, so that messages naming uids compare.
    uids: BTreeMap<String, String>,
    expected: Vec<Value>,
    recorded: Vec<Value>,
    record: bool,
    step: usize,
}

impl Scenario<'_> {
    fn kubectl(&mut self, args: &[&str]) -> String {
        self.c.kubectl(args, None).unwrap_or_else(|e| panic!("kubectl {}: {e}", args.join(" ")))
    }

    fn define(&mut self) {
        for (plural, kind, scope) in [("widgets", "Widget", "Namespaced"), ("realms", "Realm", "Cluster")] {
            let crd = json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.{GROUP}")},
                "spec": {"group": GROUP, "scope": scope,
                         "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                         "versions": [{"name": "v1", "served": true, "storage": true,
                                       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
            });
            self.c.kubectl(&["apply", "-f", "-"], Some(&crd.to_string())).unwrap();
            self.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("crd/{plural}.{GROUP}")]);
        }
        for ns in [NS, OTHER_NS] {
            self.kubectl(&["create", "namespace", ns]);
        }
        // kube's collector learns new resources from discovery, every 30 seconds: first a
        // dependent of each kind, collected, proves it follows both.
        self.create(realm("gc-e2e-probe", vec![], vec![]));
        let probe = self.owner_ref("realms", None, "gc-e2e-probe", false);
        self.create(widget("probe-w", NS, vec![probe.clone()], vec![]));
        self.create(realm("gc-e2e-probe-r", vec![probe], vec![]));
        self.kubectl(&["delete", &format!("realms.{GROUP}"), "gc-e2e-probe"]);
        let started = Instant::now();
        loop {
            let left = self.kubectl(&["get", &format!("realms.{GROUP},widgets.{GROUP}"), "-A", "-o", "name"]);
            if left.trim().is_empty() {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(180), "the probes were not collected: {left}");
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn create(&mut self, obj: Value) {
        // kubectl's discovery of a new definition may lag a moment: try again briefly.
        let started = Instant::now();
        loop {
            match self.c.kubectl(&["create", "-f", "-"], Some(&obj.to_string())) {
                Ok(_) => return,
                Err(e) if started.elapsed() < Duration::from_secs(30) && e.contains("ensure CRDs are installed") => {
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => panic!("creating {obj}: {e}"),
            }
        }
    }

    /// A reference to the object `name` of `resource`.
    fn owner_ref(&mut self, resource: &str, ns: Option<&str>, name: &str, block: bool) -> Value {
        let resource = if resource == "configmaps" { resource.to_owned() } else { format!("{resource}.{GROUP}") };
        let mut args = vec!["get", resource.as_str(), name, "-o", "json"];
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        let obj: Value = serde_json::from_str(&self.kubectl(&args)).unwrap();
        let mut r = json!({
            "apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": name, "uid": obj["metadata"]["uid"],
        });
        if block {
            r["blockOwnerDeletion"] = json!(true);
        }
        r
    }

    /// Everything of the scenario now: objects by `Kind/namespace/name`, and the collector's
    /// events.
    fn observe(&mut self) -> Value {
        let mut objects = BTreeMap::new();
        let lists = [
            vec!["get".to_owned(), format!("widgets.{GROUP},configmaps"), "-A".into(), "-o".into(), "json".into()],
            vec!["get".to_owned(), format!("realms.{GROUP}"), "-o".into(), "json".into()],
        ];
        let mut items = Vec::new();
        for args in &lists {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let list: Value = serde_json::from_str(&self.kubectl(&args)).unwrap();
            items.extend(list["items"].as_array().unwrap().iter().cloned());
        }
        let ours = |o: &Value| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
            let name = o["metadata"]["name"].as_str().unwrap_or("");
            ns == NS || ns == OTHER_NS || name.starts_with("gc-e2e-")
        };
        for o in items.iter().filter(|o| ours(o)) {
            let kind = o["kind"].as_str().unwrap();
            let name = o["metadata"]["name"].as_str().unwrap();
            if kind == "ConfigMap" && name == "kube-root-ca.crt" {
                continue;
            }
            let id = match o["metadata"]["namespace"].as_str() {
                Some(ns) => format!("{kind}/{ns}/{name}"),
                None => format!("{kind}/{name}"),
            };
            self.uids.insert(o["metadata"]["uid"].as_str().unwrap().to_owned(), id.clone());
            let mut state = serde_json::Map::new();
            if let Some(refs) = o["metadata"]["ownerReferences"].as_array() {
                let owners: Vec<Value> = refs
                    .iter()
                    .map(|r| {
                        let block = if r["blockOwnerDeletion"] == json!(true) { " (blocking)" } else { "" };
                        json!(format!("{}/{}{block}", r["kind"].as_str().unwrap(), r["name"].as_str().unwrap()))
                    })
                    .collect();
                state.insert("owners".into(), json!(owners));
            }
            if let Some(f) = o["metadata"]["finalizers"].as_array().filter(|f| !f.is_empty()) {
                state.insert("finalizers".into(), json!(f));
            }
            if o["metadata"]["deletionTimestamp"].is_string() {
                state.insert("deleting".into(), json!(true));
            }
            objects.insert(id, Value::Object(state));
        }
        let events: Value = serde_json::from_str(&self.kubectl(&["get", "events", "-A", "-o", "json"])).unwrap();
        let mut seen = Vec::new();
        for e in events["items"].as_array().unwrap() {
            if e["source"]["component"] != "garbage-collector-controller" {
                continue;
            }
            let involved = &e["involvedObject"];
            let name = involved["name"].as_str().unwrap_or("");
            let ns = involved["namespace"].as_str().unwrap_or("");
            if !(ns == NS || ns == OTHER_NS || name.starts_with("gc-e2e-")) {
                continue;
            }
            let mut message = e["message"].as_str().unwrap_or("").to_owned();
            for (uid, id) in &self.uids {
                message = message.replace(uid.as_str(), &format!("<uid of {id}>"));
            }
            seen.push(json!(format!(
                "{} {}/{}: {} {}: {}",
                e["metadata"]["namespace"].as_str().unwrap_or(""),
                involved["kind"].as_str().unwrap_or(""),
                name,
                e["type"].as_str().unwrap_or(""),
                e["reason"].as_str().unwrap_or(""),
                message
            )));
        }
        seen.sort_by_key(|v| v.to_string());
        seen.dedup();
        json!({"objects": objects, "events": seen})
    }

    /// After a step: the state kube reached (recording), or the one the data file states,
    /// waited for and then compared.
    fn check(&mut self, step: &str) {
        let index = self.step;
        self.step += 1;
        if self.record {
            // Settled: the same state three polls in a row.
            let mut last = self.observe();
            let mut same = 0;
            while same < 3 {
                std::thread::sleep(Duration::from_secs(1));
                let now = self.observe();
                if now == last {
                    same += 1;
                } else {
                    same = 0;
                    last = now;
                }
            }
            self.recorded.push(json!({"step": step, "objects": last["objects"], "events": last["events"]}));
            return;
        }
        let want =
            self.expected.get(index).cloned().unwrap_or_else(|| panic!("no step {index} ({step}) in the data file"));
        assert_eq!(want["step"], json!(step), "the data file's steps are out of order");
        let want = json!({"objects": want["objects"], "events": want["events"]});
        let started = Instant::now();
        loop {
            let got = self.observe();
            if got == want {
                return;
            }
            if started.elapsed() > Duration::from_secs(60) {
                panic!(
                    "step {step:?}: expected\n{}\ngot\n{}",
                    serde_json::to_string_pretty(&want).unwrap(),
                    serde_json::to_string_pretty(&got).unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn meta(name: &str, ns: Option<&str>, owners: Vec<Value>, finalizers: Vec<&str>) -> Value {
    let mut m = json!({"name": name});
    if let Some(ns) = ns {
        m["namespace"] = json!(ns);
    }
    if !owners.is_empty() {
        m["ownerReferences"] = json!(owners);
    }
    if !finalizers.is_empty() {
        m["finalizers"] = json!(finalizers);
    }
    m
}

fn widget(name: &str, ns: &str, owners: Vec<Value>, finalizers: Vec<&str>) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": meta(name, Some(ns), owners, finalizers)})
}

fn realm(name: &str, owners: Vec<Value>, finalizers: Vec<&str>) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Realm", "metadata": meta(name, None, owners, finalizers)})
}

fn configmap(name: &str, ns: &str, owners: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, Some(ns), owners, vec![]), "data": {"k": "v"}})
}
