//! `spec.versions` and `status.storedVersions`.
//!
//! Each version is checked on its own (name, deprecation warning, schema, subresources, printer
//! columns, selectable fields); then the list as a whole: unique names and exactly one storage
//! version. `status.storedVersions` records every version objects may still be stored in, so each
//! of them must stay in `spec.versions` until a storage migration has rewritten the data.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion,
};
use serde_json::Value;
use versa_schema::Structural;
use versa_schema::field::{BadValue, Error, ErrorList, Path};
use versa_schema::names::is_dns1035_label;

use super::{Options, columns, join_messages, schema, selectable_fields, subresources};

/// Longest custom deprecation warning, in bytes.
const MAX_DEPRECATION_WARNING_LEN: usize = 256;

/// Every version needs a schema (or, with ratcheting, every served one unless unknown fields are
/// preserved).
pub(super) fn validate_schemas_present(spec: &CustomResourceDefinitionSpec, opts: &Options, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let has_schema =
        |v: &CustomResourceDefinitionVersion| v.schema.as_ref().is_some_and(|s| s.open_api_v3_schema.is_some());
    for (i, v) in spec.versions.iter().enumerate() {
        let schema_path = path.child("versions").index(i).child("schema").child("openAPIV3Schema");
        if opts.require_open_api_schema {
            if !has_schema(v) {
                errs.push(Error::required(schema_path, "schemas are required"));
            }
        } else if !spec.preserve_unknown_fields.unwrap_or(false) && v.served && !has_schema(v) {
            errs.push(Error::required(schema_path, "because otherwise all fields are pruned"));
        }
    }
    errs
}

/// The per-version checks, then uniqueness and the storage flag.
pub(super) fn validate_versions(spec: &CustomResourceDefinitionSpec, opts: &Options, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    let mut storage_count = 0;
    for (i, version) in spec.versions.iter().enumerate() {
        let vpath = path.child("versions").index(i);
        if version.storage {
            storage_count += 1;
        }
        if !seen.insert(version.name.as_str()) {
            unique = false;
        }
        let msgs = is_dns1035_label(&version.name);
        if !msgs.is_empty() {
            errs.push(Error::invalid(vpath.child("name"), version.name.as_str(), join_messages(&msgs)));
        }
        errs.extend(validate_version(version, opts, &vpath));
    }
    if !unique {
        errs.push(Error::invalid(
            path.child("versions"),
            versions_value(&spec.versions),
            "must contain unique version names",
        ));
    }
    if storage_count != 1 {
        errs.push(Error::invalid(
            path.child("versions"),
            versions_value(&spec.versions),
            "must have exactly one version marked as storage version",
        ));
    }
    errs
}

/// One version: deprecation warning, schema, subresources, printer columns, selectable fields.
fn validate_version(version: &CustomResourceDefinitionVersion, opts: &Options, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(warning) = &version.deprecation_warning {
        for msg in deprecation_warning_messages(version.deprecated.unwrap_or(false), warning) {
            errs.push(Error::invalid(path.child("deprecationWarning"), warning.as_str(), msg));
        }
    }
    // The schema is lowered once; the schema checks and the selectable fields share it.
    let open_api = version.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref());
    let lowered = open_api.map(Structural::lower);
    let status_enabled = version.subresources.as_ref().is_some_and(|s| s.status.is_some());
    if let Some(props) = open_api {
        errs.extend(schema::validate_version_schema(
            props,
            lowered.as_ref(),
            status_enabled,
            opts,
            &path.child("schema"),
        ));
    }
    if let Some(sub) = &version.subresources {
        errs.extend(subresources::validate_subresources(sub, &path.child("subresources")));
    }
    for (i, col) in version.additional_printer_columns.iter().flatten().enumerate() {
        errs.extend(columns::validate_column(col, &path.child("additionalPrinterColumns").index(i)));
    }
    let fields = version.selectable_fields.as_deref().unwrap_or_default();
    if !fields.is_empty() {
        let fpath = path.child("selectableFields");
        match lowered {
            None => errs.push(Error::invalid(
                fpath,
                "",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(Err(e)) => errs.push(Error::invalid(path.child("schema").child("openAPIV3Schema"), "", e.0)),
            Some(Ok(ss)) => {
                let ratcheted = opts.unchanged_oversized_selectable_fields.contains_key(&version.name);
                errs.extend(selectable_fields::validate_selectable_fields(fields, &ss, ratcheted, &fpath));
            }
        }
    }
    errs
}

/// The messages for a custom deprecation warning (each becomes its own error).
fn deprecation_warning_messages(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut msgs = Vec::new();
    if warning.len() > MAX_DEPRECATION_WARNING_LEN {
        msgs.push(format!("must be <= {MAX_DEPRECATION_WARNING_LEN} characters long"));
    }
    if warning.is_empty() {
        msgs.push("must not be an empty string".into());
    }
    // The warning travels in an HTTP header: only printable characters survive. Go's check for
    // control characters comes second and never fires, as they are not printable either.
    if let Some((i, _)) = warning.char_indices().find(|(_, c)| !is_print(*c)) {
        msgs.push(format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"));
    }
    // Rust strings are valid UTF-8, so Go's final UTF-8 check has nothing left to catch.
    msgs
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
/// Approximated without Unicode tables as "not a control, not other whitespace, not a format or
/// private-use character".
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let cp = c as u32;
    let format_or_private = matches!(cp,
        0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
        | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF
        | 0xFFFE | 0xFFFF);
    !format_or_private
}

/// `status.storedVersions`: non-empty, includes the storage version, and every entry is still in
/// `spec.versions`.
pub(super) fn validate_stored_versions(
    stored: Option<&[String]>,
    versions: &[CustomResourceDefinitionVersion],
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let stored = stored.unwrap_or_default();
    let stored_value = || BadValue::Json(Value::from(stored.to_vec()));
    if stored.is_empty() {
        errs.push(Error::invalid(path.clone(), stored_value(), "must have at least one stored version"));
        return errs;
    }
    for v in versions {
        if v.storage && !stored.contains(&v.name) {
            errs.push(Error::invalid(
                path.clone(),
                stored_value(),
                format!("must have the storage version {}", v.name),
            ));
        }
    }
    // One error per missing name, at the last index it appears at (upstream keys a map by name).
    let mut missing: Vec<(usize, &str)> = Vec::new();
    for (i, s) in stored.iter().enumerate() {
        if versions.iter().any(|v| &v.name == s) {
            continue;
        }
        match missing.iter_mut().find(|(_, name)| *name == s) {
            Some(entry) => entry.0 = i,
            None => missing.push((i, s)),
        }
    }
    for (i, name) in missing {
        errs.push(Error::invalid(
            path.index(i),
            name,
            format!(
                "missing from spec.versions; {name} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {name} and removes {name} from status.storedVersions"
            ),
        ));
    }
    errs
}

/// The versions list as the bad value of list-level errors.
fn versions_value(versions: &[CustomResourceDefinitionVersion]) -> BadValue {
    BadValue::Json(serde_json::to_value(versions).unwrap_or(Value::Null))
}
