//! The offline tools as a user runs them: the real `versa` binary, real files, checking what it
//! prints and its exit status.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::PathBuf;
use std::process::{Command, Output};

fn data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).display().to_string()
}

fn versa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_versa")).args(args).output().expect("run versa")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn lint_accepts_the_seed_crontab_as_crd_and_as_resource_definition() {
    let o = versa(&["lint", &data("crontab-crd.yaml"), &data("crontab-rd.yaml")]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(r#"CustomResourceDefinition.apiextensions.k8s.io "crontabs.stable.example.com" is valid"#),
        "{out}"
    );
    assert!(out.contains(r#"ResourceDefinition.versa.dev "crontabs.stable.example.com" is valid"#), "{out}");
}

#[test]
fn lint_reports_every_error_with_its_path() {
    let o = versa(&["lint", &data("invalid-crd.yaml")]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    for want in [
        r#"is invalid:"#,
        r#"metadata.name: Invalid value: "crontab.stable.example.com": must be spec.names.plural+"."+spec.group"#,
        "must have exactly one version marked as storage version",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
        "spec.versions[1].schema.openAPIV3Schema.additionalProperties",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
}

#[test]
fn lint_usage_and_io_errors_exit_2() {
    assert_eq!(versa(&["lint"]).status.code(), Some(2));
    let o = versa(&["lint", "/nonexistent/file.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/file.yaml"), "{}", stderr(&o));
}

#[test]
fn validate_prints_kubernetes_errors_and_exits_1() {
    let o = versa(&["validate", "--definition", &data("crontab-crd.yaml"), &data("my-crontab-invalid.yaml")]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o).trim_end(),
        r#"CronTab.stable.example.com "my-new-cron-object" is invalid: [spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$', spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10]"#
    );
}

#[test]
fn validate_prunes_defaults_and_warns() {
    let o = versa(&["validate", "--definition", &data("crontab-rd.yaml"), "-o", "json", &data("my-crontab.yaml")]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    let got: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json output");
    assert_eq!(
        got,
        serde_json::json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "my-new-cron-object", "namespace": "default"},
            "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 1}
        })
    );
    assert_eq!(stderr(&o).trim_end(), r#"Warning: unknown field "spec.someRandomField""#);
}

#[test]
fn validate_yaml_output_and_version_mismatch() {
    let o = versa(&["validate", "--definition", &data("crontab-crd.yaml"), &data("my-crontab.yaml")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("replicas: 1"), "{}", stdout(&o));
    let o =
        versa(&["validate", "--definition", &data("crontab-crd.yaml"), "--version", "v2", &data("my-crontab.yaml")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("the API version in the data (stable.example.com/v1) does not match the expected API version (stable.example.com/v2)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn validate_old_object_makes_identity_immutable() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.yaml");
    std::fs::write(&old, "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: other, namespace: default}\nspec: {image: x}\n").unwrap();
    let o = versa(&[
        "validate",
        "--definition",
        &data("crontab-crd.yaml"),
        "--old",
        old.to_str().unwrap(),
        &data("my-crontab.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(r#"metadata.name: Invalid value: "my-new-cron-object": field is immutable"#),
        "{}",
        stdout(&o)
    );
}

/// An update of an object written without a namespace: the old object gets the same default
/// namespace as the new one (`-n`, else `default`), so nothing but what changed is compared.
#[test]
fn validate_old_object_without_namespace_is_an_update_in_the_same_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.yaml");
    std::fs::write(
        &old,
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: my-new-cron-object}\nspec: {image: x}\n",
    )
    .unwrap();
    for namespace in [None, Some("team-a")] {
        let (crd, mine) = (data("crontab-crd.yaml"), data("my-crontab.yaml"));
        let mut args = vec!["validate", "--definition", &crd, "--old", old.to_str().unwrap()];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        args.push(&mine);
        let o = versa(&args);
        assert_eq!(o.status.code(), Some(0), "{namespace:?}: stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    }
}

#[test]
fn validate_generates_names_and_checks_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("obj.yaml");
    std::fs::write(&obj, "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {generateName: cron-, namespace: prod}\nspec: {image: x}\n").unwrap();
    let o = versa(&["validate", "--definition", &data("crontab-crd.yaml"), "-o", "json", obj.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let got: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let name = got["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("cron-") && name.len() == 10, "{name}");
    assert_eq!(got["metadata"]["namespace"], "prod");

    std::fs::write(&obj, "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: Bad_Name, labels: {\"a b\": c}}\nspec: {image: x}\n").unwrap();
    let o = versa(&["validate", "--definition", &data("crontab-crd.yaml"), obj.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(r#"metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of"#),
        "{out}"
    );
    assert!(
        out.contains(r#"metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters"#),
        "{out}"
    );
}

#[test]
fn a_closed_output_pipe_is_not_a_crash() {
    // `versa lint ... | head -1`: the reader goes away; versa must still finish with its verdict.
    let mut child = Command::new(env!("CARGO_BIN_EXE_versa"))
        .args(["lint", &data("invalid-crd.yaml"), &data("invalid-crd.yaml")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn validate_runs_cel_rules_and_with_old_transition_rules() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    // The seed's rules: one on values, one transition rule.
    let def = write(
        "def.yaml",
        r#"apiVersion: versa.dev/v1
kind: ResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: "replicas should be greater than or equal to minReplicas"
            properties:
              minReplicas: {type: integer}
              replicas: {type: integer}
              name:
                type: string
                x-kubernetes-validations:
                - rule: "self == oldSelf"
                  message: "Value is immutable"
"#,
    );
    let widget = |replicas: i64, name: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w, namespace: default}}\nspec: {{minReplicas: 2, replicas: {replicas}, name: {name}}}\n"
        )
    };
    let cases = [
        // (object, old, exit code, what stdout says)
        (widget(3, "a"), None, 0, "name: a"),
        (
            widget(1, "a"),
            None,
            1,
            r#"Widget.example.com "w" is invalid: spec: Invalid value: replicas should be greater than or equal to minReplicas"#,
        ),
        (widget(3, "b"), Some(widget(3, "b")), 0, "name: b"),
        (
            widget(3, "b"),
            Some(widget(3, "a")),
            1,
            r#"Widget.example.com "w" is invalid: spec.name: Invalid value: "b": Value is immutable"#,
        ),
    ];
    for (i, (object, old, code, says)) in cases.into_iter().enumerate() {
        let object = write(&format!("object{i}.yaml"), &object);
        let mut args = vec!["validate".to_owned(), "--definition".to_owned(), def.clone()];
        if let Some(old) = old {
            args.extend(["--old".to_owned(), write(&format!("old{i}.yaml"), &old)]);
        }
        args.push(object);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = versa(&args);
        assert_eq!(o.status.code(), Some(code), "case {i}: stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(says), "case {i}: {}", stdout(&o));
    }
}

/// The pizza of the seed with CEL conversion rules (shared with versa-conversion's tests).
fn pizza_cel() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../versa-conversion/testdata/pizza-cel-definition.yaml")
        .display()
        .to_string()
}

fn write_temp(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn convert_converts_the_pizzas_both_ways_offline() {
    let dir = tempfile::tempdir().unwrap();
    let alpha = write_temp(
        &dir,
        "alpha.yaml",
        "apiVersion: restaurant.programming-kubernetes.info/v1alpha1\nkind: Pizza\nmetadata: {name: margherita}\nspec: {toppings: [mozzarella, tomato, tomato]}\n",
    );
    let o = versa(&["convert", "--definition", &pizza_cel(), "--to", "v1beta1", "-o", "json", &alpha]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    let beta: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        beta["spec"]["toppings"],
        serde_json::json!([{"name": "mozzarella", "quantity": 1}, {"name": "tomato", "quantity": 2}])
    );
    let beta_file = write_temp(&dir, "beta.json", &stdout(&o));
    let o = versa(&["convert", "--definition", &pizza_cel(), "--to", "v1alpha1", &beta_file]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("toppings:\n  - mozzarella\n  - tomato\n  - tomato"), "{}", stdout(&o));
}

#[test]
fn convert_needs_a_webhook_url_for_webhook_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let obj = write_temp(&dir, "o.yaml", "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: a}\n");
    let def = write_temp(
        &dir,
        "d.yaml",
        &std::fs::read_to_string(data("crontab-rd.yaml")).unwrap().replacen(
            "spec:\n",
            "spec:\n  conversion: {strategy: Webhook, webhook: {conversionReviewVersions: [v1], clientConfig: {url: \"https://example.com/convert\"}}}\n",
            1,
        ),
    );
    let o = versa(&["convert", "--definition", &def, "--to", "v1", &obj]);
    assert_eq!(o.status.code(), Some(2), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("converts with a webhook: give --webhook-url to call it"), "{}", stderr(&o));
}

#[test]
fn lint_explains_cel_conversion_and_reports_a_rule_that_fails_on_samples() {
    let o = versa(&["lint", &pizza_cel()]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o)
            .contains("note: spec.conversion.strategy CEL and spec.conversion.cel are versa's declarative conversion")
    );
    let dir = tempfile::tempdir().unwrap();
    let broken = std::fs::read_to_string(pizza_cel()).unwrap().replace(
        "lists.range(t.quantity).map(i, t.name)",
        "lists.range(t.quantity).map(i, t.name + self.spec.toppings[3].name)",
    );
    let o = versa(&["lint", &write_temp(&dir, "broken.yaml", &broken)]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("spec.conversion.cel.conversions[1].fields[0].expression: Invalid value: \"self.spec.toppings.map(t, lists.range(t.quantity).map(i, t.name + self.spec.toppings[3].name)).flatten()\": fails on a generated v1beta1 object"),
        "{}",
        stdout(&o)
    );
}

/// `versa diff` between two releases of published CRDs (directories of files, as projects ship
/// them): the findings printed with their class, version and path, JSON for tools, and the exit
/// status by `--fail-on`.
#[test]
fn diff_classifies_changes_between_two_releases() {
    let history = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/crd-history/keda");
    let (old, new) = (history.join("v2.12.0").display().to_string(), history.join("v2.14.0").display().to_string());
    let o = versa(&["diff", &old, &new]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    for want in [
        "triggerauthentications.keda.sh:\n",
        r#"  breaking v1alpha1 .spec.podIdentity.provider: values are limited to "aws", "aws-eks", "aws-kiam", "azure", "azure-workload", "gcp", "none": objects stored before stay updatable while an update leaves the value unchanged (ratcheting)"#,
        "  compatible v1alpha1 .spec.initialCooldownPeriod: field added",
        "cloudeventsources.eventing.keda.sh:\n  compatible metadata.name: the definition is added",
        "4 breaking, 28 compatible, 4 informational change(s) in 5 of 5 definition(s)",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // The same as JSON; a definition diffed against itself has nothing to say and passes.
    let o = versa(&["diff", "-o", "json", &old, &new]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["summary"]["breaking"], 4, "{doc}");
    let first = &doc["definitions"][0];
    assert_eq!(first["name"], "clustertriggerauthentications.keda.sh");
    assert_eq!(first["change"], "changed");
    let enum_added = first["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "enum-added").unwrap();
    assert_eq!(enum_added["class"], "breaking");
    assert_eq!(enum_added["version"], "v1alpha1");
    assert_eq!(enum_added["path"], ".spec.azureKeyVault.podIdentity.provider");
    let same = versa(&["diff", &old, &old]);
    assert_eq!(same.status.code(), Some(0));
    assert!(
        stdout(&same).contains("0 breaking, 0 compatible, 0 informational change(s) in 0 of 4 definition(s)"),
        "{}",
        stdout(&same)
    );
    // Only compatible changes: 0 by default, 1 with --fail-on compatible.
    let crd = data("crontab-crd.yaml");
    let dir = tempfile::tempdir().unwrap();
    let wider = std::fs::read_to_string(&crd)
        .unwrap()
        .replace("cronSpec:\n", "note:\n                  type: string\n                cronSpec:\n");
    let wider = write_temp(&dir, "wider.yaml", &wider);
    let o = versa(&["diff", &crd, &wider]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("compatible v1 .spec.note: field added"), "{}", stdout(&o));
    assert_eq!(versa(&["diff", "--fail-on", "compatible", &crd, &wider]).status.code(), Some(1));
    assert_eq!(versa(&["diff", &crd, "/nonexistent.yaml"]).status.code(), Some(2));
}
