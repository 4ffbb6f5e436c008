//! The admission configuration kinds (standalone; `admissionregistration.k8s.io/v1`
//! ValidatingWebhookConfiguration, MutatingWebhookConfiguration, ValidatingAdmissionPolicy,
//! MutatingAdmissionPolicy and their bindings): kept as they come, like custom resources with
//! an open schema; `versa-admission` compiles them when the configuration is built. Their
//! strategic merge patch metadata is their Go types' (`k8s.io/api/admissionregistration/v1`):
//! `webhooks` merge on `name`, and so do each webhook's and each policy's `matchConditions` and
//! a ValidatingAdmissionPolicy's `variables`; the bindings have none.

use super::KindRules;
use super::patch::{Field, METADATA, METADATA_ONLY, PLAIN, Schema};
use crate::resource::AdmissionKind;

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

impl KindRules for Admission {
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
