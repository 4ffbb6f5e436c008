//! Standalone versa judged by real operators (issue 37): a controller-runtime operator
//! (`hack/operator`, built here against the pinned controller-runtime v0.24.1) reconciles
//! Parents into owned Children and writes their status, two instances elect one leader on a
//! Lease and hand over when it is killed, and deleting a Parent deletes its Children (the
//! garbage collector); the operator's own envtest suite runs unchanged against a running versa
//! (envtest's `UseExistingCluster` path). A kube-rs operator (a `Controller` that `owns()`
//! Children, kube-rs' finalizer helper, a Lease-based election) does the same.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use versa_e2e::{Printing, Versa, go_program, ok, wait_for};

fn operator_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/operator")
}

fn get(versa: &Versa, args: &[&str]) -> Result<Value, String> {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    let out = versa.kubectl(&args);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// The names of the Children in `default`.
fn children(versa: &Versa) -> Vec<String> {
    let list = get(versa, &["children.ops.example.com"]).unwrap();
    list["items"].as_array().unwrap().iter().map(|c| c["metadata"]["name"].as_str().unwrap().to_owned()).collect()
}

/// An operator instance with leader election on.
fn operator(bin: &Path, kubeconfig: &Path, id: &str) -> Printing {
    Printing::start(
        Command::new(bin).args(["--id", id, "--leader-elect"]).env("KUBECONFIG", kubeconfig).stderr(Stdio::null()),
    )
}

/// Waits until Parent `name` has `n` Children and says so in its status.
fn reconciled(versa: &Versa, name: &str, n: usize) {
    wait_for(&format!("{name} with {n} children"), Duration::from_secs(60), || {
        let parent = get(versa, &["parent.ops.example.com", name])?;
        let ready = parent["status"]["ready"].as_u64();
        let observed = parent["status"]["observedGeneration"].as_u64();
        let names = children(versa);
        match (ready, observed) {
            (Some(r), Some(g))
                if r == n as u64 && Some(g) == parent["metadata"]["generation"].as_u64() && names.len() == n =>
            {
                Ok(())
            }
            _ => Err(format!("status {}, children {names:?}", parent["status"])),
        }
    });
}

/// A standalone versa (in a temporary directory) with the operator's two definitions
/// Established.
fn versa_with_the_operators_crds() -> (tempfile::TempDir, Versa) {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let crds = operator_dir().join("crds");
    ok(versa.kubectl(&["apply", "-f", crds.to_str().unwrap()]));
    ok(versa.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/parents.ops.example.com",
        "crd/children.ops.example.com",
    ]));
    (dir, versa)
}

