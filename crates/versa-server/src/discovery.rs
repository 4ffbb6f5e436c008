//! Discovery documents: `/api`, `/apis`, `/apis/<group>`, `/apis/<group>/<version>` and the
//! aggregated `apidiscovery.k8s.io/v2` form, built from the served definitions.
//!
//! This mirrors apiextensions-apiserver's `customresource_discovery_controller.go` (which
//! builds the per-group and per-version documents and the aggregated entries of CRDs) and the
//! generic apiserver's aggregated handler (`endpoints/discovery/aggregated/handler.go`):
//!
//! - Only served versions appear. A group lists the union of its definitions' served versions,
//!   sorted by Kubernetes version priority; the first is `preferredVersion`.
//! - Resources use the definition's *accepted* names (`status.acceptedNames`, falling back to
//!   `spec.names` when there is no status yet). Verbs are
//!   `delete deletecollection get list patch create update watch`, or
//!   `delete deletecollection get list watch` while the definition is `Terminating`.
//!   `storageVersionHash` is base64 of the first 8 bytes of
//!   sha256(`<group>/<storage version>/<spec.names.kind>`), set only when the storage version
//!   is served. `<plural>/status` (kind of the resource) and `<plural>/scale` (`autoscaling/v1`
//!   `Scale`) follow each resource that has them, with verbs `get patch update`; a core kind
//!   with a `token` subresource (ServiceAccounts) lists `<plural>/token`, an
//!   `authentication.k8s.io/v1` `TokenRequest`, with verb `create`, as kube does.
//! - Order: groups by name (CRD groups all have group priority 1000 in aggregated discovery, so
//!   kube sorts them by name too), resources by plural (aggregated discovery sorts so; the
//!   legacy per-version list is in informer order upstream, i.e. unspecified).
//!
//! Definitions are taken as given: the caller passes only established ones (and the synthesized
//! definition of `versa.dev/v1` `resourcedefinitions`, treated like any other).
//!
//! Every document but `/apis` itself is about one group, and is built from that group's
//! definitions alone, once per change of the group ([`GroupDocs`], kept with the registry's
//! `Group`, which a registry snapshot shares with the next when the group did not change);
//! `/apis` is built once per snapshot and kept gzip-compressed ([`gzip_json`]): with a thousand
//! groups its aggregated form is about a MiB of JSON and a tenth of that compressed. Clients
//! that accept gzip (client-go's transport, kubectl) get the kept bytes; others get them
//! inflated. The per-group documents are a few hundred bytes each and stay as they are.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionNames, CustomResourceDefinitionVersion,
};
use serde_json::{Map, Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_registry::Group;

/// `Content-Type` of an aggregated discovery (v2) response.
pub const AGGREGATED_V2_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

const VERBS: [&str; 8] = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];
const TERMINATING_VERBS: [&str; 5] = ["delete", "deletecollection", "get", "list", "watch"];
const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];
/// The kind a `token` subresource takes and answers (group, version, kind).
const TOKEN_REQUEST: (&str, &str, &str) = ("authentication.k8s.io", "v1", "TokenRequest");

/// `/api`: `APIVersions` — `v1` when the core kinds are served (standalone mode), else none
/// (behind kube-apiserver the core group is kube's).
///
/// Prefer answering `/api` with [`aggregated`] of the core definitions when the client accepts
/// aggregated discovery: client-go gives up aggregated discovery for `/apis` too when `/api`
/// answers the legacy form (`downloadLegacy` in discovery_client.go).
pub fn api_versions(core: &[&ResourceDefinition]) -> Value {
    let versions: Vec<String> = groups(core).remove("").unwrap_or_default();
    json!({"kind": "APIVersions", "versions": versions, "serverAddressByClientCIDRs": []})
}

/// The definitions split into the core group's (`""`, served under `/api`) and the named
/// groups' (under `/apis`).
pub fn split_core<'d>(defs: &[&'d ResourceDefinition]) -> (Vec<&'d ResourceDefinition>, Vec<&'d ResourceDefinition>) {
    defs.iter().partition(|d| d.spec.group.is_empty())
}

