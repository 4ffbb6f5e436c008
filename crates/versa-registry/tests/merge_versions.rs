//! Structured merge across versions through a real HTTPS conversion webhook (versa-conversion's
//! test webhook, which converts the seed's Pizza), on a current-thread runtime: the webhook is
//! called between runs of the merge ([`Conversions::settle`]), never from inside one, so no
//! runtime flavour is needed (issue 36: the merge used to block its worker on the webhook and
//! refused a current-thread runtime). An entry written at `v1alpha1` is judged on the objects
//! the webhook converted there, by an apply and by an update at `v1beta1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

#[path = "../../versa-conversion/tests/support/mod.rs"]
mod support;

use std::sync::Mutex;

use base64::Engine as _;
use serde_json::{Value, json};
use support::{Ca, Webhook};
use versa_apiextensions::ResourceDefinition;
use versa_registry::error::Error;
use versa_registry::fields::Manager;
use versa_registry::storage::Observer;
use versa_registry::strategy::Strategy;
use versa_registry::versions::Conversions;
use versa_registry::{Compact, Resource};

const GROUP: &str = "restaurant.programming-kubernetes.info";

/// The Pizza definition converting through the webhook at `base`.
fn pizzas(webhook: &Webhook, ca: &Ca) -> Resource {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../versa-conversion/testdata/pizza-definition.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["spec"]["conversion"]["webhook"]["clientConfig"] = json!({
        "url": format!("{}/pizza", webhook.base),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca.pem),
    });
    let mut def = ResourceDefinition::from_document(&doc).unwrap();
    versa_apiextensions::set_defaults(&mut def);
    Resource::build(&def, Compact::of(&def), &versa_conversion::Options::default())
}

/// The conversions observed: strategy and success.
#[derive(Default)]
struct Observed(Mutex<Vec<(String, bool)>>);

impl Observer for Observed {
    fn conversion(&self, _: &str, strategy: &str, ok: bool, _: f64) {
        self.0.lock().unwrap().push((strategy.to_owned(), ok));
    }
}

/// A pizza at `version` with `toppings`.
fn pizza(version: &str, toppings: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "Pizza",
           "metadata": {"name": "margherita", "namespace": "default"}, "spec": {"toppings": toppings}})
}

/// An apply by `manager` at `version`, settled as the store settles it (the live object's
/// conversions asked for ahead).
async fn apply(
    res: &Resource,
    version: &str,
    manager: &str,
    live: Option<&Value>,
    config: &Value,
    force: bool,
    observer: &Observed,
) -> Result<Value, Error> {
    let strategy = Strategy::at(res, version).unwrap();
    let manager = Manager { name: manager.into(), subresource: "" };
    let conversions = Conversions::default();
    if let Some(live) = live {
        conversions.foresee(res, &format!("{GROUP}/{version}"), &[live], &[live]);
    }
    let run = || strategy.apply(&manager, live, config, force, &conversions, observer);
    conversions.settle(res, observer, run).await?
}

/// The `managedFields` entries: manager, operation, apiVersion, fields.
fn entries(obj: &Value) -> Vec<Value> {
    let all = obj["metadata"]["managedFields"].as_array().unwrap();
    all.iter().map(|e| json!([e["manager"], e["operation"], e["apiVersion"], e["fieldsV1"]])).collect()
}

