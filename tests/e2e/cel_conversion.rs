//! Declarative conversion end to end (issue 18): the seed's Pizza (`003_2f1e71533aee8360.txt`)
//! served by the real `versa serve` with `spec.conversion.strategy: CEL` alone — no webhook —
//! through create, get, list, watch and patch at either version, kubectl, a rule that fails at
//! runtime (a 500 naming the rule, nothing written), storage migration to the other version, and
//! the annotation that keeps what v1beta1 cannot hold (the order of v1alpha1's toppings).
//!
//! The definition is `crates/versa-conversion/testdata/pizza-cel-definition.yaml`, the one the
//! converter's own tests and `versa convert`'s use.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "client.rs"]
mod client;

use std::future::Future;
use std::time::Duration;

use client::Client;
use serde_json::{Value, json};
use versa_e2e::Versa;

const RD: &str = "/apis/versa.dev/v1/resourcedefinitions";
const PIZZA: &str = "restaurant.programming-kubernetes.info";
const NAME: &str = "pizzas.restaurant.programming-kubernetes.info";
/// Generous bounds for a shared machine (they fail a broken server, they time nothing).
const WAIT: Duration = Duration::from_secs(60);
const MIGRATION_WAIT: Duration = Duration::from_secs(120);

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
        assert!(tokio::time::Instant::now() < deadline, "{what}: not reached within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn definition() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/versa-conversion/testdata/pizza-cel-definition.yaml");
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn pizzas(version: &str) -> String {
    format!("/apis/{PIZZA}/{version}/namespaces/default/pizzas")
}

fn pizza(version: &str, name: &str) -> String {
    format!("{}/{name}", pizzas(version))
}

fn alpha(name: &str, toppings: &[&str]) -> Value {
    json!({"apiVersion": format!("{PIZZA}/v1alpha1"), "kind": "Pizza", "metadata": {"name": name},
           "spec": {"toppings": toppings}})
}

fn beta(name: &str, toppings: &[(&str, i64)]) -> Value {
    json!({"apiVersion": format!("{PIZZA}/v1beta1"), "kind": "Pizza", "metadata": {"name": name},
           "spec": {"toppings": beta_toppings(toppings)}})
}

fn beta_toppings(toppings: &[(&str, i64)]) -> Value {
    toppings.iter().map(|(n, q)| json!({"name": n, "quantity": q})).collect()
}

async fn define(c: &Client, def: &Value) {
    let r = c.post(RD, def).await;
    assert_eq!(r.status, 201, "creating the definition: {}", r.text());
    poll("the definition Established", WAIT, || async move {
        let def = c.get(&format!("{RD}/{NAME}")).await.json();
        let conditions = def.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        conditions.iter().any(|c| c["type"] == "Established" && c["status"] == "True").then_some(())
    })
    .await;
    for v in ["v1alpha1", "v1beta1"] {
        poll("served", WAIT, || async move { (c.get(&pizzas(v)).await.status == 200).then_some(()) }).await;
    }
}

/// Replaces the definition's spec with `change` applied (retrying on conflicts).
async fn update_definition(c: &Client, change: impl Fn(&mut Value)) {
    for _ in 0..10 {
        let mut def = c.get(&format!("{RD}/{NAME}")).await.json();
        change(&mut def);
        let r = c.put(&format!("{RD}/{NAME}"), &def).await;
        if r.status == 200 {
            return;
        }
        assert_eq!(r.status, 409, "updating the definition: {}", r.text());
    }
    panic!("the definition update kept conflicting");
}

fn toppings(obj: &Value) -> Value {
    obj["spec"]["toppings"].clone()
}

