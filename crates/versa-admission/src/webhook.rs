//! Admission webhooks (`ValidatingWebhookConfiguration`, `MutatingWebhookConfiguration`):
//! each webhook compiled once ([`Webhook`]), and the two dispatchers of kube's
//! `webhook/validating` and `webhook/mutating`.
//!
//! A webhook is called when it matches ([`crate::matching`]) and its `matchConditions` all
//! hold (CEL, evaluated on the objects at the matched version; one that is false skips the
//! webhook, errors follow the `failurePolicy`). The call:
//!
//! 1. on a dry run, `sideEffects` must be `None` or `NoneOnDryRun` (400 `admission webhook
//!    "<name>" does not support dry run` otherwise, whatever the failure policy);
//! 2. an `AdmissionReview` of the first version of `admissionReviewVersions` kube knows is
//!    POSTed through the webhook's client (versa-webhook's: caBundle or system roots,
//!    `?timeout=`, `timeoutSeconds` bounding the whole call, 10 s by default);
//! 3. the answer is checked ([`crate::review`]); its audit annotations (`<webhook>/<key>`) and
//!    warnings are kept;
//! 4. `allowed: false` is a denial with the webhook's status (code at least 400, message
//!    `admission webhook "<name>" denied the request: <message>`);
//! 5. a mutating webhook's JSON Patch is applied to the object it was sent.
//!
//! Failures to call or to understand a webhook are kube's `ErrCallingWebhook` (`failed
//! calling webhook "<name>": ...`): with `failurePolicy: Ignore` the webhook is skipped (and a
//! `failed-open...` audit annotation says so), with `Fail` (the default) the request fails
//! with 500 `Internal error occurred: failed calling webhook ...`.
//!
//! Validating webhooks that apply are called concurrently, and the first error in webhook
//! order is the answer; mutating webhooks are called one after the other, each on the object
//! the previous one patched, and remember what reinvocation needs ([`Reinvocation`]).

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::join_all;
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, RuleWithOperations, ValidatingWebhook, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Status};
use serde::Serialize;
use serde_json::Value;
use versa_webhook::{Endpoint, ServiceResolver, WebhookClient};

use crate::attributes::Attributes;
use crate::error::{AdmissionError, Outcome, WebhookCall, go_quote};
use crate::expression::{Declarations, Expression, Inputs, Returns, Uses, evaluate_conditions};
use crate::matching::{Criteria, Matched, RequestState, matches};
use crate::patch::apply_json_patch;
use crate::reinvocation::Reinvocation;
use crate::review::{AnswerError, Invocation, ReviewVersion, check_answer, request_body};
use crate::rules::Rule;
use crate::selector::Selector;
use crate::versioned::{Versions, objects};

/// The timeout of a webhook without `timeoutSeconds` (the API's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A compiled webhook.
#[derive(Debug)]
pub(crate) struct Webhook {
    /// `<configuration>/<webhook>/<n>`, the n-th webhook of that name in its configuration.
    pub uid: String,
    pub name: String,
    pub configuration: String,
    pub criteria: Criteria,
    pub conditions: Vec<(String, Expression)>,
    /// Which costlier inputs the conditions read.
    pub uses: Uses,
    /// `failurePolicy: Ignore`.
    pub fail_open: bool,
    pub side_effects: String,
    pub review: Option<ReviewVersion>,
    pub client: Result<WebhookClient, String>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke: bool,
    pub mutating: bool,
}

/// The fields validating and mutating webhooks share.
pub(crate) struct WebhookSpec<'a> {
    pub name: &'a str,
    pub client_config: &'a WebhookClientConfig,
    pub review_versions: &'a [String],
    pub failure_policy: Option<&'a str>,
    pub match_conditions: Option<&'a Vec<MatchCondition>>,
    pub match_policy: Option<&'a str>,
    pub namespace_selector: Option<&'a LabelSelector>,
    pub object_selector: Option<&'a LabelSelector>,
    pub rules: Option<&'a Vec<RuleWithOperations>>,
    pub side_effects: &'a str,
    pub timeout_seconds: Option<i32>,
    pub reinvocation_policy: Option<&'a str>,
}

