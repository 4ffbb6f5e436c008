//! Versions and conversion end to end: the real `versa serve`, a real HTTPS conversion webhook
//! (`webhook.rs`), raw HTTPS requests (`client.rs`) and the real `kubectl`, checked against what
//! kube-apiserver does for a CustomResourceDefinition with several versions (the seed chapter
//! "Versions in CustomResourceDefinitions" of `001_caebc94cf39d3735.txt`, the Pizza of
//! `003_2f1e71533aee8360.txt`, and `apiextensions-apiserver/pkg/apiserver/conversion`).
//!
//! Where an object is stored is internal (the embedded store is a redb file that cannot be read
//! while versa runs), so the tests observe it through behaviour: a read at the version an object
//! is stored at needs no conversion, hence no webhook call. The webhook counts its calls.
//!
//! versa goes beyond kube-apiserver in one documented way: after a storage-version change it
//! rewrites the objects itself and then trims `status.storedVersions` to the storage version
//! (kube-apiserver leaves both to an external migrator). The tests assert that too.
//!
//! Tests that check many independent details collect every mismatch ([`Checks`]) so that one run
//! lists all divergences, not just the first.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "client.rs"]
mod client;
#[path = "webhook.rs"]
mod webhook;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use client::{Client, Response, Watch};
use serde_json::{Value, json};
use versa_e2e::{Versa, json_eq, ok};
use webhook::{Mode, Webhook};

/// The definitions collection.
const RD: &str = "/apis/versa.dev/v1/resourcedefinitions";
/// The Pizza group of "Programming Kubernetes" chapter 9.
const PIZZA: &str = "restaurant.programming-kubernetes.info";
/// How long a watch read may wait for an event the test caused (generous: shared machine).
const EVENT_WAIT: Duration = Duration::from_secs(30);
/// How long versa may take to migrate a handful of objects after a storage-version change.
const MIGRATION_WAIT: Duration = Duration::from_secs(120);
/// The webhook timeout the failure tests give versa, in seconds.
const WEBHOOK_TIMEOUT_SECONDS: &str = "2";

// ---------------------------------------------------------------------------------------------
// Support.

/// A running versa, an admin client and kubectl for it.
struct Server {
    versa: Versa,
    client: Client,
}

/// Starts versa in `dir` with `flags` and waits until it is ready.
async fn start(dir: &Path, flags: &[&str]) -> Server {
    let versa = Versa::start_with(dir, flags);
    let client = Client::admin(&versa.data_dir, &versa.address);
    poll("versa ready", Duration::from_secs(30), || {
        let client = client.clone();
        async move { (client.get("/readyz").await.status == 200).then_some(()) }
    })
    .await;
    Server { versa, client }
}

/// Whether `versa serve` knows `flag` (the server is being built while these tests are written:
/// a missing flag is reported by the test that needs it, and the rest still runs).
fn serve_has_flag(flag: &str) -> bool {
    let out = std::process::Command::new(versa_e2e::versa_bin()).args(["serve", "--help"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains(flag)
}

/// Calls `f` every 50 ms until it returns `Some`, for at most `limit` (a bound so that a broken
/// server fails the test, not a timing claim).
async fn poll<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("{what}: not reached within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Like [`poll`], but gives up with `None` instead of failing.
async fn try_poll<T, F, Fut>(limit: Duration, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Soft assertions: every mismatch is recorded, and [`Checks::finish`] fails with all of them.
#[derive(Debug, Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn check(&mut self, what: &str, ok: bool, detail: impl std::fmt::Display) {
        if !ok {
            self.failures.push(format!("{what}: {detail}"));
        }
    }

    fn eq(&mut self, what: &str, got: &Value, want: &Value) -> bool {
        let same = json_eq(got, want);
        if !same {
            self.failures.push(format!("{what}:\n      got:  {got}\n      want: {want}"));
        }
        same
    }

    /// An answer with this HTTP status (the body is shown when not).
    fn code(&mut self, what: &str, r: &Response, code: u16) -> bool {
        let same = r.status == code;
        if !same {
            self.failures.push(format!("{what}: HTTP {} (want {code}): {}", r.status, r.text()));
        }
        same
    }

    /// A 500 `Status` whose message starts with `prefix` and contains every one of `fragments`
    /// (kube: `conversion webhook for <group>/<version>, Kind=<Kind> failed: <reason>`).
    fn conversion_failure(&mut self, what: &str, r: &Response, prefix: &str, fragments: &[&str]) {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        let message = body["message"].as_str().unwrap_or("");
        let shape_ok =
            r.status == 500 && body["kind"] == "Status" && body["status"] == "Failure" && body["code"] == 500;
        let message_ok = message.starts_with(prefix) && fragments.iter().all(|f| message.contains(f));
        if !shape_ok || !message_ok {
            self.failures.push(format!(
                "{what}:\n      got:  HTTP {} {}\n      want: HTTP 500 Status Failure, message starting {prefix:?} containing {fragments:?}",
                r.status,
                r.text()
            ));
        }
    }

    fn finish(self) {
        if !self.failures.is_empty() {
            panic!("{} mismatch(es):\n  - {}", self.failures.len(), self.failures.join("\n  - "));
        }
    }
}

/// A condition of a definition by type.
fn condition<'a>(def: &'a Value, type_: &str) -> Option<&'a Value> {
    def.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == type_)
}

/// Creates a definition and waits until it is Established; returns it.
async fn define(c: &Client, def: &Value) -> Value {
    let r = c.post(RD, def).await;
    assert_eq!(r.status, 201, "creating the definition: {}", r.text());
    let path = format!("{RD}/{}", def["metadata"]["name"].as_str().unwrap());
    poll("definition Established", Duration::from_secs(30), || {
        let (c, path) = (c.clone(), path.clone());
        async move {
            let def = c.get(&path).await.json();
            condition(&def, "Established").is_some_and(|e| e["status"] == "True").then_some(def)
        }
    })
    .await
}

/// Reads a definition, lets `change` edit it, and PUTs it back; returns the answer.
async fn update_definition(c: &Client, name: &str, change: impl FnOnce(&mut Value)) -> Response {
    let path = format!("{RD}/{name}");
    let mut def = c.get(&path).await.json();
    change(&mut def);
    c.put(&path, &def).await
}

/// `status.storedVersions` of a definition.
async fn stored_versions(c: &Client, name: &str) -> Value {
    c.get(&format!("{RD}/{name}")).await.json()["status"]["storedVersions"].clone()
}

/// Waits until `status.storedVersions` is `want`; returns whether it got there.
async fn wait_stored_versions(c: &Client, name: &str, want: &Value, limit: Duration) -> bool {
    try_poll(limit, || async move { json_eq(&stored_versions(c, name).await, want).then_some(()) }).await.is_some()
}

/// Waits until `path` answers 200 (a definition change being served).
async fn wait_served(c: &Client, path: &str) {
    poll(&format!("{path} served"), Duration::from_secs(30), || async move {
        (c.get(path).await.status == 200).then_some(())
    })
    .await;
}

/// Creates an object (must answer 201) and returns it.
async fn create(c: &Client, collection: &str, obj: &Value) -> Value {
    let r = c.post(collection, obj).await;
    assert_eq!(r.status, 201, "creating {} at {collection}: {}", obj["metadata"]["name"], r.text());
    r.json()
}

/// `metadata.name` of each item of a list, sorted.
fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    names.sort();
    names
}

/// The items of a list by name.
fn by_name(list: &Value) -> std::collections::BTreeMap<String, Value> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| (i["metadata"]["name"].as_str().unwrap_or("").to_owned(), i.clone()))
        .collect()
}

/// The item `name` of a [`by_name`] map (`Null` when missing, so that checks report it).
fn pick(items: &std::collections::BTreeMap<String, Value>, name: &str) -> Value {
    items.get(name).cloned().unwrap_or(Value::Null)
}

/// An object without `apiVersion` (to compare the same object read at two versions).
fn without_api_version(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(o) = obj.as_object_mut() {
        o.remove("apiVersion");
    }
    obj
}

/// The `desiredAPIVersion` and the `(apiVersion, name)` of each object of a recorded review.
fn review_summary(review: &Value) -> Value {
    let objects: Vec<Value> = review["request"]["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| json!([o["apiVersion"], o["metadata"]["name"]]))
        .collect();
    json!({"desired": review["request"]["desiredAPIVersion"], "objects": objects})
}

/// The next two watch events as `[type, name, apiVersion, spec]`.
async fn two_events(w: &mut Watch, what: &str) -> Vec<Value> {
    let mut got = Vec::new();
    for i in 0..2 {
        let ev = w.event(EVENT_WAIT, &format!("{what} event {i}")).await;
        got.push(json!([
            ev["type"],
            ev["object"]["metadata"]["name"],
            ev["object"]["apiVersion"],
            ev["object"]["spec"]
        ]));
    }
    got
}

/// How many objects named `name` (at revision `rv`, if given) the recorded reviews asked to convert.
fn conversions_of(reviews: &[Value], name: &str, rv: Option<&str>) -> usize {
    reviews
        .iter()
        .flat_map(|r| r["request"]["objects"].as_array().cloned().unwrap_or_default())
        .filter(|o| o["metadata"]["name"] == name && rv.is_none_or(|rv| o["metadata"]["resourceVersion"] == rv))
        .count()
}

/// Runs kubectl with the admin kubeconfig and a discovery cache of this server's own (kubectl
/// caches discovery per host and port, and ports are reused by later servers).
fn kubectl(versa: &Versa, args: &[&str]) -> std::process::Output {
    let cache = versa.data_dir.join("kubectl-cache");
    let mut all = vec!["--cache-dir", cache.to_str().unwrap()];
    all.extend_from_slice(args);
    versa.kubectl(&all)
}

/// Runs kubectl until it succeeds and `check` accepts its stdout (kubectl caches discovery; a
/// few retries absorb a definition that was served a moment ago). Returns stdout and stderr.
fn kubectl_until(versa: &Versa, args: &[&str], check: impl Fn(&str) -> bool) -> (String, String) {
    let mut last = (String::new(), String::new());
    for _ in 0..100 {
        let out = kubectl(versa, args);
        last = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        if out.status.success() && check(&last.0) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("kubectl {args:?} never gave the expected output; last stdout:\n{}\nstderr:\n{}", last.0, last.1);
}

/// Writes `text` to a file in the data directory and returns its path.
fn manifest(versa: &Versa, name: &str, text: &str) -> String {
    let path = versa.data_dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The Pizza (Programming Kubernetes, chapter 9).

/// Pizzas in namespace `default` at `version`.
fn pizzas(version: &str) -> String {
    format!("/apis/{PIZZA}/{version}/namespaces/default/pizzas")
}

fn pizza_path(version: &str, name: &str) -> String {
    format!("{}/{name}", pizzas(version))
}

/// The Pizza definition: `v1alpha1` with `spec.toppings: [string]`, `v1beta1` with
/// `spec.toppings: [{name, quantity}]`, both served, `storage` the storage version.
fn pizza_definition(conversion: Value, storage: &str) -> Value {
    let schema = |toppings: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"toppings": toppings}},
        }}})
    };
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": format!("pizzas.{PIZZA}")},
        "spec": {
            "group": PIZZA,
            "scope": "Namespaced",
            "names": {"plural": "pizzas", "singular": "pizza", "kind": "Pizza", "listKind": "PizzaList"},
            "versions": [
                {
                    "name": "v1alpha1", "served": true, "storage": storage == "v1alpha1",
                    "schema": schema(json!({"type": "array", "items": {"type": "string"}})),
                },
                {
                    "name": "v1beta1", "served": true, "storage": storage == "v1beta1",
                    "schema": schema(json!({"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"},
                        "quantity": {"type": "integer"},
                    }}})),
                },
            ],
            "conversion": conversion,
        },
    })
}

