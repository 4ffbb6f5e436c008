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
//! document's protobuf form (`openapi_proto`) is converted from its JSON on the first request
//! for it after a change, and shares the JSON's hash as `ETag`, as kube-openapi's does.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion;
use serde_json::{Map, Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_schema::Structural;

use versa_registry::{Compact, SchemaTexts, with_schema};
use versa_registry::table::{OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION, OBJECT_META_NAME_DESCRIPTION};

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

const TITLE: &str = "Kubernetes CRD Swagger";
const TITLE_VERSION: &str = "v0.1.0";

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const OBJECT_METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

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
            let bytes = Bytes::from(crate::openapi_proto::document(&memo.json)?);
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

/// A value as JSON text.
fn serialized(v: &Value) -> Box<str> {
    serde_json::to_string(v).unwrap_or_default().into_boxed_str()
}

// ---------------------------------------------------------------------------------------------
// One definition
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V2,
    V3,
}

impl Flavor {
    fn reference(self, name: &str) -> String {
        match self {
            Flavor::V2 => format!("#/definitions/{name}"),
            Flavor::V3 => format!("#/components/schemas/{name}"),
        }
    }

    /// A reference carrying a description: plain `$ref` in v2, `allOf: [{$ref}]` in v3 (where
    /// siblings of `$ref` are ignored).
    fn described_ref(self, name: &str, description: &str) -> Value {
        match self {
            Flavor::V2 => json!({"$ref": self.reference(name), "description": description}),
            Flavor::V3 => json!({"allOf": [{"$ref": self.reference(name)}], "description": description}),
        }
    }
}

/// The names and facts of one definition the builder uses (`spec.names`, as upstream).
struct Names<'d> {
    group: &'d str,
    kind: &'d str,
    list_kind: String,
    plural: &'d str,
    namespaced: bool,
    preserve_unknown_fields: bool,
}

impl<'d> Names<'d> {
    fn of(def: &'d ResourceDefinition) -> Names<'d> {
        let spec = &def.spec;
        Names {
            group: &spec.group,
            kind: &spec.names.kind,
            list_kind: spec
                .names
                .list_kind
                .clone()
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| format!("{}List", spec.names.kind)),
            plural: &spec.names.plural,
            namespaced: spec.scope == "Namespaced",
            preserve_unknown_fields: spec.preserve_unknown_fields.unwrap_or(false),
        }
    }
}

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

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// kube-openapi's friendly name of `<group>/<version>.<Kind>`: the group's labels reversed.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    if group.contains('.') {
        let reversed: Vec<&str> = group.split('.').rev().collect();
        format!("{}.{version}.{kind}", reversed.join("."))
    } else {
        format!("{group}.{version}.{kind}")
    }
}

/// The schema as JSON if kube would publish it: present, of known types and structural.
fn published_schema(v: &CustomResourceDefinitionVersion) -> Option<Value> {
    let props = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    let value = serde_json::to_value(props).ok()?;
    if has_invalid_types(&value) {
        return None;
    }
    let lowered = Structural::lower(props).ok()?;
    versa_schema::structural_check::is_structural(&lowered).then_some(value)
}

/// `SchemaHasInvalidTypes`: a `type` other than the JSON Schema ones, anywhere.
fn has_invalid_types(v: &Value) -> bool {
    let Value::Object(m) = v else { return false };
    if let Some(t) = m.get("type").and_then(Value::as_str)
        && !matches!(t, "" | "array" | "boolean" | "integer" | "number" | "object" | "string")
    {
        return true;
    }
    schema_children(m).any(has_invalid_types)
}