impl<'a> WebhookSpec<'a> {
    pub fn validating(h: &'a ValidatingWebhook) -> WebhookSpec<'a> {
        WebhookSpec {
            name: &h.name,
            client_config: &h.client_config,
            review_versions: &h.admission_review_versions,
            failure_policy: h.failure_policy.as_deref(),
            match_conditions: h.match_conditions.as_ref(),
            match_policy: h.match_policy.as_deref(),
            namespace_selector: h.namespace_selector.as_ref(),
            object_selector: h.object_selector.as_ref(),
            rules: h.rules.as_ref(),
            side_effects: &h.side_effects,
            timeout_seconds: h.timeout_seconds,
            reinvocation_policy: None,
        }
    }

    pub fn mutating(h: &'a MutatingWebhook) -> WebhookSpec<'a> {
        WebhookSpec {
            name: &h.name,
            client_config: &h.client_config,
            review_versions: &h.admission_review_versions,
            failure_policy: h.failure_policy.as_deref(),
            match_conditions: h.match_conditions.as_ref(),
            match_policy: h.match_policy.as_deref(),
            namespace_selector: h.namespace_selector.as_ref(),
            object_selector: h.object_selector.as_ref(),
            rules: h.rules.as_ref(),
            side_effects: &h.side_effects,
            timeout_seconds: h.timeout_seconds,
            reinvocation_policy: h.reinvocation_policy.as_deref(),
        }
    }
}

impl Webhook {
    /// Compiles a webhook; what does not compile is kept and reported when the webhook is
    /// needed, as kube does. `problems` receives a line for each such part.
    pub fn build(
        uid: String,
        configuration: &str,
        spec: &WebhookSpec<'_>,
        mutating: bool,
        resolver: Option<&dyn ServiceResolver>,
        problems: &mut Vec<String>,
    ) -> Webhook {
        let rules = spec.rules.iter().flat_map(|r| r.iter()).map(Rule::from_webhook).collect();
        let criteria = Criteria::webhook(
            rules,
            Selector::compile(spec.namespace_selector),
            Selector::compile(spec.object_selector),
            spec.match_policy,
        );
        for (what, s) in
            [("namespaceSelector", &criteria.namespace_selector), ("objectSelector", &criteria.object_selector)]
        {
            if let Err(e) = s {
                problems.push(format!("{what}: {e}"));
            }
        }
        let decls = Declarations { authorizer: true, ..Declarations::default() };
        let conditions: Vec<(String, Expression)> = spec
            .match_conditions
            .iter()
            .flat_map(|c| c.iter())
            .map(|c| (c.name.clone(), Expression::compile(&c.expression, &decls, Returns::Bool)))
            .collect();
        for (name, e) in &conditions {
            if let Err(err) = &e.compiled {
                problems.push(format!("matchConditions {name:?}: {err}"));
            }
        }
        let timeout = match spec.timeout_seconds {
            Some(t) if t > 0 => Duration::from_secs(u64::from(t.unsigned_abs())),
            _ => DEFAULT_TIMEOUT,
        };
        let cc = spec.client_config;
        let endpoint = match (&cc.service, &cc.url) {
            (Some(s), _) => Some(Endpoint::Service {
                namespace: &s.namespace,
                name: &s.name,
                port: s.port,
                path: s.path.as_deref(),
            }),
            (None, Some(url)) => Some(Endpoint::Url(url)),
            (None, None) => None,
        };
        let client = match endpoint {
            Some(endpoint) => {
                let ca = cc.ca_bundle.as_ref().map(|b| b.0.as_slice());
                WebhookClient::for_endpoint(spec.name, endpoint, ca, timeout, resolver).map_err(|e| e.to_string())
            }
            None => Err(format!(
                "failed calling webhook {}: webhook configuration must have either service or URL",
                go_quote(spec.name)
            )),
        };
        if let Err(e) = &client {
            problems.push(format!("clientConfig: {e}"));
        }
        let review = ReviewVersion::first_supported(spec.review_versions);
        if review.is_none() {
            problems.push("admissionReviewVersions: no version kube knows (v1, v1beta1)".into());
        }
        Webhook {
            uid,
            name: spec.name.to_owned(),
            configuration: configuration.to_owned(),
            criteria,
            uses: Uses::of(conditions.iter().map(|(_, e)| e)),
            conditions,
            fail_open: spec.failure_policy == Some("Ignore"),
            side_effects: spec.side_effects.to_owned(),
            review,
            client,
            reinvoke: spec.reinvocation_policy == Some("IfNeeded"),
            mutating,
        }
    }

    /// kube's `ShouldCallHook`: the resource and kind to call the webhook with, `None` to skip
    /// it.
    pub async fn should_call(
        &self,
        attrs: &Attributes,
        state: &mut RequestState<'_>,
        versions: &mut Versions,
    ) -> Result<Option<Matched>, AdmissionError> {
        let Some(matched) = matches(&self.criteria, attrs, state).await? else { return Ok(None) };
        if self.conditions.is_empty() {
            return Ok(Some(matched));
        }
        let converted = versions.get(attrs, &matched.kind, &state.host).await?;
        let (object, old_object) = objects(attrs, &converted);
        // kube builds this request from the request's resource and the matched kind.
        let request = self.uses.request.then(|| state.request(attrs, &attrs.resource, &matched.kind));
        let authz = if self.uses.authorizer { state.authz(attrs) } else { None };
        let inputs = Inputs {
            object,
            old_object,
            request: request.as_deref(),
            namespace: None,
            params: None,
            authz: authz.as_deref(),
        };
        match evaluate_conditions(&self.conditions, inputs, None, !self.fail_open) {
            Ok(true) => Ok(Some(matched)),
            Ok(false) => Ok(None),
            Err(e) => {
                tracing::warn!(webhook = %self.name, error = %e, "failed evaluating match conditions, failing closed");
                Err(AdmissionError::forbidden(&attrs.resource.group, &attrs.resource.resource, &attrs.name, &e))
            }
        }
    }
}

/// Why a call did not admit.
enum CallError {
    /// kube's `ErrCallingWebhook`: the failure policy decides. The text is the error's, the
    /// code the one kube's metrics record.
    Calling(String, u16),
    /// The webhook said no.
    Rejected(Box<Status>),
    /// Returned as it is, whatever the failure policy.
    Other(AdmissionError),
}

/// What a call brought back.
#[derive(Default)]
struct Answer {
    outcome: Outcome,
    /// The object as the mutating webhook patched it, when it did.
    patched: Option<Value>,
    /// The patch, for the audit annotation.
    patch: Option<Value>,
}

impl Webhook {
    /// kube's `ErrCallingWebhook`, with the status code its metrics record (503 for a call that
    /// failed or an answer that is not one, as kube's `NewServiceUnavailable`).
    fn calling(&self, reason: impl std::fmt::Display) -> CallError {
        self.calling_with(503, reason)
    }

    fn calling_with(&self, code: u16, reason: impl std::fmt::Display) -> CallError {
        CallError::Calling(format!("failed calling webhook {}: {reason}", go_quote(&self.name)), code)
    }

    /// kube's `callHook` / `callAttrMutatingHook`, up to (not including) the patch.
    async fn call(&self, attrs: &Attributes, inv: &Invocation<'_>) -> Result<Answer, CallError> {
        if attrs.dry_run {
            if self.side_effects.is_empty() {
                return Err(self.calling_with(400, "Webhook SideEffects is nil"));
            }
            if !matches!(self.side_effects.as_str(), "None" | "NoneOnDryRun") {
                return Err(CallError::Other(AdmissionError::bad_request(format!(
                    "admission webhook {} does not support dry run",
                    go_quote(&self.name)
                ))));
            }
        }
        let Some(version) = self.review else {
            return Err(self.calling_with(
                400,
                "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)",
            ));
        };
        let uid = new_uid();
        let body = request_body(version, &uid, attrs, inv)
            .map_err(|e| self.calling_with(400, format!("could not create admission objects: {e}")))?;
        let client =
            self.client.as_ref().map_err(|e| self.calling_with(500, format!("could not get REST client: {e}")))?;
        let answer =
            client.post(Bytes::from(body)).await.map_err(|e| self.calling(format!("failed to call webhook: {e}")))?;
        let response = check_answer(version, &uid, self.mutating, &answer).map_err(|e| match e {
            AnswerError::Decode(e) => self.calling(format!("failed to call webhook: {e}")),
            AnswerError::Invalid(e) => self.calling(format!("received invalid webhook response: {e}")),
        })?;
        let mut out = Answer::default();
        for (k, v) in response.audit_annotations {
            out.outcome.annotate(format!("{}/{k}", self.name), v);
        }
        for w in response.warnings {
            out.outcome.warn(w);
        }
        if !response.allowed {
            return Err(CallError::Rejected(Box::new(denial_status(&self.name, response.status))));
        }
        if !self.mutating {
            return Ok(out);
        }
        let Some(patch) = response.patch else { return Ok(out) };
        let patch: Vec<serde_json::Map<String, Value>> = serde_json::from_slice(&patch)
            .map_err(|e| self.calling(format!("received undecodable patch in webhook response: {e}")))?;
        if patch.is_empty() {
            return Ok(out);
        }
        let Some(object) = inv.object else {
            return Err(CallError::Other(AdmissionError::internal(format!(
                "admission webhook {} attempted to modify the object, which is not supported for this operation",
                go_quote(&self.name)
            ))));
        };
        match response.patch_type.as_deref() {
            Some("JSONPatch") => {}
            other => {
                return Err(self.calling_with(400, format!("unsupported patch type {}", go_quote(other.unwrap_or("")))));
            }
        }
        let patched =
            apply_json_patch(object, &patch).map_err(|e| CallError::Other(AdmissionError::internal(e.to_string())))?;
        out.patched = Some(patched);
        out.patch = Some(Value::Array(patch.into_iter().map(Value::Object).collect()));
        Ok(out)
    }
}

/// kube's `ToStatusErr`: the webhook's status made a failure (code at least 400), its message
/// prefixed with who denied.
pub(crate) fn denial_status(webhook: &str, status: Option<Status>) -> Status {
    let mut s = status.unwrap_or_else(|| Status { status: Some("Failure".into()), ..Status::default() });
    if s.code.is_none_or(|c| c < 400) {
        s.code = Some(400);
    }
    if matches!(s.status.as_deref(), None | Some("") | Some("Success")) {
        s.status = Some("Failure".into());
    }
    let denied_by = format!("admission webhook {} denied the request", go_quote(webhook));
    let message = s.message.as_deref().unwrap_or("");
    let reason = s.reason.as_deref().unwrap_or("");
    s.message = Some(if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    });
    s
}

/// A random (version 4) UUID for a review.
pub(crate) fn new_uid() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut b).is_err() {
        // No randomness: a uid that still differs per call.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        b = nanos.to_le_bytes();
    }
    versa_schema::objectmeta::uuid_v4(b)
}

