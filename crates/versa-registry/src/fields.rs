//! Field management, the strategy's part of it: who owns which field of an object
//! (`metadata.managedFields`), recorded on every create, update and patch as kube-apiserver's
//! field manager records it ([`Strategy::track`]), and server-side apply's merge
//! ([`Strategy::apply`]).
//!
//! The algorithms — field sets, merging by the schema, conflicts, the caps and resets of
//! `managedFields` — are `versa-merge`'s. This module gives them what kube's handlers give the
//! field manager: the manager and the subresource an entry is written for, the fields each
//! endpoint resets (kube's `GetResetFields`: `status` on the main endpoint of a resource with a
//! status subresource, `spec` on `/status`), which nobody owns through that endpoint, the
//! version's schema and the resource's other versions ([`MergeVersions`]). Who the manager is
//! (`fieldManager`, the user agent) is the HTTP side's to say.
//!
//! Ownership is computed on the object as admitted (defaulted and pruned), so it never names a
//! field that is not stored.

use std::sync::Arc;

use serde_json::{Value, json};
use versa_merge::Versions;
use versa_merge::{ApplyError, FieldPath, FieldSet, Options};
use versa_schema::Structural;

use crate::error::{Error, Result};
use crate::meta;
use crate::storage::Observer;
use crate::strategy::Strategy;
use crate::versions::{Conversions, MergeVersions};

/// Who writes, and through which endpoint.
#[derive(Debug, Clone)]
pub struct Manager {
    /// The manager's name (`fieldManager` or the user agent's product).
    pub name: String,
    /// `status`, `scale`, or empty for the main resource.
    pub subresource: &'static str,
}

impl Strategy<'_> {
    /// Records `manager`'s change from `live` (`None` on create) to `new` in `new`'s
    /// `managedFields`. When the bookkeeping fails (kube logs it as "should not happen"), the
    /// object's `managedFields` are dropped rather than stored wrong, as kube does, and the
    /// failure is returned for the log. A webhook's conversions are made through `conversions`
    /// between runs of the merge ([`Conversions::settle`]).
    pub async fn track(
        &self,
        manager: &Manager,
        live: Option<&Value>,
        new: &mut Value,
        conversions: &Conversions,
        observer: &dyn Observer,
    ) -> Result<()> {
        let op = Operation::new(self, manager);
        let versions = MergeVersions::new(self.res, conversions, observer);
        // A create is compared with the kind's new, empty object.
        let empty = live.is_none().then(|| self.rules().empty_object()).flatten().map(|mut empty| {
            for field in ["apiVersion", "kind"] {
                empty[field] = new.get(field).cloned().unwrap_or_default();
            }
            empty
        });
        let live = live.or(empty.as_ref());
        let sources: Vec<&Value> = live.into_iter().chain([&*new]).collect();
        conversions.foresee(self.res, &op.api_version, &sources, &sources);
        let update = || versa_merge::update(live, new, &op.options(manager, &versions));
        let updated = conversions.settle(self.res, observer, update).await;
        match updated.and_then(|u| u.map_err(|e| Error::internal(format!("managedFields could not be updated: {e}")))) {
            Ok(outcome) => {
                *new = outcome.object;
                Ok(())
            }
            Err(e) => {
                if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                }
                Err(e)
            }
        }
    }

    /// Server-side apply of `config` by `manager` to `live` (at this version, with its
    /// `managedFields`; `None` when creating): the merged object with its new `managedFields`.
    /// Conflicts are [`Error::ApplyConflicts`]; a configuration that does not fit the schema is
    /// kube's `failed to create typed patch object (...)`.
    ///
    /// A webhook's conversions are answered from `conversions`: the caller runs this through
    /// [`Conversions::settle`] (the store does, around its `UpdatedObject`), which makes the
    /// ones a run asked for and runs it again. Without `managedFields` at another version
    /// nothing is converted.
    pub fn apply(
        &self,
        manager: &Manager,
        live: Option<&Value>,
        config: &Value,
        force: bool,
        conversions: &Conversions,
        observer: &dyn Observer,
    ) -> Result<Value> {
        let empty = json!({"apiVersion": self.res.api_version(&self.ver.name), "kind": self.res.kind});
        let live = live.unwrap_or(&empty);
        let managed = versa_merge::ManagedFields::from_object(live)
            .map_err(|e| Error::Failed(format!("failed to decode managed fields: {e}")))?
            .unwrap_or_default();
        let op = Operation::new(self, manager);
        let versions = MergeVersions::new(self.res, conversions, observer);
        let outcome = versa_merge::apply(live, config, &managed, &op.options(manager, &versions), force).map_err(
            |e| match e {
                ApplyError::Conflicts(conflicts) => Error::ApplyConflicts(conflicts),
                ApplyError::ManagedFieldsInPatch => Error::BadRequest(e.to_string()),
                ApplyError::InvalidPatch(errs) => {
                    Error::Failed(format!("failed to create typed patch object ({}): {errs}", self.identity(config)))
                }
                other => Error::Failed(other.to_string()),
            },
        )?;
        Ok(outcome.object)
    }

    /// kube's `objectGVKNN` of an applied object: `namespace/name; group/version, Kind=Kind`.
    fn identity(&self, obj: &Value) -> String {
        let meta = |k: &str| obj.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or("").to_owned();
        let (res, version) = (self.res, &self.ver.name);
        format!("{}/{}; {}/{version}, Kind={}", meta("namespace"), meta("name"), res.group, res.kind)
    }

    /// The fields an endpoint resets, which its writers never own (kube's `GetResetFields` of
    /// the custom resource strategies).
    fn reset_fields(&self, subresource: &str) -> Option<FieldSet> {
        let has_status = Strategy::new(self.res, self.ver).has_status_subresource();
        let field = match subresource {
            "" if has_status => "status",
            "status" => "spec",
            _ => return None,
        };
        Some(FieldSet::from_paths(&[FieldPath::fields(&[field])]))
    }
}

/// What one operation needs besides the objects: its version, time and reset fields, owned here
/// so that [`Operation::options`] can lend them to `versa-merge`.
struct Operation {
    api_version: String,
    schema: Arc<Structural>,
    now: String,
    reset: Option<FieldSet>,
}

impl Operation {
    fn new(strategy: &Strategy<'_>, manager: &Manager) -> Operation {
        Operation {
            api_version: strategy.res.api_version(&strategy.ver.name),
            schema: strategy.ver.merge_schema(),
            now: meta::now(),
            reset: strategy.reset_fields(manager.subresource),
        }
    }

    fn options<'a>(&'a self, manager: &'a Manager, versions: &'a MergeVersions<'a>) -> Options<'a> {
        Options {
            schema: &self.schema,
            manager: &manager.name,
            api_version: &self.api_version,
            subresource: manager.subresource,
            now: &self.now,
            reset_fields: self.reset.as_ref(),
            versions: versions.offered().then_some(versions as &dyn Versions),
        }
    }
}
