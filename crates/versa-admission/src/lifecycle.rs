//! Namespace lifecycle: kube's `NamespaceLifecycle` admission plugin, the first in kube's
//! chain. Nothing is created in a namespace that is being terminated, nothing is written into
//! a namespace that does not exist, and the namespaces kube keeps (`default`, `kube-system`,
//! `kube-public`) are not deleted.
//!
//! kube reads namespaces from an informer and, for a create, waits briefly for a cache that
//! has not yet seen a new namespace before it asks the API server; the
//! [`NamespaceLookup`] given here should answer from what it knows is current.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;
use serde_json::Value;

use crate::attributes::{Attributes, Operation};
use crate::error::{AdmissionError, admission_forbidden};
use crate::seams::NamespaceLookup;

/// The namespaces kube never lets anyone delete.
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// kube's `NamespaceLifecycle.Admit` for one request.
pub async fn namespace_lifecycle(attrs: &Attributes, namespaces: &dyn NamespaceLookup) -> Result<(), AdmissionError> {
    let is_namespace = attrs.kind.group.is_empty() && attrs.kind.kind == "Namespace";
    if attrs.operation == Operation::Delete && is_namespace && IMMORTAL_NAMESPACES.contains(&attrs.name.as_str()) {
        return Err(AdmissionError::forbidden(
            &attrs.resource.group,
            &attrs.resource.resource,
            &attrs.name,
            "this namespace may not be deleted",
        ));
    }
    // Cluster-scoped resources, Namespaces themselves and deletions always pass.
    if attrs.namespace.is_empty() || is_namespace || attrs.operation == Operation::Delete {
        return Ok(());
    }
    // Access reviews say nothing about the namespace (that would leak whether it exists).
    if attrs.resource.group == "authorization.k8s.io" && attrs.resource.resource == "localsubjectaccessreviews" {
        return Ok(());
    }
    let Some(ns) = namespaces.namespace(&attrs.namespace).await? else {
        return Err(AdmissionError::not_found("", "namespaces", &attrs.namespace));
    };
    let terminating = ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    if attrs.operation == Operation::Create && terminating {
        let message =
            format!("unable to create new content in namespace {} because it is being terminated", attrs.namespace);
        let mut status = admission_forbidden(attrs, &message);
        if let Some(details) = status.details.as_mut() {
            details.causes.get_or_insert_with(Vec::new).push(StatusCause {
                reason: Some("NamespaceTerminating".into()),
                message: Some(format!("namespace {} is being terminated", attrs.namespace)),
                field: Some("metadata.namespace".into()),
            });
        }
        return Err(AdmissionError::Forbidden(Box::new(status)));
    }
    Ok(())
}
