//! versa behind the real kube-apiserver (issue 34): the control plane of `kube_plane.rs` (etcd,
//! kube-apiserver and kube-controller-manager of the pinned release, versa installed with its
//! Helm chart), and every request sent as a user sends it — with kubectl and helm of the same
//! release, through kube-apiserver. Kube is the judge: the aggregator's availability controller,
//! kube's discovery and OpenAPI aggregation, RBAC through delegated SubjectAccessReviews, the
//! garbage collector and namespace controller of kube-controller-manager, admission configured
//! in kube.
//!
//! One plane serves the whole binary (it takes about a minute to start), so this test binary has
//! its own harness (`libtest-mimic`: the same command line and summary as cargo's): each scenario
//! works in its own namespace and API group and runs beside the others; the scenarios that stop
//! versa run after them, one at a time. The plane is started only when a scenario is selected.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests: failures should be loud")]

#[path = "client.rs"]
mod client;
#[path = "gc_cascade.rs"]
mod gc_cascade;
#[path = "kube_cases.rs"]
mod kube_cases;
#[path = "kube_crd_fields.rs"]
mod kube_crd_fields;
#[path = "kube_diff.rs"]
mod kube_diff;
#[path = "kube_plane.rs"]
mod kube_plane;
#[path = "kube_rbac.rs"]
mod kube_rbac;
#[path = "too_large.rs"]
mod too_large;

use std::sync::OnceLock;
use std::time::Duration;

use kube_plane::{NAMESPACE, Plane, json_lines, output, wait_for};
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{Value, json};

type Scenario = fn(&Plane);

/// Named scenarios of a plane.
type Scenarios = &'static [(&'static str, Scenario)];

/// Scenarios that run beside each other.
const SHARED: &[(&str, Scenario)] = &[
    ("chart_installs_and_its_apiservice_is_available", chart_installs_and_its_apiservice_is_available),
    ("kubectl_works_through_kube", kubectl_works_through_kube),
    ("rbac_of_kube_allows_and_denies", rbac_of_kube_allows_and_denies),
    ("garbage_collector_of_kube_deletes_dependents", garbage_collector_of_kube_deletes_dependents),
    ("foreground_and_orphan_deletion", foreground_and_orphan_deletion),
    ("cascading_deletion_states_kubes_results", cascading_deletion_states_kubes_results),
    ("admission_policies_configured_in_kube_apply", admission_policies_configured_in_kube_apply),
    ("validating_webhook_configured_in_kube_applies", validating_webhook_configured_in_kube_applies),
    ("differential_conformance_with_published_crds", differential_conformance_with_published_crds),
    ("data_cases_state_kubes_answers", data_cases_state_kubes_answers),
    ("scheduled_backup_runs_as_its_service_account", scheduled_backup_runs_as_its_service_account),
    ("rbac_cases_state_kubes_decisions", rbac_cases_state_kubes_decisions),
    ("writes_too_large_with_their_managed_fields", writes_too_large_with_their_managed_fields),
    ("get_at_a_resource_version_answers_as_kube", get_at_a_resource_version_answers_as_kube),
    ("managed_fields_of_definitions_as_kube", managed_fields_of_definitions_as_kube),
];

/// Scenarios that stop versa: after the others, one at a time.
const ALONE: &[(&str, Scenario)] = &[
    ("namespace_deletion_waits_for_versa", namespace_deletion_waits_for_versa),
    // Alone: kube's discovery of its new definition lags while other scenarios churn hundreds.
    ("users_and_rbac_match_kube", kube_rbac::users_and_rbac_match_kube),
];

/// Scenarios on a second plane that serves what a 1.34 or 1.35 cluster serves:
/// MutatingAdmissionPolicy only at `v1beta1`. It starts after the first plane has stopped.
const OLDER: &[(&str, Scenario)] =
    &[("mutating_policy_of_an_older_cluster_applies", mutating_policy_of_an_older_cluster_applies)];

/// kube-apiserver's flags for [`OLDER`]'s plane.
const OLDER_FLAGS: &[&str] = &[
    "--runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=false,admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=false,admissionregistration.k8s.io/v1beta1=true",
    "--disable-admission-plugins=MutatingAdmissionPolicy",
];

fn main() {
    let args = Arguments::from_args();
    let selected = |name: &str| match &args.filter {
        _ if args.list => false,
        Some(f) if args.exact => name == f,
        Some(f) => name.contains(f.as_str()),
        None => true,
    };
    let mut failed = false;
    // Each plane: its kube-apiserver flags, the scenarios that run beside each other, and those
    // that run one at a time after them.
    let planes: [(&[&str], Scenarios, Scenarios); 2] = [(&[], SHARED, ALONE), (OLDER_FLAGS, OLDER, &[])];
    for (flags, shared, alone) in planes {
        let plane: &'static OnceLock<Result<Plane, String>> = Box::leak(Box::new(OnceLock::new()));
        let wanted = shared
            .iter()
            .chain(alone)
            .any(|(name, _)| selected(name) && !args.skip.iter().any(|s| name.contains(s.as_str())));
        if wanted && !args.list {
            // Started here, on the main thread, which outlives every scenario (the processes die
            // with the thread that started them).
            let started = std::panic::catch_unwind(|| Plane::start_with(flags)).map_err(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            let _ = plane.set(started);
        }
        let first = libtest_mimic::run(&args, trials(plane, shared));
        let mut one_at_a_time = args.clone();
        one_at_a_time.test_threads = Some(1);
        let second = libtest_mimic::run(&one_at_a_time, trials(plane, alone));
        // The plane lives in a leaked cell (the scenarios borrow it for 'static): stop it here.
        if let Some(Ok(p)) = plane.get() {
            p.shutdown();
        }
        failed |= first.has_failed() || second.has_failed();
    }
    if failed {
        std::process::exit(101);
    }
}

/// The scenarios as trials on `plane` (started or not).
fn trials(plane: &'static OnceLock<Result<Plane, String>>, scenarios: &[(&'static str, Scenario)]) -> Vec<Trial> {
    scenarios
        .iter()
        .map(|&(name, run)| {
            Trial::test(name, move || match plane.get() {
                Some(Ok(p)) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(p))).map_err(|e| {
                    let message = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Failed::from(format!(
                        "{message}\n--- versa's log (last 40 lines) ---\n{}",
                        tail(&p.versa_log(), 40)
                    ))
                }),
                Some(Err(e)) => Err(format!("the control plane did not start: {e}").into()),
                None => Err("the control plane was not started".into()),
            })
        })
        .collect()
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A namespaced CronTab-like definition of `group` (status and scale subresources, a printer
/// column), as a user would write it.
fn crontab_definition(group: &str) -> Value {
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": format!("crontabs.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "What the cron job runs.", "properties": {
                        "cronSpec": {"type": "string", "description": "When it runs."},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "default": 1, "description": "How many copies."},
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                }}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}],
            }],
        },
    })
}

