//! The write strategy: what happens to an object between a decoded request and storage, for
//! every resource and every writer (the REST verbs, server-side apply, `versa validate`) — the
//! shape of kube's `rest.RESTCreateStrategy`/`RESTUpdateStrategy` and apiextensions-apiserver's
//! `customResourceStrategy`, in one place:
//!
//! 1. server-owned fields and subresource rules ([`Strategy::prepare_create`],
//!    [`Strategy::prepare_update`]): identity and timestamps, `status` behind the status
//!    subresource, the core kinds' own rules;
//! 2. admission of the object: first what kube's decoder does ([`Strategy::decode`]: default →
//!    prune → coerce metadata, with `fieldValidation` deciding what unknown and duplicate
//!    fields cost, [`FieldValidation`]); then — after the server's mutating admission, if any
//!    — [`Strategy::validate`]: the schema pipeline again and validation (schema, list types,
//!    metadata, update rules, finalizers, scale paths, the `x-kubernetes-validations` CEL
//!    rules, with errors about unchanged values ratcheted on updates, KEP-4008); for the
//!    definitions API, definition validation;
//! 3. `generation` ([`Strategy::set_generation`]);
//! 4. deletion: finalizers set by `propagationPolicy` ([`Strategy::finalizers_for_deletion`]),
//!    and the mark of an object that waits for its finalizers ([`mark_deleting`]).
//!
//! Nothing here reads or writes storage: the caller reads the current object and stores the
//! result through the [`crate::storage::Boundary`].

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::kinds::custom::finalizer_names;
use crate::kinds::{self, KindRules};
use crate::meta::{self, meta_mut};
use crate::resource::{Resource, Version};

pub use crate::kinds::{Deletion, Part, mark_deleting};

/// What `fieldValidation` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    /// The query parameter's value; kube's refusal for anything else.
    pub fn parse(value: &str) -> Result<FieldValidation> {
        match value {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(Error::BadRequest(format!(
                "fieldValidation: Invalid value: {other:?}: fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\""
            ))),
        }
    }
}

/// `propagationPolicy` and `orphanDependents` of a delete: how dependents are collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Propagation {
    /// `orphanDependents` (deprecated, still honoured by kube).
    pub orphan_dependents: Option<bool>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
    pub policy: Option<String>,
}

/// The finalizer that makes kube's garbage collector orphan an object's dependents before the
/// object goes (`metav1.FinalizerOrphanDependents`).
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer that makes it delete the dependents first (`metav1.FinalizerDeleteDependents`).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// What a write's decoding left for admission to judge: the body's duplicate fields, and what
/// `fieldValidation` makes of them and of unknown ones.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checks<'a> {
    pub field_validation: FieldValidation,
    pub duplicates: &'a [String],
}

/// One resource's write rules at one of its versions.
#[derive(Debug, Clone, Copy)]
pub struct Strategy<'a> {
    pub res: &'a Resource,
    pub ver: &'a Version,
}

