//! Cluster mode end to end (issue 7): versa behind kube-apiserver, played by the fake in
//! `fake_kube.rs` (the ConfigMap with the front-proxy configuration, TokenReview,
//! SubjectAccessReview, APIServices, Secrets). First the fake itself is checked with the real
//! `kubectl` — which also speaks HTTP/2 to it, as Go clients do when ALPN offers it — so that a
//! failure in the cluster-mode tests points at versa, not at its stand-in.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "client.rs"]
mod client;
#[path = "fake_kube.rs"]
mod fake_kube;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use client::{Client, Response};
use fake_kube::{AuthenticationConfig, FakeKube, SERVICE_ACCOUNT_TOKEN, User, Verdict};
use serde_json::{Value, json};
use versa_e2e::{Ca, Versa, fails, kubectl, ok};

// The fake itself.

const AUTHENTICATION_CONFIG_MAP: &str = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
const API_SERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";

/// A directory holding the fake's kubeconfig (kubectl keeps its discovery cache beside it).
fn kubeconfig(fake: &FakeKube) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    fake.write_kubeconfig(&path);
    (dir, path)
}

/// `kubectl <verb> --raw <path>`, with `body` as the request body: the fake serves no discovery
/// or OpenAPI, so kubectl's resource commands do not work against it, but raw requests do.
fn raw(kubeconfig: &Path, verb: &str, path: &str, body: Option<&Value>) -> Output {
    let file = kubeconfig.with_file_name("body.json");
    let mut args = vec![verb, "--raw", path];
    if let Some(body) = body {
        std::fs::write(&file, body.to_string()).unwrap();
        args.extend(["-f", file.to_str().unwrap()]);
    }
    kubectl(kubeconfig, &args)
}

/// `kubectl get --raw`, parsed.
fn get_raw(kubeconfig: &Path, path: &str) -> Value {
    serde_json::from_str(&ok(raw(kubeconfig, "get", path, None))).unwrap()
}

/// `kubectl create --raw` (a POST) of `body`, parsed.
fn post_raw(kubeconfig: &Path, path: &str, body: &Value) -> Value {
    serde_json::from_str(&ok(raw(kubeconfig, "create", path, Some(body)))).unwrap()
}

#[test]
fn fake_kube_answers_authentication_and_authorization() {
    let fake = FakeKube::start();
    let (_dir, config) = kubeconfig(&fake);

    let missing = fails(raw(&config, "get", AUTHENTICATION_CONFIG_MAP, None));
    assert!(missing.contains("NotFound"), "{missing}");
    let mut authentication = AuthenticationConfig::front_proxy("FRONT PROXY CA", &["front-proxy-client"]);
    authentication.client_ca = Some("CLIENT CA".into());
    authentication.requestheader_uid_headers = Vec::new();
    fake.set_authentication_config(authentication.clone());
    let first = get_raw(&config, AUTHENTICATION_CONFIG_MAP);
    assert_eq!(
        first["data"],
        json!({
            "client-ca-file": "CLIENT CA",
            "requestheader-client-ca-file": "FRONT PROXY CA",
            "requestheader-allowed-names": "[\"front-proxy-client\"]",
            "requestheader-username-headers": "[\"X-Remote-User\"]",
            "requestheader-group-headers": "[\"X-Remote-Group\"]",
            "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
            "requestheader-uid-headers": "null",
        })
    );
    fake.set_authentication_config(AuthenticationConfig { client_ca: Some("OTHER CA".into()), ..Default::default() });
    let second = get_raw(&config, AUTHENTICATION_CONFIG_MAP);
    assert_eq!(second["data"], json!({"client-ca-file": "OTHER CA"}));
    assert_ne!(first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"]);

    let mut alice = User::new("alice", &["devs", "system:authenticated"]);
    alice.uid = "alice-uid".into();
    alice.extra.insert("scopes.example.com".into(), vec!["a".into(), "b".into()]);
    fake.add_token("alice-token", alice);
    let tokens = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = |token: &str| {
        json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": ["https://kubernetes.default.svc"]},
        })
    };
    let known = post_raw(&config, tokens, &review("alice-token"));
    assert_eq!(
        known["status"],
        json!({
            "authenticated": true,
            "user": {
                "username": "alice", "uid": "alice-uid", "groups": ["devs", "system:authenticated"],
                "extra": {"scopes.example.com": ["a", "b"]},
            },
            "audiences": ["https://kubernetes.default.svc"],
        })
    );
    let unknown = post_raw(&config, tokens, &review("mallory-token"));
    assert_eq!(unknown["status"]["authenticated"], Value::Null, "omitted when false, as in kube");
    assert_eq!(unknown["status"]["user"], json!({}));
    assert!(unknown["status"]["error"].is_string(), "{unknown}");
    assert_eq!(fake.token_reviews(), 2);

    let access = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let sar = |user: &str| {
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {
                "user": user, "groups": ["devs"],
                "resourceAttributes": {"verb": "get", "group": "example.com", "version": "v1", "resource": "widgets"},
            },
        })
    };
    let nobody = post_raw(&config, access, &sar("alice"));
    assert_eq!(nobody["status"], json!({"allowed": false}), "the default policy has no opinion");
    fake.set_policy(|spec| if spec["user"] == "alice" { Verdict::allow() } else { Verdict::deny("not alice") });
    assert_eq!(post_raw(&config, access, &sar("alice"))["status"], json!({"allowed": true}));
    assert_eq!(
        post_raw(&config, access, &sar("bob"))["status"],
        json!({"allowed": false, "denied": true, "reason": "not alice"})
    );
    let specs = fake.access_reviews();
    assert_eq!(specs.len(), 3);
    assert_eq!(specs[2], sar("bob")["spec"]);

    let stranger = config.with_file_name("stranger.kubeconfig");
    let text = std::fs::read_to_string(&config).unwrap().replace(SERVICE_ACCOUNT_TOKEN, "someone-else");
    std::fs::write(&stranger, text).unwrap();
    let refused = fails(raw(&stranger, "get", AUTHENTICATION_CONFIG_MAP, None));
    assert!(refused.contains("Unauthorized"), "{refused}");
    assert!(fake.requests().contains(&("GET".to_string(), AUTHENTICATION_CONFIG_MAP.to_string())));
}

