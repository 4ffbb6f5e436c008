//! API approval of protected groups: definitions in `k8s.io` and `kubernetes.io` (and their
//! subdomains) must carry the `api-approved.kubernetes.io` annotation, pointing at the approved
//! API review or starting with `unapproved`.
//!
//! versa serves its own groups, not the community's, but a definition copied from a Kubernetes
//! SIG repository should be judged as kube-apiserver would judge it.

use versa_schema::field::{Error, ErrorList, Path};

use super::url;
use crate::types::ResourceDefinition;

/// The approval annotation.
pub const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ApprovalState {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

/// Whether `group` belongs to the Kubernetes community.
pub fn is_protected_community_group(group: &str) -> bool {
    group == "k8s.io" || group.ends_with(".k8s.io") || group == "kubernetes.io" || group.ends_with(".kubernetes.io")
}

/// Checks the annotation of protected groups; an update that leaves the approval state as it was
/// is never rejected, so controllers that only touch the spec keep working.
pub(super) fn validate_api_approval(def: &ResourceDefinition, old: Option<&ResourceDefinition>) -> ErrorList {
    let mut errs = ErrorList::new();
    if !is_protected_community_group(&def.spec.group) {
        return errs;
    }
    let (state, reason) = approval_state(def);
    if old.is_some_and(|o| approval_state(o).0 == state) {
        return errs;
    }
    let path = Path::new("metadata").child("annotations").key(API_APPROVAL_ANNOTATION);
    match state {
        ApprovalState::Approved | ApprovalState::Bypassed => {}
        ApprovalState::Missing => errs.push(Error::required(path, reason)),
        ApprovalState::Invalid => errs.push(Error::invalid(path, annotation(def), reason)),
    }
    errs
}

fn annotation(def: &ResourceDefinition) -> &str {
    def.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(API_APPROVAL_ANNOTATION))
        .map(String::as_str)
        .unwrap_or_default()
}

fn approval_state(def: &ResourceDefinition) -> (ApprovalState, String) {
    let value = annotation(def);
    if value.is_empty() {
        return (
            ApprovalState::Missing,
            format!(
                "protected groups must have approval annotation \"{API_APPROVAL_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        );
    }
    if value.starts_with("unapproved") {
        return (ApprovalState::Bypassed, format!("not approved: {}", versa_schema::field::go_quote(value)));
    }
    if url::parse_request_uri(value).is_ok_and(|u| !u.host.is_empty() && !u.scheme.is_empty()) {
        return (ApprovalState::Approved, format!("approved in {value}"));
    }
    (
        ApprovalState::Invalid,
        format!(
            "protected groups must have approval annotation \"{API_APPROVAL_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ),
    )
}
