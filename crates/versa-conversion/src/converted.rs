//! The checks on each object a conversion webhook returned, and the metadata rule.
//!
//! A converted object must decode, be at the desired group-version, keep its kind, name,
//! namespace and uid; then its metadata is replaced by the original's, except `labels` and
//! `annotations`, which the webhook may change (validated when they did) or remove
//! (kube `validateConvertedObject`, `restoreObjectMeta`). Every other metadata change is
//! silently discarded.
//!
//! kube-apiserver converts stored and request objects one at a time, so the messages its users
//! see are those of its single-object path (`webhook_converter.go`): `conversion webhook for
//! <gvk> returned invalid object ...`, where `<gvk>` is the group, version and kind of the object
//! being converted — the version it is at, not the target. versa converts a batch in one call
//! and words each object's error as kube words it for that object alone. (kube's list path,
//! `returned invalid converted object at index N`, is not reached when serving.)

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use versa_schema::Path;
use versa_schema::names::{validate_annotations, validate_labels};

use crate::gv::{GroupVersion, go_type, gvk_string, meta_str, str_field};
use crate::parallel::{PARALLEL_MIN, in_two};

/// Checks `converted` (as many as `originals`, same order; unparsed) against the objects sent,
/// for a conversion to `desired`, restores their metadata — moved out of the originals, which
/// are spent — and hands each to `finish` (the caller's pruning and coercion). The first error
/// in object order is returned.
pub(crate) fn check(
    desired: GroupVersion<'_>,
    originals: Vec<Value>,
    converted: &[&RawValue],
    finish: &(dyn Fn(&mut Value) + Sync),
) -> Result<Vec<Value>, String> {
    let mut originals = originals;
    if originals.len() < PARALLEL_MIN || converted.len() != originals.len() {
        return originals.into_iter().zip(converted).map(|(o, c)| one(desired, o, c, finish)).collect();
    }
    // The two halves at once: parsing, checking and coercing the objects, and freeing what is
    // left of the originals, is most of a webhook conversion's own cost.
    let half = originals.len() / 2;
    let second: Vec<Value> = originals.split_off(half);
    let (first_raw, second_raw) = converted.split_at(half);
    let run = |(objs, raws): (Vec<Value>, &[&RawValue])| -> Result<Vec<Value>, String> {
        objs.into_iter().zip(raws).map(|(o, c)| one(desired, o, c, finish)).collect()
    };
    let (first, second) = in_two((originals, first_raw), (second, second_raw), run);
    // The first error in object order.
    let mut out = first?;
    out.extend(second.ok_or("conversion: a helper thread failed")??);
    Ok(out)
}

/// One object: parsed, checked, its metadata restored, finished.
fn one(
    desired: GroupVersion<'_>,
    mut original: Value,
    converted: &RawValue,
    finish: &(dyn Fn(&mut Value) + Sync),
) -> Result<Value, String> {
    let original = &mut original;
    // Named only when something is wrong (it is a string per object otherwise).
    let gvk = || gvk_string(str_field(original, "apiVersion"), str_field(original, "kind"));
    // kube returns the decoding error as it is, without naming the object.
    let parsed: Value = serde_json::from_str(converted.get()).map_err(|e| e.to_string())?;
    let mut converted = decode(parsed)?;
    let got = GroupVersion::parse(str_field(&converted, "apiVersion"));
    if got != desired {
        return Err(format!(
            "conversion webhook for {} returned invalid object at index 0: invalid groupVersion (expected {desired}, received {got})",
            gvk()
        ));
    }
    let (want_kind, got_kind) = (str_field(original, "kind"), str_field(&converted, "kind"));
    if want_kind != got_kind {
        return Err(format!(
            "conversion webhook for {} returned invalid object at index 0: invalid kind (expected {want_kind}, received {got_kind})",
            gvk()
        ));
    }
    validate(original, &converted)
        .map_err(|e| format!("conversion webhook for {} returned invalid object: {e}", gvk()))?;
    let original_meta = original.as_object_mut().and_then(|o| o.remove("metadata"));
    restore_object_meta(original_meta, &mut converted).map_err(|e| {
        let gvk = gvk_string(str_field(original, "apiVersion"), str_field(original, "kind"));
        format!("conversion webhook for {gvk} returned invalid metadata: {e}")
    })?;
    finish(&mut converted);
    Ok(converted)
}

/// Decodes one `convertedObjects` entry as an unstructured object (kube's
/// `Unstructured.UnmarshalJSON`), with its errors.
fn decode(v: Value) -> Result<Value, String> {
    match v {
        Value::Object(ref m) => {
            if m.get("kind").and_then(Value::as_str).is_none_or(str::is_empty) {
                return Err(format!("Object 'Kind' is missing in '{v}'"));
            }
            Ok(v)
        }
        // A `null` entry is an empty raw extension.
        Value::Null => Err("unexpected end of JSON input".into()),
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            crate::gv::json_kind(&other)
        )),
    }
}

