//! The keyword rules of definition schemas (`specStandardValidatorV3` and
//! `ValidateCustomResourceDefinitionOpenAPISchema` upstream), walked over the schema as written.
//!
//! The walk carries what the position implies: inside the `metadata`, `apiVersion` or `kind` of
//! the resource (or of an embedded resource) defaults are forbidden at the top level, and nested
//! embedded resources make no sense. Properties are visited in name order so that errors come out
//! in a stable order (upstream's order follows Go map iteration and is random).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, JSONSchemaPropsOrStringArray,
};
use serde_json::Value;
use versa_schema::field::{BadValue, Error, ErrorList, Path};

use super::rules::validate_rules;
use crate::validation::Options;

/// The six OpenAPI v3 types, sorted as upstream lists them.
const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
/// The properties of a resource that belong to its type and object metadata.
const META_FIELDS: [&str; 3] = ["metadata", "kind", "apiVersion"];

/// What the position in the schema implies for the node being checked.
#[derive(Clone, Debug)]
struct Context {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
}

impl Context {
    fn forbid_defaults(&self, reason: String) -> Context {
        Context { allow_defaults: false, disallow_defaults_reason: reason, ..self.clone() }
    }
    fn inside_meta(&self) -> Context {
        Context { inside_resource_meta: true, ..self.clone() }
    }
}

/// Checks the whole schema rooted at `path` (`…schema.openAPIV3Schema`).
pub(super) fn validate_schema_keywords(root: &JSONSchemaProps, path: &Path, opts: &Options) -> ErrorList {
    let mut errs = ErrorList::new();
    let ctx = Context { allow_defaults: true, disallow_defaults_reason: String::new(), inside_resource_meta: false };
    walk(root, path, &ctx, true, opts, &mut errs);
    errs
}

