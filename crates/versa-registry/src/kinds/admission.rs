//! The admission configuration kinds (standalone; `admissionregistration.k8s.io/v1`
//! ValidatingWebhookConfiguration, MutatingWebhookConfiguration, ValidatingAdmissionPolicy,
//! MutatingAdmissionPolicy and their bindings): decoded as their typed kind (unknown fields
//! dropped and reported, kube's v1 defaults applied) and validated with kube's rules, both
//! `versa_admission::objects`'; a policy's `/status` is not validated. Their strategic merge
//! patch metadata is their Go types' (`k8s.io/api/admissionregistration/v1`):
//! `webhooks` merge on `name`, and so do each webhook's and each policy's `matchConditions` and
//! a ValidatingAdmissionPolicy's `variables`; the bindings have none.

use serde_json::{Value, json};
use versa_admission::objects::{self, ObjectKind};
use versa_schema::ErrorList;

use super::patch::{Field, METADATA, METADATA_ONLY, PLAIN, Schema};
use super::{CoreKind, KindRules, Part, core_definition, custom};
use crate::error::{Error, Result};
use crate::meta::name_of;
use crate::resource::{ADMISSION_GROUP, AdmissionKind, Builtin, Resource, Version};

/// The rules of one admission configuration kind.
#[derive(Debug)]
pub struct Admission(AdmissionKind);

/// Their registrations, one per kind.
pub static VALIDATING_WEBHOOKS: CoreKind = registration(AdmissionKind::ValidatingWebhookConfiguration);
pub static MUTATING_WEBHOOKS: CoreKind = registration(AdmissionKind::MutatingWebhookConfiguration);
pub static VALIDATING_POLICIES: CoreKind = registration(AdmissionKind::ValidatingAdmissionPolicy);
pub static VALIDATING_BINDINGS: CoreKind = registration(AdmissionKind::ValidatingAdmissionPolicyBinding);
pub static MUTATING_POLICIES: CoreKind = registration(AdmissionKind::MutatingAdmissionPolicy);
pub static MUTATING_BINDINGS: CoreKind = registration(AdmissionKind::MutatingAdmissionPolicyBinding);

const fn registration(kind: AdmissionKind) -> CoreKind {
    let rules: &'static Admission = match kind {
        AdmissionKind::ValidatingWebhookConfiguration => &Admission(AdmissionKind::ValidatingWebhookConfiguration),
        AdmissionKind::MutatingWebhookConfiguration => &Admission(AdmissionKind::MutatingWebhookConfiguration),
        AdmissionKind::ValidatingAdmissionPolicy => &Admission(AdmissionKind::ValidatingAdmissionPolicy),
        AdmissionKind::ValidatingAdmissionPolicyBinding => &Admission(AdmissionKind::ValidatingAdmissionPolicyBinding),
        AdmissionKind::MutatingAdmissionPolicy => &Admission(AdmissionKind::MutatingAdmissionPolicy),
        AdmissionKind::MutatingAdmissionPolicyBinding => &Admission(AdmissionKind::MutatingAdmissionPolicyBinding),
    };
    CoreKind { builtin: builtin(kind), rules }
}

/// The identity and built-in definition of `kind`.
const fn builtin(kind: AdmissionKind) -> Builtin {
    match kind {
        AdmissionKind::ValidatingWebhookConfiguration => {
            Builtin::new(AdmissionKind::ValidatingWebhookConfiguration.names().2, || {
                definition(AdmissionKind::ValidatingWebhookConfiguration)
            })
        }
        AdmissionKind::MutatingWebhookConfiguration => {
            Builtin::new(AdmissionKind::MutatingWebhookConfiguration.names().2, || {
                definition(AdmissionKind::MutatingWebhookConfiguration)
            })
        }
        AdmissionKind::ValidatingAdmissionPolicy => {
            Builtin::new(AdmissionKind::ValidatingAdmissionPolicy.names().2, || {
                definition(AdmissionKind::ValidatingAdmissionPolicy)
            })
        }
        AdmissionKind::ValidatingAdmissionPolicyBinding => {
            Builtin::new(AdmissionKind::ValidatingAdmissionPolicyBinding.names().2, || {
                definition(AdmissionKind::ValidatingAdmissionPolicyBinding)
            })
        }
        AdmissionKind::MutatingAdmissionPolicy => {
            Builtin::new(AdmissionKind::MutatingAdmissionPolicy.names().2, || {
                definition(AdmissionKind::MutatingAdmissionPolicy)
            })
        }
        AdmissionKind::MutatingAdmissionPolicyBinding => {
            Builtin::new(AdmissionKind::MutatingAdmissionPolicyBinding.names().2, || {
                definition(AdmissionKind::MutatingAdmissionPolicyBinding)
            })
        }
    }
}

#[allow(non_snake_case, reason = "it reads as the kind it names: `Builtin::Admission(kind)`")]
impl Builtin {
    /// The admission configuration kind `kind`.
    pub const fn Admission(kind: AdmissionKind) -> Builtin {
        builtin(kind)
    }
}