/// Defines CronTabs in `group` through kube and waits until kube serves them: the definition
/// Established, its APIService Available, the resource in kube's discovery.
fn define_crontabs(plane: &Plane, group: &str) {
    plane.apply(&crontab_definition(group).to_string(), &[]).unwrap();
    plane.ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        &format!("resourcedefinitions.versa.dev/crontabs.{group}"),
    ]);
    plane.wait_available(&format!("v1.{group}"));
    wait_for(&format!("crontabs.{group} in kube's discovery"), Duration::from_secs(60), || {
        let out = output(plane.kubectl(&["api-resources", "--api-group", group, "-o", "name"]))?;
        if out.lines().any(|l| l == format!("crontabs.{group}")) { Ok(()) } else { Err(out) }
    });
}

fn namespace(plane: &Plane, name: &str) {
    plane.ok(&["create", "namespace", name]);
}

fn crontab(group: &str, name: &str, spec: Value) -> String {
    json!({"apiVersion": format!("{group}/v1"), "kind": "CronTab", "metadata": {"name": name}, "spec": spec})
        .to_string()
}

// The scenarios.

/// `helm install` put every manifest of the chart into kube, and kube's availability
/// controller found versa behind the Service's endpoint.
fn chart_installs_and_its_apiservice_is_available(plane: &Plane) {
    let status = output(plane.helm(&["status", kube_plane::RELEASE, "-n", NAMESPACE, "-o", "json"])).unwrap();
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["info"]["status"], "deployed", "{status}");
    let manifest = output(plane.helm(&["get", "manifest", kube_plane::RELEASE, "-n", NAMESPACE])).unwrap();
    let mut kinds = Vec::new();
    for doc in manifest.split("\n---").filter(|d| d.contains("kind:")) {
        let found = plane.stdin(&["get", "-f", "-", "-o", "name"], doc).unwrap_or_else(|e| panic!("{e}\n{doc}"));
        kinds.push(found.trim().to_owned());
    }
    for expected in [
        "serviceaccount/versa",
        "service/versa",
        "statefulset.apps/versa",
        "apiservice.apiregistration.k8s.io/v1.versa.dev",
    ] {
        assert!(kinds.iter().any(|k| k == expected), "{expected} not among {kinds:?}");
    }
    let service = plane.wait_available("v1.versa.dev");
    let available =
        service["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Available").unwrap();
    assert_eq!(available["reason"], "Passed", "{available}");
    // The endpoint is the pod's, published by kube's EndpointSlice controller.
    let slices = plane.get_json(&["-n", NAMESPACE, "endpointslices", "-l", "kubernetes.io/service-name=versa"]);
    let addresses = &slices["items"][0]["endpoints"][0]["addresses"];
    assert!(addresses[0].as_str().unwrap().starts_with("10.250."), "{slices}");
    // versa put its CA into the chart's APIService.
    assert!(service["spec"]["caBundle"].as_str().is_some_and(|b| !b.is_empty()), "{service}");
    // And kube's aggregated discovery lists versa's group.
    let groups = plane.ok(&["api-versions"]);
    assert!(groups.lines().any(|l| l == "versa.dev/v1"), "{groups}");
}

