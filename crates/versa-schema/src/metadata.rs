//! Validation of `metadata` of custom resources and of `x-kubernetes-embedded-resource`
//! objects, as kube-apiserver does it.
//!
//! Three entry points mirror three places in Kubernetes:
//! - [`validate_object_meta`]: the root `metadata` of a custom resource on create
//!   (`ValidateObjectMetaAccessor` with `NameIsDNSSubdomain`, called from
//!   apiextensions-apiserver's `customResourceValidator`). The caller decides the scope, and must
//!   already have generated `name` from `generateName`, as the API server does before validating.
//! - [`validate_embedded_resource`]: one object marked `x-kubernetes-embedded-resource`
//!   (apiextensions-apiserver `objectmeta.validateEmbeddedResource`): `apiVersion` and `kind`
//!   required, kind a DNS-1035 label when lowercased, metadata checked with the path-segment name
//!   rule and a namespace only validated when present.
//! - [`validate_embedded_resources`]: walks a value along its structural schema and applies the
//!   previous check to every embedded resource (`objectmeta.Validate` with `isResourceRoot`
//!   false).
//!
//! Metadata arrives as JSON. Kubernetes decodes it into `ObjectMeta` first; a field of the wrong
//! JSON type fails that decoding. Here the decoding is a small typed reader ([`ObjectMeta`]); its
//! failure is reported as one `Invalid` error on the metadata path, with a message in the shape
//! of Go's `encoding/json` (Kubernetes uses json-iterator, whose wording differs).

use serde_json::{Map, Value};

use crate::field::{At, Error, ErrorList, Path};
use crate::names::{self, NameValidator};
use crate::objectmeta::{MetaField, json_kind};
use crate::structural::Structural;

/// Scope rule for `metadata.namespace`.
///
/// `Some(true)`: namespaced, a DNS-1123 label is required. `Some(false)`: cluster-scoped, the
/// field is forbidden. `None`: validated only when present (embedded resources).
pub type Namespaced = Option<bool>;

/// Validates the root `metadata` of a custom resource on create: name a DNS-1123 subdomain
/// (required; `generateName` must already have been turned into a name), namespace per
/// `namespaced`, labels, annotations, owner references, finalizers, managed fields.
pub fn validate_object_meta(meta: &Value, path: &Path, namespaced: Namespaced) -> ErrorList {
    validate_object_meta_with(meta, path, names::name_is_dns_subdomain, namespaced)
}

/// Like [`validate_object_meta`] with a caller-chosen name rule (e.g.
/// [`names::name_is_dns_label`] or [`names::name_is_path_segment`]).
pub fn validate_object_meta_with(
    meta: &Value,
    path: &Path,
    name_rule: NameValidator,
    namespaced: Namespaced,
) -> ErrorList {
    let mut errs = ErrorList::new();
    object_meta_errors(meta, &|| path.clone(), name_rule, namespaced, &mut errs);
    errs
}

/// [`validate_object_meta_with`] with the path of `metadata` rendered only for an error.
pub(crate) fn object_meta_errors(
    meta: &Value,
    path: &dyn Fn() -> Path,
    name_rule: NameValidator,
    namespaced: Namespaced,
    errs: &mut ErrorList,
) {
    match ObjectMeta::decode(meta) {
        Ok(m) => validate_decoded(&m, path, name_rule, namespaced, errs),
        Err(detail) => errs.push(Error::invalid(path(), meta, detail.to_string())),
    }
}

/// Validates one `x-kubernetes-embedded-resource` object at `path`. Values that are not
/// objects are left to type validation and produce no error here.
pub fn validate_embedded_resource(obj: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    embedded_resource_errors(obj, &|| path.clone(), &mut errs);
    errs
}

