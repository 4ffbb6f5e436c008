//! ServiceAccounts (standalone, `v1`): the identities workloads and `kubectl create token`
//! name. kube's `ValidateServiceAccount` checks nothing beyond object metadata (the name a DNS
//! subdomain, as for every core kind here), so the kind is its schema: `secrets` (object
//! references), `imagePullSecrets` (local references), `automountServiceAccountToken`. No
//! `generation`; strategic merge patch knows only their metadata; client-go's typed clients
//! (`kubectl create serviceaccount`) may send them as protobuf.

use serde_json::{Value, json};

use super::patch::{METADATA_ONLY, Schema};
use super::{CoreKind, KindRules, Part, core_definition, custom};
use crate::error::Result;
use crate::resource::{Builtin, Resource, Version};

/// The kind's identity and built-in definition.
pub const BUILTIN: Builtin = Builtin::new("serviceaccounts", definition);

/// Its registration.
pub static KIND: CoreKind = CoreKind { builtin: BUILTIN, rules: &ServiceAccount };

fn definition() -> Value {
    let reference = json!({"type": "object", "properties": {
        "kind": {"type": "string"}, "namespace": {"type": "string"}, "name": {"type": "string"},
        "uid": {"type": "string"}, "apiVersion": {"type": "string"}, "resourceVersion": {"type": "string"},
        "fieldPath": {"type": "string"}}});
    core_definition(
        BUILTIN.name(),
        "",
        "Namespaced",
        json!({"plural": "serviceaccounts", "singular": "serviceaccount", "kind": "ServiceAccount", "shortNames": ["sa"]}),
        json!({
            // kube's `SECRETS` column counts `secrets`, which a JSONPath column cannot: the
            // default `Age` alone until the Table convertor can count.
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "secrets": {"type": "array", "items": reference},
                "imagePullSecrets": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "automountServiceAccountToken": {"type": "boolean"}}}},
        }),
    )
}

/// The rules of ServiceAccounts.
#[derive(Debug)]
pub struct ServiceAccount;

impl KindRules for ServiceAccount {
    fn takes_protobuf(&self) -> bool {
        true
    }

    fn allows_unconditional_update(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn has_generation(&self) -> bool {
        false
    }

    fn has_token_subresource(&self) -> bool {
        true
    }

    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit(res, ver, obj, old, part, warnings, |_, _| versa_schema::ErrorList::new())
    }
}
