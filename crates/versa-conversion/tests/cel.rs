//! The CEL strategy: the cases of `testdata/cel-cases.yaml` (see its header), and round trips
//! of generated objects of the pizza schemas and of the `things` definition of the case file —
//! every object converted to another version and back, through the annotation that keeps what
//! the other version cannot hold, comes back as it was (issue 18).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code fails loudly")]

use serde_json::Value;
use versa_apiextensions::cel_conversion::lower_schemas;
use versa_apiextensions::{ResourceDefinition, set_defaults, validate_definition};
use versa_conversion::{CONVERSION_DATA_ANNOTATION, Converter, Options, samples};

fn yaml(name: &str) -> Value {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn definition(doc: &Value) -> ResourceDefinition {
    let mut def = ResourceDefinition::from_document(doc).unwrap();
    set_defaults(&mut def);
    let errs = validate_definition(&def);
    assert!(errs.is_empty(), "{}: {}", def.name(), errs.aggregate());
    def
}

fn converter(def: &ResourceDefinition) -> Converter {
    Converter::new(def, lower_schemas(def), &Options::default()).unwrap()
}

/// Whether `obj` carries the annotation; it is removed.
fn take_annotation(obj: &mut Value) -> bool {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return false };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else { return false };
    let found = annotations.remove(CONVERSION_DATA_ANNOTATION).is_some();
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    found
}

#[tokio::test]
async fn cel_cases() {
    let file = yaml("cel-cases.yaml");
    let pizza = definition(&yaml("pizza-cel-definition.yaml"));
    let mut failures = Vec::new();
    for case in file["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let def = match case["definition"].as_str() {
            Some(d) => definition(&file["definitions"][d]),
            None => pizza.clone(),
        };
        let converter = converter(&def);
        assert_eq!((converter.strategy(), converter.is_deterministic()), ("CEL", true));
        let objects = case["objects"].as_array().unwrap().clone();
        let result = converter.convert(objects, case["to"].as_str().unwrap()).await;
        match (result, case.get("want"), case["error"].as_str()) {
            (Ok(mut got), Some(want), _) => {
                let kept: Vec<bool> = got.iter_mut().map(take_annotation).collect();
                let want_kept: Vec<bool> = match case.get("kept") {
                    Some(k) => k.as_array().unwrap().iter().map(|b| b.as_bool().unwrap()).collect(),
                    None => vec![false; got.len()],
                };
                if Value::Array(got.clone()) != *want || kept != want_kept {
                    failures.push(format!("{name}:\n  got  {got:?} kept {kept:?}\n  want {want:?} kept {want_kept:?}"));
                }
            }
            (Err(e), _, Some(want)) if e.to_string() == want => {}
            (got, want, error) => failures.push(format!("{name}:\n  got  {got:?}\n  want {want:?} / {error:?}")),
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// Every generated object of every version, converted to every other version and back, is
/// the object it was (as the read path sees it: pruned and defaulted).
fn round_trips(def: &ResourceDefinition, per_version: usize) -> usize {
    let converter = converter(def);
    let schemas = lower_schemas(def);
    let versions: Vec<String> = def.spec.versions.iter().map(|v| v.name.clone()).collect();
    let mut checked = 0;
    for from in &versions {
        let objects = samples::generate(def, from, &schemas[from], per_version);
        assert!(objects.len() > per_version / 2, "{from}: too few valid samples ({})", objects.len());
        for obj in &objects {
            for to in versions.iter().filter(|v| *v != from) {
                let there = converter.convert_sync(obj.clone(), to).unwrap_or_else(|e| panic!("{from} -> {to}: {e}"));
                let mut back = converter.convert_sync(there.clone(), from).unwrap();
                versa_schema::pipeline::on_read(&mut back, &schemas[from]);
                assert_eq!(&back, obj, "{from} -> {to} -> {from}; at {to}: {there}");
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn pizzas_round_trip_through_both_versions() {
    let checked = round_trips(&definition(&yaml("pizza-cel-definition.yaml")), 200);
    assert!(checked >= 200, "{checked}");
}

#[test]
fn things_round_trip_through_three_versions() {
    let file = yaml("cel-cases.yaml");
    // Without the rule that fails on an empty list.
    let mut doc = file["definitions"]["things"].clone();
    doc["spec"]["conversion"]["cel"]["conversions"][0]["fields"].as_array_mut().unwrap().truncate(1);
    let checked = round_trips(&definition(&doc), 100);
    assert!(checked >= 300, "{checked}");
}

#[test]
fn the_sample_checks_pass_the_pizza_and_name_a_failing_rule() {
    assert_eq!(samples::check(&definition(&yaml("pizza-cel-definition.yaml"))).aggregate(), "");
    let file = yaml("cel-cases.yaml");
    let errs = samples::check(&definition(&file["definitions"]["things"]));
    let text = errs.iter().next().map(ToString::to_string).unwrap_or_default();
    assert!(
        text.starts_with(
            "spec.conversion.cel.conversions[0].fields[1].expression: Invalid value: \"self.spec.tags[0]\": fails on a generated v1 object: CEL conversion for example.com/v1, Kind=Thing failed: spec.conversion.cel.conversions[0].fields[1] (path spec.first, expression \"self.spec.tags[0]\"): "
        ),
        "{text}"
    );
}

#[test]
fn without_allow_loss_nothing_is_kept() {
    let mut doc = yaml("pizza-cel-definition.yaml");
    doc["spec"]["conversion"]["cel"]["allowLoss"] = Value::Bool(true);
    let def = definition(&doc);
    let obj = serde_json::json!({"apiVersion": "restaurant.programming-kubernetes.info/v1alpha1", "kind": "Pizza",
        "metadata": {"name": "a"}, "spec": {"toppings": ["tomato", "basil", "tomato"]}});
    let mut got = converter(&def).convert_sync(obj, "v1beta1").unwrap();
    assert!(!take_annotation(&mut got));
    // Written back where it was read from.
    assert_eq!(def.to_document()["spec"]["conversion"]["cel"]["allowLoss"], true);
}

/// A batch large enough to be converted in two halves at once gives what one at a time gives,
/// in order; the first error in object order is the one reported.
#[tokio::test]
async fn large_batches_are_converted_in_order() {
    let def = definition(&yaml("pizza-cel-definition.yaml"));
    let converter = converter(&def);
    let schemas = lower_schemas(&def);
    let mut objects = samples::generate(&def, "v1alpha1", &schemas["v1alpha1"], 24);
    while objects.len() < 300 {
        let mut next = objects[objects.len() % 24].clone();
        next["metadata"]["name"] = Value::String(format!("p-{}", objects.len()));
        objects.push(next);
    }
    let one_by_one: Vec<Value> =
        objects.iter().map(|o| converter.convert_sync(o.clone(), "v1beta1").unwrap()).collect();
    assert_eq!(converter.convert(objects, "v1beta1").await.unwrap(), one_by_one);
}
