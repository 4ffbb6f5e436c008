//! NamespaceLifecycle for creates (standalone, where versa serves Namespaces): nothing is
//! created in a namespace that does not exist or is being terminated, with kube's messages
//! (other verbs are not refused, as in kube).

use serde_json::{Value, json};
use versa_registry::Builtin;

use super::Ctx;
use crate::status::Status;

/// NamespaceLifecycle for a create of a namespaced object: the namespace must exist and not be
/// terminating. Only where versa serves Namespaces (standalone).
pub async fn admit_create_in_namespace(ctx: &Ctx) -> Result<(), Status> {
    let Some(namespace) = ctx.namespace.as_deref().filter(|_| ctx.res.namespaced) else { return Ok(()) };
    let Some(namespaces) = ctx.state.registry.core(Builtin::Namespace) else { return Ok(()) };
    let (group, plural) = namespaces.stored_as();
    let key = ctx.state.keys.object(group, plural, None, namespace);
    let kv = ctx.state.store.get(&key).await.map_err(ctx.storage_error(namespace))?;
    let Some(kv) = kv else { return Err(Status::not_found("", "namespaces", namespace)) };
    let obj: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
    let terminating = obj.pointer("/metadata/deletionTimestamp").is_some()
        || obj.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    if !terminating {
        return Ok(());
    }
    let who = crate::status::qualified(&ctx.res.group, &ctx.res.plural);
    let subject = if ctx.name.is_empty() { who } else { format!("{who} {:?}", ctx.name) };
    Err(Status::forbidden(
        format!(
            "{subject} is forbidden: unable to create new content in namespace {namespace} because it is being terminated"
        ),
        Some(json!({
            "name": ctx.name, "group": ctx.res.group, "kind": ctx.res.plural,
            "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}],
        })),
    ))
}