/// [`validate_embedded_resource`] with `path` rendered only for an error.
pub(crate) fn embedded_resource_errors(obj: &Value, path: &dyn Fn() -> Path, errs: &mut ErrorList) {
    let Value::Object(map) = obj else { return };
    let api_version_path = || path().child("apiVersion");
    let kind_path = || path().child("kind");
    match map.get("apiVersion") {
        None => errs.push(Error::required(api_version_path(), "")),
        Some(Value::String(v)) if v.is_empty() => errs.push(Error::required(api_version_path(), "")),
        Some(Value::String(v)) => {
            if v != "/" && v.bytes().filter(|&b| b == b'/').count() > 1 {
                errs.push(Error::invalid(
                    api_version_path(),
                    v.as_str(),
                    format!("unexpected GroupVersion string: {v}"),
                ));
            }
        }
        Some(other) => errs.push(Error::invalid(api_version_path(), other, "must be a string")),
    }
    match map.get("kind") {
        None => errs.push(Error::required(kind_path(), "")),
        Some(Value::String(k)) if k.is_empty() => errs.push(Error::required(kind_path(), "")),
        // An ASCII kind that is a DNS-1035 label once lowercased needs no lowercased copy.
        Some(Value::String(k)) if k.is_ascii() && names::is_dns1035_label_ignoring_case(k) => {}
        Some(Value::String(k)) => {
            let msgs = names::is_dns1035_label(&k.to_lowercase());
            if !msgs.is_empty() {
                errs.push(Error::invalid(
                    kind_path(),
                    k.as_str(),
                    format!("may have mixed case, but should otherwise match: {}", msgs.join(",")),
                ));
            }
        }
        Some(other) => errs.push(Error::invalid(kind_path(), other, "must be a string")),
    }
    if let Some(meta_value) = map.get("metadata") {
        let meta_path = || path().child("metadata");
        match ObjectMeta::decode(meta_value) {
            Err(detail) => errs.push(Error::invalid(meta_path(), meta_value, detail.to_string())),
            Ok(mut m) => {
                // Embedded objects need no name; Kubernetes substitutes one to skip the check.
                if m.name.is_empty() {
                    m.name = "fakename";
                }
                let namespaced = if m.namespace.is_empty() { Some(false) } else { Some(true) };
                validate_decoded(&m, &meta_path, names::name_is_path_segment, namespaced, errs);
            }
        }
    }
}

/// Walks `value` along `schema` and validates every object whose schema node has
/// `x-kubernetes-embedded-resource: true`, including nested ones. The root itself is treated
/// like any other node (the root `metadata` is [`validate_object_meta`]'s job).
pub fn validate_embedded_resources(value: &Value, schema: &Structural, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    walk(value, schema, &At::ROOT, path, &mut errs);
    errs
}

/// [`validate_embedded_resources`] from `value`, found at `at` below `base`.
pub(crate) fn walk(value: &Value, schema: &Structural, at: &At<'_>, base: &Path, errs: &mut ErrorList) {
    // No embedded resource at or below this node: nothing to validate in this subtree (and no
    // path to build for it).
    if !schema.below.embedded_resources {
        return;
    }
    match value {
        Value::Object(map) => {
            if schema.embedded_resource {
                embedded_resource_errors(value, &|| at.field_path(base), errs);
            }
            let ap = schema.additional_properties.as_ref().and_then(|a| a.schema());
            for (k, v, prop) in crate::structural::with_props(&schema.properties, map.iter()) {
                match (prop, ap) {
                    (Some(prop), _) => walk(v, prop, &at.prop(k), base, errs),
                    (None, Some(ap)) => walk(v, ap, &at.extra(k), base, errs),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, v) in items.iter().enumerate() {
                    walk(v, item_schema, &at.index(i), base, errs);
                }
            }
        }
        _ => {}
    }
}

/// The `ObjectMeta` fields validation looks at, decoded from JSON with Go's typing rules
/// (`null` is the zero value, unknown fields are ignored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectMeta<'a> {
    pub name: &'a str,
    pub generate_name: &'a str,
    pub namespace: &'a str,
    pub generation: i64,
    pub labels: StringMap<'a>,
    pub annotations: StringMap<'a>,
    pub owner_references: Vec<OwnerReference<'a>>,
    pub finalizers: Vec<&'a str>,
    pub managed_fields: Vec<ManagedFieldsEntry<'a>>,
}

/// A decoded `map[string]string` (`labels`, `annotations`), borrowed from the JSON object:
/// every value is a string or `null` (Go's zero value, the empty string).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StringMap<'a>(Option<&'a Map<String, Value>>);

