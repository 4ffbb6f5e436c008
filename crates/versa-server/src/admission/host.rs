//! What the admission chain asks the server ([`versa_admission::Host`]), answered from
//! versa's own store and registry: Namespaces (standalone serves them), policy parameters from
//! the served resources (in cluster mode also of kube-apiserver's kinds: `kube_params.rs`), the versions of a served resource and conversions between them
//! (`matchPolicy: Equivalent`), through the storage boundary like every other read; and the
//! structured merge of MutatingAdmissionPolicies' ApplyConfiguration mutations, by the
//! version's schema with the same merge server-side apply uses; and the served kinds' schemas,
//! for the type checking of ValidatingAdmissionPolicies (`status.typeChecking`).

use std::sync::Arc;

use serde_json::Value;
use versa_admission::seams::StructuredMerge;
use versa_admission::{
    BoxFuture, GroupVersionKind, GroupVersionResource, HostError, NamespaceLookup, ParamKind, ParamLookup, ParamScope,
    Resources, SchemaResolver,
};
use versa_registry::fields::Manager;
use versa_registry::storage::Boundary;
use versa_registry::strategy::Strategy;
use versa_registry::versions::Conversions;
use versa_registry::{Builtin, Resource, Snapshot};
use versa_schema::Structural;
use versa_storage::ListOptions;

use crate::state::State;

/// The host of one request: the state, and the served set the request was routed with.
pub struct StoreHost<'a> {
    pub state: &'a State,
    pub snapshot: Arc<Snapshot>,
}

impl std::fmt::Debug for StoreHost<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreHost").finish_non_exhaustive()
    }
}

impl StoreHost<'_> {
    /// The served resource of `group` with kind `kind`.
    fn by_kind(&self, group: &str, kind: &str) -> Option<&Arc<Resource>> {
        self.snapshot.by_kind(group, kind)
    }

    /// The served resource of `group` and `plural`.
    fn by_resource(&self, group: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.snapshot.route(group, plural)
    }

    /// An object read through `res`'s boundary at `version`.
    async fn read(&self, res: &Resource, version: &str, key: &str) -> Result<Option<Arc<Value>>, HostError> {
        let Some(kv) = self.state.store.get(key).await.map_err(|e| HostError::Read(e.into()))? else {
            return Ok(None);
        };
        let boundary = Boundary::new(res, version, &self.state.metrics);
        let obj = boundary.from_storage(&kv).await.map_err(|e| HostError::Read(e.into()))?;
        Ok(Some(Arc::new(obj)))
    }
}

/// `(group, version)` of an `apiVersion`.
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

impl NamespaceLookup for StoreHost<'_> {
    fn namespace<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Arc<Value>>, HostError>> {
        Box::pin(async move {
            if let Some(kube) = self.state.admission.kube_namespace(name) {
                return Ok(kube);
            }
            let Some(namespaces) = self.state.registry.core(Builtin::Namespace) else { return Ok(None) };
            let (group, plural) = namespaces.stored_as();
            let key = self.state.keys.object(group, plural, None, name);
            self.read(&namespaces, "v1", &key).await
        })
    }
}

impl ParamLookup for StoreHost<'_> {
    fn scope(&self, kind: &ParamKind) -> Option<ParamScope> {
        let (group, version) = split_api_version(&kind.api_version);
        let Some(res) = self.by_kind(group, &kind.kind).filter(|r| r.served_version(version).is_some()) else {
            // Cluster mode: one of kube-apiserver's own kinds.
            return self.state.admission.kube_params.scope(kind);
        };
        Some(if res.namespaced { ParamScope::Namespaced } else { ParamScope::Cluster })
    }

    fn get<'a>(
        &'a self,
        kind: &'a ParamKind,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<Value>>, HostError>> {
        Box::pin(async move {
            let (group, version) = split_api_version(&kind.api_version);
            let Some(res) = self.by_kind(group, &kind.kind).cloned() else {
                return self.state.admission.kube_params.get(kind, namespace, name);
            };
            let (sg, sp) = res.stored_as();
            let key = self.state.keys.object(sg, sp, namespace.filter(|_| res.namespaced), name);
            self.read(&res, version, &key).await
        })
    }

    fn list<'a>(
        &'a self,
        kind: &'a ParamKind,
        namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Arc<Value>>, HostError>> {
        Box::pin(async move {
            let (group, version) = split_api_version(&kind.api_version);
            let Some(res) = self.by_kind(group, &kind.kind).cloned() else {
                return self.state.admission.kube_params.list(kind, namespace);
            };
            let (sg, sp) = res.stored_as();
            let prefix = match namespace.filter(|_| res.namespaced) {
                Some(ns) => self.state.keys.namespace(sg, sp, ns),
                None => self.state.keys.resource(sg, sp),
            };
            let boundary = Boundary::new(&res, version, &self.state.metrics);
            let mut out = Vec::new();
            let mut token = None;
            loop {
                let options = ListOptions { limit: 500, continue_token: token.take(), revision: 0 };
                let page = self.state.store.list(&prefix, options).await.map_err(|e| HostError::Read(e.into()))?;
                let objects = boundary.from_storage_batch(&page.items).await.map_err(|e| HostError::Read(e.into()))?;
                out.extend(objects.into_iter().map(Arc::new));
                match page.continue_token {
                    Some(t) => token = Some(t),
                    None => return Ok(out),
                }
            }
        })
    }
}

