//! The field manager: apply and update as kube-apiserver runs them around the updater, with
//! `managedFields` read from and written back to the object.
//!
//! kube-apiserver stacks small managers around structured-merge-diff's updater; the ones that
//! decide what ends up in `managedFields` are reproduced here, in their order:
//!
//! - *skip non-applied*: an object that has no `managedFields` is not tracked by updates (a
//!   create is: kube tracks from creation); the first apply to such an object first gives all
//!   its fields to an `Update` manager named `before-first-apply`;
//! - *cap managers*: at most 10 `Update` entries; the oldest are merged into one
//!   `ancient-changes` entry per apiVersion;
//! - *build manager info*: owners are identified by manager name (`unknown` when empty),
//!   operation, subresource, and apiVersion for updaters;
//! - *managed fields updater*: an update's changes are merged into that manager's entry, and
//!   an entry's time is set (to the caller's `now`) only when the operation changed something;
//! - *strip meta*: `apiVersion`, `kind` and the server-owned `metadata` fields (`name`, `uid`,
//!   `resourceVersion`, ...) are never owned;
//! - *last applied* (the way from client-side to server-side apply): an apply by the manager
//!   `kubectl` may take, without `force`, the fields that the object's
//!   `kubectl.kubernetes.io/last-applied-configuration` annotation still describes (those whose
//!   live value it holds); when the object has that annotation, such an apply rewrites it to
//!   the applied configuration, so that a later client-side apply sees what was applied.
//!
//! Entries at other versions are judged on objects converted to their version when
//! [`Options::versions`] is given (see `updater`). Not reproduced yet: reconciling entries with
//! a schema that changed between atomic and granular. The checks
//! kube makes on the request itself (apiVersion and kind of the applied object) belong to the
//! server.

use serde_json::{Map, Value};
use versa_schema::structural::Structural;

use crate::conflict::Conflicts;
use crate::managed::Managed;
use crate::managed::{
    APPLY, ManagedFields, ManagedFieldsError, ManagerId, UPDATE, VersionedSet, decode, encode, seconds,
};
use crate::path::{FieldPath, PathElement};
use crate::schema::Ty;
use crate::set::FieldSet;
use crate::updater::{Updater, UpdaterError};
use crate::validate::{ValidationErrors, validate};
use crate::value::equals;
use crate::versions::Versions;

/// kube's cap on `Update` entries.
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager that takes the fields of an untracked object on its first apply.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The manager the oldest update entries are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// What one operation is: who does it, at which version, on which subresource, when.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// The schema of the request's version (the root of a resource).
    pub schema: &'a Structural,
    /// `fieldManager` (`unknown` when empty).
    pub manager: &'a str,
    /// The request's `group/version`; entries are written in it.
    pub api_version: &'a str,
    /// `status`, `scale`, or empty for the main resource.
    pub subresource: &'a str,
    /// The operation's time, RFC 3339 in seconds, UTC, as kube writes `metav1.Time`.
    pub now: &'a str,
    /// Fields the endpoint's strategy resets and nobody owns (kube's reset fields: `status` on
    /// the main resource of a definition with a status subresource, `spec` on `/status`).
    pub reset_fields: Option<&'a FieldSet>,
    /// The resource's other versions, for entries written at them (`None`: every entry is
    /// judged at `api_version`).
    pub versions: Option<&'a dyn Versions>,
}

/// The result of an operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The object to store, with its new `metadata.managedFields`.
    pub object: Value,
    /// Those `managedFields`.
    pub managed_fields: ManagedFields,
    /// Whether anything but `managedFields` changed.
    pub changed: bool,
}

