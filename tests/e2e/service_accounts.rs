//! ServiceAccount tokens of a standalone server (issue 38), with the real kubectl:
//! `kubectl create token` (kube's TokenRequest), kubectl with that token — refused by RBAC in
//! kube's words, allowed once a RoleBinding grants it — and the tokens kube refuses with 401: a
//! wrong signature, a deleted ServiceAccount, one recreated with another uid. TokenReviews of a
//! good and a bad token; every namespace's `default` ServiceAccount. (Expired tokens: the unit
//! tests of `versa_server::service_account`, at fixed times — kube issues none shorter than 10
//! minutes.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::path::Path;
use std::time::Duration;

use versa_e2e::{Versa, fails, kubectl, ok, until, wait_for};

/// A TokenReview of `token` as the admin: its status.
fn review(versa: &Versa, dir: &Path, token: &str) -> serde_json::Value {
    let path = dir.join("review.json");
    let body =
        serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    std::fs::write(&path, body.to_string()).unwrap();
    let out = ok(versa.kubectl(&[
        "create",
        "--raw",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "-f",
        path.to_str().unwrap(),
    ]));
    serde_json::from_str::<serde_json::Value>(&out).unwrap()["status"].clone()
}

#[test]
fn kubectl_with_a_service_account_token() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let versa = Versa::start(&d.join("data"));
    ok(versa.kubectl(&["create", "namespace", "team"]));
    ok(versa.kubectl(&["create", "serviceaccount", "robot", "-n", "team"]));
    let token = ok(versa.kubectl(&["create", "token", "robot", "-n", "team"])).trim().to_owned();
    let short = fails(versa.kubectl(&["create", "token", "robot", "-n", "team", "--duration=5m"]));
    assert!(
        short.contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{short}"
    );
    let missing = fails(versa.kubectl(&["create", "token", "nobody", "-n", "team"]));
    assert!(missing.contains("serviceaccounts \"nobody\" not found"), "{missing}");

    // Discovery lists the subresource as kube does.
    let v1: serde_json::Value = serde_json::from_str(&ok(versa.kubectl(&["get", "--raw", "/api/v1"]))).unwrap();
    let entry = v1["resources"].as_array().unwrap().iter().find(|r| r["name"] == "serviceaccounts/token").unwrap();
    assert_eq!(
        entry,
        &serde_json::json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
            "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]})
    );

    let robot = versa.token_kubeconfig(d, "robot", &token);
    let denied = fails(kubectl(&robot, &["get", "configmaps", "-n", "team"]));
    assert!(
        denied.contains(
            "configmaps is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team\""
        ),
        "{denied}"
    );
    ok(versa.kubectl(&["create", "role", "cm-reader", "-n", "team", "--verb=get,list", "--resource=configmaps"]));
    ok(versa.kubectl(&[
        "create",
        "rolebinding",
        "robot-reads",
        "-n",
        "team",
        "--role=cm-reader",
        "--serviceaccount=team:robot",
    ]));
    until(&robot, &["get", "configmaps", "-n", "team"], true);

    // TokenReview: the user kube names, and a bad token's error.
    let status = review(&versa, d, &token);
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["username"], "system:serviceaccount:team:robot");
    let uid = ok(versa.kubectl(&["get", "sa", "robot", "-n", "team", "-o", "jsonpath={.metadata.uid}"]));
    assert_eq!(status["user"]["uid"], uid.as_str());
    assert_eq!(
        status["user"]["groups"],
        serde_json::json!(["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"])
    );
    assert!(
        status["user"]["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().unwrap().starts_with("JTI=")
    );
    assert_eq!(status["audiences"], serde_json::json!(["https://kubernetes.default.svc.cluster.local"]));

    // A wrong signature: 401, and a TokenReview's error.
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let flipped = if signature.starts_with('A') { "B" } else { "A" };
    let forged = format!("{signed}.{flipped}{}", &signature[1..]);
    let unauthorized =
        fails(kubectl(&versa.token_kubeconfig(d, "forged", &forged), &["get", "configmaps", "-n", "team"]));
    assert!(unauthorized.contains("Unauthorized"), "{unauthorized}");
    let status = review(&versa, d, &forged);
    assert_eq!(
        status,
        serde_json::json!({"user": {}, "error": "[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]"})
    );
    assert_eq!(review(&versa, d, "no-such-token"), serde_json::json!({"user": {}, "error": "invalid bearer token"}));

    // A token bound to a Secret lives as long as the Secret.
    let bind = ["create", "token", "robot", "-n", "team", "--bound-object-kind=Secret", "--bound-object-name=key"];
    let missing = fails(versa.kubectl(&bind));
    assert!(missing.contains("secrets \"key\" not found"), "{missing}");
    ok(versa.kubectl(&["create", "secret", "generic", "key", "-n", "team"]));
    let bound = ok(versa.kubectl(&bind)).trim().to_owned();
    let status = review(&versa, d, &bound);
    assert_eq!(status["authenticated"], true, "{status}");
    ok(versa.kubectl(&["delete", "secret", "key", "-n", "team"]));
    let status = review(&versa, d, &bound);
    assert_eq!(status["error"], "[invalid bearer token, service account token has been invalidated]", "{status}");

    // Deleted, then recreated with another uid: the token is revoked.
    ok(versa.kubectl(&["delete", "serviceaccount", "robot", "-n", "team"]));
    let unauthorized = fails(kubectl(&robot, &["get", "configmaps", "-n", "team"]));
    assert!(unauthorized.contains("Unauthorized"), "{unauthorized}");
    ok(versa.kubectl(&["create", "serviceaccount", "robot", "-n", "team"]));
    let unauthorized = fails(kubectl(&robot, &["get", "configmaps", "-n", "team"]));
    assert!(unauthorized.contains("Unauthorized"), "{unauthorized}");
    let status = review(&versa, d, &token);
    assert!(status["error"].as_str().unwrap().starts_with("[invalid bearer token, service account UID ("), "{status}");
    // The signing key outlives a restart: a new token of the new robot works after one.
    let token = ok(versa.kubectl(&["create", "token", "robot", "-n", "team", "--duration=1h"])).trim().to_owned();
    let data = versa.data_dir.clone();
    assert!(versa.stop());
    let versa = Versa::start(&data);
    until(&versa.token_kubeconfig(d, "robot2", &token), &["get", "configmaps", "-n", "team"], true);
}

#[test]
fn every_namespace_has_a_default_service_account() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(&dir.path().join("data"));
    let admin = versa.kubeconfig();
    until(&admin, &["get", "serviceaccount", "default", "-n", "default"], true);
    ok(versa.kubectl(&["create", "namespace", "team"]));
    let first =
        until(&admin, &["get", "serviceaccount", "default", "-n", "team", "-o", "jsonpath={.metadata.uid}"], true);
    ok(versa.kubectl(&["delete", "serviceaccount", "default", "-n", "team"]));
    wait_for("a new default ServiceAccount", Duration::from_secs(30), || {
        let out =
            kubectl(&admin, &["get", "serviceaccount", "default", "-n", "team", "-o", "jsonpath={.metadata.uid}"]);
        let uid = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && uid != first { Ok(()) } else { Err(uid) }
    });
}
