//! The seed tutorial ("Extend the Kubernetes API with CustomResourceDefinitions",
//! `../shared/seeds/001_caebc94cf39d3735.txt`) run against the real `versa serve` with the real
//! `kubectl`: every command it shows, with its manifests turned into ResourceDefinitions
//! (`apiVersion: versa.dev/v1`, `kind: ResourceDefinition`), plus the everyday kubectl commands
//! users run next (`explain`, `edit`, `patch`, `--watch`, `--chunk-size`, label selectors,
//! `replace` with a stale resourceVersion, `api-resources`) and a `kill -9` restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;

use versa_e2e::{Versa, fails, kubectl, kubectl_command, ok};

/// The tutorial's definition with the validation, defaulting, printer-column, subresource and
/// category sections folded in (each section of the tutorial re-applies the definition with
/// one more feature; the end state is this).
const DEFINITION: &str = r#"
apiVersion: versa.dev/v1
kind: ResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cronSpec:
                  type: string
                  pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
                  default: "5 0 * * *"
                image:
                  type: string
                replicas:
                  type: integer
                  minimum: 1
                  maximum: 10
                  default: 1
            status:
              type: object
              properties:
                replicas:
                  type: integer
                labelSelector:
                  type: string
      subresources:
        status: {}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.labelSelector
      additionalPrinterColumns:
      - name: Spec
        type: string
        description: The cron spec defining the interval a CronJob is run
        jsonPath: .spec.cronSpec
      - name: Replicas
        type: integer
        description: The number of jobs launched by the CronJob
        jsonPath: .spec.replicas
      - name: Image
        type: string
        priority: 1
        jsonPath: .spec.image
      - name: Age
        type: date
        jsonPath: .metadata.creationTimestamp
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames:
    - ct
    categories:
    - all
"#;

const CRONTAB: &str = r#"
apiVersion: "stable.example.com/v1"
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
"#;

/// Writes `yaml` to a file in the data directory and returns its path.
fn manifest(versa: &Versa, name: &str, yaml: &str) -> String {
    let path = versa.data_dir.join(name);
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

/// Applies the definition and waits for it to be Established.
fn define(versa: &Versa, yaml: &str) {
    let file = manifest(versa, "definition.yaml", yaml);
    ok(versa.kubectl(&["apply", "-f", &file]));
    ok(versa.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "resourcedefinitions/crontabs.stable.example.com",
    ]));
}

