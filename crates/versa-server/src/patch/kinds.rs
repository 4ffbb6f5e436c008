//! The strategic-merge metadata of the built-in kinds versa serves: for each kind, the fields
//! whose Go type in `k8s.io/api` carries `patchStrategy:"merge"` (with its `patchMergeKey`),
//! and the struct fields that lead to them. Every other field has no strategy: maps merge, lists
//! are replaced — including lists marked `+listType=map` or `+listType=set` without the struct
//! tag, which strategic merge patch ignores (`ValidatingAdmissionPolicyStatus.conditions`,
//! `ValidatingAdmissionPolicyBindingSpec.validationActions`, `MutatingAdmissionPolicySpec.variables`).
//!
//! The tables live with the algorithm rather than with the kinds' write rules
//! (`versa_registry::builtin`): nothing else reads them, they are the Go struct tags of one
//! wire format, and [`schema`] matches every [`Builtin`] so a new built-in kind cannot be
//! served without deciding its patch metadata.
//!
//! Sources (Kubernetes `staging/src/k8s.io/`): `apimachinery/pkg/apis/meta/v1/types.go`
//! (`ObjectMeta.finalizers`: merge; `ObjectMeta.ownerReferences`: merge on `uid`),
//! `api/core/v1/types.go` (`NamespaceStatus.conditions`: merge on `type`; `NamespaceSpec`,
//! `Secret`, `Event`: none), `api/events/v1/types.go` (none), `api/admissionregistration/v1/types.go`
//! (`{Validating,Mutating}WebhookConfiguration.webhooks`: merge on `name`; each webhook's
//! `matchConditions`: merge on `name`; `ValidatingAdmissionPolicySpec.matchConditions` and
//! `.variables`: merge on `name`; `MutatingAdmissionPolicySpec.matchConditions`: merge on
//! `name`; the bindings: none).

use versa_registry::{AdmissionKind, Builtin};

use super::strategic::{Field, PLAIN, Schema};

/// The strategic-merge metadata of a built-in kind.
pub fn schema(builtin: Builtin) -> &'static Schema {
    match builtin {
        Builtin::Namespace => &NAMESPACE,
        Builtin::Secret | Builtin::Event | Builtin::EventV1 => &METADATA_ONLY,
        Builtin::Admission(kind) => match kind {
            AdmissionKind::ValidatingWebhookConfiguration | AdmissionKind::MutatingWebhookConfiguration => {
                &WEBHOOK_CONFIGURATION
            }
            AdmissionKind::ValidatingAdmissionPolicy => &VALIDATING_ADMISSION_POLICY,
            AdmissionKind::MutatingAdmissionPolicy => &MUTATING_ADMISSION_POLICY,
            AdmissionKind::ValidatingAdmissionPolicyBinding | AdmissionKind::MutatingAdmissionPolicyBinding => {
                &METADATA_ONLY
            }
        },
    }
}

/// `metav1.ObjectMeta`.
static OBJECT_META: Schema = Schema::new(&[
    ("finalizers", Field::Merge { key: None, item: &PLAIN }),
    ("ownerReferences", Field::Merge { key: Some("uid"), item: &PLAIN }),
]);

const METADATA: (&str, Field) = ("metadata", Field::Struct(&OBJECT_META));

/// A kind whose only special fields are its metadata's.
static METADATA_ONLY: Schema = Schema::new(&[METADATA]);

/// `corev1.Namespace`.
static NAMESPACE: Schema = Schema::new(&[METADATA, ("status", Field::Struct(&NAMESPACE_STATUS))]);
static NAMESPACE_STATUS: Schema = Schema::new(&[("conditions", Field::Merge { key: Some("type"), item: &PLAIN })]);

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