/// `/apis`: the `APIGroupList`.
pub fn group_list(defs: &[&ResourceDefinition]) -> Value {
    let groups: Vec<Value> = groups(defs).iter().map(|(name, versions)| group_body(name, versions)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`: the `APIGroup`, or `None` when no definition serves that group.
pub fn group_doc(defs: &[&ResourceDefinition], group: &str) -> Option<Value> {
    let groups = groups(defs);
    let versions = groups.get(group)?;
    let mut doc = group_body(group, versions);
    if let Value::Object(m) = &mut doc {
        m.insert("kind".into(), json!("APIGroup"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

/// `/apis/<group>/<version>`: the `APIResourceList`, or `None` when no definition of the group
/// serves that version.
pub fn resource_list(defs: &[&ResourceDefinition], group: &str, version: &str) -> Option<Value> {
    let views = served_in(defs, group, version);
    if views.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for view in &views {
        let mut main = Map::new();
        main.insert("name".into(), json!(view.names.plural));
        main.insert("singularName".into(), json!(view.singular()));
        main.insert("namespaced".into(), json!(view.namespaced));
        main.insert("kind".into(), json!(view.names.kind));
        main.insert("verbs".into(), json!(view.verbs()));
        insert_nonempty(&mut main, "shortNames", view.names.short_names.as_deref());
        insert_nonempty(&mut main, "categories", view.names.categories.as_deref());
        if let Some(hash) = &view.storage_version_hash {
            main.insert("storageVersionHash".into(), json!(hash));
        }
        resources.push(Value::Object(main));
        if view.has_status() {
            resources.push(json!({
                "name": format!("{}/status", view.names.plural),
                "singularName": "",
                "namespaced": view.namespaced,
                "kind": view.names.kind,
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if view.has_token() {
            resources.push(json!({
                "name": format!("{}/token", view.names.plural),
                "singularName": "",
                "namespaced": view.namespaced,
                "group": TOKEN_REQUEST.0,
                "version": TOKEN_REQUEST.1,
                "kind": TOKEN_REQUEST.2,
                "verbs": ["create"],
            }));
        }
        if view.has_scale() {
            resources.push(json!({
                "name": format!("{}/scale", view.names.plural),
                "singularName": "",
                "namespaced": view.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") },
        "resources": resources,
    }))
}

/// `/apis` in the aggregated form (`Accept: application/json;g=apidiscovery.k8s.io;v=v2;
/// as=APIGroupDiscoveryList`), served with [`AGGREGATED_V2_CONTENT_TYPE`]. The `v2beta1` form is
/// the same document with `apiVersion: apidiscovery.k8s.io/v2beta1`.
pub fn aggregated(defs: &[&ResourceDefinition]) -> Value {
    let mut items = Vec::new();
    for (group, versions) in groups(defs) {
        let versions: Vec<Value> = versions
            .iter()
            .map(|version| {
                let resources: Vec<Value> = served_in(defs, &group, version)
                    .iter()
                    .map(|view| aggregated_resource(view, &group, version))
                    .collect();
                json!({"version": version, "resources": resources, "freshness": "Current"})
            })
            .collect();
        // ObjectMeta always serialises creationTimestamp, as `null` here; the core group has
        // no name (omitted, as kube omits empty names).
        let metadata = if group.is_empty() {
            json!({"creationTimestamp": null})
        } else {
            json!({"name": group, "creationTimestamp": null})
        };
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// The review groups standalone versa answers (`crate::reviews::LISTED`), added to `/apis` —
/// the `APIGroupList`, or with `aggregated` the `APIGroupDiscoveryList` — after the groups of
/// the definitions, as kube lists its built-in groups.
pub fn add_review_groups(doc: &mut Value, aggregated: bool) {
    let mut groups: Vec<&str> = crate::reviews::LISTED.iter().map(|(g, ..)| *g).collect();
    groups.dedup();
    let (key, entries): (&str, Vec<Value>) = if aggregated {
        let entries = groups
            .iter()
            .map(|group| {
                let resources: Vec<Value> = crate::reviews::LISTED
                    .iter()
                    .filter(|(g, ..)| g == group)
                    .map(|(_, plural, kind, namespaced)| {
                        json!({"resource": plural, "responseKind": {"group": group, "version": "v1", "kind": kind},
                            "scope": if *namespaced { "Namespaced" } else { "Cluster" },
                            "singularResource": kind.to_lowercase(), "verbs": ["create"]})
                    })
                    .collect();
                json!({"metadata": {"name": group, "creationTimestamp": null},
                    "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}]})
            })
            .collect();
        ("items", entries)
    } else {
        ("groups", groups.iter().map(|group| group_body(group, &["v1".to_owned()])).collect())
    };
    if let Some(list) = doc.get_mut(key).and_then(Value::as_array_mut) {
        list.extend(entries);
    }
}

/// `/apis/<group>` or `/apis/<group>/<version>` of a review group (`version` none for the
/// first), as kube serves them; `None` for any other path.
pub fn review_doc(group: &str, version: Option<&str>) -> Option<Value> {
    if !crate::reviews::LISTED.iter().any(|(g, ..)| *g == group) {
        return None;
    }
    let Some(version) = version else {
        let mut doc = group_body(group, &["v1".to_owned()]);
        if let Value::Object(m) = &mut doc {
            m.insert("kind".into(), json!("APIGroup"));
            m.insert("apiVersion".into(), json!("v1"));
        }
        return Some(doc);
    };
    if version != "v1" {
        return None;
    }
    let resources: Vec<Value> = crate::reviews::LISTED
        .iter()
        .filter(|(g, ..)| *g == group)
        .map(|(_, plural, kind, namespaced)| {
            json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": namespaced, "kind": kind,
                "verbs": ["create"]})
        })
        .collect();
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/v1"),
        "resources": resources}))
}

/// The documents of one group, as JSON: built on first use from the group's definitions, and
/// kept with the group until it changes.
#[derive(Debug, Default)]
pub struct GroupDocs {
    /// `/apis/<group>` (the `APIGroup`); for the core group, `/api` (the `APIVersions`).
    pub group: Option<bytes::Bytes>,
    /// `/apis/<group>/<version>` (`/api/<version>`) per served version, by version (a sorted
    /// slice: kept for every group, a map's node would be larger than the names in it).
    versions: Box<[(Box<str>, bytes::Bytes)]>,
    /// For the core group, `/api` in the aggregated form.
    pub aggregated: Option<bytes::Bytes>,
}

impl GroupDocs {
    /// The documents of `group` named `name`, built once per group.
    pub fn of(name: &str, group: &Group) -> Arc<GroupDocs> {
        let derived = group.derived.get_or_init(|| Box::new(Arc::new(GroupDocs::build(name, group))));
        match derived.downcast_ref::<Arc<GroupDocs>>() {
            Some(docs) => docs.clone(),
            // Nothing else is kept there; built anew rather than failing.
            None => Arc::new(GroupDocs::build(name, group)),
        }
    }

    /// `/apis/<group>/<version>` (`/api/<version>`), if `version` is served.
    pub fn version(&self, version: &str) -> Option<bytes::Bytes> {
        let at = versa_registry::find_key(&self.versions, version).ok()?;
        Some(self.versions[at].1.clone())
    }

    fn build(name: &str, group: &Group) -> GroupDocs {
        let defs = group.definitions();
        // Copied out of the serializer's buffer, whose spare capacity would be kept with them.
        let bytes = |doc: &Value| bytes::Bytes::copy_from_slice(&serde_json::to_vec(doc).unwrap_or_default());
        let mut versions: Vec<(Box<str>, bytes::Bytes)> = groups(&defs)
            .remove(name)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|version| resource_list(&defs, name, &version).map(|doc| (version.into(), bytes(&doc))))
            .collect();
        versions.sort_by(|a, b| a.0.cmp(&b.0));
        let versions = versions.into_boxed_slice();
        if name.is_empty() {
            GroupDocs {
                group: Some(bytes(&api_versions(&defs))),
                versions,
                aggregated: Some(bytes(&aggregated(&defs))),
            }
        } else {
            GroupDocs { group: group_doc(&defs, name).map(|doc| bytes(&doc)), versions, aggregated: None }
        }
    }
}