/// Runs kubectl until `check` accepts its stdout (the controller and discovery catch up in
/// milliseconds, but kubectl caches discovery; a few retries absorb that).
fn eventually(versa: &Versa, args: &[&str], check: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        let out = versa.kubectl(args);
        last = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() && check(&last) {
            return last;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("kubectl {args:?} never gave the expected output; last:\n{last}");
}

#[test]
fn tutorial() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    define(&versa, DEFINITION);

    // Create custom objects; get by plural, singular, short name; -o yaml.
    let crontab = manifest(&versa, "my-crontab.yaml", CRONTAB);
    ok(versa.kubectl(&["apply", "-f", &crontab]));
    let listed = eventually(&versa, &["get", "crontab"], |s| s.contains("my-new-cron-object"));
    for header in ["NAME", "SPEC", "REPLICAS", "AGE"] {
        assert!(listed.contains(header), "printer columns: {listed}");
    }
    assert!(!listed.contains("IMAGE"), "priority 1 column only with -o wide: {listed}");
    let wide = ok(versa.kubectl(&["get", "crontabs", "-o", "wide"]));
    assert!(wide.contains("IMAGE") && wide.contains("my-awesome-cron-image"), "{wide}");
    let yaml = ok(versa.kubectl(&["get", "ct", "-o", "yaml"]));
    for want in [
        "kind: CronTab",
        "cronSpec: '* * * * */5'",
        "image: my-awesome-cron-image",
        "kubectl.kubernetes.io/last-applied-configuration",
        "generation: 1",
        "namespace: default",
        // Defaulting: replicas was not given.
        "replicas: 1",
    ] {
        assert!(yaml.contains(want), "missing {want:?} in:\n{yaml}");
    }

    // Applying a changed manifest patches the object (client-side apply: a merge patch).
    let changed = manifest(&versa, "my-crontab.yaml", &CRONTAB.replace("my-awesome-cron-image", "my-better-image"));
    let configured = ok(versa.kubectl(&["apply", "-f", &changed]));
    assert!(configured.contains("configured"), "{configured}");
    let image =
        ok(versa.kubectl(&["get", "ct", "my-new-cron-object", "-o", "jsonpath={.spec.image}/{.metadata.generation}"]));
    assert_eq!(image, "my-better-image/2");
    ok(versa.kubectl(&["apply", "-f", &crontab]));

    // Pruning: an unknown field is dropped by the server (client-side validation off).
    let pruned = manifest(
        &versa,
        "pruned.yaml",
        &CRONTAB.replace("my-new-cron-object", "pruned").replace("image: my", "someRandomField: 42\n  image: my"),
    );
    let created = ok(versa.kubectl(&["create", "--validate=false", "-f", &pruned, "-o", "yaml"]));
    assert!(!created.contains("someRandomField"), "{created}");
    assert!(created.contains("image: my-awesome-cron-image"), "{created}");

    // Validation: the error kubectl users know.
    let invalid = manifest(
        &versa,
        "invalid.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: invalid\nspec:\n  cronSpec: \"* * * *\"\n  image: my-awesome-cron-image\n  replicas: 15\n",
    );
    let err = fails(versa.kubectl(&["apply", "-f", &invalid]));
    assert!(err.contains(r#"The CronTab "invalid" is invalid"#), "{err}");
    assert!(
        err.contains(r#"spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#),
        "{err}"
    );
    assert!(
        err.contains("spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );

    // Scale subresource.
    let scaled = ok(versa.kubectl(&["scale", "--replicas=5", "crontabs/my-new-cron-object"]));
    assert!(scaled.contains("scaled"), "{scaled}");
    let replicas = ok(versa.kubectl(&["get", "crontabs", "my-new-cron-object", "-o", "jsonpath={.spec.replicas}"]));
    assert_eq!(replicas, "5");

    // Status subresource: the main endpoint ignores status, /status takes only status.
    ok(versa.kubectl(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":7}}"#,
    ]));
    let status = ok(versa.kubectl(&["get", "ct", "my-new-cron-object", "-o", "jsonpath={.status.replicas}"]));
    assert_eq!(status, "", "status changed through the main endpoint");
    ok(versa.kubectl(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":7},"spec":{"replicas":9}}"#,
    ]));
    let both =
        ok(versa.kubectl(&["get", "ct", "my-new-cron-object", "-o", "jsonpath={.status.replicas}/{.spec.replicas}"]));
    assert_eq!(both, "7/5");

    // Categories: `kubectl get all` includes crontabs.
    let all = eventually(&versa, &["get", "all"], |s| s.contains("my-new-cron-object"));
    assert!(all.contains("my-new-cron-object"), "{all}");

    // Deleting the definition deletes its objects and uninstalls the endpoint. Through versa's
    // own API a definition that holds objects is protected: the delete is refused, saying how
    // to go on, until the protection is turned off (docs/versions.md).
    let definition = manifest(&versa, "definition.yaml", DEFINITION);
    let refused = fails(versa.kubectl(&["delete", "-f", &definition]));
    assert!(refused.contains("deletion protection: 2 objects are stored under this definition"), "{refused}");
    ok(versa.kubectl(&[
        "annotate",
        "resourcedefinitions.versa.dev",
        "crontabs.stable.example.com",
        "versa.dev/deletion-protection=false",
        "--overwrite",
    ]));
    ok(versa.kubectl(&["delete", "-f", &definition]));
    let gone = eventually(&versa, &["get", "resourcedefinitions"], |s| !s.contains("crontabs.stable.example.com"));
    assert!(!gone.contains("crontabs"), "{gone}");
    // kubectl's discovery cache may still know the resource (then the list is a 404, as in the
    // tutorial), or not (then kubectl says so itself).
    let err = fails(versa.kubectl(&["get", "crontabs"]));
    assert!(
        err.contains("the server could not find the requested resource")
            || err.contains("the server doesn't have a resource type \"crontabs\""),
        "{err}"
    );
    // Defined again: the old objects did not come back.
    define(&versa, DEFINITION);
    let empty = eventually(&versa, &["get", "crontabs"], |_| true);
    assert!(empty.contains("No resources found"), "{empty}");
}

#[test]
fn everyday_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    define(&versa, DEFINITION);

    // Changing the definition takes effect at once: a new printer column appears.
    let with_column = DEFINITION.replace(
        "      - name: Age\n",
        "      - name: Tier\n        type: string\n        jsonPath: .metadata.labels.tier\n      - name: Age\n",
    );
    let file = manifest(&versa, "definition.yaml", &with_column);
    let configured = ok(versa.kubectl(&["apply", "-f", &file]));
    assert!(configured.contains("configured"), "{configured}");
    let generation =
        ok(versa.kubectl(&["get", "rd", "crontabs.stable.example.com", "-o", "jsonpath={.metadata.generation}"]));
    assert_eq!(generation, "2");

    // kubectl validates strictly by default: a typo in a definition is refused, naming it.
    let typo = manifest(
        &versa,
        "typo.yaml",
        &DEFINITION.replace("      served: true", "      servd: true\n      served: true"),
    );
    let err = fails(versa.kubectl(&["apply", "-f", &typo]));
    assert!(err.contains(r#"strict decoding error: unknown field "spec.versions[0].servd""#), "{err}");

    // api-resources lists the definitions API and the new resource.
    let resources = eventually(&versa, &["api-resources"], |s| s.contains("crontabs"));
    assert!(resources.contains("resourcedefinitions") && resources.contains("rd"), "{resources}");
    let line = resources.lines().find(|l| l.starts_with("crontabs")).unwrap();
    for want in ["ct", "stable.example.com/v1", "true", "CronTab"] {
        assert!(line.contains(want), "{line}");
    }

    // explain reads the published schema.
    let explained = eventually(&versa, &["explain", "crontab.spec"], |s| s.contains("cronSpec"));
    assert!(explained.contains("replicas"), "{explained}");

    // Many objects with labels; paging with --chunk-size; label selectors.
    for i in 0..12 {
        let tier = if i % 2 == 0 { "web" } else { "db" };
        let yaml = format!(
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: ct-{i:02}\n  labels:\n    tier: {tier}\nspec:\n  image: img-{i}\n"
        );
        let file = manifest(&versa, &format!("ct-{i}.yaml"), &yaml);
        ok(versa.kubectl(&["create", "-f", &file]));
    }
    let paged = ok(versa.kubectl(&["get", "crontabs", "--chunk-size=5", "-o", "name"]));
    assert_eq!(paged.lines().count(), 12, "{paged}");
    let web = ok(versa.kubectl(&["get", "crontabs", "-l", "tier=web", "-o", "name"]));
    assert_eq!(web.lines().count(), 6, "{web}");
    let columns = eventually(&versa, &["get", "crontabs", "ct-00"], |s| s.contains("TIER"));
    assert!(columns.contains("web"), "{columns}");
    let set = ok(versa.kubectl(&["get", "crontabs", "-l", "tier in (db),tier!=web", "-o", "name"]));
    assert_eq!(set.lines().count(), 6, "{set}");

    // patch: merge and json.
    ok(versa.kubectl(&["patch", "ct", "ct-00", "--type=merge", "-p", r#"{"spec":{"image":"merged"}}"#]));
    ok(versa.kubectl(&[
        "patch",
        "ct",
        "ct-01",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/image","value":"jsonpatched"}]"#,
    ]));
    let images = ok(versa.kubectl(&["get", "ct", "ct-00", "ct-01", "-o", "jsonpath={.items[*].spec.image}"]));
    assert_eq!(images, "merged jsonpatched");

    // edit, non-interactively.
    let editor = dir.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/image: img-2/image: edited/' \"$1\"\n").unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&editor).status().unwrap();
    let edited = kubectl_command(&versa.kubeconfig())
        .args(["edit", "ct", "ct-02"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .unwrap();
    ok(edited);
    assert_eq!(ok(versa.kubectl(&["get", "ct", "ct-02", "-o", "jsonpath={.spec.image}"])), "edited");

    // replace with a stale resourceVersion → Conflict.
    let stale = ok(versa.kubectl(&["get", "ct", "ct-03", "-o", "yaml"]));
    ok(versa.kubectl(&["patch", "ct", "ct-03", "--type=merge", "-p", r#"{"spec":{"image":"newer"}}"#]));
    let file = manifest(&versa, "stale.yaml", &stale);
    let err = fails(versa.kubectl(&["replace", "-f", &file]));
    assert!(
        err.contains(r#"Operation cannot be fulfilled on crontabs.stable.example.com "ct-03": the object has been modified; please apply your changes to the latest version and try again"#),
        "{err}"
    );

    // get --watch sees a change made while it runs.
    let mut watch = kubectl_command(&versa.kubeconfig())
        .args(["get", "ct", "ct-04", "--watch", "-o", "jsonpath={.spec.image}{\"\\n\"}"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "img-4");
    ok(versa.kubectl(&["patch", "ct", "ct-04", "--type=merge", "-p", r#"{"spec":{"image":"watched"}}"#]));
    assert_eq!(lines.next().unwrap().unwrap(), "watched");
    let _ = watch.kill();
    let _ = watch.wait();

    // kill -9 and restart: everything is still there.
    let before = ok(versa.kubectl(&[
        "get",
        "crontabs",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.spec.image}/{.metadata.resourceVersion};{end}",
    ]));
    let data_dir = versa.data_dir.clone();
    drop(versa); // SIGKILL
    let versa = Versa::start(&data_dir);
    let kubeconfig = versa.kubeconfig();
    let after = eventually(
        &versa,
        &[
            "get",
            "crontabs",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.image}/{.metadata.resourceVersion};{end}",
        ],
        |s| !s.is_empty(),
    );
    assert_eq!(before, after);
    // The kubeconfig written on first start still works, and writes continue.
    ok(kubectl(&kubeconfig, &["delete", "ct", "ct-05"]));
    assert_eq!(ok(versa.kubectl(&["get", "ct", "-o", "name"])).lines().count(), 11);
}
