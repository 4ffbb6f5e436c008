//! The definitions API (`versa.dev/v1` `resourcedefinitions`, and standalone's
//! `apiextensions.k8s.io/v1` `customresourcedefinitions` face): kube's CRD strategy, written in
//! [`crate::definitions`] — decoded as the typed definition (unknown fields dropped), validated
//! with `versa-apiextensions`, `status` only through `/status`, marked `Terminating` on delete
//! and left alone by the garbage collector.

use serde_json::{Value, json};
use versa_schema::ErrorList;
use versa_schema::pipeline;

use super::KindRules;
use super::Part;
use crate::definitions;
use crate::error::{Error, Result};
use crate::meta::{self, name_of, set_type_meta};
use crate::resource::{Resource, Version};

/// The rules of the definitions API.
#[derive(Debug)]
pub struct Definitions;

impl KindRules for Definitions {
    /// Unknown fields are reported, and the spec defaulted as kube's decoder defaults it, so
    /// that the writer's `managedFields` entry owns the defaults as in kube.
    fn decode(&self, _res: &Resource, _ver: &Version, obj: &mut Value) -> Result<Vec<String>> {
        let unknown = definitions::unknown_fields(obj);
        versa_apiextensions::set_document_defaults(obj);
        Ok(unknown)
    }

    /// A new `CustomResourceDefinition` written out: its non-pointer structs are there, empty,
    /// so a create owns the fields of `spec` and `spec.names`, not those objects themselves.
    fn empty_object(&self) -> Option<Value> {
        Some(json!({"spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null}}))
    }

    fn status_is_a_subresource(&self) -> bool {
        true
    }

    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        let name = name_of(obj).to_owned();
        let invalid = |errs: ErrorList| Error::invalid(&res.group, &res.kind, &name, errs);
        let result = match old {
            None => definitions::admit_create(obj, warnings),
            Some(old) => definitions::admit_update(obj, old, part == Part::Status, warnings),
        };
        let unknown = result.map_err(invalid)?;
        // Definitions are decoded and defaulted in their ResourceDefinition form; the answer is
        // in the face the request came through.
        set_type_meta(obj, &res.api_version(&ver.name), &res.kind);
        if let Some(old) = old {
            let errs = pipeline::validate_update(obj, old);
            if !errs.is_empty() {
                return Err(invalid(errs));
            }
        }
        Ok(unknown)
    }

    fn converts(&self) -> bool {
        false
    }

    /// The definitions API has one version per face: the object takes the face's type. Schema
    /// numbers stored before they were written as Go writes them are read so.
    fn on_read(&self, res: &Resource, obj: &mut Value) {
        set_type_meta(obj, &res.api_version(&res.storage_version), &res.kind);
        versa_apiextensions::types::go_schema_numbers(obj);
    }

    /// Whatever face it came through, a definition is kept as a ResourceDefinition.
    fn on_write(&self, obj: &mut Value) {
        set_type_meta(obj, versa_apiextensions::types::API_VERSION, versa_apiextensions::types::KIND);
    }

    fn always_marked(&self) -> bool {
        true
    }

    fn judges_stored_objects(&self, new: &Value, old: &Value) -> bool {
        new.get("spec") != old.get("spec")
    }

    /// A protected definition's objects ([`definitions::deletion_protected`]: on by default
    /// through versa's own face).
    fn deletion_guard(&self, res: &Resource, obj: &Value) -> Option<(String, String)> {
        let by_default = res.kind == versa_apiextensions::types::KIND;
        if !definitions::deletion_protected(obj, by_default) {
            return None;
        }
        let group = obj.pointer("/spec/group").and_then(Value::as_str)?;
        let plural = obj.pointer("/spec/names/plural").and_then(Value::as_str)?;
        Some((group.to_owned(), plural.to_owned()))
    }

    fn warns_about_finalizer_names(&self) -> bool {
        false
    }

    fn collected(&self) -> bool {
        false
    }

    fn mark(&self, obj: &mut Value) {
        definitions::mark_deleted(obj, &meta::now());
    }
}