/// The user's everyday verbs through kube-apiserver.
fn kubectl_works_through_kube(plane: &Plane) {
    let group = "kubectl.e2e.example.com";
    let ns = "kubectl-e2e";
    define_crontabs(plane, group);
    namespace(plane, ns);

    let resources = plane.ok(&["api-resources", "--api-group", group]);
    assert!(resources.contains("crontabs") && resources.contains("ct") && resources.contains("CronTab"), "{resources}");
    // kube aggregates versa's OpenAPI: explain shows the schema's descriptions.
    let explain = wait_for("kubectl explain", Duration::from_secs(60), || {
        let out = output(plane.kubectl(&["explain", &format!("crontabs.{group}.spec.replicas")]))?;
        if out.contains("How many copies.") { Ok(out) } else { Err(out) }
    });
    assert!(explain.contains("<integer>"), "{explain}");

    // create, apply (client side), apply --server-side, get, list.
    plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(group, "a", json!({"cronSpec": "* * * * */5"}))).unwrap();
    plane.apply(&crontab(group, "b", json!({"cronSpec": "1 * * * *", "image": "b:1"})), &["-n", ns]).unwrap();
    plane.apply(&crontab(group, "b", json!({"cronSpec": "2 * * * *", "image": "b:1"})), &["-n", ns]).unwrap();
    plane
        .apply(
            &crontab(group, "c", json!({"cronSpec": "3 * * * *"})),
            &["-n", ns, "--server-side", "--field-manager=e2e"],
        )
        .unwrap();
    let c = plane.get_json(&["-n", ns, &format!("crontabs.{group}"), "c", "--show-managed-fields"]);
    let managers: Vec<&Value> =
        c["metadata"]["managedFields"].as_array().unwrap().iter().map(|m| &m["manager"]).collect();
    assert_eq!(managers, [&json!("e2e")], "{c}");
    assert_eq!(c["spec"]["replicas"], 1, "defaulted: {c}");
    let b = plane.get_json(&["-n", ns, &format!("crontabs.{group}"), "b"]);
    assert_eq!(b["spec"]["cronSpec"], "2 * * * *");
    let table = plane.ok(&["-n", ns, "get", &format!("crontabs.{group}")]);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 4, "{table}");
    assert!(rows[0].starts_with("NAME") && rows[0].contains("SPEC"), "{table}");
    assert!(rows[1].starts_with("a ") && rows[1].contains("* * * * */5"), "{table}");

    // patch, scale, and a watch that sees them.
    let rv = b["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    plane.ok(&[
        "-n",
        ns,
        "patch",
        &format!("crontabs.{group}"),
        "b",
        "--type=merge",
        "-p",
        r#"{"spec":{"image":"b:2"}}"#,
    ]);
    plane.ok(&["-n", ns, "scale", &format!("crontabs.{group}"), "b", "--replicas=5"]);
    let b = plane.get_json(&["-n", ns, &format!("crontabs.{group}"), "b"]);
    assert_eq!((&b["spec"]["image"], &b["spec"]["replicas"]), (&json!("b:2"), &json!(5)), "{b}");
    let path = format!("/apis/{group}/v1/namespaces/{ns}/crontabs?watch=1&resourceVersion={rv}&timeoutSeconds=3");
    let events = plane.ok(&["get", "--raw", &path]);
    let events: Vec<Value> = events.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seen: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == "b")
        .map(|e| (e["type"].as_str().unwrap(), e["object"]["spec"]["image"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(seen[..2], [("MODIFIED", "b:2"), ("MODIFIED", "b:2")], "{events:?}");
    let last = events.iter().rfind(|e| e["object"]["metadata"]["name"] == "b").unwrap();
    assert_eq!(last["object"]["spec"]["replicas"], 5);

    // Invalid input: versa's answer is kube's for the same definition as a CRD.
    let kube_group = "crd-kubectl.e2e.example.com";
    define_crontabs_in_kube(plane, kube_group);
    // The definitions' status as kube 1.36 keeps it: observedGeneration (the status's and each
    // condition's) as kube's own controllers write it for the same definition.
    let generations = |resource: &str| {
        let def = plane.get_json(&[resource]);
        let mut conditions: Vec<(String, Value)> = def["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| matches!(c["type"].as_str(), Some("Established" | "NamesAccepted")))
            .map(|c| (c["type"].as_str().unwrap().to_owned(), c["observedGeneration"].clone()))
            .collect();
        conditions.sort_by(|a, b| a.0.cmp(&b.0));
        (def["status"]["observedGeneration"].clone(), conditions)
    };
    assert_eq!(
        generations(&format!("resourcedefinitions.versa.dev/crontabs.{group}")),
        generations(&format!("crd/crontabs.{kube_group}"))
    );
    for (name, spec) in [
        ("bad-type", json!({"replicas": "many"})),
        ("bad-types", json!({"replicas": 1.5, "cronSpec": 7})),
        ("bad-unknown", json!({"cronSpec": "* * * * *", "unknown": 1})),
        ("bad-negative", json!({"replicas": -1})),
        ("bad-int32", json!({"replicas": 3_000_000_000_i64})),
    ] {
        // kube-openapi visits an object's properties in Go's map order, which varies from run to
        // run (versa goes by key): the error lines are compared as a set.
        let answer = |g: &str| {
            let out = plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(g, name, spec.clone()));
            let unordered = |text: String| {
                let mut lines: Vec<String> = text.replace(g, "GROUP").lines().map(str::to_owned).collect();
                lines.sort();
                lines
            };
            out.map(unordered).map_err(unordered)
        };
        assert_eq!(answer(group), answer(kube_group), "{name}");
    }
    // delete.
    plane.ok(&["-n", ns, "delete", &format!("crontabs.{group}"), "a", "b", "c"]);
    let left = plane.ok(&["-n", ns, "get", &format!("crontabs.{group}"), "-o", "name"]);
    assert_eq!(left.trim(), "", "{left}");
    plane.ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// RBAC objects in kube decide through versa's delegated SubjectAccessReviews; both audit logs
/// record the request.
fn rbac_of_kube_allows_and_denies(plane: &Plane) {
    let group = "rbac.e2e.example.com";
    let ns = "rbac-e2e";
    define_crontabs(plane, group);
    namespace(plane, ns);
    plane.apply(&crontab(group, "x", json!({"cronSpec": "* * * * *"})), &["-n", ns]).unwrap();
    let rbac = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "crontab-reader", "namespace": ns},
         "rules": [{"apiGroups": [group], "resources": ["crontabs"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "alice-reads", "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "crontab-reader"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]},
    ]});
    plane.apply(&rbac.to_string(), &[]).unwrap();
    let alice = plane.user_kubeconfig("alice", &["devs"]);
    let bob = plane.user_kubeconfig("bob", &["devs"]);
    let resource = format!("crontabs.{group}");

    let listed = output(plane.kubectl_as(&alice, &["-n", ns, "get", &resource, "-o", "name"])).unwrap();
    assert_eq!(listed.trim(), format!("crontab.{group}/x"));
    let denied = output(plane.kubectl_as(&alice, &["-n", ns, "delete", &resource, "x"])).unwrap_err();
    assert!(
        denied.contains(&format!(
            r#"Error from server (Forbidden): crontabs.{group} "x" is forbidden: User "alice" cannot delete resource "crontabs" in API group "{group}" in the namespace "{ns}""#
        )),
        "{denied}"
    );
    let denied = output(plane.kubectl_as(&bob, &["-n", ns, "get", &resource])).unwrap_err();
    assert!(
        denied.contains(&format!(
            r#"Error from server (Forbidden): crontabs.{group} is forbidden: User "bob" cannot list resource "crontabs" in API group "{group}" in the namespace "{ns}""#
        )),
        "{denied}"
    );
    // `kubectl auth can-i` asks kube, which knows nothing of versa but RBAC: the same answers.
    let can = output(plane.kubectl_as(&alice, &["auth", "can-i", "list", &resource, "-n", ns])).unwrap();
    assert_eq!(can.trim(), "yes");

    // kube-apiserver authorizes every request before its aggregator proxies it: bob's list never
    // reaches versa, and kube's audit log records the refusal. What it lets through, versa
    // authorizes again (a delegated SubjectAccessReview) and records in its own audit log, under
    // the user the front proxy named.
    let user_list = |e: &Value, user: &str, code: u16| {
        e["user"]["username"] == user
            && e["verb"] == "list"
            && e["objectRef"]["resource"] == "crontabs"
            && e["objectRef"]["apiGroup"] == group
            && e["responseStatus"]["code"] == code
    };
    wait_for("alice's list and bob's refusal in kube's audit log", Duration::from_secs(30), || {
        let events = json_lines(&plane.kube_audit);
        let alice = events.iter().any(|e| user_list(e, "alice", 200));
        let bob = events
            .iter()
            .any(|e| user_list(e, "bob", 403) && e["annotations"]["authorization.k8s.io/decision"] == "forbid");
        if alice && bob { Ok(()) } else { Err(format!("alice {alice}, bob {bob}")) }
    });
    wait_for("alice's list in versa's audit log", Duration::from_secs(30), || {
        let events = json_lines(&plane.versa_audit);
        if events.iter().any(|e| user_list(e, "alice", 200)) { Ok(()) } else { Err(String::new()) }
    });
    assert!(!json_lines(&plane.versa_audit).iter().any(|e| e["user"]["username"] == "bob"), "bob reached versa");

    // RBAC `resourceNames`: carol may read crontab x only. A list whose field selector requires
    // `metadata.name=x` (what `kubectl get crontab x --watch` sends) is x's, for kube's
    // authorizer and, through the SubjectAccessReview versa sends (its name and selectors, as
    // kube 1.34+ asks), for versa's; a list without it is refused by kube.
    let named = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "crontab-x-reader", "namespace": ns},
         "rules": [{"apiGroups": [group], "resources": ["crontabs"], "resourceNames": ["x"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "carol-reads-x", "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "crontab-x-reader"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]},
    ]});
    plane.apply(&named.to_string(), &[]).unwrap();
    let carol = plane.user_kubeconfig("carol", &["devs"]);
    let collection = format!("/apis/{group}/v1/namespaces/{ns}/crontabs");
    let selected = output(plane.kubectl_as(
        &carol,
        &["get", "--raw", &format!("{collection}?fieldSelector=metadata.name%3Dx&labelSelector=team!%3Dother")],
    ))
    .unwrap();
    let names: Vec<Value> = serde_json::from_str::<Value>(&selected).unwrap()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("x")], "{selected}");
    let refused = output(plane.kubectl_as(&carol, &["get", "--raw", &collection])).unwrap_err();
    assert!(refused.contains("Forbidden") || refused.contains("forbidden"), "{refused}");
    plane.ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// kube-controller-manager's garbage collector deletes a custom object whose owner, a
