//! Which rules apply: everything on create; on update, rules that older servers did not enforce
//! are enforced only if the old object already satisfied them ("ratcheting").
//!
//! Without ratcheting, a definition accepted years ago could never be updated again — not even
//! to fix the very problem — because every update is validated as a whole. Each flag below is
//! true on create, and on update true unless the old definition already violated the rule.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinitionSpec, JSONSchemaProps, SelectableField,
};
use versa_schema::Structural;
use versa_schema::field::Path;

use super::{conversion, schema, webhook};
use crate::types::ResourceDefinition;

/// The switches of definition validation (kube-apiserver's `validationOptions`).
#[derive(Clone, Debug)]
pub struct Options {
    /// `webhook.conversionReviewVersions` must name `v1` or `v1beta1`.
    pub require_recognized_conversion_review_version: bool,
    /// `spec.scope` and `spec.names.kind` may not change (the old definition is Established).
    pub require_immutable_names: bool,
    /// Every version must have `schema.openAPIV3Schema`.
    pub require_open_api_schema: bool,
    /// Every `type` must be one of the six OpenAPI v3 types.
    pub require_valid_property_type: bool,
    /// Schemas must be structural (forced on when pruning, defaults or extensions need it).
    pub require_structural_schema: bool,
    /// Defaults must survive pruning.
    pub require_pruned_defaults: bool,
    /// Items of `x-kubernetes-list-type: set` lists must be atomic.
    pub require_atomic_set_type: bool,
    /// Map-list keys must be required or defaulted and non-nullable; set/map items non-nullable.
    pub require_map_list_keys_map_set_validation: bool,
    /// An unparsable webhook `caBundle` is accepted (create, not yet Established, or already bad).
    pub allow_invalid_ca_bundle: bool,
    /// `selectableFields` of versions whose old value had more than the maximum and is unchanged.
    pub unchanged_oversized_selectable_fields: BTreeMap<String, Vec<SelectableField>>,
}

impl Options {
    /// Everything enforced; an invalid CA bundle is allowed because nothing is served yet.
    pub fn for_create() -> Options {
        Options {
            require_recognized_conversion_review_version: true,
            require_immutable_names: false,
            require_open_api_schema: true,
            require_valid_property_type: true,
            require_structural_schema: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set_validation: true,
            allow_invalid_ca_bundle: true,
            unchanged_oversized_selectable_fields: BTreeMap::new(),
        }
    }

    /// The options for updating `old` to `new`.
    pub fn for_update(new: &ResourceDefinition, old: &ResourceDefinition) -> Options {
        let old_spec = &old.spec;
        let old_review_versions = old_spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .map(|w| w.conversion_review_versions.as_slice())
            .unwrap_or_default();
        Options {
            require_recognized_conversion_review_version: old_review_versions.is_empty()
                || old_review_versions.iter().any(|v| conversion::is_accepted_review_version(v)),
            require_immutable_names: old.is_established(),
            require_open_api_schema: all_versions_have_schema(old_spec),
            require_valid_property_type: !schema::spec_has(old_spec, schema::has_invalid_type),
            require_structural_schema: !old_schemas(old_spec).any(is_non_structural),
            require_pruned_defaults: !old_schemas(old_spec).any(has_unpruned_defaults),
            require_atomic_set_type: !schema::spec_has(old_spec, schema::has_non_atomic_set_type),
            require_map_list_keys_map_set_validation: !schema::spec_has(
                old_spec,
                schema::has_invalid_map_list_keys_map_set,
            ),
            allow_invalid_ca_bundle: allow_invalid_ca_bundle(old),
            unchanged_oversized_selectable_fields: unchanged_oversized_selectable_fields(new, old),
        }
    }
}

fn old_schemas(spec: &CustomResourceDefinitionSpec) -> impl Iterator<Item = &JSONSchemaProps> {
    spec.versions.iter().filter_map(|v| v.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()))
}

fn all_versions_have_schema(spec: &CustomResourceDefinitionSpec) -> bool {
    spec.versions.iter().all(|v| v.schema.as_ref().is_some_and(|s| s.open_api_v3_schema.is_some()))
}

fn is_non_structural(s: &JSONSchemaProps) -> bool {
    match Structural::lower(s) {
        Err(_) => true,
        Ok(ss) => !versa_schema::structural_check::validate_structural(&ss, &Path::none()).is_empty(),
    }
}

/// Whether some default of a structural schema would be changed by pruning. Measured as defaults
/// that fail only when pruning is required, since the defaults check is where pruning of
/// defaults is implemented.
fn has_unpruned_defaults(s: &JSONSchemaProps) -> bool {
    if !schema::has_default(s) {
        return false;
    }
    let Ok(ss) = Structural::lower(s) else { return false };
    if !versa_schema::structural_check::validate_structural(&ss, &Path::none()).is_empty() {
        return false;
    }
    let strict = versa_schema::defaults::validate_defaults(&ss, &Path::none(), true);
    let relaxed = versa_schema::defaults::validate_defaults(&ss, &Path::none(), false);
    strict.len() > relaxed.len()
}

fn allow_invalid_ca_bundle(old: &ResourceDefinition) -> bool {
    if !old.is_established() {
        return true;
    }
    let bundle = old
        .spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref())
        .and_then(|c| c.ca_bundle.as_ref());
    match bundle {
        Some(b) if !b.0.is_empty() => !webhook::validate_ca_bundle(&Path::new("caBundle"), &b.0).is_empty(),
        _ => false,
    }
}

fn unchanged_oversized_selectable_fields(
    new: &ResourceDefinition,
    old: &ResourceDefinition,
) -> BTreeMap<String, Vec<SelectableField>> {
    let mut out = BTreeMap::new();
    for v in &new.spec.versions {
        let Some(old_v) = old.spec.versions.iter().find(|o| o.name == v.name) else { continue };
        let (Some(fields), Some(old_fields)) = (&v.selectable_fields, &old_v.selectable_fields) else { continue };
        if fields == old_fields && fields.len() > super::selectable_fields::MAX_SELECTABLE_FIELDS {
            out.insert(v.name.clone(), fields.clone());
        }
    }
    out
}
