//! OpenAPI documents of the served resources: Swagger 2.0 at `/openapi/v2` and OpenAPI 3.0 at
//! `/openapi/v3` (an index) and `/openapi/v3/apis/<group>/<version>` — what `kubectl explain`,
//! kubectl's field-validation probe and client-side schema lookups read.
//!
//! The content mirrors apiextensions-apiserver's `controller/openapi/builder/builder.go`:
//!
//! - Per served version, definitions `<reversed group>.<version>.<Kind>` and `...<ListKind>`
//!   (e.g. `com.example.stable.v1.CronTab`), both with `x-kubernetes-group-version-kind`. The
//!   kind's schema is the version's structural schema (non-structural or missing schemas give
//!   a bare `{"type": "object"}`), without the keywords the structural model drops (`example`,
//!   `externalDocs`, `$ref`, ...), with `x-kubernetes-int-or-string` unfolded into
//!   `anyOf: [integer, string]`, `apiVersion`/`kind`/`metadata` set at the root and on embedded
//!   resources, and `x-kubernetes-selectable-fields` (`fieldPath` without the leading dot).
//! - v2 applies the lossy conversion of `controller/openapi/v2/conversion.go` (no
//!   `allOf`/`anyOf`/`oneOf`/`not`; nullable and preserve-unknown-fields nodes lose their type
//!   and structure; nullable properties leave `required`), publishes a root that preserves
//!   unknown fields as a bare object, and prunes `default` (`handler.PruneDefaults`). v3 keeps
//!   the schema and refers to ObjectMeta/ListMeta through `allOf: [{$ref}]`.
//! - Paths for every route the builder registers: list (and list for all namespaces), create
//!   and deletecollection on the collection; read, replace, delete and patch on the item; read,
//!   replace and patch on `/status` and `/scale` when enabled. Operations carry
//!   `x-kubernetes-action`, `x-kubernetes-group-version-kind` (the resource's, also on scale),
//!   kube's operation ids and tags (`GetOperationIDAndTags`) and the option query parameters;
//!   patch operations list `fieldValidation`, which kubectl checks before it relies on
//!   server-side field validation.
//! - The referenced `io.k8s.apimachinery.pkg.apis.meta.v1` types (and `io.k8s.api.autoscaling.v1`
//!   `Scale` where used) with small but correct schemas.
//!
//! [`OpenApiCache`] keeps one pre-built part per definition, so a definition change rebuilds only
//! that part; the v2 document and each v3 group-version document are assembled (and hashed as
//! kube-openapi does: uppercase hex SHA-512 of the JSON) on first use after a change. The v2
//! document's protobuf form (`proto.rs`) is converted from its JSON on the first request
//! for it after a change, and shares the JSON's hash as `ETag`, as kube-openapi's does.
//!
//! This file keeps the cache and assembles the documents; the parts are built by `schema.rs`
//! (the published schemas), `paths.rs` (the route tables) and `meta.rs` (the meta definitions),
//! which share `names.rs`; `proto.rs` writes the protobuf form.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion;
use serde_json::{Map, Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_registry::{Compact, SchemaTexts, with_schema};

pub mod proto;

mod meta;
mod names;
mod paths;
mod schema;

use self::meta::*;
use self::names::*;
use self::paths::*;
use self::schema::*;

/// The OpenAPI documents of all served definitions, rebuilt per definition.
///
/// The v2 document spans every definition: each keeps its serialized v2 part, and the document
/// is assembled from the parts (and memoized) on first use after a change. A v3 document spans
/// one group-version — a handful of definitions — so it is built from those definitions when
/// asked for and not kept; only its hash is remembered (for the index). That keeps the cost
/// of a loaded definition to its v2 part.
#[derive(Debug, Default)]
pub struct OpenApiCache {
    parts: BTreeMap<String, Arc<DefinitionPart>>,
    v2: Mutex<Option<V2Memo>>,
    v3_hashes: Mutex<BTreeMap<(String, String), String>>,
}

/// The assembled v2 document: its JSON, and what is derived from it when first asked for.
#[derive(Debug)]
struct V2Memo {
    json: Bytes,
    etag: Option<String>,
    protobuf: Option<Bytes>,
}

/// Everything one definition contributes: its v2 part per served version, and the definition
/// itself (compacted, with its schemas as text: `registry::compact`) for building v3 documents.
#[derive(Debug)]
struct DefinitionPart {
    group: String,
    definition: Arc<ResourceDefinition>,
    schemas: Arc<SchemaTexts>,
    versions: Vec<VersionPart>,
}

/// One served version's v2 paths and definitions, kept serialized: the JSON text is an order of
/// magnitude smaller than the `Value` trees, and assembling a document only copies it.
#[derive(Debug)]
struct VersionPart {
    version: String,
    uses_scale: bool,
    paths: BTreeMap<String, Box<str>>,
    definitions: BTreeMap<String, Box<str>>,
}

impl OpenApiCache {
    /// An empty cache (no definitions).
    pub fn new() -> OpenApiCache {
        OpenApiCache::default()
    }

    /// Adds or replaces the part of `def` (keyed by its name). Only this definition is rebuilt;
    /// the assembled documents are invalidated. The caller passes only established definitions
    /// and calls [`OpenApiCache::remove`] when one stops being served.
    pub fn upsert(&mut self, def: &ResourceDefinition, kept: Compact) {
        let part = Arc::new(DefinitionPart::build(def, kept));
        let old = self.parts.insert(part.definition.name().to_string(), Arc::clone(&part));
        self.invalidate(old.as_deref(), Some(&part));
    }

    /// Drops the part of the definition `name`.
    pub fn remove(&mut self, name: &str) {
        if let Some(old) = self.parts.remove(name) {
            self.invalidate(Some(&old), None);
        }
    }

    /// `/openapi/v2` as JSON bytes, memoized until the next change.
    pub fn v2(&self) -> Bytes {
        self.with_v2(|memo| memo.json.clone())
    }

    /// The `ETag` of `/openapi/v2` (unquoted): [`etag`] of the JSON, for both forms (answers
    /// vary by `Accept`). Memoized with the document.
    pub fn v2_etag(&self) -> String {
        self.with_v2(|memo| memo.etag.get_or_insert_with(|| etag(&memo.json)).clone())
    }

    /// `/openapi/v2` as gnostic's `openapi.v2.Document` protobuf, converted from the JSON on
    /// first use and memoized with it.
    pub fn v2_protobuf(&self) -> Result<Bytes, serde_json::Error> {
        self.with_v2(|memo| {
            if let Some(bytes) = &memo.protobuf {
                return Ok(bytes.clone());
            }
            let bytes = Bytes::from(crate::openapi::proto::document(&memo.json)?);
            memo.protobuf = Some(bytes.clone());
            Ok(bytes)
        })
    }

    /// Runs `f` on the memoized v2 document, assembling it first if a change dropped it.
    fn with_v2<T>(&self, f: impl FnOnce(&mut V2Memo) -> T) -> T {
        let mut memo = self.v2.lock().unwrap_or_else(|e| e.into_inner());
        let memo =
            memo.get_or_insert_with(|| V2Memo { json: Bytes::from(self.assemble_v2()), etag: None, protobuf: None });
        f(memo)
    }

    /// `/openapi/v3`: `{"paths": {"apis/<g>/<v>": {"serverRelativeURL":
    /// "/openapi/v3/apis/<g>/<v>?hash=<HASH>"}}}`, `HASH` being [`etag`] of that document.
    pub fn v3_index(&self) -> Value {
        let mut paths = Map::new();
        for (group, version) in self.group_versions() {
            if let Some(hash) = self.v3_hash(&group, &version) {
                let key = format!("apis/{group}/{version}");
                let url = format!("/openapi/v3/{key}?hash={hash}");
                paths.insert(key, json!({"serverRelativeURL": url}));
            }
        }
        json!({"paths": paths})
    }

    /// `/openapi/v3/apis/<group>/<version>` as JSON bytes, or `None` when nothing is served there.
    pub fn v3_group_version(&self, group: &str, version: &str) -> Option<Bytes> {
        self.assemble_v3(group, version).map(Bytes::from)
    }

    /// Like [`OpenApiCache::v3_group_version`], with the document's hash (for `?hash=` checks
    /// and the `ETag`).
    pub fn v3_group_version_with_hash(&self, group: &str, version: &str) -> Option<(Bytes, String)> {
        let bytes = self.v3_group_version(group, version)?;
        let key = (group.to_string(), version.to_string());
        let mut hashes = self.v3_hashes.lock().unwrap_or_else(|e| e.into_inner());
        let hash = hashes.entry(key).or_insert_with(|| etag(&bytes)).clone();
        Some((bytes, hash))
    }

    /// The hash of a group-version's document: remembered, or computed (and remembered) by
    /// building the document once.
    fn v3_hash(&self, group: &str, version: &str) -> Option<String> {
        let key = (group.to_string(), version.to_string());
        if let Some(hash) = self.v3_hashes.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Some(hash.clone());
        }
        self.v3_group_version_with_hash(group, version).map(|(_, hash)| hash)
    }

    fn invalidate(&self, old: Option<&DefinitionPart>, new: Option<&DefinitionPart>) {
        *self.v2.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let mut v3 = self.v3_hashes.lock().unwrap_or_else(|e| e.into_inner());
        for part in old.into_iter().chain(new) {
            for v in &part.versions {
                v3.remove(&(part.group.clone(), v.version.clone()));
            }
        }
    }

    fn group_versions(&self) -> BTreeSet<(String, String)> {
        self.parts.values().flat_map(|p| p.versions.iter().map(|v| (p.group.clone(), v.version.clone()))).collect()
    }

    fn assemble_v2(&self) -> Vec<u8> {
        let versions: Vec<&VersionPart> = self.parts.values().flat_map(|p| p.versions.iter()).collect();
        let uses_scale = versions.iter().any(|v| v.uses_scale);
        let meta = meta_definitions(Flavor::V2);
        let mut definitions: BTreeMap<&str, &str> = BTreeMap::new();
        for (k, v) in meta.iter().filter(|(k, _)| uses_scale || !k.starts_with("io.k8s.api.autoscaling.")) {
            definitions.insert(k, v);
        }
        let mut paths: BTreeMap<&str, &str> = BTreeMap::new();
        for v in &versions {
            definitions.extend(v.definitions.iter().map(|(k, v)| (k.as_str(), &**v)));
            paths.extend(v.paths.iter().map(|(k, v)| (k.as_str(), &**v)));
        }
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"swagger\":\"2.0\",\"info\":");
        write_json(&mut out, &json!({"title": TITLE, "version": TITLE_VERSION}));
        out.extend_from_slice(b",\"paths\":");
        write_map(&mut out, &paths);
        out.extend_from_slice(b",\"definitions\":");
        write_map(&mut out, &definitions);
        out.extend_from_slice(b",\"parameters\":");
        let parameters: BTreeMap<&str, &str> = shared_v2_parameters().iter().map(|(k, v)| (k.as_str(), &**v)).collect();
        write_map(&mut out, &parameters);
        out.push(b'}');
        out
    }

    fn assemble_v3(&self, group: &str, version: &str) -> Option<Vec<u8>> {
        let mut schemas_owned: BTreeMap<String, Box<str>> = BTreeMap::new();
        let mut paths_owned: BTreeMap<String, Box<str>> = BTreeMap::new();
        let mut uses_scale = false;
        let mut any = false;
        for part in self.parts.values().filter(|p| p.group == group) {
            let def = &part.definition;
            let names = Names::of(def);
            for v in def.spec.versions.iter().filter(|v| v.served && v.name == version) {
                any = true;
                let built = FlavorPart::build(&names, &with_schema(v, &part.schemas), Flavor::V3);
                uses_scale |= built.uses_scale;
                schemas_owned.extend(built.definitions);
                paths_owned.extend(built.paths);
            }
        }
        if !any {
            return None;
        }
        let meta = meta_definitions(Flavor::V3);
        let mut schemas: BTreeMap<&str, &str> = BTreeMap::new();
        for (k, v) in meta.iter().filter(|(k, _)| uses_scale || !k.starts_with("io.k8s.api.autoscaling.")) {
            schemas.insert(k, v);
        }
        schemas.extend(schemas_owned.iter().map(|(k, v)| (k.as_str(), &**v)));
        let paths: BTreeMap<&str, &str> = paths_owned.iter().map(|(k, v)| (k.as_str(), &**v)).collect();
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"openapi\":\"3.0.0\",\"info\":");
        write_json(&mut out, &json!({"title": TITLE, "version": TITLE_VERSION}));
        out.extend_from_slice(b",\"paths\":");
        write_map(&mut out, &paths);
        out.extend_from_slice(b",\"components\":{\"schemas\":");
        write_map(&mut out, &schemas);
        out.extend_from_slice(b"}}");
        Some(out)
    }

    #[cfg(test)]
    fn part(&self, name: &str) -> Option<&Arc<DefinitionPart>> {
        self.parts.get(name)
    }
}