#[test]
fn fake_kube_keeps_api_services() {
    let fake = FakeKube::start();
    let (_dir, config) = kubeconfig(&fake);
    fake.put_api_service(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.apps", "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
        "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15},
    }));
    let name = "v1alpha1.example.com";
    let ours = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "versa"}},
        "spec": {
            "group": "example.com", "version": "v1alpha1", "groupPriorityMinimum": 1000, "versionPriority": 15,
            "service": {"namespace": "versa-system", "name": "versa", "port": 443}, "caBundle": "Q0E=",
        },
    });
    let ours_path = format!("{API_SERVICES}/{name}");
    let created = post_raw(&config, API_SERVICES, &ours);
    let exists = fails(raw(&config, "create", API_SERVICES, Some(&ours)));
    assert!(exists.contains(&format!("apiservices.apiregistration.k8s.io \"{name}\" already exists")), "{exists}");

    let names = |list: &Value| -> Vec<String> {
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
    };
    let all = get_raw(&config, API_SERVICES);
    assert_eq!(all["kind"], "APIServiceList");
    assert_eq!(names(&all), ["v1.apps", name]);
    let selected = get_raw(&config, &format!("{API_SERVICES}?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dversa"));
    assert_eq!(names(&selected), [name]);
    let unlabelled = get_raw(&config, &format!("{API_SERVICES}?labelSelector=!app.kubernetes.io%2Fmanaged-by"));
    assert_eq!(names(&unlabelled), ["v1.apps"]);

    let stored = &fake.api_services()[name];
    assert_eq!(stored, &created);
    assert_eq!(stored["spec"], ours["spec"]);
    for assigned in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(stored["metadata"][assigned].is_string(), "{assigned}: {stored}");
    }
    let mut update = stored.clone();
    update["spec"]["versionPriority"] = json!(20);
    ok(raw(&config, "replace", &ours_path, Some(&update)));
    let updated = &fake.api_services()[name];
    assert_eq!(updated["spec"]["versionPriority"], 20);
    assert_eq!(updated["metadata"]["uid"], stored["metadata"]["uid"]);
    assert_ne!(updated["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
    let conflict = fails(raw(&config, "replace", &ours_path, Some(&update)));
    assert!(
        conflict.contains(&format!(
            "Operation cannot be fulfilled on apiservices.apiregistration.k8s.io \"{name}\": the object has been modified"
        )),
        "{conflict}"
    );

    ok(raw(&config, "delete", &ours_path, None));
    let gone = fails(raw(&config, "get", &ours_path, None));
    assert!(gone.contains(&format!("apiservices.apiregistration.k8s.io \"{name}\" not found")), "{gone}");
    assert!(fails(raw(&config, "delete", &ours_path, None)).contains("not found"));
    assert_eq!(fake.api_services().into_keys().collect::<Vec<_>>(), ["v1.apps"]);
}

#[test]
fn fake_kube_keeps_secrets() {
    let fake = FakeKube::start();
    let (_dir, config) = kubeconfig(&fake);
    let secrets = "/api/v1/namespaces/versa-system/secrets";
    let manifest = json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "versa-ca"}, "stringData": {"ca.crt": "PEM"},
    });
    post_raw(&config, secrets, &manifest);
    let secret = &fake.secrets("versa-system")["versa-ca"];
    assert_eq!(secret["data"], json!({"ca.crt": "UEVN"}));
    assert_eq!(secret["metadata"]["namespace"], "versa-system");
    assert!(fake.secrets("default").is_empty());
    let got = get_raw(&config, &format!("{secrets}/versa-ca"));
    assert_eq!(got["data"], secret["data"]);
    let missing = fails(raw(&config, "get", &format!("{secrets}/other"), None));
    assert!(missing.contains("secrets \"other\" not found"), "{missing}");
    assert!(
        fake.requests()
            .iter()
            .any(|(method, path)| method == "POST" && path.starts_with("/api/v1/namespaces/versa-system/secrets")),
        "{:?}",
        fake.requests()
    );
}

// versa in cluster mode, behind the fake: requests sent as kube-aggregator proxies them.

const NAMESPACE: &str = "versa-system";
const SERVICE: &str = "versa";
const RD: &str = "/apis/versa.dev/v1/resourcedefinitions";
const CT: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";
const FRONT_PROXY: &str = "front-proxy-client";

/// Who may do what: a SubjectAccessReview spec → verdict; shared with the fake's policy.
type Policy = Arc<Mutex<Box<dyn Fn(&Value) -> Verdict + Send + Sync>>>;

/// versa in cluster mode with the fake, the CAs, and clients for each kind of caller.
struct Cluster {
    fake: FakeKube,
    versa: Versa,
    _dir: tempfile::TempDir,
    policy: Policy,
    /// versa's serving CA (generated by versa, read from its Secret).
    serving_ca: String,
    front_proxy_ca: Ca,
    client_ca: Ca,
}

impl Cluster {
    fn start() -> Cluster {
        Self::start_with(&[])
    }

    /// [`Cluster::start`] with more `versa serve` flags.
    fn start_with(extra: &[&str]) -> Cluster {
        let fake = FakeKube::start();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("fake.kubeconfig");
        fake.write_kubeconfig(&config);
        let (front_proxy_ca, client_ca) = (Ca::new("front-proxy-ca"), Ca::new("client-ca"));
        let mut authentication = AuthenticationConfig::front_proxy(&front_proxy_ca.pem(), &[FRONT_PROXY]);
        authentication.client_ca = Some(client_ca.pem());
        fake.set_authentication_config(authentication);
        let policy: Policy = Arc::new(Mutex::new(Box::new(|_: &Value| Verdict::allow())));
        let shared = policy.clone();
        fake.set_policy(move |spec| (shared.lock().unwrap())(spec));
        let data = dir.path().join("data");
        let versa = Versa::start_with(
            &data,
            &[
                "--kubeconfig",
                config.to_str().unwrap(),
                "--service-namespace",
                NAMESPACE,
                "--service-name",
                SERVICE,
                // Pick up ConfigMap changes and repair APIServices within a second.
                "--cluster-resync-period",
                "1",
            ]
            .into_iter()
            .chain(extra.iter().copied())
            .collect::<Vec<_>>(),
        );
        let secret = fake.secrets(NAMESPACE).remove("versa-serving-ca").expect("versa keeps its CA in a Secret");
        let b64 = secret["data"]["ca.crt"].as_str().unwrap();
        let serving_ca = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap();
        Cluster { fake, versa, _dir: dir, policy, serving_ca, front_proxy_ca, client_ca }
    }

