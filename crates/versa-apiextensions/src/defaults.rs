//! Defaulting of a definition, as kube-apiserver's `apiextensions.k8s.io/v1` defaults do.
//!
//! Applied when a definition is decoded, before validation, so that validation sees what will be
//! stored: `singular` and `listKind` derived from `kind`, `conversion: {strategy: None}`, webhook
//! service port 443, and `status.storedVersions` seeded with the storage version. The v1beta1
//! defaults (scope, preserveUnknownFields, …) are deliberately absent: v1beta1 is not accepted.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinitionSpec, CustomResourceDefinitionStatus,
};

use crate::types::ResourceDefinition;

/// The conversion strategy that only rewrites `apiVersion`.
pub const NONE_CONVERTER: &str = "None";
/// The conversion strategy that calls a webhook.
pub const WEBHOOK_CONVERTER: &str = "Webhook";
/// versa's declarative conversion strategy: CEL rules in `spec.conversion.cel`.
pub const CEL_CONVERTER: &str = "CEL";
/// The port of a webhook service when none is given.
pub const DEFAULT_SERVICE_PORT: i32 = 443;

/// Applies the v1 defaults to a whole definition.
pub fn set_defaults(def: &mut ResourceDefinition) {
    set_spec_defaults(&mut def.spec);
    if def.stored_versions().is_empty()
        && let Some(storage) = def.storage_version().map(str::to_owned)
    {
        let status = def.status.get_or_insert_with(CustomResourceDefinitionStatus::default);
        status.stored_versions = Some(vec![storage]);
    }
}

/// Applies the v1 defaults to a spec.
pub fn set_spec_defaults(spec: &mut CustomResourceDefinitionSpec) {
    let names = &mut spec.names;
    if names.singular.as_deref().unwrap_or_default().is_empty() && !names.kind.is_empty() {
        names.singular = Some(names.kind.to_lowercase());
    }
    if names.list_kind.as_deref().unwrap_or_default().is_empty() && !names.kind.is_empty() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    let conversion = spec
        .conversion
        .get_or_insert_with(|| CustomResourceConversion { strategy: NONE_CONVERTER.into(), webhook: None });
    let service = conversion.webhook.as_mut().and_then(|w| w.client_config.as_mut()).and_then(|c| c.service.as_mut());
    if let Some(service) = service
        && service.port.is_none()
    {
        service.port = Some(DEFAULT_SERVICE_PORT);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn applies_the_v1_defaults() {
        let mut def = ResourceDefinition::from_document(&json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": "foos.example.com"},
            "spec": {
                "group": "example.com", "scope": "Cluster",
                "names": {"plural": "foos", "kind": "FooBar"},
                "versions": [{"name": "v1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]
            }
        }))
        .unwrap();
        set_defaults(&mut def);
        assert_eq!(def.spec.names.singular.as_deref(), Some("foobar"));
        assert_eq!(def.spec.names.list_kind.as_deref(), Some("FooBarList"));
        assert_eq!(def.spec.conversion.as_ref().unwrap().strategy, "None");
        assert_eq!(def.stored_versions(), ["v2".to_owned()]);

        // Defaults never overwrite what is there.
        def.status.as_mut().unwrap().stored_versions = Some(vec!["v1".into(), "v2".into()]);
        set_defaults(&mut def);
        assert_eq!(def.stored_versions().len(), 2);
    }

    #[test]
    fn defaults_the_webhook_service_port() {
        let mut def = ResourceDefinition::from_document(&json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "spec": {"conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "svc", "namespace": "ns"}}}}}
        }))
        .unwrap();
        set_defaults(&mut def);
        let port = def.spec.conversion.unwrap().webhook.unwrap().client_config.unwrap().service.unwrap().port;
        assert_eq!(port, Some(443));
    }
}
