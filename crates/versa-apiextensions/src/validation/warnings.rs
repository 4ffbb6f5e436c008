//! Warnings on a definition write (kube-apiserver 1.34 and later): a `format` that Kubernetes
//! does not validate is accepted, but the request is answered with `unrecognized format "…"`.
//!
//! Recognized, as apiextensions-apiserver's `GetUnrecognizedFormats` has it at versa's
//! compatibility version: on strings and untyped nodes the string formats Kubernetes validates
//! (names compared with their dashes removed, [`versa_schema::formats::Format::parse`]); on
//! integers `int32` and `int64`; on numbers `float` and `double`; on any other type, none. An
//! update warns only about formats the old definition did not already use. Each format is named
//! once per request (kube's warning recorder drops repeated texts), in schema order.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use versa_schema::formats::Format;

use super::schema::predicates::schema_has;
use crate::types::ResourceDefinition;

/// The warnings for creating `def`.
pub fn warnings_on_create(def: &ResourceDefinition) -> Vec<String> {
    unrecognized_formats(def).iter().map(|f| warning(f)).collect()
}

/// The warnings for updating `old` to `new`: formats `old` did not use.
pub fn warnings_on_update(new: &ResourceDefinition, old: &ResourceDefinition) -> Vec<String> {
    let before = unrecognized_formats(old);
    unrecognized_formats(new).iter().filter(|f| !before.contains(f)).map(|f| warning(f)).collect()
}

fn warning(format: &str) -> String {
    format!("unrecognized format {}", versa_schema::field::go_quote(format))
}

/// The distinct formats of every version's schema that Kubernetes does not validate.
pub fn unrecognized_formats(def: &ResourceDefinition) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let schemas = def.spec.versions.iter().filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref());
    for schema in schemas {
        schema_has(schema, &mut |node: &JSONSchemaProps| {
            if let Some(format) = node.format.as_deref().filter(|f| !f.is_empty())
                && !recognized(node.type_.as_deref().unwrap_or(""), format)
                && !found.iter().any(|f| f == format)
            {
                found.push(format.to_owned());
            }
            false
        });
    }
    found
}

/// Whether Kubernetes validates `format` on a node of type `type_`.
fn recognized(type_: &str, format: &str) -> bool {
    match type_ {
        "" | "string" => Format::parse(format).is_some(),
        "integer" => matches!(format, "int32" | "int64"),
        "number" => matches!(format, "float" | "double"),
        _ => false,
    }
}