/// Validating webhooks: the ones that apply, called concurrently.
pub(crate) async fn validate(
    hooks: &[Webhook],
    attrs: &Attributes,
    state: &mut RequestState<'_>,
    outcome: &mut Outcome,
) -> Result<(), AdmissionError> {
    let mut versions = Versions::default();
    let mut relevant = Vec::new();
    for hook in hooks {
        if let Some(m) = hook.should_call(attrs, state, &mut versions).await? {
            let converted = versions.get(attrs, &m.kind, &state.host).await?;
            relevant.push((hook, m, converted));
        }
    }
    if relevant.is_empty() {
        return Ok(());
    }
    let calls = relevant.iter().map(|(hook, m, converted)| async move {
        let (object, old_object) = objects(attrs, converted);
        let inv = Invocation { resource: &m.resource, kind: &m.kind, object, old_object };
        let started = Instant::now();
        let result = hook.call(attrs, &inv).await;
        (result, started.elapsed())
    });
    let results = join_all(calls).await;
    let mut first_error = None;
    for (idx, ((hook, _, _), (result, elapsed))) in relevant.iter().zip(results).enumerate() {
        outcome.webhook_calls.push(observe(hook, "validating", attrs, elapsed, &result));
        let err = match result {
            Ok(answer) => {
                merge(outcome, answer.outcome);
                continue;
            }
            Err(e) => e,
        };
        let err = match err {
            CallError::Calling(text, _) if hook.fail_open => {
                tracing::warn!(webhook = %hook.name, error = %text, "failed calling webhook, failing open");
                outcome.annotate(
                    format!("failed-open.validating.webhook.admission.k8s.io/round_0_index_{idx}"),
                    hook.name.clone(),
                );
                continue;
            }
            CallError::Calling(text, _) => AdmissionError::webhook_failed(text),
            CallError::Rejected(status) => AdmissionError::WebhookDenied(status),
            CallError::Other(e) => e,
        };
        first_error.get_or_insert(err);
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What kube's webhook metrics record of a call.
fn observe(
    hook: &Webhook,
    step: &'static str,
    attrs: &Attributes,
    elapsed: Duration,
    result: &Result<Answer, CallError>,
) -> WebhookCall {
    let (rejected, code, rejection, failed_open) = match result {
        Ok(_) => (false, 200, None, false),
        Err(CallError::Calling(_, code)) if hook.fail_open => (false, *code, None, true),
        Err(CallError::Calling(_, code)) => (true, *code, Some("calling_webhook_error"), false),
        Err(CallError::Rejected(status)) => {
            let code = status.code.and_then(|c| u16::try_from(c).ok()).unwrap_or(400);
            (true, code, Some("no_error"), false)
        }
        Err(CallError::Other(_)) => (true, 0, Some("apiserver_internal_error"), false),
    };
    WebhookCall {
        name: hook.name.clone(),
        step,
        operation: attrs.operation,
        elapsed,
        rejected,
        code: code.min(600),
        rejection,
        failed_open,
    }
}

fn merge(into: &mut Outcome, from: Outcome) {
    for w in from.warnings {
        into.warn(w);
    }
    for (k, v) in from.audit_annotations {
        into.annotate(k, v);
    }
}

#[derive(Serialize)]
struct MutationAnnotation<'a> {
    configuration: &'a str,
    webhook: &'a str,
    mutated: bool,
}

#[derive(Serialize)]
struct PatchAnnotation<'a> {
    configuration: &'a str,
    webhook: &'a str,
    patch: &'a Value,
    #[serde(rename = "patchType")]
    patch_type: &'static str,
}