/// ConfigMap of kube's, is deleted.
fn garbage_collector_of_kube_deletes_dependents(plane: &Plane) {
    // Not gc_cascade's group and namespace: the two scenarios run beside each other, and this
    // group is versa's (its APIService would take gc_cascade's CRDs' group version over).
    let group = "gckube.e2e.example.com";
    let ns = "gc-kube";
    define_crontabs(plane, group);
    namespace(plane, ns);
    plane.ok(&["-n", ns, "create", "configmap", "owner", "--from-literal=a=b"]);
    let uid = plane.ok(&["-n", ns, "get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"]);
    let dependent = json!({
        "apiVersion": format!("{group}/v1"), "kind": "CronTab",
        "metadata": {"name": "owned", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]},
        "spec": {"cronSpec": "* * * * *"},
    });
    plane.apply(&dependent.to_string(), &["-n", ns]).unwrap();
    plane.apply(&crontab(group, "free", json!({})), &["-n", ns]).unwrap();
    plane.ok(&["-n", ns, "delete", "configmap", "owner"]);
    // The collector learns versa's resources from discovery (resynced every 30 s).
    wait_for("the collector deletes the dependent", Duration::from_secs(120), || {
        let left = output(plane.kubectl(&["-n", ns, "get", &format!("crontabs.{group}"), "-o", "name"]))?;
        if left.trim() == format!("crontab.{group}/free") { Ok(()) } else { Err(left) }
    });
}

/// `kubectl delete --cascade=foreground|orphan` of a custom owner with custom dependents: kube's
/// API semantics in versa, the collector's part in kube-controller-manager.
fn foreground_and_orphan_deletion(plane: &Plane) {
    let group = "cascade.e2e.example.com";
    let ns = "cascade-e2e";
    let resource = format!("crontabs.{group}");
    define_crontabs(plane, group);
    namespace(plane, ns);
    let owned_by = |name: &str, owner: &str| {
        let uid = plane.ok(&["-n", ns, "get", &resource, owner, "-o", "jsonpath={.metadata.uid}"]);
        json!({
            "apiVersion": format!("{group}/v1"), "kind": "CronTab",
            "metadata": {"name": name, "ownerReferences": [{
                "apiVersion": format!("{group}/v1"), "kind": "CronTab", "name": owner, "uid": uid,
                "blockOwnerDeletion": true,
            }]},
            "spec": {},
        })
        .to_string()
    };
    // Foreground: the owner waits, with kube's finalizer, until its dependents are gone.
    plane.apply(&crontab(group, "fg-owner", json!({})), &["-n", ns]).unwrap();
    plane.apply(&owned_by("fg-child", "fg-owner"), &["-n", ns]).unwrap();
    plane.ok(&["-n", ns, "delete", &resource, "fg-owner", "--cascade=foreground", "--wait=false"]);
    let owner = plane.get_json(&["-n", ns, &resource, "fg-owner"]);
    assert!(owner["metadata"]["deletionTimestamp"].is_string(), "{owner}");
    assert_eq!(owner["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{owner}");
    wait_for("foreground deletion finishes", Duration::from_secs(120), || {
        let left = output(plane.kubectl(&["-n", ns, "get", &resource, "-o", "name"]))?;
        if left.trim().is_empty() { Ok(()) } else { Err(left) }
    });

    // Orphan: the owner goes, the dependent stays without its reference.
    plane.apply(&crontab(group, "or-owner", json!({})), &["-n", ns]).unwrap();
    plane.apply(&owned_by("or-child", "or-owner"), &["-n", ns]).unwrap();
    plane.ok(&["-n", ns, "delete", &resource, "or-owner", "--cascade=orphan", "--wait=false"]);
    wait_for("orphan deletion finishes", Duration::from_secs(120), || {
        let left = output(plane.kubectl(&["-n", ns, "get", &resource, "-o", "name"]))?;
        if left.trim() == format!("crontab.{group}/or-child") { Ok(()) } else { Err(left) }
    });
    let child = plane.get_json(&["-n", ns, &resource, "or-child"]);
    assert_eq!(child["metadata"]["ownerReferences"], Value::Null, "{child}");
    plane.ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// The cascading-deletion scenario of `gc_cascade.rs` against kube itself (CRDs, ConfigMaps,
/// kube-controller-manager's collector): kube's results are the data file standalone versa is
/// held to (`gc.rs`); `VERSA_GC_RECORD=1` writes it from this run.
fn cascading_deletion_states_kubes_results(plane: &Plane) {
    struct Kube<'a>(&'a Plane);
    impl gc_cascade::Cluster for Kube<'_> {
        fn kubectl(&mut self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
            match stdin {
                Some(input) => self.0.stdin(args, input),
                None => output(self.0.kubectl(args)),
            }
        }
        // kube's collector is not restarted: the step checks that nothing moved.
        fn restart(&mut self) {}
    }
    let record = std::env::var_os("VERSA_GC_RECORD").is_some_and(|v| v == "1");
    gc_cascade::run(&mut Kube(plane), record);
}

