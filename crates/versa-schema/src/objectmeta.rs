//! `apiVersion`, `kind` and `metadata` of resources and embedded resources
//! (k8s `objectmeta/coerce.go` and `algorithm.go`).
//!
//! Kubernetes round-trips `metadata` through the typed `ObjectMeta`: unknown fields vanish (and
//! are reported for `fieldValidation`), fields of the wrong JSON type make a request fail — or,
//! when reading from storage, are dropped one by one so that one bad field never makes an
//! object unreadable. The same applies at every `x-kubernetes-embedded-resource` node. Empty
//! values are dropped as Go's `omitempty` does, so that what is stored is what Kubernetes would
//! store.

use serde_json::{Map, Value};

use crate::field::{Error, Path};
use crate::structural::Structural;

/// A version 4 UUID (`metadata.uid`, a ConversionReview's `uid`) from 16 random bytes: the
/// version and variant bits set, in the 8-4-4-4-12 hexadecimal form.
/// Written digit by digit: every request's Audit-ID is one (`hack/bench-serve.sh get`).
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

/// How to treat malformed metadata fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A request: a malformed field is an error.
    Reject,
    /// A read from storage: a malformed field is dropped.
    Drop,
}

/// Coerces the type and object metadata of the resource `obj` and of all embedded resources in
/// it. Returns the unknown metadata field paths (`metadata.foo`), or the first malformed field.
pub fn coerce(obj: &mut Value, schema: &Structural, malformed: Malformed) -> Result<Vec<String>, Error> {
    let mut unknown = Vec::new();
    coerce_node(obj, schema, true, &Path::none(), malformed, &mut unknown)?;
    unknown.sort();
    Ok(unknown)
}

