//! What changed between two versions of a definition, and what it does to the API's users
//! (`versa diff`): every change found, classified by what can break.
//!
//! - [`Class::Breaking`]: a request, a client or a stored object that worked before may fail
//!   after (a version no longer served, a field removed, a bound tightened, a rule added);
//! - [`Class::Compatible`]: the API accepts or shows more, and nothing that worked fails (a new
//!   optional field, an enum value added, a bound loosened, a new version);
//! - [`Class::Informational`]: nothing a request sees changes in what is accepted (printer
//!   columns, the storage version, descriptions, deprecation).
//!
//! The rules follow what kube-apiserver does with the definition: a tightened value bound or a
//! new rule is not enforced on values an update leaves unchanged (validation ratcheting), so
//! objects stored before stay updatable — each such finding says so; a removed field is pruned
//! from stored objects on their next write; a version removed from the spec while still in
//! `status.storedVersions` is refused by kube's definition validation. The definition-level rules
//! are here, the schema walk in [`schema`]. Learnt from kubernetes-sigs/crdify's checks (the
//! same families: scope, stored versions, removed fields, enum, bounds, required, type, default,
//! nullable, pattern), extended to versions, subresources, names, list and map types, CEL rules,
//! pruning and printer columns. Pure: two definitions in, findings out.

mod schema;

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionVersion, CustomResourceSubresources,
};
use serde::Serialize;

use crate::ResourceDefinition;

/// How much a change can hurt, least first (so that the worst of several is their maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Informational,
    Compatible,
    Breaking,
}

impl Class {
    /// The class's name as `versa diff` prints and takes it (`--fail-on`).
    pub fn name(self) -> &'static str {
        match self {
            Class::Informational => "informational",
            Class::Compatible => "compatible",
            Class::Breaking => "breaking",
        }
    }

    /// A class by its [`Class::name`].
    pub fn parse(name: &str) -> Option<Class> {
        [Class::Informational, Class::Compatible, Class::Breaking].into_iter().find(|c| c.name() == name)
    }
}

/// One change between the two definitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub class: Class,
    /// A stable identifier of the rule that found it (`maximum-lowered`, `version-removed`, …).
    pub rule: String,
    /// The version whose schema changed; `None` for changes of the definition itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Where: a path in the objects (`.spec.replicas`, `[*]` for any item, `.*` for any map
    /// value) for schema changes, the definition's field otherwise (`spec.scope`).
    pub path: String,
    /// What changed and what it does, in a sentence.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{} {v} {}: {}", self.class.name(), self.path, self.message),
            None => write!(f, "{} {}: {}", self.class.name(), self.path, self.message),
        }
    }
}

/// Collects findings.
#[derive(Debug, Default)]
pub(crate) struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, class: Class, rule: impl Into<String>, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Finding { class, rule: rule.into(), version: None, path: path.into(), message: message.into() });
    }
}

/// Every change from `old` to `new` (two versions of the same definition), definition-level
/// findings first, then each version's schema in the new definition's version order.
pub fn diff(old: &ResourceDefinition, new: &ResourceDefinition) -> Vec<Finding> {
    let mut out = Findings::default();
    identity(old, new, &mut out);
    versions(old, new, &mut out);
    for new_version in &new.spec.versions {
        let Some(old_version) = old.spec.versions.iter().find(|v| v.name == new_version.name) else { continue };
        version(old_version, new_version, &mut out);
    }
    out.0
}

/// The worst class among `findings`, if any.
pub fn worst(findings: &[Finding]) -> Option<Class> {
    findings.iter().map(|f| f.class).max()
}

