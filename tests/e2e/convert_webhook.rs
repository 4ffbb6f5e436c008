//! `versa convert --webhook-url` end to end (issue 18): the real `versa` binary, offline,
//! calling a real HTTPS conversion webhook (`webhook.rs`, which converts the seed's Pizza) for a
//! definition whose webhook is an in-cluster Service — what `--webhook-url` is for. Checked:
//! the objects come back converted both ways, all of them in one ConversionReview as the server
//! sends a LIST page, the certificate is checked against the definition's `caBundle`, and a
//! webhook that fails, cannot be trusted or is down is reported for the object with the API's
//! message, and exit status 1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code fails loudly")]

#[path = "webhook.rs"]
mod webhook;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use webhook::{Mode, Webhook};

const PIZZA: &str = "restaurant.programming-kubernetes.info";

/// The seed's Pizza, converted by a webhook behind a Service (unreachable offline) whose
/// certificate `ca_bundle` vouches for, when given.
fn pizza_definition(ca_bundle: Option<String>) -> Value {
    let schema = |toppings: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"toppings": toppings}},
        }}})
    };
    let mut client_config =
        json!({"service": {"namespace": "pizza-system", "name": "pizza-conversion", "path": "/convert"}});
    if let Some(ca) = ca_bundle {
        client_config["caBundle"] = json!(ca);
    }
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": format!("pizzas.{PIZZA}")},
        "spec": {
            "group": PIZZA,
            "scope": "Namespaced",
            "names": {"plural": "pizzas", "singular": "pizza", "kind": "Pizza", "listKind": "PizzaList"},
            "versions": [
                {"name": "v1alpha1", "served": true, "storage": true,
                 "schema": schema(json!({"type": "array", "items": {"type": "string"}}))},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": schema(json!({"type": "array", "items": {"type": "object", "properties": {
                     "name": {"type": "string"}, "quantity": {"type": "integer"}}}}))},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": client_config}},
        },
    })
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    path.display().to_string()
}

fn versa(args: &[&str]) -> Output {
    std::process::Command::new(versa_e2e::versa_bin()).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn convert_calls_the_webhook_at_the_url_given() {
    let hook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let def = write(dir.path(), "pizza.json", &pizza_definition(Some(hook.ca_bundle())));
    let margherita = write(
        dir.path(),
        "margherita.json",
        &json!({"apiVersion": format!("{PIZZA}/v1alpha1"), "kind": "Pizza",
            "metadata": {"name": "margherita", "namespace": "default"},
            "spec": {"toppings": ["mozzarella", "tomato", "tomato"]}}),
    );
    let funghi = write(
        dir.path(),
        "funghi.json",
        &json!({"apiVersion": format!("{PIZZA}/v1alpha1"), "kind": "Pizza",
            "metadata": {"name": "funghi", "namespace": "default"},
            "spec": {"toppings": ["mushroom", "mozzarella", "mushroom", "mushroom"]}}),
    );
    let url = hook.url();

    // v1alpha1 -> v1beta1: both objects in one review.
    let o = versa(&[
        "convert",
        "--definition",
        &def,
        "--to",
        "v1beta1",
        "--webhook-url",
        &url,
        "-o",
        "json",
        &margherita,
        &funghi,
    ]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{list}");
    assert_eq!(items[0]["apiVersion"], format!("{PIZZA}/v1beta1"));
    assert_eq!(items[0]["metadata"]["name"], "margherita");
    assert_eq!(
        items[0]["spec"]["toppings"],
        json!([{"name": "mozzarella", "quantity": 1}, {"name": "tomato", "quantity": 2}])
    );
    assert_eq!(items[1]["metadata"]["name"], "funghi");
    assert_eq!(
        items[1]["spec"]["toppings"],
        json!([{"name": "mushroom", "quantity": 3}, {"name": "mozzarella", "quantity": 1}])
    );
    let reviews = hook.requests();
    assert_eq!(reviews.len(), 1, "one review for all objects: {reviews:?}");
    let request = &reviews[0]["request"];
    assert_eq!(reviews[0]["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(request["desiredAPIVersion"], format!("{PIZZA}/v1beta1"));
    assert_eq!(request["objects"].as_array().map(Vec::len), Some(2));
    assert!(request["uid"].as_str().is_some_and(|u| !u.is_empty()), "{request}");

    // v1beta1 -> v1alpha1, in YAML: the order of first appearance, each name as often as counted.
    hook.reset();
    let beta = write(dir.path(), "beta.json", &items[0]);
    let o = versa(&["convert", "--definition", &def, "--to", "v1alpha1", "--webhook-url", &url, &beta]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains(&format!("apiVersion: {PIZZA}/v1alpha1")), "{out}");
    assert!(out.contains("toppings:\n  - mozzarella\n  - tomato\n  - tomato"), "{out}");
    assert_eq!(hook.calls(), 1);

    // An object already at the target needs no call.
    hook.reset();
    let o = versa(&["convert", "--definition", &def, "--to", "v1beta1", "--webhook-url", &url, &beta]);
    assert_eq!(o.status.code(), Some(0), "stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    assert_eq!(hook.calls(), 0);
}

#[test]
fn convert_reports_a_webhook_that_fails_or_cannot_be_trusted() {
    let hook = Webhook::start();
    let dir = tempfile::tempdir().unwrap();
    let pizza = write(
        dir.path(),
        "p.json",
        &json!({"apiVersion": format!("{PIZZA}/v1alpha1"), "kind": "Pizza", "metadata": {"name": "p"},
            "spec": {"toppings": ["tomato"]}}),
    );
    let url = hook.url();

    // The webhook answers Failed: the object's source and kube's message (on standard output,
    // as versa convert reports each object), exit status 1, no object printed.
    let def = write(dir.path(), "pizza.json", &pizza_definition(Some(hook.ca_bundle())));
    hook.set_mode(Mode::Failed("the oven is cold".into()));
    let o = versa(&["convert", "--definition", &def, "--to", "v1beta1", "--webhook-url", &url, &pizza]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("{pizza}: conversion webhook for {PIZZA}/v1alpha1, Kind=Pizza failed: the oven is cold")),
        "{out}"
    );
    assert!(!out.contains("apiVersion"), "{out}");
    assert_eq!(hook.calls(), 1);

    // Without the definition's caBundle the webhook's certificate is checked against the
    // system roots, which do not know its CA. (The URL is called with kube's `?timeout=30s`.)
    hook.set_mode(Mode::Convert);
    hook.reset();
    let untrusted = write(dir.path(), "untrusted.json", &pizza_definition(None));
    let o = versa(&["convert", "--definition", &untrusted, "--to", "v1beta1", "--webhook-url", &url, &pizza]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!(
            "{pizza}: conversion webhook for {PIZZA}/v1alpha1, Kind=Pizza failed: Post \"{url}?timeout=30s\""
        )),
        "{out}"
    );
    assert!(out.contains("x509: certificate signed by unknown authority"), "{out}");
    assert_eq!(hook.calls(), 0, "no review was sent to an untrusted server");

    // A webhook that is down.
    hook.down();
    let o = versa(&["convert", "--definition", &def, "--to", "v1beta1", "--webhook-url", &url, &pizza]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", text(&o.stdout), text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!(
            "{pizza}: conversion webhook for {PIZZA}/v1alpha1, Kind=Pizza failed: Post \"{url}?timeout=30s\""
        )),
        "{out}"
    );
}
