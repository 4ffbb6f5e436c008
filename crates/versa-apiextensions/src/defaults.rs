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

/// Applies the v1 spec defaults to a definition document as kube's decoder does, before
/// anything else reads the request (its field manager included): `singular`, `listKind`,
/// `conversion` and the webhook service port are added where missing, and nothing else of the
/// document is touched (unknown fields stay for the caller to report). The rules are
/// [`set_spec_defaults`]'s, run on the names and the conversion strategy alone — the
/// versions, and their schemas, are not read.
pub fn set_document_defaults(doc: &mut serde_json::Value) {
    use serde_json::{Value, json};
    let Some(spec) = doc.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let names = spec.get("names").cloned().and_then(|n| serde_json::from_value(n).ok());
    let mut typed = CustomResourceDefinitionSpec { names: names.unwrap_or_default(), ..Default::default() };
    set_spec_defaults(&mut typed);
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        for (field, value) in [("singular", &typed.names.singular), ("listKind", &typed.names.list_kind)] {
            let missing = names.get(field).and_then(Value::as_str).is_none_or(str::is_empty);
            if let (true, Some(value)) = (missing, value) {
                names.insert(field.to_owned(), json!(value));
            }
        }
    }
    match spec.get_mut("conversion") {
        None | Some(Value::Null) => {
            spec.insert("conversion".to_owned(), json!({"strategy": NONE_CONVERTER}));
        }
        Some(conversion) => {
            if let Some(service) =
                conversion.pointer_mut("/webhook/clientConfig/service").and_then(Value::as_object_mut)
                && service.get("port").is_none_or(Value::is_null)
            {
                service.insert("port".to_owned(), json!(DEFAULT_SERVICE_PORT));
            }
        }
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
    fn defaults_a_document_as_a_definition() {
        let mut doc = json!({"spec": {"group": "example.com", "names": {"plural": "foos", "kind": "FooBar", "x": 1},
                                      "versions": [{"name": "v1", "served": true, "storage": true}]}});
        set_document_defaults(&mut doc);
        assert_eq!(
            doc["spec"],
            json!({"group": "example.com", "conversion": {"strategy": "None"},
                   "names": {"plural": "foos", "kind": "FooBar", "x": 1, "singular": "foobar", "listKind": "FooBarList"},
                   "versions": [{"name": "v1", "served": true, "storage": true}]})
        );
        let mut doc = json!({"spec": {"names": {"plural": "foos", "kind": "FooBar", "singular": "fb", "listKind": "FBs"},
                                      "conversion": {"strategy": "Webhook", "cel": {}, "webhook": {"clientConfig": {"service": {"name": "s"}}}}}});
        set_document_defaults(&mut doc);
        assert_eq!(
            doc["spec"]["names"],
            json!({"plural": "foos", "kind": "FooBar", "singular": "fb", "listKind": "FBs"})
        );
        assert_eq!(
            doc["spec"]["conversion"],
            json!({"strategy": "Webhook", "cel": {}, "webhook": {"clientConfig": {"service": {"name": "s", "port": 443}}}})
        );
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