    fn set_policy(&self, policy: impl Fn(&Value) -> Verdict + Send + Sync + 'static) {
        *self.policy.lock().unwrap() = Box::new(policy);
    }

    /// A client presenting `identity` (or nothing).
    fn client(&self, identity: Option<&(String, String)>) -> Client {
        Client::from_pem(&self.serving_ca, identity.map(|(c, k)| (c.as_str(), k.as_str())), &self.versa.address)
    }

    /// kube-aggregator: the front-proxy certificate.
    fn aggregator(&self) -> Client {
        self.client(Some(&self.front_proxy_ca.client(FRONT_PROXY, &[])))
    }
}

/// Front-proxy headers for `user` in `groups`.
fn as_user<'a>(user: &'a str, groups: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![("X-Remote-User", user)];
    headers.extend(groups.iter().map(|g| ("X-Remote-Group", *g)));
    headers
}

const ADMIN: [&str; 1] = ["system:masters"];

async fn send(c: &Client, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Response {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut all = headers.to_vec();
    if !body.is_empty() {
        all.push(("Content-Type", "application/json"));
    }
    c.request(method, path, &all, body).await
}

/// Waits (up to 30 s) for `f` to hold.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..300 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not reached within 30 s");
}

/// The CronTab definition (namespaced, status and scale subresources), served at `versions`.
fn crontabs(group: &str, versions: &[(&str, bool)]) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    }}});
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, (name, served))| {
            json!({"name": name, "served": served, "storage": i == 0, "schema": schema,
                   "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}})
        })
        .collect();
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": format!("crontabs.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                 "versions": versions},
    })
}