fn pizza_alpha(name: &str, toppings: &[&str]) -> Value {
    json!({
        "apiVersion": format!("{PIZZA}/v1alpha1"), "kind": "Pizza", "metadata": {"name": name},
        "spec": {"toppings": toppings},
    })
}

fn pizza_beta(name: &str, toppings: &[(&str, i64)]) -> Value {
    json!({
        "apiVersion": format!("{PIZZA}/v1beta1"), "kind": "Pizza", "metadata": {"name": name},
        "spec": {"toppings": beta_toppings(toppings)},
    })
}

fn beta_toppings(toppings: &[(&str, i64)]) -> Value {
    toppings.iter().map(|(name, quantity)| json!({"name": name, "quantity": quantity})).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. The Pizza end to end through the webhook.

#[tokio::test]
async fn pizza_through_the_webhook() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    define(c, &pizza_definition(webhook.conversion(&["v1", "v1beta1"]), "v1alpha1")).await;
    let mut checks = Checks::default();

    // Created at the storage version: nothing to convert.
    webhook.reset();
    let created = create(c, &pizzas("v1alpha1"), &pizza_alpha("margherita", &["mozzarella", "tomato", "tomato"])).await;
    checks.eq("create at v1alpha1 (storage): webhook calls", &json!(webhook.calls()), &json!(0));
    checks.eq("created", &created["spec"], &json!({"toppings": ["mozzarella", "tomato", "tomato"]}));

    // Read at v1beta1: one call; duplicates grouped in order.
    webhook.reset();
    let r = c.get(&pizza_path("v1beta1", "margherita")).await;
    checks.code("GET at v1beta1", &r, 200);
    let beta = r.json();
    checks.eq(
        "GET at v1beta1",
        &json!([beta["apiVersion"], beta["kind"], beta["spec"]]),
        &json!([format!("{PIZZA}/v1beta1"), "Pizza", {"toppings": beta_toppings(&[("mozzarella", 1), ("tomato", 2)])}]),
    );
    checks.eq("metadata is the same at both versions", &beta["metadata"], &created["metadata"]);
    let reviews = webhook.requests();
    checks.eq("GET at v1beta1: webhook calls", &json!(reviews.len()), &json!(1));
    if let Some(review) = reviews.first() {
        checks.eq(
            "ConversionReview sent (first of conversionReviewVersions)",
            &json!([review["apiVersion"], review["kind"]]),
            &json!(["apiextensions.k8s.io/v1", "ConversionReview"]),
        );
        checks.eq(
            "ConversionReview request",
            &review_summary(review),
            &json!({"desired": format!("{PIZZA}/v1beta1"), "objects": [[format!("{PIZZA}/v1alpha1"), "margherita"]]}),
        );
        checks.check(
            "ConversionReview request.uid",
            review["request"]["uid"].as_str().is_some_and(|u| !u.is_empty()),
            &review["request"],
        );
    }

    // Written at v1beta1 (a PUT of what was read): stored at v1alpha1, so a read there needs no
    // webhook.
    let mut changed = beta.clone();
    changed["spec"]["toppings"] = beta_toppings(&[("mozzarella", 2), ("basil", 1)]);
    let r = c.put(&pizza_path("v1beta1", "margherita"), &changed).await;
    if checks.code("PUT at v1beta1", &r, 200) {
        checks.eq(
            "PUT at v1beta1 answers at v1beta1",
            &json!([r.json()["apiVersion"], r.json()["spec"]]),
            &json!([format!("{PIZZA}/v1beta1"), {"toppings": beta_toppings(&[("mozzarella", 2), ("basil", 1)])}]),
        );
    }
    webhook.reset();
    let alpha = c.get(&pizza_path("v1alpha1", "margherita")).await.json();
    checks.eq(
        "read at v1alpha1 after the v1beta1 write",
        &alpha["spec"],
        &json!({"toppings": ["mozzarella", "mozzarella", "basil"]}),
    );
    checks.eq("GET at the storage version: webhook calls", &json!(webhook.calls()), &json!(0));

    // Created at v1beta1.
    let quattro =
        pizza_beta("quattro-formaggi", &[("mozzarella", 1), ("gorgonzola", 1), ("parmesan", 1), ("fontina", 1)]);
    let r = c.post(&pizzas("v1beta1"), &quattro).await;
    if checks.code("create at v1beta1", &r, 201) {
        checks.eq("create at v1beta1 answers at v1beta1", &r.json()["spec"], &quattro["spec"]);
    }
    webhook.reset();
    let r = c.get(&pizza_path("v1alpha1", "quattro-formaggi")).await;
    checks.eq(
        "v1beta1-created pizza at v1alpha1",
        &r.json()["spec"],
        &json!({"toppings": ["mozzarella", "gorgonzola", "parmesan", "fontina"]}),
    );
    checks.eq("GET at the storage version: webhook calls", &json!(webhook.calls()), &json!(0));

    // Lists at either version: (version, margherita's spec, quattro-formaggi's spec there).
    // The last list, v1beta1's, is where the watches below start from.
    let mut list_beta = Value::Null;
    for (version, margherita, quattro_formaggi) in [
        (
            "v1alpha1",
            json!({"toppings": ["mozzarella", "mozzarella", "basil"]}),
            json!({"toppings": ["mozzarella", "gorgonzola", "parmesan", "fontina"]}),
        ),
        ("v1beta1", json!({"toppings": beta_toppings(&[("mozzarella", 2), ("basil", 1)])}), quattro["spec"].clone()),
    ] {
        let list = c.get(&pizzas(version)).await.json();
        let api_version = format!("{PIZZA}/{version}");
        checks.eq(
            &format!("LIST at {version}"),
            &json!([list["apiVersion"], list["kind"], names(&list)]),
            &json!([api_version, "PizzaList", ["margherita", "quattro-formaggi"]]),
        );
        let items = by_name(&list);
        checks.eq(
            &format!("LIST at {version} items"),
            &json!([
                pick(&items, "margherita")["apiVersion"],
                pick(&items, "margherita")["spec"],
                pick(&items, "quattro-formaggi")["spec"]
            ]),
            &json!([api_version, margherita, quattro_formaggi]),
        );
        list_beta = list;
    }

    // Watches at either version see every change in their own version.
    let from = list_beta["metadata"]["resourceVersion"].as_str().unwrap_or("0").to_owned();
    let mut watch_beta = c.watch(&format!("{}?watch=true&resourceVersion={from}", pizzas("v1beta1")), &[]).await;
    let mut watch_alpha = c.watch(&format!("{}?watch=true&resourceVersion={from}", pizzas("v1alpha1")), &[]).await;
    checks.eq("watch status", &json!([watch_beta.status, watch_alpha.status]), &json!([200, 200]));
    let r = c
        .merge_patch(
            &pizza_path("v1alpha1", "margherita"),
            &json!({"spec": {"toppings": ["mozzarella", "tomato", "tomato", "tomato"]}}),
        )
        .await;
    checks.code("merge patch at v1alpha1", &r, 200);
    create(c, &pizzas("v1beta1"), &pizza_beta("marinara", &[("tomato", 1), ("garlic", 1), ("oregano", 1)])).await;
    checks.eq(
        "watch at v1beta1",
        &json!(two_events(&mut watch_beta, "v1beta1 watch").await),
        &json!([
            ["MODIFIED", "margherita", format!("{PIZZA}/v1beta1"), {"toppings": beta_toppings(&[("mozzarella", 1), ("tomato", 3)])}],
            ["ADDED", "marinara", format!("{PIZZA}/v1beta1"), {"toppings": beta_toppings(&[("tomato", 1), ("garlic", 1), ("oregano", 1)])}],
        ]),
    );
    checks.eq(
        "watch at v1alpha1",
        &json!(two_events(&mut watch_alpha, "v1alpha1 watch").await),
        &json!([
            ["MODIFIED", "margherita", format!("{PIZZA}/v1alpha1"), {"toppings": ["mozzarella", "tomato", "tomato", "tomato"]}],
            ["ADDED", "marinara", format!("{PIZZA}/v1alpha1"), {"toppings": ["tomato", "garlic", "oregano"]}],
        ]),
    );
    drop((watch_alpha, watch_beta));

    // kubectl: an explicit version, and the preferred one (v1beta1: higher priority).
    let resource = format!("pizzas.v1alpha1.{PIZZA}");
    let (yaml, _) =
        kubectl_until(&s.versa, &["get", &resource, "margherita", "-o", "yaml"], |o| o.contains("margherita"));
    checks.check(
        "kubectl get pizzas.v1alpha1 -o yaml: apiVersion",
        yaml.contains(&format!("apiVersion: {PIZZA}/v1alpha1\n")),
        &yaml,
    );
    checks.check(
        "kubectl get pizzas.v1alpha1 -o yaml: toppings",
        yaml.contains("  toppings:\n  - mozzarella\n  - tomato\n  - tomato\n  - tomato\n"),
        &yaml,
    );
    let (out, _) = kubectl_until(&s.versa, &["get", "pizza", "margherita", "-o", "json"], |o| o.contains("margherita"));
    let preferred: Value = serde_json::from_str(&out).unwrap();
    checks.eq(
        "kubectl get pizza (preferred version v1beta1)",
        &json!([preferred["apiVersion"], preferred["spec"]]),
        &json!([format!("{PIZZA}/v1beta1"), {"toppings": beta_toppings(&[("mozzarella", 1), ("tomato", 3)])}]),
    );
    let table = ok(kubectl(&s.versa, &["get", "pizza"]));
    let rows: Vec<&str> = table.lines().map(|l| l.split_whitespace().next().unwrap_or("")).collect();
    checks.eq("kubectl get pizza", &json!(rows), &json!(["NAME", "margherita", "marinara", "quattro-formaggi"]));
    let (out, _) =
        kubectl_until(&s.versa, &["get", &format!("pizzas.v1beta1.{PIZZA}"), "-o", "json"], |o| o.contains("items"));
    let list: Value = serde_json::from_str(&out).unwrap();
    checks.eq(
        "kubectl get pizzas.v1beta1 -o json",
        &pick(&by_name(&list), "marinara")["spec"],
        &json!({"toppings": beta_toppings(&[("tomato", 1), ("garlic", 1), ("oregano", 1)])}),
    );

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 2. The tutorial's CronTab (`hostPort` ↔ `host`/`port`) and a storage-version change.

/// The tutorial's "Configure CustomResourceDefinition to use conversion webhooks" definition:
/// `v1beta1` (storage) with a top-level `hostPort`, `v1` with `host` and `port`.
fn host_port_definition(conversion: Value) -> Value {
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": "crontabs.example.com"},
        "spec": {
            "group": "example.com",
            "versions": [
                {"name": "v1beta1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"hostPort": {"type": "string"}},
                }}},
                {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"host": {"type": "string"}, "port": {"type": "string"}},
                }}},
            ],
            "conversion": conversion,
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
        },
    })
}

