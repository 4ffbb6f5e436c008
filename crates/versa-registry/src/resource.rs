//! A served resource, compiled: everything a request needs about it.
//!
//! A [`Resource`] is built from a definition — names, scope, per version its subresources,
//! the schema as compact JSON text — and never changed; when the definition
//! changes, the definitions controller builds a new one and swaps it into the
//! [`crate::Registry`] in one step.
//!
//! What is large is compiled on first use: each version's lowered structural schema with its
//! CEL rules ([`Version::schema`], [`Version::rules`]) and the converter
//! ([`Resource::converter`]), held in the resource's [`Cell`] while it is used and dropped when
//! it is not ([`crate::compiled`]: unused for ten minutes, or the least recently used when the
//! process holds more than its budget), and each version's Table convertor
//! ([`Version::table`], small, kept). Real definitions are mostly descriptions, compiled they
//! take ~6× their JSON, and a cluster installs many more than it uses (a Crossplane provider
//! brings hundreds); kube-apiserver, too, builds a definition's serving state on its first
//! request (`getOrCreateServingInfoFor`). Nothing a request could trip over is left to that
//! moment: the definitions controller validates every definition (lowering, structural checks,
//! CEL compilation and cost, conversion rules) before it is served, so first use — and a use
//! after the state was dropped — only repeats work that already succeeded; concurrent first
//! uses wait for one compilation.
//!
//! The definitions API itself (`versa.dev/v1` `resourcedefinitions`) is a [`Resource`] too,
//! built by [`Resource::definitions`], so that one REST implementation serves both. In
//! standalone mode the same objects have a second face, `apiextensions.k8s.io/v1`
//! `customresourcedefinitions` ([`Face::CustomResourceDefinition`]): one stored object, two
//! kinds, so that any CRD manifest installs unchanged. Behind kube-apiserver that group is
//! kube's, and versa does not serve it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionNames, CustomResourceDefinitionSpec, CustomResourceDefinitionVersion,
    CustomResourceSubresourceScale, CustomResourceValidation,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use versa_apiextensions::types::{API_VERSION, GROUP, KIND, VERSION};
use versa_apiextensions::{ResourceDefinition, compare_kube_aware_versions};
use versa_cel::SchemaRules;
use versa_conversion::{Converter, Options as ConversionOptions};
use versa_schema::Structural;

use crate::compiled::Cell;
use crate::schema_texts::SchemaTexts;
use crate::table::TableConvertor;

/// What the REST layer does differently for a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// A custom resource: schema pipeline, subresources as its definition says.
    Custom,
    /// `versa.dev/v1` `resourcedefinitions`: definition validation and the deletion finalizer.
    Definitions,
}

/// Which kind the definitions API answers with. Both faces are the same stored objects (kept
/// as `versa.dev/v1` `ResourceDefinition`); only `apiVersion`, `kind` and the names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// `versa.dev/v1` `resourcedefinitions` (short name `rd`).
    ResourceDefinition,
    /// `apiextensions.k8s.io/v1` `customresourcedefinitions` (short names `crd`, `crds`), as
    /// kube-apiserver serves it; standalone mode only.
    CustomResourceDefinition,
}

/// The group of the CustomResourceDefinition face.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";

impl Face {
    /// `(group, version, plural, singular, kind, short names, categories)`.
    pub(crate) fn names(
        self,
    ) -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    ) {
        match self {
            Face::ResourceDefinition => {
                (GROUP, VERSION, "resourcedefinitions", "resourcedefinition", KIND, &["rd"], &[])
            }
            Face::CustomResourceDefinition => (
                CRD_GROUP,
                "v1",
                "customresourcedefinitions",
                "customresourcedefinition",
                "CustomResourceDefinition",
                &["crd", "crds"],
                &["api-extensions"],
            ),
        }
    }
}

/// A core kind standalone versa serves itself (Namespaces, Secrets, ConfigMaps, Leases, …),
/// because operators need them before anything else: served through the same REST
/// implementation as custom resources, from a built-in definition, with the kind's own rules.
/// Each kind is one file under `crate::kinds` holding its definition and its rules, and one
/// line of the registration table (`crate::kinds::CORE`); a `Builtin` is the kind's identity —
/// its name in the registry and where its definition comes from.
#[derive(Clone, Copy)]
pub struct Builtin {
    name: &'static str,
    definition: fn() -> Value,
    stored_as: Option<(&'static str, &'static str)>,
}

impl Builtin {
    /// A core kind served under `name` (its built-in definition's name), built from the
    /// definition document `definition` makes.
    pub const fn new(name: &'static str, definition: fn() -> Value) -> Builtin {
        Builtin { name, definition, stored_as: None }
    }

