//! The documents' JSON, written entry by entry: what the cache keeps of a definition
//! ([`DefinitionPart`]) and, from those parts, the path items and the definitions (v2) or
//! schemas (v3) of `/openapi/v2` and `/openapi/v3/apis/<group>/<version>`, each entry built as
//! it is written (by `schema.rs`, `paths.rs` and `meta.rs`) and dropped.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion;
use serde_json::{Value, json};
use versa_registry::{Compact, with_schema};

use super::meta::*;
use super::names::*;
use super::paths::*;
use super::schema::*;

/// What the cache keeps of one definition: its compact form (the registry's, shared), and what
/// finding its group-versions and hashing them needs without reading it.
#[derive(Debug)]
pub(super) struct DefinitionPart {
    pub(super) kept: Compact,
    pub(super) group: String,
    /// The served versions' names, in the definition's order.
    pub(super) served: Vec<String>,
    /// Whether a served version has a `/scale` subresource (the v2 document then publishes
    /// `io.k8s.api.autoscaling.v1`).
    pub(super) uses_scale: bool,
    /// SHA-256 of the spec (as JSON) and of every schema text: what the documents are built
    /// from. Metadata and status are left out: they are not published, and a status write must
    /// not move the v3 hashes.
    pub(super) hash: [u8; 32],
}

impl DefinitionPart {
    /// A definition's part, from its compact form.
    pub(super) fn new(kept: Compact) -> DefinitionPart {
        let def = &kept.def;
        let served: Vec<&CustomResourceDefinitionVersion> = def.spec.versions.iter().filter(|v| v.served).collect();
        let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
        // Serializing a spec into a Vec cannot fail; a missing spec would only weaken the hash.
        hash.update(&serde_json::to_vec(&kept.def.spec).unwrap_or_default());
        hash.update(kept.schemas.digest());
        let mut digest = [0; 32];
        digest.copy_from_slice(hash.finish().as_ref());
        let (group, uses_scale) = (def.spec.group.clone(), served.iter().any(|v| version_uses_scale(v)));
        let served = served.iter().map(|v| v.name.clone()).collect();
        DefinitionPart { group, served, uses_scale, hash: digest, kept }
    }

    /// The served versions named `version` (one, in a valid definition), or all served ones.
    fn versions<'a>(&'a self, version: Option<&'a str>) -> impl Iterator<Item = &'a CustomResourceDefinitionVersion> {
        self.kept.def.spec.versions.iter().filter(move |v| v.served && version.is_none_or(|n| v.name == n))
    }
}

/// Every served group-version with the definitions serving it, in the order given.
pub(super) fn group_versions<'a>(
    parts: impl Iterator<Item = &'a DefinitionPart>,
) -> BTreeMap<(&'a str, &'a str), Vec<&'a DefinitionPart>> {
    let mut gvs: BTreeMap<(&str, &str), Vec<&DefinitionPart>> = BTreeMap::new();
    for part in parts {
        for version in &part.served {
            gvs.entry((part.group.as_str(), version.as_str())).or_default().push(part);
        }
    }
    gvs
}

/// `/openapi/v2` from `parts`, the definitions served, entry by entry in key order.
pub(super) fn write_v2(out: &mut impl Write, parts: &[Arc<DefinitionPart>]) -> io::Result<()> {
    out.write_all(b"{\"swagger\":\"2.0\",\"info\":")?;
    write_value(out, &json!({"title": TITLE, "version": TITLE_VERSION}))?;
    out.write_all(b",\"paths\":{")?;
    // Every path starts with `/apis/<group>/<version>/`. Neither a group nor a version holds
    // a `/`, so no such prefix starts another, and the paths of two group-versions sort as
    // their prefixes do: ordering the group-versions by prefix and each one's paths among
    // themselves orders them all, and only one group-version's path items are built at a
    // time.
    let gvs = group_versions(parts.iter().map(|p| &**p));
    let mut by_prefix: Vec<(String, &str, &[&DefinitionPart])> = gvs
        .iter()
        .map(|((g, v), parts)| {
            let prefix = if g.is_empty() { format!("/api/{v}/") } else { format!("/apis/{g}/{v}/") };
            (prefix, *v, parts.as_slice())
        })
        .collect();
    by_prefix.sort_by(|a, b| a.0.cmp(&b.0));
    let mut first = true;
    for (_, version, parts) in by_prefix {
        for (path, item) in path_items(parts, version, Flavor::V2) {
            write_key(out, &mut first, &path)?;
            write_value(out, &item)?;
        }
    }
    out.write_all(b"},\"definitions\":")?;
    let uses_scale = parts.iter().any(|p| p.uses_scale);
    let parts: Vec<&DefinitionPart> = parts.iter().map(|p| &**p).collect();
    write_definitions(out, definitions(&parts, None, uses_scale, Flavor::V2), Flavor::V2)?;
    out.write_all(b",\"parameters\":{")?;
    let mut first = true;
    for (k, v) in shared_v2_parameters() {
        write_key(out, &mut first, k)?;
        out.write_all(v.as_bytes())?;
    }
    out.write_all(b"}}")
}

