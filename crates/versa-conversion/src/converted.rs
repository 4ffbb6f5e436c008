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
//!
//! For a read, an object can skip the tree: when the caller wants text and gives the target
//! schema, [`as_text`] checks the object on its text and writes it pruned
//! ([`versa_schema::text`]) with the original metadata put in — the bytes the tree path would
//! write — provided every check passes, the labels and annotations came back unchanged and
//! pruning would remove nothing. Anything else (every error included) takes the tree path.
//! Debug builds take both and compare them.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use versa_schema::names::{validate_annotations, validate_labels};
use versa_schema::{Path, Structural};

use crate::gv::{GroupVersion, go_type, gvk_string, meta_str, str_field};
use crate::parallel::{PARALLEL_MIN, in_two};
use crate::{ConversionError, Converted};

/// Why an object a conversion webhook returned was refused. `Display` is kube's text, naming
/// (`gvk`) the group, version and kind of the object being converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidObject {
    /// Not a JSON object with a `kind`: the decoding error as kube returns it, without naming
    /// the object (`Object 'Kind' is missing in '{...}'`, `unexpected end of JSON input`).
    #[error("{0}")]
    Undecodable(String),
    /// At another group-version than the one asked for.
    #[error(
        "conversion webhook for {gvk} returned invalid object at index 0: invalid groupVersion (expected {expected}, received {received})"
    )]
    WrongGroupVersion { gvk: String, expected: String, received: String },
    /// Of another kind.
    #[error(
        "conversion webhook for {gvk} returned invalid object at index 0: invalid kind (expected {expected}, received {received})"
    )]
    WrongKind { gvk: String, expected: String, received: String },
    /// A field the webhook must not change was changed (`must have the same name: a != b`).
    #[error("conversion webhook for {gvk} returned invalid object: {reason}")]
    Changed { gvk: String, reason: String },
    /// Its metadata could not be restored (`missing metadata in converted object`, labels or
    /// annotations that are not valid).
    #[error("conversion webhook for {gvk} returned invalid metadata: {reason}")]
    InvalidMetadata { gvk: String, reason: String },
}

/// What is done to each converted object once checked: the caller's pruning and coercion
/// (`finish`), and — for a read that wants text — the target schema that lets an object be
/// checked and pruned on its text.
#[derive(Clone, Copy)]
pub(crate) struct Finish<'a> {
    pub(crate) tree: &'a (dyn Fn(&mut Value) + Sync),
    /// The schema `tree` prunes with, when it does (and nothing else): [`as_text`] may stand
    /// in for it.
    pub(crate) text: Option<&'a Structural>,
}

/// Checks `converted` (as many as `originals`, same order; unparsed) against the objects sent,
/// for a conversion to `desired`, restores their metadata — moved out of the originals, which
/// are spent — and finishes each. `written`: each original's `metadata` as the review wrote it
/// (for the text path; may be empty). The first error in object order is returned.
pub(crate) fn check(
    desired: GroupVersion<'_>,
    originals: Vec<Value>,
    written: &[&[u8]],
    converted: &[&RawValue],
    finish: Finish<'_>,
) -> Result<Vec<Converted>, ConversionError> {
    // The text path's output buffers are allocated here, and what it leaves of the originals
    // is freed here: on the caller's thread, which allocated the originals and frees the
    // output, since freeing another thread's memory costs the allocator several times more.
    let buffers = match finish.text {
        Some(_) => converted.iter().map(|c| Vec::with_capacity(c.get().len() + 64)).collect(),
        None => Vec::new(),
    };
    let mut first = Part { originals, written, converted, buffers };
    let run = |part: Part<'_>| {
        let mut spent = Vec::with_capacity(part.originals.len());
        let written = part.written.iter().copied().chain(std::iter::repeat(&[][..]));
        let buffers = part.buffers.into_iter().chain(std::iter::repeat_with(Vec::new));
        let converted: Result<Vec<Converted>, InvalidObject> = part
            .originals
            .into_iter()
            .zip(written.zip(buffers))
            .zip(part.converted)
            .map(|((o, (w, b)), c)| one(desired, o, w, c, b, finish, &mut spent))
            .collect();
        (converted, spent)
    };
    if first.originals.len() < PARALLEL_MIN || first.converted.len() != first.originals.len() {
        return Ok(run(first).0?);
    }
    // The two halves at once: checking and pruning the objects is most of a webhook
    // conversion's own cost.
    let second = first.split_off(first.originals.len() / 2);
    let ((first, spent), second) = in_two(first, second, run);
    drop(spent);
    let helper_failed = || ConversionError::Internal("conversion: a helper thread failed".into());
    let (second, spent) = second.ok_or_else(helper_failed)?;
    drop(spent);
    // The first error in object order.
    let mut out = first?;
    out.extend(second?);
    Ok(out)
}