    /// The same kind, its objects stored under another resource's `(group, plural)` (the
    /// `events.k8s.io` Events are the core ones under other field names).
    pub const fn stored_as(self, group: &'static str, plural: &'static str) -> Builtin {
        Builtin { stored_as: Some((group, plural)), ..self }
    }

    /// The name the kind is served under in the registry (its built-in definition's name): a
    /// lookup by name, not a scan of every served resource, on each create (namespace checks).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The definition the resource is built from: names, scope, printer columns, and a schema
    /// that keeps what the kind holds.
    pub(crate) fn definition(self) -> ResourceDefinition {
        ResourceDefinition::from_document(&(self.definition)()).unwrap_or_default()
    }
}

impl PartialEq for Builtin {
    fn eq(&self, other: &Builtin) -> bool {
        self.name == other.name
    }
}

impl Eq for Builtin {}

impl std::fmt::Debug for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Builtin({})", self.name)
    }
}

/// The `admissionregistration.k8s.io/v1` kinds standalone versa serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdmissionKind {
    ValidatingWebhookConfiguration,
    MutatingWebhookConfiguration,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    MutatingAdmissionPolicy,
    MutatingAdmissionPolicyBinding,
}

/// The group of the admission configuration kinds.
pub const ADMISSION_GROUP: &str = "admissionregistration.k8s.io";

impl AdmissionKind {
    pub const ALL: [AdmissionKind; 6] = [
        AdmissionKind::ValidatingWebhookConfiguration,
        AdmissionKind::MutatingWebhookConfiguration,
        AdmissionKind::ValidatingAdmissionPolicy,
        AdmissionKind::ValidatingAdmissionPolicyBinding,
        AdmissionKind::MutatingAdmissionPolicy,
        AdmissionKind::MutatingAdmissionPolicyBinding,
    ];

    /// `(kind, plural, definition name)`.
    pub const fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            AdmissionKind::ValidatingWebhookConfiguration => (
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
                "validatingwebhookconfigurations.admissionregistration.k8s.io",
            ),
            AdmissionKind::MutatingWebhookConfiguration => (
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
                "mutatingwebhookconfigurations.admissionregistration.k8s.io",
            ),
            AdmissionKind::ValidatingAdmissionPolicy => (
                "ValidatingAdmissionPolicy",
                "validatingadmissionpolicies",
                "validatingadmissionpolicies.admissionregistration.k8s.io",
            ),
            AdmissionKind::ValidatingAdmissionPolicyBinding => (
                "ValidatingAdmissionPolicyBinding",
                "validatingadmissionpolicybindings",
                "validatingadmissionpolicybindings.admissionregistration.k8s.io",
            ),
            AdmissionKind::MutatingAdmissionPolicy => (
                "MutatingAdmissionPolicy",
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicies.admissionregistration.k8s.io",
            ),
            AdmissionKind::MutatingAdmissionPolicyBinding => (
                "MutatingAdmissionPolicyBinding",
                "mutatingadmissionpolicybindings",
                "mutatingadmissionpolicybindings.admissionregistration.k8s.io",
            ),
        }
    }

    /// Policies report their type checking in `status` (a status subresource).
    pub fn has_status(self) -> bool {
        matches!(self, AdmissionKind::ValidatingAdmissionPolicy | AdmissionKind::MutatingAdmissionPolicy)
    }
}

/// One served resource, compiled.
#[derive(Debug)]
pub struct Resource {
    /// Unique per build: what a cache keyed on the compiled state uses (a rebuilt resource
    /// gets a new id, so nothing rendered with the old schemas is served again).
    pub id: u64,
    pub flavor: Flavor,
    /// The definition this was built from (for custom resources), with its status — compacted
    /// (see [`Compact`]): its schemas are in `schemas`.
    pub definition: Arc<ResourceDefinition>,
    /// Each version's schema, as compact JSON.
    pub schemas: Arc<SchemaTexts>,
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// The version objects are written at.
    pub storage_version: String,
    /// Every version of the definition (served or not; reads of objects stored at an unserved
    /// version still need its schema).
    pub versions: Vec<Version>,
    /// The definition is being deleted: creates are refused.
    pub terminating: bool,
    /// What is compiled on first use ([`Held`]), shared with the versions.
    compiled: Arc<Cell<Held>>,
    /// What the converter is built with.
    conversion: ConversionOptions,
    /// A core kind versa serves itself (standalone), with its own rules.
    pub builtin: Option<Builtin>,
}

