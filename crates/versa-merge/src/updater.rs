//! Ownership bookkeeping for one operation: structured-merge-diff's `Updater`.
//!
//! An **update** (create, update, patch) takes every field it adds or changes from whoever
//! owned it, and every field it removes is released by all owners. An **apply** merges the
//! configuration into the live object, makes the applier own exactly the configuration's
//! fields, removes the fields it applied last time and no longer applies unless someone else
//! owns them, and then fails with conflicts if it changed or added a field another manager
//! owns — unless forced, in which case ownership moves to the applier. A manager applying the
//! same value as the owner is no conflict: both then share the field.
//!
//! The removal follows structured-merge-diff's three steps (remove all the applier's old
//! fields with their struct parents; add back whatever anyone still owns; add back whatever
//! the applier did not own before), so parents and unowned neighbours end up exactly where kube
//! leaves them. Every owner here is at the request's apiVersion: objects are not converted to
//! the versions other entries were written in (see the crate documentation).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::compare::{Comparison, compare};
use crate::conflict::{Conflict, Conflicts};
use crate::field_set::{ensure_named_fields_are_members, to_field_set};
use crate::managed::{ManagerId, VersionedSet};
use crate::merge::merge;
use crate::remove::remove_items;
use crate::schema::Ty;
use crate::set::FieldSet;
use crate::validate::ValidationErrors;
use crate::value::equals;

/// Owners by identifier.
pub(crate) type Fields = BTreeMap<String, VersionedSet>;

/// Why an operation failed inside the updater.
#[derive(Debug)]
pub(crate) enum UpdaterError {
    Conflicts(Conflicts),
    /// What failed (`failed to merge config`, ...) and why.
    Invalid(&'static str, ValidationErrors),
}

pub(crate) struct Updater<'s> {
    pub ty: Ty<'s>,
    /// kube's reset fields: fields the operation's strategy owns, never tracked.
    pub ignore: Option<&'s FieldSet>,
}

impl Updater<'_> {
    /// Updates every owner but `workflow` for the change from `live` to `new`.
    fn update_managers(
        &self,
        live: &Value,
        new: &Value,
        managers: &mut Fields,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, UpdaterError> {
        let mut cmp = compare(self.ty, live, new).map_err(|e| UpdaterError::Invalid("failed to compare objects", e))?;
        if let Some(ig) = self.ignore {
            cmp.exclude(ig);
        }
        let changed = cmp.modified.union(&cmp.added);
        let mut conflicts: BTreeMap<String, FieldSet> = BTreeMap::new();
        for (manager, vs) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let c = vs.set.intersection(&changed);
            if !c.is_empty() {
                conflicts.insert(manager.clone(), c);
            }
        }
        if !force && !conflicts.is_empty() {
            let mut list = Vec::new();
            for (manager, set) in &conflicts {
                let who = ManagerId::from_identifier(manager).unwrap_or_else(|| ManagerId {
                    manager: manager.clone(),
                    operation: String::new(),
                    update_api_version: None,
                    subresource: String::new(),
                });
                list.extend(set.paths().into_iter().map(|path| Conflict { manager: who.clone(), path }));
            }
            return Err(UpdaterError::Conflicts(Conflicts(list)));
        }
        let removed = !cmp.removed.is_empty();
        for (manager, vs) in managers.iter_mut() {
            if manager == workflow {
                continue;
            }
            if let Some(c) = conflicts.get(manager) {
                vs.set = vs.set.difference(c);
            }
            if removed {
                vs.set = vs.set.difference(&cmp.removed);
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(cmp)
    }

    /// A non-apply change from `live` to `new` by `manager` (an identifier).
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        managers: &mut Fields,
        manager: &str,
    ) -> Result<(), UpdaterError> {
        let cmp = self.update_managers(live, new, managers, manager, true)?;
        let previous = managers.get(manager).map(|vs| vs.set.clone()).unwrap_or_default();
        let mut set = previous.difference(&cmp.removed).union(&cmp.modified).union(&cmp.added);
        if let Some(ig) = self.ignore {
            set = set.recursive_difference(ig);
        }
        if set.is_empty() {
            managers.remove(manager);
        } else {
            managers
                .insert(manager.to_string(), VersionedSet { set, api_version: version.to_string(), applied: false });
        }
        Ok(())
    }

    /// Applies `config` to `live` for `manager`. `None` when the object does not change.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        managers: &mut Fields,
        manager: &str,
        force: bool,
    ) -> Result<Option<Value>, UpdaterError> {
        let merged = merge(self.ty, live, config).map_err(|e| UpdaterError::Invalid("failed to merge config", e))?;
        let last = managers.get(manager).cloned();
        let mut set = to_field_set(self.ty, config);
        if let Some(ig) = self.ignore {
            set = set.recursive_difference(ig);
        }
        managers.insert(manager.to_string(), VersionedSet { set, api_version: version.to_string(), applied: true });
        let new = match last {
            Some(last) if !last.set.is_empty() => self.prune(&merged, managers, &last.set),
            _ => merged,
        };
        self.update_managers(live, &new, managers, manager, force)?;
        Ok(if equals(live, &new) { None } else { Some(new) })
    }

    /// Removes from `merged` what the applier owned last time (`last`) and nobody owns now.
    fn prune(&self, merged: &Value, managers: &Fields, last: &FieldSet) -> Value {
        let named = |s: &FieldSet| ensure_named_fields_are_members(s, self.ty);
        let last = named(last);
        // 1. Everything the applier owned before, struct parents included, goes.
        let pruned = remove_items(self.ty, merged, &last);
        // 2. What anyone (the applier's new configuration included) owns comes back.
        let managed = managers.values().fold(FieldSet::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = named(&to_field_set(self.ty, merged));
        let pruned_set = named(&to_field_set(self.ty, &pruned));
        let drop = merged_set.difference(&pruned_set.union(&named(&managed)));
        let pruned = remove_items(self.ty, merged, &drop);
        // 3. Only what the applier owned before may be removed at all.
        let pruned_set = named(&to_field_set(self.ty, &pruned));
        remove_items(self.ty, merged, &merged_set.difference(&pruned_set).intersection(&last))
    }
}
