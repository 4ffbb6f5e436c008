//! The `ResourceDefinition` type and its conversion to and from CustomResourceDefinition documents.
//!
//! A ResourceDefinition is a CRD with another `apiVersion` and `kind`: the spec and status are the
//! k8s-openapi `apiextensions.k8s.io/v1` types, serialised in camelCase as Kubernetes does. The
//! tools accept either document, so [`ResourceDefinition::from_document`] reads both and refuses
//! anything else with a message that says what was expected; `apiextensions.k8s.io/v1beta1` CRDs
//! are refused explicitly because their shape (top-level `validation`, `version`, …) differs and
//! converting them silently would hide the v1 defaults that change behaviour.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec, CustomResourceDefinitionStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cel_conversion::CelConversion;

/// The API group of definitions.
pub const GROUP: &str = "versa.dev";
/// The only served version of definitions.
pub const VERSION: &str = "v1";
/// `apiVersion` of a ResourceDefinition document.
pub const API_VERSION: &str = "versa.dev/v1";
/// `kind` of a ResourceDefinition document.
pub const KIND: &str = "ResourceDefinition";
/// `apiVersion` of the CustomResourceDefinition documents we accept.
pub const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
/// `kind` of CustomResourceDefinition documents.
pub const CRD_KIND: &str = "CustomResourceDefinition";

/// The condition type set once the definition's resource is served.
pub const CONDITION_ESTABLISHED: &str = "Established";

/// A versa resource definition: metadata, a CRD v1 spec and a CRD v1 status.
///
/// versa's one field outside a CRD's shape, `spec.conversion.cel` (declarative conversion,
/// [`crate::cel_conversion`]), cannot live in k8s-openapi's `CustomResourceConversion`: it is
/// read into [`ResourceDefinition::conversion_cel`] and written back in its place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceDefinition {
    pub metadata: ObjectMeta,
    pub spec: CustomResourceDefinitionSpec,
    pub status: Option<CustomResourceDefinitionStatus>,
    /// `spec.conversion.cel`.
    pub conversion_cel: Option<CelConversion>,
}

impl<'de> Deserialize<'de> for ResourceDefinition {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Value,
            #[serde(default)]
            status: Option<CustomResourceDefinitionStatus>,
        }
        let Raw { metadata, mut spec, status } = Raw::deserialize(deserializer)?;
        let cel = spec
            .get_mut("conversion")
            .and_then(Value::as_object_mut)
            .and_then(|c| c.remove("cel"))
            .filter(|c| !c.is_null());
        let conversion_cel = cel
            .map(CelConversion::deserialize)
            .transpose()
            .map_err(|e| D::Error::custom(format!("spec.conversion.cel: {e}")))?;
        let spec = match spec {
            Value::Null => CustomResourceDefinitionSpec::default(),
            spec => CustomResourceDefinitionSpec::deserialize(spec).map_err(D::Error::custom)?,
        };
        Ok(ResourceDefinition { metadata, spec, status, conversion_cel })
    }
}

/// Which kind of document a definition was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentKind {
    /// `versa.dev/v1` `ResourceDefinition`.
    ResourceDefinition,
    /// `apiextensions.k8s.io/v1` `CustomResourceDefinition`.
    CustomResourceDefinition,
}