/// The fields a webhook must not change (kube `validateConvertedObject`).
fn validate(original: &Value, converted: &Value) -> Result<(), String> {
    let (a, b) = (str_field(original, "kind"), str_field(converted, "kind"));
    if a != b {
        return Err(format!("must have the same kind: {a} != {b}"));
    }
    // `metadata` looked up once in each object.
    let (original_meta, converted_meta) = (original.get("metadata"), converted.get("metadata"));
    for (field, label) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (meta_str(original_meta, field), meta_str(converted_meta, field));
        if a != b {
            return Err(format!("must have the same {label}: {a} != {b}"));
        }
    }
    Ok(())
}

/// Replaces the metadata of `converted` by the original's (`original_meta`, taken out of the
/// original), keeping the converted `labels` and `annotations` (kube `restoreObjectMeta`).
fn restore_object_meta(original_meta: Option<Value>, converted: &mut Value) -> Result<(), String> {
    const EMPTY: Value = Value::Null;
    // The converted metadata is taken out (not copied): it is replaced below in every case.
    let mut converted_meta = match (&original_meta, converted.get("metadata")) {
        (None, None) => return Ok(()),
        (Some(_), None) => return Err("missing metadata in converted object".into()),
        (_, Some(Value::Object(_))) => match converted.as_object_mut().and_then(|o| o.remove("metadata")) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        },
        (_, Some(other)) => return Err(format!("invalid metadata of type {} in converted object", go_type(other))),
    };
    let mut result = match original_meta {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(format!("invalid metadata of type {} in input object", go_type(&other))),
    };
    for field in ["labels", "annotations"] {
        let converted_field = match converted_meta.remove(field) {
            None | Some(Value::Null) => {
                result.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!("invalid metadata.{field} of type {} in converted object", go_type(&other)));
            }
        };
        // An original field that is not a map counts as empty, as it does in kube.
        let original_field = result.get(field).and_then(Value::as_object);
        let original_len = original_field.map_or(0, Map::len);
        let mut changed = original_len != converted_field.len();
        for (k, v) in &converted_field {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            if original_field.and_then(|m| m.get(k)).unwrap_or(&EMPTY) != v {
                changed = true;
            }
        }
        if changed {
            let entries = converted_field.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")));
            // kube validates annotations at the path `metadata.annotation`, sic.
            let errs = if field == "labels" {
                validate_labels(entries, &Path::new("metadata").child("labels"))
            } else {
                validate_annotations(entries, &Path::new("metadata").child("annotation"))
            };
            if !errs.is_empty() {
                return Err(errs.aggregate());
            }
        }
        result.insert(field.to_owned(), Value::Object(converted_field));
    }
    if let Some(obj) = converted.as_object_mut() {
        obj.insert("metadata".to_owned(), Value::Object(result));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DESIRED: GroupVersion<'static> = GroupVersion { group: "stable.example.com", version: "v2" };

    fn original(name: &str) -> Value {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {
                "name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "7",
                "labels": {"app": "cron"}, "annotations": {"note": "x"},
            },
            "spec": {"cronSpec": "* * * * */5"},
        })
    }

    /// `original` converted faithfully, then changed by `edit`.
    fn converted(name: &str, edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = original(name);
        v["apiVersion"] = json!("stable.example.com/v2");
        edit(&mut v);
        v
    }

    fn run(originals: &[Value], converted: Vec<Value>) -> Result<Vec<Value>, String> {
        let text: Vec<String> = converted.iter().map(Value::to_string).collect();
        let raws: Vec<&RawValue> = text.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
        check(DESIRED, originals.to_vec(), &raws, &|_| {})
    }

    #[test]
    fn faithful_conversion_passes() {
        let got = run(&[original("a")], vec![converted("a", |_| {})]).unwrap();
        assert_eq!(got, vec![converted("a", |_| {})]);
    }

    #[test]
    fn single_object_errors() {
        type Edit = fn(&mut Value);
        let cases: &[(&str, Edit, &str)] = &[
            (
                "apiVersion",
                |v| v["apiVersion"] = json!("stable.example.com/v1"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid object at index 0: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v1)",
            ),
            (
                "kind",
                |v| v["kind"] = json!("Other"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid object at index 0: invalid kind (expected CronTab, received Other)",
            ),
            (
                "missing kind",
                |v| {
                    v.as_object_mut().unwrap().remove("kind");
                },
                "Object 'Kind' is missing in '",
            ),
            (
                "name",
                |v| v["metadata"]["name"] = json!("b"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid object: must have the same name: a != b",
            ),
            (
                "namespace",
                |v| v["metadata"]["namespace"] = json!("other"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid object: must have the same namespace: default != other",
            ),
            (
                "uid",
                |v| v["metadata"]["uid"] = json!("changed"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid object: must have the same UID: uid-a != changed",
            ),
            (
                "metadata gone",
                |v| {
                    v.as_object_mut().unwrap().remove("metadata");
                },
                // Name, namespace and uid are compared first, and differ.
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid object: must have the same name: a != ",
            ),
            (
                "label value not a string",
                |v| v["metadata"]["labels"]["n"] = json!(1),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid metadata: metadata.labels[n] must be a string, but is int64 in converted object",
            ),
            (
                "labels not a map",
                |v| v["metadata"]["labels"] = json!(["a"]),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid metadata: invalid metadata.labels of type []interface {} in converted object",
            ),
            (
                "invalid label key",
                |v| v["metadata"]["labels"]["bad key"] = json!("x"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid metadata: metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            (
                "invalid annotation key",
                |v| v["metadata"]["annotations"]["-x"] = json!("y"),
                "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid metadata: metadata.annotation: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
        ];
        for (name, edit, want) in cases {
            let got = run(&[original("a")], vec![converted("a", edit)]).unwrap_err();
            assert!(got.starts_with(want), "{name}: {got}");
        }
    }

    #[test]
    fn in_a_batch_each_object_is_named_as_kube_names_it_alone() {
        let mut b = original("b");
        b["apiVersion"] = json!("stable.example.com/v1beta1");
        let originals = [original("a"), b.clone()];
        let mut renamed = b.clone();
        renamed["apiVersion"] = json!("stable.example.com/v2");
        renamed["metadata"]["name"] = json!("c");
        let err = run(&originals, vec![converted("a", |_| {}), renamed]).unwrap_err();
        assert_eq!(
            err,
            "conversion webhook for stable.example.com/v1beta1, Kind=CronTab returned invalid object: must have the same name: b != c"
        );
        let err = run(&originals, vec![converted("a", |_| {}), json!("nope")]).unwrap_err();
        assert_eq!(err, "json: cannot unmarshal string into Go value of type map[string]interface {}");
        let err = run(&originals, vec![json!(null), json!(null)]).unwrap_err();
        assert_eq!(err, "unexpected end of JSON input");
        let err =
            run(&originals, vec![converted("a", |v| v["metadata"]["annotations"] = json!(3)), converted("b", |_| {})])
                .unwrap_err();
        assert_eq!(
            err,
            "conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid metadata: invalid metadata.annotations of type int64 in converted object"
        );
    }

    #[test]
    fn large_batches_are_checked_on_two_threads_in_order() {
        let n = PARALLEL_MIN + 44;
        let names: Vec<String> = (0..n).map(|i| format!("o{i}")).collect();
        let originals: Vec<Value> = names.iter().map(|n| original(n)).collect();
        let good: Vec<Value> = names.iter().map(|n| converted(n, |_| {})).collect();
        assert_eq!(run(&originals, good.clone()).unwrap(), good, "order and content kept");

        // Errors in both halves: the first in object order wins, as it would one at a time.
        let mut bad = good.clone();
        bad[n - 3]["metadata"]["name"] = json!("late");
        bad[7]["metadata"]["name"] = json!("early");
        let err = run(&originals, bad.clone()).unwrap_err();
        assert!(err.ends_with("must have the same name: o7 != early"), "{err}");
        bad[7] = good[7].clone();
        let err = run(&originals, bad).unwrap_err();
        assert!(err.ends_with(&format!("must have the same name: o{} != late", n - 3)), "{err}");
    }

    #[test]
    fn metadata_is_restored_except_labels_and_annotations() {
        let got = run(
            &[original("a")],
            vec![converted("a", |v| {
                let m = &mut v["metadata"];
                m["resourceVersion"] = json!("99");
                m["finalizers"] = json!(["x/y"]);
                m["generation"] = json!(5);
                m["labels"] = json!({"app": "cron", "converted": "true"});
                m.as_object_mut().unwrap().remove("annotations");
            })],
        )
        .unwrap();
        let mut want = converted("a", |_| {});
        want["metadata"]["labels"] = json!({"app": "cron", "converted": "true"});
        want["metadata"].as_object_mut().unwrap().remove("annotations");
        assert_eq!(got, vec![want]);
    }

    #[test]
    fn unchanged_invalid_labels_are_not_revalidated() {
        // Labels the webhook hands back unchanged are not checked again, even if invalid.
        let mut orig = original("a");
        orig["metadata"]["labels"] = json!({"bad key": "x"});
        let conv = {
            let mut c = orig.clone();
            c["apiVersion"] = json!("stable.example.com/v2");
            c
        };
        assert_eq!(run(std::slice::from_ref(&orig), vec![conv.clone()]).unwrap(), vec![conv]);
    }
}
