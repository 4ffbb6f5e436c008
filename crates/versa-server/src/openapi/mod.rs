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
//! What [`OpenApiCache`] keeps per definition is almost nothing: the compacted definition the
//! registry already holds (shared, `registry::Compact`), its group and served versions, whether
//! it uses `/scale`, and a hash of its spec and schema texts. Documents are built from the
//! definitions when asked for:
//!
//! - `/openapi/v2` is written entry by entry, in key order, straight into a gzip stream and a
//!   SHA-512 at once ([`V2Document`]); the gzip stream goes straight into an anonymous
//!   temporary file (`spill.rs`), and only the hash (the `ETag`, as kube-openapi computes it:
//!   uppercase hex SHA-512 of the JSON) and the length stay in memory, until the next change
//!   drops the document and closes its file. Its protobuf form (`proto/`) is converted from
//!   the JSON on the first request for it and kept compressed in a file of its own. Neither the
//!   JSON nor a compressed form is ever held whole in memory between requests: with real-world
//!   definitions they are ~10 KiB per definition, as much as everything else the cache keeps.
//!   Clients that accept gzip (client-go's transport asks for it) get the kept bytes *streamed*
//!   from the file in 64 KiB chunks (`spill::body`; the response body type streams, as watches
//!   do), so a request costs a chunk of memory, not the document; the others get them inflated
//!   into one buffer of exactly the JSON's (or protobuf's) length, freed with the answer. When
//!   no temporary file can be made or written (read-only or full `TMPDIR`) the compressed forms
//!   are kept in memory, exactly sized, with a warning, and served the same way. It is built by
//!   one request at a time, from the definitions taken out of the cache ([`V2Sources`]), so the
//!   cache's lock — which the definitions controller takes to apply changes — is not held
//!   while it is built.
//! - `/openapi/v3/apis/<group>/<version>` is built per request, from that group-version's
//!   handful of definitions. Its hash (in the `/openapi/v3` index, its `?hash=` and its `ETag`)
//!   is over the builder's *inputs* — [`BUILDER_VERSION`] and the contributing definitions'
//!   hashes — not over its bytes: the index then costs a hash per group-version instead of
//!   building every document, and a stale `?hash=` or a matching `If-None-Match` is answered
//!   without building one. Clients treat the hash as opaque (client-go and kube-aggregator use
//!   it as a cache key and pass it through).
//!
//! This file keeps the cache and answers `/openapi/v3`; `v2.rs` keeps the assembled
//! `/openapi/v2`; `document.rs` writes the documents' JSON, whose entries are built by
//! `schema.rs` (the published schemas), `paths.rs` (the route tables) and `meta.rs` (the meta
//! definitions), which share `names.rs`; `proto/` writes the protobuf form.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use versa_registry::Compact;

use crate::spill::{self, OpenFile};

pub mod proto;

mod document;
mod meta;
mod names;
mod paths;
mod schema;
mod v2;

use self::document::{DefinitionPart, group_versions, write_v3};
use self::v2::hex;
pub use self::v2::{Error, Result, V2Document, etag};

/// The version of the builder, hashed into every v3 hash with the crate's version. Bump it
/// whenever the documents change for the same definitions: a client may keep a document under
/// its `?hash=` URL for good (`Cache-Control: immutable`), so a new builder must not answer an
/// old hash with other bytes. (`documents_are_pinned` fails on such a change.)
pub const BUILDER_VERSION: &str = "1";

/// The OpenAPI documents of all served definitions.
///
/// Each definition keeps a [`DefinitionPart`] (a few hundred bytes besides the shared compact
/// definition); the v2 document is memoized compressed, in a temporary file, until the next
/// change; v3 documents are not kept at all.
#[derive(Debug, Default)]
pub struct OpenApiCache {
    parts: BTreeMap<String, Arc<DefinitionPart>>,
    v2: Arc<V2Memo>,
}