/// Every sub-schema of a schema object (structural part and junctors).
fn schema_children(m: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    let props = ["properties", "patternProperties", "definitions"]
        .into_iter()
        .filter_map(|k| m.get(k).and_then(Value::as_object))
        .flat_map(|p| p.values());
    let lists = ["allOf", "anyOf", "oneOf"].into_iter().filter_map(|k| m.get(k).and_then(Value::as_array)).flatten();
    let items = match m.get("items") {
        Some(Value::Array(a)) => a.iter().collect::<Vec<_>>(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let singles = ["not", "additionalProperties", "additionalItems"].into_iter().filter_map(|k| m.get(k));
    props.chain(lists).chain(items).chain(singles)
}

/// `buildKubeNative`: the kind's schema in one flavor.
fn kind_schema(schema: Option<&Value>, flavor: Flavor, crd_preserve_unknown_fields: bool) -> Value {
    let Some(schema) = schema else { return json!({"type": "object"}) };
    if flavor == Flavor::V2 && (crd_preserve_unknown_fields || is_true(schema, "x-kubernetes-preserve-unknown-fields"))
    {
        return json!({"type": "object"});
    }
    let mut s = structural_copy(schema);
    unfold_int_or_string(&mut s);
    if flavor == Flavor::V2 {
        to_v2(&mut s);
    }
    if let Value::Object(m) = &mut s {
        let props = m.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(props) = props {
            props.insert("metadata".into(), flavor.described_ref(OBJECT_META, OBJECT_METADATA_DESCRIPTION));
            props.insert("apiVersion".into(), json!({"type": "string", "description": API_VERSION_DESCRIPTION}));
            props.insert("kind".into(), json!({"type": "string", "description": KIND_DESCRIPTION}));
        }
    }
    add_embedded_properties(&mut s, flavor);
    s
}

fn is_true(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The keys of a schema that survive the structural model (`ToKubeOpenAPI` of `Structural`):
/// everything else (`example`, `externalDocs`, `$ref`, `id`, `$schema`, `definitions`,
/// `dependencies`, `additionalItems`, `patternProperties`) is dropped, as are `false` flags and
/// empty lists, which Go omits.
fn structural_copy(v: &Value) -> Value {
    let Value::Object(m) = v else { return v.clone() };
    let mut out = Map::new();
    for (k, val) in m {
        let kept = match k.as_str() {
            "type"
            | "description"
            | "title"
            | "default"
            | "format"
            | "maximum"
            | "minimum"
            | "maxLength"
            | "minLength"
            | "pattern"
            | "maxItems"
            | "minItems"
            | "multipleOf"
            | "maxProperties"
            | "minProperties"
            | "x-kubernetes-list-type"
            | "x-kubernetes-map-type" => Some(val.clone()),
            "nullable"
            | "exclusiveMaximum"
            | "exclusiveMinimum"
            | "uniqueItems"
            | "x-kubernetes-preserve-unknown-fields"
            | "x-kubernetes-embedded-resource"
            | "x-kubernetes-int-or-string" => (val == &Value::Bool(true)).then(|| val.clone()),
            "enum" | "required" | "x-kubernetes-list-map-keys" | "x-kubernetes-validations" => {
                val.as_array().filter(|a| !a.is_empty()).map(|_| val.clone())
            }
            "properties" => val
                .as_object()
                .map(|p| Value::Object(p.iter().map(|(name, s)| (name.clone(), structural_copy(s))).collect())),
            "items" | "not" => Some(structural_copy(val)),
            "additionalProperties" => Some(if val.is_object() { structural_copy(val) } else { val.clone() }),
            "allOf" | "anyOf" | "oneOf" => {
                val.as_array().filter(|a| !a.is_empty()).map(|a| Value::Array(a.iter().map(structural_copy).collect()))
            }
            _ => None,
        };
        if let Some(kept) = kept {
            out.insert(k.clone(), kept);
        }
    }
    Value::Object(out)
}

/// `Structural.Unfold`: `x-kubernetes-int-or-string` gains `anyOf: [integer, string]` unless its
/// value validations already spell that pattern.
fn unfold_int_or_string(s: &mut Value) {
    let Value::Object(m) = s else { return };
    for child in structural_children_mut(m) {
        unfold_int_or_string(child);
    }
    if !m.get("x-kubernetes-int-or-string").and_then(Value::as_bool).unwrap_or(false) {
        return;
    }
    let pattern = json!([{"type": "integer"}, {"type": "string"}]);
    let any_of_is_pattern = m.get("anyOf") == Some(&pattern);
    let all_of_starts_with_pattern =
        m.get("allOf").and_then(Value::as_array).and_then(|a| a.first()).is_some_and(|first| {
            first.get("anyOf") == Some(&pattern) && first.as_object().is_some_and(|f| f.len() == 1)
        });
    if any_of_is_pattern || all_of_starts_with_pattern {
        return;
    }
    if m.contains_key("anyOf") {
        let mut all_of = vec![json!({"anyOf": pattern})];
        if let Some(Value::Array(existing)) = m.remove("allOf") {
            all_of.extend(existing);
        }
        m.insert("allOf".into(), Value::Array(all_of));
    } else {
        m.insert("anyOf".into(), pattern);
    }
}

/// The structural children of a schema: property schemas, `items`, `additionalProperties`.
fn structural_children_mut(m: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut out = Vec::new();
    let mut props = None;
    let mut items = None;
    let mut additional = None;
    for (k, v) in m.iter_mut() {
        match k.as_str() {
            "properties" => props = Some(v),
            "items" => items = Some(v),
            "additionalProperties" => additional = Some(v),
            _ => {}
        }
    }
    if let Some(Value::Object(p)) = props {
        out.extend(p.values_mut());
    }
    if let Some(items) = items.filter(|i| i.is_object()) {
        out.push(items);
    }
    if let Some(additional) = additional.filter(|a| a.is_object()) {
        out.push(additional);
    }
    out
}

/// `ToStructuralOpenAPIV2`, on the structural copy.
fn to_v2(s: &mut Value) {
    let Value::Object(m) = s else { return };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(junctor);
    }
    if m.remove("nullable").is_some() {
        m.remove("type");
        m.remove("items");
        m.remove("properties");
    }
    let preserve = m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool).unwrap_or(false);
    if preserve {
        m.remove("items");
        m.remove("properties");
    }
    if !m.contains_key("items") && m.get("type").and_then(Value::as_str) == Some("array") {
        m.remove("type");
    }
    if preserve && m.get("type").and_then(Value::as_str) == Some("object") {
        m.remove("type");
    }
    let nullable_props: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().filter(|(_, s)| is_true(s, "nullable")).map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable_props.iter().any(|p| p == r)));
    }
    if m.get("additionalProperties").is_some_and(|a| is_true(a, "nullable")) {
        m.remove("required");
    }
    if m.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        m.remove("required");
    }
    for child in structural_children_mut(m) {
        to_v2(child);
    }
}