/// The same definition as a CustomResourceDefinition of kube's, in `group`: kube's own answer to
/// compare versa's with.
fn define_crontabs_in_kube(plane: &Plane, group: &str) {
    let mut crd = crontab_definition(group);
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    plane.apply(&crd.to_string(), &[]).unwrap();
    plane.ok(&["wait", "--for=condition=Established", "--timeout=60s", &format!("crd/crontabs.{group}")]);
}

/// A GET with `resourceVersion` (issue 41): versa's answers are kube's for the same definition
/// as a CRD — `0` and a written revision read the object, a revision not yet reached is the 504
/// `Too large resource version` (kube's after its watch cache waited; the revisions it names
/// differ between the two stores), for a LIST too, one that is not a number kube's plain 500.
fn get_at_a_resource_version_answers_as_kube(plane: &Plane) {
    let (versa_group, kube_group) = ("get-rv.e2e.example.com", "crd-get-rv.e2e.example.com");
    let ns = "get-rv";
    namespace(plane, ns);
    define_crontabs(plane, versa_group);
    define_crontabs_in_kube(plane, kube_group);
    let client = plane.admin_client();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let answers = |group: &str| {
        runtime.block_on(async {
            let collection = format!("/apis/{group}/v1/namespaces/{ns}/crontabs");
            let r = client.post(&collection, &serde_json::from_str(&crontab(group, "a", json!({}))).unwrap()).await;
            assert_eq!(r.status, 201, "{}", r.text());
            let written = r.json()["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
            let mut answers = Vec::new();
            let future = "99999999999999";
            let list = format!("{collection}?resourceVersion={future}");
            for (rv, path) in [
                ("0", format!("{collection}/a?resourceVersion=0")),
                (written.as_str(), format!("{collection}/a?resourceVersion={written}")),
                ("abc", format!("{collection}/a?resourceVersion=abc")),
                ("-1", format!("{collection}/a?resourceVersion=-1")),
                (future, format!("{collection}/a?resourceVersion={future}")),
                ("list", list),
            ] {
                let r = client.get(&path).await;
                let body = r.json();
                let rv = if rv == written { "written" } else { rv };
                let answer = match r.status {
                    200 => json!({"name": body["metadata"]["name"]}),
                    _ => {
                        let mut status = body.clone();
                        // The revision each store has reached is its own.
                        let message = status["message"].as_str().unwrap_or_default();
                        let message = match message.split_once(", current: ") {
                            Some((head, _)) => format!("{head}, current: M"),
                            None => message.to_owned(),
                        };
                        status["message"] = json!(message);
                        status
                    }
                };
                answers.push((rv.to_owned(), r.status, r.header("retry-after"), answer));
            }
            answers
        })
    };
    let (versa, kube) = (answers(versa_group), answers(kube_group));
    assert_eq!(versa, kube, "versa's GETs at a resourceVersion, then kube's");
}

/// A ValidatingAdmissionPolicy and a MutatingAdmissionPolicy created in kube apply to versa's
/// resources (versa runs them: kube does not admit what it proxies), and answer as kube answers
/// for the same definition installed as a CRD.
fn admission_policies_configured_in_kube_apply(plane: &Plane) {
    let group = "admission.e2e.example.com";
    let kube_group = "crd-admission.e2e.example.com";
    let ns = "admission-e2e";
    define_crontabs(plane, group);
    define_crontabs_in_kube(plane, kube_group);
    namespace(plane, ns);
    let rules = json!([{"apiGroups": [group, kube_group], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["crontabs"]}]);
    let policies = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": "e2e-max-replicas"},
         "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": rules},
                  "validations": [{"expression": "object.spec.replicas <= 10", "message": "at most 10 replicas"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": "e2e-max-replicas"},
         "spec": {"policyName": "e2e-max-replicas", "validationActions": ["Deny"]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
         "metadata": {"name": "e2e-label"},
         "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never", "matchConstraints": {"resourceRules": rules},
                  "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                      "expression": "Object{metadata: Object.metadata{labels: {\"admitted-by\": \"kube-policy\"}}}"}}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
         "metadata": {"name": "e2e-label"},
         "spec": {"policyName": "e2e-label"}},
    ]});
    plane.apply(&policies.to_string(), &[]).unwrap();
    // Both follow the configuration through a watch: wait until each refuses.
    let refused = |g: &str| {
        wait_for(&format!("the policy refuses in {g}"), Duration::from_secs(60), || {
            match plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(g, "big", json!({"replicas": 20}))) {
                Ok(out) => {
                    plane.ok(&["-n", ns, "delete", &format!("crontabs.{g}"), "big"]);
                    Err(format!("admitted: {out}"))
                }
                // Until kubectl's discovery finds the CRD twin it refuses on its own.
                Err(e) if e.contains("ValidatingAdmissionPolicy") => Ok(e.replace(g, "GROUP")),
                Err(e) => Err(e),
            }
        })
    };
    let (versa, kube) = (refused(group), refused(kube_group));
    assert_eq!(versa, kube);
    assert!(versa.contains("ValidatingAdmissionPolicy 'e2e-max-replicas' with binding 'e2e-max-replicas' denied request: at most 10 replicas"), "{versa}");
    for g in [group, kube_group] {
        wait_for(&format!("the mutating policy labels in {g}"), Duration::from_secs(60), || {
            plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(g, "small", json!({"replicas": 2}))).unwrap();
            let small = plane.get_json(&["-n", ns, &format!("crontabs.{g}"), "small"]);
            plane.ok(&["-n", ns, "delete", &format!("crontabs.{g}"), "small"]);
            let labels = &small["metadata"]["labels"];
            if *labels == json!({"admitted-by": "kube-policy"}) { Ok(()) } else { Err(labels.to_string()) }
        });
    }
    plane.ok(&["delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "e2e-max-replicas"]);
    plane.ok(&["delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", "e2e-label"]);
    plane.ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// The chart's backup CronJob, its pod played as the kubelet would run it: `versa backup` through
/// the Service with the projected token of its own ServiceAccount, which kube authenticates
/// (versa's TokenReview) and authorizes (the chart's ClusterRole: GET on the non-resource URL
/// `/snapshot`) — and the snapshot restores. Another ServiceAccount is refused in kube's words.
fn scheduled_backup_runs_as_its_service_account(plane: &Plane) {
    let name = format!("{}-backup", kube_plane::RELEASE);
    let cronjob = plane.get_json(&["-n", NAMESPACE, "cronjob", &name]);
    let pod = &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], name.as_str());
    let ca_secret =
        pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "ca").unwrap()["secret"]["secretName"]
            .as_str()
            .unwrap()
            .to_owned();
    let ca = plane.ok(&["-n", NAMESPACE, "get", "secret", &ca_secret, "-o", "jsonpath={.data.ca\\.crt}"]);
    use base64::Engine as _;
    let ca = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(ca.trim()).unwrap()).unwrap();
    let ca_file = plane.file("backup/ca/ca.crt", &ca);
    let backups = plane.file("backup/volume/.keep", "").parent().unwrap().to_owned();
    let run = |service_account: &str| {
        let token = plane.ok(&["-n", NAMESPACE, "create", "token", service_account]);
        let token_file = plane.file(&format!("backup/{service_account}.token"), token.trim());
        let mut args: Vec<String> = Vec::new();
        for arg in pod["containers"][0]["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()) {
            let arg = match arg {
                "/backups/" => format!("{}/", backups.display()),
                a if a.starts_with("--certificate-authority=") => {
                    format!("--certificate-authority={}", ca_file.display())
                }
                a if a.starts_with("--token-file=") => format!("--token-file={}", token_file.display()),
                // The Service's name is what the certificate says; the pod's address is where it is.
                a if a.starts_with("--server=") => {
                    let service = a.trim_start_matches("--server=https://").split(':').next().unwrap().to_owned();
                    args.push(format!("--tls-server-name={service}"));
                    format!("--server=https://{}", plane.versa_address())
                }
                a => a.to_owned(),
            };
            args.push(arg);
        }
        std::process::Command::new(versa_e2e_bin()).args(&args).output().unwrap()
    };
    let out = run(&name);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.starts_with("backup of revision "), "{said}");
    let file = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "snap"))
        .unwrap();
    let restored = plane.file("backup/restored/.none", "").parent().unwrap().join("data");
    let out = std::process::Command::new(versa_e2e_bin())
        .args(["restore", file.to_str().unwrap(), "--data-dir", restored.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let out = run("default");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        said.contains(&format!("Error from server (Forbidden): forbidden: User \"system:serviceaccount:{NAMESPACE}:default\" cannot get path \"/snapshot\"")),
        "{said}"
    );
}