impl<'a> Strategy<'a> {
    pub fn new(res: &'a Resource, ver: &'a Version) -> Strategy<'a> {
        Strategy { res, ver }
    }

    /// The rules of the resource's kind.
    pub(crate) fn rules(&self) -> &'static dyn KindRules {
        kinds::of(self.res)
    }

    /// Whether `status` is written only through `/status`: the version's subresource, or the
    /// kind's rule.
    pub fn has_status_subresource(&self) -> bool {
        self.ver.status || self.rules().status_is_a_subresource()
    }

    /// The strategy at `version` (served or not), if the resource has it.
    pub fn at(res: &'a Resource, version: &str) -> Option<Strategy<'a>> {
        res.version(version).map(|ver| Strategy { res, ver })
    }

    /// A create, whole, for writers without admission (tests, `versa validate`): [`Strategy::decode`],
    /// [`Strategy::prepare_create`], [`Strategy::validate`]. The server runs the same steps with
    /// `managedFields` and mutating admission between the first two.
    pub fn create(&self, obj: &mut Value, checks: Checks<'_>, warnings: &mut Vec<String>) -> Result<()> {
        self.decode(obj, checks, warnings)?;
        self.prepare_create(obj);
        self.validate(obj, None, Part::Main, warnings)
    }

    /// An update of `old` through `part`, whole: [`Strategy::decode`],
    /// [`Strategy::prepare_update`], [`Strategy::validate`], then [`Strategy::set_generation`].
    pub fn update(
        &self,
        new: &mut Value,
        old: &Value,
        part: Part,
        checks: Checks<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        self.decode(new, checks, warnings)?;
        self.prepare_update(new, old, part);
        self.validate(new, Some(old), part, warnings)?;
        self.set_generation(new, old, part);
        Ok(())
    }

    /// What kube's decoder does to a request's object before anything else: defaults, prunes
    /// unknown fields and coerces metadata (custom resources), and reports the unknown and
    /// duplicate fields as `fieldValidation` says — warnings (`Warn`), kube's strict decoding
    /// error (`Strict`), or nothing (`Ignore`). No validation: that comes after mutating
    /// admission ([`Strategy::validate`]), so that a defaulting webhook may still fill in a
    /// required field.
    pub fn decode(&self, obj: &mut Value, checks: Checks<'_>, warnings: &mut Vec<String>) -> Result<()> {
        let unknown = self.rules().decode(self.res, self.ver, obj)?;
        self.report_fields(checks.field_validation, checks.duplicates, &unknown, warnings)
    }

    /// Validation of the object to store, after the server-owned fields and mutating admission:
    /// [`Strategy::admit`] (defaults and pruning again — what a webhook added that the schema
    /// does not know is dropped — then the schema, CEL, update and finalizer rules), and kube's
    /// warnings about finalizer names.
    pub fn validate(&self, obj: &mut Value, old: Option<&Value>, part: Part, warnings: &mut Vec<String>) -> Result<()> {
        self.admit(obj, old, part, warnings)?;
        if self.rules().warns_about_finalizer_names() {
            warn_finalizer_names(obj, old, warnings);
        }
        Ok(())
    }

    /// Server-owned fields on create, and the subresource rules.
    pub fn prepare_create(&self, obj: &mut Value) {
        if let Some(meta) = meta_mut(obj) {
            for field in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                meta.remove(field);
            }
            meta.insert("uid".into(), json!(meta::new_uid()));
            meta.insert("creationTimestamp".into(), json!(meta::now()));
            meta.insert("generation".into(), json!(1));
        }
        let rules = self.rules();
        if self.has_status_subresource()
            && let Some(o) = obj.as_object_mut()
        {
            o.remove("status");
        }
        if !rules.has_generation()
            && let Some(meta) = meta_mut(obj)
        {
            meta.remove("generation");
        }
        rules.prepare_create(obj);
    }

    /// Update rules: `/status` takes only `status` (and managedFields) from the request; the
    /// main endpoint keeps the old `status` when the status subresource is on; identity and
    /// timestamps come from the old object.
    pub fn prepare_update(&self, new: &mut Value, old: &Value, part: Part) {
        match part {
            Part::Status => {
                let status = new.get("status").cloned();
                let managed = new.pointer("/metadata/managedFields").cloned();
                *new = old.clone();
                if let Some(o) = new.as_object_mut() {
                    match status {
                        Some(s) => o.insert("status".into(), s),
                        None => o.remove("status"),
                    };
                }
                if let Some(meta) = meta_mut(new) {
                    match managed {
                        Some(m) => meta.insert("managedFields".into(), m),
                        None => meta.remove("managedFields"),
                    };
                }
            }
            Part::Main if self.has_status_subresource() => {
                if let Some(o) = new.as_object_mut() {
                    match old.get("status") {
                        Some(s) => o.insert("status".into(), s.clone()),
                        None => o.remove("status"),
                    };
                }
            }
            Part::Main | Part::Finalize => {}
        }
        self.rules().prepare_update(new, old, part);
        let old_meta = old.get("metadata");
        if let Some(meta) = meta_mut(new) {
            for field in ["creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
                match old_meta.and_then(|m| m.get(field)) {
                    Some(v) => meta.insert(field.into(), v.clone()),
                    None => meta.remove(field),
                };
            }
            if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty)
                && let Some(uid) = old_meta.and_then(|m| m.get("uid"))
            {
                meta.insert("uid".into(), uid.clone());
            }
            meta.remove("selfLink");
        }
    }

    /// Default → prune → validate → `x-kubernetes-validations` at this version (custom
    /// resources), or definition validation. Returns the pruned field paths; ratcheted rule
    /// failures go to `warnings`.
    pub fn admit(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        self.rules().admit(self.res, self.ver, obj, old, part, warnings)
    }

    /// Reports duplicate and unknown fields as `mode` says.
    fn report_fields(
        &self,
        mode: FieldValidation,
        duplicates: &[String],
        unknown: &[String],
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let problems: Vec<String> = duplicates
            .iter()
            .map(|d| format!("duplicate field {d:?}"))
            .chain(unknown.iter().map(|u| format!("unknown field {u:?}")))
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        match mode {
            FieldValidation::Ignore => Ok(()),
            FieldValidation::Warn => {
                warnings.extend(problems);
                Ok(())
            }
            FieldValidation::Strict => {
                let kind = &self.res.kind;
                Err(Error::BadRequest(format!(
                    "{kind} in version {:?} cannot be handled as a {kind}: strict decoding error: {}",
                    self.ver.name,
                    problems.join(", ")
                )))
            }
        }
    }

    /// Bumps `generation` when anything outside `metadata` (and, behind the status
    /// subresource, `status`) changed; `/status` writes never bump it, nor do the core kinds
    /// have one.
    pub fn set_generation(&self, new: &mut Value, old: &Value, part: Part) {
        if part == Part::Status || !self.rules().has_generation() {
            return;
        }
        let outside_meta = |v: &'_ Value| -> Vec<(String, Value)> {
            v.as_object()
                .map(|o| {
                    o.iter().filter(|(k, _)| k.as_str() != "metadata").map(|(k, v)| (k.clone(), v.clone())).collect()
                })
                .unwrap_or_default()
        };
        if outside_meta(new) != outside_meta(old) {
            let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0) + 1;
            if let Some(meta) = meta_mut(new) {
                meta.insert("generation".into(), json!(generation));
            }
        }
    }

    /// Whether an update of a marked object removes what held it: the last finalizer (and, for
    /// a namespace, its `spec.finalizers` — kube's `ShouldDeleteDuringUpdate`). Then the
    /// object goes instead of being stored.
    pub fn deleted_by_update(&self, new: &Value, old: &Value) -> bool {
        let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
        let empty = |path: &str| new.pointer(path).and_then(Value::as_array).is_none_or(|f| f.is_empty());
        deleting && empty("/metadata/finalizers") && !self.rules().still_held(new)
    }

    /// The finalizers an object gets when deleted with `propagation`, if they change — kube's
    /// `deletionFinalizersForGarbageCollection`. The explicit options win (`orphanDependents`,
    /// then `propagationPolicy`), else a garbage-collection finalizer the object already has;
    /// custom resources default to `Background`, which needs no finalizer. Without a garbage
    /// collector (`collected` false: nothing would ever remove these finalizers) nothing
    /// changes, as in a kube-apiserver whose garbage collection is disabled.
    pub fn finalizers_for_deletion(
        &self,
        obj: &Value,
        propagation: &Propagation,
        collected: bool,
    ) -> Option<Vec<Value>> {
        if !collected || !self.rules().collected() {
            return None;
        }
        let current: Vec<Value> =
            obj.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        let has = |name: &str| current.iter().any(|f| f == name);
        let from_finalizers = if has(ORPHAN_FINALIZER) {
            Some("Orphan")
        } else if has(FOREGROUND_FINALIZER) {
            Some("Foreground")
        } else {
            None
        };
        let policy = match (propagation.orphan_dependents, propagation.policy.as_deref()) {
            (Some(true), _) => "Orphan",
            (Some(false), _) => "Background",
            (None, Some(p)) => p,
            (None, None) => from_finalizers.unwrap_or("Background"),
        };
        let mut wanted: Vec<Value> =
            current.iter().filter(|f| **f != ORPHAN_FINALIZER && **f != FOREGROUND_FINALIZER).cloned().collect();
        match policy {
            "Orphan" => wanted.push(json!(ORPHAN_FINALIZER)),
            "Foreground" => wanted.push(json!(FOREGROUND_FINALIZER)),
            _ => {}
        }
        let as_set = |v: &[Value]| v.iter().filter_map(Value::as_str).map(str::to_owned).collect::<BTreeSet<_>>();
        (as_set(&current) != as_set(&wanted)).then_some(wanted)
    }

    /// What the kind makes of a delete of `obj` before the shared rules ([`Deletion`]).
    /// Whether a dry run of this change judges the stored objects it would meet
    /// ([`KindRules::judges_stored_objects`]).
    pub fn judges_stored_objects(&self, new: &Value, old: &Value) -> bool {
        self.rules().judges_stored_objects(new, old)
    }

    /// The resource whose stored objects must be gone before `obj` may be deleted
    /// ([`KindRules::deletion_guard`]).
    pub fn deletion_guard(&self, obj: &Value) -> Option<(String, String)> {
        self.rules().deletion_guard(self.res, obj)
    }

    pub fn deletion(&self, obj: &Value, name: &str) -> Deletion {
        self.rules().delete(obj, name)
    }

    /// Whether a delete marks `obj` (with its finalizers as they will be) instead of removing
    /// it: it has finalizers, or its kind always waits.
    pub fn marked_on_delete(&self, obj: &Value) -> bool {
        self.rules().always_marked()
            || obj.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
    }

    /// Marks an object that waits for finalizers: the definitions API's own mark (condition
    /// `Terminating`), kube's [`mark_deleting`] otherwise.
    pub fn mark(&self, obj: &mut Value) {
        self.rules().mark(obj);
    }
}

/// kube warns about finalizers without a domain (`example.com/name`) that an object gains.
fn warn_finalizer_names(obj: &Value, old: Option<&Value>, warnings: &mut Vec<String>) {
    let before = old.map(finalizer_names).unwrap_or_default();
    for f in finalizer_names(obj) {
        if !f.contains('/') && !before.contains(&f) {
            warnings.push(format!(
                "metadata.finalizers: {f:?}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
}