/// Mutating webhooks, in order, for one round (0, or 1 when reinvoked). Returns whether the
/// object changed (the chain then reinvokes).
pub(crate) async fn mutate(
    hooks: &[Webhook],
    attrs: &mut Attributes,
    state: &mut RequestState<'_>,
    outcome: &mut Outcome,
    round: u8,
    reinvocation: &mut Reinvocation,
) -> Result<bool, AdmissionError> {
    let reinvoking = round > 0;
    if reinvoking && reinvocation.changed_since_last_output(&attrs.object) {
        reinvocation.require_reinvoking_previous();
    }
    let result = mutate_round(hooks, attrs, state, outcome, round, reinvocation).await;
    reinvocation.set_last_output(&attrs.object);
    result
}

async fn mutate_round(
    hooks: &[Webhook],
    attrs: &mut Attributes,
    state: &mut RequestState<'_>,
    outcome: &mut Outcome,
    round: u8,
    reinvocation: &mut Reinvocation,
) -> Result<bool, AdmissionError> {
    let mut versions = Versions::default();
    let mut any_change = false;
    for (i, hook) in hooks.iter().enumerate() {
        let Some(m) = hook.should_call(attrs, state, &mut versions).await? else { continue };
        // A webhook is never called for the first time in a reinvocation round.
        if round > 0 && !reinvocation.should_reinvoke(&hook.uid) {
            continue;
        }
        let converted = versions.get(attrs, &m.kind, &state.host).await?;
        let (object, old_object) = objects(attrs, &converted);
        let inv = Invocation { resource: &m.resource, kind: &m.kind, object, old_object };
        let started = Instant::now();
        let result = hook.call(attrs, &inv).await;
        outcome.webhook_calls.push(observe(hook, "admit", attrs, started.elapsed(), &result));
        let mut changed = false;
        let result = match result {
            Ok(answer) => {
                merge(outcome, answer.outcome);
                if let (Some(patched), Some(patch)) = (answer.patched, answer.patch) {
                    changed = inv.object != Some(&patched);
                    let annotation = PatchAnnotation {
                        configuration: &hook.configuration,
                        webhook: &hook.name,
                        patch: &patch,
                        patch_type: "JSONPatch",
                    };
                    outcome.annotate(
                        format!("patch.webhook.admission.k8s.io/round_{round}_index_{i}"),
                        serde_json::to_string(&annotation).unwrap_or_default(),
                    );
                    // Back at the request's version.
                    let patched = match &converted {
                        Some(_) => state.host.resources.convert(&patched, &attrs.kind).await?,
                        None => patched,
                    };
                    attrs.object = Some(patched);
                    versions.invalidate();
                }
                Ok(())
            }
            Err(e) => Err(e),
        };
        let mutation = MutationAnnotation { configuration: &hook.configuration, webhook: &hook.name, mutated: changed };
        outcome.annotate(
            format!("mutation.webhook.admission.k8s.io/round_{round}_index_{i}"),
            serde_json::to_string(&mutation).unwrap_or_default(),
        );
        if changed {
            reinvocation.require_reinvoking_previous();
            any_change = true;
        }
        if hook.reinvoke {
            reinvocation.invoked(hook.uid.clone());
        }
        match result {
            Ok(()) => {}
            Err(CallError::Calling(text, _)) if hook.fail_open => {
                tracing::warn!(webhook = %hook.name, error = %text, "failed calling webhook, failing open");
                outcome.annotate(
                    format!("failed-open.mutation.webhook.admission.k8s.io/round_{round}_index_{i}"),
                    hook.name.clone(),
                );
            }
            Err(CallError::Calling(text, _)) => return Err(AdmissionError::webhook_failed(text)),
            Err(CallError::Rejected(status)) => return Err(AdmissionError::WebhookDenied(status)),
            Err(CallError::Other(e)) => return Err(e),
        }
    }
    Ok(any_change)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn denials_as_kube_words_them() {
        let s = denial_status("x.example.com", None);
        assert_eq!(
            s.message.as_deref(),
            Some(r#"admission webhook "x.example.com" denied the request without explanation"#)
        );
        assert_eq!(s.code, Some(400));
        let s = denial_status(
            "x.example.com",
            Some(Status { code: Some(403), message: Some("no".into()), ..Status::default() }),
        );
        assert_eq!(s.message.as_deref(), Some(r#"admission webhook "x.example.com" denied the request: no"#));
        assert_eq!(s.code, Some(403));
        assert_eq!(s.status.as_deref(), Some("Failure"));
    }

    #[test]
    fn uids_are_uuids() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, new_uid());
    }
}