/// `doc` as JSON, gzip-compressed.
pub fn gzip_json(doc: &Value) -> bytes::Bytes {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into memory does not fail; an empty body would be answered if it did.
    let done = serde_json::to_writer(&mut gzip, doc).ok().and_then(|()| gzip.finish().ok());
    bytes::Bytes::from(done.unwrap_or_default())
}

/// What [`gzip_json`] compressed, inflated.
pub fn gunzip(gzip: &[u8]) -> bytes::Bytes {
    use std::io::Read as _;
    let mut out = Vec::new();
    // Only what `gzip_json` wrote is read here.
    let _ = flate2::read::GzDecoder::new(gzip).read_to_end(&mut out);
    bytes::Bytes::from(out)
}

/// kube's `discovery.StorageVersionHash`.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

fn aggregated_resource(view: &View<'_>, group: &str, version: &str) -> Value {
    let mut r = Map::new();
    r.insert("resource".into(), json!(view.names.plural));
    r.insert("responseKind".into(), json!({"group": group, "version": version, "kind": view.names.kind}));
    r.insert("scope".into(), json!(if view.namespaced { "Namespaced" } else { "Cluster" }));
    r.insert("singularResource".into(), json!(view.singular()));
    r.insert("verbs".into(), json!(view.verbs()));
    insert_nonempty(&mut r, "shortNames", view.names.short_names.as_deref());
    insert_nonempty(&mut r, "categories", view.names.categories.as_deref());
    let mut subresources = Vec::new();
    if view.has_status() {
        subresources.push(json!({
            "subresource": "status",
            "responseKind": {"group": group, "version": version, "kind": view.names.kind},
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if view.has_token() {
        subresources.push(json!({
            "subresource": "token",
            "responseKind": {"group": TOKEN_REQUEST.0, "version": TOKEN_REQUEST.1, "kind": TOKEN_REQUEST.2},
            "verbs": ["create"],
        }));
    }
    if view.has_scale() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if !subresources.is_empty() {
        r.insert("subresources".into(), Value::Array(subresources));
    }
    Value::Object(r)
}

fn insert_nonempty(m: &mut Map<String, Value>, key: &str, values: Option<&[String]>) {
    if let Some(values) = values.filter(|v| !v.is_empty()) {
        m.insert(key.into(), json!(values));
    }
}

fn group_body(name: &str, versions: &[String]) -> Value {
    let entries: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v})).collect();
    let preferred = entries.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": entries, "preferredVersion": preferred})
}

/// Every group with at least one served version, its served versions sorted by priority.
fn groups(defs: &[&ResourceDefinition]) -> BTreeMap<String, Vec<String>> {
    let mut by_group: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for def in defs {
        for v in def.spec.versions.iter().filter(|v| v.served) {
            by_group.entry(def.spec.group.clone()).or_default().insert(v.name.clone());
        }
    }
    by_group
        .into_iter()
        .map(|(group, versions)| {
            let mut versions: Vec<String> = versions.into_iter().collect();
            versa_apiextensions::sort_by_version_priority(&mut versions);
            (group, versions)
        })
        .collect()
}

/// The definitions of `group` serving `version`, by plural.
fn served_in<'d>(defs: &[&'d ResourceDefinition], group: &str, version: &str) -> Vec<View<'d>> {
    let mut views: Vec<View<'d>> = defs
        .iter()
        .filter(|d| d.spec.group == group)
        .filter_map(|d| {
            let v = d.spec.versions.iter().find(|v| v.served && v.name == version)?;
            Some(View::new(d, v))
        })
        .collect();
    views.sort_by(|a, b| a.names.plural.cmp(&b.names.plural));
    views
}