/// Fields of the type and object metadata of a resource, which this module coerces and the
/// other algorithms leave to it at a resource's root (pruning keeps them, defaulting skips them).
#[inline]
pub(crate) fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// [`coerce`] from `x`, found at `path` with schema `s`; `root` marks a resource root.
pub(crate) fn coerce_node(
    x: &mut Value,
    s: &Structural,
    root: bool,
    path: &Path,
    malformed: Malformed,
    unknown: &mut Vec<String>,
) -> Result<(), Error> {
    match x {
        Value::Object(map) => {
            if root || s.embedded_resource {
                coerce_resource(map, || path.clone(), malformed, unknown)?;
            }
            if !s.below.embedded_resources {
                return Ok(());
            }
            for (k, v) in map.iter_mut() {
                if !matches!(v, Value::Object(_) | Value::Array(_)) {
                    continue;
                }
                if let Some(prop) = s.properties.get(k.as_str()) {
                    if prop.below.embedded_resources {
                        coerce_node(v, prop, false, &path.child(k), malformed, unknown)?;
                    }
                } else if let Some(ap) = s.additional_properties.as_ref().and_then(|ap| ap.schema())
                    && ap.below.embedded_resources
                {
                    coerce_node(v, ap, false, &path.key(k), malformed, unknown)?;
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = s.items.as_deref().filter(|i| i.below.embedded_resources) else { return Ok(()) };
            for (i, v) in items.iter_mut().enumerate() {
                if matches!(v, Value::Object(_) | Value::Array(_)) {
                    coerce_node(v, item, false, &path.index(i), malformed, unknown)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The coercion of one resource object itself — the root or an embedded resource found at
/// `path` (rendered only when something is reported): `apiVersion` and `kind` must be strings,
/// `metadata` is round-tripped through `ObjectMeta`. Nothing below is visited. This is the step
/// [`coerce`] takes at each resource and the write path's fused walk takes node by node.
pub(crate) fn coerce_resource(
    map: &mut Map<String, Value>,
    path: impl Fn() -> Path,
    malformed: Malformed,
    unknown: &mut Vec<String>,
) -> Result<(), Error> {
    coerce_type_meta(map, &path, malformed)?;
    if let Some(meta) = map.get_mut("metadata") {
        match coerce_object_meta(meta, || path().child("metadata"), malformed, unknown) {
            Ok(()) => {}
            Err(e) if malformed == Malformed::Reject => return Err(e),
            Err(_) => {}
        }
    }
    Ok(())
}

fn coerce_type_meta(map: &mut Map<String, Value>, path: &impl Fn() -> Path, malformed: Malformed) -> Result<(), Error> {
    for k in ["apiVersion", "kind"] {
        if let Some(v) = map.get(k)
            && !v.is_string()
        {
            match malformed {
                Malformed::Drop => {
                    map.remove(k);
                }
                Malformed::Reject => return Err(Error::invalid(path().child(k), v, "must be a string")),
            }
        }
    }
    Ok(())
}

/// The fields of `ObjectMeta`, by their JSON names: what survives the typed round-trip here, and
/// what metadata validation ([`crate::metadata`]) decodes. One table for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MetaField {
    Name,
    GenerateName,
    Namespace,
    SelfLink,
    Uid,
    ResourceVersion,
    Generation,
    CreationTimestamp,
    DeletionTimestamp,
    DeletionGracePeriodSeconds,
    Labels,
    Annotations,
    OwnerReferences,
    Finalizers,
    ManagedFields,
}

impl MetaField {
    /// How many fields there are (the variants index arrays of this length).
    pub(crate) const COUNT: usize = 15;

    /// The field with JSON name `name`, or `None` for a field `ObjectMeta` does not have.
    pub(crate) fn parse(name: &str) -> Option<MetaField> {
        Some(match name {
            "name" => MetaField::Name,
            "generateName" => MetaField::GenerateName,
            "namespace" => MetaField::Namespace,
            "selfLink" => MetaField::SelfLink,
            "uid" => MetaField::Uid,
            "resourceVersion" => MetaField::ResourceVersion,
            "generation" => MetaField::Generation,
            "creationTimestamp" => MetaField::CreationTimestamp,
            "deletionTimestamp" => MetaField::DeletionTimestamp,
            "deletionGracePeriodSeconds" => MetaField::DeletionGracePeriodSeconds,
            "labels" => MetaField::Labels,
            "annotations" => MetaField::Annotations,
            "ownerReferences" => MetaField::OwnerReferences,
            "finalizers" => MetaField::Finalizers,
            "managedFields" => MetaField::ManagedFields,
            _ => return None,
        })
    }

    /// The JSON shape the round-trip requires.
    fn shape(self) -> Shape {
        match self {
            MetaField::Name
            | MetaField::GenerateName
            | MetaField::Namespace
            | MetaField::SelfLink
            | MetaField::Uid
            | MetaField::ResourceVersion => Shape::String,
            MetaField::Generation => Shape::Int,
            MetaField::DeletionGracePeriodSeconds => Shape::NullableInt,
            MetaField::CreationTimestamp | MetaField::DeletionTimestamp => Shape::Time,
            MetaField::Labels | MetaField::Annotations => Shape::StringMap,
            MetaField::Finalizers => Shape::StringList,
            MetaField::OwnerReferences => Shape::OwnerReferences,
            MetaField::ManagedFields => Shape::ManagedFields,
        }
    }
}

/// The JSON shape of each `ObjectMeta` field.
#[derive(Clone, Copy)]
enum Shape {
    String,
    Int,
    NullableInt,
    Time,
    StringMap,
    StringList,
    OwnerReferences,
    ManagedFields,
}

/// Round-trips one `metadata` value through ObjectMeta's shape. On `Reject`, the first malformed
/// field is returned as an error (after unknown fields were recorded); on `Drop`, malformed
/// fields are removed. `path` (of `metadata`) is rendered only for what is reported.
fn coerce_object_meta(
    meta: &mut Value,
    path: impl Fn() -> Path,
    malformed: Malformed,
    unknown: &mut Vec<String>,
) -> Result<(), Error> {
    let Value::Object(map) = meta else {
        if meta.is_null() {
            return Ok(());
        }
        let what = json_kind(meta);
        return Err(Error::invalid(
            path(),
            meta.clone(),
            format!("json: cannot unmarshal {what} into Go value of type v1.ObjectMeta"),
        ));
    };
    let mut first_err = None;
    let mut drop = Vec::new();
    for (k, v) in map.iter_mut() {
        let Some(field) = MetaField::parse(k) else {
            unknown.push(path().child(k).as_str().to_owned());
            drop.push(k.clone());
            continue;
        };
        match normalise(v, field.shape()) {
            Ok(keep) => {
                if !keep {
                    drop.push(k.clone());
                }
            }
            Err(detail) => {
                if first_err.is_none() {
                    first_err = Some(Error::invalid(path(), v.clone(), detail));
                }
                drop.push(k.clone());
            }
        }
    }
    for k in drop {
        map.remove(&k);
    }
    match (first_err, malformed) {
        (Some(e), Malformed::Reject) => Err(e),
        _ => Ok(()),
    }
}

/// Checks `v` against `shape`; returns whether to keep it (false for Go's omitempty zero values).
fn normalise(v: &mut Value, shape: Shape) -> Result<bool, String> {
    let kind = json_kind(v);
    let go_type = |t: &str| format!("json: cannot unmarshal {kind} into Go struct field ObjectMeta of type {t}");
    match shape {
        Shape::String => match v {
            Value::String(s) => Ok(!s.is_empty()),
            Value::Null => Ok(false),
            _ => Err(go_type("string")),
        },
        Shape::Int | Shape::NullableInt => match v {
            Value::Number(n) if n.is_i64() => Ok(shape_is_nullable(shape) || n.as_i64() != Some(0)),
            Value::Null => Ok(false),
            _ => Err(go_type("int64")),
        },
        Shape::Time => match v {
            Value::String(s) if s.is_empty() => Ok(false),
            Value::String(s) => {
                // metav1.Time parses with time.RFC3339 only, stricter than the `date-time` format.
                if is_rfc3339(s) {
                    Ok(true)
                } else {
                    Err(format!(
                        "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse",
                        crate::field::go_quote(s)
                    ))
                }
            }
            Value::Null => Ok(false),
            _ => Err(go_type("v1.Time")),
        },
        Shape::StringMap => match v {
            Value::Object(m) => {
                if m.values().all(Value::is_string) {
                    Ok(!m.is_empty())
                } else {
                    Err(go_type("string"))
                }
            }
            Value::Null => Ok(false),
            _ => Err(go_type("map[string]string")),
        },
        Shape::StringList => match v {
            Value::Array(a) => {
                if a.iter().all(Value::is_string) {
                    Ok(!a.is_empty())
                } else {
                    Err(go_type("string"))
                }
            }
            Value::Null => Ok(false),
            _ => Err(go_type("[]string")),
        },
        Shape::OwnerReferences => match v {
            Value::Array(a) => {
                for r in a.iter_mut() {
                    check_struct(
                        r,
                        &[
                            ("apiVersion", 's'),
                            ("kind", 's'),
                            ("name", 's'),
                            ("uid", 's'),
                            ("controller", 'b'),
                            ("blockOwnerDeletion", 'b'),
                        ],
                        "v1.OwnerReference",
                    )?;
                }
                Ok(!a.is_empty())
            }
            Value::Null => Ok(false),
            _ => Err(go_type("[]v1.OwnerReference")),
        },
        Shape::ManagedFields => match v {
            Value::Array(a) => {
                for r in a.iter_mut() {
                    check_struct(
                        r,
                        &[
                            ("manager", 's'),
                            ("operation", 's'),
                            ("apiVersion", 's'),
                            ("time", 't'),
                            ("fieldsType", 's'),
                            ("fieldsV1", 'o'),
                            ("subresource", 's'),
                        ],
                        "v1.ManagedFieldsEntry",
                    )?;
                }
                Ok(!a.is_empty())
            }
            Value::Null => Ok(false),
            _ => Err(go_type("[]v1.ManagedFieldsEntry")),
        },
    }
}

fn shape_is_nullable(shape: Shape) -> bool {
    matches!(shape, Shape::NullableInt)
}

/// Checks a small struct's fields (`s` string, `b` bool, `t` time, `o` object); unknown fields
/// are dropped as the typed round-trip drops them, and `null`/empty fields are omitted.
fn check_struct(v: &mut Value, fields: &[(&str, char)], go_type: &str) -> Result<(), String> {
    let Value::Object(m) = v else {
        return Err(format!("json: cannot unmarshal {} into Go value of type {go_type}", json_kind(v)));
    };
    let mut drop = Vec::new();
    for (k, fv) in m.iter() {
        let Some((_, t)) = fields.iter().find(|(n, _)| n == k) else {
            drop.push(k.clone());
            continue;
        };
        let ok = match (t, fv) {
            (_, Value::Null) => {
                drop.push(k.clone());
                true
            }
            ('s', Value::String(s)) => {
                if s.is_empty() {
                    drop.push(k.clone());
                }
                true
            }
            ('t', Value::String(s)) => is_rfc3339(s),
            ('b', Value::Bool(_)) => true,
            ('o', Value::Object(_)) => true,
            _ => false,
        };
        if !ok {
            return Err(format!("json: cannot unmarshal {} into Go struct field {go_type}.{k}", json_kind(fv)));
        }
    }
    for k in drop {
        m.remove(&k);
    }
    Ok(())
}

/// RFC 3339 as Go's `time.Parse(time.RFC3339, ...)` accepts it (what `metav1.Time` uses): an
/// upper-case `T` and `Z`, a day that exists in its month, any number of fraction digits, and a
/// zone offset of at most 24 hours and 60 minutes (Go's general parser's bounds, which it falls
/// back to).
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10)) {
        return false;
    }
    if b[10] != b'T' || !(digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19)) {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(99);
    let (year, mo, d, h, mi, se) = (num(0..4), num(5..7), num(8..10), num(11..13), num(14..16), num(17..19));
    if !(1..=12).contains(&mo) || d < 1 || d > days_in(mo, year) || h > 23 || mi > 59 || se > 59 {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match &b[i..] {
        [b'Z'] => true,
        [sign, h1, h2, b':', m1, m2] if (*sign == b'+' || *sign == b'-') => {
            [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) && num(i + 1..i + 3) <= 24 && num(i + 4..i + 6) <= 60
        }
        _ => false,
    }
}

/// The days of month `mo` (1–12) of `year` in the proleptic Gregorian calendar.
fn days_in(mo: u32, year: u32) -> u32 {
    match mo {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's name for a JSON value's kind in unmarshal errors.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uuid_v4_form() {
        for (bytes, expect) in [
            ([0u8; 16], "00000000-0000-4000-8000-000000000000"),
            ([0xff; 16], "ffffffff-ffff-4fff-bfff-ffffffffffff"),
            (
                [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10],
                "01234567-89ab-4def-bedc-ba9876543210",
            ),
        ] {
            assert_eq!(uuid_v4(bytes), expect);
        }
    }

    fn schema() -> Structural {
        Structural::from_json(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
            }}
        }}))
        .unwrap()
    }

    #[test]
    fn unknown_metadata_fields_are_dropped_and_reported() {
        let mut obj = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "foo": 1, "labels": {}, "generation": 0},
            "spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bar": true}, "spec": {"x": 1}}}});
        let unknown = coerce(&mut obj, &schema(), Malformed::Reject).unwrap();
        assert_eq!(unknown, vec!["metadata.foo", "spec.template.metadata.bar"]);
        assert_eq!(obj["metadata"], json!({"name": "n"}));
        assert_eq!(obj["spec"]["template"]["metadata"], json!({"name": "p"}));
    }

    #[test]
    fn malformed_fields_reject_requests_and_are_dropped_on_reads() {
        let obj = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": 1}}});
        let err = coerce(&mut obj.clone(), &schema(), Malformed::Reject).unwrap_err();
        assert_eq!(err.field.as_str(), "metadata");
        let mut read = obj;
        coerce(&mut read, &schema(), Malformed::Drop).unwrap();
        assert_eq!(read["metadata"], json!({"name": "n"}));
    }

    #[test]
    fn timestamps_must_be_rfc3339_as_metav1_time_parses_them() {
        let mut obj = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "creationTimestamp": "2017-05-31T12:56:35"}});
        let err = coerce(&mut obj, &schema(), Malformed::Reject).unwrap_err();
        assert_eq!(err.field.as_str(), "metadata");
    }

    #[test]
    fn rfc3339() {
        for (s, ok) in [
            ("2017-05-31T12:56:35Z", true),
            ("2017-05-31T12:56:35.123+02:00", true),
            ("2017-05-31 12:56:35Z", false),
            ("2017-13-01T00:00:00Z", false),
            ("x", false),
            // What Go's time.Parse(time.RFC3339, ...) answers.
            ("2017-05-31t12:56:35z", false),
            ("2017-02-29T00:00:00Z", false),
            ("2016-02-29T00:00:00Z", true),
            ("1900-02-29T00:00:00Z", false),
            ("2000-02-29T00:00:00Z", true),
            ("2017-04-31T00:00:00Z", false),
            ("0000-01-01T00:00:00Z", true),
            ("2017-05-31T12:56:35+24:00", true),
            ("2017-05-31T12:56:35-24:60", true),
            ("2017-05-31T12:56:35+25:00", false),
            ("2017-05-31T12:56:35+23:61", false),
            ("2017-05-31T12:56:35.Z", false),
            ("2017-05-31T12:56:35.123456789123Z", true),
        ] {
            assert_eq!(is_rfc3339(s), ok, "{s}");
        }
    }
}
