//! `subresources`: the JSON paths the `/scale` subresource reads and writes.
//!
//! Scale paths are simple dotted paths into the object, and must stay under `.spec` or `.status`
//! because `/scale` may only touch the parts of the object it owns.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresources;
use versa_schema::field::{Error, ErrorList, Path};

/// Validates one version's subresources.
pub(super) fn validate_subresources(sub: &CustomResourceSubresources, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(scale) = &sub.scale else { return errs };

    let spec_path = path.child("scale.specReplicasPath");
    if scale.spec_replicas_path.is_empty() {
        errs.push(Error::required(spec_path, ""));
    } else {
        let path_errs = validate_simple_json_path(&scale.spec_replicas_path, &spec_path);
        if !path_errs.is_empty() {
            errs.extend(path_errs);
        } else if !scale.spec_replicas_path.starts_with(".spec.") {
            errs.push(Error::invalid(
                spec_path,
                scale.spec_replicas_path.as_str(),
                "should be a json path under .spec",
            ));
        }
    }

    let status_path = path.child("scale.statusReplicasPath");
    if scale.status_replicas_path.is_empty() {
        errs.push(Error::required(status_path, ""));
    } else {
        let path_errs = validate_simple_json_path(&scale.status_replicas_path, &status_path);
        if !path_errs.is_empty() {
            errs.extend(path_errs);
        } else if !scale.status_replicas_path.starts_with(".status.") {
            errs.push(Error::invalid(
                status_path,
                scale.status_replicas_path.as_str(),
                "should be a json path under .status",
            ));
        }
    }

    if let Some(selector) = scale.label_selector_path.as_deref().filter(|s| !s.is_empty()) {
        let selector_path = path.child("scale.labelSelectorPath");
        let path_errs = validate_simple_json_path(selector, &selector_path);
        if !path_errs.is_empty() {
            errs.extend(path_errs);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(Error::invalid(selector_path, selector, "should be a json path under either .spec or .status"));
        }
    }
    errs
}

/// A path that starts with `.` (printer columns and scale paths).
pub(super) fn validate_simple_json_path(s: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if s.is_empty() {
        errs.push(Error::invalid(path.clone(), s, "must not be empty"));
    } else if !s.starts_with('.') {
        errs.push(Error::invalid(path.clone(), s, "must be a simple json path starting with ."));
    }
    // Upstream also rejects a path with no dotted segment, which splitting can never produce.
    errs
}