/// One version of a resource. Its schema is compiled on first use ([`Version::schema`]).
#[derive(Debug)]
pub struct Version {
    pub name: String,
    pub served: bool,
    /// The resource's schema texts, this version's among them: what it is compiled from.
    texts: Arc<SchemaTexts>,
    /// The resource's compiled state, which holds this version's at `index` (of `of`).
    compiled: Arc<Cell<Held>>,
    index: usize,
    of: usize,
    /// The definition (compact), whose `additionalPrinterColumns` of this version `table` is
    /// built from.
    definition: Arc<ResourceDefinition>,
    /// Renders Tables: built on first use ([`Version::table`]), since most definitions of a
    /// cluster are never listed as a Table and the parsed columns are kept once built.
    table: OnceLock<TableConvertor>,
    pub status: bool,
    pub scale: Option<CustomResourceSubresourceScale>,
    /// Field paths usable in field selectors besides `metadata.name` / `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// The `Warning` header for a deprecated version.
    pub warning: Option<String>,
}

/// What a resource compiles on first use, each part on its own: every version's schema and
/// the converter. Held by the resource's [`Cell`] while used, dropped whole when not (the
/// converter prunes with the versions' schemas, so they go together).
#[derive(Debug)]
pub(crate) struct Held {
    versions: Box<[OnceLock<Arc<Compiled>>]>,
    /// Converts objects between the versions, or why it could not be built (every conversion
    /// then fails with that message).
    converter: OnceLock<Result<Arc<Converter>, String>>,
}

impl Held {
    fn new(versions: usize) -> Held {
        Held { versions: (0..versions).map(|_| OnceLock::new()).collect(), converter: OnceLock::new() }
    }
}

/// A version's schema, compiled: lowered, with its CEL rules.
#[derive(Debug, Default)]
struct Compiled {
    schema: Option<Arc<Structural>>,
    rules: SchemaRules,
}

/// A version's compiled `x-kubernetes-validations` ([`Version::rules`]), held for as long as a
/// request needs them.
#[derive(Debug, Clone)]
pub struct Rules(Arc<Compiled>);

impl std::ops::Deref for Rules {
    type Target = SchemaRules;

    fn deref(&self) -> &SchemaRules {
        &self.0.rules
    }
}

impl Compiled {
    /// Compiles a version's schema text (`CustomResourceValidation` as JSON). A schema that does
    /// not lower leaves the version without one, as if it had none (definition validation
    /// refuses such schemas before they are served).
    fn of(text: Option<&str>) -> Compiled {
        let schema = text
            .and_then(|t| serde_json::from_str::<CustomResourceValidation>(t).ok())
            .and_then(|v| v.open_api_v3_schema)
            .and_then(|s| Structural::lower_for_serving(s).ok())
            .map(Arc::new);
        let rules = schema.as_deref().map(SchemaRules::compile).unwrap_or_default();
        Compiled { schema, rules }
    }
}

impl Version {
    /// Version `index` of the `of` versions of the resource whose compiled state `compiled` holds.
    fn new(name: &str, served: bool, kept: &Compact, compiled: &Arc<Cell<Held>>, index: usize, of: usize) -> Version {
        Version {
            name: name.to_owned(),
            served,
            texts: Arc::clone(&kept.schemas),
            compiled: Arc::clone(compiled),
            index,
            of,
            definition: Arc::clone(&kept.def),
            table: OnceLock::new(),
            status: false,
            scale: None,
            selectable_fields: Vec::new(),
            warning: None,
        }
    }

    /// The lowered schema (`None` for the definitions resource, which is validated by
    /// `versa-apiextensions`); shared with the converter, which prunes with it. Compiled on
    /// the first call (and again after it was dropped unused, [`crate::compiled`]).
    pub fn schema(&self) -> Option<Arc<Structural>> {
        self.compiled().schema.clone()
    }

    /// The schema's `x-kubernetes-validations`, compiled with the schema (empty without one).
    pub fn rules(&self) -> Rules {
        Rules(self.compiled())
    }

    fn compiled(&self) -> Arc<Compiled> {
        let held = self.compiled.get(|| Held::new(self.of));
        self.compiled_in(&held)
    }

    /// This version's part of `held`, compiled now if it is not yet, and charged to the cell.
    fn compiled_in(&self, held: &Arc<Held>) -> Arc<Compiled> {
        let Some(slot) = held.versions.get(self.index) else {
            return Arc::default();
        };
        let compiled = slot.get_or_init(|| {
            let text = self.texts.get(&self.name);
            let compiled = Arc::new(Compiled::of(text.as_deref()));
            self.compiled.charge(held, text.map_or(0, |t| t.len()));
            compiled
        });
        Arc::clone(compiled)
    }

    /// The Table convertor of this version's `additionalPrinterColumns` (the default columns
    /// without any), built on the first call. A column whose path does not parse is dropped
    /// with the ones after it, as kube serves it (definition validation refuses such paths
    /// anyway).
    pub fn table(&self) -> &TableConvertor {
        self.table.get_or_init(|| {
            let version = self.definition.spec.versions.iter().find(|v| v.name == self.name);
            let columns = version.and_then(|v| v.additional_printer_columns.as_deref()).unwrap_or_default();
            TableConvertor::lenient(columns).0
        })
    }