/// Creates a definition as an admin and waits until it is Established.
async fn define(c: &Client, def: &Value) {
    let r = send(c, "POST", RD, &as_user("admin", &ADMIN), Some(def)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let path = format!("{RD}/{}", def["metadata"]["name"].as_str().unwrap());
    for _ in 0..300 {
        let def = send(c, "GET", &path, &as_user("admin", &ADMIN), None).await.json();
        let established = def["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
        if established {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} not Established");
}

#[tokio::test]
async fn front_proxy_certificates_and_tokens_authenticate() {
    let cluster = Cluster::start();
    let list = "/apis/versa.dev/v1/resourcedefinitions";
    let headers = [
        ("X-Remote-User", "bob"),
        ("X-Remote-Uid", "uid-7"),
        ("X-Remote-Group", "devs"),
        ("X-Remote-Group", "ops"),
        ("X-Remote-Extra-Scopes", "read"),
        ("X-Remote-Extra-Scopes", "write"),
        ("X-Remote-Extra-Example.com%2fteam", "blue"),
        ("Audit-ID", "audit-1234"),
    ];

    // kube-aggregator's certificate: the headers are the user, and reach the review whole.
    let r = send(&cluster.aggregator(), "GET", list, &headers, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("audit-id").as_deref(), Some("audit-1234"), "Audit-ID is echoed");
    let review = cluster.fake.access_reviews().pop().unwrap();
    assert_eq!(
        review,
        json!({
            "user": "bob", "uid": "uid-7", "groups": ["devs", "ops", "system:authenticated"],
            "extra": {"example.com/team": ["blue"], "scopes": ["read", "write"]},
            "resourceAttributes": {"verb": "list", "group": "versa.dev", "version": "v1", "resource": "resourcedefinitions"},
        })
    );

    // The same headers are ignored without a certificate, with one from another CA, and with
    // one from the front-proxy CA whose CN is not an allowed name.
    let stranger = Ca::new("front-proxy-ca").client(FRONT_PROXY, &[]);
    let intruder = cluster.front_proxy_ca.client("intruder", &[]);
    for (what, client) in [
        ("no certificate", cluster.client(None)),
        ("another CA", cluster.client(Some(&stranger))),
        ("CN not allowed", cluster.client(Some(&intruder))),
    ] {
        let r = send(&client, "GET", list, &headers, None).await;
        assert_eq!(r.status, 401, "{what}: {}", r.text());
        assert_eq!(r.json()["reason"], "Unauthorized", "{what}");
    }

    // A certificate from the client CA: CN is the user, O the groups.
    let carol = cluster.client_ca.client("carol", &["auditors"]);
    let r = send(&cluster.client(Some(&carol)), "GET", list, &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let review = cluster.fake.access_reviews().pop().unwrap();
    assert_eq!((&review["user"], &review["groups"]), (&json!("carol"), &json!(["auditors", "system:authenticated"])));

    // Bearer tokens go through TokenReview, and the answer is cached.
    cluster.fake.add_token("alice-token", User::new("alice", &["devs"]));
    let anonymous = cluster.client(None);
    for _ in 0..3 {
        let r = send(&anonymous, "GET", list, &[("Authorization", "Bearer alice-token")], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(cluster.fake.token_reviews(), 1, "one TokenReview for three requests");
    let review = cluster.fake.access_reviews().pop().unwrap();
    assert_eq!((&review["user"], &review["groups"]), (&json!("alice"), &json!(["devs", "system:authenticated"])));
    let r = send(&anonymous, "GET", list, &[("Authorization", "Bearer wrong")], None).await;
    assert_eq!(r.status, 401, "{}", r.text());

    // Health answers without credentials; nothing else does.
    assert_eq!(send(&anonymous, "GET", "/readyz", &[], None).await.status, 200);
    assert_eq!(send(&anonymous, "GET", "/livez", &[], None).await.status, 200);
    assert_eq!(send(&anonymous, "GET", "/version", &[], None).await.status, 401);
}

#[tokio::test]
async fn a_rotated_front_proxy_ca_is_picked_up() {
    let cluster = Cluster::start();
    let list = "/apis/versa.dev/v1/resourcedefinitions";
    let user = as_user("bob", &[]);
    assert_eq!(send(&cluster.aggregator(), "GET", list, &user, None).await.status, 200);

    // kube-apiserver's front-proxy CA is replaced (the ConfigMap changes).
    let next = Ca::new("front-proxy-ca-2");
    cluster.fake.set_authentication_config(AuthenticationConfig::front_proxy(&next.pem(), &[FRONT_PROXY]));
    let new_proxy = cluster.client(Some(&next.client(FRONT_PROXY, &[])));
    let old_proxy = cluster.aggregator();
    for _ in 0..300 {
        if send(&new_proxy, "GET", list, &user, None).await.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(send(&new_proxy, "GET", list, &user, None).await.status, 200, "the new CA is trusted");
    assert_eq!(send(&old_proxy, "GET", list, &user, None).await.status, 401, "the old CA no longer is");
}

#[tokio::test]
async fn denied_requests_get_kubes_forbidden() {
    let cluster = Cluster::start();
    let aggregator = cluster.aggregator();
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true)])).await;
    let admin = as_user("admin", &ADMIN);
    let tab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"}, "spec": {"replicas": 1}});
    assert_eq!(send(&aggregator, "POST", CT, &admin, Some(&tab)).await.status, 201);

    cluster.set_policy(
        |spec| {
            if spec["user"] == "mallory" { Verdict::deny("no crontabs for you") } else { Verdict::allow() }
        },
    );
    let mallory = as_user("mallory", &["devs"]);
    let item = format!("{CT}/x");
    let status = format!("{item}/status");
    let scale = format!("{item}/scale");
    let watch = format!("{CT}?watch=true");
    // (method, path, body, what kube names, verb, resource): the 403 message is kube's.
    let cases = [
        ("GET", item.as_str(), None, "crontabs.stable.example.com \"x\"", "get", "crontabs"),
        ("GET", CT, None, "crontabs.stable.example.com", "list", "crontabs"),
        ("GET", &watch, None, "crontabs.stable.example.com", "watch", "crontabs"),
        ("POST", CT, Some(&tab), "crontabs.stable.example.com", "create", "crontabs"),
        ("PUT", &status, Some(&tab), "crontabs.stable.example.com \"x\"", "update", "crontabs/status"),
        ("GET", &scale, None, "crontabs.stable.example.com \"x\"", "get", "crontabs/scale"),
    ];
    for (method, path, body, object, verb, resource) in cases {
        let r = send(&aggregator, method, path, &mallory, body).await;
        assert_eq!(r.status, 403, "{method} {path}: {}", r.text());
        let message = format!(
            "{object} is forbidden: User \"mallory\" cannot {verb} resource \"{resource}\" in API group \
             \"stable.example.com\" in the namespace \"default\": no crontabs for you"
        );
        let status = r.json();
        assert_eq!(
            (status["reason"].as_str(), status["message"].as_str()),
            (Some("Forbidden"), Some(message.as_str()))
        );
    }
    let reviews = cluster.fake.access_reviews();
    let verbs: Vec<(&str, &str)> = reviews
        .iter()
        .filter(|r| r["user"] == "mallory")
        .map(|r| {
            let a = &r["resourceAttributes"];
            (a["verb"].as_str().unwrap(), a["subresource"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(
        verbs,
        [("get", ""), ("list", ""), ("watch", ""), ("create", ""), ("update", "status"), ("get", "scale")]
    );

    // Answers are cached: asking again does not ask kube-apiserver again.
    let before = cluster.fake.access_reviews().len();
    assert_eq!(send(&aggregator, "GET", &item, &mallory, None).await.status, 403);
    assert_eq!(cluster.fake.access_reviews().len(), before, "the denial came from the cache");
    // system:masters is never asked about.
    assert_eq!(send(&aggregator, "GET", &item, &admin, None).await.status, 200);
    assert_eq!(cluster.fake.access_reviews().len(), before);
}

#[tokio::test]
async fn api_services_follow_the_served_versions() {
    let cluster = Cluster::start();
    let aggregator = cluster.aggregator();
    let admin = as_user("admin", &ADMIN);
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&cluster.serving_ca);
    let api_service = |name: &str| cluster.fake.api_services().get(name).cloned();
    let spec = |group: &str, version: &str, group_priority: i64, version_priority: i64| {
        json!({"group": group, "version": version, "caBundle": ca_bundle,
               "service": {"namespace": NAMESPACE, "name": SERVICE, "port": 443},
               "groupPriorityMinimum": group_priority, "versionPriority": version_priority})
    };

    // versa's own group from the start.
    eventually("v1.versa.dev registered", || api_service("v1.versa.dev").is_some()).await;
    let own = api_service("v1.versa.dev").unwrap();
    assert_eq!(own["spec"], spec("versa.dev", "v1", 1000, 15));
    assert_eq!(own["metadata"]["labels"], json!({"versa.dev/managed-by": "versa"}));

    // Others' APIServices: kube's own group (local: no service), one of another aggregated server,
    // and one of another versa installation (our label, another Service).
    cluster.fake.put_api_service(json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}}));
    cluster.fake.put_api_service(json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.stats.example.com"},
        "spec": {"group": "stats.example.com", "version": "v1", "service": {"namespace": "monitoring", "name": "adapter", "port": 443},
                 "groupPriorityMinimum": 100, "versionPriority": 100}}));
    let foreign = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.other.example.com", "labels": {"versa.dev/managed-by": "versa"}},
        "spec": {"group": "other.example.com", "version": "v1", "service": {"namespace": "elsewhere", "name": "versa", "port": 443},
                 "groupPriorityMinimum": 1000, "versionPriority": 100}});
    cluster.fake.put_api_service(foreign);

    // A definition with two served versions: one APIService each, in Kubernetes' version order.
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true), ("v1beta1", true)])).await;
    eventually("both versions registered", || {
        api_service("v1.stable.example.com").is_some() && api_service("v1beta1.stable.example.com").is_some()
    })
    .await;
    assert_eq!(api_service("v1.stable.example.com").unwrap()["spec"], spec("stable.example.com", "v1", 1000, 100));
    assert_eq!(
        api_service("v1beta1.stable.example.com").unwrap()["spec"],
        spec("stable.example.com", "v1beta1", 1000, 99)
    );

    // A version that stops being served loses its APIService; a new one gets one, and the
    // priorities of the others move to keep Kubernetes' order (v2 > v1).
    let path = format!("{RD}/crontabs.stable.example.com");
    // Read, change, write — again when the controller wrote the status in between (409).
    let mut tries = 0;
    let r = loop {
        let mut def = send(&aggregator, "GET", &path, &admin, None).await.json();
        def["spec"]["versions"][1]["served"] = json!(false);
        let mut v2 = def["spec"]["versions"][1].clone();
        v2["name"] = json!("v2");
        v2["served"] = json!(true);
        def["spec"]["versions"].as_array_mut().unwrap().push(v2);
        let r = send(&aggregator, "PUT", &path, &admin, Some(&def)).await;
        tries += 1;
        if r.status != 409 || tries == 20 {
            break r;
        }
    };
    assert_eq!(r.status, 200, "{}", r.text());
    eventually("v1beta1 unregistered, v2 registered, v1 updated", || {
        api_service("v1beta1.stable.example.com").is_none()
            && api_service("v2.stable.example.com").is_some()
            && api_service("v1.stable.example.com").is_some_and(|a| a["spec"]["versionPriority"] == 99)
    })
    .await;
    assert_eq!(api_service("v2.stable.example.com").unwrap()["spec"], spec("stable.example.com", "v2", 1000, 100));

    // A changed APIService is put back.
    let mut tampered = api_service("v2.stable.example.com").unwrap();
    tampered["spec"]["caBundle"] = json!("dGFtcGVyZWQ=");
    cluster.fake.put_api_service(tampered);
    eventually("v2 repaired", || {
        api_service("v2.stable.example.com").is_some_and(|a| a["spec"] == spec("stable.example.com", "v2", 1000, 100))
    })
    .await;

    // The registration is reported on the definition.
    let registered = poll_condition(&aggregator, &path, "APIServiceRegistered").await;
    assert_eq!((registered["status"].as_str(), registered["reason"].as_str()), (Some("True"), Some("Registered")));

    // A group another server already serves is refused with a condition, and nothing is written.
    define(&aggregator, &crontabs("stats.example.com", &[("v1", true)])).await;
    let conflict =
        poll_condition(&aggregator, &format!("{RD}/crontabs.stats.example.com"), "APIServiceRegistered").await;
    assert_eq!((conflict["status"].as_str(), conflict["reason"].as_str()), (Some("False"), Some("GroupConflict")));
    assert!(conflict["message"].as_str().unwrap().contains("\"v1.stats.example.com\""), "{conflict}");
    let taken = api_service("v1.stats.example.com").unwrap();
    assert_eq!(taken["spec"]["service"]["name"], "adapter", "the other server's APIService is untouched");
    assert_eq!(api_service("v1.apps").unwrap()["spec"]["groupPriorityMinimum"], 17800, "kube's APIService untouched");

    // Deleting the definition unregisters its versions; the other server's APIService stays.
    let r = send(&aggregator, "DELETE", &path, &admin, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    eventually("stable.example.com unregistered", || {
        api_service("v1.stable.example.com").is_none() && api_service("v2.stable.example.com").is_none()
    })
    .await;
    assert!(api_service("v1.other.example.com").is_some(), "another server's APIService is left alone");
    assert!(api_service("v1.versa.dev").is_some());
}

