//! `spec.group` and the resource names (`spec.names`, `status.acceptedNames`).
//!
//! Plural, singular, short names and categories appear in URLs and on the kubectl command line,
//! so they must be DNS-1035 labels; kinds may be mixed case but must otherwise be labels too, and
//! a kind may not equal its list kind, or a list could not be told from an item.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionNames;
use versa_schema::field::{Error, ErrorList, Path};
use versa_schema::names::{is_dns1035_label, is_dns1123_subdomain};

use super::join_messages;

/// `spec.group`: required, a DNS subdomain, with at least one dot.
pub(super) fn validate_group(group: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if group.is_empty() {
        errs.push(Error::required(path.clone(), ""));
        return errs;
    }
    let msgs = is_dns1123_subdomain(group);
    if !msgs.is_empty() {
        errs.push(Error::invalid(path.clone(), group, join_messages(&msgs)));
    } else if !group.contains('.') {
        errs.push(Error::invalid(path.clone(), group, "should be a domain with at least one dot"));
    }
    errs
}

/// The names that must be set in `spec.names` (after defaulting).
pub(super) fn validate_required_names(names: &CustomResourceDefinitionNames, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let required = [
        ("plural", names.plural.as_str()),
        ("singular", names.singular.as_deref().unwrap_or_default()),
        ("kind", names.kind.as_str()),
        ("listKind", names.list_kind.as_deref().unwrap_or_default()),
    ];
    for (field, value) in required {
        if value.is_empty() {
            errs.push(Error::required(path.child(field), ""));
        }
    }
    errs
}

/// The syntax of every name that is set (shared by `spec.names` and `status.acceptedNames`).
pub(super) fn validate_names(names: &CustomResourceDefinitionNames, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let label = |errs: &mut ErrorList, value: &str, p: Path| {
        let msgs = is_dns1035_label(value);
        if !msgs.is_empty() {
            errs.push(Error::invalid(p, value, join_messages(&msgs)));
        }
    };
    let mixed_case = |errs: &mut ErrorList, value: &str, p: Path| {
        let msgs = is_dns1035_label(&value.to_lowercase());
        if !msgs.is_empty() {
            let detail = format!("may have mixed case, but should otherwise match: {}", join_messages(&msgs));
            errs.push(Error::invalid(p, value, detail));
        }
    };

    if !names.plural.is_empty() {
        label(&mut errs, &names.plural, path.child("plural"));
    }
    let singular = names.singular.as_deref().unwrap_or_default();
    if !singular.is_empty() {
        label(&mut errs, singular, path.child("singular"));
    }
    if !names.kind.is_empty() {
        mixed_case(&mut errs, &names.kind, path.child("kind"));
    }
    let list_kind = names.list_kind.as_deref().unwrap_or_default();
    if !list_kind.is_empty() {
        mixed_case(&mut errs, list_kind, path.child("listKind"));
    }
    for (i, short) in names.short_names.iter().flatten().enumerate() {
        label(&mut errs, short, path.child("shortNames").index(i));
    }
    if !names.kind.is_empty() && names.kind == list_kind {
        errs.push(Error::invalid(path.child("listKind"), list_kind, "kind and listKind may not be the same"));
    }
    for (i, category) in names.categories.iter().flatten().enumerate() {
        label(&mut errs, category, path.child("categories").index(i));
    }
    errs
}