#[tokio::test]
async fn crontab_host_port_as_in_the_tutorial() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    define(c, &host_port_definition(webhook.conversion(&["v1", "v1beta1"]))).await;
    let mut checks = Checks::default();
    let at = |v: &str| format!("/apis/example.com/{v}/namespaces/default/crontabs");
    let crontab = |v: &str, name: &str, fields: Value| {
        let mut obj = json!({"apiVersion": format!("example.com/{v}"), "kind": "CronTab", "metadata": {"name": name}});
        obj.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        obj
    };

    create(c, &at("v1beta1"), &crontab("v1beta1", "local-crontab", json!({"hostPort": "localhost:1234"}))).await;
    let r = c.post(&at("v1"), &crontab("v1", "remote-crontab", json!({"host": "example.com", "port": "2345"}))).await;
    if checks.code("create at v1", &r, 201) {
        let obj = r.json();
        checks.eq(
            "create at v1 answers at v1",
            &json!([obj["host"], obj["port"], obj["hostPort"]]),
            &json!(["example.com", "2345", null]),
        );
    }

    let local = c.get(&format!("{}/local-crontab", at("v1"))).await.json();
    checks.eq(
        "v1beta1 object read at v1",
        &json!([local["apiVersion"], local["host"], local["port"], local["hostPort"]]),
        &json!(["example.com/v1", "localhost", "1234", null]),
    );
    webhook.reset();
    let remote = c.get(&format!("{}/remote-crontab", at("v1beta1"))).await.json();
    checks.eq(
        "v1 object read at v1beta1",
        &json!([remote["apiVersion"], remote["hostPort"], remote["host"], remote["port"]]),
        &json!(["example.com/v1beta1", "example.com:2345", null, null]),
    );
    checks.eq("the v1-created object is stored at v1beta1: webhook calls", &json!(webhook.calls()), &json!(0));

    // A list: both objects in one ConversionReview, as in the tutorial's example request.
    webhook.reset();
    let list = c.get(&at("v1")).await;
    checks.code("LIST at v1", &list, 200);
    let items = by_name(&list.json());
    checks.eq(
        "LIST at v1",
        &json!([
            items.get("local-crontab").map(|o| json!([o["host"], o["port"]])),
            items.get("remote-crontab").map(|o| json!([o["host"], o["port"]]))
        ]),
        &json!([["localhost", "1234"], ["example.com", "2345"]]),
    );
    let reviews = webhook.requests();
    let mut sent: Vec<Value> = reviews.iter().map(review_summary).collect();
    sent.iter_mut()
        .for_each(|s| s["objects"].as_array_mut().unwrap().sort_by_key(|o| o[1].as_str().unwrap_or("").to_owned()));
    checks.check("LIST at v1: at most one webhook call", reviews.len() <= 1, json!(sent));

    // The tutorial's failure: a hostPort the webhook cannot split.
    create(c, &at("v1beta1"), &crontab("v1beta1", "broken", json!({"hostPort": "localhost"}))).await;
    let r = c.get(&format!("{}/broken", at("v1"))).await;
    checks.conversion_failure(
        "GET at v1 of an object the webhook cannot convert",
        &r,
        &format!("conversion webhook for example.com/v1beta1, Kind=CronTab failed: {}", webhook::HOSTPORT_MESSAGE),
        &[],
    );
    let r = c.get(&at("v1")).await;
    checks.conversion_failure(
        "LIST at v1 including it",
        &r,
        "",
        &["conversion webhook for ", webhook::HOSTPORT_MESSAGE],
    );
    let r = c.get(&format!("{}/broken", at("v1beta1"))).await;
    checks.eq("the object at its storage version", &r.json()["hostPort"], &json!("localhost"));
    checks.code("delete at v1beta1", &c.delete(&format!("{}/broken", at("v1beta1"))).await, 200);

    // kubectl at v1 (the preferred version) and at v1beta1.
    let (out, _) = kubectl_until(
        &s.versa,
        &["get", "crontab", "remote-crontab", "-o", "jsonpath={.apiVersion} {.host}:{.port}"],
        |o| !o.is_empty(),
    );
    checks.eq("kubectl get crontab (v1)", &json!(out), &json!("example.com/v1 example.com:2345"));
    let (out, _) = kubectl_until(
        &s.versa,
        &["get", "crontabs.v1beta1.example.com", "local-crontab", "-o", "jsonpath={.hostPort}"],
        |o| !o.is_empty(),
    );
    checks.eq("kubectl get crontabs.v1beta1.example.com", &json!(out), &json!("localhost:1234"));

    // conversionReviewVersions [v1beta1, v1]: versa sends v1beta1, whose answers kube does not
    // check for uid.
    let r = update_definition(c, "crontabs.example.com", |def| {
        def["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v1beta1", "v1"]);
    })
    .await;
    checks.code("switching conversionReviewVersions", &r, 200);
    create(c, &at("v1beta1"), &crontab("v1beta1", "fresh", json!({"hostPort": "fresh.example.com:80"}))).await;
    let fresh_path = format!("{}/fresh", at("v1"));
    let review_version = poll("a ConversionReview after the definition change", Duration::from_secs(30), || {
        let (c, webhook, path) = (c.clone(), &webhook, fresh_path.clone());
        async move {
            webhook.reset();
            let r = c.get(&path).await;
            let version = webhook.requests().first().map(|r| r["apiVersion"].clone());
            (r.status == 200 && version.as_ref().is_some_and(|v| v == "apiextensions.k8s.io/v1beta1"))
                .then_some(version)
        }
    })
    .await;
    checks.eq("ConversionReview version", &json!(review_version), &json!("apiextensions.k8s.io/v1beta1"));
    create(c, &at("v1beta1"), &crontab("v1beta1", "more", json!({"hostPort": "more.example.com:81"}))).await;
    webhook.set_mode(Mode::WrongUid);
    let r = c.get(&format!("{}/more", at("v1"))).await;
    checks.code("v1beta1 review with another uid is accepted (kube does not check it)", &r, 200);
    checks.eq("... and converted", &json!([r.json()["host"], r.json()["port"]]), &json!(["more.example.com", "81"]));
    webhook.set_mode(Mode::Convert);

    checks.finish();
}

/// A definition for the tutorial's storage-version story: `Widget` with identical schemas at
/// every version in `versions` (`(name, storage)`), converted by the webhook.
fn widget_definition(conversion: Value, versions: &[(&str, bool)]) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "string"}}},
    }}});
    let versions: Vec<Value> = versions
        .iter()
        .map(|(name, storage)| json!({"name": name, "served": true, "storage": storage, "schema": schema}))
        .collect();
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": "widgets.series.example.com"},
        "spec": {
            "group": "series.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": versions,
            "conversion": conversion,
        },
    })
}

