//! A version's published schema, as apiextensions-apiserver's builder publishes it: the
//! structural copy of the definition's schema (keywords the structural model drops removed,
//! `x-kubernetes-int-or-string` unfolded), `apiVersion`/`kind`/`metadata` at the root and on
//! embedded resources, the lossy v2 conversion and pruned defaults, and the List kind's schema.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion;
use serde_json::{Map, Value, json};
use versa_schema::Structural;

use super::names::*;

/// The schema as JSON if kube would publish it: present, of known types and structural.
pub(super) fn published_schema(v: &CustomResourceDefinitionVersion) -> Option<Value> {
    let props = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    let value = serde_json::to_value(props).ok()?;
    if has_invalid_types(&value) {
        return None;
    }
    let lowered = Structural::lower(props).ok()?;
    versa_schema::structural_check::is_structural(&lowered).then_some(value)
}

/// `SchemaHasInvalidTypes`: a `type` other than the JSON Schema ones, anywhere.
pub(super) fn has_invalid_types(v: &Value) -> bool {
    let Value::Object(m) = v else { return false };
    if let Some(t) = m.get("type").and_then(Value::as_str)
        && !matches!(t, "" | "array" | "boolean" | "integer" | "number" | "object" | "string")
    {
        return true;
    }
    schema_children(m).any(has_invalid_types)
}

/// Every sub-schema of a schema object (structural part and junctors).
pub(super) fn schema_children(m: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    let props = ["properties", "patternProperties", "definitions"]
        .into_iter()
        .filter_map(|k| m.get(k).and_then(Value::as_object))
        .flat_map(|p| p.values());
    let lists = ["allOf", "anyOf", "oneOf"].into_iter().filter_map(|k| m.get(k).and_then(Value::as_array)).flatten();
    let items = match m.get("items") {
        Some(Value::Array(a)) => a.iter().collect::<Vec<_>>(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let singles = ["not", "additionalProperties", "additionalItems"].into_iter().filter_map(|k| m.get(k));
    props.chain(lists).chain(items).chain(singles)
}

/// `buildKubeNative`: the kind's schema in one flavor.
pub(super) fn kind_schema(schema: Option<&Value>, flavor: Flavor, crd_preserve_unknown_fields: bool) -> Value {
    let Some(schema) = schema else { return json!({"type": "object"}) };
    if flavor == Flavor::V2 && (crd_preserve_unknown_fields || is_true(schema, "x-kubernetes-preserve-unknown-fields"))
    {
        return json!({"type": "object"});
    }
    let mut s = structural_copy(schema);
    unfold_int_or_string(&mut s);
    if flavor == Flavor::V2 {
        to_v2(&mut s);
    }
    if let Value::Object(m) = &mut s {
        let props = m.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(props) = props {
            props.insert("metadata".into(), flavor.described_ref(OBJECT_META, OBJECT_METADATA_DESCRIPTION));
            props.insert("apiVersion".into(), json!({"type": "string", "description": API_VERSION_DESCRIPTION}));
            props.insert("kind".into(), json!({"type": "string", "description": KIND_DESCRIPTION}));
        }
    }
    add_embedded_properties(&mut s, flavor);
    s
}

pub(super) fn is_true(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The keys of a schema that survive the structural model (`ToKubeOpenAPI` of `Structural`):
/// everything else (`example`, `externalDocs`, `$ref`, `id`, `$schema`, `definitions`,
/// `dependencies`, `additionalItems`, `patternProperties`) is dropped, as are `false` flags and
/// empty lists, which Go omits.
pub(super) fn structural_copy(v: &Value) -> Value {
    let Value::Object(m) = v else { return v.clone() };
    let mut out = Map::new();
    for (k, val) in m {
        let kept = match k.as_str() {
            "type"
            | "description"
            | "title"
            | "default"
            | "format"
            | "maximum"
            | "minimum"
            | "maxLength"
            | "minLength"
            | "pattern"
            | "maxItems"
            | "minItems"
            | "multipleOf"
            | "maxProperties"
            | "minProperties"
            | "x-kubernetes-list-type"
            | "x-kubernetes-map-type" => Some(val.clone()),
            "nullable"
            | "exclusiveMaximum"
            | "exclusiveMinimum"
            | "uniqueItems"
            | "x-kubernetes-preserve-unknown-fields"
            | "x-kubernetes-embedded-resource"
            | "x-kubernetes-int-or-string" => (val == &Value::Bool(true)).then(|| val.clone()),
            "enum" | "required" | "x-kubernetes-list-map-keys" | "x-kubernetes-validations" => {
                val.as_array().filter(|a| !a.is_empty()).map(|_| val.clone())
            }
            "properties" => val
                .as_object()
                .map(|p| Value::Object(p.iter().map(|(name, s)| (name.clone(), structural_copy(s))).collect())),
            "items" | "not" => Some(structural_copy(val)),
            "additionalProperties" => Some(if val.is_object() { structural_copy(val) } else { val.clone() }),
            "allOf" | "anyOf" | "oneOf" => {
                val.as_array().filter(|a| !a.is_empty()).map(|a| Value::Array(a.iter().map(structural_copy).collect()))
            }
            _ => None,
        };
        if let Some(kept) = kept {
            out.insert(k.clone(), kept);
        }
    }
    Value::Object(out)
}

/// `Structural.Unfold`: `x-kubernetes-int-or-string` gains `anyOf: [integer, string]` unless its
/// value validations already spell that pattern.
pub(super) fn unfold_int_or_string(s: &mut Value) {
    let Value::Object(m) = s else { return };
    for child in structural_children_mut(m) {
        unfold_int_or_string(child);
    }
    if !m.get("x-kubernetes-int-or-string").and_then(Value::as_bool).unwrap_or(false) {
        return;
    }
    let pattern = json!([{"type": "integer"}, {"type": "string"}]);
    let any_of_is_pattern = m.get("anyOf") == Some(&pattern);
    let all_of_starts_with_pattern =
        m.get("allOf").and_then(Value::as_array).and_then(|a| a.first()).is_some_and(|first| {
            first.get("anyOf") == Some(&pattern) && first.as_object().is_some_and(|f| f.len() == 1)
        });
    if any_of_is_pattern || all_of_starts_with_pattern {
        return;
    }
    if m.contains_key("anyOf") {
        let mut all_of = vec![json!({"anyOf": pattern})];
        if let Some(Value::Array(existing)) = m.remove("allOf") {
            all_of.extend(existing);
        }
        m.insert("allOf".into(), Value::Array(all_of));
    } else {
        m.insert("anyOf".into(), pattern);
    }
}

/// The structural children of a schema: property schemas, `items`, `additionalProperties`.
pub(super) fn structural_children_mut(m: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut out = Vec::new();
    let mut props = None;
    let mut items = None;
    let mut additional = None;
    for (k, v) in m.iter_mut() {
        match k.as_str() {
            "properties" => props = Some(v),
            "items" => items = Some(v),
            "additionalProperties" => additional = Some(v),
            _ => {}
        }
    }
    if let Some(Value::Object(p)) = props {
        out.extend(p.values_mut());
    }
    if let Some(items) = items.filter(|i| i.is_object()) {
        out.push(items);
    }
    if let Some(additional) = additional.filter(|a| a.is_object()) {
        out.push(additional);
    }
    out
}

/// `ToStructuralOpenAPIV2`, on the structural copy.
pub(super) fn to_v2(s: &mut Value) {
    let Value::Object(m) = s else { return };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(junctor);
    }
    if m.remove("nullable").is_some() {
        m.remove("type");
        m.remove("items");
        m.remove("properties");
    }
    let preserve = m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool).unwrap_or(false);
    if preserve {
        m.remove("items");
        m.remove("properties");
    }
    if !m.contains_key("items") && m.get("type").and_then(Value::as_str) == Some("array") {
        m.remove("type");
    }
    if preserve && m.get("type").and_then(Value::as_str) == Some("object") {
        m.remove("type");
    }
    let nullable_props: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter(|(_, s)| is_true(s, "nullable")).map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable_props.iter().any(|p| p == r)));
    }
    if m.get("additionalProperties").is_some_and(|a| is_true(a, "nullable")) {
        m.remove("required");
    }
    if m.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        m.remove("required");
    }
    for child in structural_children_mut(m) {
        to_v2(child);
    }
}

