//! Namespaces (standalone): kube's namespace strategy, written in [`crate::builtin`] — created
//! `Active` with the `kubernetes` finalizer and the name label, `spec.finalizers` changed only
//! through `/finalize`, held after the last `metadata.finalizers` while `spec.finalizers`
//! remain; no `generation`.

use serde_json::Value;

use super::Part;
use super::{Deletion, KindRules};
use crate::builtin;

/// The rules of Namespaces.
#[derive(Debug)]
pub struct Namespace;

impl KindRules for Namespace {
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
