//! The data-driven corpus: every `tests/data/*.yaml` file, run by one runner.
//!
//! A file has an optional `schema` (the `openAPIV3Schema` of the version, shared by its cases)
//! and `cases`. A case is either
//!
//! - a field-set case: `object` and the `fieldSet` it owns, as kube's `fieldsV1` text; or
//! - an operation case: an optional `live` object (with its `managedFields`), then `steps`,
//!   each one `apply` (an applied configuration, with `manager`, optional `force`), `update` (the
//!   full new object) or `mergePatch` (an RFC 7386 patch of the current object, recorded as an
//!   update), and what it must give: the `object` (compared without `managedFields`), the
//!   `managedFields` entries in order (`fieldsV1` as kube's exact text), `changed`, or the
//!   `error` text with its `causes`.
//!
//! Objects get `apiVersion: stable.example.com/v1` and `kind: Widget` when they have none; step
//! `i` (from 1) runs at `2024-01-01T00:00:0iZ` unless it says `now`. `resetFields` (a list of
//! dotted paths) is the endpoint's reset fields, `subresource` the step's subresource.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::path::Path;

use serde_json::{Map, Value, json};
use versa_merge::{FieldPath, FieldSet, ManagedFields, Options, apply, field_set, update};
use versa_schema::structural::Structural;

const API_VERSION: &str = "stable.example.com/v1";

fn with_type_meta(v: &Value, api_version: &str) -> Value {
    let mut v = v.clone();
    if let Value::Object(o) = &mut v {
        o.entry("apiVersion").or_insert_with(|| json!(api_version));
        o.entry("kind").or_insert_with(|| json!("Widget"));
    }
    v
}

fn without_managed_fields(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(Value::Object(meta)) = v.get_mut("metadata") {
        meta.remove("managedFields");
        if meta.is_empty() {
            v.as_object_mut().unwrap().remove("metadata");
        }
    }
    v
}

fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn reset_fields(v: Option<&Value>) -> Option<FieldSet> {
    let list = v?.as_array()?;
    let paths: Vec<FieldPath> =
        list.iter().map(|p| FieldPath::fields(&p.as_str().unwrap().split('.').collect::<Vec<_>>())).collect();
    Some(FieldSet::from_paths(&paths))
}

/// The expected entries, normalised to the form the engine writes.
fn expected_managed_fields(v: &Value) -> Vec<Value> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let mut e = e.as_object().unwrap().clone();
            e.entry("apiVersion").or_insert_with(|| json!(API_VERSION));
            e.entry("fieldsType").or_insert_with(|| json!("FieldsV1"));
            Value::Object(e)
        })
        .collect()
}