#[tokio::test]
async fn pizza_with_cel_conversion_alone() {
    let dir = tempfile::tempdir().unwrap();
    let versa = Versa::start(dir.path());
    let c = &Client::admin(&versa.data_dir, &versa.address);
    poll("versa ready", WAIT, || async move { (c.get("/readyz").await.status == 200).then_some(()) }).await;
    define(c, &definition()).await;

    // Create at v1alpha1 (the storage version), read at v1beta1: the seed's margherita.
    let r = c.post(&pizzas("v1alpha1"), &alpha("margherita", &["mozzarella", "tomato", "tomato"])).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let got = c.get(&pizza("v1beta1", "margherita")).await;
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["apiVersion"], format!("{PIZZA}/v1beta1"));
    assert_eq!(toppings(&got.json()), beta_toppings(&[("mozzarella", 1), ("tomato", 2)]));

    // Create at v1beta1 (converted to v1alpha1 to be stored), read at both.
    let r = c.post(&pizzas("v1beta1"), &beta("funghi", &[("mushroom", 1), ("mozzarella", 2)])).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(toppings(&r.json()), beta_toppings(&[("mushroom", 1), ("mozzarella", 2)]), "the answer, converted back");
    let got = c.get(&pizza("v1alpha1", "funghi")).await.json();
    assert_eq!(toppings(&got), json!(["mushroom", "mozzarella", "mozzarella"]));

    // LIST at v1beta1, then WATCH from there while a PATCH at v1alpha1 adds basil.
    let list = c.get(&pizzas("v1beta1")).await.json();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let listed: Vec<(Value, Value)> = items.iter().map(|i| (i["metadata"]["name"].clone(), toppings(i))).collect();
    assert_eq!(
        listed,
        vec![
            (json!("funghi"), beta_toppings(&[("mushroom", 1), ("mozzarella", 2)])),
            (json!("margherita"), beta_toppings(&[("mozzarella", 1), ("tomato", 2)])),
        ]
    );
    let from = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watch = c.watch(&format!("{}?watch=true&resourceVersion={from}", pizzas("v1beta1")), &[]).await;
    let r = c
        .merge_patch(
            &pizza("v1alpha1", "margherita"),
            &json!({"spec": {"toppings": ["mozzarella", "tomato", "tomato", "basil"]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let event = watch.event(WAIT, "the patch, watched at v1beta1").await;
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["apiVersion"], format!("{PIZZA}/v1beta1"));
    assert_eq!(toppings(&event["object"]), beta_toppings(&[("mozzarella", 1), ("tomato", 2), ("basil", 1)]));

    // PATCH at v1beta1 (read, converted, patched, converted to be stored), read at v1alpha1.
    let r = c
        .merge_patch(&pizza("v1beta1", "margherita"), &json!({"spec": {"toppings": beta_toppings(&[("tomato", 3)])}}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(toppings(&c.get(&pizza("v1alpha1", "margherita")).await.json()), json!(["tomato", "tomato", "tomato"]));

    // kubectl, at the version it prefers (v1beta1) and at v1alpha1.
    let get = |resource: &str| poll_kubectl(&versa, &["get", resource, "funghi", "-o", "json"]);
    assert_eq!(toppings(&get("pizzas")), beta_toppings(&[("mushroom", 1), ("mozzarella", 2)]));
    assert_eq!(toppings(&get(&format!("pizzas.v1alpha1.{PIZZA}"))), json!(["mushroom", "mozzarella", "mozzarella"]));

    // A rule that fails at runtime on one object: a 500 naming the rule, and nothing written.
    // (It passes the definition-time sample checks: no generated pizza has pineapple.)
    update_definition(c, |def| {
        def["spec"]["conversion"]["cel"]["conversions"][1]["fields"][0]["expression"] = json!(
            "self.spec.toppings.exists(t, t.name == 'pineapple') ? [string(int('no pineapple'))] : self.spec.toppings.map(t, lists.range(t.quantity).map(i, t.name)).flatten()"
        );
    })
    .await;
    // Until the new rule is served, the old one converts it: such a pizza is removed again.
    let r = poll("the new rule served", WAIT, || async move {
        let r = c.post(&pizzas("v1beta1"), &beta("hawaii", &[("pineapple", 1)])).await;
        if r.status == 201 {
            c.delete(&pizza("v1beta1", "hawaii")).await;
            return None;
        }
        Some(r)
    })
    .await;
    assert_eq!(r.status, 500, "{}", r.text());
    let message = r.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.contains("CEL conversion for restaurant.programming-kubernetes.info/v1beta1, Kind=Pizza failed: spec.conversion.cel.conversions[1].fields[0] (path spec.toppings"),
        "{message}"
    );
    assert_eq!(c.get(&pizza("v1beta1", "hawaii")).await.status, 404, "nothing written");

    // Storage migration to v1beta1: every object rewritten at v1beta1 by the CEL rules.
    update_definition(c, |def| {
        let versions = def["spec"]["versions"].as_array_mut().unwrap();
        for v in versions.iter_mut() {
            let beta = v["name"] == "v1beta1";
            v["storage"] = json!(beta);
        }
    })
    .await;
    poll("storedVersions trimmed to [v1beta1]", MIGRATION_WAIT, || async move {
        let def = c.get(&format!("{RD}/{NAME}")).await.json();
        (def["status"]["storedVersions"] == json!(["v1beta1"])).then_some(())
    })
    .await;
    assert_eq!(
        toppings(&c.get(&pizza("v1alpha1", "funghi")).await.json()),
        json!(["mushroom", "mozzarella", "mozzarella"])
    );
    assert_eq!(toppings(&c.get(&pizza("v1beta1", "margherita")).await.json()), beta_toppings(&[("tomato", 3)]));

    // Written at v1alpha1, stored at v1beta1, which cannot hold the toppings' order: the
    // annotation keeps it, and v1alpha1 reads give it back.
    let r = c.post(&pizzas("v1alpha1"), &alpha("ordered", &["tomato", "mozzarella", "tomato"])).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(toppings(&r.json()), json!(["tomato", "mozzarella", "tomato"]));
    let stored = c.get(&pizza("v1beta1", "ordered")).await.json();
    assert_eq!(toppings(&stored), beta_toppings(&[("tomato", 2), ("mozzarella", 1)]));
    assert!(stored["metadata"]["annotations"]["versa.dev/conversion-data"].is_string(), "{stored}");
    let read = c.get(&pizza("v1alpha1", "ordered")).await.json();
    assert_eq!(toppings(&read), json!(["tomato", "mozzarella", "tomato"]));
    assert!(read["metadata"].get("annotations").is_none(), "the annotation is not shown at v1alpha1: {read}");
}

/// kubectl until it answers (discovery is cached; a just-served version may take a retry).
fn poll_kubectl(versa: &Versa, args: &[&str]) -> Value {
    let mut last = String::new();
    for _ in 0..100 {
        let out = versa.kubectl(args);
        if out.status.success() {
            return serde_json::from_slice(&out.stdout).unwrap();
        }
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("kubectl {args:?} kept failing: {last}");
}