/// kube-openapi's hash of a document: uppercase hex SHA-512 (the `ETag`, quoted, and the v3
/// `?hash=`).
pub fn etag(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA512, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

fn write_json(out: &mut Vec<u8>, v: &Value) {
    // Serializing a `Value` into a Vec cannot fail (no I/O, string keys only).
    let _ = serde_json::to_writer(&mut *out, v);
}

/// Writes an object whose values are already serialized JSON.
fn write_map(out: &mut Vec<u8>, entries: &BTreeMap<&str, &str>) {
    out.push(b'{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        out.extend_from_slice(v.as_bytes());
    }
    out.push(b'}');
}

// ---------------------------------------------------------------------------------------------
// One definition
// ---------------------------------------------------------------------------------------------

impl DefinitionPart {
    /// `def` with its schemas; `kept` its compact form, which the part holds.
    fn build(def: &ResourceDefinition, kept: Compact) -> DefinitionPart {
        let names = Names::of(def);
        let versions = def
            .spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| {
                let built = FlavorPart::build(&names, v, Flavor::V2);
                VersionPart {
                    version: v.name.clone(),
                    uses_scale: built.uses_scale,
                    paths: built.paths,
                    definitions: built.definitions,
                }
            })
            .collect();
        DefinitionPart { group: def.spec.group.clone(), versions, definition: kept.def, schemas: kept.schemas }
    }
}

