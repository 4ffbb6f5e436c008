//! Lossless round trips for the CEL strategy: what a conversion would lose is kept with the
//! converted object, in the annotation [`ANNOTATION`], and restored on the way back — as
//! Kubernetes' hand-written conversions keep the fields an older version cannot express
//! (cluster-api's `cluster.x-k8s.io/conversion-data`).
//!
//! After converting an object `x` from `S` to `T` (giving `r`), the converter converts `r` back
//! to `S` and compares the result with `x`, top-level field by top-level field (`spec`,
//! `status`, ...; not `apiVersion`, `kind` or `metadata`), both as the read path would see them
//! (pruned and defaulted with `S`'s schema). For each field that differs, the annotation keeps
//! `x`'s value of it, and a fingerprint (SHA-256) of `r`'s value of the same field:
//!
//! ```json
//! {"version": "v1alpha1", "at": "v1beta1",
//!  "fields": {"spec": {"sha256": "9f2c...", "value": {"toppings": ["tomato", "mozzarella", "tomato"]}}}}
//! ```
//!
//! When an object at `at` carrying the annotation is converted to `version`, each kept field
//! whose fingerprint still matches the object's is put back as it was; a field changed since
//! (someone wrote the object at `at`) keeps what the rules make of it — the newer write wins,
//! and nothing stale is restored. The annotation is removed from the result either way, and
//! from any conversion it was not written for. A definition with `cel.allowLoss: true` keeps
//! no annotation. Its size is at most the object's own (the annotation counts towards the
//! 256 KiB Kubernetes allows for all annotations of an object).

use std::borrow::Cow;

use ring::digest::{Context, SHA256};
use serde_json::{Map, Value, json};

/// The annotation that keeps what a conversion lost.
pub const ANNOTATION: &str = "versa.dev/conversion-data";

/// Takes the annotation out of `obj`'s metadata (removing an emptied `annotations`).
pub(crate) fn take(obj: &mut Value) -> Option<Value> {
    let meta = obj.get_mut("metadata")?.as_object_mut()?;
    let annotations = meta.get_mut("annotations")?.as_object_mut()?;
    let text = annotations.remove(ANNOTATION)?;
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    text.as_str().and_then(|t| serde_json::from_str(t).ok())
}

/// Puts back into `converted` (now at `to`) the fields kept in `data` — the annotation taken
/// from the object converted, which was at `from` — whose fingerprints match `source`'s fields
/// (`source` normalised as the read path would see it).
pub(crate) fn restore(data: &Value, source: &Value, converted: &mut Value, from: &str, to: &str) {
    if data.get("version").and_then(Value::as_str) != Some(to) || data.get("at").and_then(Value::as_str) != Some(from) {
        return;
    }
    let Some(fields) = data.get("fields").and_then(Value::as_object) else { return };
    let Some(out) = converted.as_object_mut() else { return };
    let mut hasher = Hasher::default();
    for (key, kept) in fields {
        if is_type_or_metadata(key) {
            continue;
        }
        let Some(hash) = kept.get("sha256").and_then(Value::as_str) else { continue };
        if hasher.fingerprint(source.get(key)) != hash {
            continue;
        }
        match kept.get("value") {
            Some(Value::Null) | None => out.remove(key),
            Some(v) => out.insert(key.clone(), v.clone()),
        };
    }
}