impl<'a> StringMap<'a> {
    /// The entries, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + use<'a> {
        self.0.into_iter().flatten().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none_or(Map::is_empty)
    }

    pub fn len(&self) -> usize {
        self.0.map_or(0, Map::len)
    }
}

/// The validated fields of one `ownerReferences` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnerReference<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub controller: bool,
    /// The entry as written, printed in error values.
    pub raw: &'a Value,
}

/// The validated fields of one `managedFields` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFieldsEntry<'a> {
    pub manager: &'a str,
    pub operation: &'a str,
    pub fields_type: &'a str,
    pub subresource: &'a str,
}

/// Go's `json.UnmarshalTypeError`: a field of `metadata` holds a value of the wrong JSON type.
/// It prints as Go does, e.g. `json: cannot unmarshal number into Go struct field
/// ObjectMeta.name of type string`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("json: cannot unmarshal {value} into {} of type {go_type}", target(field))]
pub struct UnmarshalError {
    /// The JSON kind found (`number`, `object`, ...), or `number <n>` for a number out of range.
    pub value: String,
    /// The Go struct field (`ObjectMeta.name`), empty for the value itself.
    pub field: String,
    /// The Go type expected (`string`, `v1.ObjectMeta`, ...).
    pub go_type: String,
}

fn target(field: &str) -> String {
    if field.is_empty() { "Go value".to_owned() } else { format!("Go struct field {field}") }
}

impl<'a> ObjectMeta<'a> {
    /// Decodes `metadata`; the error says which field holds a value of the wrong type.
    pub fn decode(v: &'a Value) -> Result<ObjectMeta<'a>, UnmarshalError> {
        let mut m = ObjectMeta::default();
        let map = match v {
            Value::Null => return Ok(m),
            Value::Object(map) => map,
            other => return Err(unmarshal_error(other, "", "v1.ObjectMeta")),
        };
        // One pass sorts the fields into slots (the field table is shared with coercion); they
        // are then decoded in the order Go reports the first failure in.
        let mut slots: [Option<&'a Value>; MetaField::COUNT] = [None; MetaField::COUNT];
        for (k, v) in map {
            if let Some(f) = MetaField::parse(k) {
                slots[f as usize] = Some(v);
            }
        }
        let slot = |f: MetaField| slots[f as usize];
        let string = |f: MetaField, key: &str| string_value(slot(f), key, "ObjectMeta");
        m.name = string(MetaField::Name, "name")?;
        m.generate_name = string(MetaField::GenerateName, "generateName")?;
        m.namespace = string(MetaField::Namespace, "namespace")?;
        string(MetaField::Uid, "uid")?;
        string(MetaField::ResourceVersion, "resourceVersion")?;
        string(MetaField::SelfLink, "selfLink")?;
        string(MetaField::CreationTimestamp, "creationTimestamp")?;
        string(MetaField::DeletionTimestamp, "deletionTimestamp")?;
        m.generation = int_value(slot(MetaField::Generation), "generation", "ObjectMeta", "int64")?;
        int_value(slot(MetaField::DeletionGracePeriodSeconds), "deletionGracePeriodSeconds", "ObjectMeta", "int64")?;
        m.labels = string_map_value(slot(MetaField::Labels), "labels")?;
        m.annotations = string_map_value(slot(MetaField::Annotations), "annotations")?;
        m.finalizers = match slot(MetaField::Finalizers) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s.as_str()),
                    Value::Null => Ok(""),
                    other => Err(unmarshal_error(other, "ObjectMeta.finalizers", "string")),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(unmarshal_error(other, "ObjectMeta.finalizers", "[]string")),
        };
        m.owner_references =
            object_list(slot(MetaField::OwnerReferences), "ownerReferences", "v1.OwnerReference", |o, raw| {
                Ok(OwnerReference {
                    api_version: string_field(o, "apiVersion", "OwnerReference")?,
                    kind: string_field(o, "kind", "OwnerReference")?,
                    name: string_field(o, "name", "OwnerReference")?,
                    uid: string_field(o, "uid", "OwnerReference")?,
                    controller: bool_field(o, "controller", "OwnerReference")?,
                    raw,
                })
            })?;
        m.managed_fields =
            object_list(slot(MetaField::ManagedFields), "managedFields", "v1.ManagedFieldsEntry", |o, _| {
                Ok(ManagedFieldsEntry {
                    manager: string_field(o, "manager", "ManagedFieldsEntry")?,
                    operation: string_field(o, "operation", "ManagedFieldsEntry")?,
                    fields_type: string_field(o, "fieldsType", "ManagedFieldsEntry")?,
                    subresource: string_field(o, "subresource", "ManagedFieldsEntry")?,
                })
            })?;
        Ok(m)
    }
}