/// The memoized v2 document, shared with the requests that build it outside the cache's lock.
#[derive(Debug)]
struct V2Memo {
    slot: Mutex<V2Slot>,
    /// Held while building, so that concurrent requests build once (the cache's own lock, which
    /// the definitions controller takes to apply changes, is not held meanwhile).
    building: Mutex<()>,
    /// Makes the files the documents are kept in ([`spill::temp_file`]; tests force the
    /// in-memory fallback with one that fails).
    open: OpenFile,
}

impl Default for V2Memo {
    fn default() -> V2Memo {
        V2Memo { slot: Mutex::default(), building: Mutex::default(), open: spill::temp_file }
    }
}

/// The document of the cache's `generation`, if built.
#[derive(Debug, Default)]
struct V2Slot {
    generation: u64,
    doc: Option<Arc<V2Document>>,
}

/// The v2 document of one state of the cache: the memoized document, or what building it
/// needs (see [`OpenApiCache::v2_sources`]).
#[derive(Debug)]
pub struct V2Sources {
    generation: u64,
    /// The memoized document, when there was one (then `parts` is left empty).
    ready: Option<Arc<V2Document>>,
    parts: Vec<Arc<DefinitionPart>>,
    memo: Arc<V2Memo>,
}

/// The definitions serving one group-version, in name order: what its document is built from.
#[derive(Debug)]
pub struct V3Sources {
    group: String,
    version: String,
    parts: Vec<Arc<DefinitionPart>>,
}

impl OpenApiCache {
    /// An empty cache (no definitions).
    pub fn new() -> OpenApiCache {
        OpenApiCache::default()
    }

    /// An empty cache keeping its documents in files made by `open` (tests: one that fails
    /// takes the in-memory fallback).
    #[cfg(test)]
    pub(crate) fn with_files(open: OpenFile) -> OpenApiCache {
        let v2 = Arc::new(V2Memo { open, ..V2Memo::default() });
        OpenApiCache { parts: BTreeMap::new(), v2 }
    }

    /// Adds or replaces the part of a definition (keyed by its name), from its compact form
    /// (the registry's, shared). The v2 document is dropped. The caller passes only established
    /// definitions and calls [`OpenApiCache::remove`] when one stops being served.
    pub fn upsert(&mut self, kept: Compact) {
        let name = kept.def.name().to_string();
        self.parts.insert(name, Arc::new(DefinitionPart::new(kept)));
        self.invalidate();
    }

    /// Drops the part of the definition `name`.
    pub fn remove(&mut self, name: &str) {
        if self.parts.remove(name).is_some() {
            self.invalidate();
        }
    }

    /// `/openapi/v2`, assembled if a change dropped it (memoized until the next change).
    pub fn v2(&self) -> Result<Arc<V2Document>> {
        self.v2_sources().document()
    }

    /// What `/openapi/v2` of the cache's current state is built from: cheap to take (the
    /// definitions are shared), so that the caller can build it after releasing the cache.
    pub fn v2_sources(&self) -> V2Sources {
        let slot = self.v2.slot.lock().unwrap_or_else(|e| e.into_inner());
        let (generation, ready) = (slot.generation, slot.doc.clone());
        drop(slot);
        let parts = if ready.is_some() { Vec::new() } else { self.parts.values().cloned().collect() };
        V2Sources { generation, ready, parts, memo: Arc::clone(&self.v2) }
    }

    /// `/openapi/v3`: `{"paths": {"apis/<g>/<v>": {"serverRelativeURL":
    /// "/openapi/v3/apis/<g>/<v>?hash=<HASH>"}}}`, `HASH` being that group-version's
    /// [`V3Sources::hash`]. Builds no document.
    pub fn v3_index(&self) -> Value {
        let mut paths = Map::new();
        for ((group, version), parts) in group_versions(self.parts.values().map(|p| &**p)) {
            let key = if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") };
            let url = format!("/openapi/v3/{key}?hash={}", v3_hash(group, version, parts.iter().map(|p| &**p)));
            paths.insert(key, json!({"serverRelativeURL": url}));
        }
        json!({"paths": paths})
    }

