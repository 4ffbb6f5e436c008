//! A new user's first hour (issue 21), end to end with the real `versa serve` and the real
//! `kubectl`: CustomResourceDefinition manifests install unchanged — standalone versa serves
//! `apiextensions.k8s.io/v1` `customresourcedefinitions` as a second face of its
//! ResourceDefinitions (one object, two kinds) — and a kind nobody defined gets kubectl's own
//! `no matches for kind`.
//!
//! The manifest is the seed tutorial's own CRD (`../shared/seeds/001_caebc94cf39d3735.txt`,
//! "Extend the Kubernetes API with CustomResourceDefinitions"), taken from the text as it is.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use versa_e2e::{Versa, fails, ok};

/// The tutorial's first manifest: from its `apiVersion: apiextensions.k8s.io/v1` line to the
/// blank line that ends it.
fn seed_crd() -> String {
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/seeds/001_caebc94cf39d3735.txt");
    let text = std::fs::read_to_string(&seed).unwrap_or_else(|e| panic!("{}: {e}", seed.display()));
    let start =
        text.find("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition").expect("the seed's CRD");
    let rest = &text[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    format!("{}\n", &rest[..end])
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn json(out: String) -> Value {
    serde_json::from_str(&out).unwrap()
}

/// kubectl, retried while it fails with `retry_on` in its error (discovery of a resource that
/// was served a moment ago).
fn kubectl_settled(versa: &Versa, args: &[&str], retry_on: &str) -> String {
    for _ in 0..100 {
        let out = versa.kubectl(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            return String::from_utf8(out.stdout).unwrap();
        }
        assert!(stderr.contains(retry_on), "kubectl {args:?}: {stderr}");
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("kubectl {args:?} kept failing");
}

#[test]
fn crd_manifests_install_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let files = dir.path();
    let crd = write(files, "resourcedefinition.yaml", &seed_crd());

    // The tutorial's commands, with the manifest as it is.
    let out = ok(versa.kubectl(&["apply", "-f", &crd]));
    assert_eq!(out.trim(), "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created");
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=60s"]));
    let tab = write(
        files,
        "my-crontab.yaml",
        "apiVersion: \"stable.example.com/v1\"\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\nspec:\n  cronSpec: \"* * * * */5\"\n  image: my-awesome-cron-image\n",
    );
    let out = kubectl_settled(&versa, &["apply", "-f", &tab], "no matches for kind");
    assert_eq!(out.trim(), "crontab.stable.example.com/my-new-cron-object created");
    let got = json(ok(versa.kubectl(&["get", "ct", "my-new-cron-object", "-o", "json"])));
    assert_eq!(got["spec"]["image"], "my-awesome-cron-image");

    // One object, two kinds.
    let as_crd = json(ok(versa.kubectl(&["get", "crd", "crontabs.stable.example.com", "-o", "json"])));
    let as_rd = json(ok(versa.kubectl(&["get", "rd", "crontabs.stable.example.com", "-o", "json"])));
    assert_eq!(
        (&as_crd["apiVersion"], &as_crd["kind"]),
        (&"apiextensions.k8s.io/v1".into(), &"CustomResourceDefinition".into())
    );
    assert_eq!((&as_rd["apiVersion"], &as_rd["kind"]), (&"versa.dev/v1".into(), &"ResourceDefinition".into()));
    for field in ["/metadata/uid", "/metadata/resourceVersion", "/spec", "/status"] {
        assert_eq!(as_crd.pointer(field), as_rd.pointer(field), "{field}");
    }
    assert_eq!(as_crd["status"]["acceptedNames"]["kind"], "CronTab");
    let names = |kind: &str| ok(versa.kubectl(&["get", kind, "-o", "name"]));
    assert_eq!(names("crd").trim(), "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com");
    assert_eq!(names("rd").trim(), "resourcedefinition.versa.dev/crontabs.stable.example.com");

    // Applied again, changed: an update through the CRD face; seen through the other.
    let changed = seed_crd().replace("    shortNames:\n    - ct", "    shortNames:\n    - ct\n    - cts");
    let out = ok(versa.kubectl(&["apply", "-f", &write(files, "changed.yaml", &changed)]));
    assert_eq!(out.trim(), "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com configured");
    let as_rd = json(ok(versa.kubectl(&["get", "rd", "crontabs.stable.example.com", "-o", "json"])));
    assert_eq!(as_rd["spec"]["names"]["shortNames"], serde_json::json!(["ct", "cts"]));
    assert_eq!(as_rd["metadata"]["generation"], 2);

    // A ResourceDefinition created through versa's face is a CRD too.
    let widget = seed_crd()
        .replace(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition",
            "apiVersion: versa.dev/v1\nkind: ResourceDefinition",
        )
        .replace("crontabs.stable.example.com", "widgets.stable.example.com")
        .replace("plural: crontabs", "plural: widgets")
        .replace("singular: crontab", "singular: widget")
        .replace("kind: CronTab", "kind: Widget")
        .replace("- ct", "- wd");
    ok(versa.kubectl(&["create", "-f", &write(files, "widget.yaml", &widget)]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/widgets.stable.example.com", "--timeout=60s"]));

    // Discovery and the schema, as kubectl reads them.
    let resources = ok(versa.kubectl(&["api-resources", "--api-group=apiextensions.k8s.io", "-o", "wide"]));
    assert!(resources.contains("customresourcedefinitions") && resources.contains("crd,crds"), "{resources}");
    let explained = ok(versa.kubectl(&["explain", "crd"]));
    assert!(explained.contains("KIND:       CustomResourceDefinition"), "{explained}");
    let versions = ok(versa.kubectl(&["explain", "crd.spec.versions"]));
    for field in ["additionalPrinterColumns", "served", "storage", "subresources", "schema"] {
        assert!(versions.contains(field), "kubectl explain crd.spec.versions lacks {field}:\n{versions}");
    }

    // Bad input: kube's words for a CRD (kubectl prints an Invalid status its own way, from
    // the details' kind and name).
    let bad = seed_crd().replace("name: crontabs.stable.example.com", "name: wrong.stable.example.com");
    let err = fails(versa.kubectl(&["create", "-f", &write(files, "bad.yaml", &bad)]));
    assert!(
        err.contains("The CustomResourceDefinition \"wrong.stable.example.com\" is invalid: metadata.name: Invalid value: \"wrong.stable.example.com\": must be spec.names.plural+\".\"+spec.group"),
        "{err}"
    );

    // A kind nobody defined: kubectl's own message.
    let nope = write(files, "nope.yaml", "apiVersion: example.com/v1\nkind: Nope\nmetadata:\n  name: x\n");
    let err = fails(versa.kubectl(&["apply", "-f", &nope]));
    assert!(err.contains("no matches for kind \"Nope\" in version \"example.com/v1\""), "{err}");
    assert!(err.contains("ensure CRDs are installed first"), "{err}");

    // Deleting the CRD deletes its objects, then the CRD; the same manifest installs again.
    ok(versa.kubectl(&["delete", "-f", &crd, "--timeout=60s"]));
    let left = ok(versa.kubectl(&["get", "crd", "-o", "name"]));
    assert_eq!(left.trim(), "customresourcedefinition.apiextensions.k8s.io/widgets.stable.example.com");
    ok(versa.kubectl(&["create", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=60s"]));
    let out = kubectl_settled(&versa, &["get", "crontabs", "-o", "name"], "the server doesn't have a resource type");
    assert_eq!(out.trim(), "", "the objects went with the first definition");
}

/// Standalone versa serves the core `v1` Namespaces and Events operators need, with kube's
/// namespace lifecycle: `default`, `kube-system`, `kube-public` exist and stay; nothing is
/// created in a missing or terminating namespace; `kubectl delete namespace` deletes every
/// custom object in it (waiting for their finalizers), then the namespace.
#[test]
fn namespaces_as_kube_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let files = dir.path();
    let crd = write(files, "resourcedefinition.yaml", &seed_crd());
    ok(versa.kubectl(&["apply", "-f", &crd]));
    ok(versa.kubectl(&["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=60s"]));

    // Discovery: the core group has v1 with its core kinds.
    let core = json(ok(versa.kubectl(&["get", "--raw", "/api"])));
    assert_eq!(core["versions"], serde_json::json!(["v1"]));
    let resources = ok(versa.kubectl(&["api-resources", "--api-group=", "-o", "name"]));
    assert_eq!(
        resources.split_whitespace().collect::<Vec<_>>(),
        ["configmaps", "events", "namespaces", "secrets", "serviceaccounts"],
        "{resources}"
    );
    let newer = ok(versa.kubectl(&["api-resources", "--api-group=events.k8s.io", "-o", "name"]));
    assert_eq!(newer.trim(), "events.events.k8s.io");
    let initial = ok(versa.kubectl(&["get", "namespaces", "-o", "name"]));
    assert_eq!(
        initial.split_whitespace().collect::<Vec<_>>(),
        ["namespace/default", "namespace/kube-public", "namespace/kube-system"]
    );

    // A namespace, as kubectl applies it: Active, the kubernetes finalizer, the name label.
    let ns = write(files, "team.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n");
    assert_eq!(ok(versa.kubectl(&["apply", "-f", &ns])).trim(), "namespace/team created");
    let team = json(ok(versa.kubectl(&["get", "namespace", "team", "-o", "json"])));
    assert_eq!(team["status"]["phase"], "Active");
    // As users type it: kubectl's typed client sends Kubernetes protobuf.
    assert_eq!(ok(versa.kubectl(&["create", "namespace", "typed"])).trim(), "namespace/typed created");
    let typed = json(ok(versa.kubectl(&["get", "namespace", "typed", "-o", "json"])));
    assert_eq!(
        (&typed["status"]["phase"], &typed["spec"]["finalizers"]),
        (&"Active".into(), &serde_json::json!(["kubernetes"]))
    );
    assert_eq!(team["spec"]["finalizers"], serde_json::json!(["kubernetes"]));
    assert_eq!(team["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");

    // Custom objects in it; none in a namespace that does not exist.
    let tab = |name: &str, ns: &str, finalizer: bool| {
        let finalizers = if finalizer { "\n  finalizers: [example.com/hold]" } else { "" };
        write(
            files,
            &format!("{ns}-{name}.yaml"),
            &format!(
                "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\n  namespace: {ns}{finalizers}\nspec:\n  image: busybox\n"
            ),
        )
    };
    let out = kubectl_settled(&versa, &["apply", "-f", &tab("a", "team", false)], "no matches for kind");
    assert_eq!(out.trim(), "crontab.stable.example.com/a created");
    ok(versa.kubectl(&["apply", "-f", &tab("held", "team", true)]));
    ok(versa.kubectl(&["apply", "-f", &tab("elsewhere", "default", false)]));
    let err = fails(versa.kubectl(&["apply", "-f", &tab("lost", "nowhere", false)]));
    assert!(err.contains("namespaces \"nowhere\" not found"), "{err}");

    // An Event, as operators record them.
    let event = write(
        files,
        "event.yaml",
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: a.1\n  namespace: team\ninvolvedObject:\n  apiVersion: stable.example.com/v1\n  kind: CronTab\n  name: a\n  namespace: team\nreason: Created\nmessage: hello\ntype: Normal\nsource:\n  component: test\n",
    );
    ok(versa.kubectl(&["create", "-f", &event]));
    // And as client-go's newer recorders write them (events.k8s.io/v1): the same Events,
    // their fields named anew (`note` is `message`, `regarding` is `involvedObject`).
    let event_v1 = write(
        files,
        "event-v1.yaml",
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: a.2\n  namespace: team\nregarding:\n  apiVersion: stable.example.com/v1\n  kind: CronTab\n  name: a\n  namespace: team\nreason: Synced\nnote: again\ntype: Normal\naction: Sync\neventTime: \"2026-11-24T10:00:00.000000Z\"\nreportingController: example.com/test\nreportingInstance: test-1\n",
    );
    ok(versa.kubectl(&["create", "-f", &event_v1]));
    let events = ok(versa.kubectl(&["get", "events", "-n", "team", "-o", "jsonpath={.items[*].message}"]));
    assert_eq!(events, "hello again");
    let core = json(ok(versa.kubectl(&["get", "events", "a.2", "-n", "team", "-o", "json"])));
    assert_eq!(
        (&core["apiVersion"], &core["involvedObject"]["name"], &core["reportingComponent"]),
        (&"v1".into(), &"a".into(), &"example.com/test".into())
    );
    let newer = json(ok(versa.kubectl(&["get", "events.v1.events.k8s.io", "a.1", "-n", "team", "-o", "json"])));
    assert_eq!(
        (&newer["apiVersion"], &newer["note"], &newer["regarding"]["kind"]),
        (&"events.k8s.io/v1".into(), &"hello".into(), &"CronTab".into())
    );

    // Deleting: Terminating while an object's finalizer holds it; no new content meanwhile.
    ok(versa.kubectl(&["delete", "namespace", "team", "--wait=false"]));
    let team = json(ok(versa.kubectl(&["get", "namespace", "team", "-o", "json"])));
    assert_eq!(team["status"]["phase"], "Terminating");
    let err = fails(versa.kubectl(&["apply", "-f", &tab("late", "team", false)]));
    assert!(
        err.contains("crontabs.stable.example.com \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"),
        "{err}"
    );
    for _ in 0..300 {
        let left = ok(versa.kubectl(&["get", "crontabs", "-n", "team", "-o", "name"]));
        if left.trim() == "crontab.stable.example.com/held" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let held = json(ok(versa.kubectl(&["get", "crontab", "held", "-n", "team", "-o", "json"])));
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    ok(versa.kubectl(&[
        "patch",
        "crontab",
        "held",
        "-n",
        "team",
        "--type=merge",
        "-p",
        "{\"metadata\":{\"finalizers\":null}}",
    ]));
    ok(versa.kubectl(&["wait", "--for=delete", "namespace/team", "--timeout=60s"]));
    let err = fails(versa.kubectl(&["get", "namespace", "team"]));
    assert!(err.contains("namespaces \"team\" not found"), "{err}");
    assert_eq!(
        ok(versa.kubectl(&["get", "crontabs", "-A", "-o", "name"])).trim(),
        "crontab.stable.example.com/elsewhere"
    );
    assert_eq!(
        ok(versa.kubectl(&["get", "events", "-A", "-o", "name"])).trim(),
        "",
        "the namespace's events went with it"
    );

    // The initial namespaces stay.
    let err = fails(versa.kubectl(&["delete", "namespace", "default"]));
    assert!(err.contains("namespaces \"default\" is forbidden: this namespace may not be deleted"), "{err}");
}

/// `helm install` of a chart whose `crds/` holds an unchanged CRD manifest, as users run it:
/// helm installs the CRD, waits for it, creates the chart's objects and keeps its release in a
/// v1 Secret (which standalone versa serves for that, with kube's Secret rules: `stringData`
/// becomes `data`, `type` defaults to `Opaque` and cannot change). Upgrade, list and uninstall
/// work as on a cluster.
#[test]
fn helm_installs_charts_with_crds() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let chart = dir.path().join("chart");
    std::fs::create_dir_all(chart.join("crds")).unwrap();
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: crontab\nversion: 0.1.0\n").unwrap();
    std::fs::write(chart.join("crds/crontab.yaml"), seed_crd()).unwrap();
    std::fs::write(
        chart.join("templates/crontab.yaml"),
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: from-helm\nspec:\n  image: {{ .Values.image }}\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "image: busybox\n").unwrap();
    let helm = std::env::var("VERSA_HELM_BIN").unwrap_or_else(|_| {
        panic!("set VERSA_HELM_BIN: `bash hack/install-deps.sh --helm-path` prints it (hack/test.sh sets it)")
    });
    let run = |args: &[&str]| -> String {
        let out = std::process::Command::new(&helm)
            .args(args)
            .env("KUBECONFIG", versa.kubeconfig())
            .env("HELM_CACHE_HOME", dir.path().join("helm-cache"))
            .env("HELM_CONFIG_HOME", dir.path().join("helm-config"))
            .env("HELM_DATA_HOME", dir.path().join("helm-data"))
            .output()
            .unwrap();
        assert!(out.status.success(), "helm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let chart = chart.to_str().unwrap();
    let out = run(&["install", "demo", chart, "--namespace", "default"]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    let tab = json(ok(versa.kubectl(&["get", "crontab", "from-helm", "-o", "json"])));
    assert_eq!(tab["spec"]["image"], "busybox");
    let out = run(&["upgrade", "demo", chart, "--namespace", "default", "--set", "image=nginx"]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    let tab = json(ok(versa.kubectl(&["get", "crontab", "from-helm", "-o", "json"])));
    assert_eq!(tab["spec"]["image"], "nginx");
    let list = run(&["list", "--namespace", "default", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        (&list[0]["name"], &list[0]["revision"], &list[0]["status"]),
        (&"demo".into(), &"2".into(), &"deployed".into())
    );
    run(&["uninstall", "demo", "--namespace", "default"]);
    assert_eq!(ok(versa.kubectl(&["get", "crontabs", "-o", "name"])).trim(), "");
    assert_eq!(ok(versa.kubectl(&["get", "secrets", "-o", "name"])).trim(), "", "the release records went");
    assert!(
        ok(versa.kubectl(&["get", "crd", "-o", "name"])).contains("crontabs.stable.example.com"),
        "helm keeps CRDs"
    );

    // kube's Secret rules, through kubectl's typed client (protobuf).
    ok(versa.kubectl(&["create", "secret", "generic", "s", "--from-literal=user=admin"]));
    let secret = json(ok(versa.kubectl(&["get", "secret", "s", "-o", "json"])));
    assert_eq!((&secret["type"], &secret["data"]["user"]), (&"Opaque".into(), &"YWRtaW4=".into()));
    ok(versa.kubectl(&["patch", "secret", "s", "--type=merge", "-p", "{\"stringData\":{\"pass\":\"x\"}}"]));
    let secret = json(ok(versa.kubectl(&["get", "secret", "s", "-o", "json"])));
    assert_eq!(secret["data"], serde_json::json!({"user": "YWRtaW4=", "pass": "eA=="}));
    assert!(secret.get("stringData").is_none(), "{secret}");
    let err = fails(versa.kubectl(&["patch", "secret", "s", "--type=merge", "-p", "{\"type\":\"example.com/other\"}"]));
    assert!(err.contains("type: Invalid value: \"example.com/other\": field is immutable"), "{err}");
}