impl Resources for StoreHost<'_> {
    fn equivalent_resources(&self, resource: &GroupVersionResource, _subresource: &str) -> Vec<GroupVersionResource> {
        let Some(res) = self.by_resource(&resource.group, &resource.resource) else { return Vec::new() };
        res.versions
            .iter()
            .filter(|v| v.served)
            .map(|v| GroupVersionResource::new(&res.group, &v.name, &res.plural))
            .collect()
    }

    fn kind_for(&self, resource: &GroupVersionResource, subresource: &str) -> Option<GroupVersionKind> {
        let res = self.by_resource(&resource.group, &resource.resource)?;
        res.served_version(&resource.version)?;
        Some(match subresource {
            "scale" => GroupVersionKind::new("autoscaling", "v1", "Scale"),
            _ => GroupVersionKind::new(&res.group, &resource.version, &res.kind),
        })
    }

    fn convert<'a>(&'a self, object: &'a Value, to: &'a GroupVersionKind) -> BoxFuture<'a, Result<Value, HostError>> {
        Box::pin(async move {
            let res = self.by_kind(&to.group, &to.kind).ok_or_else(|| HostError::UnknownKind(to.clone()))?;
            let boundary = Boundary::new(res, &to.version, &self.state.metrics);
            let converted = boundary.convert(vec![object.clone()], &to.version).await;
            let mut converted = converted.map_err(|e| HostError::Conversion(e.into()))?;
            converted.pop().ok_or_else(|| HostError::Conversion("the converter returned no object".into()))
        })
    }
}

/// The served kinds and their schemas, for the type checking of policies.
impl SchemaResolver for StoreHost<'_> {
    fn kinds_for(&self, resource: &GroupVersionResource) -> Vec<GroupVersionKind> {
        let served = self.by_resource(&resource.group, &resource.resource);
        let served = served.filter(|res| res.served_version(&resource.version).is_some());
        served.map(|res| GroupVersionKind::new(&res.group, &resource.version, &res.kind)).into_iter().collect()
    }

    fn schema(&self, kind: &GroupVersionKind) -> Option<Arc<Structural>> {
        self.by_kind(&kind.group, &kind.kind)?.version(&kind.version)?.schema()
    }
}

impl StructuredMerge for StoreHost<'_> {
    fn merge(
        &self,
        kind: &GroupVersionKind,
        object: &Value,
        configuration: &Value,
    ) -> Option<Result<Value, HostError>> {
        let res = self.by_kind(&kind.group, &kind.kind)?;
        let strategy = Strategy::at(res, &kind.version)?;
        strategy.ver.schema()?;
        // An apply by a manager that owns nothing yet, forced: the configuration's fields merged
        // into the object by the schema (map lists by key, atomic lists and maps replaced),
        // nothing else touched; the bookkeeping it leaves in managedFields is not kept.
        let manager = Manager { name: "mutating-admission-policy".into(), subresource: "" };
        let mut live = object.clone();
        let managed = live.get_mut("metadata").and_then(Value::as_object_mut).and_then(|m| m.remove("managedFields"));
        // Without managedFields every owner is at this version: nothing to convert.
        let merged = strategy.apply(&manager, Some(&live), configuration, true, &Conversions::default(), &());
        let merged = merged.map_err(|e| HostError::Merge(e.into()));
        Some(merged.map(|mut merged| {
            if let Some(meta) = merged.get_mut("metadata").and_then(Value::as_object_mut) {
                match &managed {
                    Some(m) => meta.insert("managedFields".into(), m.clone()),
                    None => meta.remove("managedFields"),
                };
            }
            merged
        }))
    }
}
