//! The rules of the core kinds standalone versa serves itself ([`crate::Builtin`]), as
//! kube-apiserver's strategies have them:
//!
//! - a Namespace is created `Active` with the `kubernetes` finalizer in `spec.finalizers` and
//!   the `kubernetes.io/metadata.name` label; updates keep `spec.finalizers` (only `/finalize`
//!   changes them) and `status`; the first delete marks it `Terminating`, and it goes once
//!   versa's namespace controller (`crate::namespaces`) has removed its content and the
//!   `kubernetes` finalizer. `default`, `kube-system` and `kube-public` may not be deleted.
//! - a Secret's `stringData` is merged into `data` (base64) and not kept, `type` defaults to
//!   `Opaque` and may not change, and an `immutable` Secret keeps its data — kube's conversion
//!   and validation of v1 Secrets.
//! - `events.k8s.io/v1` Events are the core `v1` Events under other field names, as kube
//!   converts them (`regarding` is `involvedObject`, `note` is `message`, …): stored in the core
//!   form, converted at the storage boundary ([`event_from_core`], [`event_to_core`]).

use serde_json::{Value, json};

use crate::error::Error;
use crate::kinds::Deletion;
use crate::meta::{self, meta_mut};

/// The finalizer of `spec.finalizers` that holds a namespace until its content is gone.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";
/// The label every namespace carries with its own name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Namespaces that exist from the start and may not be deleted (kube's list, kept by
/// NamespaceLifecycle in `versa-admission`).
pub use versa_admission::IMMORTAL_NAMESPACES as IMMORTAL;

/// A new namespace object as created with nothing but its name.
pub fn new_namespace(name: &str) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    prepare_create_namespace(&mut obj);
    if let Some(meta) = meta_mut(&mut obj) {
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(meta::now()));
    }
    obj
}

/// kube's namespace strategy on create: phase `Active`, the `kubernetes` finalizer, the name
/// label.
pub fn prepare_create_namespace(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    o.insert("status".into(), json!({"phase": "Active"}));
    let spec = o.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let finalizers = spec.as_object_mut().map(|s| s.entry("finalizers").or_insert_with(|| json!([])));
    if let Some(list) = finalizers.and_then(Value::as_array_mut)
        && !list.iter().any(|f| f == KUBERNETES_FINALIZER)
    {
        list.push(json!(KUBERNETES_FINALIZER));
    }
    name_label(obj);
}

/// kube's namespace strategy on update: `spec.finalizers` come from the old object (the main
/// endpoint and `/status` never change them); the name label stays.
pub fn prepare_update_namespace(new: &mut Value, old: &Value) {
    set_spec_finalizers(new, old.pointer("/spec/finalizers").cloned());
    name_label(new);
}

/// `/finalize`: only `spec.finalizers` change.
pub fn prepare_finalize(new: &mut Value, old: &Value) {
    let finalizers = new.pointer("/spec/finalizers").cloned();
    *new = old.clone();
    set_spec_finalizers(new, finalizers);
}

/// Sets (or, for `None`, removes) `spec.finalizers`.
fn set_spec_finalizers(obj: &mut Value, finalizers: Option<Value>) {
    let Some(o) = obj.as_object_mut() else { return };
    let spec = o.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        match finalizers {
            Some(f) => spec.insert("finalizers".into(), f),
            None => spec.remove("finalizers"),
        };
    }
}

fn name_label(obj: &mut Value) {
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
    if let Some(meta) = meta_mut(obj) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(NAME_LABEL.into(), json!(name));
        }
    }
}

/// What a delete of a namespace does before the generic delete: `None` when it should go on
/// as any delete (its content and `spec.finalizers` are gone); otherwise the answer — the
/// namespace marked `Terminating` (to be stored), or kube's refusal.
/// kube's namespace REST `Delete`, and NamespaceLifecycle's immortal namespaces.
pub fn delete_namespace(obj: &Value, name: &str) -> Deletion {
    if IMMORTAL.contains(&name) {
        return Deletion::Refuse(Error::Forbidden {
            message: format!("namespaces {name:?} is forbidden: this namespace may not be deleted"),
            details: Some(json!({"name": name, "kind": "namespaces"})),
        });
    }
    let spec_finalizers = obj.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    if obj.pointer("/metadata/deletionTimestamp").is_none() {
        let mut marked = obj.clone();
        if let Some(meta) = meta_mut(&mut marked) {
            meta.insert("deletionTimestamp".into(), json!(meta::now()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        if let Some(o) = marked.as_object_mut() {
            let status = o.entry("status").or_insert_with(|| json!({}));
            if let Some(status) = status.as_object_mut() {
                status.insert("phase".into(), json!("Terminating"));
            }
        }
        return Deletion::Mark(marked);
    }
    if spec_finalizers {
        return Deletion::Refuse(Error::Conflict {
            group: String::new(),
            resource: "namespaces".into(),
            name: name.to_owned(),
            why: Some("The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.".into()),
        });
    }
    Deletion::Proceed
}

/// `(events.k8s.io/v1 name, core v1 name)` of the fields the two Event versions name apart.
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// A stored (core v1) Event as an `events.k8s.io/v1` Event.
pub fn event_from_core(obj: &mut Value) {
    rename_event_fields(obj, false, "events.k8s.io/v1");
}

/// An `events.k8s.io/v1` Event as the core v1 Event it is stored as.
pub fn event_to_core(obj: &mut Value) {
    rename_event_fields(obj, true, "v1");
}

fn rename_event_fields(obj: &mut Value, to_core: bool, api_version: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    for (v1, core) in EVENT_FIELDS {
        let (from, to) = if to_core { (v1, core) } else { (core, v1) };
        if let Some(v) = o.remove(from) {
            o.insert(to.to_owned(), v);
        }
    }
    o.insert("apiVersion".into(), json!(api_version));
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
pub fn validate_secret_update(new: &Value, old: &Value) -> versa_schema::ErrorList {
    use versa_schema::{Error as FieldError, ErrorType, Path};
    let mut errs = versa_schema::ErrorList::new();
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