/// An admission configuration kind as a definition: kept as it comes (the admission engine
/// reads it with the API types and reports what does not compile), cluster-scoped.
fn definition(kind: AdmissionKind) -> Value {
    let (kind_name, plural, name) = kind.names();
    let subresources = if kind.has_status() { json!({"status": {}}) } else { json!({}) };
    core_definition(
        name,
        ADMISSION_GROUP,
        "Cluster",
        json!({"plural": plural, "singular": kind_name.to_lowercase(), "kind": kind_name,
               "categories": ["api-extensions"]}),
        json!({"subresources": subresources,
               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
    )
}

/// `matchConditions` of webhooks and policies (`admissionregistrationv1.MatchCondition`).
const MATCH_CONDITIONS: (&str, Field) = ("matchConditions", Field::Merge { key: Some("name"), item: &PLAIN });

/// `{Validating,Mutating}WebhookConfiguration`.
static WEBHOOK_CONFIGURATION: Schema =
    Schema::new(&[METADATA, ("webhooks", Field::Merge { key: Some("name"), item: &WEBHOOK })]);
/// `ValidatingWebhook` and `MutatingWebhook`.
static WEBHOOK: Schema = Schema::new(&[MATCH_CONDITIONS]);

/// `ValidatingAdmissionPolicy`.
static VALIDATING_ADMISSION_POLICY: Schema =
    Schema::new(&[METADATA, ("spec", Field::Struct(&VALIDATING_ADMISSION_POLICY_SPEC))]);
static VALIDATING_ADMISSION_POLICY_SPEC: Schema =
    Schema::new(&[MATCH_CONDITIONS, ("variables", Field::Merge { key: Some("name"), item: &PLAIN })]);

/// `MutatingAdmissionPolicy`.
static MUTATING_ADMISSION_POLICY: Schema =
    Schema::new(&[METADATA, ("spec", Field::Struct(&MUTATING_ADMISSION_POLICY_SPEC))]);
static MUTATING_ADMISSION_POLICY_SPEC: Schema = Schema::new(&[MATCH_CONDITIONS]);

impl Admission {
    /// The kind as `versa-admission` names it.
    fn object_kind(&self) -> ObjectKind {
        match self.0 {
            AdmissionKind::ValidatingWebhookConfiguration => ObjectKind::ValidatingWebhookConfiguration,
            AdmissionKind::MutatingWebhookConfiguration => ObjectKind::MutatingWebhookConfiguration,
            AdmissionKind::ValidatingAdmissionPolicy => ObjectKind::ValidatingAdmissionPolicy,
            AdmissionKind::ValidatingAdmissionPolicyBinding => ObjectKind::ValidatingAdmissionPolicyBinding,
            AdmissionKind::MutatingAdmissionPolicy => ObjectKind::MutatingAdmissionPolicy,
            AdmissionKind::MutatingAdmissionPolicyBinding => ObjectKind::MutatingAdmissionPolicyBinding,
        }
    }

    /// Decodes and defaults `obj` as its typed kind; the unknown fields dropped.
    fn prepare(&self, res: &Resource, obj: &mut Value) -> Result<Vec<String>> {
        objects::prepare(self.object_kind(), obj).map_err(|errs| {
            let name = name_of(obj).to_owned();
            Error::invalid(&res.group, &res.kind, &name, errs)
        })
    }
}

impl KindRules for Admission {
    fn is_core(&self) -> bool {
        true
    }

    /// kube tracks the spec of the admission kinds (policies report `observedGeneration`).
    fn has_generation(&self) -> bool {
        true
    }

    /// A body that does not decode as the kind is kube's 400 (`... cannot be handled as a
    /// ...: json: cannot unmarshal ...`), with Go's decoder text.
    fn decode(&self, res: &Resource, ver: &Version, obj: &mut Value) -> Result<Vec<String>> {
        let mut unknown = custom::decode(ver, obj);
        match objects::prepare(self.object_kind(), obj) {
            Ok(dropped) => unknown.extend(dropped),
            Err(errs) => {
                let detail = errs.0.first().map(|e| e.detail.as_str()).unwrap_or_default();
                let kind = &res.kind;
                return Err(Error::BadRequest(format!(
                    "{kind} in version {:?} cannot be handled as a {kind}: {detail}",
                    ver.name
                )));
            }
        }
        Ok(unknown)
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
        // What mutating admission may have added is decoded and defaulted again.
        self.prepare(res, obj)?;
        let kind = self.object_kind();
        custom::admit(res, ver, obj, old, part, warnings, |obj, old| match (part, old) {
            (Part::Status, _) => ErrorList::new(),
            (_, Some(old)) => objects::validate_update(kind, obj, old),
            (_, None) => objects::validate_create(kind, obj),
        })
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(match self.0 {
            AdmissionKind::ValidatingWebhookConfiguration | AdmissionKind::MutatingWebhookConfiguration => {
                &WEBHOOK_CONFIGURATION
            }
            AdmissionKind::ValidatingAdmissionPolicy => &VALIDATING_ADMISSION_POLICY,
            AdmissionKind::MutatingAdmissionPolicy => &MUTATING_ADMISSION_POLICY,
            AdmissionKind::ValidatingAdmissionPolicyBinding | AdmissionKind::MutatingAdmissionPolicyBinding => {
                &METADATA_ONLY
            }
        })
    }
}