/// `handler.PruneDefaults`: no `default` anywhere in a v2 schema.
fn prune_defaults(s: &mut Value) {
    let Value::Object(m) = s else { return };
    m.remove("default");
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = m.get_mut(junctor) {
            a.iter_mut().for_each(prune_defaults);
        }
    }
    if let Some(not) = m.get_mut("not") {
        prune_defaults(not);
    }
    for child in structural_children_mut(m) {
        prune_defaults(child);
    }
}

/// `addEmbeddedProperties`: embedded resources get `apiVersion`, `kind` and `metadata`, and
/// require the first two (in v2 not when they also preserve unknown fields).
fn add_embedded_properties(s: &mut Value, flavor: Flavor) {
    let Value::Object(m) = s else { return };
    for child in structural_children_mut(m) {
        add_embedded_properties(child, flavor);
    }
    let preserve = m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool).unwrap_or(false);
    if preserve && flavor == Flavor::V2 {
        return;
    }
    if !m.get("x-kubernetes-embedded-resource").and_then(Value::as_bool).unwrap_or(false) {
        return;
    }
    if let Value::Object(props) = m.entry("properties").or_insert_with(|| json!({})) {
        props.insert("apiVersion".into(), json!({"type": "string", "description": EMBEDDED_API_VERSION_DESCRIPTION}));
        props.insert("kind".into(), json!({"type": "string", "description": EMBEDDED_KIND_DESCRIPTION}));
        props.insert("metadata".into(), flavor.described_ref(OBJECT_META, OBJECT_METADATA_DESCRIPTION));
    }
    if let Value::Array(required) = m.entry("required").or_insert_with(|| json!([])) {
        for key in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == key) {
                required.push(json!(key));
            }
        }
    }
}

/// `buildListSchema`.
fn list_schema(names: &Names<'_>, version: &str, kind_name: &str, flavor: Flavor) -> Value {
    let items_doc = format!(
        "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
        names.plural
    );
    json!({
        "type": "object",
        "description": format!("{} is a list of {}", names.list_kind, names.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
            "items": {"type": "array", "items": {"$ref": flavor.reference(kind_name)}, "description": items_doc},
            "kind": {"type": "string", "description": KIND_DESCRIPTION},
            "metadata": flavor.described_ref(LIST_META, LIST_METADATA_DESCRIPTION),
        },
        "x-kubernetes-group-version-kind": [gvk(names.group, version, &names.list_kind)],
    })
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

/// Which definition a body or response refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schema {
    Kind,
    List,
    Status,
    Scale,
    Patch,
    DeleteOptions,
}

/// The query options an operation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Options {
    Get,
    List,
    Create,
    Update,
    Patch,
    Delete,
}

/// One route of the builder (`generateBuilder`/`buildRoute`).
#[derive(Debug, Clone)]
struct Route {
    path: String,
    method: &'static str,
    /// `x-kubernetes-action`.
    action: &'static str,
    operation_id: String,
    description: String,
    response: Schema,
    body: Option<(Schema, bool)>,
    options: Options,
}

