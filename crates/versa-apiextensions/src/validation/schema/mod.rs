//! A version's `schema.openAPIV3Schema`: the checks kube-apiserver runs on a definition's schema.
//!
//! In order: the root restrictions that come with the status subresource, `nullable` at the root,
//! then — on the schema lowered once into [`Structural`] — the structural-schema rules and the
//! defaults, and finally the keyword rules on the schema as written ([`keywords`], including the
//! static checks of `x-kubernetes-validations` in [`rules`]), then the compilation of those rules
//! ([`cel`], on a structural schema with valid defaults only). A schema that cannot be lowered at
//! all is reported only when nothing else was found, because the keyword rules already explain
//! the same constructs with better paths.

pub(crate) mod cel;
mod keywords;
pub(super) mod predicates;
mod rules;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::Value;
use versa_schema::field::{BadValue, Error, ErrorList, Path};
use versa_schema::{LowerError, Structural};

pub(super) use predicates::{
    has_default, has_invalid_map_list_keys_map_set, has_invalid_type, has_kubernetes_extensions,
    has_non_atomic_set_type, spec_has,
};

use super::Options;

/// The keywords allowed at the root when the status subresource is on: those that still mean the
/// same once `status` is validated on its own (the names of kube-apiserver's Go fields).
const ALLOWED_AT_ROOT_WITH_STATUS: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// Validates one version's schema; `path` is `spec.versions[i].schema`.
pub(super) fn validate_version_schema(
    props: &JSONSchemaProps,
    lowered: Option<&Result<Structural, LowerError>>,
    status_enabled: bool,
    opts: &Options,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let root = path.child("openAPIV3Schema");
    if status_enabled {
        errs.extend(validate_root_with_status(props, path));
    }
    if props.nullable == Some(true) {
        errs.push(Error::forbidden(root.child("nullable"), "nullable cannot be true at the root"));
    }

    let mut lowering_errs = ErrorList::new();
    // CEL rules are compiled only on a structural schema with valid defaults.
    let mut cel_schema = None;
    if opts.require_structural_schema {
        match lowered {
            Some(Err(e)) => lowering_errs.push(Error::invalid(root.clone(), "", e.0.clone())),
            Some(Ok(ss)) => {
                let structural = versa_schema::structural_check::validate_structural(ss, &root);
                if !structural.is_empty() {
                    errs.extend(structural);
                } else {
                    let defaults = versa_schema::defaults::validate_defaults(ss, &root, opts.require_pruned_defaults);
                    cel_schema = defaults.is_empty().then_some(ss);
                    errs.extend(defaults);
                }
            }
            None => {}
        }
    }
    let keyword_errs = keywords::validate_schema_keywords(props, &root, opts);
    let cel_errs = cel_schema.map(|ss| cel::validate_schema_rules(ss, &root, &keyword_errs)).unwrap_or_default();
    errs.extend(keyword_errs);
    errs.extend(cel_errs);
    if errs.is_empty() {
        errs.extend(lowering_errs);
    }
    errs
}

/// With the status subresource, `status` is validated with `properties[status]` alone, so the
/// root may only carry keywords that do not constrain the object as a whole. One error at most.
fn validate_root_with_status(props: &JSONSchemaProps, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (name, set) in root_fields_in_go_order(props) {
        if !set {
            continue;
        }
        if name == "Type" {
            let type_ = props.type_.as_deref().unwrap_or_default();
            if type_ != "object" {
                errs.push(Error::invalid(
                    path.child("openAPIV3Schema.type"),
                    type_,
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
                break;
            }
            continue;
        }
        if !ALLOWED_AT_ROOT_WITH_STATUS.contains(&name) {
            let shown = BadValue::Json(serde_json::to_value(props).unwrap_or(Value::Null));
            errs.push(Error::invalid(
                path.child("openAPIV3Schema"),
                shown,
                format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    ALLOWED_AT_ROOT_WITH_STATUS.join(" ")
                ),
            ));
            break;
        }
    }
    errs
}

/// Which keywords are set, in the field order of kube-apiserver's internal `JSONSchemaProps`
/// (the order decides which of two problems is reported).
fn root_fields_in_go_order(s: &JSONSchemaProps) -> [(&'static str, bool); 44] {
    let nonempty = |v: &Option<String>| v.as_deref().is_some_and(|x| !x.is_empty());
    let yes = |v: Option<bool>| v == Some(true);
    [
        ("ID", nonempty(&s.id)),
        ("Schema", nonempty(&s.schema)),
        ("Ref", s.ref_path.is_some()),
        ("Description", nonempty(&s.description)),
        ("Type", nonempty(&s.type_)),
        ("Format", nonempty(&s.format)),
        ("Title", nonempty(&s.title)),
        ("Default", s.default.is_some()),
        ("Maximum", s.maximum.is_some()),
        ("ExclusiveMaximum", yes(s.exclusive_maximum)),
        ("Minimum", s.minimum.is_some()),
        ("ExclusiveMinimum", yes(s.exclusive_minimum)),
        ("MaxLength", s.max_length.is_some()),
        ("MinLength", s.min_length.is_some()),
        ("Pattern", nonempty(&s.pattern)),
        ("MaxItems", s.max_items.is_some()),
        ("MinItems", s.min_items.is_some()),
        ("UniqueItems", yes(s.unique_items)),
        ("MultipleOf", s.multiple_of.is_some()),
        ("Enum", s.enum_.is_some()),
        ("MaxProperties", s.max_properties.is_some()),
        ("MinProperties", s.min_properties.is_some()),
        ("Required", s.required.is_some()),
        ("Items", s.items.is_some()),
        ("AllOf", s.all_of.is_some()),
        ("OneOf", s.one_of.is_some()),
        ("AnyOf", s.any_of.is_some()),
        ("Not", s.not.is_some()),
        ("Properties", s.properties.is_some()),
        ("AdditionalProperties", s.additional_properties.is_some()),
        ("PatternProperties", s.pattern_properties.is_some()),
        ("Dependencies", s.dependencies.is_some()),
        ("AdditionalItems", s.additional_items.is_some()),
        ("Definitions", s.definitions.is_some()),
        ("ExternalDocs", s.external_docs.is_some()),
        ("Example", s.example.is_some()),
        ("Nullable", yes(s.nullable)),
        ("XPreserveUnknownFields", s.x_kubernetes_preserve_unknown_fields.is_some()),
        ("XEmbeddedResource", yes(s.x_kubernetes_embedded_resource)),
        ("XIntOrString", yes(s.x_kubernetes_int_or_string)),
        ("XListMapKeys", s.x_kubernetes_list_map_keys.is_some()),
        ("XListType", s.x_kubernetes_list_type.is_some()),
        ("XMapType", s.x_kubernetes_map_type.is_some()),
        ("XValidations", s.x_kubernetes_validations.is_some()),
    ]
}