/// `handler.PruneDefaults`: no `default` anywhere in a v2 schema.
pub(super) fn prune_defaults(s: &mut Value) {
    let Value::Object(m) = s else { return };
    m.remove("default");
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = m.get_mut(junctor) {
            a.iter_mut().for_each(prune_defaults);
        }
    }
    if let Some(not) = m.get_mut("not") {
        prune_defaults(not);
    }
    for child in structural_children_mut(m) {
        prune_defaults(child);
    }
}

/// `addEmbeddedProperties`: embedded resources get `apiVersion`, `kind` and `metadata`, and
/// require the first two (in v2 not when they also preserve unknown fields).
pub(super) fn add_embedded_properties(s: &mut Value, flavor: Flavor) {
    let Value::Object(m) = s else { return };
    for child in structural_children_mut(m) {
        add_embedded_properties(child, flavor);
    }
    let preserve = m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool).unwrap_or(false);
    if preserve && flavor == Flavor::V2 {
        return;
    }
    if !m.get("x-kubernetes-embedded-resource").and_then(Value::as_bool).unwrap_or(false) {
        return;
    }
    if let Value::Object(props) = m.entry("properties").or_insert_with(|| json!({})) {
        props.insert("apiVersion".into(), json!({"type": "string", "description": EMBEDDED_API_VERSION_DESCRIPTION}));
        props.insert("kind".into(), json!({"type": "string", "description": EMBEDDED_KIND_DESCRIPTION}));
        props.insert("metadata".into(), flavor.described_ref(OBJECT_META, OBJECT_METADATA_DESCRIPTION));
    }
    if let Value::Array(required) = m.entry("required").or_insert_with(|| json!([])) {
        for key in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == key) {
                required.push(json!(key));
            }
        }
    }
}

/// `buildListSchema`.
pub(super) fn list_schema(names: &Names<'_>, version: &str, kind_name: &str, flavor: Flavor) -> Value {
    let items_doc = format!(
        "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
        names.plural
    );
    json!({
        "type": "object",
        "description": format!("{} is a list of {}", names.list_kind, names.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
            "items": {"type": "array", "items": {"$ref": flavor.reference(kind_name)}, "description": items_doc},
            "kind": {"type": "string", "description": KIND_DESCRIPTION},
            "metadata": flavor.described_ref(LIST_META, LIST_METADATA_DESCRIPTION),
        },
        "x-kubernetes-group-version-kind": [gvk(names.group, version, &names.list_kind)],
    })
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------