fn routes(names: &Names<'_>, version: &str, status: bool, scale: bool) -> Vec<Route> {
    let kind = names.kind;
    let namespaced = if names.namespaced { "Namespaced" } else { "" };
    let cluster_root = format!("/apis/{}/{version}/{}", names.group, names.plural);
    let root = if names.namespaced {
        format!("/apis/{}/{version}/namespaces/{{namespace}}/{}", names.group, names.plural)
    } else {
        cluster_root.clone()
    };
    let article = article_for(kind);
    let route = |path: String, method, action, verb: &str, sub: &str, response, body, options| {
        let sub_title = title_case(sub);
        let sub_of = if sub.is_empty() { String::new() } else { format!(" {sub} of") };
        let description = match verb {
            "list" => format!("list{sub_of} objects of kind {kind}"),
            "read" | "replace" => format!("{verb}{sub_of} the specified {kind}"),
            "patch" => format!("partially update{sub_of} the specified {kind}"),
            "create" | "delete" => format!("{verb}{sub_of}{article}{kind}"),
            _ => format!(
                "delete collection of{} {kind}",
                if sub.is_empty() { String::new() } else { format!("{sub_of} a") }
            ),
        };
        let op = format!("{verb}{namespaced}{kind}{sub_title}");
        Route { operation_id: operation_id(&op, &path), path, method, action, description, response, body, options }
    };
    let item = format!("{root}/{{name}}");
    let mut out = Vec::new();
    if names.namespaced {
        let mut all = route(cluster_root, "get", "list", "list", "", Schema::List, None, Options::List);
        all.operation_id = operation_id(&format!("list{kind}ForAllNamespaces"), &all.path);
        out.push(all);
    }
    out.push(route(root.clone(), "get", "list", "list", "", Schema::List, None, Options::List));
    out.push(route(
        root.clone(),
        "post",
        "post",
        "create",
        "",
        Schema::Kind,
        Some((Schema::Kind, true)),
        Options::Create,
    ));
    out.push(route(root, "delete", "deletecollection", "deletecollection", "", Schema::Status, None, Options::List));
    out.push(route(item.clone(), "get", "get", "read", "", Schema::Kind, None, Options::Get));
    out.push(route(
        item.clone(),
        "put",
        "put",
        "replace",
        "",
        Schema::Kind,
        Some((Schema::Kind, true)),
        Options::Update,
    ));
    out.push(route(
        item.clone(),
        "delete",
        "delete",
        "delete",
        "",
        Schema::Status,
        Some((Schema::DeleteOptions, false)),
        Options::Delete,
    ));
    out.push(route(
        item.clone(),
        "patch",
        "patch",
        "patch",
        "",
        Schema::Kind,
        Some((Schema::Patch, true)),
        Options::Patch,
    ));
    for (enabled, sub, schema) in [(status, "status", Schema::Kind), (scale, "scale", Schema::Scale)] {
        if !enabled {
            continue;
        }
        let path = format!("{item}/{sub}");
        out.push(route(path.clone(), "get", "get", "read", sub, schema, None, Options::Get));
        out.push(route(path.clone(), "put", "put", "replace", sub, schema, Some((schema, true)), Options::Update));
        out.push(route(path, "patch", "patch", "patch", sub, schema, Some((Schema::Patch, true)), Options::Patch));
    }
    out
}

/// `endpoints.GetArticleForNoun(noun, " ")`.
fn article_for(noun: &str) -> &'static str {
    if !noun.ends_with("ss") && noun.ends_with('s') {
        return " ";
    }
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => " an ",
        _ => " a ",
    }
}

fn title_case(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `GetOperationIDAndTags`: `list` + `StableExampleCom` + `V1` + `NamespacedCronTab`, tag
/// `stableExampleCom_v1`. The verb is the shortest known verb the operation starts with (so
/// `deletecollection…` becomes `delete…Collection…`, as upstream's trie does).
fn operation_id(op: &str, path: &str) -> String {
    const VERBS: [&str; 12] = [
        "get",
        "log",
        "read",
        "replace",
        "patch",
        "delete",
        "watch",
        "connect",
        "proxy",
        "list",
        "create",
        "deletecollection",
    ];
    let Some(verb) = VERBS.iter().filter(|v| op.starts_with(*v)).min_by_key(|v| v.len()) else {
        return op.to_string();
    };
    let rest = &op[verb.len()..];
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut prefix = verb.to_string();
    if parts.len() >= 2 && parts[0] == "apis" {
        let group = parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]);
        prefix.push_str(&valid_operation_id(group, true));
        if let Some(version) = parts.get(2) {
            prefix.push_str(&valid_operation_id(version, true));
        }
    }
    prefix + &valid_operation_id(rest, true)
}

/// The tag of the operations of a group-version.
fn operation_tag(group: &str, version: &str) -> String {
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    format!("{}_{}", valid_operation_id(group, false), valid_operation_id(version, false))
}

/// `ToValidOperationID`: letters, `_` and non-leading digits survive; anything else is dropped
/// and capitalizes the next kept character.
fn valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// (name, type, description) of the query parameters of each option kind.
fn query_parameters(options: Options) -> &'static [(&'static str, &'static str, &'static str)] {
    const RESOURCE_VERSION: (&str, &str, &str) = (
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    );
    const DRY_RUN: (&str, &str, &str) = (
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
    );
    const FIELD_MANAGER: (&str, &str, &str) = (
        "fieldManager",
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
    );
    const FIELD_VALIDATION: (&str, &str, &str) = (
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default. - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
    );
    match options {
        Options::Get => &[RESOURCE_VERSION],
        Options::List => &[
            (
                "allowWatchBookmarks",
                "boolean",
                "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.",
            ),
            (
                "continue",
                "string",
                "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize.",
            ),
            (
                "fieldSelector",
                "string",
                "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
            ),
            (
                "labelSelector",
                "string",
                "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
            ),
            (
                "limit",
                "integer",
                "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results.",
            ),
            RESOURCE_VERSION,
            (
                "resourceVersionMatch",
                "string",
                "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
            ),
            (
                "sendInitialEvents",
                "boolean",
                "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event will be sent.",
            ),
            (
                "timeoutSeconds",
                "integer",
                "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
            ),
            (
                "watch",
                "boolean",
                "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
            ),
        ],
        Options::Create | Options::Update => &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION],
        Options::Patch => &[
            DRY_RUN,
            FIELD_MANAGER,
            FIELD_VALIDATION,
            (
                "force",
                "boolean",
                "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
            ),
        ],
        Options::Delete => &[
            DRY_RUN,
            (
                "gracePeriodSeconds",
                "integer",
                "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.",
            ),
            (
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                "boolean",
                "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it",
            ),
            (
                "orphanDependents",
                "boolean",
                "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.",
            ),
            (
                "propagationPolicy",
                "string",
                "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
            ),
        ],
    }
}