/// Why a document is not a definition we can read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("the document is not an object")]
    NotAnObject,
    #[error(
        "apiextensions.k8s.io/{version} CustomResourceDefinition is not supported: use apiextensions.k8s.io/v1 (or versa.dev/v1 ResourceDefinition)"
    )]
    UnsupportedCrdVersion { version: String },
    #[error(
        "unsupported document {api_version:?} {kind:?}: expected versa.dev/v1 ResourceDefinition or apiextensions.k8s.io/v1 CustomResourceDefinition"
    )]
    UnknownKind { api_version: String, kind: String },
    #[error("cannot decode {kind}: {source}")]
    Decode {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// `Result` with this module's error.
pub type Result<T, E = ParseError> = std::result::Result<T, E>;

impl DocumentKind {
    /// Classifies a document by `apiVersion` and `kind`.
    pub fn of(doc: &Value) -> Result<DocumentKind> {
        let obj = doc.as_object().ok_or(ParseError::NotAnObject)?;
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        match (api_version, kind) {
            (API_VERSION, KIND) => Ok(DocumentKind::ResourceDefinition),
            (CRD_API_VERSION, CRD_KIND) => Ok(DocumentKind::CustomResourceDefinition),
            (av, CRD_KIND) if av.starts_with("apiextensions.k8s.io/") => Err(ParseError::UnsupportedCrdVersion {
                version: av.trim_start_matches("apiextensions.k8s.io/").to_owned(),
            }),
            (av, k) => Err(ParseError::UnknownKind { api_version: av.to_owned(), kind: k.to_owned() }),
        }
    }
}

impl ResourceDefinition {
    /// Reads a ResourceDefinition or an `apiextensions.k8s.io/v1` CustomResourceDefinition.
    pub fn from_document(doc: &Value) -> Result<ResourceDefinition> {
        Self::from_document_with_kind(doc).map(|(def, _)| def)
    }

    /// Like [`ResourceDefinition::from_document`], also saying which kind of document it was, so
    /// that tools can answer in the same form.
    pub fn from_document_with_kind(doc: &Value) -> Result<(ResourceDefinition, DocumentKind)> {
        let kind = DocumentKind::of(doc)?;
        let name = match kind {
            DocumentKind::ResourceDefinition => KIND,
            DocumentKind::CustomResourceDefinition => CRD_KIND,
        };
        let def = ResourceDefinition::from_object(doc).map_err(|source| ParseError::Decode { kind: name, source })?;
        Ok((def, kind))
    }

    /// What [`Deserialize`] reads from an object, read in place: `Deserialize` takes the spec as a
    /// tree of its own to remove `spec.conversion.cel` before the typed spec is read, which from a
    /// borrowed document means copying the spec — most of a definition, its schemas — on every
    /// read. The typed spec ignores the `cel` key, so here it is read from the document as it is.
    /// Same fields, same errors, in the same order (the object's keys are sorted: `metadata`,
    /// `spec`, `status`; `spec.conversion.cel` before the rest of `spec`).
    fn from_object(doc: &Value) -> serde_json::Result<ResourceDefinition> {
        use serde::de::Error as _;
        let metadata = doc.get("metadata").map(ObjectMeta::deserialize).transpose()?.unwrap_or_default();
        let status =
            doc.get("status").map(Option::<CustomResourceDefinitionStatus>::deserialize).transpose()?.flatten();
        let spec = doc.get("spec").filter(|s| !s.is_null());
        let cel = spec.and_then(|s| s.get("conversion")).filter(|c| c.is_object()).and_then(|c| c.get("cel"));
        let conversion_cel = cel
            .filter(|c| !c.is_null())
            .map(CelConversion::deserialize)
            .transpose()
            .map_err(|e| serde_json::Error::custom(format!("spec.conversion.cel: {e}")))?;
        let spec = spec.map(CustomResourceDefinitionSpec::deserialize).transpose()?.unwrap_or_default();
        Ok(ResourceDefinition { metadata, spec, status, conversion_cel })
    }

    /// The definition as a `versa.dev/v1` ResourceDefinition document.
    pub fn to_document(&self) -> Value {
        let mut doc = serde_json::to_value(self).unwrap_or(Value::Null);
        go_schema_numbers(&mut doc);
        doc
    }

    /// The definition as an `apiextensions.k8s.io/v1` CustomResourceDefinition document.
    pub fn to_crd_document(&self) -> Value {
        let mut doc = self.to_document();
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("apiVersion".into(), Value::String(CRD_API_VERSION.into()));
            obj.insert("kind".into(), Value::String(CRD_KIND.into()));
        }
        doc
    }

    /// The name of the definition (`<plural>.<group>` when valid).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// Whether the condition `type_` has status `True`.
    pub fn condition_is_true(&self, type_: &str) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
    }

    /// Whether the definition is `Established` (its resource is served): from then on its scope
    /// and kind may not change.
    pub fn is_established(&self) -> bool {
        self.condition_is_true(CONDITION_ESTABLISHED)
    }

    /// `status.storedVersions`, empty when unset.
    pub fn stored_versions(&self) -> &[String] {
        self.status.as_ref().and_then(|s| s.stored_versions.as_deref()).unwrap_or_default()
    }

    /// The name of the version marked `storage: true` (the first one, if several are).
    pub fn storage_version(&self) -> Option<&str> {
        self.spec.versions.iter().find(|v| v.storage).map(|v| v.name.as_str())
    }
}