/// The tutorial's "hypothetical series of events", step by step. Where an object is stored is
/// observed through the webhook: reading an object at the version it is stored at calls nothing.
#[tokio::test]
async fn storage_version_change_step_by_step() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    let name = "widgets.series.example.com";
    let at = |v: &str| format!("/apis/series.example.com/{v}/namespaces/default/widgets");
    let widget = |v: &str, name: &str, size: &str| {
        json!({
            "apiVersion": format!("series.example.com/{v}"), "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": size},
        })
    };
    let mut checks = Checks::default();

    // 1. The storage version is v1beta1. You create an object. It is stored at version v1beta1.
    define(c, &widget_definition(webhook.conversion(&["v1"]), &[("v1beta1", true)])).await;
    webhook.reset();
    create(c, &at("v1beta1"), &widget("v1beta1", "first", "small")).await;
    c.get(&format!("{}/first", at("v1beta1"))).await;
    checks.eq("1. create and read at the storage version: webhook calls", &json!(webhook.calls()), &json!(0));
    checks.eq("1. storedVersions", &stored_versions(c, name).await, &json!(["v1beta1"]));

    // 2. You add version v1 and designate it as the storage version (identical schemas).
    let r = update_definition(c, name, |def| {
        def["spec"] =
            widget_definition(webhook.conversion(&["v1"]), &[("v1beta1", false), ("v1", true)])["spec"].clone();
    })
    .await;
    if checks.code("2. adding v1 as the storage version", &r, 200) {
        checks.eq(
            "2. storedVersions right after the change",
            &r.json()["status"]["storedVersions"],
            &json!(["v1beta1", "v1"]),
        );
    }
    wait_served(c, &at("v1")).await;

    // 3. Read at v1beta1, then at v1: identical except apiVersion.
    let beta = c.get(&format!("{}/first", at("v1beta1"))).await.json();
    let v1 = c.get(&format!("{}/first", at("v1"))).await.json();
    checks.eq(
        "3. apiVersions",
        &json!([beta["apiVersion"], v1["apiVersion"]]),
        &json!(["series.example.com/v1beta1", "series.example.com/v1"]),
    );
    // versa may migrate the object between the two reads (a new resourceVersion); everything
    // else must be the same.
    let (mut beta, mut v1) = (without_api_version(&beta), without_api_version(&v1));
    for obj in [&mut beta, &mut v1] {
        obj["metadata"].as_object_mut().map(|m| m.remove("resourceVersion"));
    }
    checks.eq("3. identical except apiVersion", &beta, &v1);

    // 4. You create a new object. It is stored at version v1.
    webhook.reset();
    create(c, &at("v1"), &widget("v1", "second", "medium")).await;
    let second = c.get(&format!("{}/second", at("v1"))).await;
    checks.code("4. GET at v1", &second, 200);
    // (versa's own migration may be converting `first` meanwhile: count only `second`.)
    checks.eq(
        "4. created and read at v1 (stored at v1): conversions of it",
        &json!(conversions_of(&webhook.requests(), "second", None)),
        &json!(0),
    );

    // 5. You update the first object. It is now stored at version v1. (versa's migration may
    // rewrite it between the read and the write: then the write is refused with 409 and, as any
    // client does, read again and retried.)
    let mut r = None;
    for _ in 0..10 {
        let mut first = c.get(&format!("{}/first", at("v1beta1"))).await.json();
        first["spec"]["size"] = json!("large");
        let answer = c.put(&format!("{}/first", at("v1beta1")), &first).await;
        let conflict = answer.status == 409;
        r = Some(answer);
        if !conflict {
            break;
        }
    }
    let r = r.unwrap();
    checks.code("5. update at v1beta1", &r, 200);
    let updated_rv = r.json()["metadata"]["resourceVersion"].as_str().unwrap_or("").to_owned();
    webhook.reset();
    let first = c.get(&format!("{}/first", at("v1"))).await.json();
    checks.eq("5. updated object at v1", &first["spec"], &json!({"size": "large"}));
    // (Only conversions of the updated revision count: the migration may still be converting the
    // revision before it.)
    checks.eq(
        "5. the updated object is stored at v1: conversions of the updated revision",
        &json!(conversions_of(&webhook.requests(), "first", Some(&updated_rv))),
        &json!(0),
    );

    // versa then migrates what is left and trims storedVersions (kube-apiserver would leave
    // storedVersions [v1beta1, v1] until someone migrates and edits the status).
    let trimmed = wait_stored_versions(c, name, &json!(["v1"]), MIGRATION_WAIT).await;
    checks.check("storedVersions trimmed to [v1] by versa's migration", trimmed, stored_versions(c, name).await);
    webhook.reset();
    let list = c.get(&at("v1")).await.json();
    checks.eq("every object at v1", &json!(names(&list)), &json!(["first", "second"]));
    checks.eq("LIST at v1 after the migration: webhook calls", &json!(webhook.calls()), &json!(0));
    let list = c.get(&at("v1beta1")).await.json();
    checks.eq(
        "LIST at v1beta1",
        &json!(by_name(&list).values().map(|o| o["spec"]["size"].clone()).collect::<Vec<_>>()),
        &json!(["large", "medium"]),
    );

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 3. One webhook call per list page.

#[tokio::test]
async fn list_makes_one_webhook_call_per_page() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    define(c, &pizza_definition(webhook.conversion(&["v1"]), "v1alpha1")).await;
    let mut checks = Checks::default();

    const N: usize = 25;
    const LIMIT: usize = 10;
    webhook.reset();
    for i in 0..N {
        create(c, &pizzas("v1alpha1"), &pizza_alpha(&format!("p-{i:02}"), &["tomato", "tomato", "basil"])).await;
    }
    checks.eq("creating at the storage version: webhook calls", &json!(webhook.calls()), &json!(0));

    // Page through at v1beta1: one call per page, carrying exactly that page's objects.
    webhook.reset();
    let mut seen = Vec::new();
    let mut per_call = Vec::new();
    let mut token = String::new();
    for page in 0.. {
        let before = webhook.calls();
        let mut path = format!("{}?limit={LIMIT}", pizzas("v1beta1"));
        if !token.is_empty() {
            path.push_str(&format!("&continue={token}"));
        }
        let r = c.get(&path).await;
        if !checks.code(&format!("page {page}"), &r, 200) {
            break;
        }
        let list = r.json();
        let items = list["items"].as_array().cloned().unwrap_or_default();
        for item in &items {
            checks.eq(
                &format!("page {page}: {}", item["metadata"]["name"]),
                &json!([item["apiVersion"], item["spec"]]),
                &json!([format!("{PIZZA}/v1beta1"), {"toppings": beta_toppings(&[("tomato", 2), ("basil", 1)])}]),
            );
            seen.push(item["metadata"]["name"].as_str().unwrap_or("").to_owned());
        }
        let reviews = webhook.requests();
        checks.eq(&format!("page {page}: webhook calls"), &json!(reviews.len() - before), &json!(1));
        for review in &reviews[before..] {
            per_call.push(review["request"]["objects"].as_array().map_or(0, Vec::len));
        }
        token = list["metadata"]["continue"].as_str().unwrap_or("").to_owned();
        if token.is_empty() || page > N {
            break;
        }
    }
    let want: Vec<String> = (0..N).map(|i| format!("p-{i:02}")).collect();
    checks.eq("every object, once", &json!(seen), &json!(want));
    checks.eq("objects per webhook call", &json!(per_call), &json!([10, 10, 5]));

    // The whole list in one request: at most one call (none if versa kept the conversions).
    webhook.reset();
    let r = c.get(&pizzas("v1beta1")).await;
    checks.code("LIST at v1beta1", &r, 200);
    checks.eq("LIST at v1beta1: items", &json!(names(&r.json()).len()), &json!(N));
    checks.check("LIST at v1beta1: at most one webhook call", webhook.calls() <= 1, webhook.calls());

    // kubectl pages too (--chunk-size).
    let (out, _) =
        kubectl_until(&s.versa, &["get", &format!("pizzas.v1beta1.{PIZZA}"), "--chunk-size=7", "-o", "name"], |o| {
            !o.is_empty()
        });
    checks.eq("kubectl --chunk-size=7", &json!(out.lines().count()), &json!(N));

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 4. Every way a webhook goes wrong.

/// A failure mode and what kube says about it after `conversion webhook for <gvk> `.
struct FailureCase {
    mode: Mode,
    slug: &'static str,
    /// The GET message is `conversion webhook for <g>/v1alpha1, Kind=Pizza failed: <exact>`.
    exact: Option<String>,
    /// Otherwise the GET message starts `conversion webhook for <g>/v1alpha1, Kind=Pizza ` and
    /// contains all of these.
    fragments: Vec<String>,
}

