//! A kopf operator against standalone versa (issue 21), end to end: the real `versa serve`, the
//! real kubectl, and kopf from PyPI (pinned by `hack/install-deps.sh`, found through
//! `VERSA_KOPF_PYTHONPATH`, which `hack/test.sh` sets) running a small operator as a child
//! process, logged in with versa's admin kubeconfig (its client certificate).
//!
//! The operator's create, update and delete handlers each append a line to a file; the create
//! and update handlers write `status`, the create handler posts a v1 Event; kopf's finalizer
//! holds each object until its delete handler has run — also when `kubectl delete namespace`
//! deletes the objects, before the namespace goes. Two instances with kopf's peering (issue
//! 37): the lower priority stays paused while the higher lives, and takes over when it dies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use versa_e2e::{Versa, ok};

/// Every wait is bounded by this; it only ends a broken run (nothing is asserted on time).
const BOUND: Duration = Duration::from_secs(60);

const FINALIZER: &str = "kopf.zalando.org/KopfFinalizerMarker";

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.kopf.example.com
spec:
  group: kopf.example.com
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: string
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

/// The operator. Each handler appends `<event> <namespace>/<name> <spec.size>` to
/// `$GADGET_LOG`; the delete handler adds whether kopf's finalizer was holding the object
/// (`held=True`: it is marked for deletion and still there, with the finalizer).
const OPERATOR: &str = r#"import os
import kopf

LOG = os.environ['GADGET_LOG']
FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'


def log(line):
    with open(LOG, 'a') as f:
        f.write(line + '\n')


@kopf.on.startup()
def configure(settings, **_):
    # How long a peer that stopped renewing counts as alive (kopf's default: 60 s).
    settings.peering.lifetime = int(os.environ.get('PEERING_LIFETIME', '60'))


@kopf.on.create('kopf.example.com', 'v1', 'gadgets')
def created(body, spec, name, namespace, patch, **_):
    log(f"create {namespace}/{name} {spec.get('size')}")
    patch.status['phase'] = f"created-{spec.get('size')}"
    kopf.info(body, reason='Made', message=f"made {spec.get('size')}")
    return {'size': spec.get('size')}


@kopf.on.update('kopf.example.com', 'v1', 'gadgets')
def updated(spec, name, namespace, patch, **_):
    log(f"update {namespace}/{name} {spec.get('size')}")
    patch.status['phase'] = f"updated-{spec.get('size')}"


@kopf.on.delete('kopf.example.com', 'v1', 'gadgets')
def deleted(spec, meta, name, namespace, **_):
    held = bool(meta.get('deletionTimestamp')) and FINALIZER in (meta.get('finalizers') or [])
    log(f"delete {namespace}/{name} {spec.get('size')} held={held}")
"#;

/// The directory kopf and its dependencies are installed in.
fn kopf_pythonpath() -> String {
    match std::env::var("VERSA_KOPF_PYTHONPATH") {
        Ok(path) if !path.is_empty() => path,
        _ => panic!(
            "VERSA_KOPF_PYTHONPATH is not set: run the tests through hack/test.sh, or set it to the \
             output of `bash hack/install-deps.sh --kopf-path` (which installs the pinned kopf)"
        ),
    }
}

/// `python3 -m kopf run` of the operator; killed when dropped (also when the test panics).
struct Kopf {
    child: Child,
    output: PathBuf,
    handled: PathBuf,
}

impl Kopf {
    fn start(versa: &Versa, dir: &Path, pythonpath: &str) -> Kopf {
        Kopf::start_as(versa, dir, pythonpath, "kopf", &["--standalone"])
    }

