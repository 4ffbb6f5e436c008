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
//! leaves them.
//!
//! Owners are sets of fields *at the version their entry was written in*. With [`Versions`],
//! an owner at another version is judged on the objects converted to its version, with its
//! version's schema (conflicts and removals name its own paths), and an applier whose last
//! apply was at another version is pruned at that version — as structured-merge-diff does
//! with its converter. Without it (or for a version it cannot convert to), every owner is
//! judged at the request's version: exact when the versions share their field paths.

use std::borrow::Cow;
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
use crate::versions::Versions;

/// Owners by identifier.
pub(crate) type Fields = BTreeMap<String, VersionedSet>;

/// Why an operation failed inside the updater.
#[derive(Debug)]
pub(crate) enum UpdaterError {
    Conflicts(Conflicts),
    /// An object could not be converted to a version an owner wrote in.
    Conversion(String, crate::versions::ConvertError),
    /// What failed (`failed to merge config`, ...) and why.
    Invalid(&'static str, ValidationErrors),
}

pub(crate) struct Updater<'s> {
    pub ty: Ty<'s>,
    /// kube's reset fields: fields the operation's strategy owns, never tracked.
    pub ignore: Option<&'s FieldSet>,
    /// The request's apiVersion (the version `ty` describes).
    pub version: &'s str,
    /// The objects at other versions, when the caller can convert them.
    pub versions: Option<&'s dyn Versions>,
}

/// An object at one version, with the type that version gives it.
struct AtVersion<'s, 'v> {
    value: Cow<'v, Value>,
    ty: Ty<'s>,
}