const PRETTY_DESCRIPTION: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
const NAMESPACE_DESCRIPTION: &str = "object name and auth scope, such as for teams and projects";

fn parameter(flavor: Flavor, name: &str, location: &str, type_: &str, description: &str, required: bool) -> Value {
    let mut p = Map::new();
    p.insert("name".into(), json!(name));
    p.insert("in".into(), json!(location));
    p.insert("description".into(), json!(description));
    if required {
        p.insert("required".into(), json!(true));
    }
    match flavor {
        Flavor::V2 => {
            p.insert("type".into(), json!(type_));
            p.insert("uniqueItems".into(), json!(true));
        }
        Flavor::V3 => {
            p.insert("schema".into(), json!({"type": type_, "uniqueItems": true}));
        }
    }
    Value::Object(p)
}

/// A parameter every resource shares. In v2 it is a `$ref` into the document's top-level
/// `parameters` (named `<name>-<hash>`, as kube-openapi deduplicates them), which keeps the
/// document — one path item per route of every definition — a fraction of its inline size;
/// v3 documents are per group-version and keep them inline.
fn shared_parameter(
    flavor: Flavor,
    name: &str,
    location: &str,
    type_: &str,
    description: &str,
    required: bool,
) -> Value {
    let p = parameter(flavor, name, location, type_, description, required);
    match flavor {
        Flavor::V2 => json!({"$ref": format!("#/parameters/{}", shared_parameter_key(name, &p))}),
        Flavor::V3 => p,
    }
}

fn shared_parameter_key(name: &str, p: &Value) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, serialized(p).as_bytes());
    let short = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest.as_ref()[..6]);
    format!("{name}-{short}")
}

/// The v2 document's top-level `parameters`: every shared parameter, serialized.
fn shared_v2_parameters() -> &'static BTreeMap<String, Box<str>> {
    static PARAMS: OnceLock<BTreeMap<String, Box<str>>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        let mut all = vec![
            parameter(Flavor::V2, "namespace", "path", "string", NAMESPACE_DESCRIPTION, true),
            parameter(Flavor::V2, "pretty", "query", "string", PRETTY_DESCRIPTION, false),
        ];
        for options in [Options::Get, Options::List, Options::Create, Options::Update, Options::Patch, Options::Delete]
        {
            for (name, type_, desc) in query_parameters(options) {
                all.push(parameter(Flavor::V2, name, "query", type_, desc, false));
            }
        }
        all.into_iter()
            .map(|p| {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                (shared_parameter_key(&name, &p), serialized(&p))
            })
            .collect()
    })
}

fn schema_ref(names: &Names<'_>, version: &str, schema: Schema, flavor: Flavor) -> Value {
    let name = match schema {
        Schema::Kind => definition_name(names.group, version, names.kind),
        Schema::List => definition_name(names.group, version, &names.list_kind),
        Schema::Status => STATUS.to_string(),
        Schema::Scale => SCALE.to_string(),
        Schema::Patch => PATCH.to_string(),
        Schema::DeleteOptions => DELETE_OPTIONS.to_string(),
    };
    json!({"$ref": flavor.reference(&name)})
}

/// The path items of a version's routes, in one flavor.
fn render_paths(names: &Names<'_>, version: &str, routes: &[Route], flavor: Flavor) -> BTreeMap<String, Value> {
    let tag = operation_tag(names.group, version);
    let mut items: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for route in routes {
        let item = items.entry(route.path.clone()).or_default();
        if !item.contains_key("parameters") {
            let mut common = Vec::new();
            if route.path.contains("{name}") {
                let desc = format!("name of the {}", names.kind);
                common.push(parameter(flavor, "name", "path", "string", &desc, true));
            }
            if route.path.contains("{namespace}") {
                common.push(shared_parameter(flavor, "namespace", "path", "string", NAMESPACE_DESCRIPTION, true));
            }
            common.push(shared_parameter(flavor, "pretty", "query", "string", PRETTY_DESCRIPTION, false));
            item.insert("parameters".into(), Value::Array(common));
        }
        item.insert(route.method.into(), operation(names, version, route, &tag, flavor));
    }
    items.into_iter().map(|(path, item)| (path, Value::Object(item))).collect()
}

