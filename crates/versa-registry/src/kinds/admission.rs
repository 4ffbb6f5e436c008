//! The admission configuration kinds (standalone; `admissionregistration.k8s.io/v1`
//! ValidatingWebhookConfiguration, MutatingWebhookConfiguration, ValidatingAdmissionPolicy,
//! MutatingAdmissionPolicy and their bindings): decoded as their typed kind (unknown fields
//! dropped and reported, kube's v1 defaults applied) and validated with kube's rules, both
//! `versa_admission::objects`'; a policy's `/status` is not validated. Their strategic merge
//! patch metadata is their Go types' (`k8s.io/api/admissionregistration/v1`):
//! `webhooks` merge on `name`, and so do each webhook's and each policy's `matchConditions` and
//! a ValidatingAdmissionPolicy's `variables`; the bindings have none.

use serde_json::Value;
use versa_admission::objects::{self, ObjectKind};
use versa_schema::ErrorList;

use super::patch::{Field, METADATA, METADATA_ONLY, PLAIN, Schema};
use super::{KindRules, Part, custom};
use crate::error::{Error, Result};
use crate::meta::name_of;
use crate::resource::{AdmissionKind, Resource, Version};

/// The rules of one admission configuration kind.
#[derive(Debug)]
pub struct Admission(AdmissionKind);

static VALIDATING_WEBHOOKS: Admission = Admission(AdmissionKind::ValidatingWebhookConfiguration);
static MUTATING_WEBHOOKS: Admission = Admission(AdmissionKind::MutatingWebhookConfiguration);
static VALIDATING_POLICIES: Admission = Admission(AdmissionKind::ValidatingAdmissionPolicy);
static VALIDATING_BINDINGS: Admission = Admission(AdmissionKind::ValidatingAdmissionPolicyBinding);
static MUTATING_POLICIES: Admission = Admission(AdmissionKind::MutatingAdmissionPolicy);
static MUTATING_BINDINGS: Admission = Admission(AdmissionKind::MutatingAdmissionPolicyBinding);

/// The rules of `kind`.
pub fn rules(kind: AdmissionKind) -> &'static Admission {
    match kind {
        AdmissionKind::ValidatingWebhookConfiguration => &VALIDATING_WEBHOOKS,
        AdmissionKind::MutatingWebhookConfiguration => &MUTATING_WEBHOOKS,
        AdmissionKind::ValidatingAdmissionPolicy => &VALIDATING_POLICIES,
        AdmissionKind::ValidatingAdmissionPolicyBinding => &VALIDATING_BINDINGS,
        AdmissionKind::MutatingAdmissionPolicy => &MUTATING_POLICIES,
        AdmissionKind::MutatingAdmissionPolicyBinding => &MUTATING_BINDINGS,
    }
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

    fn takes_protobuf(&self) -> bool {
        true
    }

    fn allows_unconditional_update(&self) -> bool {
        true
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