/// The fields of `obj` that a round trip compares and [`restore`] reads: all but
/// `apiVersion`, `kind` and `metadata` — a copy of only those, since metadata (with its
/// `managedFields`) is most of an object. `null` for what is not an object (nothing to compare).
pub(crate) fn body(obj: &Value) -> Value {
    match obj.as_object() {
        Some(map) => Value::Object(
            map.iter().filter(|(k, _)| !is_type_or_metadata(k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
        ),
        None => Value::Null,
    }
}

/// The annotation for an object converted from `source` (at `from`) to `to`, whose round trip
/// gave `back`, both normalised (only the fields besides `apiVersion`, `kind` and `metadata`
/// are read, so [`body`]s do): `None` when nothing was lost. `converted` gives the converted
/// object as the read path sees it (normalised), whose fields are fingerprinted — asked for
/// only when something was lost.
pub(crate) fn record<'a>(
    source: &Value,
    back: &Value,
    converted: impl FnOnce() -> Cow<'a, Value>,
    from: &str,
    to: &str,
) -> Option<String> {
    let (Some(src), Some(back)) = (source.as_object(), back.as_object()) else { return None };
    let keys = src.keys().chain(back.keys().filter(|k| !src.contains_key(*k)));
    let lost: Vec<&String> = keys.filter(|key| !is_type_or_metadata(key) && src.get(*key) != back.get(*key)).collect();
    if lost.is_empty() {
        return None;
    }
    let converted = converted();
    let mut hasher = Hasher::default();
    let mut fields = Map::new();
    for key in lost {
        let value = src.get(key).cloned().unwrap_or(Value::Null);
        fields.insert(key.clone(), json!({"sha256": hasher.fingerprint(converted.get(key)), "value": value}));
    }
    Some(json!({"version": from, "at": to, "fields": fields}).to_string())
}

/// Sets the annotation on `obj`.
pub(crate) fn annotate(obj: &mut Value, text: String) {
    let Some(meta) = obj.as_object_mut().map(|o| o.entry("metadata").or_insert_with(|| json!({}))) else { return };
    let Some(meta) = meta.as_object_mut() else { return };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(ANNOTATION.to_owned(), Value::String(text));
    }
}

fn is_type_or_metadata(key: &str) -> bool {
    matches!(key, "apiVersion" | "kind" | "metadata")
}

/// SHA-256 fingerprints of values in a canonical form (object keys sorted), hex; of `None`,
/// of `null` prefixed with "absent". Scalars and keys are hashed as `serde_json` writes them,
/// through one buffer kept across values.
#[derive(Default)]
struct Hasher {
    buf: Vec<u8>,
}

impl Hasher {
    fn fingerprint(&mut self, v: Option<&Value>) -> String {
        let mut ctx = Context::new(&SHA256);
        match v {
            None => ctx.update(b"absent"),
            Some(v) => self.feed(&mut ctx, v),
        }
        let digest = ctx.finish();
        let mut hex = String::with_capacity(2 * digest.as_ref().len());
        for b in digest.as_ref() {
            const DIGITS: &[u8; 16] = b"0123456789abcdef";
            hex.push(char::from(DIGITS[usize::from(b >> 4)]));
            hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
        }
        hex
    }

    fn feed(&mut self, ctx: &mut Context, v: &Value) {
        match v {
            Value::Object(m) => {
                // Sorted already: serde_json's map is ordered by key (no `preserve_order`), and
                // the sort is kept for the day it is not.
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                ctx.update(b"{");
                for (k, x) in entries {
                    self.scalar(ctx, k);
                    ctx.update(b":");
                    self.feed(ctx, x);
                    ctx.update(b",");
                }
                ctx.update(b"}");
            }
            Value::Array(items) => {
                ctx.update(b"[");
                for x in items {
                    self.feed(ctx, x);
                    ctx.update(b",");
                }
                ctx.update(b"]");
            }
            scalar => self.scalar(ctx, scalar),
        }
    }

    /// `v` as `serde_json` writes it (a string quoted and escaped).
    fn scalar(&mut self, ctx: &mut Context, v: &(impl serde::Serialize + ?Sized)) {
        self.buf.clear();
        // Writing a string or a JSON scalar into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.buf, v);
        ctx.update(&self.buf);
    }
}