#[tokio::test]
async fn webhook_failures_change_nothing() {
    let webhook = Webhook::start();
    let mut checks = Checks::default();
    let has_timeout_flag = serve_has_flag("--conversion-webhook-timeout");
    checks.check(
        "`versa serve --conversion-webhook-timeout` exists (the slow-webhook case is skipped without it)",
        has_timeout_flag,
        "flag missing from `versa serve --help`",
    );
    let flags: &[&str] =
        if has_timeout_flag { &["--conversion-webhook-timeout", WEBHOOK_TIMEOUT_SECONDS] } else { &[] };
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), flags).await;
    let c = &s.client;
    define(c, &pizza_definition(webhook.conversion(&["v1"]), "v1alpha1")).await;

    let url = webhook.url();
    let post = format!("Post \"{url}");
    let mut cases = vec![FailureCase { mode: Mode::Convert, slug: "down", exact: None, fragments: vec![post.clone()] }];
    if has_timeout_flag {
        cases.push(FailureCase {
            mode: Mode::Slow(Duration::from_secs(10)),
            slug: "slow",
            exact: None,
            fragments: vec![post.clone()],
        });
    }
    cases.extend([
        FailureCase {
            mode: Mode::Failed("the oven is cold".into()),
            slug: "failed",
            exact: Some("the oven is cold".into()),
            fragments: vec![],
        },
        // The exact text needs the request's uid; filled in below.
        FailureCase { mode: Mode::WrongUid, slug: "wrong-uid", exact: None, fragments: vec![] },
        FailureCase {
            mode: Mode::WrongCount,
            slug: "wrong-count",
            exact: None,
            fragments: vec!["returned 2 objects, expected 1".into()],
        },
        FailureCase {
            mode: Mode::ChangedName,
            slug: "changed-name",
            exact: None,
            fragments: vec!["must have the same name: fail-changed-name != fail-changed-name-renamed".into()],
        },
        FailureCase {
            mode: Mode::ChangedNamespace,
            slug: "changed-namespace",
            exact: None,
            fragments: vec!["must have the same namespace: default != elsewhere".into()],
        },
        // The uid is the object's; filled in below.
        FailureCase { mode: Mode::ChangedUid, slug: "changed-uid", exact: None, fragments: vec![] },
        FailureCase {
            mode: Mode::ChangedKind,
            slug: "changed-kind",
            exact: None,
            fragments: vec!["invalid kind (expected Pizza, received Calzone)".into()],
        },
        FailureCase {
            mode: Mode::WrongApiVersion,
            slug: "wrong-api-version",
            exact: None,
            fragments: vec![format!("invalid groupVersion (expected {PIZZA}/v1beta1, received {PIZZA}/v9)")],
        },
        FailureCase { mode: Mode::InvalidJson, slug: "invalid-json", exact: None, fragments: vec![] },
    ]);

    // A read converts the stored object: kube's message names the version it is stored at
    // (`in.GetObjectKind()` in the webhook converter) and the read path passes it through as it
    // is: kubectl shows `Error from server: conversion webhook for <g>/v1alpha1, Kind=Pizza
    // failed: …`. A write converts the request's object, so the message names the request's
    // version (there kube wraps it: `Internal error occurred: …`). Collected over every case and
    // reported once.
    let stored_gvk = format!("conversion webhook for {PIZZA}/v1alpha1, Kind=Pizza ");
    let request_gvk = format!("conversion webhook for {PIZZA}/v1beta1, Kind=Pizza ");
    let (mut read_shape, mut write_shape) = (Vec::new(), Vec::new());
    let case_count = cases.len();
    for case in cases {
        let slug = case.slug;
        let name = format!("fail-{slug}");
        // A fresh object for each case, stored at v1alpha1 and never converted before (so no
        // earlier successful conversion can answer for the webhook).
        webhook.set_mode(Mode::Convert);
        webhook.up();
        let created = create(c, &pizzas("v1alpha1"), &pizza_alpha(&name, &["mozzarella", "tomato", "tomato"])).await;
        let before = c.get(&pizza_path("v1alpha1", &name)).await.json();

        webhook.reset();
        webhook.set_mode(case.mode.clone());
        if slug == "down" {
            webhook.down();
            // Nothing at the storage version needs the webhook.
            checks.code("down: LIST at v1alpha1", &c.get(&pizzas("v1alpha1")).await, 200);
            let r = c.post(&pizzas("v1alpha1"), &pizza_alpha("while-down", &["tomato"])).await;
            checks.code("down: create at v1alpha1", &r, 201);
            checks.code("down: delete at v1alpha1", &c.delete(&pizza_path("v1alpha1", "while-down")).await, 200);
        }

        // GET at v1beta1. A read converts the stored object: kube's message names the version
        // it is stored at (`in.GetObjectKind()` in the webhook converter), and the read path
        // passes the message through as it is (kubectl: `Error from server: conversion webhook
        // for …`).
        let r = c.get(&pizza_path("v1beta1", &name)).await;
        let uid_sent = webhook.requests().first().map(|r| r["request"]["uid"].as_str().unwrap_or("").to_owned());
        let object_uid = created["metadata"]["uid"].as_str().unwrap_or("").to_owned();
        let reason: Vec<String> = match (&case.mode, &case.exact) {
            (_, Some(exact)) => vec![format!("failed: {exact}")],
            (Mode::WrongUid, _) => vec![format!(
                "failed: expected response.uid=\"{}\", got \"00000000-0000-0000-0000-000000000000\"",
                uid_sent.unwrap_or_default()
            )],
            (Mode::ChangedUid, _) => {
                vec![format!("must have the same UID: {object_uid} != 11111111-1111-1111-1111-111111111111")]
            }
            (Mode::InvalidJson, _) => vec!["failed: ".to_owned()],
            _ if slug == "down" || slug == "slow" => [vec!["failed: ".to_owned()], case.fragments.clone()].concat(),
            _ => case.fragments.clone(),
        };
        let mut fragments = vec!["conversion webhook for "];
        fragments.extend(reason.iter().map(String::as_str));
        checks.conversion_failure(&format!("{slug}: GET"), &r, "", &fragments);
        let message = r.json()["message"].as_str().unwrap_or("").to_owned();
        if !message.starts_with(&stored_gvk) {
            read_shape.push(format!("{slug}: {message}"));
        }
        if slug != "down" {
            checks.check(&format!("{slug}: the webhook was called"), webhook.calls() >= 1, webhook.calls());
        }

        // LIST at v1beta1 (another call, so another request uid). It converts every object of
        // the page, those of earlier cases too (nothing a webhook answered is kept), so the
        // count and the object a message names depend on them.
        let r = c.get(&pizzas("v1beta1")).await;
        let list_fragments: &[&str] = match case.mode {
            Mode::WrongUid => &["conversion webhook for ", "failed: expected response.uid=\""],
            Mode::WrongCount => &["conversion webhook for ", " objects, expected "],
            Mode::ChangedUid => {
                &["conversion webhook for ", "must have the same UID: ", " != 11111111-1111-1111-1111-111111111111"]
            }
            _ => &fragments,
        };
        checks.conversion_failure(&format!("{slug}: LIST"), &r, "", list_fragments);

        // Create at v1beta1: nothing is created.
        let new_name = format!("{name}-new");
        let r = c.post(&pizzas("v1beta1"), &pizza_beta(&new_name, &[("olive", 2)])).await;
        // A write converts the request's object: kube names its version (and, on this path,
        // wraps the message as an internal error: `Internal error occurred: …`).
        checks.conversion_failure(&format!("{slug}: create at v1beta1"), &r, "", &["conversion webhook for "]);
        let message = r.json()["message"].as_str().unwrap_or("").to_owned();
        if !message.contains(&request_gvk) {
            write_shape.push(format!("{slug}: {message}"));
        }

        // Merge patch, PUT and DELETE at v1beta1: nothing changes.
        let r = c
            .merge_patch(
                &pizza_path("v1beta1", &name),
                &json!({"spec": {"toppings": [{"name": "anchovies", "quantity": 1}]}}),
            )
            .await;
        checks.conversion_failure(&format!("{slug}: merge patch at v1beta1"), &r, "", &["conversion webhook for "]);
        let mut replacement = webhook::convert(&before, &format!("{PIZZA}/v1beta1")).unwrap();
        replacement["spec"]["toppings"] = beta_toppings(&[("pineapple", 1)]);
        let r = c.put(&pizza_path("v1beta1", &name), &replacement).await;
        checks.conversion_failure(&format!("{slug}: PUT at v1beta1"), &r, "", &["conversion webhook for "]);
        let r = c.delete(&pizza_path("v1beta1", &name)).await;
        checks.conversion_failure(&format!("{slug}: DELETE at v1beta1"), &r, "", &["conversion webhook for "]);

        // Read back at the storage version (no webhook needed): unchanged, nothing new.
        webhook.set_mode(Mode::Convert);
        webhook.up();
        let after = c.get(&pizza_path("v1alpha1", &name)).await;
        checks.eq(&format!("{slug}: the object afterwards (at v1alpha1)"), &after.json(), &before);
        checks.eq(
            &format!("{slug}: the object created at v1beta1 does not exist"),
            &json!(c.get(&pizza_path("v1alpha1", &new_name)).await.status),
            &json!(404),
        );

        // And with the webhook working again, everything works again.
        let r = c.get(&pizza_path("v1beta1", &name)).await;
        if checks.code(&format!("{slug}: GET at v1beta1 once the webhook works"), &r, 200) {
            checks.eq(
                &format!("{slug}: converted once the webhook works"),
                &r.json()["spec"],
                &json!({"toppings": beta_toppings(&[("mozzarella", 1), ("tomato", 2)])}),
            );
        }
    }

    checks.check(
        &format!("read path: messages start `{stored_gvk}` (the stored version, not wrapped)"),
        read_shape.is_empty(),
        format!(
            "{} of {case_count} cases differ, first: {}",
            read_shape.len(),
            read_shape.first().map_or("", String::as_str)
        ),
    );
    checks.check(
        &format!("write path: messages contain `{request_gvk}` (the request's version)"),
        write_shape.is_empty(),
        format!(
            "{} of {case_count} cases differ, first: {}",
            write_shape.len(),
            write_shape.first().map_or("", String::as_str)
        ),
    );

    // Changed labels and annotations are taken from the webhook (kube's restoreObjectMeta).
    webhook.set_mode(Mode::Convert);
    let mut labelled = pizza_alpha("meta-labels", &["tomato"]);
    labelled["metadata"]["labels"] = json!({"app": "pizza"});
    create(c, &pizzas("v1alpha1"), &labelled).await;
    webhook.set_mode(Mode::ChangedLabels);
    let r = c.get(&pizza_path("v1beta1", "meta-labels")).await;
    if checks.code("changed labels: GET at v1beta1", &r, 200) {
        let obj = r.json();
        checks.eq(
            "changed labels: labels and annotations from the webhook",
            &json!([obj["metadata"]["labels"], obj["metadata"]["annotations"]]),
            &json!([
                {"app": "pizza", webhook::ADDED_LABEL.0: webhook::ADDED_LABEL.1},
                {webhook::ADDED_ANNOTATION.0: webhook::ADDED_ANNOTATION.1},
            ]),
        );
    }
    let stored = c.get(&pizza_path("v1alpha1", "meta-labels")).await.json();
    checks.eq("changed labels: a read stores nothing", &stored["metadata"]["labels"], &json!({"app": "pizza"}));
    let r = c
        .merge_patch(
            &pizza_path("v1beta1", "meta-labels"),
            &json!({"spec": {"toppings": [{"name": "basil", "quantity": 1}]}}),
        )
        .await;
    checks.code("changed labels: merge patch at v1beta1", &r, 200);
    webhook.set_mode(Mode::Convert);
    let stored = c.get(&pizza_path("v1alpha1", "meta-labels")).await.json();
    checks.eq(
        "changed labels: a write at v1beta1 keeps the webhook's labels",
        &json!([stored["metadata"]["labels"], stored["spec"]]),
        &json!([{"app": "pizza", webhook::ADDED_LABEL.0: webhook::ADDED_LABEL.1}, {"toppings": ["basil"]}]),
    );

    // Any other metadata change is ignored: the original metadata is restored.
    let created = create(c, &pizzas("v1alpha1"), &pizza_alpha("meta-other", &["tomato"])).await;
    webhook.set_mode(Mode::ChangedMetadata);
    let r = c.get(&pizza_path("v1beta1", "meta-other")).await;
    if checks.code("changed metadata: GET at v1beta1", &r, 200) {
        checks.eq("changed metadata: metadata restored", &r.json()["metadata"], &created["metadata"]);
    }
    let r = c
        .merge_patch(
            &pizza_path("v1beta1", "meta-other"),
            &json!({"spec": {"toppings": [{"name": "olive", "quantity": 3}]}}),
        )
        .await;
    if checks.code("changed metadata: merge patch at v1beta1", &r, 200) {
        let meta = &r.json()["metadata"];
        checks.eq(
            "changed metadata: the write's answer",
            &json!([meta["generation"], meta["finalizers"], meta["creationTimestamp"]]),
            &json!([2, null, created["metadata"]["creationTimestamp"]]),
        );
    }
    webhook.set_mode(Mode::Convert);
    let stored = c.get(&pizza_path("v1alpha1", "meta-other")).await.json();
    checks.eq(
        "changed metadata: what is stored",
        &json!([
            stored["metadata"]["generation"],
            stored["metadata"]["finalizers"],
            stored["metadata"]["uid"],
            stored["spec"]
        ]),
        &json!([2, null, created["metadata"]["uid"], {"toppings": ["olive", "olive", "olive"]}]),
    );
    checks.code(
        "changed metadata: delete (no finalizer was stored)",
        &c.delete(&pizza_path("v1alpha1", "meta-other")).await,
        200,
    );
    checks.eq("changed metadata: gone", &json!(c.get(&pizza_path("v1alpha1", "meta-other")).await.status), &json!(404));

    // Finally everything works: list and create at v1beta1.
    let r = c.get(&pizzas("v1beta1")).await;
    if checks.code("LIST at v1beta1 at the end", &r, 200) {
        checks.check(
            "LIST at v1beta1 at the end: every case's object",
            names(&r.json()).iter().filter(|n| n.starts_with("fail-")).count() >= 10,
            json!(names(&r.json())),
        );
    }
    checks.code(
        "create at v1beta1 at the end",
        &c.post(&pizzas("v1beta1"), &pizza_beta("last", &[("tomato", 1)])).await,
        201,
    );

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 5. The None strategy trap.

