//! `versa migrate` against the real `versa serve --auto-migrate=false`: a definition's storage
//! version moves from v1alpha1 to v1beta1 with objects stored at v1alpha1; `versa migrate
//! status` shows the migration pending (and it stays pending: nothing migrates unasked);
//! `versa migrate run --wait` asks for it and follows it to the end; `status` then shows the
//! trimmed stored versions and `MigrationSucceeded`. Also the errors users meet: an unknown
//! definition (kubectl's `Error from server (NotFound)`), a missing kubeconfig, a bad name.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use versa_e2e::{Versa, ok};

const NAME: &str = "widgets.migrate.example.com";

/// Two versions with the same schema and no conversion (`None` rewrites only `apiVersion`);
/// `STORAGE` is replaced by the storage version.
const DEFINITION: &str = r#"
apiVersion: versa.dev/v1
kind: ResourceDefinition
metadata:
  name: widgets.migrate.example.com
spec:
  group: migrate.example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  conversion:
    strategy: None
  versions:
    - name: v1alpha1
      served: true
      storage: ALPHA_STORAGE
      schema: &schema
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
    - name: v1beta1
      served: true
      storage: BETA_STORAGE
      schema: *schema
"#;

fn definition(storage: &str) -> String {
    DEFINITION
        .replace("ALPHA_STORAGE", if storage == "v1alpha1" { "true" } else { "false" })
        .replace("BETA_STORAGE", if storage == "v1beta1" { "true" } else { "false" })
}

/// Runs `versa migrate ARGS` with the admin kubeconfig given by flag.
fn migrate(versa: &Versa, args: &[&str]) -> Output {
    Command::new(versa_e2e::versa_bin())
        .arg("migrate")
        .args(args)
        .arg("--kubeconfig")
        .arg(versa.kubeconfig())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap()
}

