//! Namespaces (standalone, `v1`): kube's namespace strategy — created `Active` with the
//! `kubernetes` finalizer in `spec.finalizers` and the `kubernetes.io/metadata.name` label;
//! updates keep `spec.finalizers` (only `/finalize` changes them) and the label; the first
//! delete marks it `Terminating`, and it goes once versa's namespace controller has removed its
//! content and the `kubernetes` finalizer; `default`, `kube-system` and `kube-public` may not
//! be deleted. No `generation`.

use serde_json::{Value, json};

use super::patch::{Field, METADATA, PLAIN, Schema};
use super::{CoreKind, Deletion, KindRules, Part, core_definition};
use crate::error::Error;
use crate::meta::{self, meta_mut};
use crate::resource::Builtin;

/// The kind's identity and built-in definition.
pub const BUILTIN: Builtin = Builtin::new("namespaces", definition);

/// Its registration.
pub static KIND: CoreKind = CoreKind { builtin: BUILTIN, rules: &Namespace };

fn definition() -> Value {
    core_definition(
        BUILTIN.name(),
        "",
        "Cluster",
        json!({"plural": "namespaces", "singular": "namespace", "kind": "Namespace", "shortNames": ["ns"]}),
        json!({
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Status", "type": "string", "jsonPath": ".status.phase"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "finalizers": {"type": "array", "items": {"type": "string"}}}},
                "status": {"type": "object", "properties": {
                    "phase": {"type": "string"},
                    "conditions": {"type": "array", "items": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}}}}},
        }),
    )
}

/// The rules of Namespaces.
#[derive(Debug)]
pub struct Namespace;

/// `corev1.Namespace`'s patch metadata (`k8s.io/api/core/v1/types.go`:
/// `NamespaceStatus.conditions` merge on `type`).
static NAMESPACE: Schema = Schema::new(&[METADATA, ("status", Field::Struct(&NAMESPACE_STATUS))]);
static NAMESPACE_STATUS: Schema = Schema::new(&[("conditions", Field::Merge { key: Some("type"), item: &PLAIN })]);

impl KindRules for Namespace {
    fn is_core(&self) -> bool {
        true
    }

    fn is_namespace(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&NAMESPACE)
    }

    fn prepare_create(&self, obj: &mut Value) {
        prepare_create_namespace(obj);
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, part: Part) {
        match part {
            Part::Finalize => prepare_finalize(new, old),
            Part::Main | Part::Status => prepare_update_namespace(new, old),
        }
    }

    fn delete(&self, obj: &Value, name: &str) -> Deletion {
        delete_namespace(obj, name)
    }

    fn still_held(&self, new: &Value) -> bool {
        new.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }
}

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
