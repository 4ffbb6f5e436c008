//! A binding's parameters: kube's `CollectParams`. With a `paramKind` and a `paramRef`, the
//! objects named (`name`) or selected (`selector`), in the binding's namespace, or the
//! request's for a namespaced kind; one evaluation per object. Without either, one evaluation
//! with `params` null. No object found is no evaluation at all, unless the binding says
//! `parameterNotFoundAction: Deny`.

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::ParamRef;
use serde_json::Value;

use crate::attributes::labels_of;
use crate::seams::{Host, ParamKind, ParamScope};
use crate::selector::Selector;

/// Go's `%v` of a `ParamKind` (its generated `String()`).
pub(crate) fn param_kind_string(k: &ParamKind) -> String {
    format!("&ParamKind{{APIVersion:{},Kind:{},}}", k.api_version, k.kind)
}

/// kube's `%v` of the parsed group-version-kind of a `paramKind`: `example.com/v1, Kind=Foo`.
pub(crate) fn param_gvk_string(k: &ParamKind) -> String {
    let (group, version) = k.api_version.rsplit_once('/').unwrap_or(("", &k.api_version));
    format!("{group}/{version}, Kind={}", k.kind)
}

/// The parameter objects of one binding (`None`: evaluate with `params` null). The error is
/// kube's text, reported as the binding's configuration error.
pub(crate) async fn collect(
    kind: Option<&ParamKind>,
    param_ref: Option<&ParamRef>,
    namespace: &str,
    host: &Host<'_>,
) -> Result<Vec<Option<Arc<Value>>>, String> {
    let (Some(kind), Some(param_ref)) = (kind, param_ref) else { return Ok(vec![None]) };
    let Some(scope) = host.params.scope(kind) else {
        return Err(format!("paramKind kind `{}` not known", param_kind_string(kind)));
    };
    let ref_namespace = param_ref.namespace.as_deref().unwrap_or("");
    let lookup_namespace = match scope {
        ParamScope::Namespaced if !ref_namespace.is_empty() => Some(ref_namespace),
        ParamScope::Namespaced if !namespace.is_empty() => Some(namespace),
        ParamScope::Namespaced => {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
        ParamScope::Cluster if !ref_namespace.is_empty() => {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
        }
        ParamScope::Cluster => None,
    };
    let name = param_ref.name.as_deref().unwrap_or("");
    let params: Vec<Arc<Value>> = if !name.is_empty() {
        if param_ref.selector.is_some() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        host.params.get(kind, lookup_namespace, name).await.map_err(|e| e.to_string())?.into_iter().collect()
    } else if let Some(selector) = &param_ref.selector {
        let selector = Selector::compile(Some(selector)).map_err(|e| e.to_string())?;
        let all = host.params.list(kind, lookup_namespace).await.map_err(|e| e.to_string())?;
        all.into_iter().filter(|p| selector.matches(labels_of(p))).collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if params.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(params.into_iter().map(Some).collect())
}

/// A policy's `paramKind`, parsed.
pub(crate) fn param_kind(k: Option<&k8s_openapi::api::admissionregistration::v1::ParamKind>) -> Option<ParamKind> {
    k.map(|k| ParamKind {
        api_version: k.api_version.clone().unwrap_or_default(),
        kind: k.kind.clone().unwrap_or_default(),
    })
}
