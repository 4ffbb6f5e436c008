//! What a definition's `status` should be, as kube-apiserver's naming and establishing
//! controllers decide it: the accepted names against the names the group's other definitions
//! hold (`names.rs`), `NamesAccepted` and its conflicts, `Established`, and
//! `NonStructuralSchema` for a schema kept from before that is not structural. Pure functions of
//! the definition and the names in use; the definitions controller (`definitions.rs`) calls them
//! and writes the result.

use serde_json::{Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_registry::definitions::{remove_condition, set_condition};
use versa_registry::meta;

use crate::controllers::names::InUse;

pub(crate) fn accepted(def: &ResourceDefinition) -> Option<Value> {
    def.status.as_ref().and_then(|s| s.accepted_names.as_ref()).and_then(|n| serde_json::to_value(n).ok())
}

/// Sets `acceptedNames`, `NamesAccepted`, `NonStructuralSchema` (from `violations`, see
/// [`structural_violations`]) and `Established` in a definition document (only its `status` is
/// read or written).
pub(crate) fn compute_status(doc: &mut Value, def: &ResourceDefinition, violations: &[String], in_use: &impl InUse) {
    let requested = &def.spec.names;
    let old = def.status.as_ref().and_then(|s| s.accepted_names.clone()).unwrap_or_default();
    let mut new = old.clone();
    let mut conflict: Option<(&str, String)> = None;
    let fresh_resource = |want: &str, have: &str| want == have || !in_use.resource(want);
    let fresh_kind = |want: &str, have: &str| want == have || !in_use.kind(want);
    if fresh_resource(&requested.plural, &old.plural) {
        new.plural = requested.plural.clone();
    } else {
        conflict = Some(("PluralConflict", format!("{:?} is already in use", requested.plural)));
    }
    let want_singular = requested.singular.clone().unwrap_or_default();
    if fresh_resource(&want_singular, old.singular.as_deref().unwrap_or("")) {
        new.singular = requested.singular.clone();
    } else {
        conflict = Some(("SingularConflict", format!("{want_singular:?} is already in use")));
    }
    let old_short: std::collections::BTreeSet<&String> = old.short_names.iter().flatten().collect();
    let mut short_ok = true;
    for s in requested.short_names.iter().flatten() {
        if !old_short.contains(s) && in_use.resource(s) {
            conflict = Some(("ShortNamesConflict", format!("{s:?} is already in use")));
            short_ok = false;
        }
    }
    if short_ok {
        new.short_names = requested.short_names.clone();
    }
    if fresh_kind(&requested.kind, &old.kind) {
        new.kind = requested.kind.clone();
    } else {
        conflict = Some(("KindConflict", format!("{:?} is already in use", requested.kind)));
    }
    let want_list = requested.list_kind.clone().unwrap_or_default();
    if fresh_kind(&want_list, old.list_kind.as_deref().unwrap_or("")) {
        new.list_kind = requested.list_kind.clone();
    } else {
        conflict = Some(("ListKindConflict", format!("{want_list:?} is already in use")));
    }
    new.categories = requested.categories.clone();

    let now = meta::now();
    if let Some(o) = doc.as_object_mut() {
        let st = o.entry("status").or_insert_with(|| json!({}));
        if let Some(st) = st.as_object_mut() {
            st.insert("acceptedNames".into(), serde_json::to_value(&new).unwrap_or(json!({})));
        }
    }
    match &conflict {
        None => set_condition(doc, "NamesAccepted", "True", "NoConflicts", "no conflicts found", &now),
        Some((reason, message)) => set_condition(doc, "NamesAccepted", "False", reason, message, &now),
    }
    // `NonStructuralSchema`: only definitions kept from before (validation refuses new
    // non-structural schemas) can have one; the condition lists every violation.
    match violations.len() {
        0 => remove_condition(doc, "NonStructuralSchema"),
        1 => set_condition(doc, "NonStructuralSchema", "True", "Violations", &violations[0], &now),
        _ => set_condition(
            doc,
            "NonStructuralSchema",
            "True",
            "Violations",
            &format!("[{}]", violations.join(", ")),
            &now,
        ),
    }
    // A conversion webhook whose caBundle does not parse: the resource cannot be served.
    if invalid_ca_bundle(def) {
        set_condition(
            doc,
            "Established",
            "False",
            versa_conversion::INVALID_CA_BUNDLE_REASON,
            versa_conversion::INVALID_CA_BUNDLE_MESSAGE,
            &now,
        );
        return;
    }
    if !def.is_established() {
        if conflict.is_none() {
            set_condition(
                doc,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                &now,
            );
        } else {
            set_condition(doc, "Established", "False", "NotAccepted", "not all names are accepted", &now);
        }
    }
}

/// Whether the definition converts with a webhook whose `caBundle` is unusable.
fn invalid_ca_bundle(def: &ResourceDefinition) -> bool {
    let webhook = def.spec.conversion.as_ref().is_some_and(|c| c.strategy == "Webhook");
    webhook
        && versa_conversion::Converter::new(def, Default::default(), &Default::default())
            .err()
            .is_some_and(|e| e.is_invalid_ca_bundle())
}

/// Every way the versions' schemas are not structural, as kube words them.
pub(crate) fn structural_violations(def: &ResourceDefinition) -> Vec<String> {
    let mut out = Vec::new();
    for (i, v) in def.spec.versions.iter().enumerate() {
        let Some(schema) = v.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()) else { continue };
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match versa_schema::Structural::lower(schema) {
            Err(e) => out.push(format!("{path}: {e}")),
            Ok(lowered) => {
                let errs =
                    versa_schema::structural_check::validate_structural(&lowered, &versa_schema::Path::new(&path));
                out.extend(errs.deduplicated().into_iter().map(ToString::to_string));
            }
        }
    }
    out
}