/// The webhook's reviews since `from`: the version each asked for and how many objects.
fn reviews(webhook: &Webhook, from: usize) -> Vec<(String, usize)> {
    let requests = webhook.requests();
    let request = |r: &support::Recorded| {
        let req = &r.body["request"];
        (req["desiredAPIVersion"].as_str().unwrap().to_owned(), req["objects"].as_array().unwrap().len())
    };
    requests[from..].iter().map(request).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn entries_at_another_version_are_judged_through_the_webhook() {
    let ca = Ca::new("merge test CA");
    let webhook = Webhook::start(&ca).await;
    let res = pizzas(&webhook, &ca);
    let observed = Observed::default();
    let alpha = format!("{GROUP}/v1alpha1");

    // `a` applies at v1alpha1: nothing at another version, nothing converted.
    let config_a = pizza("v1alpha1", json!(["mozzarella", "tomato", "tomato"]));
    let at_alpha = apply(&res, "v1alpha1", "a", None, &config_a, false, &observed).await.unwrap();
    assert_eq!(reviews(&webhook, 0), vec![]);
    // The object as a request at v1beta1 reads it.
    let converter = res.converter().unwrap();
    let at_beta = converter.convert(vec![at_alpha], "v1beta1").await.unwrap().pop().unwrap();
    assert_eq!(
        at_beta["spec"]["toppings"],
        json!([{"name": "mozzarella", "quantity": 1}, {"name": "tomato", "quantity": 2}])
    );
    let seen = webhook.requests().len();

    // `b` applies other toppings at v1beta1: the objects are converted to v1alpha1, where `a`'s
    // entry is, by the webhook — the live one asked for ahead, the merged one in a second round
    // — and `a`'s field conflicts.
    let config_b = pizza("v1beta1", json!([{"name": "basil", "quantity": 1}]));
    let conflict = apply(&res, "v1beta1", "b", Some(&at_beta), &config_b, false, &observed).await.unwrap_err();
    assert_eq!(conflict.to_string(), "Apply failed with 1 conflict: conflict with \"a\": .spec.toppings");
    assert_eq!(reviews(&webhook, seen), vec![(alpha.clone(), 1), (alpha.clone(), 1)]);
    let seen = webhook.requests().len();

    // Forced, `b` takes the field; `a` owned nothing else and goes.
    let forced = apply(&res, "v1beta1", "b", Some(&at_beta), &config_b, true, &observed).await.unwrap();
    assert_eq!(
        entries(&forced),
        vec![json!(["b", "Apply", format!("{GROUP}/v1beta1"), {"f:spec": {"f:toppings": {}}}])]
    );
    assert_eq!(reviews(&webhook, seen), vec![(alpha.clone(), 1), (alpha.clone(), 1)]);
    let seen = webhook.requests().len();

    // An update by `c` at v1beta1 takes `a`'s field as well: the live and the new object are
    // both asked for ahead, in one call.
    let strategy = Strategy::at(&res, "v1beta1").unwrap();
    let mut updated = at_beta.clone();
    updated["spec"]["toppings"] = json!([{"name": "olive", "quantity": 3}]);
    let conversions = Conversions::default();
    let c = Manager { name: "c".into(), subresource: "" };
    strategy.track(&c, Some(&at_beta), &mut updated, &conversions, &observed).await.unwrap();
    assert_eq!(
        entries(&updated),
        vec![json!(["c", "Update", format!("{GROUP}/v1beta1"), {"f:spec": {"f:toppings": {}}}])]
    );
    assert_eq!(reviews(&webhook, seen), vec![(alpha.clone(), 2)]);

    // Every webhook call the merges made was observed, as the storage boundary's are.
    let observed = observed.0.lock().unwrap().clone();
    assert_eq!(observed, vec![("Webhook".to_owned(), true); 5]);
}

/// An applier whose last apply was at another version is pruned there, through the webhook at
/// every step: `a` applied toppings at v1alpha1 and applies at v1beta1 without them. The
/// pruning converts the objects it makes on the way (the merged object to v1alpha1, it and the
/// pruned one back, …), one round of calls each, on a current-thread runtime. This webhook answers `toppings: []` for a
/// pizza without toppings, so the pruned object still has the field at v1beta1 and the
/// toppings stay — what kube's field manager makes of the same answers.
#[tokio::test(flavor = "current_thread")]
async fn an_applier_is_pruned_at_the_version_of_its_last_apply() {
    let ca = Ca::new("merge test CA");
    let webhook = Webhook::start(&ca).await;
    let res = pizzas(&webhook, &ca);
    let observed = Observed::default();
    let config = pizza("v1alpha1", json!(["mozzarella"]));
    let at_alpha = apply(&res, "v1alpha1", "a", None, &config, false, &observed).await.unwrap();
    let converter = res.converter().unwrap();
    let at_beta = converter.convert(vec![at_alpha], "v1beta1").await.unwrap().pop().unwrap();
    let seen = webhook.requests().len();

    let mut config = pizza("v1beta1", json!(null));
    config["spec"] = json!({});
    let pruned = apply(&res, "v1beta1", "a", Some(&at_beta), &config, false, &observed).await.unwrap();
    assert_eq!(pruned["spec"], at_beta["spec"]);
    assert_eq!(entries(&pruned), vec![json!(["a", "Apply", format!("{GROUP}/v1beta1"), {"f:spec": {}}])]);
    let (alpha, beta) = (format!("{GROUP}/v1alpha1"), format!("{GROUP}/v1beta1"));
    // The merged object at v1alpha1; it and the pruned one back at v1beta1; the pruned one at
    // v1alpha1 again. The result back at v1beta1 is the merged object at v1alpha1 (nothing was
    // removed), converted already: the request's own answer.
    assert_eq!(reviews(&webhook, seen), vec![(alpha.clone(), 1), (beta.clone(), 1), (beta, 1), (alpha, 1)]);
}
