//! `AdmissionReview` (`admission.k8s.io/v1` and `v1beta1`): the request a webhook is sent and
//! the checks kube-apiserver makes on its answer (`webhook/request/admissionreview.go`).
//!
//! The request is written straight from the attributes, borrowing the objects (no copy of
//! them is made). Both versions have the same request fields; `kind`, `resource` and
//! `subResource` are what the webhook's rules matched, `requestKind`, `requestResource` and
//! `requestSubResource` the request's own; `oldObject` and `object` are `null` when absent.
//!
//! The answer, as kube checks it: `v1` must be `admission.k8s.io/v1` `AdmissionReview` and echo
//! the request's `uid`; a mutating webhook's `patch` and `patchType` come together and the
//! type must be `JSONPatch`; a validating webhook may send neither. `v1beta1` answers are
//! taken as they are (no uid or kind check; a patch is JSON Patch).

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attributes::{Attributes, GroupVersionKind, GroupVersionResource};

/// The review version a webhook is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1beta1,
}

impl ReviewVersion {
    /// The first of `admissionReviewVersions` kube knows (`v1`, `v1beta1`).
    pub fn first_supported(versions: &[String]) -> Option<ReviewVersion> {
        versions.iter().find_map(|v| match v.as_str() {
            "v1" => Some(ReviewVersion::V1),
            "v1beta1" => Some(ReviewVersion::V1beta1),
            _ => None,
        })
    }

    fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => "admission.k8s.io/v1",
            ReviewVersion::V1beta1 => "admission.k8s.io/v1beta1",
        }
    }
}

#[derive(Serialize)]
struct Review<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    request: Request<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    uid: &'a str,
    kind: &'a GroupVersionKind,
    resource: &'a GroupVersionResource,
    #[serde(skip_serializing_if = "str::is_empty")]
    sub_resource: &'a str,
    request_kind: &'a GroupVersionKind,
    request_resource: &'a GroupVersionResource,
    #[serde(skip_serializing_if = "str::is_empty")]
    request_sub_resource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    operation: &'static str,
    user_info: UserInfo<'a>,
    object: Option<&'a Value>,
    old_object: Option<&'a Value>,
    dry_run: bool,
    options: Option<&'a Value>,
}

#[derive(Serialize)]
struct UserInfo<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extra: &'a BTreeMap<String, Vec<String>>,
}

/// What a webhook is asked about: the matched resource and kind, and the objects at that
/// kind's version.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Invocation<'a> {
    pub resource: &'a GroupVersionResource,
    pub kind: &'a GroupVersionKind,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
}

/// The review a webhook is sent, as JSON.
pub(crate) fn request_body(
    version: ReviewVersion,
    uid: &str,
    attrs: &Attributes,
    inv: &Invocation<'_>,
) -> Result<Vec<u8>, serde_json::Error> {
    let user = &attrs.user;
    let review = Review {
        api_version: version.api_version(),
        kind: "AdmissionReview",
        request: Request {
            uid,
            kind: inv.kind,
            resource: inv.resource,
            sub_resource: &attrs.subresource,
            request_kind: &attrs.kind,
            request_resource: &attrs.resource,
            request_sub_resource: &attrs.subresource,
            name: &attrs.name,
            namespace: &attrs.namespace,
            operation: attrs.operation.as_str(),
            user_info: UserInfo { username: &user.username, uid: &user.uid, groups: &user.groups, extra: &user.extra },
            object: inv.object,
            old_object: inv.old_object,
            dry_run: attrs.dry_run,
            options: attrs.options.as_ref(),
        },
    };
    serde_json::to_vec(&review)
}

/// A webhook's answer, decoded.
#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<AnswerResponse>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerResponse {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    allowed: bool,
    status: Option<Status>,
    /// base64, as Go writes a `[]byte`.
    patch: Option<String>,
    patch_type: Option<String>,
    audit_annotations: Option<BTreeMap<String, String>>,
    warnings: Option<Vec<String>>,
}

/// The answer, checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Response {
    pub allowed: bool,
    pub status: Option<Status>,
    /// The patch, when the webhook sent one, and its type (`JSONPatch` is the only one kube
    /// applies; another is an error only when there is something to apply).
    pub patch: Option<Vec<u8>>,
    pub patch_type: Option<String>,
    pub audit_annotations: BTreeMap<String, String>,
    pub warnings: Vec<String>,
}

/// Why an answer is not one: `decode` when it is not an AdmissionReview at all (kube: `failed
/// to call webhook: <decoding error>`), `invalid` when a check fails (`received invalid webhook
/// response: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AnswerError {
    Decode(String),
    Invalid(String),
}

/// Decodes and checks a webhook's answer to the review with `uid`.
pub(crate) fn check_answer(
    version: ReviewVersion,
    uid: &str,
    mutating: bool,
    body: &[u8],
) -> Result<Response, AnswerError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| AnswerError::Decode(e.to_string()))?;
    let invalid = |s: String| Err(AnswerError::Invalid(s));
    let Some(r) = answer.response else { return invalid("webhook response was absent".into()) };
    let patch = match &r.patch {
        Some(p) if !p.is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| AnswerError::Decode(format!("illegal base64 data in response.patch: {e}")))?,
        ),
        _ => None,
    };
    let mut response = Response {
        allowed: r.allowed,
        status: r.status,
        patch: None,
        patch_type: None,
        audit_annotations: r.audit_annotations.unwrap_or_default(),
        warnings: r.warnings.unwrap_or_default(),
    };
    match version {
        ReviewVersion::V1 => {
            if r.uid != uid {
                return invalid(format!("expected response.uid={uid:?}, got {:?}", r.uid));
            }
            // Go defaults a missing apiVersion/kind from the type it decodes into.
            let api_version = if answer.api_version.is_empty() { "admission.k8s.io/v1" } else { &answer.api_version };
            let kind = if answer.kind.is_empty() { "AdmissionReview" } else { &answer.kind };
            if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
                let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
                return invalid(format!(
                    "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{version}, Kind={kind}"
                ));
            }
            if mutating {
                match (&patch, &r.patch_type) {
                    (Some(_), None) => {
                        return invalid("webhook returned response.patch but not response.patchType".into());
                    }
                    (None, Some(_)) => {
                        return invalid("webhook returned response.patchType but not response.patch".into());
                    }
                    (_, Some(t)) if t.is_empty() => {
                        return invalid(format!("webhook returned invalid response.patchType of {t:?}"));
                    }
                    _ => {}
                }
                response.patch = patch;
                response.patch_type = r.patch_type;
            } else {
                if patch.is_some() {
                    return invalid("validating webhook may not return response.patch".into());
                }
                if r.patch_type.is_some() {
                    return invalid("validating webhook may not return response.patchType".into());
                }
            }
        }
        // Not checked in v1beta1; a patch is JSON Patch.
        ReviewVersion::V1beta1 => {
            if mutating && patch.is_some() {
                response.patch = patch;
                response.patch_type = Some("JSONPatch".into());
            }
        }
    }
    Ok(response)
}
