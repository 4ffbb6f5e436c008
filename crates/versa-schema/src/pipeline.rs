//! The schema side of the request pipeline, written out in one place.
//!
//! A write (create, update, patch result) goes through [`admit`]: drop non-nullable nulls →
//! default → prune unknown fields → coerce type and object metadata → validate. A read from
//! storage goes through [`on_read`]: coerce metadata dropping malformed fields → prune →
//! default; it never fails, so one bad stored field never makes an object unreadable. The server
//! and the offline `versa validate` call exactly these functions.

use serde_json::Value;

use crate::default;
use crate::field::{Error, ErrorList, Path};
use crate::listtype;
use crate::metadata;
use crate::objectmeta::{self, Malformed};
use crate::prune;
use crate::structural::Structural;
use crate::validation;

/// What the resource being processed is, for the type-meta and metadata checks.
#[derive(Clone, Debug)]
pub struct ResourceKind<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// Namespaced or cluster-scoped (decides the `metadata.namespace` rule).
    pub namespaced: bool,
}

/// What admitting a write produced besides the object itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Admitted {
    /// Paths of the fields that were pruned (`spec.foo`, `metadata.bar`), sorted: the server
    /// reports them as warnings (`fieldValidation=Warn`) or errors (`Strict`).
    pub unknown_fields: Vec<String>,
}

/// Defaults, prunes, coerces and validates `obj` in place — the write path of one object at
/// one version. On error the object may be partly processed and must be discarded.
pub fn admit(obj: &mut Value, schema: &Structural, kind: &ResourceKind<'_>) -> Result<Admitted, ErrorList> {
    normalise(obj, schema, Malformed::Reject).map(|unknown_fields| Admitted { unknown_fields }).and_then(|a| {
        let errs = validate(obj, schema, kind);
        if errs.is_empty() { Ok(a) } else { Err(errs) }
    })
}

/// Defaulting, pruning and metadata coercion without validation. Returns the unknown field
/// paths. With [`Malformed::Reject`] a malformed metadata field is an error.
pub fn normalise(obj: &mut Value, schema: &Structural, malformed: Malformed) -> Result<Vec<String>, ErrorList> {
    // Kubernetes drops non-nullable nulls without a default, defaults, prunes, and drops such
    // nulls again. Defaulting only touches nulls that have a default, so dropping the others
    // once, inside the pruning pass, gives the same object in two walks instead of four.
    default::default(obj, schema);
    let mut unknown = prune::prune(obj, schema, true);
    match objectmeta::coerce(obj, schema, malformed) {
        Ok(meta_unknown) => unknown.extend(meta_unknown),
        Err(e) => return Err(ErrorList(vec![e])),
    }
    unknown.sort();
    Ok(unknown)
}

/// The schema-side processing of an object read from storage, before conversion: metadata
/// coercion that drops malformed fields, pruning, defaulting. Never fails.
pub fn on_read(obj: &mut Value, schema: &Structural) {
    // `normalise` cannot fail when malformed metadata is dropped.
    let _ = normalise(obj, schema, Malformed::Drop);
}

/// Validates an already defaulted and pruned object: type meta first (its errors alone are
/// reported, as in Kubernetes), then object metadata, the schema, embedded resources and list
/// types. CEL rules are evaluated by the caller after these, and only when none of the errors
/// found here blocks them.
pub fn validate(obj: &Value, schema: &Structural, kind: &ResourceKind<'_>) -> ErrorList {
    let mut errs = ErrorList::new();
    let got_kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_kind != kind.kind {
        errs.push(Error::invalid(Path::new("kind"), got_kind, format!("must be {}", kind.kind)));
    }
    let want_api =
        if kind.group.is_empty() { kind.version.to_owned() } else { format!("{}/{}", kind.group, kind.version) };
    let got_api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if got_api != want_api {
        errs.push(Error::invalid(Path::new("apiVersion"), got_api, format!("must be {want_api}")));
    }
    if !errs.is_empty() {
        return errs;
    }
    let no_meta = Value::Object(serde_json::Map::new());
    let meta = obj.get("metadata").unwrap_or(&no_meta);
    errs.extend(metadata::validate_object_meta(meta, &Path::new("metadata"), Some(kind.namespaced)));
    errs.extend(validation::validate(schema, obj));
    errs.extend(metadata::validate_embedded_resources(obj, schema, &Path::none()));
    errs.extend(listtype::validate_list_set_and_map(schema, obj, &Path::none()));
    errs
}

/// Gives an object with `metadata.generateName` and no name its name, as the server does on
/// create before validating: the prefix plus `suffix` (five random characters from
/// [`NAME_SUFFIX_ALPHABET`], chosen by the caller — this crate has no randomness).
pub fn generate_name(obj: &mut Value, suffix: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let has_name = meta.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let prefix = meta.get("generateName").and_then(Value::as_str).unwrap_or("");
    if has_name || prefix.is_empty() {
        return;
    }
    // Kubernetes keeps the whole name within 63 characters by trimming the prefix.
    const MAX_PREFIX: usize = 63 - 5;
    let prefix: String = prefix.chars().take(MAX_PREFIX).collect();
    meta.insert("name".to_owned(), Value::String(format!("{prefix}{suffix}")));
}

/// The characters Kubernetes draws generated name suffixes from (no vowels, no look-alikes).
pub const NAME_SUFFIX_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// The update-only checks between a new object and the one it replaces: identity metadata is
/// immutable (`metadata.name`, `metadata.namespace`, `metadata.uid` once set).
pub fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    for field in ["name", "namespace", "uid"] {
        let n = new.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or("");
        let o = old.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or("");
        // An empty uid on the new object means "unchanged" (the server fills it from the old).
        if n != o && !(field == "uid" && n.is_empty()) {
            errs.push(Error::invalid(Path::new("metadata").child(field), n, "field is immutable"));
        }
    }
    errs
}