/// A run of objects to check: the originals, their metadata as the review wrote it, the
/// webhook's texts, and output buffers for the text path (each may be shorter: missing ones
/// are empty).
struct Part<'a> {
    originals: Vec<Value>,
    written: &'a [&'a [u8]],
    converted: &'a [&'a RawValue],
    buffers: Vec<Vec<u8>>,
}

impl<'a> Part<'a> {
    /// The objects from `at` on, taken out.
    fn split_off(&mut self, at: usize) -> Part<'a> {
        let (written, written_after) = self.written.split_at(at.min(self.written.len()));
        let (converted, converted_after) = self.converted.split_at(at.min(self.converted.len()));
        (self.written, self.converted) = (written, converted);
        Part {
            originals: self.originals.split_off(at.min(self.originals.len())),
            written: written_after,
            converted: converted_after,
            buffers: self.buffers.split_off(at.min(self.buffers.len())),
        }
    }
}

/// One object: on its text (written into `buffer`) if it can be — what is left of the
/// original then goes to `spent` — else parsed, checked, its metadata restored, finished.
fn one(
    desired: GroupVersion<'_>,
    mut original: Value,
    written: &[u8],
    converted: &RawValue,
    buffer: Vec<u8>,
    finish: Finish<'_>,
    spent: &mut Vec<Value>,
) -> Result<Converted, InvalidObject> {
    if let Some(schema) = finish.text {
        #[cfg(debug_assertions)]
        let copy = original.clone();
        if let Some(done) = as_text(desired, &mut original, written, converted.get(), schema, buffer) {
            #[cfg(debug_assertions)]
            same_as_the_tree_path(desired, copy, converted, finish, &done);
            spent.push(original);
            return Ok(done);
        }
    }
    tree(desired, original, converted, finish.tree).map(Converted::Value)
}

/// Debug builds: the text path's object is the tree path's, written.
#[cfg(debug_assertions)]
fn same_as_the_tree_path(
    desired: GroupVersion<'_>,
    original: Value,
    converted: &RawValue,
    finish: Finish<'_>,
    done: &Converted,
) {
    let want = tree(desired, original, converted, finish.tree).map(|v| serde_json::to_vec(&v).unwrap_or_default());
    let Converted::Json { json, .. } = done else { return };
    assert!(
        want.as_ref() == Ok(json),
        "the text path of a converted object differs from the tree path\n  object {}\n  text   {}\n  tree   {want:?}",
        converted.get(),
        String::from_utf8_lossy(json)
    );
}

/// The metadata fields of a converted object that the checks read, borrowed from its text: a
/// string with escapes, a duplicated field or a wrong type fails to decode, and leaves the
/// object to the tree path.
#[derive(serde::Deserialize)]
struct ConvertedMeta<'a> {
    #[serde(borrow, default)]
    name: Option<&'a str>,
    #[serde(borrow, default)]
    namespace: Option<&'a str>,
    #[serde(borrow, default)]
    uid: Option<&'a str>,
    #[serde(borrow, default)]
    labels: Option<&'a RawValue>,
    #[serde(borrow, default)]
    annotations: Option<&'a RawValue>,
}