fn unmarshal_error(v: &Value, field: &str, go_type: &str) -> UnmarshalError {
    UnmarshalError { value: json_kind(v).to_owned(), field: field.to_owned(), go_type: go_type.to_owned() }
}

#[inline]
fn string_value<'a>(v: Option<&'a Value>, key: &str, owner: &str) -> Result<&'a str, UnmarshalError> {
    match v {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(unmarshal_error(other, &format!("{owner}.{key}"), "string")),
    }
}

fn string_field<'a>(map: &'a Map<String, Value>, key: &str, owner: &str) -> Result<&'a str, UnmarshalError> {
    string_value(map.get(key), key, owner)
}

fn bool_field(map: &Map<String, Value>, key: &str, owner: &str) -> Result<bool, UnmarshalError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(unmarshal_error(other, &format!("{owner}.{key}"), "bool")),
    }
}

#[inline]
fn int_value(v: Option<&Value>, key: &str, owner: &str, go_type: &str) -> Result<i64, UnmarshalError> {
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| UnmarshalError {
            value: format!("number {n}"),
            field: format!("{owner}.{key}"),
            go_type: go_type.to_owned(),
        }),
        Some(other) => Err(unmarshal_error(other, &format!("{owner}.{key}"), go_type)),
    }
}

#[inline]
fn string_map_value<'a>(v: Option<&'a Value>, key: &str) -> Result<StringMap<'a>, UnmarshalError> {
    match v {
        None | Some(Value::Null) => Ok(StringMap(None)),
        Some(Value::Object(entries)) => match entries.values().find(|v| !matches!(v, Value::String(_) | Value::Null)) {
            Some(other) => Err(unmarshal_error(other, &format!("ObjectMeta.{key}"), "string")),
            None => Ok(StringMap(Some(entries))),
        },
        Some(other) => Err(unmarshal_error(other, &format!("ObjectMeta.{key}"), "map[string]string")),
    }
}

fn object_list<'a, T>(
    v: Option<&'a Value>,
    key: &str,
    go_type: &str,
    decode: impl Fn(&'a Map<String, Value>, &'a Value) -> Result<T, UnmarshalError>,
) -> Result<Vec<T>, UnmarshalError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .filter(|i| !i.is_null())
            .map(|i| match i {
                Value::Object(o) => decode(o, i),
                other => Err(unmarshal_error(other, &format!("ObjectMeta.{key}"), go_type)),
            })
            .collect(),
        Some(other) => Err(unmarshal_error(other, &format!("ObjectMeta.{key}"), &format!("[]{go_type}"))),
    }
}