/// Waits for condition `type_` on the definition at `path` and returns it.
async fn poll_condition(c: &Client, path: &str, type_: &str) -> Value {
    for _ in 0..300 {
        let def = send(c, "GET", path, &as_user("admin", &ADMIN), None).await.json();
        if let Some(found) =
            def["status"]["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        {
            return found.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path}: no {type_} condition");
}

#[tokio::test]
async fn aggregator_probe_and_namespace_deletion() {
    let cluster = Cluster::start();
    let aggregator = cluster.aggregator();
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true)])).await;

    // kube-aggregator's availability probe, as its own user.
    let probe = as_user("system:kube-aggregator", &[]);
    let r = send(&aggregator, "GET", "/apis/stable.example.com/v1", &probe, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["kind"], "APIResourceList");
    let review = cluster.fake.access_reviews().pop().unwrap();
    assert_eq!(
        review,
        json!({"user": "system:kube-aggregator", "groups": ["system:authenticated"],
               "nonResourceAttributes": {"path": "/apis/stable.example.com/v1", "verb": "get"}})
    );
    for path in ["/apis", "/openapi/v2", "/openapi/v3"] {
        let r = send(&aggregator, "GET", path, &probe, None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }

    // kube's namespace controller empties a terminating namespace with deletecollection.
    let admin = as_user("admin", &ADMIN);
    let doomed = "/apis/stable.example.com/v1/namespaces/doomed/crontabs";
    for name in ["a", "b", "c"] {
        let tab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name}});
        assert_eq!(send(&aggregator, "POST", doomed, &admin, Some(&tab)).await.status, 201);
    }
    let controller = as_user("system:serviceaccount:kube-system:namespace-controller", &["system:serviceaccounts"]);
    let r = send(&aggregator, "DELETE", doomed, &controller, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let review = cluster.fake.access_reviews().pop().unwrap();
    assert_eq!(review["resourceAttributes"]["verb"], "deletecollection");
    assert_eq!(review["resourceAttributes"]["namespace"], "doomed");
    let left = send(&aggregator, "GET", doomed, &controller, None).await.json();
    assert_eq!(left["items"], json!([]));
}