    /// The schema structured merge reads (server-side apply, `managedFields`): the version's
    /// own, or — for the definitions API, which `versa-apiextensions` validates instead — the
    /// definitions' typed schema ([`definitions_merge_schema`]).
    pub fn merge_schema(&self) -> Arc<Structural> {
        self.schema().unwrap_or_else(definitions_merge_schema)
    }
}

/// The schema structured merge reads for definitions, as kube-apiserver merges
/// CustomResourceDefinitions: typed by their published schema ([`definition_schema`]), not
/// deduced, so `spec`, `names` and the other declared objects are struct fields (no `.` of
/// their own in `managedFields`), lists are atomic (`versions`, `shortNames`,
/// `storedVersions`: kube's `+listType=atomic`) but `status.conditions`, a map keyed by `type`,
/// and `metadata` is `ObjectMeta`. A version's `openAPIV3Schema` is never walked: it lies in
/// the atomic `versions`, which is why kube's recursive `JSONSchemaProps` needs no type here.
/// Lowered once per process.
pub fn definitions_merge_schema() -> Arc<Structural> {
    static TYPED: std::sync::LazyLock<Arc<Structural>> = std::sync::LazyLock::new(|| {
        let schema = serde_json::json!({"type": "object", "properties": definition_schema()});
        Arc::new(Structural::from_json(&schema).unwrap_or_default())
    });
    Arc::clone(&TYPED)
}