/// The typed numbers of a definition's schemas (`maximum`, `minimum`, `multipleOf`: `float64` in
/// kube's types) written as Go's `encoding/json` writes a `float64`: a whole number without a
/// fraction (`10`, not serde's `10.0`). Defaults, enums and examples are raw JSON in kube and
/// keep what the client wrote. Applied to every definition document versa writes, and to stored
/// ones as they are read (those written before this rule).
pub fn go_schema_numbers(doc: &mut Value) {
    let Some(versions) = doc.pointer_mut("/spec/versions").and_then(Value::as_array_mut) else { return };
    for version in versions {
        if let Some(schema) = version.pointer_mut("/schema/openAPIV3Schema") {
            schema_numbers(schema, 0);
        }
    }
}

/// [`go_schema_numbers`] in one schema node and the schemas below it (bounded by the nesting
/// limit every decoded document already obeys).
fn schema_numbers(node: &mut Value, depth: usize) {
    let Some(map) = node.as_object_mut().filter(|_| depth < 256) else { return };
    for key in ["maximum", "minimum", "multipleOf"] {
        if let Some(Value::Number(n)) = map.get_mut(key)
            && let Some(f) = n.as_f64().filter(|_| n.is_f64())
            && f.fract() == 0.0
            && f.abs() < 9.0e15
        {
            *n = serde_json::Number::from(f as i64);
        }
    }
    for key in ["properties", "patternProperties", "definitions", "dependencies"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(|c| schema_numbers(c, depth + 1));
        }
    }
    for key in ["items", "additionalProperties", "additionalItems", "not"] {
        match map.get_mut(key) {
            Some(Value::Array(list)) => list.iter_mut().for_each(|c| schema_numbers(c, depth + 1)),
            Some(child) => schema_numbers(child, depth + 1),
            None => {}
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get_mut(key) {
            list.iter_mut().for_each(|c| schema_numbers(c, depth + 1));
        }
    }
}

impl Serialize for ResourceDefinition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let len = if self.status.is_some() { 5 } else { 4 };
        let mut st = serializer.serialize_struct(KIND, len)?;
        st.serialize_field("apiVersion", API_VERSION)?;
        st.serialize_field("kind", KIND)?;
        st.serialize_field("metadata", &self.metadata)?;
        match &self.conversion_cel {
            None => st.serialize_field("spec", &self.spec)?,
            Some(cel) => {
                // Written back where it was read from (see the type's documentation).
                let mut spec = serde_json::to_value(&self.spec).map_err(serde::ser::Error::custom)?;
                let cel = serde_json::to_value(cel).map_err(serde::ser::Error::custom)?;
                if let Some(spec) = spec.as_object_mut() {
                    let conversion = spec.entry("conversion").or_insert_with(|| Value::Object(Default::default()));
                    if let Some(conversion) = conversion.as_object_mut() {
                        conversion.insert("cel".to_owned(), cel);
                    }
                }
                st.serialize_field("spec", &spec)?;
            }
        }
        if let Some(status) = &self.status {
            st.serialize_field("status", status)?;
        }
        st.end()
    }
}

impl TryFrom<&Value> for ResourceDefinition {
    type Error = ParseError;
    fn try_from(doc: &Value) -> Result<Self> {
        ResourceDefinition::from_document(doc)
    }
}

impl TryFrom<Value> for ResourceDefinition {
    type Error = ParseError;
    fn try_from(doc: Value) -> Result<Self> {
        ResourceDefinition::from_document(&doc)
    }
}

impl From<CustomResourceDefinition> for ResourceDefinition {
    fn from(crd: CustomResourceDefinition) -> Self {
        ResourceDefinition { metadata: crd.metadata, spec: crd.spec, status: crd.status, conversion_cel: None }
    }
}

