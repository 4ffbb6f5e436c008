//! The write and read paths walk an object once, defaulting, pruning, coercing metadata and
//! validating node by node (`walk.rs`). This runs them against the separate algorithms one
//! after the other — `default::default`, `prune::prune`, `objectmeta::coerce`, then
//! `pipeline::validate` — on the objects of the seed and validation fixtures and on variations
//! of them (unknown fields, `null`s, missing and duplicated values, wrong types, broken
//! metadata and type meta), and on generated schemas with objects made for them: the same
//! object, the same unknown fields, the same errors in the same order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use common::generate::{Rng, as_resource, root_object, root_schema, vary};

use serde_json::Value;
use versa_schema::objectmeta::{self, Malformed};
use versa_schema::pipeline::{self, ResourceKind};
use versa_schema::{ErrorList, Structural, default, prune};

/// Normalisation as separate walks, as the pipeline did it before the single walk.
fn normalise_separately(obj: &mut Value, schema: &Structural, malformed: Malformed) -> Result<Vec<String>, ErrorList> {
    default::default(obj, schema);
    let mut unknown = prune::prune(obj, schema, true);
    match objectmeta::coerce(obj, schema, malformed) {
        Ok(meta_unknown) => unknown.extend(meta_unknown),
        Err(e) => return Err(ErrorList(vec![e])),
    }
    unknown.sort();
    Ok(unknown)
}

fn check(schema_json: &Value, object: &Value, kind: &ResourceKind<'_>, what: &str, failures: &mut Vec<String>) {
    let schema = Structural::from_json(schema_json).unwrap();
    let (mut walked, mut separate) = (object.clone(), object.clone());
    let got = pipeline::admit(&mut walked, &schema, kind);
    let want = normalise_separately(&mut separate, &schema, Malformed::Reject).and_then(|unknown| {
        let errs = pipeline::validate(&separate, &schema, kind);
        if errs.is_empty() { Ok(unknown) } else { Err(errs) }
    });
    let same = match (&got, &want) {
        (Ok(a), Ok(unknown)) => a.unknown_fields == *unknown && walked == separate,
        (Err(a), Err(b)) => a == b,
        _ => false,
    };
    if !same {
        failures.push(format!("admit, {what}\n  object {object}\n  got  {got:?} {walked}\n  want {want:?} {separate}"));
    }
    // The conversion path: prune and coerce (dropping malformed metadata), no defaults.
    {
        let (mut walked, mut separate) = (object.clone(), object.clone());
        pipeline::prune_and_coerce(&mut walked, &schema);
        versa_schema::prune::prune(&mut separate, &schema, false);
        let _ = versa_schema::objectmeta::coerce(&mut separate, &schema, Malformed::Drop);
        if walked != separate {
            failures.push(format!("prune_and_coerce, {what}\n  object {object}\n  got  {walked}\n  want {separate}"));
        }
    }
    for malformed in [Malformed::Reject, Malformed::Drop] {
        let (mut walked, mut separate) = (object.clone(), object.clone());
        let got = pipeline::normalise(&mut walked, &schema, malformed);
        let want = normalise_separately(&mut separate, &schema, malformed);
        // After a malformed field the object is to be discarded; it still ends up the same.
        if got != want || walked != separate {
            failures.push(format!(
                "normalise {malformed:?}, {what}\n  object {object}\n  got  {got:?} {walked}\n  want {want:?} {separate}"
            ));
        }
    }
}

#[test]
fn the_single_walk_is_the_separate_walks() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut failures = Vec::new();
    let mut ran = 0;
    for (area, files) in [
        (
            "seeds",
            &[
                "crontab-defaulting.yaml",
                "crontab-pruning.yaml",
                "crontab-validation.yaml",
                "embedded-resource.yaml",
                "int-or-string.yaml",
                "maintenance-nightly-job.yaml",
                "nullable.yaml",
                "preserve-unknown-fields.yaml",
            ][..],
        ),
        (
            "validation",
            &[
                "collections.yaml",
                "crontab.yaml",
                "enum_required.yaml",
                "junctors.yaml",
                "listtype.yaml",
                "numbers.yaml",
                "strings.yaml",
                "types.yaml",
            ][..],
        ),
    ] {
        for file in files {
            let doc = common::load(area, file);
            let k = &doc["kind"];
            let kind = ResourceKind {
                group: k["group"].as_str().unwrap_or("example.com"),
                version: k["version"].as_str().unwrap_or("v1"),
                kind: k["kind"].as_str().unwrap_or("Thing"),
                namespaced: k["namespaced"].as_bool().unwrap_or(true),
                name_rule: versa_schema::names::name_is_dns_subdomain,
            };
            for case in doc["cases"].as_array().unwrap() {
                let Some(schema) = case.get("schema").or_else(|| doc.get("schema")) else { continue };
                let object = case.get("input").or_else(|| case.get("object")).cloned().unwrap_or(Value::Null);
                let name = format!("{file}: {}", case["name"].as_str().unwrap_or("?"));
                check(schema, &object, &kind, &name, &mut failures);
                ran += 1;
                for i in 0..40 {
                    let mut varied = object.clone();
                    if i % 2 == 0 {
                        as_resource(&mut r, &mut varied, &kind);
                    }
                    vary(&mut r, &mut varied, 4);
                    check(schema, &varied, &kind, &format!("{name} (variation {i})"), &mut failures);
                    ran += 1;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {ran} objects differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_single_walk_is_the_separate_walks_on_generated_schemas() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let kind = ResourceKind {
        group: "example.com",
        version: "v1",
        kind: "Thing",
        namespaced: true,
        name_rule: versa_schema::names::name_is_dns_subdomain,
    };
    let mut failures = Vec::new();
    let mut ran = 0;
    for i in 0..400 {
        let root = root_schema(&mut r, &["spec", "status", "a", "b", "c", "metadata"]);
        for j in 0..10 {
            let mut object = root_object(&mut r, &root);
            if j % 2 == 1 {
                vary(&mut r, &mut object, 4);
            }
            as_resource(&mut r, &mut object, &kind);
            check(&root, &object, &kind, &format!("generated schema {i}, object {j}"), &mut failures);
            ran += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {ran} objects differ:\n{}", failures.len(), failures.join("\n"));
}
