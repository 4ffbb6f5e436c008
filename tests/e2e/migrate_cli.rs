//! `versa migrate` against the real `versa serve --auto-migrate=false`: a definition's storage
//! version moves from v1alpha1 to v1beta1 with objects stored at v1alpha1; `versa migrate
//! status` shows the migration pending (and it stays pending: nothing migrates unasked);
//! `versa migrate run --wait` asks for it and follows it to the end; `status` then shows the
//! trimmed stored versions and `MigrationSucceeded`. Also the errors users meet: an unknown
//! definition (kubectl's `Error from server (NotFound)`), a missing kubeconfig, a bad name.
//!
//! And kubeconfigs as kubectl reads them (issue 21): a user whose credential comes from an
//! `exec` plugin (a shell script printing an ExecCredential with versa's admin certificate), a
//! `KUBECONFIG=a:b` list merged (with a missing file skipped), `--context`, and plain `http://`
//! through a real `kubectl proxy`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
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

fn apply(versa: &Versa, name: &str, yaml: &str) {
    ok(versa.kubectl_file("apply", &versa.data_dir, name, yaml));
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

    apply(&versa, "definition", &definition("v1alpha1"));
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
        apply(&versa, &format!("w{i}"), &widget);
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
    apply(&versa, "definition", &definition("v1beta1"));
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

/// `versa migrate status NAME` with `KUBECONFIG` set to `list` (no `--kubeconfig`), plus `args`.
fn migrate_with_env(dir: &Path, list: &std::ffi::OsStr, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(versa_e2e::versa_bin())
        .args(["migrate", "status", NAME])
        .args(args)
        .env("KUBECONFIG", list)
        .current_dir(dir)
        .output()
        .unwrap();
    text(&out)
}

#[test]
fn kubeconfigs_as_kubectl_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let versa = Versa::start(&data);
    apply(&versa, "definition", &definition("v1alpha1"));
    ok(versa.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        &format!("resourcedefinitions/{NAME}"),
    ]));
    let expected_row = [NAME, "v1alpha1", "v1alpha1", "-"];

    // An exec credential plugin: a script that prints an ExecCredential carrying versa's admin
    // client certificate (what cloud plugins do with tokens or certificates), and notes that it
    // ran and what kube told it (KUBERNETES_EXEC_INFO).
    let read = |file: &str| std::fs::read_to_string(data.join(file)).unwrap();
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": read("admin.crt"), "clientKeyData": read("admin.key")},
    });
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(plugins.join("credential.json"), credential.to_string()).unwrap();
    let calls = plugins.join("calls");
    let script = plugins.join("versa-credential");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$KUBERNETES_EXEC_INFO\" >> '{}'\ncat '{}'\n",
            calls.display(),
            plugins.join("credential.json").display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).unwrap();

    // Two files, merged: `a` has the contexts (current: one whose server is not there), `b` the
    // cluster and the user with the plugin (its command relative to `b`'s directory).
    let a = dir.path().join("a.kubeconfig");
    std::fs::write(
        &a,
        "apiVersion: v1\nkind: Config\ncurrent-context: elsewhere\ncontexts:\n\
         - name: elsewhere\n  context: {cluster: nowhere, user: plugin}\n\
         - name: versa\n  context: {cluster: versa, user: plugin}\n\
         clusters:\n- name: nowhere\n  cluster: {server: 'https://127.0.0.1:1'}\n",
    )
    .unwrap();
    let b = plugins.join("b.kubeconfig");
    std::fs::write(
        &b,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: versa\n  cluster:\n    server: https://{}\n    \
             certificate-authority: {}\nusers:\n- name: plugin\n  user:\n    exec:\n      \
             apiVersion: client.authentication.k8s.io/v1\n      command: ./versa-credential\n      \
             interactiveMode: Never\n",
            versa.address,
            data.join("ca.crt").display()
        ),
    )
    .unwrap();
    let list = std::env::join_paths([dir.path().join("missing.kubeconfig"), a.clone(), b.clone()]).unwrap();

    // The current context (from `a`) points nowhere...
    let (code, _, stderr) = migrate_with_env(dir.path(), &list, &[]);
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with("error: unable to connect to the server 127.0.0.1:1: "), "{stderr}");
    // ... --context picks the one that reaches versa, through the plugin's certificate.
    let (code, stdout, stderr) = migrate_with_env(dir.path(), &list, &["--context", "versa"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(row(&stdout), expected_row, "{stdout}");
    let exec_info = std::fs::read_to_string(&calls).unwrap();
    assert!(exec_info.contains(r#""kind":"ExecCredential""#), "the plugin ran with KUBERNETES_EXEC_INFO: {exec_info}");
    // An unknown context is named.
    let (code, _, stderr) = migrate_with_env(dir.path(), &list, &["--context", "nope"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: invalid kubeconfig ") && stderr.contains(r#"context "nope" is not defined"#),
        "{stderr}"
    );
    // The flag names one file, which is then read alone (`b` has no context: nothing to use).
    let out = Command::new(versa_e2e::versa_bin())
        .args(["migrate", "status", NAME, "--kubeconfig"])
        .arg(&b)
        .env("KUBECONFIG", &list)
        .output()
        .unwrap();
    let (code, _, stderr) = text(&out);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("current-context is not set"), "{stderr}");

    // Plain http through `kubectl proxy`, which authenticates with the admin kubeconfig.
    let mut proxy = versa_e2e::kubectl_command(&versa.kubeconfig())
        .args(["proxy", "--port=0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(proxy.stdout.take().unwrap()).lines();
    let proxy_address = loop {
        let line = lines.next().expect("kubectl proxy exited").unwrap();
        if let Some(address) = line.strip_prefix("Starting to serve on ") {
            break address.trim().to_string();
        }
    };
    let through_proxy = dir.path().join("proxy.kubeconfig");
    std::fs::write(
        &through_proxy,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: proxy\ncontexts:\n- name: proxy\n  context: {{cluster: proxy}}\n\
             clusters:\n- name: proxy\n  cluster: {{server: 'http://{proxy_address}'}}\n"
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = migrate_with_env(dir.path(), through_proxy.as_os_str(), &[]);
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(row(&stdout), expected_row, "{stdout}");
    assert!(versa.stop(), "versa exits 0 on SIGTERM");
}