/// `/openapi/v3/apis/<group>/<version>` from `parts`, the definitions serving it.
pub(super) fn write_v3(out: &mut Vec<u8>, version: &str, parts: &[&DefinitionPart]) -> io::Result<()> {
    out.write_all(b"{\"openapi\":\"3.0.0\",\"info\":")?;
    write_value(out, &json!({"title": TITLE, "version": TITLE_VERSION}))?;
    out.write_all(b",\"paths\":{")?;
    let mut first = true;
    for (path, item) in path_items(parts, version, Flavor::V3) {
        write_key(out, &mut first, &path)?;
        write_value(out, &item)?;
    }
    out.write_all(b"},\"components\":{\"schemas\":")?;
    let uses_scale = parts
        .iter()
        .any(|p| p.kept.def.spec.versions.iter().any(|v| v.served && v.name == version && version_uses_scale(v)));
    write_definitions(out, definitions(parts, Some(version), uses_scale, Flavor::V3), Flavor::V3)?;
    out.write_all(b"}}")
}

/// Writes `"key":` (after a comma unless `first`).
fn write_key(out: &mut impl Write, first: &mut bool, key: &str) -> io::Result<()> {
    if !std::mem::take(first) {
        out.write_all(b",")?;
    }
    serde_json::to_writer(&mut *out, key)?;
    out.write_all(b":")
}

fn write_value(out: &mut impl Write, v: &Value) -> io::Result<()> {
    serde_json::to_writer(out, v).map_err(io::Error::from)
}

fn version_uses_scale(v: &CustomResourceDefinitionVersion) -> bool {
    v.subresources.as_ref().is_some_and(|s| s.scale.is_some())
}

/// The path items of `version` of `parts` (all of one group), by path.
fn path_items(parts: &[&DefinitionPart], version: &str, flavor: Flavor) -> BTreeMap<String, Value> {
    let mut items = BTreeMap::new();
    for part in parts {
        let names = Names::of(&part.kept.def);
        for v in part.versions(Some(version)) {
            let has_status = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
            let routes = routes(&names, &v.name, has_status, version_uses_scale(v));
            items.extend(render_paths(&names, &v.name, &routes, flavor));
        }
    }
    items
}

/// One entry of a document's definitions (v2) or schemas (v3), not yet built.
enum Definition<'a> {
    /// A meta definition, serialized.
    Meta(&'a str),
    /// The kind of a served version.
    Kind(&'a DefinitionPart, &'a CustomResourceDefinitionVersion),
    /// The list kind of a served version.
    List(&'a DefinitionPart, &'a CustomResourceDefinitionVersion),
}

/// The definitions of a document, by name: the meta ones (without autoscaling unless a version
/// uses `/scale`), then the kind and list of every served version of `parts` (of `version`
/// only, if given); a later entry replaces an earlier one of the same name.
fn definitions<'a>(
    parts: &[&'a DefinitionPart],
    version: Option<&'a str>,
    uses_scale: bool,
    flavor: Flavor,
) -> BTreeMap<Cow<'a, str>, Definition<'a>> {
    let mut out = BTreeMap::new();
    for (name, text) in meta_definitions(flavor) {
        if uses_scale || !name.starts_with("io.k8s.api.autoscaling.") {
            out.insert(Cow::Borrowed(name.as_str()), Definition::Meta(text));
        }
    }
    for &part in parts {
        let names = Names::of(&part.kept.def);
        for v in part.versions(version) {
            out.insert(Cow::Owned(definition_name(names.group, &v.name, names.kind)), Definition::Kind(part, v));
            out.insert(Cow::Owned(definition_name(names.group, &v.name, &names.list_kind)), Definition::List(part, v));
        }
    }
    out
}

/// Writes the definitions as an object, building each entry as it is written.
fn write_definitions(
    out: &mut impl Write,
    definitions: BTreeMap<Cow<'_, str>, Definition<'_>>,
    flavor: Flavor,
) -> io::Result<()> {
    out.write_all(b"{")?;
    let mut first = true;
    for (name, definition) in definitions {
        write_key(out, &mut first, &name)?;
        match definition {
            Definition::Meta(text) => out.write_all(text.as_bytes())?,
            Definition::Kind(part, v) => {
                let names = Names::of(&part.kept.def);
                write_value(out, &kind_definition(&names, &with_schema(v, &part.kept.schemas), flavor))?;
            }
            Definition::List(part, v) => {
                let names = Names::of(&part.kept.def);
                let kind_name = definition_name(names.group, &v.name, names.kind);
                write_value(out, &list_schema(&names, &v.name, &kind_name, flavor))?;
            }
        }
    }
    out.write_all(b"}")
}

/// The kind's published schema of version `v` (with its schema), in one flavor.
fn kind_definition(names: &Names<'_>, v: &CustomResourceDefinitionVersion, flavor: Flavor) -> Value {
    let schema = published_schema(v);
    let selectable: Vec<Value> = v
        .selectable_fields
        .iter()
        .flatten()
        .map(|f| json!({"fieldPath": f.json_path.strip_prefix('.').unwrap_or(&f.json_path)}))
        .collect();
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
    kind_schema
}
