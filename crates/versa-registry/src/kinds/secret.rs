//! Secrets (standalone, `v1`; where `helm install` keeps its releases): kube's v1 Secret
//! conversion and validation — `stringData` merged into `data` (base64, winning over `data`
//! entries of the same key) and not kept, `type` defaulted to `Opaque` and immutable, keys as
//! ConfigMap keys ([`super::keys`]), at most 1 MiB of data, an `immutable` Secret's data kept;
//! no `generation`.

use serde_json::{Value, json};
use versa_schema::{ErrorList, Path};

use super::patch::{METADATA_ONLY, Schema};
use super::{CoreKind, KindRules, Part, core_definition, custom, keys};
use crate::error::Result;
use crate::resource::{Builtin, Resource, Version};

/// The kind's identity and built-in definition.
pub const BUILTIN: Builtin = Builtin::new("secrets", definition);

/// Its registration.
pub static KIND: CoreKind = CoreKind { builtin: BUILTIN, rules: &Secret };

fn definition() -> Value {
    core_definition(
        BUILTIN.name(),
        "",
        "Namespaced",
        json!({"plural": "secrets", "singular": "secret", "kind": "Secret"}),
        json!({
            "additionalPrinterColumns": [
                {"name": "Type", "type": "string", "jsonPath": ".type"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "stringData": {"type": "object", "additionalProperties": {"type": "string"}},
                "type": {"type": "string"},
                "immutable": {"type": "boolean"}}}},
        }),
    )
}

/// The rules of Secrets.
#[derive(Debug)]
pub struct Secret;

impl KindRules for Secret {
    fn is_core(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn prepare_create(&self, obj: &mut Value) {
        prepare_secret(obj);
    }

    fn prepare_update(&self, new: &mut Value, _old: &Value, _part: Part) {
        prepare_secret(new);
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
            let mut errs = ErrorList::new();
            if let Some(old) = old {
                errs.extend(validate_secret_update(obj, old));
            }
            errs.extend(validate_secret_data(obj));
            errs
        })
    }
}

/// A Secret as kube decodes it: `stringData` entries become `data` entries (base64; they win
/// over `data` entries of the same key) and `stringData` is not kept; `type` defaults to
/// `Opaque`.
pub fn prepare_secret(obj: &mut Value) {
    use base64::Engine as _;
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(Value::Object(strings)) = o.remove("stringData") {
        let data = o.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        if let Some(data) = data.as_object_mut() {
            for (k, v) in strings {
                let text = v.as_str().unwrap_or_default();
                data.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(text)));
            }
        }
    }
    if o.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
        o.insert("type".into(), json!("Opaque"));
    }
}

/// kube's `ValidateSecretUpdate`: `type` may not change, nor the data of an immutable Secret
/// (nor may it become mutable again).
pub fn validate_secret_update(new: &Value, old: &Value) -> ErrorList {
    use versa_schema::{Error as FieldError, ErrorType};
    let mut errs = ErrorList::new();
    if new.get("type") != old.get("type") {
        errs.push(FieldError::new(
            ErrorType::Invalid,
            Path::new("type"),
            new.get("type").cloned().unwrap_or(Value::Null),
            "field is immutable",
        ));
    }
    if old.get("immutable") == Some(&json!(true)) {
        if new.get("immutable") != Some(&json!(true)) {
            errs.push(FieldError::forbidden(Path::new("immutable"), "field is immutable when `immutable` is set"));
        }
        if new.get("data") != old.get("data") {
            errs.push(FieldError::forbidden(Path::new("data"), "field is immutable when `immutable` is set"));
        }
    }
    errs
}

/// kube's `ValidateSecret` on `data`: every key a valid config key, at most 1 MiB in all
/// (decoded bytes, as Go's `len` of the `[]byte`).
fn validate_secret_data(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(data) = obj.get("data").and_then(Value::as_object) else { return errs };
    let path = Path::new("data");
    let mut total = 0usize;
    for (key, value) in data {
        errs.extend(keys::validate_key(key, &path));
        total = total.saturating_add(value.as_str().map_or(0, keys::decoded_len));
    }
    if total > keys::MAX_DATA_BYTES {
        errs.push(versa_schema::Error::too_long(path, keys::MAX_DATA_BYTES as i64));
    }
    errs
}
