//! The schema side of the request pipeline, written out in one place.
//!
//! A write (create, update, patch result) goes through [`admit`]: drop non-nullable nulls →
//! default → prune unknown fields → coerce type and object metadata → validate. A read from
//! storage goes through [`on_read`]: coerce metadata dropping malformed fields → prune →
//! default; it never fails, so one bad stored field never makes an object unreadable. The server
//! and the offline `versa validate` call exactly these functions. Each of them is one walk over
//! the object (`walk.rs`) with the result of its steps taken one after the other.

use serde_json::Value;

use crate::field::{Error, ErrorList, Path};
use crate::listtype;
use crate::metadata;
use crate::names;
use crate::objectmeta::Malformed;
use crate::ratchet;
use crate::structural::Structural;
use crate::validation;
use crate::walk::{self, Steps};

/// What the resource being processed is, for the type-meta and metadata checks.
#[derive(Clone, Debug)]
pub struct ResourceKind<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// Namespaced or cluster-scoped (decides the `metadata.namespace` rule).
    pub namespaced: bool,
    /// The rule of `metadata.name`: a DNS-1123 subdomain for custom resources
    /// ([`names::name_is_dns_subdomain`]); kinds of kube's own may have another (RBAC's names are
    /// path segments: `system:discovery`).
    pub name_rule: names::NameValidator,
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
    admit_with(obj, schema, kind, None)
}

/// [`admit`] for an update from `old`: value-validation errors about values that did not
/// change are ratcheted away (`ratchet.rs`, KEP-4008), so a tightened schema never traps an
/// existing object. Metadata, embedded-resource and list-type errors stand.
pub fn admit_update(
    obj: &mut Value,
    old: &Value,
    schema: &Structural,
    kind: &ResourceKind<'_>,
) -> Result<Admitted, ErrorList> {
    admit_with(obj, schema, kind, Some(old))
}

fn admit_with(
    obj: &mut Value,
    schema: &Structural,
    kind: &ResourceKind<'_>,
    old: Option<&Value>,
) -> Result<Admitted, ErrorList> {
    let ratchet = |values: ErrorList, obj: &Value| match old {
        Some(old) => ratchet::ratchet(values, obj, old, schema).0,
        None => values,
    };
    if schema.below.props_and_additional {
        // Not a structural schema: validation's order cannot follow the single walk's.
        let unknown_fields = normalise(obj, schema, Malformed::Reject)?;
        let mut errs = validate_type_meta(obj, kind);
        if errs.is_empty() {
            root_meta_errors(obj, kind, &mut errs);
            errs.extend(ratchet(validation::validate(schema, obj), obj));
            errs.extend(metadata::validate_embedded_resources(obj, schema, &Path::none()));
            errs.extend(listtype::validate_list_set_and_map(schema, obj, &Path::none()));
        }
        return if errs.is_empty() { Ok(Admitted { unknown_fields }) } else { Err(errs) };
    }
    // One walk defaults, prunes, coerces and validates node by node (`walk.rs`); the result is
    // `normalise` followed by `validate`, errors in the same order.
    let steps =
        Steps { track: true, drop_nulls: true, defaults: true, coerce: Some(Malformed::Reject), validate: true };
    let walked = walk::walk(obj, schema, true, steps);
    if let Some(e) = walked.malformed {
        return Err(ErrorList(vec![e]));
    }
    let mut errs = validate_type_meta(obj, kind);
    if !errs.is_empty() {
        return Err(errs);
    }
    root_meta_errors(obj, kind, &mut errs);
    errs.extend(ratchet(ErrorList(walked.values), obj));
    errs.extend(walked.embedded);
    errs.0.extend(walked.list_types);
    if errs.is_empty() { Ok(Admitted { unknown_fields: walked.unknown }) } else { Err(errs) }
}

/// Defaulting, pruning and metadata coercion without validation. Returns the unknown field
/// paths. With [`Malformed::Reject`] a malformed metadata field is an error.
pub fn normalise(obj: &mut Value, schema: &Structural, malformed: Malformed) -> Result<Vec<String>, ErrorList> {
    // Kubernetes drops non-nullable nulls without a default, defaults, prunes, drops such nulls
    // again and coerces metadata. Defaulting only touches nulls that have a default, so dropping
    // the others once, while pruning, gives the same object; and the steps run node by node in
    // one walk, each seeing what the previous ones left.
    let steps = Steps { track: true, drop_nulls: true, defaults: true, coerce: Some(malformed), validate: false };
    let walked = walk::walk(obj, schema, true, steps);
    match walked.malformed {
        Some(e) => Err(ErrorList(vec![e])),
        None => Ok(walked.unknown),
    }
}

/// What kube's schema-coercing converter does to a converted object: prune unknown fields (and
/// non-nullable nulls, as `prune` does) and coerce object metadata, dropping malformed fields,
/// without defaulting — in one walk (`tests/single_walk.rs` checks it equals the two steps).
pub fn prune_and_coerce(obj: &mut Value, schema: &Structural) {
    let steps =
        Steps { track: false, drop_nulls: true, defaults: false, coerce: Some(Malformed::Drop), validate: false };
    let _ = walk::walk(obj, schema, true, steps);
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
    let mut errs = validate_type_meta(obj, kind);
    if !errs.is_empty() {
        return errs;
    }
    root_meta_errors(obj, kind, &mut errs);
    errs.extend(validation::validate(schema, obj));
    errs.extend(metadata::validate_embedded_resources(obj, schema, &Path::none()));
    errs.extend(listtype::validate_list_set_and_map(schema, obj, &Path::none()));
    errs
}

/// `kind` and `apiVersion` must be the resource's.
fn validate_type_meta(obj: &Value, kind: &ResourceKind<'_>) -> ErrorList {
    let mut errs = ErrorList::new();
    let got_kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_kind != kind.kind {
        errs.push(Error::invalid(Path::new("kind"), got_kind, format!("must be {}", kind.kind)));
    }
    let got_api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    // `group/version`, or the version alone for the core group; compared without building it.
    let api_matches = if kind.group.is_empty() {
        got_api == kind.version
    } else {
        got_api.strip_prefix(kind.group).and_then(|rest| rest.strip_prefix('/')) == Some(kind.version)
    };
    if !api_matches {
        let want_api =
            if kind.group.is_empty() { kind.version.to_owned() } else { format!("{}/{}", kind.group, kind.version) };
        errs.push(Error::invalid(Path::new("apiVersion"), got_api, format!("must be {want_api}")));
    }
    errs
}

/// The resource's own `metadata` (absent counts as empty).
fn root_meta_errors(obj: &Value, kind: &ResourceKind<'_>, errs: &mut ErrorList) {
    const NO_META: Value = Value::Null;
    let meta = obj.get("metadata").unwrap_or(&NO_META);
    // Absent metadata decodes as empty, like `{}`.
    metadata::object_meta_errors(meta, &|| Path::new("metadata"), kind.name_rule, Some(kind.namespaced), errs);
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
