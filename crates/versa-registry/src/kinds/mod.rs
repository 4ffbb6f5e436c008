//! Each kind's own write rules, chosen once per resource by [`of`] — the one table that maps a
//! resource to its kind — and asked by `crate::strategy::Strategy`, which runs the steps
//! every kind shares (identity, timestamps, `status` behind the status subresource,
//! `generation`, the deletion mark) and leaves what differs to the kind's [`KindRules`]:
//!
//! - [`custom`]: custom resources — the schema pipeline and the `x-kubernetes-validations`
//!   rules (the default of every hook);
//! - [`definitions`]: the definitions API (`resourcedefinitions`, and standalone's
//!   `customresourcedefinitions` face) — definition validation instead of a schema;
//! - standalone's core kinds, one file each: [`namespace`], [`secret`], [`configmap`],
//!   [`event`] (both faces), [`lease`], and [`admission`] (the `admissionregistration.k8s.io/v1`
//!   configuration kinds, decoded, defaulted and validated as kube-apiserver does).
//!
//! Adding a core kind is one file here and one line of [`CORE`], the registration table: the
//! file holds the kind's [`Builtin`] (its registry name and its built-in definition — names,
//! scope, printer columns, schema), its [`KindRules`] (validation, server-owned fields,
//! strategic merge patch metadata, protobuf, …) and the [`CoreKind`] that pairs them. Whatever
//! serves the core kinds reads the table: the standalone registry (`crate::served`), [`of`],
//! and, through the resources built from it, discovery, OpenAPI and the REST handlers.

pub mod admission;
pub mod configmap;
pub mod custom;
pub mod definitions;
pub mod event;
pub mod keys;
pub mod lease;
pub mod namespace;
pub mod patch;
pub mod rbac;
pub mod secret;
pub mod serviceaccount;

use serde_json::Value;
use versa_schema::ErrorList;

use serde_json::json;

use crate::error::Result;
use crate::meta::{self, meta_mut};
use crate::resource::{Builtin, Flavor, Resource, Version};

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main endpoint (everything but `status` when the status subresource is on).
    Main,
    /// `/status`: only `status`.
    Status,
    /// A Namespace's `/finalize`: only `spec.finalizers`.
    Finalize,
}

/// What one kind does differently on a write. Every hook has the custom resources' behaviour
/// as its default.
pub trait KindRules: std::fmt::Debug + Send + Sync {
    /// What kube's decoder does to a request's object: defaults, pruning, metadata coercion.
    /// Returns the unknown fields it dropped (for `fieldValidation`).
    fn decode(&self, _res: &Resource, ver: &Version, obj: &mut Value) -> Result<Vec<String>> {
        Ok(custom::decode(ver, obj))
    }

    /// Whether this is one of the core kinds standalone versa serves as kube-apiserver's
    /// compiled-in types (Namespaces, Secrets, ConfigMaps, Events, Leases, the admission
    /// kinds): their objects have no `metadata.generation` unless the kind says so, request
    /// bodies may be Kubernetes protobuf, and updates need no `resourceVersion` — the defaults
    /// of the three hooks below.
    fn is_core(&self) -> bool {
        false
    }

    /// Whether objects carry `metadata.generation` (the core kinds have none, but for those
    /// with a spec kube tracks).
    fn has_generation(&self) -> bool {
        !self.is_core()
    }

    /// The object a create is compared with when its writer's `managedFields` entry is made:
    /// kube's field manager compares with a new object of the kind, which for a compiled-in
    /// type is its Go zero value written out. `None`: nothing but the type meta, as for custom
    /// resources.
    fn empty_object(&self) -> Option<Value> {
        None
    }

    /// Whether `status` is written only through `/status`, whatever the version says.
    fn status_is_a_subresource(&self) -> bool {
        false
    }

    /// The kind's own server-owned fields on create, after the shared ones.
    fn prepare_create(&self, _obj: &mut Value) {}

    /// The kind's own update rules for `part`, after the shared ones of the part.
    fn prepare_update(&self, _new: &mut Value, _old: &Value, _part: Part) {}