    /// The definitions serving `group`/`version` (`None` when nothing is served there), taken
    /// out of the cache: its hash and document are computed without holding the cache.
    pub fn v3(&self, group: &str, version: &str) -> Option<V3Sources> {
        let parts: Vec<Arc<DefinitionPart>> = self
            .parts
            .values()
            .filter(|p| p.group == group && p.served.iter().any(|v| v == version))
            .cloned()
            .collect();
        (!parts.is_empty()).then(|| V3Sources { group: group.to_owned(), version: version.to_owned(), parts })
    }

    /// [`V3Sources::hash`] of `group`/`version`.
    pub fn v3_hash(&self, group: &str, version: &str) -> Option<String> {
        self.v3(group, version).map(|s| s.hash())
    }

    /// [`V3Sources::document`] of `group`/`version`.
    pub fn v3_group_version(&self, group: &str, version: &str) -> Option<Bytes> {
        self.v3(group, version).map(|s| s.document())
    }

    fn invalidate(&self) {
        let mut slot = self.v2.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.generation += 1;
        slot.doc = None;
    }

    #[cfg(test)]
    fn part(&self, name: &str) -> Option<&Arc<DefinitionPart>> {
        self.parts.get(name)
    }
}

impl V2Sources {
    /// The document: the memoized one if it is still current, else built (by one request at a
    /// time) and memoized unless a change came meanwhile.
    pub fn document(&self) -> Result<Arc<V2Document>> {
        if let Some(doc) = &self.ready {
            return Ok(Arc::clone(doc));
        }
        let current = || {
            let slot = self.memo.slot.lock().unwrap_or_else(|e| e.into_inner());
            if slot.generation == self.generation { slot.doc.clone() } else { None }
        };
        if let Some(doc) = current() {
            return Ok(doc);
        }
        let _building = self.memo.building.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(doc) = current() {
            return Ok(doc);
        }
        let doc = Arc::new(V2Document::assemble(&self.parts, self.memo.open)?);
        let mut slot = self.memo.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.generation == self.generation {
            slot.doc = Some(Arc::clone(&doc));
        }
        Ok(doc)
    }
}

impl V3Sources {
    /// The hash of `/openapi/v3/apis/<group>/<version>` (its `ETag` and `?hash=`): uppercase hex
    /// SHA-512 over [`BUILDER_VERSION`], the crate's version, the group-version and the hashes
    /// of the definitions serving it, in name order. Not a hash of the document's bytes —
    /// clients treat it as opaque (client-go and kube-aggregator use it as a cache key and pass
    /// it through) — but it changes whenever they may.
    pub fn hash(&self) -> String {
        v3_hash(&self.group, &self.version, self.parts.iter().map(|p| &**p))
    }

    /// `/openapi/v3/apis/<group>/<version>` as JSON bytes.
    pub fn document(&self) -> Bytes {
        let parts: Vec<&DefinitionPart> = self.parts.iter().map(|p| &**p).collect();
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = write_v3(&mut out, &self.version, &parts);
        Bytes::from(out)
    }
}