/// `v1` (storage) with `spec.cronSpec`, `v2` with the same field renamed `spec.schedule`, and
/// the None strategy: exactly what the tutorial says not to do.
/// Issue 15, defect 2: what a webhook answered is never kept across requests. A webhook fixed
/// (or broken) under the same URL is seen by the very next read — GET and LIST, raw and through
/// kubectl — while reads at the storage version, which need no webhook, may still be served
/// from the render cache.
#[tokio::test]
async fn webhook_answers_are_never_kept() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    define(c, &pizza_definition(webhook.conversion(&["v1"]), "v1alpha1")).await;
    let mut checks = Checks::default();
    let name = "kept";
    create(c, &pizzas("v1alpha1"), &pizza_alpha(name, &["mozzarella", "tomato", "tomato"])).await;
    let beta = format!("pizzas.v1beta1.{PIZZA}");
    let label = |obj: &Value| obj["metadata"]["labels"][webhook::ADDED_LABEL.0].clone();

    // Converted twice in a row: the webhook is asked each time.
    webhook.reset();
    let got = c.get(&pizza_path("v1beta1", name)).await.json();
    checks.eq("first GET at v1beta1", &got["spec"]["toppings"], &beta_toppings(&[("mozzarella", 1), ("tomato", 2)]));
    c.get(&pizza_path("v1beta1", name)).await;
    c.get(&pizzas("v1beta1")).await;
    checks.eq("webhook calls for GET, GET, LIST", &json!(webhook.calls()), &json!(3));

    // The webhook now answers differently (a new build under the same URL): seen at once.
    webhook.set_mode(Mode::ChangedLabels);
    let out = ok(kubectl(&s.versa, &["get", &beta, name, "-o", "json"]));
    let got: Value = serde_json::from_str(&out).unwrap();
    checks.eq("kubectl get after the webhook changed", &label(&got), &json!(webhook::ADDED_LABEL.1));
    let list = c.get(&pizzas("v1beta1")).await.json();
    checks.eq("LIST after the webhook changed", &label(&list["items"][0]), &json!(webhook::ADDED_LABEL.1));

    // The webhook now fails: reads at v1beta1 fail with its message, none is answered from before.
    webhook.set_mode(Mode::Failed("the oven is cold".into()));
    let r = c.get(&pizza_path("v1beta1", name)).await;
    checks.conversion_failure("GET after the webhook broke", &r, "", &["failed: the oven is cold"]);
    let r = c.get(&pizzas("v1beta1")).await;
    checks.conversion_failure("LIST after the webhook broke", &r, "", &["failed: the oven is cold"]);
    let out = kubectl(&s.versa, &["get", &beta, name, "-o", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    checks.check("kubectl get after the webhook broke fails", !out.status.success(), &stderr);
    checks.check("kubectl shows the webhook's message", stderr.contains("the oven is cold"), &stderr);

    // Reads at the storage version need no webhook.
    webhook.reset();
    checks.code("GET at v1alpha1 while the webhook fails", &c.get(&pizza_path("v1alpha1", name)).await, 200);
    checks.code("LIST at v1alpha1 while the webhook fails", &c.get(&pizzas("v1alpha1")).await, 200);
    checks.eq("webhook calls for reads at the storage version", &json!(webhook.calls()), &json!(0));

    // Fixed again: the right answer, at once.
    webhook.set_mode(Mode::Convert);
    let got = c.get(&pizza_path("v1beta1", name)).await.json();
    checks.eq("GET after the webhook was fixed", &label(&got), &Value::Null);
    checks.eq(
        "toppings after the webhook was fixed",
        &got["spec"]["toppings"],
        &beta_toppings(&[("mozzarella", 1), ("tomato", 2)]),
    );
    checks.finish();
}

fn renamed_field_definition() -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "string"}, "image": {"type": "string"}}},
        }}})
    };
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": "crontabs.none.example.com"},
        "spec": {
            "group": "none.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("cronSpec")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("schedule")},
            ],
            "conversion": {"strategy": "None"},
        },
    })
}

#[tokio::test]
async fn none_strategy_drops_a_renamed_field() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    define(c, &renamed_field_definition()).await;
    let mut checks = Checks::default();
    let at = |v: &str| format!("/apis/none.example.com/{v}/namespaces/default/crontabs");
    let crontab = |v: &str, name: &str, spec: Value| {
        json!({
            "apiVersion": format!("none.example.com/{v}"), "kind": "CronTab", "metadata": {"name": name},
            "spec": spec,
        })
    };

    create(c, &at("v1"), &crontab("v1", "trap", json!({"cronSpec": "* * * * */5", "image": "cron:1"}))).await;
    let v2 = c.get(&format!("{}/trap", at("v2"))).await.json();
    checks.eq(
        "read at v2: only apiVersion changes, and v2's schema prunes cronSpec",
        &json!([v2["apiVersion"], v2["spec"]]),
        &json!(["none.example.com/v2", {"image": "cron:1"}]),
    );
    let v1 = c.get(&format!("{}/trap", at("v1"))).await.json();
    checks.eq(
        "the object at the storage version keeps cronSpec",
        &v1["spec"],
        &json!({"cronSpec": "* * * * */5", "image": "cron:1"}),
    );

    // Written at v2: stored at v1, whose schema prunes schedule.
    let r =
        c.post(&at("v2"), &crontab("v2", "written-at-v2", json!({"schedule": "*/1 * * * *", "image": "cron:1"}))).await;
    if checks.code("create at v2", &r, 201) {
        checks.eq("create at v2 answers what was stored", &r.json()["spec"], &json!({"image": "cron:1"}));
    }
    let stored = c.get(&format!("{}/written-at-v2", at("v1"))).await.json();
    checks.eq("created at v2, read at v1: schedule is gone", &stored["spec"], &json!({"image": "cron:1"}));

    // Read-modify-write through v2 loses cronSpec for good.
    let mut obj = v2.clone();
    obj["spec"]["image"] = json!("cron:2");
    let r = c.put(&format!("{}/trap", at("v2")), &obj).await;
    checks.code("PUT at v2", &r, 200);
    let v1 = c.get(&format!("{}/trap", at("v1"))).await.json();
    checks.eq("after a PUT at v2, cronSpec is lost at v1 too", &v1["spec"], &json!({"image": "cron:2"}));

    let (out, _) =
        kubectl_until(&s.versa, &["get", "crontabs.v2.none.example.com", "trap", "-o", "json"], |o| o.contains("trap"));
    let obj: Value = serde_json::from_str(&out).unwrap();
    checks.eq("kubectl get crontabs.v2", &obj["spec"], &json!({"image": "cron:2"}));

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 6. Deprecated versions.

/// The tutorial's "Version deprecation" definition, with identical schemas.
const DEPRECATED: &str = r#"
apiVersion: versa.dev/v1
kind: ResourceDefinition
metadata:
  name: crontabs.example.com
spec:
  group: example.com
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "example.com/v1alpha1 CronTab is deprecated; see http://example.com/v1alpha1-v1 for instructions to migrate to example.com/v1 CronTab"
    schema: &schema
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
  - name: v1beta1
    served: true
    deprecated: true
    storage: false
    schema: *schema
  - name: v1
    served: true
    storage: true
    schema: *schema
"#;

/// A deprecated version with no newer non-deprecated one: the warning suggests nothing.
const DEPRECATED_NEWEST: &str = r#"
apiVersion: versa.dev/v1
kind: ResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: &schema
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: true
    deprecated: true
    schema: *schema
"#;

