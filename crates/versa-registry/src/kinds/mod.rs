//! Each kind's own write rules, chosen once per resource by [`of`] — the one table that maps a
//! resource to its kind — and asked by `crate::strategy::Strategy`, which runs the steps
//! every kind shares (identity, timestamps, `status` behind the status subresource,
//! `generation`, the deletion mark) and leaves what differs to the kind's [`KindRules`]:
//!
//! - [`custom`]: custom resources — the schema pipeline and the `x-kubernetes-validations`
//!   rules (the default of every hook);
//! - [`definitions`]: the definitions API (`resourcedefinitions`, and standalone's
//!   `customresourcedefinitions` face) — definition validation instead of a schema;
//! - [`namespace`], [`secret`], [`event`]: standalone's core kinds;
//! - [`admission`]: the `admissionregistration.k8s.io/v1` configuration kinds, decoded, defaulted
//!   and validated as kube-apiserver does.
//!
//! Adding a core kind is a file here with its [`KindRules`], its line in [`of`], and its
//! built-in definition (`crate::resource::Builtin`).

pub mod admission;
pub mod custom;
pub mod definitions;
pub mod event;
pub mod namespace;
pub mod patch;
pub mod secret;

use serde_json::Value;
use versa_schema::ErrorList;

use serde_json::json;

use crate::error::Result;
use crate::meta::{self, meta_mut};
use crate::resource::{Builtin, Flavor, Resource, Version};

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main endpoint (everything but `status` when the status subresource is on).
    Main,
    /// `/status`: only `status`.
    Status,
    /// A Namespace's `/finalize`: only `spec.finalizers`.
    Finalize,
}

/// What one kind does differently on a write. Every hook has the custom resources' behaviour
/// as its default.
pub trait KindRules: std::fmt::Debug + Send + Sync {
    /// What kube's decoder does to a request's object: defaults, pruning, metadata coercion.
    /// Returns the unknown fields it dropped (for `fieldValidation`).
    fn decode(&self, _res: &Resource, ver: &Version, obj: &mut Value) -> Result<Vec<String>> {
        Ok(custom::decode(ver, obj))
    }

    /// Whether objects carry `metadata.generation` (the core kinds have none).
    fn has_generation(&self) -> bool {
        true
    }

    /// Whether `status` is written only through `/status`, whatever the version says.
    fn status_is_a_subresource(&self) -> bool {
        false
    }

    /// The kind's own server-owned fields on create, after the shared ones.
    fn prepare_create(&self, _obj: &mut Value) {}

    /// The kind's own update rules for `part`, after the shared ones of the part.
    fn prepare_update(&self, _new: &mut Value, _old: &Value, _part: Part) {}

    /// Validation of the object to store (defaults and pruning again, then every rule).
    /// Returns the pruned field paths; ratcheted rule failures and the kind's warnings go to
    /// `warnings`.
    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit(res, ver, obj, old, part, warnings, |_, _| ErrorList::new())
    }

    /// Whether kube warns about finalizer names without a domain.
    fn warns_about_finalizer_names(&self) -> bool {
        true
    }

    /// Whether kube's garbage collector acts on these objects (`propagationPolicy`
    /// finalizers).
    fn collected(&self) -> bool {
        true
    }

    /// Marks an object that waits for its finalizers.
    fn mark(&self, obj: &mut Value) {
        mark_deleting(obj);
    }

    /// What strategic merge patch knows of the kind; `None`: it takes no strategic merge patch
    /// (custom resources and definitions, as in kube).
    fn strategic_merge(&self) -> Option<&'static patch::Schema> {
        None
    }

    /// Whether request bodies may also be Kubernetes protobuf (the core kinds: what client-go's
    /// typed clients send); custom resources take JSON and YAML only, as in kube.
    fn takes_protobuf(&self) -> bool {
        false
    }

    /// Whether an update without `resourceVersion` applies to whatever is stored (kube's
    /// `AllowUnconditionalUpdate` of the core kinds); custom resources and definitions need the
    /// version they were read at.
    fn allows_unconditional_update(&self) -> bool {
        false
    }

    /// Whether the objects are namespaces: a request on one carries its name as its namespace
    /// (kube's request info), and it has the `/finalize` subresource.
    fn is_namespace(&self) -> bool {
        false
    }

    /// Whether objects are converted between versions at the storage boundary (the definitions
    /// API has one version per face).
    fn converts(&self) -> bool {
        true
    }

    /// What the storage boundary does to a stored object after reading it, before conversion:
    /// the read-side schema steps at the version it is stored at.
    fn on_read(&self, res: &Resource, obj: &mut Value) {
        custom::on_read(res, obj);
    }

    /// What the storage boundary does to an object about to be stored, after conversion.
    fn on_write(&self, _obj: &mut Value) {}

    /// What a delete of `obj` (named `name`) does before the shared rules: proceed, or the
    /// kind's own answer (a Namespace is marked `Terminating`, an immortal one refused).
    fn delete(&self, _obj: &Value, _name: &str) -> Deletion {
        Deletion::Proceed
    }

    /// Whether a delete always marks the object first, finalizers or not (a definition waits
    /// for the cleanup of its objects).
    fn always_marked(&self) -> bool {
        false
    }

    /// Whether something besides `metadata.finalizers` still holds a marked object after an
    /// update (a Namespace's `spec.finalizers`).
    fn still_held(&self, _new: &Value) -> bool {
        false
    }

    /// Whether a dry run of a change to `old` (into `new`) judges the stored objects the change
    /// would meet (a definition's spec changed).
    fn judges_stored_objects(&self, _new: &Value, _old: &Value) -> bool {
        false
    }

    /// The resource (`group`, `plural`) whose stored objects must all be gone before `obj` may
    /// be deleted (a protected definition's), if any.
    fn deletion_guard(&self, _res: &Resource, _obj: &Value) -> Option<(String, String)> {
        None
    }
}

/// What a kind makes of a delete ([`KindRules::delete`]).
#[derive(Debug)]
pub enum Deletion {
    /// Store this marked object and answer it.
    Mark(Value),
    /// Answer this error.
    Refuse(crate::error::Error),
    /// Delete as any object.
    Proceed,
}

/// The rules of `res`'s kind: the registry's one table of kinds.
pub fn of(res: &Resource) -> &'static dyn KindRules {
    match (res.flavor, res.builtin) {
        (Flavor::Definitions, _) => &definitions::Definitions,
        (Flavor::Custom, None) => &custom::Custom,
        (Flavor::Custom, Some(Builtin::Namespace)) => &namespace::Namespace,
        (Flavor::Custom, Some(Builtin::Secret)) => &secret::Secret,
        (Flavor::Custom, Some(Builtin::Event)) => &event::Event,
        (Flavor::Custom, Some(Builtin::EventV1)) => &event::EventV1,
        (Flavor::Custom, Some(Builtin::Admission(kind))) => admission::rules(kind),
    }
}

/// kube's `markAsDeleting`: `deletionTimestamp` set unless it already is (to an earlier time),
/// `deletionGracePeriodSeconds: 0`, and `generation` moved on when the object is first marked.
pub fn mark_deleting(obj: &mut Value) {
    let Some(meta) = meta_mut(obj) else { return };
    if !meta.contains_key("deletionTimestamp") {
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
            meta.insert("generation".into(), json!(generation + 1));
        }
        meta.insert("deletionTimestamp".into(), json!(meta::now()));
    }
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
}
