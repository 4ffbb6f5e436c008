//! Namespaces (standalone): kube's namespace strategy, written in [`crate::builtin`] — created
//! `Active` with the `kubernetes` finalizer and the name label, `spec.finalizers` changed only
//! through `/finalize`, held after the last `metadata.finalizers` while `spec.finalizers`
//! remain; no `generation`.

use serde_json::Value;

use super::Part;
use super::patch::{Field, METADATA, PLAIN, Schema};
use super::{Deletion, KindRules};
use crate::builtin;

/// The rules of Namespaces.
#[derive(Debug)]
pub struct Namespace;

/// `corev1.Namespace`'s patch metadata (`k8s.io/api/core/v1/types.go`:
/// `NamespaceStatus.conditions` merge on `type`).
static NAMESPACE: Schema = Schema::new(&[METADATA, ("status", Field::Struct(&NAMESPACE_STATUS))]);
static NAMESPACE_STATUS: Schema = Schema::new(&[("conditions", Field::Merge { key: Some("type"), item: &PLAIN })]);

impl KindRules for Namespace {
    fn is_namespace(&self) -> bool {
        true
    }

    fn takes_protobuf(&self) -> bool {
        true
    }

    fn allows_unconditional_update(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&NAMESPACE)
    }

    fn has_generation(&self) -> bool {
        false
    }

    fn prepare_create(&self, obj: &mut Value) {
        builtin::prepare_create_namespace(obj);
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, part: Part) {
        match part {
            Part::Finalize => builtin::prepare_finalize(new, old),
            Part::Main | Part::Status => builtin::prepare_update_namespace(new, old),
        }
    }

    fn delete(&self, obj: &Value, name: &str) -> Deletion {
        builtin::delete_namespace(obj, name)
    }

    fn still_held(&self, new: &Value) -> bool {
        new.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }
}