/// [`Hasher::fingerprint`] with a hasher of its own.
#[cfg(test)]
fn fingerprint(v: Option<&Value>) -> String {
    Hasher::default().fingerprint(v)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_ignore_key_order_and_tell_absent_from_null() {
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": [1, {"x": "y", "z": null}]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b": [1, {"z": null, "x": "y"}], "a": 1}"#).unwrap();
        assert_eq!(fingerprint(Some(&a)), fingerprint(Some(&b)));
        assert_ne!(fingerprint(None), fingerprint(Some(&Value::Null)));
        assert_ne!(fingerprint(Some(&json!("1"))), fingerprint(Some(&json!(1))));
    }

    /// The fingerprints as they were first written (a key and a scalar hashed through
    /// `Value::to_string`): annotations already stored must keep matching.
    fn fingerprint_as_first_written(v: Option<&Value>) -> String {
        fn feed(ctx: &mut Context, v: &Value) {
            match v {
                Value::Object(m) => {
                    let mut keys: Vec<&String> = m.keys().collect();
                    keys.sort();
                    ctx.update(b"{");
                    for k in keys {
                        feed(ctx, &Value::String(k.clone()));
                        ctx.update(b":");
                        if let Some(x) = m.get(k) {
                            feed(ctx, x);
                        }
                        ctx.update(b",");
                    }
                    ctx.update(b"}");
                }
                Value::Array(items) => {
                    ctx.update(b"[");
                    for x in items {
                        feed(ctx, x);
                        ctx.update(b",");
                    }
                    ctx.update(b"]");
                }
                scalar => ctx.update(scalar.to_string().as_bytes()),
            }
        }
        let mut ctx = Context::new(&SHA256);
        match v {
            None => ctx.update(b"absent"),
            Some(v) => feed(&mut ctx, v),
        }
        ctx.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn fingerprints_are_those_first_written() {
        let values = [
            json!(null),
            json!(true),
            json!(0),
            json!(-12),
            json!(18446744073709551615_u64),
            json!(1.5),
            json!(1e300),
            json!(""),
            json!("tomato"),
            json!("quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} é ☃ 𝄞"),
            json!([]),
            json!({}),
            json!({"z": 1, "a": [1, "b", {"é": null, "\"k\"": [true, 2.25]}], "m": {"x": "y"}}),
            json!([{"name": "tomato", "quantity": 2}, {"name": "mozzarella", "quantity": 1}]),
        ];
        let mut hasher = Hasher::default();
        for v in &values {
            assert_eq!(hasher.fingerprint(Some(v)), fingerprint_as_first_written(Some(v)), "{v}");
        }
        assert_eq!(hasher.fingerprint(None), fingerprint_as_first_written(None));
    }

    #[test]
    fn recorded_fields_are_restored_only_while_unchanged() {
        let source =
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"l": ["b", "a", "b"]}});
        let converted =
            json!({"apiVersion": "g/v2", "kind": "K", "metadata": {"name": "a"}, "spec": {"m": {"a": 1, "b": 2}}});
        let back =
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"l": ["a", "b", "b"]}});
        let text = record(&source, &back, || Cow::Borrowed(&converted), "v1", "v2").unwrap();
        assert_eq!(
            record(&body(&source), &body(&back), || Cow::Borrowed(&converted), "v1", "v2").as_deref(),
            Some(text.as_str()),
            "only the bodies are read"
        );
        let mut stored = converted.clone();
        annotate(&mut stored, text);
        let data = take(&mut stored).unwrap();
        assert_eq!(stored, converted, "taking the annotation leaves the object as it was");

        let mut read = back.clone();
        restore(&data, &converted, &mut read, "v2", "v1");
        assert_eq!(read, source, "restored");

        let mut changed = converted.clone();
        changed["spec"]["m"]["a"] = json!(3);
        let mut read = back.clone();
        restore(&data, &changed, &mut read, "v2", "v1");
        assert_eq!(read, back, "the object changed since: the rules' result stands");

        let mut read = back.clone();
        restore(&data, &converted, &mut read, "v2", "v3");
        assert_eq!(read, back, "not written for this conversion");
        let unasked = || -> Cow<'_, Value> { panic!("the converted object is asked for only when something is lost") };
        assert_eq!(record(&source, &source, unasked, "v1", "v2"), None, "nothing lost");
    }
}