/// The written entries, with `fieldsV1` as kube's text when the expectation gives text.
fn actual_managed_fields(mf: &ManagedFields, expected: &[Value]) -> Vec<Value> {
    mf.0.iter()
        .enumerate()
        .map(|(i, e)| {
            let mut v = e.to_value();
            let text = expected.get(i).and_then(|x| x.get("fieldsV1")).is_some_and(Value::is_string);
            if text && let Some(f) = v.get_mut("fieldsV1") {
                *f = json!(FieldSet::from_value(f).unwrap().to_json());
            }
            v
        })
        .collect()
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn run_field_set_case(schema: &Structural, case: &Value) -> Result<(), String> {
    let obj = &case["object"];
    let got = field_set(obj, schema).to_json();
    let want = case["fieldSet"].as_str().unwrap();
    if got != want {
        return Err(format!("field set\n  want {want}\n  got  {got}"));
    }
    Ok(())
}

/// A file's other versions (`versions:`): each version's schema and the fields it names
/// differently from the file's own version (`renames: {path here: path there}`), converted by
/// moving those fields — a stand-in for a definition's conversion.
#[derive(Debug, Default)]
struct TestVersions(std::collections::BTreeMap<String, (Structural, Vec<(String, String)>)>);

impl TestVersions {
    /// The versions of `doc` (none: empty), and the file's own, `API_VERSION`, with `schema`.
    fn from_doc(doc: Option<&Value>, schema: &Value) -> TestVersions {
        let mut versions = std::collections::BTreeMap::new();
        if doc.is_none() {
            return TestVersions(versions);
        }
        versions.insert(API_VERSION.to_owned(), (Structural::from_json(schema).unwrap(), Vec::new()));
        for (version, v) in doc.and_then(Value::as_object).into_iter().flatten() {
            let schema = Structural::from_json(&v["schema"]).unwrap_or_else(|e| panic!("versions.{version}: {e}"));
            let renames = v["renames"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(here, there)| (here.clone(), there.as_str().unwrap().to_owned()))
                .collect();
            versions.insert(version.clone(), (schema, renames));
        }
        TestVersions(versions)
    }

    fn renames(&self, version: &str) -> &[(String, String)] {
        self.0.get(version).map_or(&[], |(_, r)| r.as_slice())
    }
}

/// Moves the value at dotted path `from` to dotted path `to`.
fn move_field(obj: &mut Value, from: &str, to: &str) {
    let pointer = |p: &str| format!("/{}", p.replace('.', "/"));
    let Some(value) = obj.pointer(&pointer(from)).cloned() else { return };
    let (parent, last) = from.rsplit_once('.').unwrap();
    obj.pointer_mut(&pointer(parent)).unwrap().as_object_mut().unwrap().remove(last);
    let (parent, last) = to.rsplit_once('.').unwrap();
    obj.pointer_mut(&pointer(parent)).unwrap().as_object_mut().unwrap().insert(last.to_owned(), value);
}

impl versa_merge::Versions for TestVersions {
    fn schema(&self, api_version: &str) -> Option<&Structural> {
        self.0.get(api_version).map(|(s, _)| s)
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, versa_merge::ConvertError> {
        let mut out = obj.clone();
        let from = obj["apiVersion"].as_str().unwrap_or(API_VERSION).to_owned();
        for (here, there) in self.renames(&from) {
            move_field(&mut out, there, here);
        }
        for (here, there) in self.renames(api_version) {
            move_field(&mut out, here, there);
        }
        out["apiVersion"] = json!(api_version);
        Ok(out)
    }
}

fn run_operation_case(schema: &Structural, case: &Value, versions: &TestVersions) -> Result<(), String> {
    let reset = reset_fields(case.get("resetFields"));
    let mut current: Option<Value> = case.get("live").map(|l| with_type_meta(l, API_VERSION));
    for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
        let fail = |msg: String| format!("step {}: {msg}", i + 1);
        let now = step
            .get("now")
            .and_then(Value::as_str)
            .map_or_else(|| format!("2024-01-01T00:00:{:02}Z", i + 1), String::from);
        let api_version = step.get("apiVersion").and_then(Value::as_str).unwrap_or(API_VERSION);
        let step_schema = versions.0.get(api_version).map_or(schema, |(s, _)| s);
        // The live object as a request at this step's version reads it.
        if let Some(live) = &mut current
            && live["apiVersion"] != api_version
            && !versions.0.is_empty()
        {
            *live = versa_merge::Versions::convert(versions, live, api_version).unwrap();
        }
        let opts = Options {
            schema: step_schema,
            manager: step.get("manager").and_then(Value::as_str).unwrap_or(""),
            api_version,
            subresource: step.get("subresource").and_then(Value::as_str).unwrap_or(""),
            now: &now,
            reset_fields: reset.as_ref(),
            versions: (!versions.0.is_empty()).then_some(versions as &dyn versa_merge::Versions),
        };
        let result = if let Some(applied) = step.get("apply") {
            let live = current.clone().unwrap_or_else(|| json!({}));
            let managed = ManagedFields::from_object(&live).unwrap().unwrap_or_default();
            let force = step.get("force").and_then(Value::as_bool).unwrap_or(false);
            apply(&live, &with_type_meta(applied, api_version), &managed, &opts, force)
                .map_err(|e| (e.to_string(), conflict_causes(&e)))
        } else if let Some(new) = step.get("update") {
            update(current.as_ref(), &with_type_meta(new, api_version), &opts).map_err(|e| (e.to_string(), Value::Null))
        } else if let Some(patch) = step.get("mergePatch") {
            let mut new = current.clone().unwrap_or_else(|| with_type_meta(&json!({}), api_version));
            merge_patch(&mut new, patch);
            update(current.as_ref(), &new, &opts).map_err(|e| (e.to_string(), Value::Null))
        } else {
            return Err(fail("a step needs apply, update or mergePatch".into()));
        };
        match (result, step.get("error")) {
            (Err((msg, causes)), Some(want)) => {
                if want.as_str() != Some(msg.as_str()) {
                    return Err(fail(format!("error\n  want {want}\n  got  {msg:?}")));
                }
                if let Some(want) = step.get("causes")
                    && *want != causes
                {
                    return Err(fail(format!("causes\n  want {}\n  got  {}", pretty(want), pretty(&causes))));
                }
            }
            (Err((msg, _)), None) => return Err(fail(format!("unexpected error: {msg}"))),
            (Ok(out), Some(want)) => {
                return Err(fail(format!("expected error {want}, got object {}", pretty(&out.object))));
            }
            (Ok(out), None) => {
                if let Some(want) = step.get("object") {
                    let want = with_type_meta(want, api_version);
                    let got = without_managed_fields(&out.object);
                    if want != got {
                        return Err(fail(format!("object\n  want {}\n  got  {}", pretty(&want), pretty(&got))));
                    }
                }
                if let Some(want) = step.get("managedFields") {
                    let want = expected_managed_fields(want);
                    let got = actual_managed_fields(&out.managed_fields, &want);
                    if want != got {
                        return Err(fail(format!(
                            "managedFields\n  want {}\n  got  {}",
                            pretty(&Value::Array(want)),
                            pretty(&Value::Array(got))
                        )));
                    }
                    // The object carries exactly these entries (or none).
                    let in_object = ManagedFields::from_object(&out.object).unwrap().unwrap_or_default();
                    if in_object != out.managed_fields {
                        return Err(fail("object's managedFields differ from the returned ones".into()));
                    }
                }
                if let Some(want) = step.get("changed")
                    && want.as_bool() != Some(out.changed)
                {
                    return Err(fail(format!("changed: want {want}, got {}", out.changed)));
                }
                current = Some(out.object);
            }
        }
    }
    Ok(())
}

fn conflict_causes(e: &versa_merge::ApplyError) -> Value {
    match e {
        versa_merge::ApplyError::Conflicts(c) => {
            Value::Array(c.causes().into_iter().map(|c| json!({"message": c.message, "field": c.field})).collect())
        }
        _ => Value::Null,
    }
}

#[test]
fn corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    let mut failures = Vec::new();
    let mut count = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let doc: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in doc["cases"].as_array().unwrap_or_else(|| panic!("{name}: no cases")) {
            count += 1;
            let case_name = case["name"].as_str().unwrap_or("?");
            let schema_json =
                case.get("schema").or_else(|| doc.get("schema")).unwrap_or_else(|| panic!("{name}: no schema"));
            let schema =
                Structural::from_json(schema_json).unwrap_or_else(|e| panic!("{name}/{case_name}: schema: {e}"));
            let versions = TestVersions::from_doc(doc.get("versions"), schema_json);
            let result = if case.get("fieldSet").is_some() {
                run_field_set_case(&schema, case)
            } else {
                run_operation_case(&schema, case, &versions)
            };
            if let Err(e) = result {
                failures.push(format!("{name} / {case_name}: {e}"));
            }
        }
    }
    eprintln!("{count} cases in {} files", files.len());
    assert!(failures.is_empty(), "{} of {count} cases failed:\n\n{}", failures.len(), failures.join("\n\n"));
}
