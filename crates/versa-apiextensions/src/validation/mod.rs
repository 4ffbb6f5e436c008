//! Validation of definitions: every rule kube-apiserver applies to a CustomResourceDefinition on
//! create and update, with its field paths and messages.
//!
//! This module is the outline — the order in which the checks run is the order in which
//! kube-apiserver reports them — and each concern lives in its own submodule. Paths are those of
//! the v1 document (`spec.versions[0].schema.openAPIV3Schema…`, `spec.conversion.webhook…`):
//! kube-apiserver validates its internal form and so sometimes prints paths that do not exist in
//! the object the user sent (`spec.validation`, `spec.conversion.webhookClientConfig`); versa
//! points at the field the user wrote. Rules that tighten what older servers accepted are
//! ratcheted on update: see [`options`].

mod approval;
mod columns;
mod conversion;
mod metadata;
mod names;
mod options;
mod pem;
pub(crate) mod schema;
mod selectable_fields;
mod subresources;
mod url;
mod versions;
mod warnings;
pub mod webhook;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionSpec;
use versa_schema::field::{Error, ErrorList, Path};

use crate::types::ResourceDefinition;

pub use options::Options;
pub use warnings::{unrecognized_formats, warnings_on_create, warnings_on_update};

/// Validates a definition about to be created. `def` should already be defaulted
/// ([`crate::set_defaults`]). Returns every error found, in kube-apiserver's order.
pub fn validate_definition(def: &ResourceDefinition) -> ErrorList {
    validate_definition_with(def, &Options::for_create())
}

/// Validates an update of `old` to `new`: the create rules (ratcheted where `old` already broke
/// them), plus immutability of `spec.group`, `spec.names.plural`, and — once `old` is
/// Established — `spec.scope` and `spec.names.kind`.
pub fn validate_definition_update(new: &ResourceDefinition, old: &ResourceDefinition) -> ErrorList {
    let opts = Options::for_update(new, old);
    let mut errs = metadata::validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(validate_spec(&new.spec, &opts, &Path::new("spec")));
    errs.extend(conversion::validate_cel(new, &Path::new("spec").child("conversion")));
    let spec = Path::new("spec");
    if opts.require_immutable_names {
        errs.extend(validate_immutable(&new.spec.scope, &old.spec.scope, spec.child("scope")));
        errs.extend(validate_immutable(&new.spec.names.kind, &old.spec.names.kind, spec.child("names").child("kind")));
    }
    errs.extend(validate_immutable(&new.spec.group, &old.spec.group, spec.child("group")));
    errs.extend(validate_immutable(
        &new.spec.names.plural,
        &old.spec.names.plural,
        spec.child("names").child("plural"),
    ));
    errs.extend(validate_status_and_approval(new, Some(old)));
    errs
}

/// Validates a definition for creation with explicit options (tools that want to relax or tighten
/// individual rules).
pub fn validate_definition_with(def: &ResourceDefinition, opts: &Options) -> ErrorList {
    let mut errs = metadata::validate_definition_meta(&def.metadata, &def.spec);
    errs.extend(validate_spec(&def.spec, opts, &Path::new("spec")));
    errs.extend(conversion::validate_cel(def, &Path::new("spec").child("conversion")));
    errs.extend(validate_status_and_approval(def, None));
    errs
}

/// The spec checks, in kube-apiserver's order.
fn validate_spec(spec: &CustomResourceDefinitionSpec, opts: &Options, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    errs.extend(names::validate_group(&spec.group, &path.child("group")));
    errs.extend(validate_enum(&spec.scope, &["Cluster", "Namespaced"], path.child("scope")));

    let preserve_unknown = spec.preserve_unknown_fields.unwrap_or(false);
    let mut opts = opts.clone();
    // Pruning needs a structural schema; so do defaults and the x-kubernetes extensions.
    if !preserve_unknown {
        opts.require_structural_schema = true;
    }
    errs.extend(versions::validate_schemas_present(spec, &opts, path));
    if schema::spec_has(spec, schema::has_default) {
        opts.require_structural_schema = true;
        if preserve_unknown {
            errs.push(Error::invalid(
                path.child("preserveUnknownFields"),
                true,
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if schema::spec_has(spec, schema::has_kubernetes_extensions) {
        opts.require_structural_schema = true;
    }

    errs.extend(versions::validate_versions(spec, &opts, path));
    errs.extend(names::validate_required_names(&spec.names, &path.child("names")));
    errs.extend(names::validate_names(&spec.names, &path.child("names")));
    errs.extend(conversion::validate_conversion(spec, &opts, &path.child("conversion")));
    errs
}

/// `status.acceptedNames`, `status.storedVersions`, API approval and `preserveUnknownFields`:
/// the checks that follow the spec on both create and update.
fn validate_status_and_approval(def: &ResourceDefinition, old: Option<&ResourceDefinition>) -> ErrorList {
    let mut errs = ErrorList::new();
    let status = Path::new("status");
    if let Some(accepted) = def.status.as_ref().and_then(|s| s.accepted_names.as_ref()) {
        errs.extend(names::validate_names(accepted, &status.child("acceptedNames")));
    }
    errs.extend(versions::validate_stored_versions(
        def.status.as_ref().and_then(|s| s.stored_versions.as_deref()),
        &def.spec.versions,
        &status.child("storedVersions"),
    ));
    errs.extend(approval::validate_api_approval(def, old));
    errs.extend(validate_preserve_unknown_fields(def, old));
    errs
}

fn validate_preserve_unknown_fields(def: &ResourceDefinition, old: Option<&ResourceDefinition>) -> ErrorList {
    let mut errs = ErrorList::new();
    // Definitions stored before v1 may keep `true`; nobody may switch it on.
    if old.is_some_and(|o| o.spec.preserve_unknown_fields == Some(true)) {
        return errs;
    }
    if def.spec.preserve_unknown_fields == Some(true) {
        errs.push(Error::invalid(
            Path::new("spec").child("preserveUnknownFields"),
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

/// `Required` when empty, `NotSupported` when not one of `accepted`.
fn validate_enum(value: &str, accepted: &[&str], path: Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if value.is_empty() {
        errs.push(Error::required(path, ""));
    } else if !accepted.contains(&value) {
        errs.push(Error::not_supported(path, value, accepted));
    }
    errs
}

/// apimachinery's `ValidateImmutableField` for strings.
fn validate_immutable(new: &str, old: &str, path: Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if new != old {
        errs.push(Error::invalid(path, new, "field is immutable"));
    }
    errs
}

/// Joins a validator's messages as kube-apiserver does for a single `Invalid` error.
fn join_messages(msgs: &[String]) -> String {
    msgs.join(",")
}

/// Go's `regexp.MustCompile("[\n\r]+").MatchString`.
fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}