/// The versa binary the plane runs.
fn versa_e2e_bin() -> std::path::PathBuf {
    versa_e2e::versa_bin()
}

/// On a cluster that serves MutatingAdmissionPolicy only at `v1beta1` (1.34 and 1.35, where it
/// was beta), versa reads the policies and bindings at `v1beta1` and applies them to its
/// resources. kube's own plugin of 1.36 reads `v1` only, so the plane runs without it (it would
/// refuse every write, never synced) — the expectation is the policy's effect itself.
fn mutating_policy_of_an_older_cluster_applies(plane: &Plane) {
    let served = plane.ok(&["get", "--raw", "/apis/admissionregistration.k8s.io/v1"]);
    assert!(!served.contains("\"mutatingadmissionpolicies\""), "v1 serves MutatingAdmissionPolicy: {served}");
    let beta = plane.ok(&["get", "--raw", "/apis/admissionregistration.k8s.io/v1beta1"]);
    assert!(beta.contains("\"mutatingadmissionpolicies\""), "v1beta1 does not serve MutatingAdmissionPolicy: {beta}");
    let group = "older.e2e.example.com";
    let ns = "older-e2e";
    define_crontabs(plane, group);
    namespace(plane, ns);
    let rules =
        json!([{"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["crontabs"]}]);
    let policies = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
         "metadata": {"name": "e2e-beta-label"},
         "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never", "matchConstraints": {"resourceRules": rules},
                  "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                      "expression": "Object{metadata: Object.metadata{labels: {\"admitted-by\": \"beta-policy\"}}}"}}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
         "metadata": {"name": "e2e-beta-label"},
         "spec": {"policyName": "e2e-beta-label"}},
    ]});
    plane.apply(&policies.to_string(), &[]).unwrap();
    let mut n = 0;
    wait_for("the v1beta1 mutating policy labels", Duration::from_secs(60), || {
        n += 1;
        let name = format!("small-{n}");
        plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(group, &name, json!({"replicas": 2}))).unwrap();
        let small = plane.get_json(&["-n", ns, &format!("crontabs.{group}"), &name]);
        let labels = &small["metadata"]["labels"];
        if *labels == json!({"admitted-by": "beta-policy"}) { Ok(()) } else { Err(labels.to_string()) }
    });
    // A binding removed is followed too: new objects are no longer labelled.
    plane.ok(&["delete", "mutatingadmissionpolicybindings.v1beta1.admissionregistration.k8s.io", "e2e-beta-label"]);
    wait_for("the policy no longer applies", Duration::from_secs(60), || {
        n += 1;
        let name = format!("small-{n}");
        plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(group, &name, json!({"replicas": 2}))).unwrap();
        let small = plane.get_json(&["-n", ns, &format!("crontabs.{group}"), &name]);
        if small["metadata"].get("labels").is_none() { Ok(()) } else { Err(small["metadata"].to_string()) }
    });
}