/// Name, group, scope and names.
fn identity(old: &ResourceDefinition, new: &ResourceDefinition, out: &mut Findings) {
    let (o, n) = (&old.spec, &new.spec);
    if o.group != n.group {
        out.add(
            Class::Breaking,
            "group-changed",
            "spec.group",
            format!("the group changed from {:?} to {:?}: every client's URLs and apiVersion change", o.group, n.group),
        );
    }
    if o.scope != n.scope {
        out.add(
            Class::Breaking,
            "scope-changed",
            "spec.scope",
            format!(
                "the scope changed from {} to {}: every URL changes, and stored objects are no longer found where clients look",
                o.scope, n.scope
            ),
        );
    }
    let (on, nn) = (&o.names, &n.names);
    for (field, a, b) in [("kind", &on.kind, &nn.kind), ("plural", &on.plural, &nn.plural)] {
        if a != b {
            out.add(
                Class::Breaking,
                "name-changed",
                format!("spec.names.{field}"),
                format!("{field} changed from {a:?} to {b:?}: clients that name it the old way fail"),
            );
        }
    }
    let singular = |s: &Option<String>| s.clone().unwrap_or_default();
    if singular(&on.singular) != singular(&nn.singular) {
        out.add(
            Class::Breaking,
            "name-changed",
            "spec.names.singular",
            format!(
                "singular changed from {:?} to {:?}: `kubectl get {}` no longer works",
                singular(&on.singular),
                singular(&nn.singular),
                singular(&on.singular)
            ),
        );
    }
    if on.list_kind != nn.list_kind && on.list_kind.is_some() && nn.list_kind.is_some() {
        out.add(
            Class::Breaking,
            "name-changed",
            "spec.names.listKind",
            format!("listKind changed from {:?} to {:?}", singular(&on.list_kind), singular(&nn.list_kind)),
        );
    }
    for (field, a, b) in
        [("shortNames", &on.short_names, &nn.short_names), ("categories", &on.categories, &nn.categories)]
    {
        let (a, b): (BTreeSet<&String>, BTreeSet<&String>) =
            (a.iter().flatten().collect(), b.iter().flatten().collect());
        for gone in a.difference(&b) {
            out.add(
                Class::Breaking,
                "name-removed",
                format!("spec.names.{field}"),
                format!("{gone:?} removed: `kubectl get {gone}` no longer finds these objects"),
            );
        }
        for added in b.difference(&a) {
            out.add(Class::Compatible, "name-added", format!("spec.names.{field}"), format!("{added:?} added"));
        }
    }
    let strategy =
        |d: &ResourceDefinition| d.spec.conversion.as_ref().map_or("None".to_owned(), |c| c.strategy.clone());
    if strategy(old) != strategy(new) {
        out.add(
            Class::Informational,
            "conversion-changed",
            "spec.conversion.strategy",
            format!(
                "conversion changed from {} to {}: check that every served version still reads every stored one",
                strategy(old),
                strategy(new)
            ),
        );
    }
}

/// Versions added, removed, served or not, storage, deprecation.
fn versions(old: &ResourceDefinition, new: &ResourceDefinition, out: &mut Findings) {
    let stored = old.stored_versions();
    for o in &old.spec.versions {
        let path = format!("spec.versions[{}]", o.name);
        match new.spec.versions.iter().find(|v| v.name == o.name) {
            None if stored.contains(&o.name) => out.add(
                Class::Breaking,
                "stored-version-removed",
                path,
                format!(
                    "version {} removed while objects may be stored at it (status.storedVersions): kube refuses the update until it is migrated and removed from storedVersions; clients of {} fail",
                    o.name, o.name
                ),
            ),
            None if o.served => out.add(
                Class::Breaking,
                "version-removed",
                path,
                format!("version {} removed: its clients fail", o.name),
            ),
            None => out.add(Class::Informational, "version-removed", path, format!("unserved version {} removed", o.name)),
            Some(n) if o.served && !n.served => out.add(
                Class::Breaking,
                "version-unserved",
                path,
                format!("version {} no longer served: its clients fail", o.name),
            ),
            Some(n) if !o.served && n.served => {
                out.add(Class::Compatible, "version-served", path, format!("version {} served again", o.name));
            }
            Some(_) => {}
        }
    }
    for n in &new.spec.versions {
        if !old.spec.versions.iter().any(|v| v.name == n.name) {
            let served = if n.served { "served" } else { "not served" };
            out.add(
                Class::Compatible,
                "version-added",
                format!("spec.versions[{}]", n.name),
                format!("version {} added ({served})", n.name),
            );
        }
    }
    if let (Some(a), Some(b)) = (old.storage_version(), new.storage_version())
        && a != b
    {
        out.add(
            Class::Informational,
            "storage-version-changed",
            "spec.versions[*].storage",
            format!(
                "the storage version moved from {a} to {b}: new writes are stored at {b}; versa migrates stored objects"
            ),
        );
    }
}

