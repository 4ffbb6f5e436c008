//! The write pipeline without a socket: every `tests/data/write/*.yaml` file, run by one runner
//! against the registry — the strategy the server's create and update run, and the storage
//! boundary their objects cross.
//!
//! A file names its `resource`: a definition under `tests/data/resources/` (by file stem), a
//! core kind of the registration table (`builtin:Namespace`, `builtin:ConfigMap`, `builtin:Lease`,
//! `builtin:ValidatingWebhookConfiguration`, …)
//! or the definitions API (`definitions`).
//! Each case is one write:
//!
//! - `verb`: `create`, or `update` of the `stored` object (its storage form, read back through
//!   the boundary at revision 7) through `part` (`main`, `status`, `finalize`);
//! - `version` (the request's; default the storage version), `fieldValidation` (default
//!   `Warn`), `duplicates` (the body's duplicate fields, as the decoder reports them);
//! - `object`: the request's object.
//!
//! and what it must give: `stored` (the storage form written; a generated `uid` reads `<uid>`
//! and a generated `creationTimestamp` `<now>`), `deleted: true` (an update that lets a marked
//! object go), `warnings` (in order), or `error` (the message kube's Status would carry).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::path::Path;

use bytes::Bytes;
use serde_json::{Value, json};
use versa_conversion::Options;
use versa_registry::storage::Boundary;
use versa_registry::strategy::{Checks, FieldValidation, Part, Strategy};
use versa_registry::{Builtin, Compact, Face, Resource};
use versa_storage::KeyValue;

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn resource(name: &str, data: &Path) -> Resource {
    match name {
        "definitions" => Resource::definitions(Face::ResourceDefinition),
        "builtin:Namespace" => Resource::core(Builtin::Namespace),
        "builtin:Secret" => Resource::core(Builtin::Secret),
        core if core.starts_with("builtin:") => {
            let kind = &core["builtin:".len()..];
            let found = versa_registry::kinds::core_kind_named(kind);
            Resource::core(found.unwrap_or_else(|| panic!("no built-in kind {kind}")).builtin)
        }
        file => {
            let doc = yaml(&data.join("resources").join(format!("{file}.yaml")));
            let mut def = versa_apiextensions::ResourceDefinition::from_document(&doc).unwrap();
            versa_apiextensions::set_defaults(&mut def);
            let errs = versa_apiextensions::validate_definition(&def);
            assert!(errs.is_empty(), "{file}: {errs:?}");
            Resource::build(&def, Compact::of(&def), &Options::default())
        }
    }
}

/// Generated values become placeholders, so that cases can name them.
fn normalise(mut obj: Value, generated: bool) -> Value {
    if generated && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.contains_key("uid") {
            meta.insert("uid".into(), json!("<uid>"));
        }
        if meta.contains_key("creationTimestamp") {
            meta.insert("creationTimestamp".into(), json!("<now>"));
        }
    }
    obj
}

fn part(case: &Value) -> Part {
    match case.get("part").and_then(Value::as_str).unwrap_or("main") {
        "main" => Part::Main,
        "status" => Part::Status,
        "finalize" => Part::Finalize,
        other => panic!("part {other}"),
    }
}

/// Runs one case; returns what went differently, if anything. With `forget`, the resource's
/// compiled state is dropped before each step, as the bound on compiled state drops what is
/// unused (`versa_registry::compiled`): what is compiled again must serve the same.
async fn run(res: &Resource, case: &Value, forget: bool) -> Result<(), String> {
    if forget {
        res.forget_compiled();
    }
    let version = case.get("version").and_then(Value::as_str).unwrap_or(&res.storage_version).to_owned();
    let strategy = Strategy::at(res, &version).ok_or("no such version")?;
    let boundary = Boundary::new(res, &version, &());
    let field_validation =
        FieldValidation::parse(case.get("fieldValidation").and_then(Value::as_str).unwrap_or("")).unwrap();
    let duplicates: Vec<String> = case
        .get("duplicates")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|d| d.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    let checks = Checks { field_validation, duplicates: &duplicates };
    let mut obj = case["object"].clone();
    let mut warnings = Vec::new();
    let verb = case["verb"].as_str().unwrap();
    let (result, deleted) = match verb {
        "create" => (strategy.create(&mut obj, checks, &mut warnings), false),
        "update" => {
            let stored = &case["stored"];
            let kv = KeyValue {
                key: "/registry/test/object".into(),
                value: Bytes::from(serde_json::to_vec(stored).unwrap()),
                create_revision: 3,
                mod_revision: 7,
            };
            let old = boundary.from_storage(&kv).await.map_err(|e| format!("reading the stored object: {e}"))?;
            if forget {
                res.forget_compiled();
            }
            let result = strategy.update(&mut obj, &old, part(case), checks, &mut warnings);
            let deleted = result.is_ok() && strategy.deleted_by_update(&obj, &old);
            (result, deleted)
        }
        other => panic!("verb {other}"),
    };
    let expect = &case["expect"];
    let want_warnings: Vec<String> = expect
        .get("warnings")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    match (result, expect.get("error").and_then(Value::as_str)) {
        (Err(e), Some(want)) if e.to_string() == want => return Ok(()),
        (Err(e), _) => return Err(format!("error: {e}")),
        (Ok(()), Some(want)) => return Err(format!("no error; wanted {want}")),
        (Ok(()), None) => {}
    }
    if warnings != want_warnings {
        return Err(format!("warnings {warnings:?}, wanted {want_warnings:?}"));
    }
    if expect.get("deleted").and_then(Value::as_bool).unwrap_or(false) != deleted {
        return Err(format!("deleted: {deleted}"));
    }
    if let Some(want) = expect.get("stored") {
        if forget {
            res.forget_compiled();
        }
        let bytes = boundary.to_storage(&obj).await.map_err(|e| format!("to storage: {e}"))?;
        let got = normalise(serde_json::from_slice(&bytes).unwrap(), verb == "create");
        if &got != want {
            return Err(format!(
                "stored\n{}\nwanted\n{}",
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(want).unwrap()
            ));
        }
    }
    Ok(())
}

#[tokio::test]
async fn write_cases() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut files: Vec<_> = std::fs::read_dir(data.join("write")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let (mut ran, mut failures) = (0, Vec::new());
    for file in &files {
        let doc = yaml(file);
        let res = resource(doc["resource"].as_str().unwrap(), &data);
        // Each case with the compiled state kept, then with it dropped before each step.
        for forget in [false, true] {
            for case in doc["cases"].as_array().unwrap() {
                ran += 1;
                if let Err(why) = run(&res, case, forget).await {
                    let name = case["name"].as_str().unwrap_or("?");
                    let dropped = if forget { " (compiled state dropped)" } else { "" };
                    failures.push(format!("{}: {name}{dropped}: {why}", file.file_name().unwrap().to_string_lossy()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {ran} cases failed:\n{}", failures.len(), failures.join("\n\n"));
    assert!(ran >= 20, "only {ran} cases");
}