fn walk(s: &JSONSchemaProps, path: &Path, ctx: &Context, is_root: bool, opts: &Options, errs: &mut ErrorList) {
    validate_node(s, path, ctx, opts, errs);

    if s.unique_items == Some(true) {
        errs.push(Error::forbidden(
            path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }

    // properties are for structs and additionalProperties for maps; both at once would
    // contradict the convention that unknown fields are dropped.
    if let Some(ap) = &s.additional_properties {
        let has_properties = s.properties.as_ref().is_some_and(|p| !p.is_empty());
        if has_properties && !matches!(ap, JSONSchemaPropsOrBool::Bool(true)) {
            errs.push(Error::forbidden(
                path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let JSONSchemaPropsOrBool::Schema(sub) = ap {
            // A default for a map value inside metadata cannot be pruned without a key.
            let sub_ctx = if ctx.inside_resource_meta {
                ctx.forbid_defaults("inside additionalProperties applying to object metadata".into())
            } else {
                ctx.clone()
            };
            walk(sub, &path.child("additionalProperties"), &sub_ctx, false, opts, errs);
        }
    }

    for (name, sub) in s.properties.iter().flatten() {
        let mut sub_ctx = ctx.clone();
        if (is_root || s.x_kubernetes_embedded_resource == Some(true)) && META_FIELDS.contains(&name.as_str()) {
            sub_ctx = sub_ctx.inside_meta();
            if is_root {
                sub_ctx = sub_ctx.forbid_defaults(format!("in top-level {name}"));
            }
        }
        walk(sub, &path.child("properties").key(name), &sub_ctx, false, opts, errs);
    }

    if let Some(not) = &s.not {
        walk(not, &path.child("not"), ctx, false, opts, errs);
    }
    for (junctor, list) in [("allOf", &s.all_of), ("oneOf", &s.one_of), ("anyOf", &s.any_of)] {
        for (i, sub) in list.iter().flatten().enumerate() {
            walk(sub, &path.child(junctor).index(i), ctx, false, opts, errs);
        }
    }
    for (name, sub) in s.definitions.iter().flatten() {
        walk(sub, &path.child("definitions").key(name), ctx, false, opts, errs);
    }
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(sub)) => walk(sub, &path.child("items"), ctx, false, opts, errs),
        Some(JSONSchemaPropsOrArray::Schemas(subs)) => {
            for (i, sub) in subs.iter().enumerate() {
                walk(sub, &path.child("items").index(i), ctx, false, opts, errs);
            }
        }
        None => {}
    }
    for (name, dep) in s.dependencies.iter().flatten() {
        if let JSONSchemaPropsOrStringArray::Schema(sub) = dep {
            walk(sub, &path.child("dependencies").key(name), ctx, false, opts, errs);
        }
    }

    if s.x_kubernetes_preserve_unknown_fields == Some(false) {
        errs.push(Error::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    validate_map_and_list_types(s, path, opts, errs);
    if opts.require_map_list_keys_map_set_validation {
        errs.extend(validate_map_list_keys_map_set(s, path));
    }
    if let Some(rules) = s.x_kubernetes_validations.as_deref().filter(|r| !r.is_empty()) {
        errs.extend(validate_rules(s, rules, &path.child("x-kubernetes-validations")));
    }
}

/// The rules on a single node (`specStandardValidatorV3.validate`).
fn validate_node(s: &JSONSchemaProps, path: &Path, ctx: &Context, opts: &Options, errs: &mut ErrorList) {
    let type_ = s.type_.as_deref().unwrap_or_default();
    if opts.require_valid_property_type && !type_.is_empty() && !OPENAPI_V3_TYPES.contains(&type_) {
        errs.push(Error::not_supported(path.child("type"), type_, &OPENAPI_V3_TYPES));
    }
    if s.default.is_some() && !ctx.allow_defaults {
        let mut detail = String::from("must not be set");
        if !ctx.disallow_defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ctx.disallow_defaults_reason);
        }
        errs.push(Error::forbidden(path.child("default"), detail));
    }
    if s.id.as_deref().is_some_and(|id| !id.is_empty()) {
        errs.push(Error::forbidden(path.child("id"), "id is not supported"));
    }
    if s.additional_items.is_some() {
        errs.push(Error::forbidden(path.child("additionalItems"), "additionalItems is not supported"));
    }
    if s.pattern_properties.as_ref().is_some_and(|p| !p.is_empty()) {
        errs.push(Error::forbidden(path.child("patternProperties"), "patternProperties is not supported"));
    }
    if s.definitions.as_ref().is_some_and(|d| !d.is_empty()) {
        errs.push(Error::forbidden(path.child("definitions"), "definitions is not supported"));
    }
    if s.dependencies.is_some() {
        errs.push(Error::forbidden(path.child("dependencies"), "dependencies is not supported"));
    }
    if s.ref_path.is_some() {
        errs.push(Error::forbidden(path.child("$ref"), "$ref is not supported"));
    }
    if type_ == "null" {
        errs.push(Error::forbidden(path.child("type"), "type cannot be set to null, use nullable as an alternative"));
    }
    if matches!(&s.items, Some(JSONSchemaPropsOrArray::Schemas(list)) if !list.is_empty()) {
        errs.push(Error::forbidden(path.child("items"), "items must be a schema object and not an array"));
    }
    if ctx.inside_resource_meta && s.x_kubernetes_embedded_resource == Some(true) {
        errs.push(Error::forbidden(
            path.child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

/// `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`.
fn validate_map_and_list_types(s: &JSONSchemaProps, path: &Path, opts: &Options, errs: &mut ErrorList) {
    let type_ = s.type_.as_deref().unwrap_or_default();
    if let Some(map_type) = &s.x_kubernetes_map_type {
        if type_ != "object" {
            errs.push(type_error(path, type_, "must be object if x-kubernetes-map-type is specified"));
        }
        if map_type != "atomic" && map_type != "granular" {
            errs.push(Error::not_supported(
                path.child("x-kubernetes-map-type"),
                map_type.as_str(),
                &["atomic", "granular"],
            ));
        }
    }

    let list_type = s.x_kubernetes_list_type.as_deref();
    let item = match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => Some(item.as_ref()),
        _ => None,
    };
    if list_type.is_some() && type_ != "array" {
        errs.push(type_error(path, type_, "must be array if x-kubernetes-list-type is specified"));
    } else if opts.require_atomic_set_type
        && list_type == Some("set")
        && let Some(item) = item
    {
        errs.extend(validate_set_item(item, path));
    }
    if let Some(lt) = list_type.filter(|lt| !matches!(*lt, "atomic" | "set" | "map")) {
        errs.push(Error::not_supported(path.child("x-kubernetes-list-type"), lt, &["atomic", "set", "map"]));
    }

    let keys = s.x_kubernetes_list_map_keys.as_deref().unwrap_or_default();
    if !keys.is_empty() {
        match list_type {
            None => errs.push(Error::required(
                path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(Error::invalid(
                path.child("x-kubernetes-list-type"),
                other,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }

    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(Error::required(
                path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => {
                errs.push(Error::required(path.child("items"), "must have a schema if x-kubernetes-list-type is map"))
            }
            Some(JSONSchemaPropsOrArray::Schemas(list)) => errs.push(Error::invalid(
                path.child("items"),
                BadValue::Json(serde_json::to_value(list).unwrap_or(Value::Null)),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(JSONSchemaPropsOrArray::Schema(item)) => {
                let item_type = item.type_.as_deref().unwrap_or_default();
                if item_type != "object" {
                    errs.push(Error::invalid(
                        path.child("items").child("type"),
                        item_type,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    errs.extend(validate_map_keys(item, keys, path));
                }
            }
        }
    }
}

/// `Required` when the type is missing, `Invalid` when it is another type.
fn type_error(path: &Path, type_: &str, detail: &str) -> Error {
    if type_.is_empty() {
        Error::required(path.child("type"), detail)
    } else {
        Error::invalid(path.child("type"), type_, detail)
    }
}

/// Items of a set must be compared as whole values: scalars, atomic lists or atomic maps.
fn validate_set_item(item: &JSONSchemaProps, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
    // Upstream shows the item's list type in both errors, `null` when unset.
    let shown = || BadValue::Json(item.x_kubernetes_list_type.clone().map_or(Value::Null, Value::String));
    match item.type_.as_deref() {
        Some("array") if item.x_kubernetes_list_type.as_deref().is_some_and(|lt| lt != "atomic") => {
            errs.push(Error::invalid(path.child("items").child("x-kubernetes-list-type"), shown(), detail));
        }
        Some("object") if item.x_kubernetes_map_type.as_deref() != Some("atomic") => {
            errs.push(Error::invalid(path.child("items").child("x-kubernetes-map-type"), shown(), detail));
        }
        _ => {}
    }
    errs
}

/// Each map key must be a scalar property of the items, named once.
fn validate_map_keys(item: &JSONSchemaProps, keys: &[String], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let keys_value = || BadValue::Json(Value::from(keys.to_vec()));
    let mut seen = std::collections::HashSet::new();
    for k in keys {
        match item.properties.as_ref().and_then(|p| p.get(k)) {
            Some(prop) => {
                if matches!(prop.type_.as_deref(), Some("array" | "object")) {
                    // Upstream shows the items' type here, not the key's.
                    errs.push(Error::invalid(
                        path.child("items").child("properties").key(k).child("type"),
                        "object",
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => errs.push(Error::invalid(
                path.child("x-kubernetes-list-map-keys"),
                keys_value(),
                "entries must all be names of item properties",
            )),
        }
        if !seen.insert(k.as_str()) {
            errs.push(Error::invalid(
                path.child("x-kubernetes-list-map-keys"),
                keys_value(),
                "must not contain duplicate entries",
            ));
        }
    }
    errs
}

/// Items of set and map lists may not be null, and map keys must always have a value: required
/// or defaulted, and not nullable. Also used to decide whether an old definition already broke
/// this rule (then it is not enforced on update).
pub(in crate::validation) fn validate_map_list_keys_map_set(s: &JSONSchemaProps, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(JSONSchemaPropsOrArray::Schema(item)) = &s.items else { return errs };
    let Some(list_type) = s.x_kubernetes_list_type.as_deref().filter(|lt| matches!(*lt, "set" | "map")) else {
        return errs;
    };
    if item.nullable == Some(true) {
        errs.push(Error::forbidden(
            path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type == "map" {
        let required = item.required.as_deref().unwrap_or_default();
        for k in s.x_kubernetes_list_map_keys.iter().flatten() {
            // Keys that are not properties were reported by the keyword walk already.
            let Some(prop) = item.properties.as_ref().and_then(|p| p.get(k)) else { continue };
            let kpath = path.child("items").child("properties").key(k);
            if !required.contains(k) && prop.default.is_none() {
                errs.push(Error::required(
                    kpath.child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if prop.nullable == Some(true) {
                errs.push(Error::forbidden(
                    kpath.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}