/// One version present in both: deprecation, subresources, columns, selectable fields, schema.
fn version(o: &CustomResourceDefinitionVersion, n: &CustomResourceDefinitionVersion, out: &mut Findings) {
    let path = format!("spec.versions[{}]", n.name);
    if !o.deprecated.unwrap_or(false) && n.deprecated.unwrap_or(false) {
        out.add(
            Class::Informational,
            "version-deprecated",
            format!("{path}.deprecated"),
            format!("version {} deprecated: its clients get a warning on every request", n.name),
        );
    }
    subresources(o.subresources.as_ref(), n.subresources.as_ref(), &path, out);
    let columns = |v: &CustomResourceDefinitionVersion| {
        v.additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.clone(), c.json_path.clone(), c.type_.clone()))
            .collect::<Vec<_>>()
    };
    if columns(o) != columns(n) {
        out.add(
            Class::Informational,
            "printer-columns-changed",
            format!("{path}.additionalPrinterColumns"),
            "printer columns changed: `kubectl get` shows other columns",
        );
    }
    let selectable = |v: &CustomResourceDefinitionVersion| -> BTreeSet<String> {
        v.selectable_fields.iter().flatten().map(|f| f.json_path.clone()).collect()
    };
    for gone in selectable(o).difference(&selectable(n)) {
        out.add(
            Class::Breaking,
            "selectable-field-removed",
            format!("{path}.selectableFields"),
            format!("{gone} is no longer a selectable field: field selectors on it fail"),
        );
    }
    for added in selectable(n).difference(&selectable(o)) {
        out.add(
            Class::Compatible,
            "selectable-field-added",
            format!("{path}.selectableFields"),
            format!("{added} added as a selectable field"),
        );
    }
    let schema_of = |v: &CustomResourceDefinitionVersion| v.schema.as_ref().and_then(|s| s.open_api_v3_schema.clone());
    let mut found = Findings::default();
    schema::compare(schema_of(o).as_ref(), schema_of(n).as_ref(), &mut found);
    // By path, the count of changed descriptions last.
    found
        .0
        .sort_by(|a, b| (a.rule == "descriptions-changed", &a.path).cmp(&(b.rule == "descriptions-changed", &b.path)));
    out.0.extend(found.0.into_iter().map(|f| Finding { version: Some(n.name.clone()), ..f }));
}

fn subresources(
    o: Option<&CustomResourceSubresources>,
    n: Option<&CustomResourceSubresources>,
    path: &str,
    out: &mut Findings,
) {
    let status = |s: Option<&CustomResourceSubresources>| s.is_some_and(|s| s.status.is_some());
    match (status(o), status(n)) {
        (false, true) => out.add(
            Class::Breaking,
            "status-subresource-added",
            format!("{path}.subresources.status"),
            "the status subresource is added: writes to the main endpoint no longer change status (clients must write /status)",
        ),
        (true, false) => out.add(
            Class::Breaking,
            "status-subresource-removed",
            format!("{path}.subresources.status"),
            "the status subresource is removed: writes to /status fail",
        ),
        _ => {}
    }
    match (o.and_then(|s| s.scale.as_ref()), n.and_then(|s| s.scale.as_ref())) {
        (None, Some(_)) => out.add(
            Class::Compatible,
            "scale-subresource-added",
            format!("{path}.subresources.scale"),
            "the scale subresource is added (`kubectl scale`, autoscalers)",
        ),
        (Some(_), None) => out.add(
            Class::Breaking,
            "scale-subresource-removed",
            format!("{path}.subresources.scale"),
            "the scale subresource is removed: `kubectl scale` and autoscalers fail",
        ),
        (Some(a), Some(b)) if a != b => out.add(
            Class::Breaking,
            "scale-subresource-changed",
            format!("{path}.subresources.scale"),
            "the scale subresource's paths changed: autoscalers read and write other fields",
        ),
        _ => {}
    }
}
