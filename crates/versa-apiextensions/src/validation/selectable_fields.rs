//! `selectableFields`: fields usable in field selectors (`?fieldSelector=spec.color=red`).
//!
//! Each must resolve in the version's schema without list notation, stay out of `metadata`
//! (whose selectable fields are fixed), and be a scalar that a selector can compare as a string.

use std::collections::HashSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::SelectableField;
use versa_schema::Structural;
use versa_schema::field::{Error, ErrorList, Path};

use versa_cel::field_path::valid_field_path;

/// At most this many selectable fields per version.
pub(super) const MAX_SELECTABLE_FIELDS: usize = 8;

/// Validates a version's selectable fields against its lowered schema. `ratcheted` skips the
/// count limit for a list that was already over it and is unchanged.
pub(super) fn validate_selectable_fields(
    fields: &[SelectableField],
    schema: &Structural,
    ratcheted: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut unique = HashSet::new();
    for (i, f) in fields.iter().enumerate() {
        let jpath = path.index(i).child("jsonPath");
        if f.json_path.is_empty() {
            errs.push(Error::required(jpath, ""));
            continue;
        }
        let target = match valid_field_path(&f.json_path, schema, false) {
            Ok(t) => t,
            Err(e) => {
                errs.push(Error::invalid(jpath, f.json_path.as_str(), format!("is an invalid path: {e}")));
                continue;
            }
        };
        if target.root == "metadata" {
            errs.push(Error::invalid(jpath.clone(), f.json_path.as_str(), "must not point to fields in metadata"));
        }
        let scalar = target.schema.is_some_and(|s| matches!(s.type_name.as_str(), "string" | "boolean" | "integer"));
        if !scalar {
            errs.push(Error::invalid(
                jpath.clone(),
                f.json_path.as_str(),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(target.path.to_string()) {
            errs.push(Error::duplicate(jpath, f.json_path.as_str()));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !ratcheted {
        let count = i64::try_from(unique.len()).unwrap_or(i64::MAX);
        errs.push(Error::too_many(path.clone(), Some(count), MAX_SELECTABLE_FIELDS as i64));
    }
    errs
}