/// A kubeconfig for the real kubectl straight to versa, as a client-CA user in `system:masters`
/// (what a cluster admin's certificate looks like to an aggregated server).
fn admin_kubeconfig(cluster: &Cluster, dir: &Path) -> PathBuf {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let (cert, key) = cluster.client_ca.client("admin", &ADMIN);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: versa\n  cluster:\n    server: https://{}\n    \
         certificate-authority-data: {}\nusers:\n- name: admin\n  user:\n    client-certificate-data: {}\n    \
         client-key-data: {}\ncontexts:\n- name: admin@versa\n  context:\n    cluster: versa\n    user: admin\n\
         current-context: admin@versa\n",
        cluster.versa.address,
        b64(&cluster.serving_ca),
        b64(&cert),
        b64(&key),
    );
    let path = dir.join("admin.kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}

/// Issue 15, defect 3: behind kube-apiserver, whose garbage collector acts on versa's objects,
/// `kubectl delete --cascade=orphan|foreground` sets the `orphan` / `foregroundDeletion`
/// finalizer and `deletionTimestamp` exactly as kube-apiserver does, so that the collector
/// orphans the dependents (or deletes them first) and then removes the finalizer; the
/// default (`Background`) deletes at once. Before, orphaning deleted the dependents.
#[tokio::test]
async fn delete_propagation_sets_the_garbage_collectors_finalizers() {
    let cluster = Cluster::start();
    let aggregator = cluster.aggregator();
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true)])).await;
    let dir = tempfile::tempdir().unwrap();
    let config = admin_kubeconfig(&cluster, dir.path());
    let admin = as_user("admin", &ADMIN);
    let tabs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let make = |name: &str, finalizers: &[&str]| {
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
               "metadata": {"name": name, "finalizers": finalizers}, "spec": {"replicas": 1}})
    };
    for (name, finalizers) in
        [("orphaned", &[][..]), ("foreground", &[]), ("background", &[]), ("held", &["example.com/hold"][..])]
    {
        let r = send(&aggregator, "POST", tabs, &admin, Some(&make(name, finalizers))).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let get = |name: &'static str| {
        let (aggregator, admin) = (&aggregator, &admin);
        async move { send(aggregator, "GET", &format!("{tabs}/{name}"), admin, None).await }
    };

    // Through the real kubectl (discovery from versa, DeleteOptions in the body).
    ok(kubectl(&config, &["delete", "crontab", "orphaned", "--cascade=orphan", "--wait=false"]));
    ok(kubectl(&config, &["delete", "crontab", "foreground", "--cascade=foreground", "--wait=false"]));
    ok(kubectl(&config, &["delete", "crontab", "background", "--wait=false"]));
    let orphaned = get("orphaned").await.json();
    assert_eq!(orphaned["metadata"]["finalizers"], json!(["orphan"]), "{orphaned}");
    assert!(orphaned["metadata"]["deletionTimestamp"].is_string(), "{orphaned}");
    assert_eq!(orphaned["metadata"]["deletionGracePeriodSeconds"], json!(0));
    assert_eq!(orphaned["metadata"]["generation"], json!(2), "kube's markAsDeleting moves generation on");
    let foreground = get("foreground").await.json();
    assert_eq!(foreground["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{foreground}");
    assert!(foreground["metadata"]["deletionTimestamp"].is_string(), "{foreground}");
    assert_eq!(get("background").await.status, 404, "Background deletes at once");

    // Another finalizer stays; a later delete may change the policy, never the timestamp.
    let path = format!("{tabs}/held");
    let orphan = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"});
    let held = send(&aggregator, "DELETE", &path, &admin, Some(&orphan)).await.json();
    assert_eq!(held["metadata"]["finalizers"], json!(["example.com/hold", "orphan"]), "{held}");
    let stamp = held["metadata"]["deletionTimestamp"].clone();
    let background = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
    let held = send(&aggregator, "DELETE", &path, &admin, Some(&background)).await.json();
    assert_eq!(held["metadata"]["finalizers"], json!(["example.com/hold"]), "{held}");
    assert_eq!(held["metadata"]["deletionTimestamp"], stamp);
    // The deprecated orphanDependents is honoured too.
    let deprecated = json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true});
    let held = send(&aggregator, "DELETE", &path, &admin, Some(&deprecated)).await.json();
    assert_eq!(held["metadata"]["finalizers"], json!(["example.com/hold", "orphan"]), "{held}");

    // kube's garbage collector, having orphaned the dependents, removes its finalizer as a
    // metadata client does: the object goes.
    let gc = as_user("system:serviceaccount:kube-system:generic-garbage-collector", &["system:serviceaccounts"]);
    let mut remove = gc.clone();
    remove.push(("Content-Type", "application/merge-patch+json"));
    let body = json!({"metadata": {"finalizers": null}}).to_string();
    let r = aggregator.request("PATCH", &format!("{tabs}/orphaned"), &remove, body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(get("orphaned").await.status, 404);
}

/// Issue 15, request limits: over `--max-requests-inflight` a request is refused at once with
/// kube's 429 and `Retry-After`, and does no work; mutating requests have their own limit;
/// `system:masters` is never refused; a place is given back when its request is answered, and
/// every request that was let in is answered normally. A read held in authorization (the fake's
/// SubjectAccessReview waits for the test to let it go) keeps the only read-only place.
#[tokio::test]
async fn requests_over_the_in_flight_limits_get_429() {
    let cluster = Cluster::start_with(&["--max-requests-inflight", "1", "--max-mutating-requests-inflight", "1"]);
    let aggregator = cluster.aggregator();
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true)])).await;
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let held = gate.clone();
    cluster.set_policy(move |spec| {
        if spec["user"].as_str().is_some_and(|u| u.starts_with("slow")) {
            let (open, changed) = &*held;
            let mut open = open.lock().unwrap();
            while !*open {
                open = changed.wait(open).unwrap();
            }
        }
        Verdict::allow()
    });
    let tabs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let alice = as_user("alice", &["system:authenticated"]);

    let slow = tokio::spawn({
        let c = aggregator.clone();
        async move { send(&c, "GET", tabs, &as_user("slow", &["system:authenticated"]), None).await }
    });
    let fake = &cluster.fake;
    eventually("the slow read is being authorized", || fake.access_reviews().iter().any(|r| r["user"] == "slow")).await;

    // A flood of reads while the place is taken: each refused at once, as kube refuses it.
    let flood: Vec<_> = (0..20)
        .map(|_| {
            let (c, alice) = (aggregator.clone(), alice.clone());
            tokio::spawn(async move { send(&c, "GET", tabs, &alice, None).await })
        })
        .collect();
    for r in flood {
        let r = r.await.unwrap();
        assert_eq!(r.status, 429, "{}", r.text());
        assert_eq!(r.header("retry-after").as_deref(), Some("1"));
        let body = r.json();
        assert_eq!(
            (&body["reason"], &body["message"], &body["details"]["retryAfterSeconds"]),
            (&json!("TooManyRequests"), &json!("Too many requests, please try again later."), &json!(1))
        );
    }
    // Writes have a limit of their own; system:masters always gets an answer.
    let tab = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "w"}});
    let write = tokio::spawn({
        let (c, alice, tab) = (aggregator.clone(), alice.clone(), tab.clone());
        async move { send(&c, "POST", tabs, &alice, Some(&tab)).await }
    });
    let r = send(&aggregator, "GET", tabs, &as_user("admin", &ADMIN), None).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Let the slow read go: it and the write are answered, and reads are served again.
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    let r = slow.await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let r = write.await.unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let r = send(&aggregator, "GET", tabs, &alice, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["items"][0]["metadata"]["name"], "w");

    // `?timeout=` bounds a request: one held past it is answered 504, kube's words.
    *gate.0.lock().unwrap() = false;
    let r = send(&aggregator, "GET", &format!("{tabs}?timeout=1s"), &as_user("slow-again", &[]), None).await;
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "Timeout: request did not complete within requested timeout - context deadline exceeded"
    );
    let r = send(&aggregator, "GET", &format!("{tabs}?timeout=later"), &alice, None).await;
    assert_eq!(r.status, 400, "{}", r.text());
}

