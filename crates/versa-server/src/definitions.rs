//! The write rules of the definitions API (`versa.dev/v1` `resourcedefinitions`), mirroring
//! kube-apiserver's CustomResourceDefinition strategy:
//!
//! - create: defaults, `generation` 1, `status` reset to `storedVersions: [<storage version>]`;
//! - update: `status` kept from the old object, `generation` bumped when `spec` changes, the
//!   storage version appended to `status.storedVersions` when it is new;
//! - `/status` update: only `status` changes;
//! - validation with `versa-apiextensions` (the same rules `versa lint` applies);
//! - delete: the first delete marks the definition (`deletionTimestamp`, the
//!   `customresourcecleanup.apiextensions.k8s.io` finalizer, `Terminating=True`) and the
//!   definitions controller removes its objects, then the finalizer.

use serde_json::{Value, json};
use versa_apiextensions::{ResourceDefinition, set_defaults, validate_definition, validate_definition_update};
use versa_schema::{Error as FieldError, ErrorList, Path};

/// The finalizer that holds a deleted definition until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Reads a request-form document as a definition, defaulted. Decoding errors are field errors.
pub fn decode(obj: &Value) -> Result<ResourceDefinition, ErrorList> {
    let mut def = ResourceDefinition::from_document(obj).map_err(|e| {
        ErrorList(vec![FieldError::invalid(
            Path::none(),
            obj.get("kind").cloned().unwrap_or(Value::Null),
            e.to_string(),
        )])
    })?;
    set_defaults(&mut def);
    Ok(def)
}

/// Writes a definition back into `obj` (its typed form: unknown fields are gone).
fn encode(def: &ResourceDefinition, obj: &mut Value) {
    let mut doc = def.to_document();
    // Keep metadata exactly as the pipeline set it (the typed ObjectMeta would drop nothing
    // important, but the pipeline's server-owned fields are authoritative).
    if let (Some(meta), Some(d)) = (obj.get("metadata").cloned(), doc.as_object_mut()) {
        d.insert("metadata".into(), meta);
    }
    *obj = doc;
}

/// Create: default, validate, reset status.
pub fn admit_create(obj: &mut Value) -> Result<(), ErrorList> {
    let mut def = decode(obj)?;
    let stored: Vec<String> = def.storage_version().map(|v| vec![v.to_owned()]).unwrap_or_default();
    def.status = Some(serde_json::from_value(json!({"storedVersions": stored})).unwrap_or_default());
    let errs = validate_definition(&def);
    if !errs.is_empty() {
        return Err(errs);
    }
    encode(&def, obj);
    Ok(())
}

/// Update of the main resource or of `/status`: `new` already has the right `status` (the
/// REST layer copied it); defaults, validates against `old`, appends the storage version to
/// `storedVersions`.
pub fn admit_update(new: &mut Value, old: &Value, status_only: bool) -> Result<(), ErrorList> {
    let mut def = decode(new)?;
    let old_def = decode(old)?;
    if !status_only
        && let Some(storage) = def.storage_version().map(str::to_owned)
        && !def.stored_versions().contains(&storage)
    {
        let mut status = def.status.clone().unwrap_or_default();
        status.stored_versions.get_or_insert_with(Vec::new).push(storage);
        def.status = Some(status);
    }
    let errs = if status_only { validate_definition(&def) } else { validate_definition_update(&def, &old_def) };
    if !errs.is_empty() {
        return Err(errs);
    }
    encode(&def, new);
    Ok(())
}

/// Sets (or replaces) condition `type_` in a definition document's status.
pub fn set_condition(obj: &mut Value, type_: &str, status: &str, reason: &str, message: &str, now: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    let st = o.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let conds = st.as_object_mut().map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    let Some(Value::Array(conds)) = conds else { return };
    let new = json!({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now});
    match conds.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)) {
        Some(c) => {
            // lastTransitionTime only moves when the status changes.
            let same = c.get("status").and_then(Value::as_str) == Some(status);
            let ltt = c.get("lastTransitionTime").cloned();
            *c = new;
            if same && let Some(t) = ltt {
                c["lastTransitionTime"] = t;
            }
        }
        None => conds.push(new),
    }
}

/// Marks a definition for deletion: `deletionTimestamp`, the cleanup finalizer and
/// `Terminating=True InstanceDeletionPending`.
pub fn mark_deleted(obj: &mut Value, now: &str) {
    if let Some(meta) = crate::meta::meta_mut(obj) {
        meta.insert("deletionTimestamp".into(), json!(now));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Value::Array(f) = fins
            && !f.iter().any(|x| x == CLEANUP_FINALIZER)
        {
            f.push(json!(CLEANUP_FINALIZER));
        }
    }
    set_condition(
        obj,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
}
