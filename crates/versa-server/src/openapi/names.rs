//! The vocabulary the OpenAPI builders share: the meta types' definition names and
//! descriptions, the two document flavours (Swagger 2.0 and OpenAPI 3.0) and how each refers to a
//! definition, one definition's names, and kube-openapi's definition names.

use serde_json::{Value, json};
use versa_apiextensions::ResourceDefinition;

pub(super) const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
pub(super) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub(super) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(super) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

pub(super) const TITLE: &str = "Kubernetes CRD Swagger";
pub(super) const TITLE_VERSION: &str = "v0.1.0";

pub(super) const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
pub(super) const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
pub(super) const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
pub(super) const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
pub(super) const OBJECT_METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
pub(super) const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    V2,
    V3,
}

impl Flavor {
    pub(super) fn reference(self, name: &str) -> String {
        match self {
            Flavor::V2 => format!("#/definitions/{name}"),
            Flavor::V3 => format!("#/components/schemas/{name}"),
        }
    }

    /// A reference carrying a description: plain `$ref` in v2, `allOf: [{$ref}]` in v3 (where
    /// siblings of `$ref` are ignored).
    pub(super) fn described_ref(self, name: &str, description: &str) -> Value {
        match self {
            Flavor::V2 => json!({"$ref": self.reference(name), "description": description}),
            Flavor::V3 => json!({"allOf": [{"$ref": self.reference(name)}], "description": description}),
        }
    }
}

/// The names and facts of one definition the builder uses (`spec.names`, as upstream).
pub(super) struct Names<'d> {
    pub(super) group: &'d str,
    pub(super) kind: &'d str,
    pub(super) list_kind: String,
    pub(super) plural: &'d str,
    pub(super) namespaced: bool,
    pub(super) preserve_unknown_fields: bool,
}

impl<'d> Names<'d> {
    pub(super) fn of(def: &'d ResourceDefinition) -> Names<'d> {
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

pub(super) fn gvk(group: &str, version: &str, kind: &str) -> Value {
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

/// A value as JSON text.
pub(super) fn serialized(v: &Value) -> Box<str> {
    serde_json::to_string(v).unwrap_or_default().into_boxed_str()
}