fn operation(names: &Names<'_>, version: &str, route: &Route, tag: &str, flavor: Flavor) -> Value {
    let mut params: Vec<(String, Value)> = query_parameters(route.options)
        .iter()
        .map(|(name, type_, desc)| (name.to_string(), shared_parameter(flavor, name, "query", type_, desc, false)))
        .collect();
    let mut op = Map::new();
    op.insert("description".into(), json!(route.description));
    op.insert("tags".into(), json!([tag]));
    op.insert("operationId".into(), json!(route.operation_id));
    let consumes: &[&str] = if route.method == "patch" {
        &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
    } else {
        &["application/json", "application/yaml"]
    };
    let produces = ["application/json", "application/yaml"];
    if let Some((schema, required)) = route.body {
        let body_schema = schema_ref(names, version, schema, flavor);
        match flavor {
            Flavor::V2 => {
                let mut body = json!({"name": "body", "in": "body", "schema": body_schema});
                if required {
                    body["required"] = json!(true);
                }
                params.push(("body".into(), body));
            }
            Flavor::V3 => {
                // builder3 offers every request body as `*/*`.
                let mut body = json!({"content": {"*/*": {"schema": body_schema}}});
                if required {
                    body["required"] = json!(true);
                }
                op.insert("requestBody".into(), body);
            }
        }
    }
    params.sort_by(|a, b| a.0.cmp(&b.0));
    op.insert("parameters".into(), Value::Array(params.into_iter().map(|(_, p)| p).collect()));
    let response_schema = schema_ref(names, version, route.response, flavor);
    let mut codes = vec![("200", "OK")];
    match route.action {
        "post" => codes.extend([("201", "Created"), ("202", "Accepted")]),
        "put" => codes.push(("201", "Created")),
        "delete" => codes.push(("202", "Accepted")),
        _ => {}
    }
    let mut responses = Map::new();
    for (code, text) in codes {
        let response = match flavor {
            Flavor::V2 => json!({"description": text, "schema": response_schema}),
            Flavor::V3 => {
                let content: Map<String, Value> =
                    produces.iter().map(|c| (c.to_string(), json!({"schema": response_schema}))).collect();
                json!({"description": text, "content": content})
            }
        };
        responses.insert(code.into(), response);
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    op.insert("responses".into(), Value::Object(responses));
    if flavor == Flavor::V2 {
        op.insert("consumes".into(), json!(consumes));
        op.insert("produces".into(), json!(produces));
        op.insert("schemes".into(), json!(["https"]));
    }
    op.insert("x-kubernetes-action".into(), json!(route.action));
    op.insert("x-kubernetes-group-version-kind".into(), gvk(names.group, version, names.kind));
    Value::Object(op)
}

// ---------------------------------------------------------------------------------------------
// Referenced built-in types
// ---------------------------------------------------------------------------------------------

/// The meta (and autoscaling) definitions the routes and kinds refer to, per flavor.
fn meta_definitions(flavor: Flavor) -> &'static BTreeMap<String, Box<str>> {
    static V2: OnceLock<BTreeMap<String, Box<str>>> = OnceLock::new();
    static V3: OnceLock<BTreeMap<String, Box<str>>> = OnceLock::new();
    match flavor {
        Flavor::V2 => V2.get_or_init(|| serialize_all(build_meta_definitions(Flavor::V2))),
        Flavor::V3 => V3.get_or_init(|| serialize_all(build_meta_definitions(Flavor::V3))),
    }
}

fn serialize_all(defs: BTreeMap<String, Value>) -> BTreeMap<String, Box<str>> {
    defs.into_iter().map(|(k, v)| (k, serialized(&v))).collect()
}