#[test]
fn a_controller_runtime_operator_reconciles_elects_and_hands_over() {
    let bin = go_program("operator", false);
    let (dir, versa) = versa_with_the_operators_crds();
    let kubeconfig = versa.kubeconfig();

    let mut first = operator(&bin, &kubeconfig, "first");
    first.wait_for("first leading", |l| l == "leading first");
    let second = operator(&bin, &kubeconfig, "second");
    let lease = get(&versa, &["lease", "ops-example-com-operator"]).unwrap();
    let first_holder = lease["spec"]["holderIdentity"].as_str().unwrap().to_owned();

    ok(versa.kubectl_file(
        "apply",
        dir.path(),
        "p1",
        "apiVersion: ops.example.com/v1\nkind: Parent\nmetadata: {name: p1, namespace: default}\nspec: {children: 2}\n",
    ));
    reconciled(&versa, "p1", 2);
    let child = get(&versa, &["child.ops.example.com", "p1-0"]).unwrap();
    let reference = &child["metadata"]["ownerReferences"][0];
    assert_eq!((reference["kind"].as_str(), reference["controller"].as_bool()), (Some("Parent"), Some(true)));
    assert_eq!(reference["blockOwnerDeletion"], true);

    // The leader killed: the other takes the Lease over and goes on reconciling.
    first.kill();
    second.wait_for("second leading", |l| l == "leading second");
    let lease = get(&versa, &["lease", "ops-example-com-operator"]).unwrap();
    assert_ne!(lease["spec"]["holderIdentity"].as_str().unwrap(), first_holder);
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    ok(versa.kubectl(&["patch", "parent.ops.example.com", "p1", "--type=merge", "-p", r#"{"spec":{"children":3}}"#]));
    reconciled(&versa, "p1", 3);

    // The Parent deleted: the garbage collector deletes its Children.
    ok(versa.kubectl(&["delete", "parent.ops.example.com", "p1"]));
    wait_for("p1's children gone", Duration::from_secs(60), || match children(&versa) {
        names if names.is_empty() => Ok(()),
        names => Err(format!("{names:?}")),
    });
}

#[test]
fn the_operators_envtest_suite_runs_against_versa() {
    let bin = go_program("operator", true);
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let out = Command::new(bin)
        .arg("-test.v")
        .env("KUBECONFIG", versa.kubeconfig())
        .current_dir(operator_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("--- PASS").count(), 2, "{stdout}");
}

/// A kube-rs operator, as its users write one: `kube::runtime::Controller` for Parents that
/// `owns()` their Children, a finalizer (`kube::runtime::finalizer`) whose cleanup records the
/// Parent in a ConfigMap, and a Lease-based leader election (kube-rs has none of its own, so
/// operators hold a `coordination.k8s.io/v1` Lease as client-go's elector does).
mod kube_rs {
    use std::sync::Arc;
    use std::time::Duration;

    use futures_util::StreamExt as _;
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::Timestamp;
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams};
    use kube::runtime::controller::{Action, Controller};
    use kube::runtime::finalizer::{Event, finalizer};
    use kube::runtime::watcher;
    use kube::{Client, Resource as _, ResourceExt as _};
    use serde_json::json;

    pub const FINALIZER: &str = "ops.example.com/cleanup";
    const LEASE: &str = "ops-example-com-kube-rs";
    const LEASE_SECONDS: i32 = 3;

    pub fn resource(kind: &str) -> ApiResource {
        let plural = if kind == "Child" { "children" } else { "parents" };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ops.example.com", "v1", kind), plural)
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub struct Failed(String);

    impl From<kube::Error> for Failed {
        fn from(e: kube::Error) -> Failed {
            Failed(e.to_string())
        }
    }

    struct Context {
        client: Client,
    }

    /// Holds the Lease as `id` (create it, renew it, or take it over once expired); returns
    /// when `id` leads, and keeps renewing in the background.
    pub async fn lead(client: Client, id: String) {
        let leases: Api<Lease> = Api::namespaced(client, "default");
        loop {
            if try_hold(&leases, &id).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                try_hold(&leases, &id).await;
            }
        });
    }

    /// One round of the election: whether `id` holds the Lease after it.
    async fn try_hold(leases: &Api<Lease>, id: &str) -> bool {
        let now = MicroTime(Timestamp::now());
        let mine = |transitions: i32| LeaseSpec {
            holder_identity: Some(id.to_owned()),
            lease_duration_seconds: Some(LEASE_SECONDS),
            acquire_time: Some(now.clone()),
            renew_time: Some(now.clone()),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        };
        let Ok(current) = leases.get_opt(LEASE).await else { return false };
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta { name: Some(LEASE.into()), ..ObjectMeta::default() },
                spec: Some(mine(0)),
            };
            return leases.create(&PostParams::default(), &lease).await.is_ok();
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.as_deref().unwrap_or("");
        let transitions = spec.lease_transitions.unwrap_or(0);
        let renewed = spec.renew_time.map(|t| t.0).unwrap_or(Timestamp::UNIX_EPOCH);
        let expired = Timestamp::now().as_second() - renewed.as_second() > i64::from(LEASE_SECONDS);
        lease.spec = Some(match holder {
            h if h == id => LeaseSpec { renew_time: Some(now.clone()), ..spec },
            _ if expired => mine(transitions + 1),
            _ => return false,
        });
        // The resourceVersion read is the precondition: of two candidates one wins.
        leases.replace(LEASE, &PostParams::default(), &lease).await.is_ok()
    }

    /// Runs the controller until the task is dropped.
    pub async fn run(client: Client) {
        let parents: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource("Parent"));
        let children: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource("Child"));
        let context = Arc::new(Context { client });
        Controller::new_with(parents, watcher::Config::default(), resource("Parent"))
            .owns_with(children, resource("Child"), watcher::Config::default())
            .run(reconcile, error_policy, context)
            .for_each(|_| async {})
            .await;
    }

    fn error_policy(_: Arc<DynamicObject>, _: &Failed, _: Arc<Context>) -> Action {
        Action::requeue(Duration::from_millis(500))
    }

    async fn reconcile(parent: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action, Failed> {
        let parents: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), "default", &resource("Parent"));
        finalizer(&parents, FINALIZER, parent, |event| async {
            match event {
                Event::Apply(parent) => apply(&ctx.client, &parent).await,
                Event::Cleanup(parent) => cleanup(&ctx.client, &parent).await,
            }
        })
        .await
        .map_err(|e| Failed(e.to_string()))
    }

    /// Children `<parent>-<i>` for i below `spec.children`, owned by the Parent; its status says
    /// how many.
    async fn apply(client: &Client, parent: &DynamicObject) -> Result<Action, Failed> {
        let children: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource("Child"));
        let want = parent.data["spec"]["children"].as_i64().unwrap_or(0);
        let owner = parent.controller_owner_ref(&resource("Parent")).ok_or_else(|| Failed("no uid".into()))?;
        let apply = PatchParams::apply("kube-rs-operator").force();
        for i in 0..want {
            let name = format!("{}-{i}", parent.name_any());
            let child = json!({
                "apiVersion": "ops.example.com/v1", "kind": "Child",
                "metadata": {"name": name, "ownerReferences": [owner]},
                "spec": {"index": i},
            });
            children.patch(&name, &apply, &Patch::Apply(child)).await?;
        }
        let parents: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource("Parent"));
        let status = json!({
            "apiVersion": "ops.example.com/v1", "kind": "Parent",
            "metadata": {"name": parent.name_any()},
            "status": {"ready": want, "observedGeneration": parent.meta().generation},
        });
        parents.patch_status(&parent.name_any(), &apply, &Patch::Apply(status)).await?;
        Ok(Action::await_change())
    }

    /// The finalizer's cleanup: the Parent's name recorded in ConfigMap `cleaned-up`.
    async fn cleanup(client: &Client, parent: &DynamicObject) -> Result<Action, Failed> {
        let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let record = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cleaned-up"}, "data": {parent.name_any(): "cleaned up"},
        });
        maps.patch("cleaned-up", &PatchParams::apply("kube-rs-operator").force(), &Patch::Apply(record)).await?;
        Ok(Action::await_change())
    }
}

