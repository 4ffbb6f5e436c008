//! The admission configuration kinds (standalone; `admissionregistration.k8s.io/v1`
//! ValidatingWebhookConfiguration, MutatingWebhookConfiguration, ValidatingAdmissionPolicy,
//! MutatingAdmissionPolicy and their bindings): kept as they come, like custom resources with
//! an open schema; `versa-admission` compiles them when the configuration is built.

use super::KindRules;
use crate::resource::AdmissionKind;

/// The rules of one admission configuration kind.
#[derive(Debug)]
pub struct Admission;

/// The rules of `kind`.
pub fn rules(_kind: AdmissionKind) -> &'static Admission {
    &Admission
}

impl KindRules for Admission {}
