//! `versa serve` start-up as a user meets it: first start creates the CA and an admin
//! kubeconfig that kubectl uses as is; health and version answer; requests without credentials
//! get 401 and unknown paths 404, as Status objects; SIGTERM stops it cleanly; a restart reuses
//! the credentials.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use versa_e2e::{Versa, fails, kubectl, ok};

#[test]
fn first_start_health_version_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    assert_eq!(ok(versa.kubectl(&["get", "--raw", "/healthz"])), "ok");
    assert_eq!(ok(versa.kubectl(&["get", "--raw", "/readyz"])), "ok");
    let version = ok(versa.kubectl(&["version", "-o", "json"]));
    assert!(version.contains("\"serverVersion\""), "{version}");
    assert!(version.contains("+versa-"), "{version}");

    let missing = fails(versa.kubectl(&["get", "--raw", "/apis/nothing.example.com/v1/things"]));
    assert!(
        missing.contains("Error from server (NotFound): the server could not find the requested resource"),
        "{missing}"
    );

    // A kubeconfig with the right CA but a token instead of a client certificate (standalone
    // versa knows no tokens): 401 from the server.
    let admin = std::fs::read_to_string(versa.kubeconfig()).unwrap();
    let anonymous: String = admin
        .lines()
        .map(|l| {
            if l.contains("client-certificate-data") {
                "    token: not-a-versa-credential\n".to_string()
            } else if l.contains("client-key-data") {
                String::new()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let anonymous_path = dir.path().join("anonymous.kubeconfig");
    std::fs::write(&anonymous_path, anonymous).unwrap();
    let denied = fails(kubectl(&anonymous_path, &["get", "--raw", "/version"]));
    assert!(denied.contains("Unauthorized"), "{denied}");

    assert!(versa.stop(), "versa exits 0 on SIGTERM");

    // Restart: same CA and admin credentials (the old kubeconfig's credentials still work).
    let versa = Versa::start(dir.path());
    let again = std::fs::read_to_string(versa.kubeconfig()).unwrap();
    let creds = |k: &str| k.lines().filter(|l| l.contains("-data:")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(creds(&admin), creds(&again));
    assert_eq!(ok(versa.kubectl(&["get", "--raw", "/healthz"])), "ok");
}

#[test]
fn a_second_process_on_the_same_data_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _versa = Versa::start(dir.path());
    let output = std::process::Command::new(versa_e2e::versa_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is in use by another versa process"), "{stderr}");
}