fn build_meta_definitions(flavor: Flavor) -> BTreeMap<String, Value> {
    let r = |name: &str| json!({"$ref": flavor.reference(name)});
    let dr = |name: &str, desc: &str| flavor.described_ref(name, desc);
    let string = |desc: &str| json!({"type": "string", "description": desc});
    let int64 = |desc: &str| json!({"type": "integer", "format": "int64", "description": desc});
    let int32 = |desc: &str| json!({"type": "integer", "format": "int32", "description": desc});
    let boolean = |desc: &str| json!({"type": "boolean", "description": desc});
    let string_map =
        |desc: &str| json!({"type": "object", "additionalProperties": {"type": "string"}, "description": desc});
    let time = format!("{META}Time");
    let gvk_of = |group: &str, version: &str, kind: &str| json!([gvk(group, version, kind)]);

    let mut defs = BTreeMap::new();
    defs.insert(time.clone(), json!({
        "type": "string", "format": "date-time",
        "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
    }));
    defs.insert(format!("{META}FieldsV1"), json!({
        "type": "object",
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
    }));
    defs.insert(format!("{META}ManagedFieldsEntry"), json!({
        "type": "object",
        "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
        "properties": {
            "apiVersion": string("APIVersion defines the version of this resource that this field set applies to. The format is \"group/version\" just like the top-level APIVersion field. It is necessary to track the version of a field set because it cannot be automatically converted."),
            "fieldsType": string("FieldsType is the discriminator for the different fields format and version. There is currently only one possible value: \"FieldsV1\""),
            "fieldsV1": dr(&format!("{META}FieldsV1"), "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type."),
            "manager": string("Manager is an identifier of the workflow managing these fields."),
            "operation": string("Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'."),
            "subresource": string("Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource. The value of this field is used to distinguish between managers, even if they share the same name. For example, a status update will be distinct from a regular update using the same manager name. Note that the APIVersion field is not related to the Subresource field and it always corresponds to the version of the main resource."),
            "time": dr(&time, "Time is the timestamp of when the ManagedFields entry was added. The timestamp will also be updated if a field is added, the manager changes any of the owned fields value or removes a field. The timestamp does not update when a field is removed from the entry because another manager took it over."),
        },
    }));
    defs.insert(format!("{META}OwnerReference"), json!({
        "type": "object",
        "description": "OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": string("API version of the referent."),
            "blockOwnerDeletion": boolean("If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed. See https://kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion for how the garbage collector interacts with this field and enforces the foreground deletion. Defaults to false. To set this field, a user needs \"delete\" permission of the owner, otherwise 422 (Unprocessable Entity) will be returned."),
            "controller": boolean("If true, this reference points to the managing controller."),
            "kind": string("Kind of the referent. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
            "name": string("Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
            "uid": string("UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
        },
        "x-kubernetes-map-type": "atomic",
    }));
    let mut finalizers = json!({"type": "array", "items": {"type": "string"}, "description": "Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list."});
    finalizers["x-kubernetes-list-type"] = json!("set");
    finalizers["x-kubernetes-patch-strategy"] = json!("merge");
    defs.insert(OBJECT_META.to_string(), json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "properties": {
            "annotations": string_map("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations"),
            "creationTimestamp": dr(&time, OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION),
            "deletionGracePeriodSeconds": int64("Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only."),
            "deletionTimestamp": dr(&time, "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
            "finalizers": finalizers,
            "generateName": string("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will return a 409.\n\nApplied only if Name is not specified. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency"),
            "generation": int64("A sequence number representing a specific generation of the desired state. Populated by the system. Read-only."),
            "labels": string_map("Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels"),
            "managedFields": {
                "type": "array", "items": r(&format!("{META}ManagedFieldsEntry")), "x-kubernetes-list-type": "atomic",
                "description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn't need to set or understand this field. A workflow can be the user's name, a controller's name, or the name of a specific apply path like \"ci-cd\". The set of fields is always in the version that the workflow used when modifying the object.",
            },
            "name": string(OBJECT_META_NAME_DESCRIPTION),
            "namespace": string("Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the \"default\" namespace, but \"default\" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces"),
            "ownerReferences": {
                "type": "array", "items": r(&format!("{META}OwnerReference")),
                "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge",
                "description": "List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.",
            },
            "resourceVersion": string("An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
            "uid": string("UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
        },
    }));
    defs.insert(LIST_META.to_string(), json!({
        "type": "object",
        "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.",
        "properties": {
            "continue": string("continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available. The value is opaque and may be used to issue another request to the endpoint that served this list to retrieve the next set of available objects."),
            "remainingItemCount": int64("remainingItemCount is the number of subsequent items in the list which are not included in this list response. The intended use of the remainingItemCount is *estimating* the size of a collection. Clients should not rely on the remainingItemCount to be set or to be exact."),
            "resourceVersion": string("String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed. Value must be treated as opaque by clients and passed unmodified back to the server. Populated by the system. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
        },
    }));
    defs.insert(format!("{META}StatusCause"), json!({
        "type": "object",
        "description": "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
        "properties": {
            "field": string("The field of the resource that has caused this error, as named by its JSON serialization. May include dot and postfix notation for nested attributes. Arrays are zero-indexed.  Fields may appear more than once in an array of causes due to fields having multiple errors. Optional."),
            "message": string("A human-readable description of the cause of the error.  This field may be presented as-is to a reader."),
            "reason": string("A machine-readable description of the cause of the error. If this value is empty there is no information available."),
        },
    }));
    defs.insert(format!("{META}StatusDetails"), json!({
        "type": "object",
        "description": "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.",
        "properties": {
            "causes": {"type": "array", "items": r(&format!("{META}StatusCause")), "x-kubernetes-list-type": "atomic",
                       "description": "The Causes array includes more details associated with the StatusReason failure. Not all StatusReasons may provide detailed causes."},
            "group": string("The group attribute of the resource associated with the status StatusReason."),
            "kind": string("The kind attribute of the resource associated with the status StatusReason. On some operations may differ from the requested resource Kind. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
            "name": string("The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described)."),
            "retryAfterSeconds": int32("If specified, the time in seconds before the operation should be retried. Some errors may indicate the client must take an alternate action - for those errors this field may indicate how long to wait before taking the alternate action."),
            "uid": string("UID of the resource. (when there is a single resource which can be described). More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
        },
    }));
    defs.insert(STATUS.to_string(), json!({
        "type": "object",
        "description": "Status is a return value for calls that don't return other objects.",
        "properties": {
            "apiVersion": string(API_VERSION_DESCRIPTION),
            "code": int32("Suggested HTTP return code for this status, 0 if not set."),
            "details": dr(&format!("{META}StatusDetails"), "Extended data associated with the reason.  Each reason may define its own extended details. This field is optional and the data returned is not guaranteed to conform to any schema except that defined by the reason type."),
            "kind": string(KIND_DESCRIPTION),
            "message": string("A human-readable description of the status of this operation."),
            "metadata": dr(LIST_META, LIST_METADATA_DESCRIPTION),
            "reason": string("A machine-readable description of why this operation is in the \"Failure\" status. If this value is empty there is no information available. A Reason clarifies an HTTP status code but does not override it."),
            "status": string("Status of the operation. One of: \"Success\" or \"Failure\". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status"),
        },
        "x-kubernetes-group-version-kind": gvk_of("", "v1", "Status"),
    }));
    defs.insert(
        format!("{META}Preconditions"),
        json!({
            "type": "object",
            "description": "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
            "properties": {
                "resourceVersion": string("Specifies the target ResourceVersion"),
                "uid": string("Specifies the target UID."),
            },
        }),
    );
    defs.insert(DELETE_OPTIONS.to_string(), json!({
        "type": "object",
        "description": "DeleteOptions may be provided when deleting an API object.",
        "properties": {
            "apiVersion": string(API_VERSION_DESCRIPTION),
            "dryRun": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic",
                       "description": "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"},
            "gracePeriodSeconds": int64("The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
            "ignoreStoreReadErrorWithClusterBreakingPotential": boolean("if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error."),
            "kind": string(KIND_DESCRIPTION),
            "orphanDependents": boolean("Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned."),
            "preconditions": dr(&format!("{META}Preconditions"), "Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned."),
            "propagationPolicy": string("Whether and how garbage collection will be performed. Acceptable values are: 'Orphan', 'Background', 'Foreground'."),
        },
        "x-kubernetes-group-version-kind": gvk_of("", "v1", "DeleteOptions"),
    }));
    defs.insert(
        PATCH.to_string(),
        json!({
            "type": "object",
            "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
        }),
    );
    defs.insert(
        "io.k8s.apimachinery.pkg.runtime.RawExtension".to_string(),
        json!({
            "type": "object",
            "description": "RawExtension is used to hold extensions in external versions.",
        }),
    );
    defs.insert(format!("{META}WatchEvent"), json!({
        "type": "object",
        "description": "Event represents a single event to a watched resource.",
        "required": ["type", "object"],
        "properties": {
            "object": dr("io.k8s.apimachinery.pkg.runtime.RawExtension", "Object is:\n * If Type is Added or Modified: the new state of the object.\n * If Type is Deleted: the state of the object immediately before deletion.\n * If Type is Error: *Status is recommended; other types may make sense\n   depending on context."),
            "type": string(""),
        },
        "x-kubernetes-group-version-kind": gvk_of("", "v1", "WatchEvent"),
    }));
    defs.insert(
        "io.k8s.api.autoscaling.v1.ScaleSpec".to_string(),
        json!({
            "type": "object",
            "description": "ScaleSpec describes the attributes of a scale subresource.",
            "properties": {"replicas": int32("replicas is the desired number of instances for the scaled object.")},
        }),
    );
    defs.insert("io.k8s.api.autoscaling.v1.ScaleStatus".to_string(), json!({
        "type": "object",
        "description": "ScaleStatus represents the current status of a scale subresource.",
        "required": ["replicas"],
        "properties": {
            "replicas": int32("replicas is the actual number of observed instances of the scaled object."),
            "selector": string("selector is the label query over pods that should match the replicas count. This is same as the label selector but in the string format to avoid introspection by clients. The string will be in the same format as the query-param syntax. More info about label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"),
        },
    }));
    defs.insert(SCALE.to_string(), json!({
        "type": "object",
        "description": "Scale represents a scaling request for a resource.",
        "properties": {
            "apiVersion": string(API_VERSION_DESCRIPTION),
            "kind": string(KIND_DESCRIPTION),
            "metadata": dr(OBJECT_META, OBJECT_METADATA_DESCRIPTION),
            "spec": dr("io.k8s.api.autoscaling.v1.ScaleSpec", "spec defines the behavior of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status."),
            "status": dr("io.k8s.api.autoscaling.v1.ScaleStatus", "status is the current status of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status. Read-only."),
        },
        "x-kubernetes-group-version-kind": gvk_of("autoscaling", "v1", "Scale"),
    }));
    defs
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