fn v3_hash<'a>(group: &str, version: &str, parts: impl Iterator<Item = &'a DefinitionPart>) -> String {
    let mut hash = ring::digest::Context::new(&ring::digest::SHA512);
    for field in [BUILDER_VERSION, env!("CARGO_PKG_VERSION"), group, version] {
        hash.update(field.as_bytes());
        hash.update(b"\0");
    }
    for part in parts {
        hash.update(&part.hash);
    }
    hex(hash.finish().as_ref())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read as _;

    use super::names::{META, SCALE, definition_name};
    use super::paths::{article_for, operation_id, operation_tag};
    use versa_apiextensions::ResourceDefinition;

    fn def(v: Value) -> ResourceDefinition {
        ResourceDefinition::from_document(&v).unwrap()
    }

    fn upsert(cache: &mut OpenApiCache, def: ResourceDefinition) {
        cache.upsert(Compact::of(&def));
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

    fn v2_json(cache: &OpenApiCache) -> Bytes {
        cache.v2().unwrap().json().unwrap()
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
        let doc = parse(&v2_json(&cache));
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
            let doc = parse(&v2_json(&cache));
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
        let v2_before = cache.v2().unwrap();
        let v3_before = cache.v3_group_version("stable.example.com", "v1").unwrap();
        let hash_before = cache.v3_hash("stable.example.com", "v1").unwrap();
        assert!(Arc::ptr_eq(&v2_before, &cache.v2().unwrap()), "memoized");

        upsert(&mut cache, widget(json!({"type": "object"})));
        assert!(Arc::ptr_eq(&first, cache.part("crontabs.stable.example.com").unwrap()), "untouched part");
        let v3_after = cache.v3_group_version("stable.example.com", "v1").unwrap();
        assert_eq!(v3_before, v3_after, "other group-versions are unchanged");
        assert_eq!(cache.v3_hash("stable.example.com", "v1").unwrap(), hash_before);
        assert!(!Arc::ptr_eq(&v2_before, &cache.v2().unwrap()), "dropped by the change");
        let v2_after = parse(&v2_json(&cache));
        assert!(v2_after["definitions"].get("com.example.v1.Widget").is_some());
        assert!(v2_after["definitions"].get("com.example.stable.v1.CronTab").is_some());

        let index = cache.v3_index();
        let url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].as_str().unwrap();
        assert_eq!(url, format!("/openapi/v3/apis/stable.example.com/v1?hash={hash_before}"));
        assert!(index["paths"].get("apis/example.com/v1").is_some());
        let hash = cache.v3_hash("example.com", "v1").unwrap();
        assert_eq!(hash.len(), 128);
        assert!(hash.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));

        // A change of the definition moves its group-version's hash; a status change does not.
        let mut changed = crontab();
        changed.spec.versions[0].selectable_fields = None;
        upsert(&mut cache, changed.clone());
        assert_ne!(cache.v3_hash("stable.example.com", "v1").unwrap(), hash_before);
        let moved = cache.v3_hash("stable.example.com", "v1").unwrap();
        changed.metadata.resource_version = Some("42".into());
        changed.status = Some(Default::default());
        upsert(&mut cache, changed);
        assert_eq!(cache.v3_hash("stable.example.com", "v1").unwrap(), moved);

        cache.remove("widgets.example.com");
        assert_eq!(cache.v3_group_version("example.com", "v1"), None);
        assert!(cache.v3_index()["paths"].get("apis/example.com/v1").is_none());
        assert!(parse(&v2_json(&cache))["definitions"].get("com.example.v1.Widget").is_none());
        // Without a scale subresource left, autoscaling types are not published.
        cache.remove("crontabs.stable.example.com");
        let empty = parse(&v2_json(&cache));
        assert!(empty["definitions"].get(SCALE).is_none());
        assert_eq!(empty["paths"], json!({}));
    }

    /// A definition in `group` with the given served versions (a `v1-beta` beside `v1`
    /// interleaves their paths and names), namespaced or not.
    fn thing(group: &str, kind: &str, plural: &str, versions: &[&str], namespaced: bool) -> ResourceDefinition {
        let versions: Vec<Value> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| {
                json!({"name": v, "served": true, "storage": i == 0,
                       "subresources": {"status": {}},
                       "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                           "spec": {"type": "object", "properties": {"size": {"type": "integer", "default": 1}}}}}}})
            })
            .collect();
        def(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
                "names": {"plural": plural, "kind": kind},
                "versions": versions,
            },
        }))
    }

    /// The documents are byte-identical to those of the builder they replace (c131cd0, which
    /// kept pre-serialized parts) for definitions whose paths and names interleave across
    /// groups, versions and definitions: the SHA-512 of each document is pinned. A deliberate
    /// change of the documents updates these hashes (and [`BUILDER_VERSION`]).
    #[test]
    fn documents_are_pinned() {
        let mut cache = OpenApiCache::new();
        upsert(&mut cache, crontab());
        upsert(
            &mut cache,
            widget(json!({"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": true}}})),
        );
        upsert(&mut cache, thing("example.com", "Apple", "apples", &["v1"], true));
        upsert(&mut cache, thing("example.com.io", "Gizmo", "gizmos", &["v1", "v1-beta"], true));
        upsert(&mut cache, thing("v1.example.com", "Aardvark", "aardvarks", &["v1"], false));
        upsert(&mut cache, thing("stable.example.com", "Zebra", "zebras", &["v1", "v1-beta", "v2"], false));
        let v2 = cache.v2().unwrap();
        assert_eq!(v2.etag(), etag(&v2.json().unwrap()), "the ETag is the JSON's hash");
        let mut got = vec![("v2".to_owned(), v2.etag().to_owned())];
        for (g, v) in [
            ("example.com", "v1"),
            ("example.com.io", "v1"),
            ("example.com.io", "v1-beta"),
            ("v1.example.com", "v1"),
            ("stable.example.com", "v1"),
            ("stable.example.com", "v2"),
        ] {
            got.push((format!("{g}/{v}"), etag(&cache.v3_group_version(g, v).unwrap())));
        }
        let got: Vec<String> = got.into_iter().map(|(k, h)| format!("{k} {}", &h[..32])).collect();
        assert_eq!(
            got,
            [
                "v2 F161D301D421E845EF0EEE11F9966F8A",
                "example.com/v1 5B84389F03AEFFADE459E15C3834E693",
                "example.com.io/v1 620A16E8E3C68C002E8486DB30C752C6",
                "example.com.io/v1-beta 338C95BAE514151F6351D1C9F5AB8AF1",
                "v1.example.com/v1 17EA6227714F72CB954AE0DD69ACF3AC",
                "stable.example.com/v1 611C5DA66462B9F85DF7BBC079B0EFE5",
                "stable.example.com/v2 9F50EAF749EDCF2A87CC9EA27E5B9D29",
            ],
            "the documents changed: if on purpose, update these hashes and bump BUILDER_VERSION"
        );
    }

    /// The documents are kept in temporary files; without one (read-only or full `TMPDIR`) in
    /// memory. The bytes and the `ETag` are the same either way, and a document replaced by a
    /// change can still be read by whoever holds it (a request streaming it).
    #[test]
    fn kept_in_files_or_in_memory() {
        use crate::spill::tests::{failing, full};
        let mut caches = vec![(true, OpenApiCache::new()), (false, OpenApiCache::with_files(failing))];
        if std::path::Path::new("/dev/full").exists() {
            caches.push((false, OpenApiCache::with_files(full)));
        }
        let mut documents = Vec::new();
        for (in_file, cache) in &mut caches {
            upsert(cache, crontab());
            let doc = cache.v2().unwrap();
            let (json_gzip, protobuf_gzip) = (doc.json_gzip(), doc.protobuf_gzip().unwrap());
            assert_eq!((json_gzip.in_file(), protobuf_gzip.in_file()), (*in_file, *in_file));
            let json = doc.json().unwrap();
            assert_eq!(doc.etag(), etag(&json));
            assert_eq!(inflate_all(&json_gzip.to_bytes().unwrap()), json);
            documents.push((
                doc.etag().to_owned(),
                json,
                json_gzip.to_bytes().unwrap(),
                doc.protobuf().unwrap(),
                protobuf_gzip.to_bytes().unwrap(),
            ));

            // Replaced by a change: the old document's file stays readable by its holders.
            upsert(cache, widget(json!({"type": "object"})));
            assert_ne!(cache.v2().unwrap().etag(), doc.etag());
            drop(doc);
            assert_eq!(json_gzip.to_bytes().unwrap(), documents.last().unwrap().2);
        }
        assert!(documents.windows(2).all(|w| w[0] == w[1]), "the same documents in a file and in memory");
    }

    fn inflate_all(gzip: &[u8]) -> Bytes {
        let mut out = Vec::new();
        GzDecoder::new(gzip).read_to_end(&mut out).unwrap();
        Bytes::from(out)
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