/// kube's namespace controller deletes versa's objects in a deleted namespace; while versa is
/// down, the namespace says which group it cannot reach, and finishes once versa is back.
fn namespace_deletion_waits_for_versa(plane: &Plane) {
    let group = "ns.e2e.example.com";
    let resource = format!("crontabs.{group}");
    define_crontabs(plane, group);

    namespace(plane, "ns-up");
    plane.apply(&crontab(group, "one", json!({})), &["-n", "ns-up"]).unwrap();
    plane.ok(&["delete", "namespace", "ns-up", "--timeout=120s"]);
    let gone = plane.kubectl(&["get", "namespace", "ns-up"]);
    assert!(!gone.status.success());

    namespace(plane, "ns-down");
    plane.apply(&crontab(group, "two", json!({})), &["-n", "ns-down"]).unwrap();
    plane.stop_versa();
    plane.ok(&["delete", "namespace", "ns-down", "--wait=false"]);
    let condition = wait_for("the namespace names the unavailable group", Duration::from_secs(120), || {
        let ns = serde_json::from_str::<Value>(&output(plane.kubectl(&["get", "namespace", "ns-down", "-o", "json"]))?)
            .map_err(|e| e.to_string())?;
        let failure = ns["status"]["conditions"]
            .as_array()
            .and_then(|cs| {
                cs.iter().find(|c| c["type"] == "NamespaceDeletionDiscoveryFailure" && c["status"] == "True")
            })
            .cloned();
        failure.ok_or_else(|| ns["status"].to_string())
    });
    let message = condition["message"].as_str().unwrap();
    assert!(message.contains(&format!("{group}/v1")), "{condition}");
    plane.start_versa();
    wait_for("the namespace goes once versa is back", Duration::from_secs(180), || {
        let out = plane.kubectl(&["get", "namespace", "ns-down"]);
        if out.status.success() { Err(String::from_utf8_lossy(&out.stdout).into_owned()) } else { Ok(()) }
    });
    let left = plane.kubectl(&["get", &resource, "-A", "-o", "name"]);
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
    // A restarting versa never drops its APIServices while it loads its definitions: kube's
    // controllers would take the group for gone (the namespace above finished with its object
    // still stored, before versa waited for its definitions).
    let dropped: Vec<Value> = json_lines(&plane.kube_audit)
        .into_iter()
        .filter(|e| {
            e["verb"] == "delete"
                && e["objectRef"]["resource"] == "apiservices"
                && e["objectRef"]["name"] == format!("v1.{group}")
        })
        .collect();
    assert!(dropped.is_empty(), "{dropped:?}");
}

/// The published CRDs, each installed as a CRD and as a versa definition in the same
/// kube-apiserver, the same requests sent to both (`kube_diff.rs`).
fn differential_conformance_with_published_crds(plane: &Plane) {
    let unexplained = kube_diff::run(plane);
    let shown: Vec<&String> = unexplained.iter().take(40).collect();
    assert!(
        unexplained.is_empty(),
        "{} differences from kube are neither fixed nor listed (first 40):\n{}",
        unexplained.len(),
        shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n\n")
    );
}

/// The data tests marked as kube's answers, asked of kube (`kube_cases.rs`).
fn data_cases_state_kubes_answers(plane: &Plane) {
    let differences = kube_cases::run(plane);
    assert!(
        differences.is_empty(),
        "{} cases are not kube's answers:\n{}",
        differences.len(),
        differences.join("\n\n")
    );
}

