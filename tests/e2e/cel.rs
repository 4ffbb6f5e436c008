//! `x-kubernetes-validations` on writes, against the real `versa serve` with the real `kubectl`:
//! the seed's replicas rules (with and without `message`), a transition rule (`self ==
//! oldSelf`), `messageExpression`, `reason`/`fieldPath`, and a rule on map values run per key.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use versa_e2e::{Versa, fails, ok};

const DEFINITION: &str = r#"
apiVersion: versa.dev/v1
kind: ResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
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
                  message: "replicas should be greater than or equal to minReplicas."
                - rule: "self.replicas <= self.maxReplicas"
              properties:
                minReplicas:
                  type: integer
                replicas:
                  type: integer
                maxReplicas:
                  type: integer
                image:
                  type: string
                  x-kubernetes-validations:
                    - rule: "self == oldSelf"
                      message: "image is immutable"
                limit:
                  type: integer
                  x-kubernetes-validations:
                    - rule: "self <= 100"
                      messageExpression: "'limit %d exceeds 100'.format([self])"
                owner:
                  type: string
                  x-kubernetes-validations:
                    - rule: "self != ''"
                      reason: FieldValueRequired
                      message: "owner must not be empty"
                labels:
                  type: object
                  additionalProperties:
                    type: string
                    x-kubernetes-validations:
                      - rule: "self.size() <= 3"
              required:
                - minReplicas
                - replicas
                - maxReplicas
"#;

fn object(min: i64, replicas: i64, max: i64, extra: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-new-cron-object\n  namespace: default\n\
         spec:\n  minReplicas: {min}\n  replicas: {replicas}\n  maxReplicas: {max}\n{extra}"
    )
}

fn manifest(versa: &Versa, name: &str, yaml: &str) -> String {
    let path = versa.data_dir.join(name);
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

/// `kubectl create -f` of `yaml`, expected to fail: its stderr.
fn create_fails(versa: &Versa, yaml: &str) -> String {
    let file = manifest(versa, "object.yaml", yaml);
    fails(versa.kubectl(&["create", "-f", &file]))
}

#[test]
fn validation_rules() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let def = manifest(&versa, "definition.yaml", DEFINITION);
    ok(versa.kubectl(&["apply", "-f", &def]));
    ok(versa.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "resourcedefinitions/crontabs.stable.example.com",
    ]));
    // kubectl caches discovery; wait until the resource is known.
    for _ in 0..100 {
        if versa.kubectl(&["get", "crontabs"]).status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    // The seed's example: the rule without a message reports `failed rule: <rule>`.
    let err = create_fails(&versa, &object(0, 20, 10, ""));
    assert_eq!(
        err.trim_end(),
        r#"The CronTab "my-new-cron-object" is invalid: spec: Invalid value: failed rule: self.replicas <= self.maxReplicas"#
    );
    // With a message; both rules failing give both errors.
    let err = create_fails(&versa, &object(5, 1, 0, ""));
    assert!(err.contains("* spec: Invalid value: replicas should be greater than or equal to minReplicas.\n"), "{err}");
    assert!(err.contains("* spec: Invalid value: failed rule: self.replicas <= self.maxReplicas"), "{err}");
    // messageExpression, with the scalar value printed.
    let err = create_fails(&versa, &object(0, 1, 2, "  limit: 101\n"));
    assert!(err.contains("spec.limit: Invalid value: 101: limit 101 exceeds 100"), "{err}");
    // A blocking schema error (a value of the wrong type) stops the rules, and says so.
    let wrong = object(0, 1, 2, "  image: 5\n").replace("replicas: 1\n", "replicas: \"one\"\n");
    let err = create_fails(&versa, &wrong);
    assert!(err.contains("some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"), "{err}");
    assert!(!err.contains("failed rule"), "{err}");

    // reason picks the error type.
    let err = create_fails(&versa, &object(0, 1, 2, "  owner: \"\"\n"));
    assert!(err.contains("spec.owner: Required value: owner must not be empty"), "{err}");
    // Rules on map values run per key.
    let err = create_fails(&versa, &object(0, 1, 2, "  labels:\n    a: ok\n    b: toolong\n"));
    assert!(err.contains(r#"spec.labels[b]: Invalid value: "toolong": failed rule: self.size() <= 3"#), "{err}");

    // A valid object is accepted; the transition rule does not run on create.
    let file = manifest(&versa, "object.yaml", &object(1, 2, 3, "  image: a\n"));
    ok(versa.kubectl(&["create", "-f", &file]));

    // Transition rule: the image cannot change; other changes are fine.
    ok(versa.kubectl(&["patch", "crontab", "my-new-cron-object", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#]));
    let err = fails(versa.kubectl(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"image":"b"}}"#,
    ]));
    assert!(err.contains(r#"spec.image: Invalid value: "b": image is immutable"#), "{err}");
    // Updates are validated too.
    let err = fails(versa.kubectl(&[
        "patch",
        "crontab",
        "my-new-cron-object",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
    ]));
    assert!(err.contains("spec: Invalid value: failed rule: self.replicas <= self.maxReplicas"), "{err}");
    let got =
        ok(versa.kubectl(&["get", "crontab", "my-new-cron-object", "-o", "jsonpath={.spec.replicas} {.spec.image}"]));
    assert_eq!(got, "3 a");
}