/// The text path of [`one`]: the object written (into `json`) as the tree path would write
/// it, with the original's metadata (taken out of `original`; `written` is how the review
/// wrote it), if every check passes, the labels and annotations are the original's and
/// pruning with `schema` removes nothing; otherwise `None`, and `original` is as it was.
fn as_text(
    desired: GroupVersion<'_>,
    original: &mut Value,
    written: &[u8],
    text: &str,
    schema: &Structural,
    mut json: Vec<u8>,
) -> Option<Converted> {
    json.clear();
    let found = versa_schema::text::prune_resource_text(text, schema, &mut json)?;
    if GroupVersion::parse(found.api_version?) != desired {
        return None;
    }
    let kind = found.kind?;
    if kind.is_empty() || kind != str_field(original, "kind") {
        return None;
    }
    // The webhook handed the metadata back as it was sent (byte for byte): every check on it
    // passes, and restoring it changes nothing.
    let as_sent = !written.is_empty() && found.metadata.as_bytes() == written;
    if !as_sent {
        found.metadata_parses().then_some(())?;
        check_metadata(original, found.metadata)?;
    }
    // Taken only when it is an object, so that `original` is left as it was otherwise.
    if !original.get("metadata").is_some_and(Value::is_object) {
        return None;
    }
    let Some(Value::Object(metadata)) = original.as_object_mut()?.remove("metadata") else { return None };
    let at = found.metadata_at;
    let after = json.len() - at;
    if as_sent {
        json.extend_from_slice(written);
    } else {
        serde_json::to_writer(&mut json, &metadata).ok()?;
    }
    // Written at the end, moved to its place.
    json.get_mut(at..)?.rotate_left(after);
    Some(Converted::Json { json, metadata })
}

/// The checks of the tree path on a converted object's metadata (`text`), made on the text:
/// name, namespace and uid are the original's, and so are labels and annotations. `None` when
/// any is not so (or cannot be told from the text).
fn check_metadata(original: &Value, text: &str) -> Option<()> {
    if !text.starts_with('{') {
        return None;
    }
    let meta: ConvertedMeta<'_> = serde_json::from_str(text).ok()?;
    let original_meta = original.get("metadata")?.as_object()?;
    for (got, field) in [(meta.name, "name"), (meta.namespace, "namespace"), (meta.uid, "uid")] {
        if got.unwrap_or("") != original_meta.get(field).and_then(Value::as_str).unwrap_or("") {
            return None;
        }
    }
    for (got, field) in [(meta.labels, "labels"), (meta.annotations, "annotations")] {
        let unchanged = match (got, original_meta.get(field)) {
            (None, None) => true,
            // As serde writes it (Go and serde webhooks), else in any spelling.
            (Some(got), Some(had)) => {
                serde_json::to_string(had).is_ok_and(|h| h == got.get())
                    || serde_json::from_str::<Value>(got.get()).is_ok_and(|g| g == *had)
            }
            _ => false,
        };
        if !unchanged {
            return None;
        }
    }
    Some(())
}