/// Why an apply failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Fields other managers own would change (kube answers 409 Conflict).
    #[error(transparent)]
    Conflicts(#[from] Conflicts),
    /// The applied object carries `metadata.managedFields` (400).
    #[error("metadata.managedFields must be nil")]
    ManagedFieldsInPatch,
    /// The live object's `managedFields` cannot be read.
    #[error("failed to decode managed fields: {0}")]
    ManagedFields(#[source] ManagedFieldsError),
    /// The applied object does not fit the schema (kube prefixes the object's identity:
    /// `failed to create typed patch object (ns/name; gvk): ...`).
    #[error("failed to create typed patch object: {0}")]
    InvalidPatch(#[source] ValidationErrors),
    /// The live object cannot be merged (a list item without its keys, say).
    #[error("{0}: {1}")]
    Invalid(&'static str, #[source] ValidationErrors),
    /// An object could not be converted to the version an entry was written in.
    #[error("failed to convert the object to {0}: {1}")]
    Conversion(String, #[source] crate::versions::ConvertError),
}

/// Why an update's `managedFields` could not be computed (kube then keeps the live object's
/// `managedFields` and logs).
#[derive(Debug, thiserror::Error)]
#[error("failed to update ManagedFields: {0}: {1}")]
pub struct UpdateError(pub &'static str, #[source] pub ValidationErrors);

/// The annotation client-side apply keeps its configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The only manager whose applies upgrade from client-side apply (kube's rule: other managers
/// opt out by their name).
const UPGRADING_MANAGER: &str = "kubectl";
/// kube's limit on the total size of an object's annotations (`TotalAnnotationSizeLimitB`).
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Server-side apply of `applied` to `live` (an empty object, `{}`, when creating), given the
/// live object's `managedFields`. `force` takes conflicting fields from their owners.
pub fn apply(
    live: &Value,
    applied: &Value,
    managed: &ManagedFields,
    opts: &Options<'_>,
    force: bool,
) -> Result<Outcome, ApplyError> {
    let mut outcome = match structured_apply(live, applied, managed, opts, force) {
        Err(ApplyError::Conflicts(conflicts)) if opts.manager == UPGRADING_MANAGER => {
            // Conflicts with fields the client-side configuration still describes are allowed.
            let allowed = last_applied_fields(live, opts.schema);
            let left: Vec<_> = conflicts.0.into_iter().filter(|c| !allowed.has(&c.path.0)).collect();
            if !left.is_empty() {
                return Err(ApplyError::Conflicts(Conflicts(left)));
            }
            structured_apply(live, applied, managed, opts, true)?
        }
        other => other?,
    };
    if opts.manager == UPGRADING_MANAGER {
        keep_last_applied_in_step(&mut outcome, applied);
    }
    Ok(outcome)
}

/// The fields of the live object's last-applied configuration that still hold the live
/// values (kube's `allowedConflictsFromLastApplied`): nothing when there is no annotation or
/// it does not fit the schema.
fn last_applied_fields(live: &Value, schema: &Structural) -> FieldSet {
    let Some(text) = live.pointer("/metadata/annotations").and_then(|a| a.get(LAST_APPLIED)).and_then(Value::as_str)
    else {
        return FieldSet::new();
    };
    let Ok(last) = serde_json::from_str::<Value>(text) else { return FieldSet::new() };
    let ty = Ty::root(schema);
    if !last.is_object() || validate(ty, &last, false).is_err() {
        return FieldSet::new();
    }
    let live = without_managed_fields(live);
    let Ok(cmp) = crate::compare::compare(ty, &last, &live) else { return FieldSet::new() };
    crate::field_set(&last, schema).difference(&cmp.modified).difference(&cmp.added).difference(&cmp.removed)
}

/// kube's `lastAppliedUpdater`: an object that has the last-applied annotation gets the applied
/// configuration (without that annotation) as its new value, unless the annotations would then
/// exceed kube's size limit, in which case the annotation goes.
fn keep_last_applied_in_step(outcome: &mut Outcome, applied: &Value) {
    let has = |o: &Value| o.pointer("/metadata/annotations").and_then(|a| a.get(LAST_APPLIED)).is_some();
    if !has(&outcome.object) {
        return;
    }
    let mut config = applied.clone();
    if let Some(Value::Object(meta)) = config.get_mut("metadata")
        && let Some(Value::Object(annotations)) = meta.get_mut("annotations")
    {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            meta.remove("annotations");
        }
    }
    // As kube encodes it: encoding/json's Encoder, a newline at the end.
    let text = format!("{}\n", versa_schema::field::go_json(&config));
    let Some(Value::Object(annotations)) = outcome.object.pointer_mut("/metadata/annotations") else { return };
    annotations.insert(LAST_APPLIED.into(), Value::String(text));
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > MAX_ANNOTATIONS_BYTES {
        annotations.remove(LAST_APPLIED);
    }
    outcome.changed = true;
}

/// The apply below the last-applied managers.
fn structured_apply(
    live: &Value,
    applied: &Value,
    managed: &ManagedFields,
    opts: &Options<'_>,
    force: bool,
) -> Result<Outcome, ApplyError> {
    if applied.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApplyError::ManagedFieldsInPatch);
    }
    let mut m = decode(managed).map_err(ApplyError::ManagedFields)?;
    let ty = Ty::root(opts.schema);
    validate(ty, applied, false).map_err(ApplyError::InvalidPatch)?;
    let updater = Updater { ty, ignore: opts.reset_fields, version: opts.api_version, versions: opts.versions };
    let live = without_managed_fields(live);
    if m.fields.is_empty() {
        let empty = type_meta(applied);
        tracked_update(&updater, &empty, &live, &mut m, BEFORE_FIRST_APPLY, opts).map_err(apply_error)?;
    }
    let id = manager_id(opts.manager, APPLY, opts).identifier();
    let merged = updater.apply(&live, applied, opts.api_version, &mut m.fields, &id, force).map_err(apply_error)?;
    strip_meta(&mut m, &id);
    let changed = merged.is_some();
    let mut object = match merged {
        Some(o) => {
            m.times.insert(id, Some(opts.now.to_string()));
            o
        }
        None => live,
    };
    let managed_fields = encode(&m);
    managed_fields.write_to(&mut object);
    Ok(Outcome { object, managed_fields, changed })
}

/// The `managedFields` bookkeeping of a create (`live` is `None`), update or non-apply patch
/// that turns `live` into `new`. `new` may carry `managedFields` of its own: they replace the
/// live ones when readable and not empty (`[]` resets them), as kube allows — except on a
/// subresource, where the live ones always count.
pub fn update(live: Option<&Value>, new: &Value, opts: &Options<'_>) -> Result<Outcome, UpdateError> {
    let live_obj = live.map(without_managed_fields).unwrap_or_else(|| type_meta(new));
    let live_managed = || {
        live.map(|l| {
            ManagedFields::from_object(l).ok().flatten().map(|mf| decode(&mf).unwrap_or_default()).unwrap_or_default()
        })
        .unwrap_or_default()
    };
    let mut m = if !opts.subresource.is_empty() {
        live_managed()
    } else if is_reset(new) {
        Managed::default()
    } else {
        match ManagedFields::from_object(new).ok().flatten().map(|mf| decode(&mf)) {
            Some(Ok(m)) if !m.fields.is_empty() => m,
            _ => live_managed(),
        }
    };
    let new_obj = without_managed_fields(new);
    let changed = !equals(&live_obj, &new_obj);
    // An object nobody tracks stays untracked, unless this is its creation.
    let creating = live_obj.pointer("/metadata/uid").and_then(Value::as_str).is_none_or(str::is_empty);
    if m.fields.is_empty() && !creating {
        return Ok(Outcome { object: new_obj, managed_fields: ManagedFields::default(), changed });
    }
    let updater = Updater {
        ty: Ty::root(opts.schema),
        ignore: opts.reset_fields,
        version: opts.api_version,
        versions: opts.versions,
    };
    tracked_update(&updater, &live_obj, &new_obj, &mut m, opts.manager, opts).map_err(|e| match e {
        UpdaterError::Invalid(what, errs) => UpdateError(what, errs),
        UpdaterError::Conversion(version, e) => UpdateError(
            "failed to convert the object",
            ValidationErrors(vec![crate::validate::ValidationError {
                path: String::new(),
                message: format!("to {version}: {e}"),
            }]),
        ),
        // Updates force: they never conflict.
        UpdaterError::Conflicts(_) => UpdateError("unexpected conflicts", ValidationErrors::default()),
    })?;
    let managed_fields = encode(&m);
    let mut object = new_obj;
    managed_fields.write_to(&mut object);
    Ok(Outcome { object, managed_fields, changed })
}

fn apply_error(e: UpdaterError) -> ApplyError {
    match e {
        UpdaterError::Conflicts(c) => ApplyError::Conflicts(c),
        UpdaterError::Invalid(what, errs) => ApplyError::Invalid(what, errs),
        UpdaterError::Conversion(version, e) => ApplyError::Conversion(version, e),
    }
}

fn manager_id(name: &str, operation: &str, opts: &Options<'_>) -> ManagerId {
    ManagerId {
        manager: if name.is_empty() { "unknown".into() } else { name.into() },
        operation: operation.into(),
        update_api_version: (operation == UPDATE).then(|| opts.api_version.to_string()),
        subresource: opts.subresource.into(),
    }
}

/// An update through the managers below *skip non-applied*: the change is first recorded for
/// a placeholder owner, then merged into the manager's entry, whose time is set only if it
/// took something; update entries are capped afterwards.
fn tracked_update(
    updater: &Updater<'_>,
    live: &Value,
    new: &Value,
    m: &mut Managed,
    manager: &str,
    opts: &Options<'_>,
) -> Result<(), UpdaterError> {
    // Not a JSON identifier, so it cannot collide with a real owner.
    const CURRENT: &str = "current-operation";
    let id = manager_id(manager, UPDATE, opts).identifier();
    updater.update(live, new, opts.api_version, &mut m.fields, CURRENT)?;
    strip_meta(m, CURRENT);
    if let Some(vs) = m.fields.remove(CURRENT) {
        let set = match m.fields.get(&id) {
            Some(previous) => vs.set.union(&previous.set),
            None => vs.set,
        };
        m.fields.insert(id.clone(), VersionedSet { set, api_version: vs.api_version, applied: vs.applied });
        m.times.insert(id, Some(opts.now.to_string()));
    }
    cap_update_managers(m, MAX_UPDATE_MANAGERS);
    Ok(())
}

/// Removes `apiVersion`, `kind` and the server-owned metadata from `manager`'s set (members
/// only: `metadata.labels` stays owned), dropping the entry if nothing is left.
fn strip_meta(m: &mut Managed, manager: &str) {
    let Some(vs) = m.fields.get_mut(manager) else { return };
    let mut strip = FieldSet::new();
    for top in ["apiVersion", "kind", "metadata"] {
        strip.insert(&[PathElement::field(top)]);
    }
    for meta in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        strip.insert(&FieldPath::fields(&["metadata", meta]).0);
    }
    vs.set = vs.set.difference(&strip);
    if vs.set.is_empty() {
        m.fields.remove(manager);
    }
}

/// Merges the oldest `Update` entries into one `ancient-changes` entry per apiVersion until at
/// most `max` are left (kube's `capManagersManager`, step for step).
fn cap_update_managers(m: &mut Managed, max: usize) {
    let mut updaters: Vec<String> = m.fields.iter().filter(|(_, vs)| !vs.applied).map(|(id, _)| id.clone()).collect();
    if updaters.len() <= max {
        return;
    }
    let time = |m: &Managed, id: &str| seconds(m.times.get(id).and_then(|t| t.as_deref()));
    updaters.sort_by(|a, b| time(m, a).cmp(&time(m, b)).then_with(|| a.cmp(b)));
    let mut first_of_version: std::collections::BTreeMap<String, String> = Default::default();
    let mut length = updaters.len();
    for manager in &updaters {
        if length <= max {
            break;
        }
        let Some(vs) = m.fields.get(manager).cloned() else { continue };
        let manager_time = m.times.get(manager).cloned().flatten();
        let bucket = ManagerId {
            manager: ANCIENT_CHANGES.into(),
            operation: UPDATE.into(),
            update_api_version: Some(vs.api_version.clone()),
            subresource: String::new(),
        }
        .identifier();
        match first_of_version.get(&vs.api_version) {
            Some(first) => {
                if !m.fields.contains_key(&bucket)
                    && let Some(s) = m.fields.remove(first)
                {
                    m.fields.insert(bucket.clone(), s);
                }
                let previous = m.fields.get(&bucket).map(|b| b.set.clone()).unwrap_or_default();
                m.fields.insert(
                    bucket.clone(),
                    VersionedSet {
                        set: vs.set.union(&previous),
                        api_version: vs.api_version.clone(),
                        applied: vs.applied,
                    },
                );
                m.fields.remove(manager);
                length -= 1;
                m.times.insert(bucket, manager_time);
            }
            None => {
                first_of_version.insert(vs.api_version.clone(), manager.clone());
            }
        }
    }
}

/// `managedFields: []`, or a single empty entry: the client asks to reset them.
fn is_reset(obj: &Value) -> bool {
    match obj.pointer("/metadata/managedFields") {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(e)] => e.values().all(|v| match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                _ => false,
            }),
            _ => false,
        },
        _ => false,
    }
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(Value::Object(meta)) = o.get_mut("metadata") {
        meta.remove("managedFields");
    }
    o
}

/// An empty object of the same kind (what kube's creater makes for "no object yet").
fn type_meta(obj: &Value) -> Value {
    let mut m = Map::new();
    for k in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(k) {
            m.insert(k.into(), v.clone());
        }
    }
    Value::Object(m)
}
