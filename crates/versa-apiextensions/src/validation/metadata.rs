//! `metadata` of a definition: apimachinery's `ValidateObjectMeta` for a cluster-scoped object
//! whose name must be `<plural>.<group>`, and `ValidateObjectMetaUpdate`.
//!
//! The name is the definition's identity in storage and in the APIService registration, so it is
//! derived from the spec rather than chosen freely. Owner references and managed fields are the
//! server's business and are not checked here.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use versa_schema::field::{Error, ErrorList, Path};
use versa_schema::names::{name_is_dns_subdomain, validate_annotations, validate_finalizers, validate_labels};

/// `ValidateObjectMeta` with the definition's name rule.
pub(super) fn validate_definition_meta(meta: &ObjectMeta, spec: &CustomResourceDefinitionSpec) -> ErrorList {
    let path = Path::new("metadata");
    let required_name = format!("{}.{}", spec.names.plural, spec.group);
    let name_messages = |name: &str, prefix: bool| -> Vec<String> {
        let mut msgs = name_is_dns_subdomain(name, prefix);
        if name != required_name {
            msgs.push(r#"must be spec.names.plural+"."+spec.group"#.to_owned());
        }
        msgs
    };

    let mut errs = ErrorList::new();
    let generate_name = meta.generate_name.as_deref().unwrap_or_default();
    if !generate_name.is_empty() {
        for msg in name_messages(generate_name, true) {
            errs.push(Error::invalid(path.child("generateName"), generate_name, msg));
        }
    }
    let name = meta.name.as_deref().unwrap_or_default();
    if name.is_empty() {
        errs.push(Error::required(path.child("name"), "name or generateName is required"));
    } else {
        for msg in name_messages(name, false) {
            errs.push(Error::invalid(path.child("name"), name, msg));
        }
    }
    if meta.namespace.as_deref().is_some_and(|ns| !ns.is_empty()) {
        errs.push(Error::forbidden(path.child("namespace"), "not allowed on this type"));
    }
    if let Some(generation) = meta.generation.filter(|g| *g < 0) {
        errs.push(Error::invalid(path.child("generation"), generation, "must be greater than or equal to 0"));
    }
    errs.extend(validate_common(meta, &path));
    errs
}

/// `ValidateObjectMetaUpdate`: identity fields are immutable; labels and annotations are
/// checked again.
pub(super) fn validate_object_meta_update(new: &ObjectMeta, old: &ObjectMeta) -> ErrorList {
    let path = Path::new("metadata");
    let mut errs = ErrorList::new();
    let immutable = |errs: &mut ErrorList, new: Option<&str>, old: Option<&str>, field: &str| {
        let (new, old) = (new.unwrap_or_default(), old.unwrap_or_default());
        if new != old {
            errs.push(Error::invalid(path.child(field), new, "field is immutable"));
        }
    };
    immutable(&mut errs, new.name.as_deref(), old.name.as_deref(), "name");
    immutable(&mut errs, new.namespace.as_deref(), old.namespace.as_deref(), "namespace");
    immutable(&mut errs, new.uid.as_deref(), old.uid.as_deref(), "uid");
    if new.creation_timestamp != old.creation_timestamp {
        let shown = new.creation_timestamp.as_ref().map(|t| t.0.to_string()).unwrap_or_default();
        errs.push(Error::invalid(path.child("creationTimestamp"), shown, "field is immutable"));
    }
    errs.extend(validate_common(new, &path));
    errs
}

/// Labels, annotations and finalizers.
fn validate_common(meta: &ObjectMeta, path: &Path) -> ErrorList {
    let pairs = |m: &Option<BTreeMap<String, String>>| -> Vec<(String, String)> {
        m.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let labels = pairs(&meta.labels);
    let annotations = pairs(&meta.annotations);
    let finalizers: Vec<&str> = meta.finalizers.iter().flatten().map(String::as_str).collect();
    let mut errs = ErrorList::new();
    errs.extend(validate_labels(labels.iter().map(|(k, v)| (k.as_str(), v.as_str())), &path.child("labels")));
    errs.extend(validate_annotations(
        annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        &path.child("annotations"),
    ));
    errs.extend(validate_finalizers(&finalizers, &path.child("finalizers")));
    errs
}