/// `ValidateObjectMetaAccessor` on decoded metadata at `path` (rendered only for an error).
fn validate_decoded(
    m: &ObjectMeta,
    path: &dyn Fn() -> Path,
    name_rule: NameValidator,
    namespaced: Namespaced,
    errs: &mut ErrorList,
) {
    if !m.generate_name.is_empty() {
        for msg in name_rule(m.generate_name, true) {
            errs.push(Error::invalid(path().child("generateName"), m.generate_name, msg));
        }
    }
    if m.name.is_empty() {
        errs.push(Error::required(path().child("name"), "name or generateName is required"));
    } else {
        for msg in name_rule(m.name, false) {
            errs.push(Error::invalid(path().child("name"), m.name, msg));
        }
    }
    let ns_path = || path().child("namespace");
    match namespaced {
        Some(true) => {
            if m.namespace.is_empty() {
                errs.push(Error::required(ns_path(), ""));
            } else {
                for msg in names::validate_namespace_name(m.namespace, false) {
                    errs.push(Error::invalid(ns_path(), m.namespace, msg));
                }
            }
        }
        Some(false) => {
            if !m.namespace.is_empty() {
                errs.push(Error::forbidden(ns_path(), "not allowed on this type"));
            }
        }
        None => {
            if !m.namespace.is_empty() {
                for msg in names::validate_namespace_name(m.namespace, false) {
                    errs.push(Error::invalid(ns_path(), m.namespace, msg));
                }
            }
        }
    }
    if m.generation < 0 {
        errs.push(Error::invalid(path().child("generation"), m.generation, "must be greater than or equal to 0"));
    }
    // Paths are built only for errors: a clean object allocates none.
    if !m.labels.is_empty() {
        names::label_errors(m.labels.iter(), &|| path().child("labels"), errs);
    }
    if !m.annotations.is_empty() {
        names::annotation_errors(m.annotations.iter(), &|| path().child("annotations"), errs);
    }
    if !m.owner_references.is_empty() {
        errs.extend(validate_owner_references(&m.owner_references, &path().child("ownerReferences")));
    }
    if !m.finalizers.is_empty() {
        errs.extend(names::validate_finalizers(&m.finalizers, &path().child("finalizers")));
    }
    if !m.managed_fields.is_empty() {
        errs.extend(validate_managed_fields(&m.managed_fields, &path().child("managedFields")));
    }
}

/// `ValidateOwnerReferences`. Errors use the list's path without an index, as Kubernetes does.
fn validate_owner_references(refs: &[OwnerReference], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        // apiVersion parses as [group/]version; more than one slash leaves no version.
        let version = match r.api_version.matches('/').count() {
            _ if r.api_version.is_empty() || r.api_version == "/" => "",
            0 => r.api_version,
            1 => r.api_version.split_once('/').map_or("", |(_, v)| v),
            _ => "",
        };
        let group = if r.api_version.matches('/').count() == 1 {
            r.api_version.split_once('/').map_or("", |(g, _)| g)
        } else {
            ""
        };
        if version.is_empty() {
            errs.push(Error::invalid(path.child("apiVersion"), r.api_version, "version must not be empty"));
        }
        if r.kind.is_empty() {
            errs.push(Error::invalid(path.child("kind"), r.kind, "must not be empty"));
        }
        if r.name.is_empty() {
            errs.push(Error::invalid(path.child("name"), r.name, "must not be empty"));
        }
        if r.uid.is_empty() {
            errs.push(Error::invalid(path.child("uid"), r.uid, "must not be empty"));
        }
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            errs.push(Error::invalid(path.clone(), r.raw, "/v1, Kind=Event is disallowed from being an owner"));
        }
        if r.controller {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all = Value::Array(refs.iter().map(|r| (*r.raw).clone()).collect());
                    errs.push(Error::invalid(
                        path.clone(),
                        all,
                        format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `ValidateManagedFields`: operation, fieldsType, manager length and characters, subresource
/// length.
fn validate_managed_fields(entries: &[ManagedFieldsEntry], path: &Path) -> ErrorList {
    const FIELD_MANAGER_MAX_LENGTH: i64 = 128;
    const MAX_SUBRESOURCE_NAME_LENGTH: i64 = 256;
    let mut errs = ErrorList::new();
    for (i, e) in entries.iter().enumerate() {
        let p = path.index(i);
        if e.operation != "Apply" && e.operation != "Update" {
            errs.push(Error::invalid(p.child("operation"), e.operation, "must be `Apply` or `Update`"));
        }
        if !e.fields_type.is_empty() && e.fields_type != "FieldsV1" {
            errs.push(Error::invalid(p.child("fieldsType"), e.fields_type, "must be `FieldsV1`"));
        }
        if e.manager.len() as i64 > FIELD_MANAGER_MAX_LENGTH {
            errs.push(Error::too_long(p.child("manager"), FIELD_MANAGER_MAX_LENGTH));
        }
        for (at, c) in e.manager.char_indices() {
            if c.is_control() {
                errs.push(Error::invalid(
                    p.child("manager"),
                    e.manager,
                    format!("invalid character U+{:04X} (at position {at})", c as u32),
                ));
            }
        }
        if e.subresource.len() as i64 > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(Error::too_long(p.child("subresource"), MAX_SUBRESOURCE_NAME_LENGTH));
        }
    }
    errs
}
