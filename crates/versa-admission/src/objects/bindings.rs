//! ValidatingAdmissionPolicyBinding and MutatingAdmissionPolicyBinding, as validation.go
//! checks their `spec`: the policy's name, `paramRef`, match resources, and the validation
//! actions (validating) or the operations a mutation can apply to (mutating). An update is
//! checked as a create.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use versa_schema::field::{Error, ErrorList, Path};
use versa_schema::names;

use super::common::{list_value, match_resources, param_ref, typed};
use super::policies::mutating_operations;
use super::{get, string_at, strings};

const VALIDATION_ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];

/// Validates a binding (`mutating`: a MutatingAdmissionPolicyBinding).
pub(super) fn validate(obj: &Value, mutating: bool, errs: &mut ErrorList) {
    let empty = Value::Object(Map::new());
    let spec = get(obj, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    let policy_name = string_at(spec, "policyName");
    if policy_name.is_empty() {
        errs.push(Error::required(path.child("policyName"), ""));
    } else {
        for msg in names::name_is_dns_subdomain(policy_name, false) {
            errs.push(Error::invalid(path.child("policyName"), policy_name, msg));
        }
    }
    if let Some(pr) = get(spec, "paramRef") {
        param_ref(pr, &path.child("paramRef"), errs);
    }
    if let Some(mr) = get(spec, "matchResources") {
        match_resources(mr, &path.child("matchResources"), errs);
        if mutating {
            mutating_operations(mr, &path.child("matchResources"), errs);
        }
    }
    if !mutating {
        validation_actions(&strings(spec, "validationActions"), &path.child("validationActions"), errs);
    }
}

/// Known, unique, not both Deny and Warn, at least one.
fn validation_actions(actions: &[&str], path: &Path, errs: &mut ErrorList) {
    let mut seen = BTreeSet::new();
    for (i, &action) in actions.iter().enumerate() {
        if !VALIDATION_ACTIONS.contains(&action) {
            errs.push(Error::not_supported(path.index(i), typed(action), VALIDATION_ACTIONS));
        }
        if !seen.insert(action) {
            errs.push(Error::duplicate(path.index(i), typed(action)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errs.push(Error::invalid(
            path.clone(),
            list_value(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(Error::required(path.clone(), "at least one validation action is required"));
    }
}
