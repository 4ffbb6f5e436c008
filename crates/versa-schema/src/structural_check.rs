//! Is a lowered schema structural? Every rule of Kubernetes' `ValidateStructural` (schema
//! `validation.go`) and its completeness check (`complete.go`), one error per violation, with
//! the field paths, messages and order kube-apiserver reports in the `NonStructuralSchema`
//! condition and in CRD validation.
//!
//! The check runs on the lowered [`Structural`] model, so what lowering already refused (`$ref`,
//! `items` as an array, `x-kubernetes-preserve-unknown-fields: false`, ...) never reaches it.
//! It has two halves, as upstream does:
//!
//! - *invariants*, checked on every node of the structural part: types are present, arrays have
//!   `items`, the root is an object without `additionalProperties`, embedded resources and
//!   int-or-string are well formed, `kind`/`apiVersion`/`metadata` are restricted, patterns
//!   compile, and the junctors (`allOf`/`anyOf`/`oneOf`/`not`) carry value validations only;
//! - *completeness*: every property or `items` that a junctor of the **root** talks about must
//!   also be declared in the structural part. Like Kubernetes, junctors hanging below the root
//!   (e.g. `properties.spec.allOf`) are not checked for completeness; their invariants are.
//!
//! Kubernetes sorts the combined list by the full error text (`path: body`), which also makes the
//! output independent of map order; [`validate_structural`] does the same.
//!
//! Input safety: the walk recurses once per schema level. Schemas arrive as JSON, whose decoder
//! already bounds nesting (serde_json's recursion limit), and lowering recursed the same way
//! before this check runs, so no extra depth limit is needed here.

use crate::field::{Error, ErrorList, Path};
use crate::structural::{
    AdditionalProperties, ForbiddenInNested, NestedAdditionalProperties, NestedValueValidation, Structural,
    ValueValidation,
};

/// Reports every violation of the structural-schema rules in `schema`, whose root is at `path`
/// (e.g. `spec.versions[0].schema.openAPIV3Schema`; [`Path::none`] gives the bare paths of the
/// upstream unit tests). Errors are sorted as Kubernetes sorts them: by their full text.
pub fn validate_structural(schema: &Structural, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    check_node(schema, Level::Root, path, &mut errs);
    if let Some(vv) = schema.vv() {
        complete_value_validation(vv, schema, path, path, &mut errs);
    }
    // Sorting by text mirrors upstream exactly; the key is cached because rendering an error
    // allocates and a comparison sort would otherwise render each one log(n) times.
    errs.sort_by_cached_key(|e| e.to_string());
    ErrorList(errs)
}

/// Whether `schema` is structural, i.e. [`validate_structural`] finds nothing.
///
/// This is the gate the definitions layer needs before it may prune, default or compile CEL
/// rules for a version: those algorithms only have a meaning on a structural schema. A schema
/// that fails this check is still served by Kubernetes (with the `NonStructuralSchema`
/// condition) only for `apiextensions.k8s.io/v1beta1` definitions; v1 definitions reject it.
pub fn is_structural(schema: &Structural) -> bool {
    validate_structural(schema, &Path::none()).is_empty()
}

/// Whether `default` is set anywhere in `schema`: in the structural part (properties, items,
/// additionalProperties) or inside any junctor.
///
/// Definition validation needs this because defaults are only allowed on structural schemas
/// and must be checked (pruned, validated) when present. Junctors are searched too, because a
/// `default` there is still a `default` the author wrote (and a structural violation). Any
/// lowered default counts, `null` included; note that k8s-openapi already decodes a literal
/// `default: null` as no default at all.
pub fn uses_defaults(schema: &Structural) -> bool {
    schema.default.is_some()
        || schema.items.as_deref().is_some_and(uses_defaults)
        || schema.properties.values().any(uses_defaults)
        || schema.additional_properties.as_ref().and_then(AdditionalProperties::schema).is_some_and(uses_defaults)
        || schema.vv().is_some_and(value_validation_uses_defaults)
}