#[tokio::test]
async fn deprecated_versions_warn() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    let mut checks = Checks::default();
    for (file, text, name) in [
        ("deprecated.yaml", DEPRECATED, "crontabs.example.com"),
        ("newest.yaml", DEPRECATED_NEWEST, "gadgets.example.com"),
    ] {
        let path = manifest(&s.versa, file, text);
        ok(kubectl(&s.versa, &["apply", "-f", &path]));
        ok(kubectl(
            &s.versa,
            &["wait", "--for=condition=Established", "--timeout=60s", &format!("resourcedefinitions/{name}")],
        ));
    }
    let default_warning = "example.com/v1beta1 CronTab is deprecated; use example.com/v1 CronTab";
    let custom_warning = "example.com/v1alpha1 CronTab is deprecated; see http://example.com/v1alpha1-v1 for instructions to migrate to example.com/v1 CronTab";

    // kubectl prints each as `Warning: <text>`.
    let crontab = manifest(
        &s.versa,
        "crontab.yaml",
        "apiVersion: example.com/v1beta1\nkind: CronTab\nmetadata:\n  name: my-cron\nspec:\n  cronSpec: \"* * * * */5\"\n",
    );
    let out = kubectl(&s.versa, &["apply", "-f", &crontab]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    checks.check("kubectl apply at v1beta1 succeeds", out.status.success(), &stderr);
    checks.check("kubectl apply at v1beta1 warns", stderr.contains(&format!("Warning: {default_warning}\n")), &stderr);
    let (_, stderr) = kubectl_until(&s.versa, &["get", "crontabs.v1beta1.example.com"], |o| o.contains("my-cron"));
    checks.check(
        "kubectl get crontabs.v1beta1 warns",
        stderr.contains(&format!("Warning: {default_warning}\n")),
        &stderr,
    );
    let (_, stderr) =
        kubectl_until(&s.versa, &["get", "crontabs.v1alpha1.example.com", "my-cron"], |o| o.contains("my-cron"));
    checks.check(
        "kubectl get crontabs.v1alpha1: the custom warning verbatim",
        stderr.contains(&format!("Warning: {custom_warning}\n")),
        &stderr,
    );
    let (_, stderr) =
        kubectl_until(&s.versa, &["get", "crontabs.v1.example.com", "my-cron"], |o| o.contains("my-cron"));
    checks.check("kubectl get crontabs.v1: no warning", !stderr.contains("Warning:"), &stderr);

    // The header itself, on reads and writes.
    let base = |v: &str| format!("/apis/example.com/{v}/namespaces/default/crontabs");
    let header = |text: &str| format!("299 - \"{text}\"");
    let r = c.get(&base("v1beta1")).await;
    checks.eq("LIST at v1beta1: Warning", &json!(r.warnings()), &json!([header(default_warning)]));
    let r = c.get(&format!("{}/my-cron", base("v1alpha1"))).await;
    checks.eq("GET at v1alpha1: Warning", &json!(r.warnings()), &json!([header(custom_warning)]));
    let r = c
        .post(
            &base("v1alpha1"),
            &json!({"apiVersion": "example.com/v1alpha1", "kind": "CronTab", "metadata": {"name": "old"}}),
        )
        .await;
    checks.eq("create at v1alpha1: Warning", &json!([r.status, r.warnings()]), &json!([201, [header(custom_warning)]]));
    let r = c.get(&base("v1")).await;
    checks.eq("LIST at v1: no Warning", &json!(r.warnings()), &json!([]));
    let r = c.get("/apis/example.com/v1/namespaces/default/gadgets").await;
    checks.eq(
        "deprecated v1 with only an older version left: nothing to suggest",
        &json!(r.warnings()),
        &json!([header("example.com/v1 Gadget is deprecated")]),
    );
    let r = c.get("/apis/example.com/v1beta1/namespaces/default/gadgets").await;
    checks.eq("LIST at the non-deprecated v1beta1: no Warning", &json!(r.warnings()), &json!([]));

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 7. A version still in status.storedVersions cannot be removed.

/// kube's message for a stored version missing from `spec.versions`.
fn stored_version_message(definition: &str, index: usize, version: &str) -> String {
    format!(
        "ResourceDefinition.versa.dev \"{definition}\" is invalid: status.storedVersions[{index}]: Invalid value: \"{version}\": missing from spec.versions; {version} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {version} and removes {version} from status.storedVersions"
    )
}

#[tokio::test]
async fn stored_versions_cannot_be_removed() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    let name = format!("pizzas.{PIZZA}");
    define(c, &pizza_definition(webhook.conversion(&["v1"]), "v1alpha1")).await;
    for i in 0..3 {
        create(c, &pizzas("v1alpha1"), &pizza_alpha(&format!("p{i}"), &["tomato", "tomato"])).await;
    }
    let mut checks = Checks::default();
    let only_beta = |def: &mut Value| {
        let versions = def["spec"]["versions"].as_array_mut().unwrap();
        versions.retain(|v| v["name"] == "v1beta1");
        versions[0]["storage"] = json!(true);
    };

    // Dropping v1alpha1 while it is the storage version (and so a stored version).
    let r = update_definition(c, &name, only_beta).await;
    let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    checks.eq(
        "removing the stored version v1alpha1",
        &json!([r.status, body["reason"], body["message"]]),
        &json!([422, "Invalid", stored_version_message(&name, 0, "v1alpha1")]),
    );
    checks.eq(
        "removing the stored version v1alpha1: causes",
        &body["details"]["causes"],
        &json!([{
            "reason": "FieldValueInvalid",
            "field": "status.storedVersions[0]",
            "message": "Invalid value: \"v1alpha1\": missing from spec.versions; v1alpha1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1alpha1 and removes v1alpha1 from status.storedVersions",
        }]),
    );
    // The same through kubectl apply.
    let mut manifest_def = c.get(&format!("{RD}/{name}")).await.json();
    only_beta(&mut manifest_def);
    for key in ["resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"] {
        manifest_def["metadata"].as_object_mut().unwrap().remove(key);
    }
    manifest_def.as_object_mut().unwrap().remove("status");
    let path = manifest(&s.versa, "only-beta.json", &manifest_def.to_string());
    let out = kubectl(&s.versa, &["apply", "-f", &path]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    checks.check(
        "kubectl apply removing v1alpha1 is refused",
        !out.status.success()
            && stderr.contains("status.storedVersions[0]: Invalid value: \"v1alpha1\": missing from spec.versions"),
        &stderr,
    );

    // Storage moves to v1beta1 while the webhook is down: nothing can be migrated, v1alpha1
    // stays in storedVersions and still cannot be removed.
    webhook.down();
    let r = update_definition(c, &name, |def| {
        for v in def["spec"]["versions"].as_array_mut().unwrap() {
            v["storage"] = json!(v["name"] == "v1beta1");
        }
    })
    .await;
    if checks.code("storage version → v1beta1", &r, 200) {
        checks.eq(
            "storedVersions after the switch",
            &r.json()["status"]["storedVersions"],
            &json!(["v1alpha1", "v1beta1"]),
        );
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    checks.eq(
        "storedVersions while no object can be migrated",
        &stored_versions(c, &name).await,
        &json!(["v1alpha1", "v1beta1"]),
    );
    let r = update_definition(c, &name, |def| {
        def["spec"]["versions"].as_array_mut().unwrap().retain(|v| v["name"] == "v1beta1")
    })
    .await;
    let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    checks.eq(
        "removing v1alpha1 during the migration",
        &json!([r.status, body["message"]]),
        &json!([422, stored_version_message(&name, 0, "v1alpha1")]),
    );

    // Meanwhile, what needs no conversion still works: objects are read at the version they are
    // stored at, and a new object written at the new storage version is stored as it is.
    let r = c.get(&pizza_path("v1alpha1", "p0")).await;
    checks.code("webhook down: GET at v1alpha1 of an object stored there", &r, 200);
    let created = try_poll(Duration::from_secs(30), || async {
        let r = c.post(&pizzas("v1beta1"), &pizza_beta("p-new", &[("basil", 2)])).await;
        (r.status == 201).then_some(r)
    })
    .await;
    checks.check(
        "webhook down: create at v1beta1 (the storage version now)",
        created.is_some(),
        c.post(&pizzas("v1beta1"), &pizza_beta("p-new", &[("basil", 2)])).await.text(),
    );
    let r = c.get(&pizza_path("v1beta1", "p-new")).await;
    checks.code("webhook down: GET at v1beta1 of the object stored there", &r, 200);
    let r = c.get(&pizzas("v1beta1")).await;
    checks.conversion_failure(
        "webhook down: LIST at v1beta1 (p0..p2 are still at v1alpha1)",
        &r,
        "",
        &[&format!("conversion webhook for {PIZZA}/v1alpha1, Kind=Pizza failed: ")],
    );

    // Once the webhook is back, versa migrates, trims storedVersions, and v1alpha1 can go. A
    // list at v1alpha1 meanwhile sends only what is not already at v1alpha1 (kube's
    // getObjectsToConvert), whatever the migration has done so far.
    webhook.up();
    webhook.reset();
    let r = c.get(&pizzas("v1alpha1")).await;
    checks.code("LIST at v1alpha1 once the webhook is back", &r, 200);
    let sent: Vec<Value> = webhook
        .requests()
        .iter()
        .filter(|r| r["request"]["desiredAPIVersion"] == format!("{PIZZA}/v1alpha1"))
        .flat_map(|r| r["request"]["objects"].as_array().cloned().unwrap_or_default())
        .map(|o| json!([o["apiVersion"], o["metadata"]["name"]]))
        .collect();
    checks.check(
        "LIST at v1alpha1: only objects not at v1alpha1 are sent, p-new among them",
        sent.iter().all(|o| o[0] == format!("{PIZZA}/v1beta1")) && sent.iter().any(|o| o[1] == "p-new"),
        json!(sent),
    );
    checks.eq(
        "LIST at v1alpha1: p-new",
        &pick(&by_name(&r.json()), "p-new")["spec"],
        &json!({"toppings": ["basil", "basil"]}),
    );
    let trimmed = wait_stored_versions(c, &name, &json!(["v1beta1"]), MIGRATION_WAIT).await;
    checks.check(
        "storedVersions trimmed to [v1beta1] once the webhook is back",
        trimmed,
        stored_versions(c, &name).await,
    );
    if trimmed {
        let r = update_definition(c, &name, |def| {
            def["spec"]["versions"].as_array_mut().unwrap().retain(|v| v["name"] == "v1beta1")
        })
        .await;
        checks.code("removing v1alpha1 after the migration", &r, 200);
        wait_served(c, &pizzas("v1beta1")).await;
        let gone = try_poll(Duration::from_secs(30), || async {
            (c.get(&pizzas("v1alpha1")).await.status == 404).then_some(())
        })
        .await;
        checks.check("v1alpha1 is no longer served", gone.is_some(), c.get(&pizzas("v1alpha1")).await.status);
        let list = c.get(&pizzas("v1beta1")).await.json();
        let items = by_name(&list);
        checks.eq(
            "every object at v1beta1",
            &json!(items.iter().map(|(n, o)| json!([n, o["spec"]])).collect::<Vec<_>>()),
            &json!(
                [json!(["p-new", {"toppings": beta_toppings(&[("basil", 2)])}])]
                    .into_iter()
                    .chain((0..3).map(|i| json!([format!("p{i}"), {"toppings": beta_toppings(&[("tomato", 2)])}])))
                    .collect::<Vec<_>>()
            ),
        );
    }

    checks.finish();
}

// ---------------------------------------------------------------------------------------------
// 8. Storage migration, interrupted by SIGKILL.

/// The toppings of the i-th pizza of the migration test.
fn migration_toppings(i: usize) -> Vec<String> {
    let mut toppings = vec!["mozzarella".to_owned()];
    toppings.extend(std::iter::repeat_n("tomato".to_owned(), i % 3 + 1));
    toppings.push(format!("extra-{i}"));
    toppings
}

#[tokio::test]
async fn storage_migration_survives_a_kill() {
    const N: usize = 200;
    let webhook = Webhook::start();
    let mut checks = Checks::default();
    let has_rate_flag = serve_has_flag("--migration-rate");
    checks.check(
        "`versa serve --migration-rate` exists (without it the kill may come after the migration)",
        has_rate_flag,
        "flag missing from `versa serve --help`",
    );
    let flags: &[&str] = if has_rate_flag { &["--migration-rate", "20"] } else { &[] };
    let dir = tempfile::tempdir().unwrap();
    let name = format!("pizzas.{PIZZA}");

    let s = start(dir.path(), flags).await;
    define(&s.client, &pizza_definition(webhook.conversion(&["v1"]), "v1alpha1")).await;
    let mut originals = std::collections::BTreeMap::new();
    for i in 0..N {
        let toppings = migration_toppings(i);
        let toppings: Vec<&str> = toppings.iter().map(String::as_str).collect();
        let obj = create(&s.client, &pizzas("v1alpha1"), &pizza_alpha(&format!("p-{i:03}"), &toppings)).await;
        originals.insert(format!("p-{i:03}"), obj);
    }

    // Switch the storage version; versa starts rewriting the objects.
    webhook.reset();
    let r = update_definition(&s.client, &name, |def| {
        for v in def["spec"]["versions"].as_array_mut().unwrap() {
            v["storage"] = json!(v["name"] == "v1beta1");
        }
    })
    .await;
    if checks.code("storage version → v1beta1", &r, 200) {
        checks.eq(
            "storedVersions after the switch",
            &r.json()["status"]["storedVersions"],
            &json!(["v1alpha1", "v1beta1"]),
        );
    }
    // Kill versa once the migration is under way.
    let started = try_poll(Duration::from_secs(60), || async { (webhook.calls() > 0).then_some(()) }).await;
    checks.check("the migration calls the webhook", started.is_some(), "no webhook call within 60 s of the switch");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let at_kill = stored_versions(&s.client, &name).await;
    checks.eq("storedVersions when versa is killed (mid-migration)", &at_kill, &json!(["v1alpha1", "v1beta1"]));
    drop(s); // SIGKILL

    // Restarted, versa finishes the job.
    let s = start(dir.path(), flags).await;
    let c = &s.client;
    let trimmed = wait_stored_versions(c, &name, &json!(["v1beta1"]), MIGRATION_WAIT).await;
    checks.check("storedVersions trimmed to [v1beta1] after the restart", trimmed, stored_versions(c, &name).await);

    // What the migration sent: v1alpha1 objects to convert to v1beta1.
    let reviews = webhook.requests();
    let migrated: std::collections::BTreeSet<String> = reviews
        .iter()
        .filter(|r| r["request"]["desiredAPIVersion"] == format!("{PIZZA}/v1beta1"))
        .flat_map(|r| r["request"]["objects"].as_array().cloned().unwrap_or_default())
        .filter(|o| o["apiVersion"] == format!("{PIZZA}/v1alpha1"))
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    checks.eq("every object went through the webhook to v1beta1", &json!(migrated.len()), &json!(N));

    // Every object intact, and stored at v1beta1 (a list there calls no webhook).
    webhook.reset();
    let r = c.get(&pizzas("v1beta1")).await;
    checks.code("LIST at v1beta1", &r, 200);
    checks.eq("LIST at v1beta1 after the migration: webhook calls", &json!(webhook.calls()), &json!(0));
    let beta = by_name(&r.json());
    checks.eq("objects after the migration", &json!(beta.len()), &json!(N));
    let mut damaged = Vec::new();
    for (i, (name, original)) in originals.iter().enumerate() {
        let Some(obj) = beta.get(name) else {
            damaged.push(format!("{name}: missing"));
            continue;
        };
        let toppings = migration_toppings(i);
        let mut want = vec![("mozzarella", 1), ("tomato", (i % 3 + 1) as i64)];
        let extra = toppings.last().unwrap();
        want.push((extra.as_str(), 1));
        let same_identity = obj["metadata"]["uid"] == original["metadata"]["uid"]
            && obj["metadata"]["creationTimestamp"] == original["metadata"]["creationTimestamp"];
        if !json_eq(&obj["spec"]["toppings"], &beta_toppings(&want)) || !same_identity {
            damaged.push(format!("{name}: {obj}"));
        }
    }
    let shown: Vec<&String> = damaged.iter().take(5).collect();
    checks.check(
        "every object intact at v1beta1",
        damaged.is_empty(),
        format!("{} damaged, first: {shown:?}", damaged.len()),
    );
    let r = c.get(&pizzas("v1alpha1")).await;
    checks.code("LIST at v1alpha1", &r, 200);
    let alpha = by_name(&r.json());
    let damaged: Vec<&String> = originals
        .iter()
        .filter(|(n, o)| alpha.get(*n).map(|a| &a["spec"]) != Some(&o["spec"]))
        .map(|(n, _)| n)
        .collect();
    let shown: Vec<&&String> = damaged.iter().take(5).collect();
    checks.check(
        "every object intact at v1alpha1",
        damaged.is_empty(),
        format!("{} damaged, first: {shown:?}", damaged.len()),
    );

    checks.finish();
}

/// Server-side apply across versions through a conversion webhook, as kube's field manager
/// does it: an owner that applied `hostPort` at v1beta1 conflicts with an apply of `host` at v1
/// (the objects are converted to the owner's version, by the webhook, and compared there), the
/// conflict naming the owner's own field; forced, the v1 applier takes it.
#[tokio::test]
async fn apply_ownership_across_versions_through_the_webhook() {
    let webhook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &[]).await;
    let c = &s.client;
    define(c, &host_port_definition(webhook.conversion(&["v1", "v1beta1"]))).await;
    let path = |v: &str, manager: &str, force: bool| {
        let force = if force { "&force=true" } else { "" };
        format!("/apis/example.com/{v}/namespaces/default/crontabs/ct?fieldManager={manager}{force}")
    };
    let apply = "application/apply-patch+yaml";
    let at_v1beta1 = json!({"apiVersion": "example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "ct"},
                            "hostPort": "localhost:1234"});
    let r = c.patch(&path("v1beta1", "a", false), apply, &at_v1beta1).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let at_v1 = json!({"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "ct"},
                       "host": "example.com", "port": "1234"});
    let r = c.patch(&path("v1", "b", false), apply, &at_v1).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["message"], "Apply failed with 1 conflict: conflict with \"a\": .hostPort");
    let r = c.patch(&path("v1", "b", true), apply, &at_v1).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let stored = c.get("/apis/example.com/v1beta1/namespaces/default/crontabs/ct").await.json();
    assert_eq!(stored["hostPort"], "example.com:1234");
    let entries: Vec<Value> = stored["metadata"]["managedFields"].as_array().unwrap().clone();
    assert!(entries.iter().all(|e| e["manager"] != "a"), "a lost its only field: {entries:#?}");
    let b = entries.iter().find(|e| e["manager"] == "b").unwrap();
    assert_eq!((&b["apiVersion"], &b["fieldsV1"]), (&json!("example.com/v1"), &json!({"f:host": {}, "f:port": {}})));
}