/// The typed CRD has no place for `spec.conversion.cel`: it is left out.
impl From<ResourceDefinition> for CustomResourceDefinition {
    fn from(def: ResourceDefinition) -> Self {
        CustomResourceDefinition { metadata: def.metadata, spec: def.spec, status: def.status }
    }
}

impl k8s_openapi::Resource for ResourceDefinition {
    const API_VERSION: &'static str = API_VERSION;
    const GROUP: &'static str = GROUP;
    const KIND: &'static str = KIND;
    const VERSION: &'static str = VERSION;
    const URL_PATH_SEGMENT: &'static str = "resourcedefinitions";
    type Scope = k8s_openapi::ClusterResourceScope;
}

impl k8s_openapi::ListableResource for ResourceDefinition {
    const LIST_KIND: &'static str = "ResourceDefinitionList";
}

impl k8s_openapi::Metadata for ResourceDefinition {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    /// kube-apiserver serves a CRD's `maximum: 10` as `10` (Go's float64 encoding), a fraction as
    /// written, and a default as the client wrote it.
    #[test]
    fn schema_numbers_are_written_as_go_writes_them() {
        let mut doc = crd();
        doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object", "properties": {
            "n": {"type": "integer", "maximum": 10, "minimum": 1.0, "default": 2.0},
            "f": {"type": "number", "maximum": 1.5, "multipleOf": 0.5},
            "list": {"type": "array", "items": {"type": "integer", "maximum": 3}},
            "map": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            "any": {"anyOf": [{"type": "integer", "maximum": 7}]}}});
        let text = ResourceDefinition::from_document(&doc).unwrap().to_document().to_string();
        for want in [
            r#""maximum":10,"minimum":1"#,
            r#""default":2.0"#,
            r#""maximum":1.5,"multipleOf":0.5"#,
            r#""items":{"maximum":3"#,
            r#""minimum":0"#,
            r#""maximum":7"#,
        ] {
            assert!(text.contains(want), "{want} not in {text}");
        }
        assert!(!text.contains("10.0") && !text.contains("3.0") && !text.contains("7.0"), "{text}");
    }

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
            }
        })
    }

    #[test]
    fn reads_a_crd_and_writes_both_forms() {
        let (def, kind) = ResourceDefinition::from_document_with_kind(&crd()).unwrap();
        assert_eq!(kind, DocumentKind::CustomResourceDefinition);
        assert_eq!(def.name(), "crontabs.stable.example.com");
        assert_eq!(def.storage_version(), Some("v1"));
        let rd = def.to_document();
        assert_eq!(rd["apiVersion"], "versa.dev/v1");
        assert_eq!(rd["kind"], "ResourceDefinition");
        assert_eq!(
            rd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert_eq!(def.to_crd_document(), crd());
        let back = ResourceDefinition::from_document(&rd).unwrap();
        assert_eq!(back, def);
    }

    #[test]
    fn refuses_other_documents() {
        let mut v1beta1 = crd();
        v1beta1["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        let err = ResourceDefinition::from_document(&v1beta1).unwrap_err();
        assert!(matches!(err, ParseError::UnsupportedCrdVersion { .. }));
        assert!(err.to_string().contains("use apiextensions.k8s.io/v1"), "{err}");

        let err = ResourceDefinition::from_document(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"unsupported document "v1" "ConfigMap": expected versa.dev/v1 ResourceDefinition or apiextensions.k8s.io/v1 CustomResourceDefinition"#
        );
        assert!(matches!(ResourceDefinition::from_document(&json!([])), Err(ParseError::NotAnObject)));

        let mut bad = crd();
        bad["spec"]["versions"] = json!("v1");
        assert!(matches!(ResourceDefinition::from_document(&bad), Err(ParseError::Decode { .. })));
    }

    #[test]
    fn converts_to_and_from_the_k8s_openapi_crd() {
        let def = ResourceDefinition::from_document(&crd()).unwrap();
        let crd: CustomResourceDefinition = def.clone().into();
        assert_eq!(ResourceDefinition::from(crd), def);
    }
}