impl Resource {
    /// Builds the resource of a definition: `def` (its schemas are not read) and `kept`, its
    /// compact form, which the resource holds (shared with whoever made it) and compiles the
    /// schemas from on first use. Names come from `status.acceptedNames`
    /// (what the naming controller granted), falling back to the spec's.
    pub fn build(def: &ResourceDefinition, kept: Compact, conversion: &ConversionOptions) -> Resource {
        let spec = &def.spec;
        let names: &CustomResourceDefinitionNames = def
            .status
            .as_ref()
            .and_then(|s| s.accepted_names.as_ref())
            .filter(|n| !n.plural.is_empty())
            .unwrap_or(&spec.names);
        let kind = names.kind.clone();
        let compiled = Cell::new();
        let of = spec.versions.len();
        let versions = spec
            .versions
            .iter()
            .enumerate()
            .map(|(index, v)| {
                let mut version = Version::new(&v.name, v.served, &kept, &compiled, index, of);
                version.status = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
                version.scale = v.subresources.as_ref().and_then(|s| s.scale.clone());
                version.selectable_fields = v
                    .selectable_fields
                    .iter()
                    .flatten()
                    .map(|f| f.json_path.trim_start_matches('.').to_owned())
                    .collect();
                version.warning = v.deprecated.unwrap_or(false).then(|| {
                    v.deprecation_warning.clone().unwrap_or_else(|| default_deprecation_warning(def, &v.name))
                });
                version
            })
            .collect::<Vec<Version>>();
        let terminating = def.condition_is_true("Terminating") || def.metadata.deletion_timestamp.is_some();
        Resource {
            id: next_id(),
            flavor: Flavor::Custom,
            group: spec.group.clone(),
            plural: names.plural.clone(),
            singular: names.singular.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| kind.to_lowercase()),
            list_kind: names.list_kind.clone().unwrap_or_else(|| format!("{kind}List")),
            kind,
            short_names: names.short_names.clone().unwrap_or_default(),
            categories: names.categories.clone().unwrap_or_default(),
            namespaced: spec.scope == "Namespaced",
            storage_version: def.storage_version().unwrap_or_default().to_owned(),
            versions,
            terminating,
            compiled,
            conversion: conversion.clone(),
            definition: kept.def,
            schemas: kept.schemas,
            builtin: None,
        }
    }

    /// Converts objects between the versions, or why it could not be built (every conversion
    /// then fails with that message). Built on the first call, with every version's schema
    /// (the converter prunes with them), and held with them ([`Held`]).
    pub fn converter(&self) -> Result<Arc<Converter>, String> {
        if self.flavor == Flavor::Definitions {
            return Err("the definitions API has one version".to_owned());
        }
        let held = self.compiled.get(|| Held::new(self.versions.len()));
        let built = held.converter.get_or_init(|| {
            let def = self.kept().full();
            let schemas: HashMap<String, Arc<Structural>> = self
                .versions
                .iter()
                .filter_map(|v| v.compiled_in(&held).schema.clone().map(|s| (v.name.clone(), s)))
                .collect();
            Converter::new(&def, schemas, &self.conversion)
                .map(Arc::new)
                .map_err(|e| format!("conversion for {}, Kind={} is not available: {e}", self.group, self.kind))
        });
        built.clone()
    }

    /// Drops what is compiled now (every version's schema and the converter): the next use
    /// compiles them again. [`crate::compiled`] does this to resources left unused; public for
    /// tests, which check that a recompiled resource serves the same.
    pub fn forget_compiled(&self) {
        self.compiled.forget();
    }

    /// A core kind, built from its built-in definition.
    pub fn core(builtin: Builtin) -> Resource {
        let def = builtin.definition();
        let mut resource = Resource::build(&def, Compact::of(&def), &ConversionOptions::default());
        resource.builtin = Some(builtin);
        resource
    }

    /// The compact definition this resource holds.
    pub fn kept(&self) -> Compact {
        Compact { def: self.definition.clone(), schemas: self.schemas.clone() }
    }

    /// The definitions API as a resource, with one of its faces.
    pub fn definitions(face: Face) -> Resource {
        let (group, version, plural, singular, kind, short_names, categories) = face.names();
        let definition = Arc::new(definitions_definition(face));
        let compiled = Cell::new();
        Resource {
            id: next_id(),
            flavor: Flavor::Definitions,
            schemas: Arc::default(),
            group: group.to_owned(),
            plural: plural.to_owned(),
            singular: singular.to_owned(),
            kind: kind.to_owned(),
            list_kind: format!("{kind}List"),
            short_names: short_names.iter().map(|s| (*s).to_owned()).collect(),
            categories: categories.iter().map(|s| (*s).to_owned()).collect(),
            namespaced: false,
            storage_version: version.to_owned(),
            versions: vec![Version {
                status: true,
                table: OnceLock::from(TableConvertor::default_columns()),
                ..Version::new(
                    version,
                    true,
                    &Compact { def: Arc::clone(&definition), schemas: Arc::default() },
                    &compiled,
                    0,
                    1,
                )
            }],
            terminating: false,
            compiled,
            conversion: ConversionOptions::default(),
            definition,
            builtin: None,
        }
    }

    /// The group and plural the objects are stored under: the definitions API's for both of
    /// its faces, the resource's own otherwise.
    pub fn stored_as(&self) -> (&str, &str) {
        match (self.flavor, self.builtin.and_then(|b| b.stored_as)) {
            (Flavor::Definitions, _) => (GROUP, "resourcedefinitions"),
            (Flavor::Custom, Some(stored_as)) => stored_as,
            (Flavor::Custom, None) => (&self.group, &self.plural),
        }
    }

    /// A served version by name.
    pub fn served_version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.served && v.name == name)
    }

    /// Any version by name (served or not).
    pub fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// `group/version` for `version` (just `version` for the core group).
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_owned() } else { format!("{}/{version}", self.group) }
    }

    /// Whether this is the core kind `builtin`.
    pub fn is(&self, builtin: Builtin) -> bool {
        self.builtin == Some(builtin)
    }

    /// A custom resource of a definition (not the definitions API, not a core kind): the
    /// objects whose bodies the schema pipeline decodes.
    pub fn is_custom(&self) -> bool {
        self.flavor == Flavor::Custom && self.builtin.is_none()
    }

    /// The version an object is at, from its `apiVersion` (empty when it names another group).
    pub fn version_of<'a>(&self, obj: &'a Value) -> &'a str {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        match api_version.split_once('/') {
            Some((g, v)) if g == self.group => v,
            // The core group's objects say only their version (`v1`).
            None if self.group.is_empty() => api_version,
            _ => "",
        }
    }
}

/// kube's default deprecation warning: `<group>/<version> <Kind> is deprecated`, plus `; use
/// <group>/<newer> <Kind>` naming the highest-priority served, non-deprecated version that has
/// a higher priority than the deprecated one.
fn default_deprecation_warning(def: &ResourceDefinition, deprecated: &str) -> String {
    let spec = &def.spec;
    let kind = &spec.names.kind;
    let mut message = format!("{}/{deprecated} {kind} is deprecated", spec.group);
    let newer = spec
        .versions
        .iter()
        .filter(|v| v.served && !v.deprecated.unwrap_or(false))
        .filter(|v| compare_kube_aware_versions(deprecated, &v.name) == std::cmp::Ordering::Less)
        .max_by(|a, b| compare_kube_aware_versions(&a.name, &b.name));
    if let Some(v) = newer {
        message.push_str(&format!("; use {}/{} {kind}", spec.group, v.name));
    }
    message
}

fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The published schema of a definition's `spec` and `status` (`data/definition-schema.json`,
/// in our words): what `kubectl explain crd.spec.versions` shows, and what structured merge
/// types definitions by ([`definitions_merge_schema`]; its list types are kube's). Not what
/// validates them — `versa-apiextensions` does — and open (`x-kubernetes-preserve-unknown-fields`)
/// where a structural schema cannot follow the CRD's shape (the recursive `openAPIV3Schema`).
/// The names object appears twice (`spec.names`, `status.acceptedNames`) and is written once.
fn definition_schema() -> serde_json::Value {
    let mut all: serde_json::Value =
        serde_json::from_str(include_str!("../data/definition-schema.json")).unwrap_or_default();
    let names = all.get("names").cloned().unwrap_or_default();
    for path in ["/spec/properties/names", "/status/properties/acceptedNames"] {
        if let Some(slot) = all.pointer_mut(path) {
            *slot = names.clone();
        }
    }
    serde_json::json!({"spec": all["spec"], "status": all["status"]})
}

/// A ResourceDefinition describing the definitions API itself (one face of it), for discovery
/// and OpenAPI ([`definition_schema`]).
fn definitions_definition(face: Face) -> ResourceDefinition {
    let (group, version, plural, singular, kind, short_names, categories) = face.names();
    let names = serde_json::json!({"plural": plural, "singular": singular, "kind": kind,
                                   "listKind": format!("{kind}List"), "shortNames": short_names,
                                   "categories": categories});
    let doc = serde_json::json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": names,
            "versions": [{
                "name": version, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": definition_schema()}},
                "subresources": {"status": {}},
            }],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}], "storedVersions": [version],
                   "acceptedNames": names},
    });
    ResourceDefinition::from_document(&doc).unwrap_or_default()
}

/// A definition as it is kept while serving: without its schemas, which come back as JSON
/// text. A typed schema is large — every node a ~860-byte `JSONSchemaProps`, every
/// `properties` map a B-tree whose nodes hold eleven of them — so a few dozen fields cost tens
/// of KiB; the text is a few hundred bytes. What needs a schema has its lowered form
/// ([`Version::schema`]) or rebuilds the typed one from the text ([`with_schema`]). Made once
/// per definition state and shared by the controller, the registry and the OpenAPI cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Compact {
    pub def: Arc<ResourceDefinition>,
    pub schemas: Arc<SchemaTexts>,
}

impl Compact {
    /// The compact form of `def`. What serving never reads is left out of it, because in a real
    /// definition it is as large as the schemas: `managedFields` (a created definition's entry
    /// lists every field of every schema) and kubectl's `last-applied-configuration` annotation
    /// (the whole definition once more). So are the labels and the annotations other than
    /// versa's own (`versa.dev/...`: `versa migrate run` asks for a migration with one): nothing
    /// that serves reads them, and each map is a B-tree leaf of over half a KiB however few
    /// entries it has. The stored object keeps all of these. Its `resourceVersion` is
    /// left out too (the definitions controller keeps the revision beside it): the state a
    /// status write leaves is then equal to the one served before the write, and is shared with
    /// it rather than held a second time.
    pub fn of(def: &ResourceDefinition) -> Compact {
        Compact::of_like(def, [])
    }

    /// Like [`Compact::of`], sharing the schema texts of one of `earlier` (the compact forms of
    /// earlier states of the definition) when they are the same — which spares looking up each
    /// text in the process's table ([`SchemaTexts`]) and holding a second list of them.
    pub fn of_like<'a>(def: &ResourceDefinition, earlier: impl IntoIterator<Item = &'a Compact>) -> Compact {
        let mut texts = Vec::new();
        for v in &def.spec.versions {
            if let Some(schema) = &v.schema
                && let Ok(text) = serde_json::to_string(schema)
            {
                texts.push((v.name.clone(), text));
            }
        }
        texts.sort();
        texts.dedup_by(|a, b| a.0 == b.0);
        let schemas = SchemaTexts::of(&texts, earlier.into_iter().map(|c| &c.schemas));
        drop(texts);
        Compact { def: Arc::new(compacted(def)), schemas }
    }
}