/// A migration longer than the store's history window: each page of the walk is listed at the
/// latest revision, not at the revision of its first page, which the walk's own writes push out
/// of the history (a million objects paused with 410 Expired every 100,000 or so). With a
/// history of 100 events, 1,100 objects are walked in three pages of 500 without a pause.
#[tokio::test]
async fn migration_outlasts_the_history_window() {
    const N: usize = 1100;
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &["--history-events", "100", "--migration-rate", "100000"]).await;
    let c = &s.client;
    let name = "widgets.series.example.com";
    let collection = "/apis/series.example.com/v1beta1/namespaces/default/widgets";
    define(c, &widget_definition(json!({"strategy": "None"}), &[("v1beta1", true), ("v1", false)])).await;
    for i in 0..N {
        let widget = json!({
            "apiVersion": "series.example.com/v1beta1", "kind": "Widget",
            "metadata": {"name": format!("w-{i:04}")}, "spec": {"size": "small"},
        });
        create(c, collection, &widget).await;
    }
    let r = update_definition(c, name, |def| {
        def["spec"] =
            widget_definition(json!({"strategy": "None"}), &[("v1beta1", false), ("v1", true)])["spec"].clone();
    })
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut checks = Checks::default();
    let trimmed = wait_stored_versions(c, name, &json!(["v1"]), MIGRATION_WAIT).await;
    checks.check("every object migrated: storedVersions [v1]", trimmed, stored_versions(c, name).await);
    let def = c.get(&format!("{RD}/{name}")).await.json();
    checks.eq(
        "the condition",
        &condition(&def, "StorageMigrating").map(|c| json!([c["reason"], c["message"]])).unwrap_or_default(),
        &json!(["MigrationSucceeded", format!("all {N} objects are stored at v1 ({N} rewritten)")]),
    );
    let metrics = c.get("/metrics").await.text();
    let paused: Vec<&str> =
        metrics.lines().filter(|l| l.starts_with("versa_storage_migration_failures_total")).collect();
    checks.check("no paused pass", paused.iter().all(|l| l.ends_with(" 0")), paused.join("\n"));
    checks.finish();
}