/// Cluster mode's audit log (issue 15): the user is the one kube-aggregator names in its
/// front-proxy headers, the source IPs come through its X-Forwarded-For, the Audit-ID is the
/// one it sends, the authorization decision and reason are the SubjectAccessReview's, and
/// denied (403) and limited (429, which kube writes as text: only its code) requests are
/// recorded as kube records them.
#[tokio::test]
async fn the_audit_log_names_the_proxied_user() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  users: [admin, slow]\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let cluster = Cluster::start_with(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
        "--max-requests-inflight",
        "1",
    ]);
    let aggregator = cluster.aggregator();
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true)])).await;
    let gate = Arc::new((Mutex::new(true), std::sync::Condvar::new()));
    let held = gate.clone();
    cluster.set_policy(move |spec| {
        if spec["user"] == "slow" {
            let (open, changed) = &*held;
            let mut open = open.lock().unwrap();
            while !*open {
                open = changed.wait(open).unwrap();
            }
        }
        match spec["user"].as_str() {
            Some("mallory") => Verdict::deny("no crontabs for you"),
            _ => {
                Verdict { allowed: true, denied: false, reason: "RBAC: allowed by ClusterRoleBinding \"devs\"".into() }
            }
        }
    });
    let tabs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    // What kube-aggregator adds when it proxies: the user, the client's address, the Audit-ID.
    let proxied = |user: &'static str, id: &'static str| {
        let mut headers = as_user(user, &["devs"]);
        headers.extend([("X-Remote-Extra-Scopes", "view"), ("X-Forwarded-For", "198.51.100.3"), ("Audit-ID", id)]);
        headers
    };
    let r = send(&aggregator, "GET", tabs, &proxied("alice", "agg-allowed"), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("audit-id").as_deref(), Some("agg-allowed"));
    let r = send(&aggregator, "GET", tabs, &proxied("mallory", "agg-denied"), None).await;
    assert_eq!(r.status, 403, "{}", r.text());
    let forbidden = r.json();

    // Hold a read in authorization; the next read is over the limit.
    *gate.0.lock().unwrap() = false;
    let slow = tokio::spawn({
        let c = aggregator.clone();
        async move { send(&c, "GET", tabs, &as_user("slow", &[]), None).await }
    });
    let fake = &cluster.fake;
    eventually("the slow read is being authorized", || fake.access_reviews().iter().any(|r| r["user"] == "slow")).await;
    let r = send(&aggregator, "GET", tabs, &proxied("alice", "agg-limited"), None).await;
    assert_eq!(r.status, 429, "{}", r.text());
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    assert_eq!(slow.await.unwrap().status, 200);

    let mut lines = Vec::new();
    for _ in 0..100 {
        lines = std::fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_owned).collect::<Vec<_>>();
        if lines.len() >= 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let events: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 6, "{lines:#?}");
    let user = json!({"username": "alice", "groups": ["devs", "system:authenticated"], "extra": {"scopes": ["view"]}});
    let object_ref =
        json!({"resource": "crontabs", "namespace": "default", "apiGroup": "stable.example.com", "apiVersion": "v1"});
    let want = |id: &str, stage: &str, user: &Value, more: Value| {
        let mut e = json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": id,
            "stage": stage, "requestURI": tabs, "verb": "list", "user": user,
            "sourceIPs": ["198.51.100.3", "127.0.0.1"], "objectRef": object_ref});
        for (k, v) in more.as_object().unwrap() {
            e[k] = v.clone();
        }
        e
    };
    let strip = |mut e: Value| {
        let o = e.as_object_mut().unwrap();
        assert!(o.remove("requestReceivedTimestamp").is_some() && o.remove("stageTimestamp").is_some());
        e
    };
    let mallory =
        json!({"username": "mallory", "groups": ["devs", "system:authenticated"], "extra": {"scopes": ["view"]}});
    let expected = [
        want("agg-allowed", "RequestReceived", &user, json!({})),
        want(
            "agg-allowed",
            "ResponseComplete",
            &user,
            json!({"responseStatus": {"metadata": {}, "code": 200},
            "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "RBAC: allowed by ClusterRoleBinding \"devs\""}}),
        ),
        want("agg-denied", "RequestReceived", &mallory, json!({})),
        want(
            "agg-denied",
            "ResponseComplete",
            &mallory,
            json!({
            "responseStatus": {"metadata": {}, "status": "Failure", "message": forbidden["message"], "reason": "Forbidden",
                               "details": {"group": "stable.example.com", "kind": "crontabs"}, "code": 403},
            "annotations": {"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": "no crontabs for you"}}),
        ),
        want("agg-limited", "RequestReceived", &user, json!({})),
        want("agg-limited", "ResponseComplete", &user, json!({"responseStatus": {"metadata": {}, "code": 429}})),
    ];
    for (got, want) in events.into_iter().zip(expected) {
        assert_eq!(strip(got), want);
    }
}