/// What discovery needs of one definition at one served version.
struct View<'d> {
    group: &'d str,
    names: &'d CustomResourceDefinitionNames,
    version: &'d CustomResourceDefinitionVersion,
    namespaced: bool,
    terminating: bool,
    storage_version_hash: Option<String>,
}

impl<'d> View<'d> {
    fn new(def: &'d ResourceDefinition, version: &'d CustomResourceDefinitionVersion) -> View<'d> {
        let names = def
            .status
            .as_ref()
            .and_then(|s| s.accepted_names.as_ref())
            .filter(|n| !n.plural.is_empty())
            .unwrap_or(&def.spec.names);
        let storage_version_hash = def
            .spec
            .versions
            .iter()
            .find(|v| v.served && v.storage)
            .filter(|_| !def.spec.names.kind.is_empty())
            .map(|v| storage_version_hash(&def.spec.group, &v.name, &def.spec.names.kind));
        View {
            group: &def.spec.group,
            names,
            version,
            namespaced: def.spec.scope == "Namespaced",
            terminating: def.condition_is_true("Terminating"),
            storage_version_hash,
        }
    }

    /// The singular name; `spec.names` defaulting makes it the lowercased kind when unset.
    fn singular(&self) -> String {
        match self.names.singular.as_deref() {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => self.names.kind.to_lowercase(),
        }
    }

    fn verbs(&self) -> &'static [&'static str] {
        if self.terminating { &TERMINATING_VERBS } else { &VERBS }
    }

    fn has_status(&self) -> bool {
        self.version.subresources.as_ref().is_some_and(|s| s.status.is_some())
    }

    /// Whether the resource is a core kind with the `token` subresource (ServiceAccounts).
    fn has_token(&self) -> bool {
        self.group.is_empty()
            && versa_registry::kinds::core_kind_named(&self.names.kind).is_some_and(|k| k.rules.has_token_subresource())
    }

    fn has_scale(&self) -> bool {
        self.version.subresources.as_ref().is_some_and(|s| s.scale.is_some())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    fn def(v: Value) -> ResourceDefinition {
        ResourceDefinition::from_document(&v).unwrap()
    }

    fn crontabs() -> ResourceDefinition {
        def(json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList",
                          "shortNames": ["ct"], "categories": ["all"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}},
                    {"name": "v2alpha1", "served": false, "storage": false},
                ],
            },
            "status": {
                "conditions": [{"type": "Established", "status": "True"}],
                "acceptedNames": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList",
                                  "shortNames": ["ct"], "categories": ["all"]},
            },
        }))
    }

    fn widgets(extra_version: &str) -> ResourceDefinition {
        def(json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": "widgets.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Cluster",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": extra_version, "served": true, "storage": true}],
            },
        }))
    }

    fn rd() -> ResourceDefinition {
        def(json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": "resourcedefinitions.versa.dev"},
            "spec": {
                "group": "versa.dev", "scope": "Cluster",
                "names": {"plural": "resourcedefinitions", "singular": "resourcedefinition", "kind": "ResourceDefinition",
                          "shortNames": ["rd"]},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}}],
            },
        }))
    }

    #[test]
    fn storage_version_hash_matches_kube() {
        assert_eq!(storage_version_hash("stable.example.com", "v1", "CronTab"), "EdX2FP+L0js=");
    }

    #[test]
    fn group_documents() {
        let (c, w, r) = (crontabs(), widgets("v2"), rd());
        let defs = [&c, &w, &r];
        let v = |g: &str, v: &str| json!({"groupVersion": format!("{g}/{v}"), "version": v});
        assert_eq!(
            group_list(&defs),
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "stable.example.com",
                 "versions": [v("stable.example.com", "v2"), v("stable.example.com", "v1"), v("stable.example.com", "v1beta1")],
                 "preferredVersion": v("stable.example.com", "v2")},
                {"name": "versa.dev", "versions": [v("versa.dev", "v1")], "preferredVersion": v("versa.dev", "v1")},
            ]})
        );
        assert_eq!(
            group_doc(&defs, "versa.dev"),
            Some(json!({"kind": "APIGroup", "apiVersion": "v1", "name": "versa.dev",
                        "versions": [v("versa.dev", "v1")], "preferredVersion": v("versa.dev", "v1")}))
        );
        assert_eq!(group_doc(&defs, "nope.example.com"), None);
    }

    #[test]
    fn resource_list_has_subresources() {
        let (c, w) = (crontabs(), widgets("v1"));
        let defs = [&c, &w];
        assert_eq!(
            resource_list(&defs, "stable.example.com", "v1"),
            Some(json!({
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "stable.example.com/v1",
                "resources": [
                    {"name": "crontabs", "singularName": "crontab", "namespaced": true, "kind": "CronTab",
                     "verbs": VERBS, "shortNames": ["ct"], "categories": ["all"], "storageVersionHash": "EdX2FP+L0js="},
                    {"name": "crontabs/status", "singularName": "", "namespaced": true, "kind": "CronTab",
                     "verbs": ["get", "patch", "update"]},
                    {"name": "crontabs/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
                     "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]},
                    {"name": "widgets", "singularName": "widget", "namespaced": false, "kind": "Widget", "verbs": VERBS,
                     "storageVersionHash": storage_version_hash("stable.example.com", "v1", "Widget")},
                ],
            }))
        );
        // v1beta1 is served without subresources; the hash is still the storage version's.
        let beta = resource_list(&defs, "stable.example.com", "v1beta1").unwrap();
        assert_eq!(beta["resources"].as_array().unwrap().len(), 1);
        assert_eq!(beta["resources"][0]["storageVersionHash"], "EdX2FP+L0js=");
        assert_eq!(resource_list(&defs, "stable.example.com", "v2alpha1"), None);
    }

    #[test]
    fn terminating_and_unserved_storage() {
        let mut c = crontabs();
        c.status
            .as_mut()
            .unwrap()
            .conditions
            .as_mut()
            .unwrap()
            .push(serde_json::from_value(json!({"type": "Terminating", "status": "True"})).unwrap());
        c.spec.versions[1].served = false;
        let defs = [&c];
        let list = resource_list(&defs, "stable.example.com", "v1beta1").unwrap();
        assert_eq!(list["resources"][0]["verbs"], json!(TERMINATING_VERBS));
        assert!(list["resources"][0].get("storageVersionHash").is_none());
    }

    #[test]
    fn aggregated_document() {
        let (c, r) = (crontabs(), rd());
        let defs = [&r, &c];
        let doc = aggregated(&defs);
        assert_eq!(
            doc,
            json!({
                "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                "items": [
                    {"metadata": {"name": "stable.example.com", "creationTimestamp": null}, "versions": [
                        {"version": "v1", "freshness": "Current", "resources": [{
                            "resource": "crontabs", "scope": "Namespaced", "singularResource": "crontab",
                            "responseKind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"},
                            "verbs": VERBS, "shortNames": ["ct"], "categories": ["all"],
                            "subresources": [
                                {"subresource": "status", "verbs": ["get", "patch", "update"],
                                 "responseKind": {"group": "stable.example.com", "version": "v1", "kind": "CronTab"}},
                                {"subresource": "scale", "verbs": ["get", "patch", "update"],
                                 "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}},
                            ],
                        }]},
                        {"version": "v1beta1", "freshness": "Current", "resources": [{
                            "resource": "crontabs", "scope": "Namespaced", "singularResource": "crontab",
                            "responseKind": {"group": "stable.example.com", "version": "v1beta1", "kind": "CronTab"},
                            "verbs": VERBS, "shortNames": ["ct"], "categories": ["all"],
                        }]},
                    ]},
                    {"metadata": {"name": "versa.dev", "creationTimestamp": null}, "versions": [
                        {"version": "v1", "freshness": "Current", "resources": [{
                            "resource": "resourcedefinitions", "scope": "Cluster", "singularResource": "resourcedefinition",
                            "responseKind": {"group": "versa.dev", "version": "v1", "kind": "ResourceDefinition"},
                            "verbs": VERBS, "shortNames": ["rd"],
                            "subresources": [{"subresource": "status", "verbs": ["get", "patch", "update"],
                                "responseKind": {"group": "versa.dev", "version": "v1", "kind": "ResourceDefinition"}}],
                        }]},
                    ]},
                ],
            })
        );
        assert_eq!(
            aggregated(&[]),
            json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": []})
        );
    }

    #[test]
    fn legacy_root() {
        assert_eq!(api_versions(&[]), json!({"kind": "APIVersions", "versions": [], "serverAddressByClientCIDRs": []}));
    }
}
