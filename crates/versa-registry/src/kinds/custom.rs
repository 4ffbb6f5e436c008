//! Custom resources: kube's `customResourceStrategy` — the version's structural schema decides
//! decoding (defaults, pruning, metadata coercion) and validation (schema, list types,
//! metadata, the scale subresource's paths, then the `x-kubernetes-validations` CEL rules, with
//! errors about unchanged values ratcheted on updates, KEP-4008). The core kinds standalone
//! serves are built from definitions too and start from these rules.

use serde_json::Value;
use versa_schema::pipeline::{self, ResourceKind};
use versa_schema::{Error as FieldError, ErrorList, Path};

use super::{KindRules, Part};
use crate::error::{Error, Result};
use crate::meta::name_of;
use crate::resource::{Resource, Version};

/// The rules of custom resources: every default of [`KindRules`].
#[derive(Debug)]
pub struct Custom;

impl KindRules for Custom {}

/// Defaults, prunes and coerces metadata with the version's schema; the unknown fields found.
pub fn decode(ver: &Version, obj: &mut Value) -> Vec<String> {
    match ver.schema() {
        // Malformed metadata: validation reports it with every other error.
        Some(schema) => {
            pipeline::normalise(obj, &schema, versa_schema::objectmeta::Malformed::Reject).unwrap_or_default()
        }
        None => Vec::new(),
    }
}

/// The read-side schema steps at the version `obj` is stored at.
pub fn on_read(res: &Resource, obj: &mut Value) {
    let stored_at = res.version_of(obj).to_owned();
    if let Some(schema) = res.version(&stored_at).and_then(|v| v.schema()) {
        pipeline::on_read(obj, &schema);
    }
}

/// Default → prune → validate → `x-kubernetes-validations` at version `ver`, plus the
/// kind's own `extra` rules (given the object and the old one; run with the schema's errors).
/// Returns the pruned field paths; ratcheted rule failures go to `warnings`.
pub fn admit(
    res: &Resource,
    ver: &Version,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
    warnings: &mut Vec<String>,
    extra: impl FnOnce(&Value, Option<&Value>) -> ErrorList,
) -> Result<Vec<String>> {
    admit_named(res, ver, obj, old, part, warnings, versa_schema::names::name_is_dns_subdomain, extra)
}

/// [`admit`] with the kind's own rule for `metadata.name` (RBAC's names are path segments).
#[allow(clippy::too_many_arguments, reason = "admit's arguments and the name rule")]
pub fn admit_named(
    res: &Resource,
    ver: &Version,
    obj: &mut Value,
    old: Option<&Value>,
    _part: Part,
    warnings: &mut Vec<String>,
    name_rule: versa_schema::names::NameValidator,
    extra: impl FnOnce(&Value, Option<&Value>) -> ErrorList,
) -> Result<Vec<String>> {
    let name = name_of(obj).to_owned();
    let invalid = |errs: ErrorList| Error::invalid(&res.group, &res.kind, &name, errs);
    let kind =
        ResourceKind { group: &res.group, version: &ver.name, kind: &res.kind, namespaced: res.namespaced, name_rule };
    let Some(schema) = ver.schema() else {
        return Err(Error::internal(format!("no schema for version {}", ver.name)));
    };
    let mut errs = ErrorList::new();
    let mut schema_valid = false;
    // On updates, errors about values that did not change are ratcheted (KEP-4008).
    let admitted = match old {
        Some(old) => pipeline::admit_update(obj, old, &schema, &kind),
        None => pipeline::admit(obj, &schema, &kind),
    };
    let unknown = match admitted {
        Ok(admitted) => {
            schema_valid = true;
            admitted.unknown_fields
        }
        Err(e) => {
            errs = e;
            Vec::new()
        }
    };
    if let Some(old) = old {
        errs.extend(pipeline::validate_update(obj, old));
        errs.extend(finalizer_rules(obj, old));
    }
    errs.extend(extra(obj, old));
    // The scale subresource's paths, as kube's validator checks them with the schema, before
    // the rules (the real kube-apiserver lists their errors in this order).
    if let Some(scale) = &ver.scale {
        errs.extend(crate::scale::validate_replica_paths(obj, scale));
    }
    // x-kubernetes-validations run unless the schema found a blocking error (a value of the
    // wrong type, a missing required field, an unsupported enum value, too long, too many);
    // then kube says so instead of running them.
    let rules = ver.rules();
    if !rules.is_empty() {
        if schema_valid || !versa_schema::validation::has_blocking_error(&errs) {
            let outcome = rules.check(obj, old);
            errs.extend(outcome.errors);
            warnings.extend(outcome.warnings);
        } else {
            errs.push(versa_schema::validation::cel_skipped_error());
        }
    }
    if errs.is_empty() { Ok(unknown) } else { Err(invalid(errs)) }
}

/// While an object is being deleted no finalizer may be added.
pub(crate) fn finalizer_rules(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return errs;
    }
    let (n, o) = (finalizer_names(new), finalizer_names(old));
    if n.iter().any(|f| !o.contains(f)) {
        errs.push(FieldError::forbidden(
            Path::new("metadata").child("finalizers"),
            "no new finalizers can be added if the object is being deleted",
        ));
    }
    errs
}

pub(crate) fn finalizer_names(v: &Value) -> Vec<String> {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}
