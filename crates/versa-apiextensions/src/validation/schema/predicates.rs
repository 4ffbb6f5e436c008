//! Questions asked of whole schemas: does any node have a default, an `x-kubernetes-*`
//! extension, an invalid type, …? They decide which rules apply (defaults and extensions require
//! structural schemas) and, asked of the old definition on update, which rules are ratcheted.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionSpec, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    JSONSchemaPropsOrStringArray,
};
use versa_schema::field::Path;

use super::keywords::validate_map_list_keys_map_set;

/// Whether `pred` holds for a node of any version's schema.
pub(in crate::validation) fn spec_has(spec: &CustomResourceDefinitionSpec, pred: fn(&JSONSchemaProps) -> bool) -> bool {
    spec.versions
        .iter()
        .filter_map(|v| v.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()))
        .any(|s| schema_has(s, &mut { pred }))
}

/// Whether `pred` holds for `s` or any schema nested in it, wherever nested. Nodes are visited
/// in kube's `SchemaHas` order (the node, items, the junctors, properties, …), so a predicate
/// that collects and returns `false` sees every node.
pub(in crate::validation) fn schema_has(s: &JSONSchemaProps, pred: &mut impl FnMut(&JSONSchemaProps) -> bool) -> bool {
    if pred(s) {
        return true;
    }
    let any = |list: &Option<Vec<JSONSchemaProps>>, pred: &mut _| list.iter().flatten().any(|x| schema_has(x, pred));
    let any_map = |map: &Option<std::collections::BTreeMap<String, JSONSchemaProps>>, pred: &mut _| {
        map.iter().flatten().any(|(_, x)| schema_has(x, pred))
    };
    let or_bool = |x: &Option<JSONSchemaPropsOrBool>, pred: &mut _| matches!(x, Some(JSONSchemaPropsOrBool::Schema(sub)) if schema_has(sub, pred));
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) if schema_has(item, pred) => return true,
        Some(JSONSchemaPropsOrArray::Schemas(items)) if items.iter().any(|x| schema_has(x, pred)) => return true,
        _ => {}
    }
    any(&s.all_of, pred)
        || any(&s.any_of, pred)
        || any(&s.one_of, pred)
        || s.not.as_deref().is_some_and(|x| schema_has(x, pred))
        || any_map(&s.properties, pred)
        || or_bool(&s.additional_properties, pred)
        || any_map(&s.pattern_properties, pred)
        || or_bool(&s.additional_items, pred)
        || any_map(&s.definitions, pred)
        || s.dependencies
            .iter()
            .flatten()
            .any(|(_, d)| matches!(d, JSONSchemaPropsOrStringArray::Schema(sub) if schema_has(sub, pred)))
}

/// The node has a `default`.
pub(in crate::validation) fn has_default(s: &JSONSchemaProps) -> bool {
    s.default.is_some()
}

/// The node uses an extension that only structural schemas support.
pub(in crate::validation) fn has_kubernetes_extensions(s: &JSONSchemaProps) -> bool {
    s.x_kubernetes_embedded_resource == Some(true)
        || s.x_kubernetes_preserve_unknown_fields.is_some()
        || s.x_kubernetes_int_or_string == Some(true)
        || s.x_kubernetes_list_map_keys.as_ref().is_some_and(|k| !k.is_empty())
        || s.x_kubernetes_list_type.is_some()
        || s.x_kubernetes_validations.as_ref().is_some_and(|v| !v.is_empty())
}

/// The node's `type` is not an OpenAPI v3 type.
pub(in crate::validation) fn has_invalid_type(s: &JSONSchemaProps) -> bool {
    let t = s.type_.as_deref().unwrap_or_default();
    !t.is_empty() && !matches!(t, "string" | "number" | "integer" | "boolean" | "array" | "object")
}

/// The node is a set whose items are not atomic.
pub(in crate::validation) fn has_non_atomic_set_type(s: &JSONSchemaProps) -> bool {
    if s.x_kubernetes_list_type.as_deref() != Some("set") {
        return false;
    }
    let Some(JSONSchemaPropsOrArray::Schema(item)) = &s.items else { return false };
    match item.type_.as_deref() {
        Some("array") => item.x_kubernetes_list_type.as_deref().is_some_and(|lt| lt != "atomic"),
        Some("object") => item.x_kubernetes_map_type.as_deref() != Some("atomic"),
        _ => false,
    }
}

/// The node breaks the set/map-list nullability and key rules.
pub(in crate::validation) fn has_invalid_map_list_keys_map_set(s: &JSONSchemaProps) -> bool {
    !validate_map_list_keys_map_set(s, &Path::none()).is_empty()
}