/// The RBAC cases of versa's authorizer (`crates/versa-server/tests/data/rbac.yaml`) state the
/// real kube-apiserver's decisions: their objects are created in kube, and each check is asked
/// as a SubjectAccessReview — allowed or not, and the reason — against what the file says (which
/// `versa-server`'s `rbac_cases` holds versa's authorizer to).
fn rbac_cases_state_kubes_decisions(plane: &Plane) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/versa-server/tests/data/rbac.yaml");
    let file: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let items: Vec<Value> = file["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
            o
        })
        .collect();
    for ns in ["team-a", "team-b", "ci", "x"] {
        let _ = plane.kubectl(&["create", "namespace", ns]);
    }
    plane.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(), &[]).unwrap();
    // kube-controller-manager's aggregation controller fills the aggregated ClusterRoles' rules.
    for role in file["objects"].as_array().unwrap().iter().filter(|o| !o["aggregationRule"].is_null()) {
        let name = role["metadata"]["name"].as_str().unwrap();
        wait_for(&format!("ClusterRole {name} aggregated"), Duration::from_secs(60), || {
            let rules = plane.ok(&["get", "clusterrole", name, "-o", "jsonpath={.rules}"]);
            if rules.trim().is_empty() || rules.trim() == "[]" { Err(rules) } else { Ok(()) }
        });
    }
    let mut differences = Vec::new();
    for (i, check) in file["checks"].as_array().unwrap().iter().enumerate() {
        let text = |k: &str| check[k].as_str().unwrap_or("").to_owned();
        let mut spec = json!({"user": text("user"), "groups": check["groups"].clone()});
        if spec["groups"].is_null() {
            spec["groups"] = json!([]);
        }
        match check["path"].as_str() {
            Some(path) => spec["nonResourceAttributes"] = json!({"path": path, "verb": text("verb")}),
            None => {
                spec["resourceAttributes"] = json!({"namespace": text("namespace"), "verb": text("verb"), "group": text("group"),
                    "resource": text("resource"), "subresource": text("subresource"), "name": text("name")});
            }
        }
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec});
        let answer = plane.stdin(&["create", "-f", "-", "-o", "json"], &review.to_string()).unwrap();
        let status = &serde_json::from_str::<Value>(&answer).unwrap()["status"];
        let kube = (status["allowed"].as_bool().unwrap_or(false), status["reason"].as_str().unwrap_or("").to_owned());
        let stated = match (check.get("allow"), check.get("deny")) {
            (Some(reason), _) => (true, reason.as_str().unwrap_or("").to_owned()),
            (_, Some(reason)) => (false, reason.as_str().unwrap_or("").to_owned()),
            _ => panic!("check {i}: neither allow nor deny"),
        };
        if kube != stated {
            differences.push(format!("check {i}: kube {kube:?}, the file {stated:?}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// A validating webhook on the host's side of the network namespace's link (reachable from
/// kube-apiserver and from versa): it refuses objects whose name starts with `bad-`. Returns
/// its URL and its CA (PEM).
fn start_webhook(plane: &Plane) -> (String, String) {
    use http_body_util::{BodyExt as _, Full};

    let ca = versa_e2e::Ca::new("versa e2e webhook CA");
    let config = ca.server_config("webhook", &[plane.host_ip()], &[b"http/1.1"]);
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let listener = std::net::TcpListener::bind((plane.host_ip(), 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("https://{}/validate", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(|request: http::Request<hyper::body::Incoming>| async move {
                        let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let name = review["request"]["object"]["metadata"]["name"].as_str().unwrap_or("");
                        let mut response = json!({"uid": review["request"]["uid"], "allowed": !name.starts_with("bad-")});
                        if name.starts_with("bad-") {
                            response["status"] = json!({"code": 403, "message": "names starting with bad- are not allowed"});
                        }
                        let answer = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
                        Ok::<_, std::convert::Infallible>(
                            http::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(bytes::Bytes::from(answer.to_string())))
                                .unwrap(),
                        )
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
    });
    (url, ca.pem())
}

/// A ValidatingWebhookConfiguration created in kube applies to versa's resources (versa calls
/// the webhook) and answers as kube answers for the same definition installed as a CRD.
fn validating_webhook_configured_in_kube_applies(plane: &Plane) {
    use base64::Engine as _;
    let group = "webhook.e2e.example.com";
    let kube_group = "crd-webhook.e2e.example.com";
    let ns = "webhook-e2e";
    define_crontabs(plane, group);
    define_crontabs_in_kube(plane, kube_group);
    namespace(plane, ns);
    let (url, ca) = start_webhook(plane);
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "e2e-deny-bad"},
        "webhooks": [{
            "name": "deny-bad.e2e.example.com",
            "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
            "rules": [{"apiGroups": [group, kube_group], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["crontabs"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
        }],
    });
    plane.apply(&configuration.to_string(), &[]).unwrap();
    let refused = |g: &str| {
        wait_for(&format!("the webhook refuses in {g}"), Duration::from_secs(60), || {
            match plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(g, "bad-one", json!({}))) {
                Ok(out) => {
                    plane.ok(&["-n", ns, "delete", &format!("crontabs.{g}"), "bad-one"]);
                    Err(format!("admitted: {out}"))
                }
                Err(e) if e.contains("denied the request") => Ok(e.replace(g, "GROUP")),
                Err(e) => Err(e),
            }
        })
    };
    let (versa, kube) = (refused(group), refused(kube_group));
    assert_eq!(versa, kube);
    assert!(
        versa.contains(r#"admission webhook "deny-bad.e2e.example.com" denied the request: names starting with bad- are not allowed"#),
        "{versa}"
    );
    for g in [group, kube_group] {
        plane.stdin(&["-n", ns, "create", "-f", "-"], &crontab(g, "good-one", json!({}))).unwrap();
    }
    plane.ok(&["delete", "validatingwebhookconfiguration", "e2e-deny-bad"]);
    plane.ok(&["delete", "namespace", ns, "--wait=false"]);
}

/// Writes too large to store with their `managedFields` (`too_large.rs`): kube-apiserver's
/// answers for its own CustomResourceDefinition are the ones `too_large::kubes_answers` states
/// (which `http.rs` holds standalone versa to), and versa behind kube's aggregator answers the
/// same.
fn writes_too_large_with_their_managed_fields(plane: &Plane) {
    let ns = "too-large";
    namespace(plane, ns);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = plane.admin_client();
    let mut answers = Vec::new();
    for (group, crd) in [("big.kube.example.com", true), ("big.versa.example.com", false)] {
        plane.apply(&too_large::definition(group, crd).to_string(), &[]).unwrap();
        wait_for(&format!("bags.{group} served through kube"), Duration::from_secs(90), || {
            output(plane.kubectl(&["get", &format!("bags.{group}"), "-n", ns]))
        });
        let collection = format!("/apis/{group}/v1/namespaces/{ns}/bags");
        answers.push((group, runtime.block_on(too_large::observe(&client, &collection, group))));
    }
    let stated = too_large::kubes_answers();
    for (group, seen) in answers {
        assert_eq!(seen, stated, "the answers for {group}'s bags (left) are not those too_large.rs states (right)");
    }
}

/// The `managedFields` of CustomResourceDefinitions written by server-side apply, updates and
/// patches, and by the servers' own status writes (`kube_crd_fields.rs`): standalone versa
/// records what kube-apiserver records, and refuses with the same conflicts.
fn managed_fields_of_definitions_as_kube(plane: &Plane) {
    let differences = kube_crd_fields::run(plane);
    assert!(differences.is_empty(), "{} steps differ:\n{}", differences.len(), differences.join("\n\n"));
}
