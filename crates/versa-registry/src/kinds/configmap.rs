//! ConfigMaps (standalone, `v1`; where operators read their settings): kube's ConfigMap
//! validation (`ValidateConfigMap`, `ValidateConfigMapUpdate`) — keys of `data` and
//! `binaryData` valid config keys ([`super::keys`]), no key in both, at most 1 MiB in all, and
//! an `immutable` ConfigMap stays so with its data. No `generation`; strategic merge patch
//! knows only their metadata; client-go's typed clients may send them as protobuf.

use serde_json::{Value, json};
use versa_schema::{Error as FieldError, ErrorList, Path};

use super::patch::{METADATA_ONLY, Schema};
use super::{CoreKind, KindRules, Part, core_definition, custom, keys};
use crate::error::Result;
use crate::resource::{Builtin, Resource, Version};

/// The kind's identity and built-in definition.
pub const BUILTIN: Builtin = Builtin::new("configmaps", definition);

/// Its registration.
pub static KIND: CoreKind = CoreKind { builtin: BUILTIN, rules: &ConfigMap };

fn definition() -> Value {
    core_definition(
        BUILTIN.name(),
        "",
        "Namespaced",
        json!({"plural": "configmaps", "singular": "configmap", "kind": "ConfigMap", "shortNames": ["cm"]}),
        json!({
            // kube's `DATA` column counts `data` and `binaryData` entries, which a JSONPath
            // column cannot: the default `Age` alone until the Table convertor can count.
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
                "binaryData": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "immutable": {"type": "boolean"}}}},
        }),
    )
}

/// The rules of ConfigMaps.
#[derive(Debug)]
pub struct ConfigMap;

impl KindRules for ConfigMap {
    fn is_core(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit(res, ver, obj, old, part, warnings, |obj, old| {
            let mut errs = old.map(|old| validate_update(obj, old)).unwrap_or_default();
            errs.extend(validate(obj));
            errs
        })
    }
}

/// kube's `ValidateConfigMap` (what the schema does not already check).
fn validate(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let data = obj.get("data").and_then(Value::as_object);
    let binary = obj.get("binaryData").and_then(Value::as_object);
    let mut total = 0usize;
    let data_path = Path::new("data");
    for (key, value) in data.into_iter().flatten() {
        errs.extend(keys::validate_key(key, &data_path));
        if binary.is_some_and(|b| b.contains_key(key)) {
            errs.push(FieldError::invalid(data_path.key(key), key.as_str(), "duplicate of key present in binaryData"));
        }
        total = total.saturating_add(value.as_str().map_or(0, str::len));
    }
    let binary_path = Path::new("binaryData");
    for (key, value) in binary.into_iter().flatten() {
        errs.extend(keys::validate_key(key, &binary_path));
        total = total.saturating_add(value.as_str().map_or(0, keys::decoded_len));
    }
    if total > keys::MAX_DATA_BYTES {
        // kube names no field: the error is about the whole object.
        errs.push(FieldError::too_long(Path::new(""), keys::MAX_DATA_BYTES as i64));
    }
    errs
}

/// kube's `ValidateConfigMapUpdate`: an immutable ConfigMap stays immutable, and so do its
/// `data` and `binaryData`.
fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.get("immutable") != Some(&json!(true)) {
        return errs;
    }
    let immutable = "field is immutable when `immutable` is set";
    if new.get("immutable") != Some(&json!(true)) {
        errs.push(FieldError::forbidden(Path::new("immutable"), immutable));
    }
    for field in ["data", "binaryData"] {
        if !same_map(new.get(field), old.get(field)) {
            errs.push(FieldError::forbidden(Path::new(field), immutable));
        }
    }
    errs
}

/// Whether two maps are the same as Go's `reflect.DeepEqual` sees the decoded maps: an empty
/// map and no map differ (a nil and an empty Go map are not deeply equal).
fn same_map(a: Option<&Value>, b: Option<&Value>) -> bool {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    norm(a) == norm(b)
}