/// Where a node sits in the structural part; it only changes the wording of the missing-type
/// error and which root-only rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The invariants of one structural node and, recursively, of everything below it.
fn check_node(s: &Structural, lvl: Level, path: &Path, errs: &mut Vec<Error>) {
    if s.type_name == "array" && s.items.is_none() {
        errs.push(Error::required(path.child("items"), "must be specified"));
    }
    if let Some(items) = &s.items {
        check_node(items, Level::Item, &path.child("items"), errs);
    }
    for (name, prop) in &s.properties {
        check_node(prop, Level::Field, &path.child("properties").key(name), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(Error::forbidden(path.child("additionalProperties"), "must not be used at the root"));
        }
        if let Some(ap_schema) = ap.schema() {
            check_node(ap_schema, Level::Field, &path.child("additionalProperties"), errs);
        }
    }

    if s.int_or_string && s.preserve_unknown_fields {
        errs.push(Error::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded_resource {
        errs.push(Error::invalid(
            path.child("x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    // The two int-or-string shapes are the only place a junctor may name a type. Upstream
    // recognises them by shape alone, whether or not x-kubernetes-int-or-string is set.
    if let Some(vv) = s.vv() {
        let skip_any_of = is_int_or_string_any_of(&vv.any_of);
        let skip_first_all_of_any_of =
            vv.all_of.first().is_some_and(|first| is_int_or_string_any_of(&first.value_validation.any_of));
        check_value_validation(vv, skip_any_of, skip_first_all_of_any_of, path, errs);
    }

    // kind, apiVersion and metadata are the object's own TypeMeta/ObjectMeta only at the root
    // and in embedded resources; elsewhere they are ordinary field names.
    let is_object_root = lvl == Level::Root || s.embedded_resource;

    if s.embedded_resource && s.type_name != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_name.is_empty() {
            errs.push(Error::required(path.child("type"), detail));
        } else {
            errs.push(Error::invalid(path.child("type"), s.type_name.as_str(), detail));
        }
    } else if s.type_name.is_empty() && !s.int_or_string && !s.preserve_unknown_fields {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(Error::required(path.child("type"), detail));
    }
    if s.embedded_resource && s.additional_properties.is_some() {
        errs.push(Error::forbidden(
            path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_name.is_empty() && s.type_name != "object" {
        errs.push(Error::invalid(path.child("type"), s.type_name.as_str(), "must be object at the root"));
    }

    if is_object_root {
        for name in ["kind", "apiVersion"] {
            if let Some(prop) = s.properties.get(name)
                && prop.type_name != "string"
            {
                errs.push(Error::invalid(
                    path.child("properties").key(name).child("type"),
                    prop.type_name.as_str(),
                    "must be string",
                ));
            }
        }
    }
    if let Some(metadata) = s.properties.get("metadata") {
        check_metadata(metadata, is_object_root, lvl, &path.child("properties").key("metadata"), errs);
    }

    if s.embedded_resource && !s.preserve_unknown_fields && s.properties.is_empty() {
        errs.push(Error::required(
            path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The restrictions on a `metadata` property. Its ObjectMeta is validated by the server itself,
/// so a schema may only add restrictions on `name` and `generateName`, and only at the root:
/// anything else would be silently ignored or contradict ObjectMeta.
fn check_metadata(md: &Structural, is_object_root: bool, lvl: Level, path: &Path, errs: &mut Vec<Error>) {
    if is_object_root && md.type_name != "object" {
        errs.push(Error::invalid(path.child("type"), md.type_name.as_str(), "must be object"));
    }
    if lvl != Level::Root {
        return;
    }
    // What may remain: `type` and `default` (both checked elsewhere), and properties that are
    // exactly {name}, {generateName} or {name, generateName}. Everything else — other
    // properties, value validations, extensions, CEL rules — is forbidden.
    let has_name = md.properties.contains_key("name");
    let has_generate_name = md.properties.contains_key("generateName");
    let only_allowed_properties = match md.properties.len() {
        0 => true,
        1 => has_name || has_generate_name,
        2 => has_name && has_generate_name,
        _ => false,
    };
    let specifies_more = !only_allowed_properties
        || md.items.is_some()
        || is_set(&md.description)
        || is_set(&md.title)
        || md.nullable
        || md.additional_properties.is_some()
        || md.preserve_unknown_fields
        || md.embedded_resource
        || md.int_or_string
        || md.list_type.is_some()
        || !md.list_map_keys.is_empty()
        || md.map_type.is_some()
        || !md.validations.is_empty()
        || md.vv().is_some_and(|vv| !value_validation_is_zero(vv));
    if specifies_more {
        errs.push(Error::forbidden(
            path.clone(),
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// The junctors and the pattern of one set of value validations, at a structural node or inside
/// a junctor.
fn check_value_validation(
    vv: &ValueValidation,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &Path,
    errs: &mut Vec<Error>,
) {
    if !skip_any_of {
        for (i, n) in vv.any_of.iter().enumerate() {
            check_nested(n, false, &path.child("anyOf").index(i), errs);
        }
    }
    for (i, n) in vv.all_of.iter().enumerate() {
        check_nested(n, skip_first_all_of_any_of && i == 0, &path.child("allOf").index(i), errs);
    }
    for (i, n) in vv.one_of.iter().enumerate() {
        check_nested(n, false, &path.child("oneOf").index(i), errs);
    }
    if let Some(n) = &vv.not {
        check_nested(n, false, &path.child("not"), errs);
    }
    if let Some(pattern) = &vv.pattern
        && let Some(err) = pattern.error()
        && !pattern.source().is_empty()
    {
        errs.push(Error::invalid(
            path.child("pattern"),
            pattern.source(),
            format!("must be a valid regular expression, but isn't: {err}"),
        ));
    }
}

/// A schema inside a junctor: it may only restrict values, so every generic field and every
/// extension is a violation, as is `metadata` (it would let a junctor restrict ObjectMeta).
fn check_nested(v: &NestedValueValidation, skip_any_of: bool, path: &Path, errs: &mut Vec<Error>) {
    check_value_validation(&v.value_validation, skip_any_of, false, path, errs);
    if let Some(items) = &v.items {
        check_nested(items, false, &path.child("items"), errs);
    }
    for (name, prop) in &v.properties {
        check_nested(prop, false, &path.child("properties").key(name), errs);
    }

    let f = &v.forbidden;
    let undefined = "must be undefined to be structural";
    let empty = "must be empty to be structural";
    let falsy = "must be false to be structural";
    if !f.type_name.is_empty() {
        errs.push(Error::forbidden(path.child("type"), empty));
    }
    // Any additionalProperties (schema or boolean) is one violation here; like Kubernetes, the
    // check does not descend into its schema.
    if v.additional_properties.is_some() || f.has_additional_properties {
        errs.push(Error::forbidden(path.child("additionalProperties"), undefined));
    }
    if has_default(f) {
        errs.push(Error::forbidden(path.child("default"), undefined));
    }
    if is_set(&f.title) {
        errs.push(Error::forbidden(path.child("title"), empty));
    }
    if is_set(&f.description) {
        errs.push(Error::forbidden(path.child("description"), empty));
    }
    if f.has_external_docs {
        errs.push(Error::forbidden(path.child("externalDocs"), undefined));
    }
    if f.nullable {
        errs.push(Error::forbidden(path.child("nullable"), falsy));
    }
    if f.preserve_unknown_fields {
        errs.push(Error::forbidden(path.child("x-kubernetes-preserve-unknown-fields"), falsy));
    }
    if f.embedded_resource {
        errs.push(Error::forbidden(path.child("x-kubernetes-embedded-resource"), falsy));
    }
    if f.int_or_string {
        errs.push(Error::forbidden(path.child("x-kubernetes-int-or-string"), falsy));
    }
    if !f.list_map_keys.is_empty() {
        errs.push(Error::forbidden(path.child("x-kubernetes-list-map-keys"), empty));
    }
    if f.list_type.is_some() {
        errs.push(Error::forbidden(path.child("x-kubernetes-list-type"), undefined));
    }
    if f.map_type.is_some() {
        errs.push(Error::forbidden(path.child("x-kubernetes-map-type"), undefined));
    }
    // CEL rules are evaluated against the structural node they sit on; inside a junctor they
    // would need junctor-aware evaluation, which Kubernetes does not implement.
    if !v.validations.is_empty() {
        errs.push(Error::forbidden(path.child("x-kubernetes-validations"), empty));
    }
    if v.properties.contains_key("metadata") {
        errs.push(Error::forbidden(
            path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Completeness of the junctors in `vv` against the structural node `s`. `s_path` is where `s`
/// sits, `v_path` where the junctor owner sits (they differ once we are inside a junctor).
fn complete_value_validation(
    vv: &ValueValidation,
    s: &Structural,
    s_path: &Path,
    v_path: &Path,
    errs: &mut Vec<Error>,
) {
    if let Some(n) = &vv.not {
        complete_nested(n, s, s_path, &v_path.child("not"), errs);
    }
    for (i, n) in vv.all_of.iter().enumerate() {
        complete_nested(n, s, s_path, &v_path.child("allOf").index(i), errs);
    }
    for (i, n) in vv.any_of.iter().enumerate() {
        complete_nested(n, s, s_path, &v_path.child("anyOf").index(i), errs);
    }
    for (i, n) in vv.one_of.iter().enumerate() {
        complete_nested(n, s, s_path, &v_path.child("oneOf").index(i), errs);
    }
}

/// Completeness of one junctor schema `v` against the structural node `s` it applies to: every
/// `items` and property it names must exist in `s`, recursively, including through junctors
/// nested in `v`.
fn complete_nested(v: &NestedValueValidation, s: &Structural, s_path: &Path, v_path: &Path, errs: &mut Vec<Error>) {
    complete_value_validation(&v.value_validation, s, s_path, v_path, errs);
    if let Some(v_items) = &v.items {
        let s_items_path = s_path.child("items");
        let v_items_path = v_path.child("items");
        match &s.items {
            Some(s_items) => complete_nested(v_items, s_items, &s_items_path, &v_items_path, errs),
            None => errs.push(missing(s_items_path, &v_items_path)),
        }
    }
    for (name, v_prop) in &v.properties {
        let s_prop_path = s_path.child("properties").key(name);
        let v_prop_path = v_path.child("properties").key(name);
        match s.properties.get(name) {
            Some(s_prop) => complete_nested(v_prop, s_prop, &s_prop_path, &v_prop_path, errs),
            // Even when `s` has an additionalProperties schema: Kubernetes only accepts that
            // behind an option that CRDs do not enable.
            None => errs.push(missing(s_prop_path, &v_prop_path)),
        }
    }
}

fn missing(s_path: Path, v_path: &Path) -> Error {
    Error::required(s_path, format!("because it is defined in {v_path}"))
}

/// Whether a junctor's `anyOf` is exactly `[{type: integer}, {type: string}]`, in that order
/// and with nothing else in either branch.
fn is_int_or_string_any_of(any_of: &[NestedValueValidation]) -> bool {
    matches!(any_of, [a, b] if is_bare_type(a, "integer") && is_bare_type(b, "string"))
}

/// Whether `n` sets `type: ty` and nothing else at all.
fn is_bare_type(n: &NestedValueValidation, ty: &str) -> bool {
    let f = &n.forbidden;
    f.type_name == ty
        && value_validation_is_zero(&n.value_validation)
        && n.validations.is_empty()
        && n.items.is_none()
        && n.properties.is_empty()
        && n.additional_properties.is_none()
        && !f.has_additional_properties
        && !is_set(&f.description)
        && !f.has_external_docs
        && !is_set(&f.title)
        && !has_default(f)
        && !f.nullable
        && !f.preserve_unknown_fields
        && !f.embedded_resource
        && !f.int_or_string
        && f.list_type.is_none()
        && f.list_map_keys.is_empty()
        && f.map_type.is_none()
}

/// Whether no value validation is set, with Go's notion of "unset": Kubernetes keeps `pattern`
/// as a plain string, so `pattern: ""` is the same as no pattern.
fn value_validation_is_zero(vv: &ValueValidation) -> bool {
    match &vv.pattern {
        // Rare enough that cloning to drop the empty pattern is fine.
        Some(p) if p.source().is_empty() => ValueValidation { pattern: None, ..vv.clone() }.is_empty(),
        _ => vv.is_empty(),
    }
}

/// Kubernetes keeps `description` and `title` as plain strings: empty is the same as absent.
fn is_set(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

/// Kubernetes drops an explicit `default: null` when it lowers a junctor, so only a non-null
/// default inside a junctor is a violation.
fn has_default(f: &ForbiddenInNested) -> bool {
    f.default.as_ref().is_some_and(|d| !d.is_null())
}

fn value_validation_uses_defaults(vv: &ValueValidation) -> bool {
    vv.all_of.iter().chain(&vv.any_of).chain(&vv.one_of).any(nested_uses_defaults)
        || vv.not.as_deref().is_some_and(nested_uses_defaults)
}

fn nested_uses_defaults(n: &NestedValueValidation) -> bool {
    n.forbidden.default.is_some()
        || n.items.as_deref().is_some_and(nested_uses_defaults)
        || n.properties.values().any(nested_uses_defaults)
        || matches!(&n.additional_properties, Some(NestedAdditionalProperties::Schema(ap)) if nested_uses_defaults(ap))
        || value_validation_uses_defaults(&n.value_validation)
}