/// One object parsed, checked, its metadata restored, finished.
fn tree(
    desired: GroupVersion<'_>,
    mut original: Value,
    converted: &RawValue,
    finish: &(dyn Fn(&mut Value) + Sync),
) -> Result<Value, InvalidObject> {
    let original = &mut original;
    // Named only when something is wrong (it is a string per object otherwise).
    let gvk = || gvk_string(str_field(original, "apiVersion"), str_field(original, "kind"));
    // kube returns the decoding error as it is, without naming the object.
    let parsed: Value = serde_json::from_str(converted.get()).map_err(|e| InvalidObject::Undecodable(e.to_string()))?;
    let mut converted = decode(parsed).map_err(InvalidObject::Undecodable)?;
    let got = GroupVersion::parse(str_field(&converted, "apiVersion"));
    if got != desired {
        let (expected, received) = (desired.to_string(), got.to_string());
        return Err(InvalidObject::WrongGroupVersion { gvk: gvk(), expected, received });
    }
    let (want_kind, got_kind) = (str_field(original, "kind"), str_field(&converted, "kind"));
    if want_kind != got_kind {
        let (expected, received) = (want_kind.to_owned(), got_kind.to_owned());
        return Err(InvalidObject::WrongKind { gvk: gvk(), expected, received });
    }
    validate(original, &converted).map_err(|reason| InvalidObject::Changed { gvk: gvk(), reason })?;
    let original_meta = original.as_object_mut().and_then(|o| o.remove("metadata"));
    restore_object_meta(original_meta, &mut converted).map_err(|reason| {
        let gvk = gvk_string(str_field(original, "apiVersion"), str_field(original, "kind"));
        InvalidObject::InvalidMetadata { gvk, reason }
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
    use versa_schema::Structural;

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
        let got = run_both(originals, converted.iter().map(Value::to_string).collect())?;
        Ok(got.into_iter().map(|c| c.into_value().unwrap()).collect())
    }

    /// The version's schema: `spec.cronSpec`.
    fn schema() -> Structural {
        Structural::from_json(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}},
        }}))
        .unwrap()
    }

    /// Checks `texts` against `originals` for a read that wants text (pruning with
    /// [`schema`]), and for one that does not; both must give the same objects, or the same
    /// error.
    fn run_both(originals: &[Value], texts: Vec<String>) -> Result<Vec<Converted>, String> {
        let check = |o, w: &[&[u8]], r: &[&RawValue], f| check(DESIRED, o, w, r, f).map_err(|e| e.to_string());
        let raws: Vec<&RawValue> = texts.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
        let schema = schema();
        let prune = |v: &mut Value| versa_schema::pipeline::prune_and_coerce(v, &schema);
        let as_values = check(originals.to_vec(), &[], &raws, Finish { tree: &prune, text: None });
        // With the originals' metadata as the review wrote it, and without.
        let metadata: Vec<Vec<u8>> = originals.iter().map(|o| serde_json::to_vec(&o["metadata"]).unwrap()).collect();
        let written: Vec<&[u8]> = metadata.iter().map(Vec::as_slice).collect();
        let text = Finish { tree: &prune, text: Some(&schema) };
        let for_reading = check(originals.to_vec(), &written, &raws, text);
        let without_written = check(originals.to_vec(), &[], &raws, text);
        let as_json = |r: &Result<Vec<Converted>, String>| {
            r.clone().map(|all| {
                all.iter()
                    .map(|c| {
                        let mut out = Vec::new();
                        c.write(&mut out).unwrap();
                        String::from_utf8(out).unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(as_json(&as_values), as_json(&for_reading), "the text path and the tree path differ");
        assert_eq!(as_json(&without_written), as_json(&for_reading), "the text path and the tree path differ");
        for_reading
    }

    #[test]
    fn reads_take_the_text_path_when_nothing_changes_but_the_version() {
        let originals = [original("a"), original("b")];
        // As a webhook might write them: keys in its own order, whitespace, escapes.
        let texts = vec![
            converted("a", |_| {}).to_string(),
            r#"{ "kind": "CronTab", "apiVersion": "stable.example.com/v2",
                "metadata": {"uid": "uid-b", "name": "b", "namespace": "default", "resourceVersion": "99",
                             "labels": {"app": "cron"}, "annotations": {"note":"x"}},
                "spec": {"cronSpec": "* * * * *\/5"} }"#
                .to_owned(),
        ];
        let got = run_both(&originals, texts).unwrap();
        assert!(got.iter().all(|c| matches!(c, Converted::Json { .. })), "{got:?}");
        // The original metadata, resourceVersion included.
        assert_eq!(got[1].clone().into_value().unwrap(), converted("b", |_| {}));
    }

    #[test]
    fn metadata_that_does_not_parse_fails_as_on_the_tree_path() {
        let good = converted("a", |_| {}).to_string();
        for (bad, want) in [(r#""x":1e400,"#, "number out of range"), (r#""x":"\ud800","#, "hex escape")] {
            let text = good.replacen(r#""metadata":{"#, &format!(r#""metadata":{{{bad}"#), 1);
            let err = run_both(&[original("a")], vec![text]).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn reads_take_the_tree_path_when_something_changes() {
        type Edit = fn(&mut Value);
        let cases: &[(&str, Edit)] = &[
            ("a label changed", |v| v["metadata"]["labels"]["app"] = json!("other")),
            ("annotations removed", |v| {
                v["metadata"].as_object_mut().unwrap().remove("annotations");
            }),
            ("an unknown field", |v| v["spec"]["extra"] = json!(1)),
            ("a null to drop", |v| v["spec"]["cronSpec"] = json!(null)),
        ];
        for (name, edit) in cases {
            let got = run_both(&[original("a")], vec![converted("a", edit).to_string()]).unwrap();
            assert!(matches!(got[0], Converted::Value(_)), "{name}: {got:?}");
        }
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
