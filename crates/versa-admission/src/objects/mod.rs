//! The admission configuration objects as kube-apiserver writes them: decoded as the typed
//! kinds (`decode`), defaulted as `SetDefaults_*` of `pkg/apis/admissionregistration/v1` do
//! (`defaults`), and validated as `pkg/apis/admissionregistration/validation` does
//! (`webhooks`, `policies`, `bindings`, with what they share in `common`; a webhook's URL and
//! service are judged by `versa_apiextensions::validation::webhook`, apiserver's `util/webhook`
//! rules, which CRD conversion webhooks share). Pure: values in, values and field errors out; the registry calls [`prepare`] then
//! [`validate_create`] or [`validate_update`] on every write of the six kinds.
//!
//! Validation works on the decoded JSON, not on k8s-openapi's structs: those make some fields
//! required (`sideEffects`, a binding's `spec`) that kube decodes as absent and then refuses
//! with a field error, which is what a client must see.
//!
//! # What differs from kube
//!
//! - kube checks a new CEL expression in the environment of the current compatibility version
//!   and an expression kept from the old object in the stored-expressions environment (the
//!   `preexistingExpressions` of validation.go). versa-cel has one environment, so both are
//!   the same; only the skipping of unchanged matchConditions is kept.
//! - CEL compile errors are versa-cel's texts, which follow cel-go's (`compilation failed:
//!   ERROR: <input>:1:1: undeclared reference to 'params' (in container '')` with the source
//!   line and caret, `must evaluate to bool but got int`). One class is out of reach: a syntax
//!   error cel-go's ANTLR parser recovers from by inserting a token (`missing ']' at '<EOF>'`),
//!   which versa-cel reports as the input it did not expect (`mismatched input '<EOF>'
//!   expecting {...}`); `tests/data/objects.yaml` keeps both texts in its "known difference"
//!   case.
//! - A decode error is one field error (Go's decoder stops at the first) whose detail is Go's
//!   `json: cannot unmarshal ...` text; kube answers such a body with a 400 and that text. The
//!   first error is found in key order, Go finds it in document order.
//! - The static-configuration name suffix (`.static.k8s.io`) is refused only behind kube's
//!   alpha `ManifestBasedAdmissionControlConfig` gate, off by default: not checked.

mod bindings;
mod common;
mod decode;
mod defaults;
mod policies;
mod webhooks;

use serde_json::Value;
use versa_schema::field::ErrorList;

/// The admission configuration kinds (by `kind` name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    ValidatingWebhookConfiguration,
    MutatingWebhookConfiguration,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    MutatingAdmissionPolicy,
    MutatingAdmissionPolicyBinding,
}

impl ObjectKind {
    /// The kind named `kind`, if it is one of the six.
    pub fn of(kind: &str) -> Option<ObjectKind> {
        Some(match kind {
            "ValidatingWebhookConfiguration" => ObjectKind::ValidatingWebhookConfiguration,
            "MutatingWebhookConfiguration" => ObjectKind::MutatingWebhookConfiguration,
            "ValidatingAdmissionPolicy" => ObjectKind::ValidatingAdmissionPolicy,
            "ValidatingAdmissionPolicyBinding" => ObjectKind::ValidatingAdmissionPolicyBinding,
            "MutatingAdmissionPolicy" => ObjectKind::MutatingAdmissionPolicy,
            "MutatingAdmissionPolicyBinding" => ObjectKind::MutatingAdmissionPolicyBinding,
            _ => return None,
        })
    }

    /// The `kind` name.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::ValidatingWebhookConfiguration => "ValidatingWebhookConfiguration",
            ObjectKind::MutatingWebhookConfiguration => "MutatingWebhookConfiguration",
            ObjectKind::ValidatingAdmissionPolicy => "ValidatingAdmissionPolicy",
            ObjectKind::ValidatingAdmissionPolicyBinding => "ValidatingAdmissionPolicyBinding",
            ObjectKind::MutatingAdmissionPolicy => "MutatingAdmissionPolicy",
            ObjectKind::MutatingAdmissionPolicyBinding => "MutatingAdmissionPolicyBinding",
        }
    }
}

/// Decodes `obj` as the typed kind (unknown fields dropped), applies kube's v1 defaults
/// (SetDefaults_*: failurePolicy, matchPolicy, namespaceSelector/objectSelector {}, timeoutSeconds 10,
/// reinvocationPolicy, rule scope "*", service port 443, …), and writes it back into `obj` keeping
/// `metadata` as it was. Returns the dotted paths of the dropped unknown fields (for fieldValidation
/// warnings, like `unknown field "webhooks[0].foo"`), or a decode error as field errors (a value of the
/// wrong type: use kube's texts where you can).
pub fn prepare(kind: ObjectKind, obj: &mut Value) -> Result<Vec<String>, ErrorList> {
    let unknown = decode::decode(kind, obj).map_err(|e| ErrorList(vec![*e]))?;
    defaults::apply(kind, obj);
    Ok(unknown)
}

/// kube's create validation of the (prepared) object, every error, in kube's order.
pub fn validate_create(kind: ObjectKind, obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    match kind {
        ObjectKind::ValidatingWebhookConfiguration | ObjectKind::MutatingWebhookConfiguration => {
            webhooks::validate(kind, obj, &webhooks::Options::create(), &mut errs);
        }
        ObjectKind::ValidatingAdmissionPolicy => policies::validate_vap(obj, false, &mut errs),
        ObjectKind::MutatingAdmissionPolicy => policies::validate_map(obj, false, &mut errs),
        ObjectKind::ValidatingAdmissionPolicyBinding => bindings::validate(obj, false, &mut errs),
        ObjectKind::MutatingAdmissionPolicyBinding => bindings::validate(obj, true, &mut errs),
    }
    errs
}

/// kube's update validation (its ratcheting: e.g. preexisting match-condition expressions,
/// non-unique names and sideEffects kept from the old object, as validation.go's options do).
pub fn validate_update(kind: ObjectKind, new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    match kind {
        ObjectKind::ValidatingWebhookConfiguration | ObjectKind::MutatingWebhookConfiguration => {
            webhooks::validate(kind, new, &webhooks::Options::update(new, old), &mut errs);
        }
        ObjectKind::ValidatingAdmissionPolicy => {
            policies::validate_vap(new, policies::match_conditions_unchanged(new, old), &mut errs);
        }
        ObjectKind::MutatingAdmissionPolicy => {
            policies::validate_map(new, policies::match_conditions_unchanged(new, old), &mut errs);
        }
        // A binding's update is validated as its create.
        ObjectKind::ValidatingAdmissionPolicyBinding => bindings::validate(new, false, &mut errs),
        ObjectKind::MutatingAdmissionPolicyBinding => bindings::validate(new, true, &mut errs),
    }
    errs
}

/// The non-null value at `key` of an object.
fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

/// The string at `key` (absent: `None`; decoding made sure it is a string if present).
fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The string at `key`, `""` when absent (Go's zero value).
fn string_at<'a>(v: &'a Value, key: &str) -> &'a str {
    str_at(v, key).unwrap_or("")
}

/// The list at `key`, empty when absent.
fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The strings of the list at `key`.
fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    items(v, key).iter().filter_map(Value::as_str).collect()
}
