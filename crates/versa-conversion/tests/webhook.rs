//! The Webhook strategy against a real HTTPS webhook with its own CA, driven by
//! `testdata/webhook-cases.json`: each case starts a webhook (`tests/support`), points the pizza
//! definition at it, converts a batch and compares the objects or the exact error, the number of
//! calls and what was sent. Placeholders in expected errors: `{url}` (the URL called, with its
//! `?timeout=`), `{authority}` (`127.0.0.1:<port>`), `{uid}` (the uid of the review sent).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: the test webhook and the case files should fail loudly"
)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use support::{Ca, Webhook, closed_port, schemas, testdata};
use versa_apiextensions::ResourceDefinition;
use versa_conversion::{BuildError, Converter, Options};

/// The pizza definition calling `url`, trusting `ca_pem` (or the system roots).
fn pizza_definition(url: &str, ca_pem: Option<&str>, review_versions: &[&str]) -> ResourceDefinition {
    let mut doc = testdata("pizza-definition.json");
    let webhook = &mut doc["spec"]["conversion"]["webhook"];
    webhook["clientConfig"] = json!({"url": url});
    if let Some(pem) = ca_pem {
        webhook["clientConfig"]["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(pem));
    }
    webhook["conversionReviewVersions"] = json!(review_versions);
    ResourceDefinition::from_document(&doc).unwrap()
}

/// A case's object: a name in `testdata/pizzas.json`, or the object itself.
fn object(pizzas: &Value, v: &Value) -> Value {
    match v {
        Value::String(name) => pizzas.get(name).cloned().unwrap_or_else(|| panic!("no pizza {name}")),
        other => other.clone(),
    }
}

#[tokio::test]
async fn webhook_cases() {
    let pizzas = testdata("pizzas.json");
    let cases = testdata("webhook-cases.json");
    let ca = Ca::new("webhook test CA");
    let other_ca = Ca::new("another CA");
    let mut failures = Vec::new();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let behaviour = case["webhook"].as_str().unwrap();
        let (webhook, authority) = if case["server"] == "down" {
            (None, closed_port().await)
        } else if case["server"] == "hangs-up" {
            let w = Webhook::start_hanging_up(&ca).await;
            let authority = w.authority.clone();
            (Some(w), authority)
        } else {
            let w = Webhook::start(&ca).await;
            let authority = w.authority.clone();
            (Some(w), authority)
        };
        let url = format!("https://{authority}/{behaviour}");
        let ca_pem = match case["ca"].as_str() {
            Some("other") => Some(other_ca.pem.as_str()),
            Some("none") => None,
            _ => Some(ca.pem.as_str()),
        };
        let review_versions: Vec<&str> = case["reviewVersions"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_else(|| vec!["v1", "v1beta1"]);
        let def = pizza_definition(&url, ca_pem, &review_versions);
        let timeout = case["timeoutMs"].as_u64().map_or(Duration::from_secs(30), Duration::from_millis);
        let converter = Converter::new(&def, schemas(&def), &Options { webhook_timeout: timeout }).unwrap();
        assert_eq!(converter.strategy(), "Webhook");

        let objects: Vec<Value> = case["objects"].as_array().unwrap().iter().map(|o| object(&pizzas, o)).collect();
        let result = converter.convert(objects, case["to"].as_str().unwrap()).await;
        let requests = webhook.as_ref().map(Webhook::requests).unwrap_or_default();
        let uid = requests.last().and_then(|r| r["request"]["uid"].as_str().map(str::to_owned)).unwrap_or_default();
        let called_url = format!("{url}?timeout={}", go_duration(timeout));

        if let Some(want) = case.get("want") {
            let want: Vec<Value> = want.as_array().unwrap().iter().map(|o| object(&pizzas, o)).collect();
            match &result {
                Ok(got) if *got == want => {}
                Ok(got) => failures.push(format!(
                    "{name}:\n  got  {}\n  want {}",
                    Value::Array(got.clone()),
                    Value::Array(want)
                )),
                Err(e) => failures.push(format!("{name}: unexpected error: {e}")),
            }
        }
        if let Some(want) = case["error"].as_str() {
            let want = want.replace("{url}", &called_url).replace("{authority}", &authority).replace("{uid}", &uid);
            match &result {
                Err(e) if e.to_string() == want => {}
                Err(e) => failures.push(format!("{name}:\n  got  {e}\n  want {want}")),
                Ok(got) => {
                    failures.push(format!("{name}: converted, want error {want}: {}", Value::Array(got.clone())))
                }
            }
        }
        if let Some(calls) = case["calls"].as_u64()
            && requests.len() as u64 != calls
        {
            failures.push(format!("{name}: {} webhook calls, want {calls}", requests.len()));
        }
        if let Some(sent) = case.get("sent") {
            let got: Vec<Value> = requests
                .iter()
                .flat_map(|r| r["request"]["objects"].as_array().cloned().unwrap_or_default())
                .map(|o| o["metadata"]["name"].clone())
                .collect();
            if &Value::Array(got.clone()) != sent {
                failures.push(format!("{name}: sent {got:?}, want {sent}"));
            }
        }
        if let Some(review) = case["review"].as_str() {
            for r in &requests {
                if r["apiVersion"] != review {
                    failures.push(format!("{name}: review sent as {}, want {review}", r["apiVersion"]));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// Go's spelling of the durations the cases use.
fn go_duration(d: Duration) -> String {
    if d.as_secs() > 0 && d.subsec_nanos() == 0 { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) }
}

impl std::ops::Index<&str> for support::Recorded {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        &self.body[key]
    }
}

#[tokio::test]
async fn the_request_is_a_conversion_review_posted_as_json() {
    let ca = Ca::new("webhook test CA");
    let webhook = Webhook::start(&ca).await;
    let def = pizza_definition(&format!("{}/pizza", webhook.base), Some(&ca.pem), &["v1", "v1beta1"]);
    let converter = Converter::new(&def, schemas(&def), &Options::default()).unwrap();
    let margherita = testdata("pizzas.json")["margherita@v1alpha1"].clone();
    converter.convert(vec![margherita.clone()], "v1beta1").await.unwrap();

    let requests = webhook.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!((r.path.as_str(), r.query.as_str()), ("/pizza", "timeout=30s"));
    assert_eq!(r.content_type, "application/json");
    let uid = r["request"]["uid"].as_str().unwrap().to_owned();
    assert_eq!(uid.len(), 36, "{uid}");
    assert_eq!(
        r.body,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": uid,
                "desiredAPIVersion": "restaurant.programming-kubernetes.info/v1beta1",
                "objects": [margherita],
            },
        })
    );
}

#[tokio::test]
async fn one_pooled_connection_serves_many_calls_over_http2() {
    let ca = Ca::new("webhook test CA");
    let webhook = Webhook::start(&ca).await;
    let def = pizza_definition(&format!("{}/pizza", webhook.base), Some(&ca.pem), &["v1"]);
    let converter = Arc::new(Converter::new(&def, schemas(&def), &Options::default()).unwrap());
    let pizzas = testdata("pizzas.json");
    for _ in 0..3 {
        let got = converter.convert(vec![pizzas["margherita@v1alpha1"].clone()], "v1beta1").await.unwrap();
        assert_eq!(got, vec![pizzas["margherita@v1beta1"].clone()]);
    }
    // Concurrent calls share the connection too (HTTP/2 multiplexing).
    let calls = (0..4).map(|_| {
        let (c, p) = (converter.clone(), pizzas["funghi@v1alpha1"].clone());
        tokio::spawn(async move { c.convert(vec![p], "v1beta1").await })
    });
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), vec![pizzas["funghi@v1beta1"].clone()]);
    }
    let requests = webhook.requests();
    assert_eq!(requests.len(), 7);
    assert!(
        requests.iter().all(|r| r.version == http::Version::HTTP_2),
        "{:?}",
        requests.iter().map(|r| r.version).collect::<Vec<_>>()
    );
    assert_eq!(webhook.connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn build_errors() {
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut doc = testdata("pizza-definition.json");
        edit(&mut doc);
        let def = ResourceDefinition::from_document(&doc).unwrap();
        Converter::new(&def, schemas(&def), &Options::default()).map(|c| c.strategy())
    };
    assert_eq!(with(&|_| {}).unwrap(), "Webhook");
    assert_eq!(with(&|d| d["spec"]["conversion"] = json!({"strategy": "None"})).unwrap(), "None");
    assert_eq!(
        with(&|d| {
            d["spec"].as_object_mut().unwrap().remove("conversion");
        })
        .unwrap(),
        "None"
    );

    let err = with(&|d| d["spec"]["conversion"]["strategy"] = json!("Magic")).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"unknown conversion strategy "Magic" for CRD pizzas.restaurant.programming-kubernetes.info"#
    );

    let err = with(&|d| d["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v2"])).unwrap_err();
    assert_eq!(err.to_string(), "no supported conversion review versions");

    let bundle = base64::engine::general_purpose::STANDARD.encode("not a certificate");
    let err = with(&|d| d["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = json!(bundle)).unwrap_err();
    assert!(err.is_invalid_ca_bundle());
    assert_eq!(err.to_string(), "unable to load root certificates: unable to parse bytes as PEM block");
    assert_eq!(
        (versa_conversion::INVALID_CA_BUNDLE_REASON, versa_conversion::INVALID_CA_BUNDLE_MESSAGE),
        ("InvalidCABundle", "The conversion webhook CABundle is invalid")
    );

    let err = with(&|d| d["spec"]["conversion"]["webhook"]["clientConfig"] = json!({})).unwrap_err();
    assert!(matches!(err, BuildError::NoEndpoint { .. }));
    assert_eq!(
        err.to_string(),
        r#"failed calling webhook "conversion_webhook_for_pizzas.restaurant.programming-kubernetes.info": webhook configuration must have either service or URL"#
    );
}