fn text(out: &Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The status row of NAME, split into its columns (three or more spaces apart).
fn row(status_stdout: &str) -> Vec<String> {
    let line =
        status_stdout.lines().find(|l| l.starts_with(NAME)).unwrap_or_else(|| panic!("no row:\n{status_stdout}"));
    let mut cells = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("   ") {
        cells.push(rest[..i].to_string());
        rest = rest[i..].trim_start();
    }
    cells.push(rest.to_string());
    cells
}

fn apply(versa: &Versa, file: &str, yaml: &str) {
    let path = versa.data_dir.join(file);
    std::fs::write(&path, yaml).unwrap();
    ok(versa.kubectl(&["apply", "-f", path.to_str().unwrap()]));
}

/// Polls `versa migrate status NAME` until `check` accepts the row (the definitions controller
/// updates status asynchronously).
fn status_until(versa: &Versa, what: &str, check: impl Fn(&[String]) -> bool) -> Vec<String> {
    let mut last = String::new();
    for _ in 0..200 {
        let (code, stdout, stderr) = text(&migrate(versa, &["status", NAME]));
        assert_eq!(code, Some(0), "status failed: {stderr}");
        let cells = row(&stdout);
        if check(&cells) {
            return cells;
        }
        last = stdout;
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: never reached; last status:\n{last}");
}

#[test]
fn migrate_status_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start_with(dir.path(), &["--auto-migrate=false"]);

    apply(&versa, "definition.yaml", &definition("v1alpha1"));
    ok(versa.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        &format!("resourcedefinitions/{NAME}"),
    ]));
    for i in 0..5 {
        let widget = format!(
            "apiVersion: migrate.example.com/v1alpha1\nkind: Widget\nmetadata:\n  name: w{i}\n  namespace: default\nspec:\n  size: {i}\n"
        );
        apply(&versa, &format!("w{i}.yaml"), &widget);
    }

    // Before the change: nothing to migrate.
    let (code, stdout, _) = text(&migrate(&versa, &["status"]));
    assert_eq!(code, Some(0));
    let header = stdout.lines().next().unwrap();
    for column in ["NAME", "STORAGE", "STORED VERSIONS", "MIGRATION"] {
        assert!(header.contains(column), "{stdout}");
    }
    assert_eq!(row(&stdout), [NAME, "v1alpha1", "v1alpha1", "-"], "{stdout}");

    // The storage version moves to v1beta1: both versions are now stored, and with automatic
    // migration off the migration is pending — and stays so.
    apply(&versa, "definition.yaml", &definition("v1beta1"));
    let pending = status_until(&versa, "storedVersions lists both", |r| r[2] == "v1alpha1,v1beta1");
    assert_eq!(pending, [NAME, "v1beta1", "v1alpha1,v1beta1", "Pending"]);
    std::thread::sleep(Duration::from_secs(1));
    let (_, stdout, _) = text(&migrate(&versa, &["status", NAME]));
    assert_eq!(row(&stdout), [NAME, "v1beta1", "v1alpha1,v1beta1", "Pending"], "nothing migrates unasked");

    // Objects written before and after the change read at both versions.
    let sizes =
        ok(versa.kubectl(&["get", "widgets.v1beta1.migrate.example.com", "-o", "jsonpath={.items[*].spec.size}"]));
    assert_eq!(sizes, "0 1 2 3 4");

    // Run and wait.
    let (code, stdout, stderr) = text(&migrate(&versa, &["run", "--wait", "--timeout", "2m", NAME]));
    assert_eq!(code, Some(0), "run --wait failed:\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains(&format!("resourcedefinition.versa.dev/{NAME} migration requested")), "{stdout}");
    assert!(stdout.contains(&format!("resourcedefinition.versa.dev/{NAME} migrated to v1beta1")), "{stdout}");

    let (code, stdout, _) = text(&migrate(&versa, &["status", NAME]));
    assert_eq!(code, Some(0));
    let done = row(&stdout);
    assert_eq!(done[..3], [NAME, "v1beta1", "v1beta1"], "{stdout}");
    assert!(done[3].starts_with("MigrationSucceeded: "), "{stdout}");
    let annotations =
        ok(versa.kubectl(&["get", "rd", NAME, "-o", r#"jsonpath={.metadata.annotations.versa\.dev/migrate}"#]));
    assert_eq!(annotations, "", "the server removes the request annotation when done");
    let sizes =
        ok(versa.kubectl(&["get", "widgets.v1alpha1.migrate.example.com", "-o", "jsonpath={.items[*].spec.size}"]));
    assert_eq!(sizes, "0 1 2 3 4", "the objects survive the migration");

    // Running it again: nothing to do, and no annotation is left behind.
    let (code, stdout, _) = text(&migrate(&versa, &["run", NAME]));
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout.trim(),
        format!("resourcedefinition.versa.dev/{NAME} needs no migration (stored versions: v1beta1)")
    );

    // $KUBECONFIG is used when there is no flag.
    let out = Command::new(versa_e2e::versa_bin())
        .args(["migrate", "status"])
        .env("KUBECONFIG", versa.kubeconfig())
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (code, stdout, stderr) = text(&out);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(row(&stdout)[1], "v1beta1");

    // Errors.
    let (code, stdout, stderr) = text(&migrate(&versa, &["status", NAME, "nothing.example.com"]));
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert_eq!(
        stderr.trim(),
        r#"Error from server (NotFound): resourcedefinitions.versa.dev "nothing.example.com" not found"#
    );
    assert_eq!(row(&stdout)[1], "v1beta1", "found definitions are still shown");
    let (code, _, stderr) = text(&migrate(&versa, &["run", "nothing.example.com"]));
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("Error from server (NotFound): "), "{stderr}");
    let (code, _, stderr) = text(&migrate(&versa, &["run", "../x"]));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("is not a valid definition name"), "{stderr}");
    let (code, _, stderr) = text(&migrate(&versa, &["run", "--timeout", "1m", NAME]));
    assert_eq!(code, Some(2), "--timeout needs --wait: {stderr}");

    let missing = Path::new("/nonexistent/admin.kubeconfig");
    let out =
        Command::new(versa_e2e::versa_bin()).args(["migrate", "status", "--kubeconfig"]).arg(missing).output().unwrap();
    let (code, _, stderr) = text(&out);
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: cannot read the kubeconfig /nonexistent/admin.kubeconfig: "), "{stderr}");
    assert!(versa.stop(), "versa exits 0 on SIGTERM");
}

#[test]
fn unreachable_server() {
    // A valid admin kubeconfig for a server that is not running (stopped).
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let kubeconfig = dir.path().join("copy.kubeconfig");
    std::fs::copy(versa.kubeconfig(), &kubeconfig).unwrap();
    // While it runs: no definitions yet.
    let (code, stdout, stderr) = text(&migrate(&versa, &["status"]));
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (Some(0), "", "No resources found\n"));
    assert!(versa.stop(), "versa exits 0 on SIGTERM");
    let out = Command::new(versa_e2e::versa_bin())
        .args(["migrate", "status", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let (code, _, stderr) = text(&out);
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: unable to connect to the server 127.0.0.1:"), "{stderr}");
}