    /// An instance named `name` (its output in `<name>.out`, its handlers' lines in
    /// `<name>.log`), with more `kopf run` flags.
    fn start_as(versa: &Versa, dir: &Path, pythonpath: &str, name: &str, flags: &[&str]) -> Kopf {
        let operator = dir.join("operator.py");
        std::fs::write(&operator, OPERATOR).unwrap();
        let output = dir.join(format!("{name}.out"));
        let handled = dir.join(format!("{name}.log"));
        std::fs::write(&handled, "").unwrap();
        let out = File::create(&output).unwrap();
        let child = Command::new("python3")
            .args(["-m", "kopf", "run", "--all-namespaces", "--verbose"])
            .args(flags)
            .arg(&operator)
            .current_dir(dir)
            .env("PYTHONPATH", pythonpath)
            .env("PYTHONUNBUFFERED", "1")
            .env("KUBECONFIG", versa.kubeconfig())
            .env("GADGET_LOG", &handled)
            .env("PEERING_LIFETIME", "3")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("python3 -m kopf (PYTHONPATH={pythonpath}): {e}"));
        Kopf { child, output, handled }
    }

    /// The lines the handlers wrote.
    fn handled(&self) -> Vec<String> {
        std::fs::read_to_string(&self.handled).unwrap().lines().map(str::to_owned).collect()
    }

    /// What kopf printed, for failure messages.
    fn output(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    /// Waits until `done` holds; a run that never gets there fails with kopf's own account.
    fn wait<T>(&mut self, what: &str, mut done: impl FnMut(&Kopf) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(t) = done(self) {
                return t;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("kopf exited ({status}) before {what}:\n{}", self.output());
            }
            if start.elapsed() > BOUND {
                panic!(
                    "not within {BOUND:?}: {what}\nhandled: {:?}\nkopf's output:\n{}",
                    self.handled(),
                    self.output()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the handlers wrote `line`.
    fn wait_handled(&mut self, line: &str) {
        self.wait(&format!("a handler logs {line:?}"), |k| k.handled().iter().any(|l| l == line).then_some(()));
    }
}

impl Drop for Kopf {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn gadget(dir: &Path, name: &str, size: &str) -> String {
    write(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "apiVersion: kopf.example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\n  namespace: team\nspec:\n  size: {size}\n"
        ),
    )
}

/// The object as JSON, or `None` when it is not there.
fn get(versa: &Versa, name: &str) -> Option<Value> {
    let out = versa.kubectl(&["get", "gadget", name, "-n", "team", "-o", "json", "--ignore-not-found"]);
    let text = ok(out);
    (!text.trim().is_empty()).then(|| serde_json::from_str(&text).unwrap())
}

/// kubectl, retried while it fails with `retry_on` in its error (discovery of a resource that
/// was served a moment ago).
fn kubectl_settled(versa: &Versa, args: &[&str], retry_on: &str) -> String {
    let start = Instant::now();
    loop {
        let out = versa.kubectl(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            return String::from_utf8(out.stdout).unwrap();
        }
        assert!(stderr.contains(retry_on) && start.elapsed() < BOUND, "kubectl {args:?}: {stderr}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn kopf_operator_handles_creates_updates_deletes_and_namespace_deletion() {
    let pythonpath = kopf_pythonpath();
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path();
    let versa = Versa::start(files);

    ok(versa.kubectl(&["apply", "-f", &write(files, "crd.yaml", CRD)]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/gadgets.kopf.example.com", "--timeout=60s"]));
    let ns = write(files, "team.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n");
    assert_eq!(ok(versa.kubectl(&["apply", "-f", &ns])).trim(), "namespace/team created");

    let mut kopf = Kopf::start(&versa, files, &pythonpath);

    // Create: the handler runs, kopf writes its status (the handler's patch and its return
    // value under the handler's name) and puts its finalizer on the object.
    let out = kubectl_settled(&versa, &["apply", "-f", &gadget(files, "g1", "small")], "no matches for kind");
    assert_eq!(out.trim(), "gadget.kopf.example.com/g1 created");
    kopf.wait_handled("create team/g1 small");
    let g1 = kopf.wait("g1's status shows the create handler's work", |_| {
        get(&versa, "g1").filter(|g| g["status"]["phase"] == "created-small")
    });
    assert_eq!(g1["status"]["created"]["size"], "small", "{g1}");
    let finalizers = g1["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
    assert!(finalizers.iter().any(|f| f == FINALIZER), "{g1}");
    assert!(g1["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"].is_string(), "{g1}");

    // The create handler's Event, as kopf posts it (no apiVersion or kind in the body).
    let event = kopf.wait("the create handler's Event", |_| {
        let events: Value =
            serde_json::from_str(&ok(versa.kubectl(&["get", "events", "-n", "team", "-o", "json"]))).unwrap();
        events["items"].as_array().unwrap().iter().find(|e| e["reason"] == "Made").cloned()
    });
    assert_eq!(event["message"], "made small", "{event}");
    assert_eq!((&event["involvedObject"]["kind"], &event["involvedObject"]["name"]), (&"Gadget".into(), &"g1".into()));
    assert_eq!(event["involvedObject"]["uid"], g1["metadata"]["uid"], "{event}");

    // Update: a change of spec reaches the update handler, which writes status again.
    let out = ok(versa.kubectl(&[
        "patch",
        "gadget",
        "g1",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":"large"}}"#,
    ]));
    assert_eq!(out.trim(), "gadget.kopf.example.com/g1 patched");
    kopf.wait_handled("update team/g1 large");
    let g1 = kopf.wait("g1's status shows the update handler's work", |_| {
        get(&versa, "g1").filter(|g| g["status"]["phase"] == "updated-large")
    });
    assert!(g1["metadata"]["finalizers"].as_array().unwrap().iter().any(|f| f == FINALIZER), "{g1}");

    // Delete: the finalizer holds the object until the delete handler has run; then it goes.
    let out = ok(versa.kubectl(&["delete", "gadget", "g1", "-n", "team", "--timeout=60s"]));
    assert_eq!(out.trim(), "gadget.kopf.example.com \"g1\" deleted");
    assert!(kopf.handled().iter().any(|l| l == "delete team/g1 large held=True"), "{:?}", kopf.handled());
    assert_eq!(get(&versa, "g1"), None);

    // Two more, then their namespace: the namespace's deletion deletes them, kopf's finalizer
    // holds each until its delete handler has run, and the namespace goes once they have.
    for name in ["g2", "g3"] {
        ok(versa.kubectl(&["apply", "-f", &gadget(files, name, name)]));
        kopf.wait(&format!("{name} is handled"), |_| {
            get(&versa, name).filter(|g| g["status"]["phase"] == format!("created-{name}").as_str())
        });
    }
    ok(versa.kubectl(&["delete", "namespace", "team", "--wait=false"]));
    kopf.wait_handled("delete team/g2 g2 held=True");
    kopf.wait_handled("delete team/g3 g3 held=True");
    kopf.wait("the namespace's gadgets are gone", |_| {
        let out = ok(versa.kubectl(&["get", "gadgets", "-n", "team", "-o", "name"]));
        out.trim().is_empty().then_some(())
    });
    ok(versa.kubectl(&["wait", "--for=delete", "namespace/team", "--timeout=60s"]));
    let left = ok(versa.kubectl(&["get", "namespaces", "-o", "name"]));
    assert!(!left.lines().any(|l| l == "namespace/team"), "{left}");

    // Each handler ran once per object (g2's and g3's deletions in either order).
    let mut handled = kopf.handled();
    handled[5..].sort();
    assert_eq!(
        handled,
        [
            "create team/g1 small",
            "update team/g1 large",
            "delete team/g1 large held=True",
            "create team/g2 g2",
            "create team/g3 g3",
            "delete team/g2 g2 held=True",
            "delete team/g3 g3 held=True",
        ]
    );
    let output = kopf.output();
    let complaints: Vec<&str> = output.lines().filter(|l| l.contains("[WARNING") || l.contains("[ERROR")).collect();
    assert!(complaints.is_empty(), "kopf warned:\n{}\n\nkopf's output:\n{output}", complaints.join("\n"));
    drop(kopf);
    assert!(versa.stop(), "versa did not exit cleanly");
}

/// kopf's peering definition (as its documentation gives it): operators record themselves in
/// the `status` of a ClusterKopfPeering, and the lower priority pauses while a higher one lives.
const PEERING_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterkopfpeerings.kopf.dev
spec:
  scope: Cluster
  group: kopf.dev
  names:
    kind: ClusterKopfPeering
    plural: clusterkopfpeerings
    singular: clusterkopfpeering
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
---
apiVersion: kopf.dev/v1
kind: ClusterKopfPeering
metadata:
  name: gadgets
"#;

/// Two kopf operators with peering: the one of lower priority stays paused while the other runs
/// the handlers; killed, the higher one stops renewing, and once its lifetime is over the other
/// resumes and handles what comes next.
#[test]
fn kopf_peering_pauses_the_lower_priority_and_resumes_it() {
    let pythonpath = kopf_pythonpath();
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path();
    let versa = Versa::start(&files.join("data"));
    ok(versa.kubectl(&["apply", "-f", &write(files, "crd.yaml", CRD)]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/gadgets.kopf.example.com"]));
    ok(versa.kubectl(&["create", "namespace", "team"]));
    ok(versa.kubectl(&[
        "apply",
        "-f",
        &write(files, "crd-peering.yaml", &PEERING_CRD[..PEERING_CRD.find("---").unwrap()]),
    ]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/clusterkopfpeerings.kopf.dev"]));
    kubectl_settled(&versa, &["apply", "-f", &write(files, "peering.yaml", PEERING_CRD)], "the server could not find");

    let mut high = Kopf::start_as(&versa, files, &pythonpath, "high", &["--peering=gadgets", "--priority=200"]);
    high.wait("the high one renews its peering", |k| {
        k.output().contains("Keep-alive in 'gadgets' cluster-wide: ok").then_some(())
    });
    let mut low = Kopf::start_as(&versa, files, &pythonpath, "low", &["--peering=gadgets", "--priority=100"]);
    // kopf starts with its handlers paused and resumes only once no live peer outranks it.
    low.wait("the low one sees the peering", |k| {
        k.output().contains("Keep-alive in 'gadgets' cluster-wide: ok").then_some(())
    });

    ok(versa.kubectl(&["apply", "-f", &gadget(files, "one", "s")]));
    high.wait_handled("create team/one s");
    assert!(low.handled().is_empty(), "the paused operator handled {:?}", low.handled());
    assert!(!low.output().contains("Resuming operations"), "{}", low.output());
    let peering: Value =
        serde_json::from_str(&ok(versa.kubectl(&["get", "clusterkopfpeering", "gadgets", "-o", "json"]))).unwrap();
    let peers = peering["status"].as_object().unwrap();
    let priorities: Vec<i64> = peers.values().filter_map(|p| p["priority"].as_i64()).collect();
    assert!(priorities.contains(&200) && priorities.contains(&100), "{peering}");

    let _ = high.child.kill();
    let _ = high.child.wait();
    low.wait("the low one resumes", |k| k.output().contains("Resuming operations after the pause").then_some(()));
    ok(versa.kubectl(&["apply", "-f", &gadget(files, "two", "m")]));
    low.wait_handled("create team/two m");
}