impl<'s> Updater<'s> {
    /// `obj`, which is at version `from`, at version `to`; `None` when `to` cannot be reached
    /// (no converter, or a version it does not know).
    fn at<'v>(&self, obj: &'v Value, from: &str, to: &str) -> Result<Option<AtVersion<'s, 'v>>, UpdaterError> {
        let ty = if to == self.version {
            self.ty
        } else {
            let Some(schema) = self.versions.and_then(|v| v.schema(to)) else { return Ok(None) };
            Ty::root(schema)
        };
        if from == to {
            return Ok(Some(AtVersion { value: Cow::Borrowed(obj), ty }));
        }
        let Some(versions) = self.versions else { return Ok(None) };
        let value = versions.convert(obj, to).map_err(|e| UpdaterError::Conversion(to.to_string(), e))?;
        Ok(Some(AtVersion { value: Cow::Owned(value), ty }))
    }

    /// The comparison of `live` and `new` (both at the request version) at `version`; `None`
    /// when that version cannot be reached.
    fn compare_at(&self, live: &Value, new: &Value, version: &str) -> Result<Option<Comparison>, UpdaterError> {
        let (Some(l), Some(n)) = (self.at(live, self.version, version)?, self.at(new, self.version, version)?) else {
            return Ok(None);
        };
        let mut cmp =
            compare(l.ty, &l.value, &n.value).map_err(|e| UpdaterError::Invalid("failed to compare objects", e))?;
        if let Some(ig) = self.ignore {
            cmp.exclude(ig);
        }
        Ok(Some(cmp))
    }

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
        // Each owner is judged at its own version (the request's comparison where it cannot be).
        let mut at_versions: BTreeMap<String, Comparison> = BTreeMap::new();
        for vs in managers.values() {
            if vs.api_version != self.version
                && !at_versions.contains_key(&vs.api_version)
                && let Some(c) = self.compare_at(live, new, &vs.api_version)?
            {
                at_versions.insert(vs.api_version.clone(), c);
            }
        }
        let cmp_of = |vs: &VersionedSet| at_versions.get(&vs.api_version).unwrap_or(&cmp);
        let mut conflicts: BTreeMap<String, FieldSet> = BTreeMap::new();
        for (manager, vs) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let c = cmp_of(vs);
            let c = vs.set.intersection(&c.modified.union(&c.added));
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
        for (manager, vs) in managers.iter_mut() {
            if manager == workflow {
                continue;
            }
            if let Some(c) = conflicts.get(manager) {
                vs.set = vs.set.difference(c);
            }
            let removed = &at_versions.get(&vs.api_version).unwrap_or(&cmp).removed;
            if !removed.is_empty() {
                vs.set = vs.set.difference(removed);
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
            Some(last) if !last.set.is_empty() => self.prune(&merged, managers, &last)?,
            _ => merged,
        };
        self.update_managers(live, &new, managers, manager, force)?;
        Ok(if equals(live, &new) { None } else { Some(new) })
    }

    /// Removes from `merged` what the applier owned last time (`last`) and nobody owns now, in
    /// structured-merge-diff's three steps, each at the version its field sets belong to:
    ///
    /// 1. at the last apply's version, everything the applier owned then goes, struct parents
    ///    included;
    /// 2. at every owner's version (the last apply's first), what anyone owns comes back;
    /// 3. at the last apply's version, only what the applier owned then may be removed at all.
    ///
    /// With every owner at the request's version this converts nothing. A version that cannot
    /// be reached is skipped (its owners are judged at the request's version instead), and when
    /// a converter refuses one of the partial objects the steps pass through (conversion rules
    /// written for whole objects may), the pruning is done at the request's version alone.
    fn prune(&self, merged: &Value, managers: &Fields, last: &VersionedSet) -> Result<Value, UpdaterError> {
        match self.prune_across_versions(merged, managers, last) {
            Err(UpdaterError::Conversion(..)) if self.versions.is_some() => {
                Updater { versions: None, ..*self }.prune_across_versions(merged, managers, last)
            }
            other => other,
        }
    }

    fn prune_across_versions(
        &self,
        merged: &Value,
        managers: &Fields,
        last: &VersionedSet,
    ) -> Result<Value, UpdaterError> {
        let named = |s: &FieldSet, ty: Ty<'_>| ensure_named_fields_are_members(s, ty);
        let last_version = if self.at(merged, self.version, &last.api_version)?.is_some() {
            last.api_version.as_str()
        } else {
            self.version
        };
        let Some(there) = self.at(merged, self.version, last_version)? else { return Ok(merged.clone()) };
        let last_set = named(&last.set, there.ty);
        // 1.
        let mut pruned = remove_items(there.ty, &there.value, &last_set);
        let mut pruned_version = last_version.to_string();
        // 2. Owners by version; a version that cannot be reached counts at the request's.
        let mut owned: BTreeMap<String, FieldSet> = BTreeMap::new();
        for vs in managers.values() {
            let reachable = vs.api_version == self.version || self.at(merged, self.version, &vs.api_version)?.is_some();
            let version = if reachable { vs.api_version.clone() } else { self.version.to_string() };
            let set = owned.entry(version).or_default();
            *set = set.union(&vs.set);
        }
        let first = owned.remove_entry(last_version);
        for (version, managed) in first.into_iter().chain(owned) {
            let (Some(m), Some(p)) =
                (self.at(&there.value, last_version, &version)?, self.at(&pruned, &pruned_version, &version)?)
            else {
                continue;
            };
            let merged_set = named(&to_field_set(m.ty, &m.value), m.ty);
            let pruned_set = named(&to_field_set(p.ty, &p.value), p.ty);
            pruned = remove_items(m.ty, &m.value, &merged_set.difference(&pruned_set.union(&named(&managed, m.ty))));
            pruned_version = version;
        }
        // 3.
        let Some(p) = self.at(&pruned, &pruned_version, last_version)? else { return Ok(merged.clone()) };
        let merged_set = named(&to_field_set(there.ty, &there.value), there.ty);
        let pruned_set = named(&to_field_set(p.ty, &p.value), p.ty);
        let result = remove_items(there.ty, &there.value, &merged_set.difference(&pruned_set).intersection(&last_set));
        Ok(match self.at(&result, last_version, self.version)? {
            Some(back) => back.value.into_owned(),
            None => merged.clone(),
        })
    }
}