/// One served version's paths and definitions (v2) or schemas (v3), serialized.
struct FlavorPart {
    uses_scale: bool,
    paths: BTreeMap<String, Box<str>>,
    definitions: BTreeMap<String, Box<str>>,
}

impl FlavorPart {
    fn build(names: &Names<'_>, v: &CustomResourceDefinitionVersion, flavor: Flavor) -> FlavorPart {
        let schema = published_schema(v);
        let selectable: Vec<Value> = v
            .selectable_fields
            .iter()
            .flatten()
            .map(|f| json!({"fieldPath": f.json_path.strip_prefix('.').unwrap_or(&f.json_path)}))
            .collect();
        let uses_scale = v.subresources.as_ref().is_some_and(|s| s.scale.is_some());
        let has_status = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
        let routes = routes(names, &v.name, has_status, uses_scale);
        let kind_name = definition_name(names.group, &v.name, names.kind);
        let list_name = definition_name(names.group, &v.name, &names.list_kind);
        let mut kind_schema = kind_schema(schema.as_ref(), flavor, names.preserve_unknown_fields);
        if let Value::Object(m) = &mut kind_schema {
            m.insert("x-kubernetes-group-version-kind".into(), json!([gvk(names.group, &v.name, names.kind)]));
            if !selectable.is_empty() {
                m.insert("x-kubernetes-selectable-fields".into(), Value::Array(selectable));
            }
        }
        if flavor == Flavor::V2 {
            prune_defaults(&mut kind_schema);
        }
        let list_schema = list_schema(names, &v.name, &kind_name, flavor);
        let paths = render_paths(names, &v.name, &routes, flavor);
        let mut definitions = BTreeMap::new();
        definitions.insert(kind_name, serialized(&kind_schema));
        definitions.insert(list_name, serialized(&list_schema));
        FlavorPart { uses_scale, paths: paths.into_iter().map(|(k, v)| (k, serialized(&v))).collect(), definitions }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    fn def(v: Value) -> ResourceDefinition {
        ResourceDefinition::from_document(&v).unwrap()
    }

    fn upsert(cache: &mut OpenApiCache, def: ResourceDefinition) {
        cache.upsert(&def, Compact::of(&def));
    }

    /// The CronTab definition of the seed tutorial, plus a status and scale subresource on v1.
    fn crontab() -> ResourceDefinition {
        def(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                    "selectableFields": [{"jsonPath": ".spec.image"}],
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$", "example": "* * * * */5"},
                            "image": {"type": "string", "default": "busybox"},
                            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                        }}},
                    }},
                }, {"name": "v1beta1", "served": false, "storage": false}],
            },
        }))
    }

    fn widget(schema: Value) -> ResourceDefinition {
        def(json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Cluster",
                "names": {"plural": "widgets", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}],
            },
        }))
    }

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    fn strip_meta_descriptions(mut kind: Value) -> Value {
        for p in ["apiVersion", "kind", "metadata"] {
            if let Some(m) = kind.pointer_mut(&format!("/properties/{p}")).and_then(Value::as_object_mut) {
                m.remove("description");
            }
        }
        kind
    }

    #[test]
    fn crontab_v3_document() {
        let mut cache = OpenApiCache::new();
        upsert(&mut cache, crontab());
        let doc = parse(&cache.v3_group_version("stable.example.com", "v1").unwrap());
        assert_eq!(doc["openapi"], "3.0.0");
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            strip_meta_descriptions(schemas["com.example.stable.v1.CronTab"].clone()),
            json!({
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                    "spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                        "image": {"type": "string", "default": "busybox"},
                        "replicas": {"type": "integer", "minimum": 1.0, "maximum": 10.0},
                    }},
                },
                "x-kubernetes-group-version-kind": [{"group": "stable.example.com", "version": "v1", "kind": "CronTab"}],
                "x-kubernetes-selectable-fields": [{"fieldPath": "spec.image"}],
            })
        );
        let list = &schemas["com.example.stable.v1.CronTabList"];
        assert_eq!(
            list["properties"]["items"]["items"],
            json!({"$ref": "#/components/schemas/com.example.stable.v1.CronTab"})
        );
        assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "CronTabList");
        assert_eq!(list["required"], json!(["items"]));
        for meta in [
            "ObjectMeta",
            "ListMeta",
            "Status",
            "DeleteOptions",
            "Patch",
            "ManagedFieldsEntry",
            "OwnerReference",
            "Time",
        ] {
            assert!(schemas.get(format!("{META}{meta}")).is_some(), "{meta}");
        }
        assert!(schemas.get(SCALE).is_some());
        assert_eq!(
            doc["components"]["schemas"].as_object().unwrap().keys().filter(|k| k.contains("stable")).count(),
            2
        );

        // Every $ref in the document resolves inside it.
        let text = serde_json::to_string(&doc).unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(schemas.get(name).is_some(), "dangling ref {name}");
        }

        let paths = doc["paths"].as_object().unwrap();
        let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "/apis/stable.example.com/v1/crontabs",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status",
            ]
        );
        let item = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
        let patch = &item["patch"];
        assert_eq!(patch["operationId"], "patchStableExampleComV1NamespacedCronTab");
        assert_eq!(patch["tags"], json!(["stableExampleCom_v1"]));
        assert_eq!(patch["description"], "partially update the specified CronTab");
        assert_eq!(patch["x-kubernetes-action"], "patch");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"})
        );
        // kubectl's QueryParamVerifierV3 looks for this before using server-side validation.
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert_eq!(
            patch["requestBody"]["content"]["*/*"]["schema"],
            json!({"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"})
        );
        assert_eq!(item["delete"]["operationId"], "deleteStableExampleComV1NamespacedCronTab");
        assert_eq!(item["delete"]["description"], "delete a CronTab");
        let collection = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"];
        assert_eq!(collection["delete"]["operationId"], "deleteStableExampleComV1CollectionNamespacedCronTab");
        assert_eq!(collection["delete"]["description"], "delete collection of CronTab");
        assert_eq!(collection["post"]["x-kubernetes-action"], "post");
        assert_eq!(
            paths["/apis/stable.example.com/v1/crontabs"]["get"]["operationId"],
            "listStableExampleComV1CronTabForAllNamespaces"
        );
        let scale = &paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"];
        assert_eq!(scale["put"]["operationId"], "replaceStableExampleComV1NamespacedCronTabScale");
        assert_eq!(scale["put"]["description"], "replace scale of the specified CronTab");
        assert_eq!(
            scale["get"]["responses"]["200"]["content"]["application/json"]["schema"],
            json!({"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"})
        );
        assert_eq!(scale["get"]["x-kubernetes-group-version-kind"]["kind"], "CronTab");
        let names: Vec<&str> =
            item["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["name", "namespace", "pretty"]);
    }

    #[test]
    fn crontab_v2_document() {
        let mut cache = OpenApiCache::new();
        upsert(&mut cache, crontab());
        let doc = parse(&cache.v2());
        assert_eq!(doc["swagger"], "2.0");
        let kind = &doc["definitions"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            kind["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        // PruneDefaults.
        assert_eq!(kind["properties"]["spec"]["properties"]["image"], json!({"type": "string"}));
        assert!(doc["definitions"].get("com.example.stable.v1beta1.CronTab").is_none());
        let op = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]["post"];
        assert_eq!(op["operationId"], "createStableExampleComV1NamespacedCronTab");
        assert_eq!(op["description"], "create a CronTab");
        assert_eq!(op["consumes"], json!(["application/json", "application/yaml"]));
        // Shared parameters are references into the top-level `parameters`.
        let resolve = |p: &Value| match p["$ref"].as_str() {
            Some(r) => doc["parameters"][r.trim_start_matches("#/parameters/")].clone(),
            None => p.clone(),
        };
        let params: Vec<String> = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| resolve(p)["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(params, ["body", "dryRun", "fieldManager", "fieldValidation"]);
        assert!(op["parameters"][1]["$ref"].as_str().unwrap().starts_with("#/parameters/dryRun-"));
        assert_eq!(op["parameters"][0]["schema"]["$ref"], "#/definitions/com.example.stable.v1.CronTab");
        assert_eq!(op["responses"]["201"]["description"], "Created");
        let text = serde_json::to_string(&doc).unwrap();
        for piece in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(doc["definitions"].get(name).is_some(), "dangling ref {name}");
        }
        for piece in text.split("\"$ref\":\"#/parameters/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(doc["parameters"].get(name).is_some(), "dangling parameter ref {name}");
        }
    }

    /// (input schema, expected v2 kind schema without the meta properties' descriptions).
    #[test]
    fn v2_conversion_cases() {
        let gvk = json!([{"group": "example.com", "version": "v1", "kind": "Widget"}]);
        let meta = json!({
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        });
        let with_meta = |props: Value| {
            let mut p = meta.clone();
            p.as_object_mut().unwrap().extend(props.as_object().unwrap().clone());
            p
        };
        let cases = [
            (
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                json!({"type": "object", "x-kubernetes-group-version-kind": gvk}),
            ),
            (
                json!({"type": "object", "properties": {"foo": {"type": "array"}}}),
                json!({"type": "object", "x-kubernetes-group-version-kind": gvk}),
            ),
            (
                json!({"type": "object", "properties": {"foo": {"type": "bug"}}}),
                json!({"type": "object", "x-kubernetes-group-version-kind": gvk}),
            ),
            (
                json!({"type": "object", "properties": {"foo": {"type": "string", "oneOf": [{"pattern": "a"}, {"pattern": "b"}]}}}),
                json!({"type": "object", "properties": with_meta(json!({"foo": {"type": "string"}})), "x-kubernetes-group-version-kind": gvk}),
            ),
            (
                json!({"type": "object", "required": ["a", "b"], "properties": {
                    "a": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
                    "b": {"type": "array", "items": {"type": "string"}},
                    "c": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"x": {"type": "string"}}},
                    "d": {"x-kubernetes-int-or-string": true},
                    "e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    "f": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "string"}}},
                }}),
                json!({"type": "object", "required": ["b"], "properties": with_meta(json!({
                    "a": {},
                    "b": {"type": "array", "items": {"type": "string"}},
                    "c": {"x-kubernetes-preserve-unknown-fields": true},
                    "d": {"x-kubernetes-int-or-string": true},
                    "e": {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    "f": {"type": "object", "x-kubernetes-embedded-resource": true, "required": ["kind", "apiVersion"],
                          "properties": {"spec": {"type": "string"}, "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                         "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}},
                })), "x-kubernetes-group-version-kind": gvk}),
            ),
        ];
        for (schema, want) in cases {
            let mut cache = OpenApiCache::new();
            upsert(&mut cache, widget(schema.clone()));
            let doc = parse(&cache.v2());
            let mut got = strip_meta_descriptions(doc["definitions"]["com.example.v1.Widget"].clone());
            if let Some(f) = got.pointer_mut("/properties/f/properties").and_then(Value::as_object_mut) {
                for p in ["apiVersion", "kind", "metadata"] {
                    f[p].as_object_mut().unwrap().remove("description");
                }
            }
            assert_eq!(got, want, "{schema}");
        }
    }

    #[test]
    fn v3_keeps_junctors_and_unfolds_int_or_string() {
        let mut cache = OpenApiCache::new();
        upsert(
            &mut cache,
            widget(json!({"type": "object", "properties": {
                "a": {"x-kubernetes-int-or-string": true},
                "b": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "c": {"type": "string", "nullable": true, "oneOf": [{"pattern": "a"}], "externalDocs": {"url": "x"}},
            }})),
        );
        let doc = parse(&cache.v3_group_version("example.com", "v1").unwrap());
        let props = &doc["components"]["schemas"]["com.example.v1.Widget"]["properties"];
        assert_eq!(
            props["a"],
            json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]})
        );
        assert_eq!(props["b"], props["a"]);
        assert_eq!(props["c"], json!({"type": "string", "nullable": true, "oneOf": [{"pattern": "a"}]}));
    }

    #[test]
    fn incremental_updates() {
        let mut cache = OpenApiCache::new();
        upsert(&mut cache, crontab());
        let first = Arc::clone(cache.part("crontabs.stable.example.com").unwrap());
        let v2_before = cache.v2();
        let v3_before = cache.v3_group_version("stable.example.com", "v1").unwrap();
        assert_eq!(v2_before.as_ptr(), cache.v2().as_ptr(), "memoized");

        upsert(&mut cache, widget(json!({"type": "object"})));
        assert!(Arc::ptr_eq(&first, cache.part("crontabs.stable.example.com").unwrap()), "untouched part");
        let v3_after = cache.v3_group_version("stable.example.com", "v1").unwrap();
        assert_eq!(v3_before, v3_after, "other group-versions are unchanged");
        let v2_after = parse(&cache.v2());
        assert!(v2_after["definitions"].get("com.example.v1.Widget").is_some());
        assert!(v2_after["definitions"].get("com.example.stable.v1.CronTab").is_some());

        let index = cache.v3_index();
        let url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].as_str().unwrap();
        assert_eq!(url, format!("/openapi/v3/apis/stable.example.com/v1?hash={}", etag(&v3_after)));
        assert!(index["paths"].get("apis/example.com/v1").is_some());
        let (_, hash) = cache.v3_group_version_with_hash("example.com", "v1").unwrap();
        assert_eq!(hash.len(), 128);
        assert!(hash.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));

        cache.remove("widgets.example.com");
        assert_eq!(cache.v3_group_version("example.com", "v1"), None);
        assert!(cache.v3_index()["paths"].get("apis/example.com/v1").is_none());
        assert!(parse(&cache.v2())["definitions"].get("com.example.v1.Widget").is_none());
        // Without a scale subresource left, autoscaling types are not published.
        cache.remove("crontabs.stable.example.com");
        let empty = parse(&cache.v2());
        assert!(empty["definitions"].get(SCALE).is_none());
        assert_eq!(empty["paths"], json!({}));
    }

    #[test]
    fn naming_helpers() {
        assert_eq!(definition_name("stable.example.com", "v1", "CronTab"), "com.example.stable.v1.CronTab");
        assert_eq!(definition_name("local", "v2", "Thing"), "local.v2.Thing");
        assert_eq!(operation_tag("apps.k8s.io", "v1"), "apps_v1");
        assert_eq!(
            operation_id(
                "deletecollectionNamespacedCronTab",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"
            ),
            "deleteStableExampleComV1CollectionNamespacedCronTab"
        );
        assert_eq!(
            operation_id("readWidget", "/apis/my-group.io/v1beta1/widgets/{name}"),
            "readMyGroupIoV1beta1Widget"
        );
        assert_eq!(article_for("Ingress"), " an ");
        assert_eq!(article_for("Stats"), " ");
        assert_eq!(article_for("Class"), " a ");
    }
}