/// Starts a kube-rs operator instance on its own runtime thread: it waits for the Lease, prints
/// `leading <id>` into `said`, and runs the controller. Dropping the runtime kills it (its
/// Lease then expires, as a killed process's does).
fn kube_rs_operator(kubeconfig: &Path, id: &str, said: std::sync::mpsc::Sender<String>) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let id = id.to_owned();
    runtime.spawn(async move {
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
        let client = kube::Client::try_from(config).unwrap();
        kube_rs::lead(client.clone(), id.clone()).await;
        let _ = said.send(format!("leading {id}"));
        kube_rs::run(client).await;
    });
    runtime
}

#[test]
fn a_kube_rs_operator_owns_finalizes_elects_and_hands_over() {
    let (dir, versa) = versa_with_the_operators_crds();
    let kubeconfig = versa.kubeconfig();

    let (said, heard) = std::sync::mpsc::channel();
    let first = kube_rs_operator(&kubeconfig, "first", said.clone());
    assert_eq!(heard.recv_timeout(Duration::from_secs(60)).unwrap(), "leading first");
    let second = kube_rs_operator(&kubeconfig, "second", said);

    ok(versa.kubectl_file(
        "apply",
        dir.path(),
        "p1",
        "apiVersion: ops.example.com/v1\nkind: Parent\nmetadata: {name: p1, namespace: default}\nspec: {children: 2}\n",
    ));
    reconciled(&versa, "p1", 2);
    let parent = get(&versa, &["parent.ops.example.com", "p1"]).unwrap();
    assert_eq!(parent["metadata"]["finalizers"], serde_json::json!([kube_rs::FINALIZER]));

    // The leader gone: the other takes the Lease over once it expires, and goes on.
    first.shutdown_background();
    assert_eq!(heard.recv_timeout(Duration::from_secs(60)).unwrap(), "leading second");
    let lease = get(&versa, &["lease", "ops-example-com-kube-rs"]).unwrap();
    assert_eq!(
        (lease["spec"]["holderIdentity"].as_str(), lease["spec"]["leaseTransitions"].as_i64()),
        (Some("second"), Some(1))
    );
    ok(versa.kubectl(&["patch", "parent.ops.example.com", "p1", "--type=merge", "-p", r#"{"spec":{"children":3}}"#]));
    reconciled(&versa, "p1", 3);

    // Deleted: the finalizer's cleanup runs, the Parent goes, and the collector takes its Children.
    ok(versa.kubectl(&["delete", "parent.ops.example.com", "p1", "--wait=false"]));
    wait_for("p1 and its children gone", Duration::from_secs(60), || {
        match (get(&versa, &["parent.ops.example.com", "p1"]), children(&versa)) {
            (Err(e), names) if e.contains("NotFound") && names.is_empty() => Ok(()),
            (parent, names) => Err(format!("{parent:?} {names:?}")),
        }
    });
    let record = get(&versa, &["configmap", "cleaned-up"]).unwrap();
    assert_eq!(record["data"]["p1"], "cleaned up");
    second.shutdown_background();
}