    /// Validation of the object to store (defaults and pruning again, then every rule).
    /// Returns the pruned field paths; ratcheted rule failures and the kind's warnings go to
    /// `warnings`.
    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit(res, ver, obj, old, part, warnings, |_, _| ErrorList::new())
    }

    /// Whether kube warns about finalizer names without a domain.
    fn warns_about_finalizer_names(&self) -> bool {
        true
    }

    /// Whether kube's garbage collector acts on these objects (`propagationPolicy`
    /// finalizers).
    fn collected(&self) -> bool {
        true
    }

    /// Marks an object that waits for its finalizers.
    fn mark(&self, obj: &mut Value) {
        mark_deleting(obj);
    }

    /// What strategic merge patch knows of the kind; `None`: it takes no strategic merge patch
    /// (custom resources and definitions, as in kube).
    fn strategic_merge(&self) -> Option<&'static patch::Schema> {
        None
    }

    /// Whether request bodies may also be Kubernetes protobuf (the core kinds: what client-go's
    /// typed clients send); custom resources take JSON and YAML only, as in kube.
    fn takes_protobuf(&self) -> bool {
        self.is_core()
    }

    /// Whether an update without `resourceVersion` applies to whatever is stored (kube's
    /// `AllowUnconditionalUpdate` of the core kinds); custom resources and definitions need the
    /// version they were read at.
    fn allows_unconditional_update(&self) -> bool {
        self.is_core()
    }

    /// Whether the objects are namespaces: a request on one carries its name as its namespace
    /// (kube's request info), and it has the `/finalize` subresource.
    fn is_namespace(&self) -> bool {
        false
    }

    /// Whether objects of the kind have the `token` subresource (ServiceAccounts: kube's
    /// TokenRequest).
    fn has_token_subresource(&self) -> bool {
        false
    }

    /// Whether objects are converted between versions at the storage boundary (the definitions
    /// API has one version per face).
    fn converts(&self) -> bool {
        true
    }

    /// What the storage boundary does to a stored object after reading it, before conversion:
    /// the read-side schema steps at the version it is stored at.
    fn on_read(&self, res: &Resource, obj: &mut Value) {
        custom::on_read(res, obj);
    }

    /// What the storage boundary does to an object about to be stored, after conversion.
    fn on_write(&self, _obj: &mut Value) {}

    /// What a delete of `obj` (named `name`) does before the shared rules: proceed, or the
    /// kind's own answer (a Namespace is marked `Terminating`, an immortal one refused).
    fn delete(&self, _obj: &Value, _name: &str) -> Deletion {
        Deletion::Proceed
    }

    /// Whether a delete always marks the object first, finalizers or not (a definition waits
    /// for the cleanup of its objects).
    fn always_marked(&self) -> bool {
        false
    }

    /// Whether something besides `metadata.finalizers` still holds a marked object after an
    /// update (a Namespace's `spec.finalizers`).
    fn still_held(&self, _new: &Value) -> bool {
        false
    }

    /// Whether a dry run of a change to `old` (into `new`) judges the stored objects the change
    /// would meet (a definition's spec changed).
    fn judges_stored_objects(&self, _new: &Value, _old: &Value) -> bool {
        false
    }

    /// The resource (`group`, `plural`) whose stored objects must all be gone before `obj` may
    /// be deleted (a protected definition's), if any.
    fn deletion_guard(&self, _res: &Resource, _obj: &Value) -> Option<(String, String)> {
        None
    }
}

/// What a kind makes of a delete ([`KindRules::delete`]).
#[derive(Debug)]
pub enum Deletion {
    /// Store this marked object and answer it.
    Mark(Value),
    /// Answer this error.
    Refuse(crate::error::Error),
    /// Delete as any object.
    Proceed,
}

/// A core kind as registered: its identity and built-in definition, and its rules.
#[derive(Debug)]
pub struct CoreKind {
    pub builtin: Builtin,
    pub rules: &'static dyn KindRules,
}