/// What [`Compact::of`] keeps of `def`, copied field by field: what it leaves out (the schemas,
/// `managedFields`, the annotations and labels) is large, and copying it only to drop it cost
/// time and left the allocator's pages strewn with freed blocks between the ones kept. Every
/// field is named, so that one k8s-openapi adds is a compile error here, not a silent loss.
fn compacted(def: &ResourceDefinition) -> ResourceDefinition {
    let ResourceDefinition { metadata, spec, status, conversion_cel } = def;
    let ObjectMeta {
        annotations,
        creation_timestamp,
        deletion_grace_period_seconds,
        deletion_timestamp,
        finalizers,
        generate_name,
        generation,
        labels: _,
        managed_fields: _,
        name,
        namespace,
        owner_references,
        resource_version: _,
        self_link,
        uid,
    } = metadata;
    let annotations: Option<BTreeMap<String, String>> = annotations
        .as_ref()
        .map(|a| {
            a.iter()
                .filter(|(key, _)| key.starts_with(VERSA_ANNOTATIONS))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .filter(|a: &BTreeMap<String, String>| !a.is_empty());
    let metadata = ObjectMeta {
        annotations,
        creation_timestamp: creation_timestamp.clone(),
        deletion_grace_period_seconds: *deletion_grace_period_seconds,
        deletion_timestamp: deletion_timestamp.clone(),
        finalizers: finalizers.clone(),
        generate_name: generate_name.clone(),
        generation: *generation,
        labels: None,
        managed_fields: None,
        name: name.clone(),
        namespace: namespace.clone(),
        owner_references: owner_references.clone(),
        resource_version: None,
        self_link: self_link.clone(),
        uid: uid.clone(),
    };
    let CustomResourceDefinitionSpec { conversion, group, names, preserve_unknown_fields, scope, versions } = spec;
    let versions = versions
        .iter()
        .map(|v| {
            let CustomResourceDefinitionVersion {
                additional_printer_columns,
                deprecated,
                deprecation_warning,
                name,
                schema: _,
                selectable_fields,
                served,
                storage,
                subresources,
            } = v;
            CustomResourceDefinitionVersion {
                additional_printer_columns: additional_printer_columns.clone(),
                deprecated: *deprecated,
                deprecation_warning: deprecation_warning.clone(),
                name: name.clone(),
                schema: None,
                selectable_fields: selectable_fields.clone(),
                served: *served,
                storage: *storage,
                subresources: subresources.clone(),
            }
        })
        .collect();
    let spec = CustomResourceDefinitionSpec {
        conversion: conversion.clone(),
        group: group.clone(),
        names: names.clone(),
        preserve_unknown_fields: *preserve_unknown_fields,
        scope: scope.clone(),
        versions,
    };
    ResourceDefinition { metadata, spec, status: status.clone(), conversion_cel: conversion_cel.clone() }
}

/// The prefix of versa's own annotations, which [`Compact`] keeps.
const VERSA_ANNOTATIONS: &str = "versa.dev/";

impl Compact {
    /// The definition with its schemas put back (without what [`Compact::of`] left out).
    pub fn full(&self) -> ResourceDefinition {
        let mut def = (*self.def).clone();
        for v in &mut def.spec.versions {
            *v = with_schema(v, &self.schemas);
        }
        def
    }
}

/// Version `v` of a compacted definition with its schema put back from `texts`.
pub fn with_schema(v: &CustomResourceDefinitionVersion, texts: &SchemaTexts) -> CustomResourceDefinitionVersion {
    let mut v = v.clone();
    if v.schema.is_none() {
        v.schema = texts.get(&v.name).and_then(|t| serde_json::from_str(&t).ok());
    }
    v
}

/// `obj["metadata"][field]` as a string.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    /// A definition of two versions with the same schema, with a CEL rule.
    fn widgets() -> (Resource, Value) {
        let schema = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object",
            "description": "the spec", "properties": {"replicas": {"type": "integer", "minimum": 0}},
            "x-kubernetes-validations": [{"rule": "self.replicas < 10"}]}}});
        let def = ResourceDefinition::from_document(&serde_json::json!({
            "apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}},
                    {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema}}]},
        }))
        .unwrap();
        (Resource::build(&def, Compact::of(&def), &ConversionOptions::default()), schema)
    }

    /// A version's schema and the converter are compiled on first use, once, and what is
    /// compiled is what the definition's schema lowers to.
    #[test]
    fn schemas_and_converter_are_compiled_on_first_use() {
        let (res, schema) = widgets();
        assert!(!res.compiled.is_held());

        let v1 = res.version("v1").unwrap();
        let lowered = v1.schema().unwrap();
        let mut documented = Structural::from_json(&schema).unwrap();
        assert_eq!(documented.properties["spec"].description.as_deref(), Some("the spec"));
        documented.properties = documented
            .properties
            .iter()
            .map(|(k, p)| (k.clone(), Structural { description: None, ..p.clone() }))
            .collect();
        assert_eq!(format!("{lowered:?}"), format!("{documented:?}"), "the same, without documentation");
        assert!(!v1.rules().is_empty());
        assert!(Arc::ptr_eq(&lowered, &v1.schema().unwrap()), "compiled once");
        let held = res.compiled.peek().unwrap();
        assert!(held.versions[1].get().is_none(), "each version on its own");

        assert_eq!(res.converter().unwrap().strategy(), "None");
        assert!(held.versions.iter().all(|v| v.get().is_some()), "the converter prunes with every schema");
        assert_eq!(
            Resource::definitions(Face::ResourceDefinition).converter().unwrap_err(),
            "the definitions API has one version"
        );
    }

    /// A compiled state dropped (as `crate::compiled` drops unused ones) is compiled again on
    /// the next use, the same; what a request took before the drop stays usable.
    #[test]
    fn a_dropped_compiled_state_is_compiled_again_the_same() {
        let (res, _) = widgets();
        let v1 = res.version("v1").unwrap();
        let (schema, rules, converter) = (v1.schema().unwrap(), v1.rules(), res.converter().unwrap());
        res.forget_compiled();
        assert!(!res.compiled.is_held());

        let too_many = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"replicas": 12}});
        let before = format!("{:?}", rules.check(&too_many, None).errors);
        assert!(before.contains("self.replicas < 10"), "{before}");
        let again = v1.schema().unwrap();
        assert!(!Arc::ptr_eq(&schema, &again), "compiled again");
        assert_eq!(format!("{schema:?}"), format!("{again:?}"));
        assert_eq!(format!("{:?}", v1.rules().check(&too_many, None).errors), before);
        let rebuilt = res.converter().unwrap();
        assert!(!Arc::ptr_eq(&converter, &rebuilt));
        assert_eq!(rebuilt.strategy(), converter.strategy());
        let held = res.compiled.peek().unwrap();
        assert!(held.versions.iter().all(|v| v.get().is_some()), "rebuilt with the versions it holds");
    }

    /// Compact definitions keep each version's schema text (deflated) and give it back as it
    /// was; an equal state shares its texts; what serving never reads is left out.
    #[test]
    fn compact_definitions_keep_the_schemas_and_leave_out_the_rest() {
        let doc = serde_json::json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": "widgets.example.com",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "team": "a",
                                "versa.dev/migrate": "now"},
                "labels": {"team": "a"},
                "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:spec": {}}}]},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                        "type": "object", "description": "a widget ".repeat(100)}}},
                    {"name": "v2", "served": false, "storage": false}]},
        });
        let def = ResourceDefinition::from_document(&doc).unwrap();
        let kept = Compact::of(&def);
        assert_eq!(kept.def.metadata.managed_fields, None);
        assert_eq!(kept.def.metadata.resource_version, None);
        let mut written = def.clone();
        written.metadata.resource_version = Some("43".into());
        assert_eq!(Compact::of(&written), kept, "a new revision alone is the same state");
        let annotations: Vec<&String> = kept.def.metadata.annotations.iter().flatten().map(|(k, _)| k).collect();
        assert_eq!(annotations, ["versa.dev/migrate"]);
        assert_eq!(kept.def.metadata.labels, None);
        assert!(kept.def.spec.versions.iter().all(|v| v.schema.is_none()));
        let text = kept.schemas.get("v1").unwrap();
        assert_eq!(text, serde_json::to_string(&def.spec.versions[0].schema).unwrap());
        assert!(kept.schemas.deflated_len("v1").unwrap() * 5 < text.len(), "deflated");
        assert_eq!(kept.schemas.get("v2"), None);
        assert_eq!(kept.full().spec, def.spec);

        let again = Compact::of_like(&def, [&kept]);
        assert!(Arc::ptr_eq(&again.schemas, &kept.schemas));
        let mut changed = def.clone();
        changed.spec.versions[1].schema = changed.spec.versions[0].schema.clone();
        let other = Compact::of_like(&changed, [&kept]);
        assert!(other.schemas != kept.schemas);
        assert_eq!(other.schemas.get("v2").unwrap(), text);
    }

    /// The published schema of definitions is a structural schema (kubectl explain and the
    /// OpenAPI documents read it) and says what a version holds.
    #[test]
    fn the_definition_schema_is_structural_and_complete() {
        for face in [Face::ResourceDefinition, Face::CustomResourceDefinition] {
            let def = definitions_definition(face);
            let schema = def.spec.versions[0].schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()).unwrap();
            let lowered = Structural::lower(schema).unwrap();
            let errs = versa_schema::structural_check::validate_structural(&lowered, &versa_schema::Path::none());
            assert!(errs.is_empty(), "{face:?}: {errs:?}");
            let version = &lowered.properties["spec"].properties["versions"].items.as_ref().unwrap().properties;
            for field in ["name", "served", "storage", "schema", "subresources", "additionalPrinterColumns"] {
                assert!(version.contains_key(field), "{face:?}: spec.versions[].{field}");
            }
            let accepted = &lowered.properties["status"].properties["acceptedNames"].properties;
            assert!(accepted.contains_key("plural") && accepted.contains_key("kind"), "{face:?}");
        }
    }
}