/// Issue 17, cluster mode: the admission configuration and the Namespaces are kube-apiserver's.
/// A policy put there takes effect without a restart; a namespace being terminated refuses
/// creates, one that does not exist is not found — kube's NamespaceLifecycle, which
/// kube-apiserver does not run for aggregated APIs.
#[tokio::test]
async fn admission_follows_kube_apiserver() {
    let cluster = Cluster::start();
    let aggregator = cluster.aggregator();
    define(&aggregator, &crontabs("stable.example.com", &[("v1", true)])).await;
    let admin = as_user("admin", &ADMIN);
    let tab = |name: &str, replicas: i64| json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name}, "spec": {"replicas": replicas}});
    assert_eq!(send(&aggregator, "POST", CT, &admin, Some(&tab("before", 10))).await.status, 201);

    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "max"},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": ["stable.example.com"], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"], "resources": ["crontabs"]}]},
                 "validations": [{"expression": "object.spec.replicas <= 5", "message": "at most 5 replicas"}]},
    }));
    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "max-binding"},
        "spec": {"policyName": "max", "validationActions": ["Deny"]},
    }));
    let want = "ValidatingAdmissionPolicy 'max' with binding 'max-binding' denied request: at most 5 replicas";
    let mut denied = None;
    for i in 0..100 {
        let r = send(&aggregator, "POST", CT, &admin, Some(&tab(&format!("after-{i}"), 10))).await;
        if r.status != 201 {
            denied = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let denied = denied.expect("the policy from kube-apiserver takes effect");
    assert!(denied.text().contains(want), "{}", denied.text());
    assert_eq!(send(&aggregator, "POST", CT, &admin, Some(&tab("small", 2))).await.status, 201);

    // A change there takes effect without a restart (the watch delivers it).
    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "max"},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": ["stable.example.com"], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"], "resources": ["crontabs"]}]},
                 "validations": [{"expression": "object.spec.replicas <= 20", "message": "at most 20 replicas"}]},
    }));
    eventually_status(&aggregator, &admin, &tab("raised", 10), 201).await;

    // The CEL authorizer asks kube-apiserver (SubjectAccessReview) about the request's user.
    cluster.set_policy(|spec| {
        let verb = spec["resourceAttributes"]["verb"].as_str().unwrap_or_default();
        if spec["user"] == "bob" && verb == "approve" {
            Verdict::deny("bob approves nothing")
        } else {
            Verdict::allow()
        }
    });
    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "approved"},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": ["stable.example.com"], "apiVersions": ["v1"],
                                                          "operations": ["CREATE"], "resources": ["crontabs"]}]},
                 "validations": [{
                     "expression": "object.spec.replicas < 3 || authorizer.group('stable.example.com').resource('crontabs').namespace(object.metadata.namespace).check('approve').allowed()",
                     "message": "big crontabs need approval"}]},
    }));
    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "approved-binding"},
        "spec": {"policyName": "approved", "validationActions": ["Deny"]},
    }));
    let bob = as_user("bob", &[]);
    let r = eventually_status(&aggregator, &bob, &tab("bobs", 4), 422).await;
    assert!(r.text().contains("big crontabs need approval"), "{}", r.text());
    let asked = cluster.fake.access_reviews();
    let approve = asked.iter().find(|s| s["resourceAttributes"]["verb"] == "approve").expect("an approve review");
    assert_eq!(approve["user"], "bob");
    assert_eq!(approve["resourceAttributes"]["version"], "*", "{approve}");
    assert_eq!(approve["resourceAttributes"]["namespace"], "default", "{approve}");
    let alice = as_user("alice", &[]);
    assert_eq!(send(&aggregator, "POST", CT, &alice, Some(&tab("alices", 4))).await.status, 201);

    // Parameters from one of kube-apiserver's own kinds: a ConfigMap, watched from it.
    cluster.fake.put_config_map("default", json!({"metadata": {"name": "limits"}, "data": {"max": "3"}}));
    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "limited"},
        "spec": {"failurePolicy": "Fail",
                 "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                 "matchConstraints": {"resourceRules": [{"apiGroups": ["stable.example.com"], "apiVersions": ["v1"],
                                                          "operations": ["CREATE"], "resources": ["crontabs"]}]},
                 "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
                                  "messageExpression": "'at most ' + params.data.max + ' replicas here'"}]},
    }));
    cluster.fake.put_admission(json!({
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "limited-binding"},
        "spec": {"policyName": "limited", "validationActions": ["Deny"],
                 "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}},
    }));
    let r = eventually_status(&aggregator, &admin, &tab("limited", 4), 422).await;
    assert!(r.text().contains("at most 3 replicas here"), "{}", r.text());
    cluster.fake.put_config_map("default", json!({"metadata": {"name": "limits"}, "data": {"max": "10"}}));
    eventually_status(&aggregator, &admin, &tab("unlimited", 4), 201).await;
    // Followed with watches, not polled.
    let requests = cluster.fake.requests();
    let watched =
        |prefix: &str| requests.iter().any(|(m, p)| m == "GET" && p.starts_with(prefix) && p.contains("watch=true"));
    assert!(watched("/api/v1/configmaps?"), "{requests:?}");
    assert!(watched("/api/v1/namespaces?"), "{requests:?}");
    assert!(watched("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies?"), "{requests:?}");

    cluster.fake.put_namespace(json!({"metadata": {"name": "leaving"}, "status": {"phase": "Terminating"}}));
    let leaving = "/apis/stable.example.com/v1/namespaces/leaving/crontabs";
    let mut refused = None;
    for _ in 0..100 {
        let r = send(&aggregator, "POST", leaving, &admin, Some(&tab("late", 1))).await;
        if r.status == 403 {
            refused = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let refused = refused.expect("a terminating namespace refuses creates");
    assert!(
        refused.text().contains("unable to create new content in namespace leaving because it is being terminated"),
        "{}",
        refused.text()
    );
    let r = send(
        &aggregator,
        "POST",
        "/apis/stable.example.com/v1/namespaces/nowhere/crontabs",
        &admin,
        Some(&tab("x", 1)),
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains(r#"namespaces \"nowhere\" not found"#), "{}", r.text());
}

/// POSTs `object` to [`CT`] as `user` until the answer is `want` (the configuration from
/// kube-apiserver reaches versa through a watch); the last answer.
async fn eventually_status(aggregator: &Client, user: &[(&str, &str)], object: &Value, want: u16) -> Response {
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    for i in 0..100 {
        let mut object = object.clone();
        object["metadata"]["name"] = json!(format!("{name}-{i}"));
        let r = send(aggregator, "POST", CT, user, Some(&object)).await;
        if r.status == want {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("POST {CT} never answered {want}");
}