/// The registration table: every core kind standalone versa serves, one line each.
pub static CORE: &[&CoreKind] = &[
    &namespace::KIND,
    &event::KIND,
    &event::KIND_V1,
    &secret::KIND,
    &configmap::KIND,
    &lease::KIND,
    &serviceaccount::KIND,
    &admission::VALIDATING_WEBHOOKS,
    &admission::MUTATING_WEBHOOKS,
    &admission::VALIDATING_POLICIES,
    &admission::VALIDATING_BINDINGS,
    &admission::MUTATING_POLICIES,
    &admission::MUTATING_BINDINGS,
    &rbac::ROLE_KIND,
    &rbac::CLUSTER_ROLE_KIND,
    &rbac::ROLE_BINDING_KIND,
    &rbac::CLUSTER_ROLE_BINDING_KIND,
];

/// The core kinds other code names (the namespace and ServiceAccount controllers, the event
/// recorder, admission's namespace lookups); a kind nobody names needs no line here.
#[allow(non_upper_case_globals, reason = "they read as the kinds they name: `Builtin::Namespace`")]
impl Builtin {
    pub const Namespace: Builtin = namespace::BUILTIN;
    pub const Event: Builtin = event::BUILTIN;
    pub const EventV1: Builtin = event::BUILTIN_V1;
    pub const Secret: Builtin = secret::BUILTIN;
    pub const ServiceAccount: Builtin = serviceaccount::BUILTIN;
}

/// The registered core kind of the resource's kind (`Secret`, or `Event.events.k8s.io` outside
/// the core group).
pub fn core_kind_named(kind: &str) -> Option<&'static CoreKind> {
    CORE.iter().copied().find(|k| {
        let res = k.builtin.definition();
        let names = &res.spec.names;
        let qualified =
            if res.spec.group.is_empty() { names.kind.clone() } else { format!("{}.{}", names.kind, res.spec.group) };
        qualified == kind || names.kind == kind
    })
}

/// The rules of `res`'s kind: custom resources, the definitions API, or a registered core kind.
pub fn of(res: &Resource) -> &'static dyn KindRules {
    match (res.flavor, res.builtin) {
        (Flavor::Definitions, _) => &definitions::Definitions,
        (Flavor::Custom, None) => &custom::Custom,
        (Flavor::Custom, Some(builtin)) => {
            CORE.iter().find(|k| k.builtin == builtin).map_or(&custom::Custom, |k| k.rules)
        }
    }
}

/// A core kind's built-in definition document: served at `v1` of `group`, with `names`
/// (`plural`, `singular`, `kind`, `shortNames`, …), `scope` (`Namespaced` or `Cluster`), and
/// `version`'s other fields (`schema`, `subresources`, `additionalPrinterColumns`).
pub fn core_definition(name: &str, group: &str, scope: &str, names: Value, version: Value) -> Value {
    let mut version_doc = json!({"name": "v1", "served": true, "storage": true});
    if let (Some(doc), Value::Object(fields)) = (version_doc.as_object_mut(), version) {
        doc.extend(fields);
    }
    let mut names = names;
    if let Some(n) = names.as_object_mut()
        && let Some(kind) = n.get("kind").and_then(Value::as_str).map(str::to_owned)
    {
        n.entry("listKind").or_insert_with(|| json!(format!("{kind}List")));
    }
    json!({
        "apiVersion": versa_apiextensions::types::API_VERSION, "kind": versa_apiextensions::types::KIND,
        "metadata": {"name": name},
        "spec": {"group": group, "scope": scope, "names": names, "versions": [version_doc]},
    })
}

/// kube's `markAsDeleting`: `deletionTimestamp` set unless it already is (to an earlier time),
/// `deletionGracePeriodSeconds: 0`, and `generation` moved on when the object is first marked.
pub fn mark_deleting(obj: &mut Value) {
    let Some(meta) = meta_mut(obj) else { return };
    if !meta.contains_key("deletionTimestamp") {
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
            meta.insert("generation".into(), json!(generation + 1));
        }
        meta.insert("deletionTimestamp".into(), json!(meta::now()));
    }
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
}
