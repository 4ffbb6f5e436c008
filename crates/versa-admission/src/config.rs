//! [`Configuration`]: every admission configuration compiled once — webhooks with their
//! clients, policies with their CEL programs and bindings, selectors and rules — and the chain
//! that runs them ([`Configuration::mutate`], [`Configuration::validate`]).
//!
//! Built from the `admissionregistration.k8s.io/v1` objects whenever one of them changes and
//! swapped whole (share it behind an `Arc`); a request never compiles anything. What does not
//! compile is reported ([`Problem`]) and kept, to fail (or be ignored) when a request needs it,
//! as kube does.
//!
//! Order, as kube's: webhook configurations by name, their webhooks as listed; policies by
//! name, each with its bindings by name (bindings of a missing policy, and policies without
//! bindings, do nothing).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, MutatingWebhookConfiguration, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding, ValidatingWebhookConfiguration,
};
use versa_webhook::ServiceResolver;

use crate::attributes::Attributes;
use crate::dispatch::Policy as _;
use crate::error::{AdmissionError, Outcome};
use crate::matching::RequestState;
use crate::mutating_policy::{self, MutatingPolicy};
use crate::reinvocation::Reinvocation;
use crate::seams::Host;
use crate::validating_policy::{self, ValidatingPolicy};
use crate::webhook::{self, Webhook, WebhookSpec};

/// The configuration objects to build from (any order).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sources<'a> {
    pub validating_webhooks: &'a [ValidatingWebhookConfiguration],
    pub mutating_webhooks: &'a [MutatingWebhookConfiguration],
    pub validating_policies: &'a [ValidatingAdmissionPolicy],
    pub validating_bindings: &'a [ValidatingAdmissionPolicyBinding],
    pub mutating_policies: &'a [MutatingAdmissionPolicy],
    pub mutating_bindings: &'a [MutatingAdmissionPolicyBinding],
}

/// How to build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Where Services of webhooks' `clientConfig.service` are reached; without one, at
    /// `<name>.<namespace>.svc` through DNS.
    pub service_resolver: Option<Arc<dyn ServiceResolver>>,
}

/// Something in a configuration object that does not compile (the object is still used, as
/// kube uses it: the part fails when a request needs it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// `ValidatingWebhookConfiguration`, `ValidatingAdmissionPolicy`, ...
    pub kind: &'static str,
    /// The object's name (and the webhook's: `config/webhook`).
    pub name: String,
    pub message: String,
}

/// Every admission configuration, compiled. Cheap to share; rebuilt whole when a
/// configuration object changes.
#[derive(Debug, Default)]
pub struct Configuration {
    validating_webhooks: Vec<Webhook>,
    mutating_webhooks: Vec<Webhook>,
    validating_policies: Vec<ValidatingPolicy>,
    mutating_policies: Vec<MutatingPolicy>,
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

/// kube's webhook uids: `<configuration>/<webhook>/<n>` for the n-th webhook of that name.
fn uids<'a>(configuration: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    names
        .map(|n| {
            let count = seen.entry(n).or_insert(0);
            let uid = format!("{configuration}/{n}/{count}");
            *count += 1;
            uid
        })
        .collect()
}

impl Configuration {
    /// Compiles `sources`. Never fails: what does not compile is in the problems.
    pub fn build(sources: &Sources<'_>, options: &BuildOptions) -> (Configuration, Vec<Problem>) {
        let resolver = options.service_resolver.as_deref();
        let mut problems = Vec::new();
        let mut out = Configuration::default();

        let mut vwcs: Vec<&ValidatingWebhookConfiguration> = sources.validating_webhooks.iter().collect();
        vwcs.sort_by_key(|c| name_of(&c.metadata));
        for c in vwcs {
            let cname = name_of(&c.metadata);
            let hooks = c.webhooks.as_deref().unwrap_or_default();
            for (h, uid) in hooks.iter().zip(uids(&cname, hooks.iter().map(|h| h.name.as_str()))) {
                let mut lines = Vec::new();
                let w = Webhook::build(uid, &cname, &WebhookSpec::validating(h), false, resolver, &mut lines);
                collect("ValidatingWebhookConfiguration", &format!("{cname}/{}", h.name), lines, &mut problems);
                out.validating_webhooks.push(w);
            }
        }
        let mut mwcs: Vec<&MutatingWebhookConfiguration> = sources.mutating_webhooks.iter().collect();
        mwcs.sort_by_key(|c| name_of(&c.metadata));
        for c in mwcs {
            let cname = name_of(&c.metadata);
            let hooks = c.webhooks.as_deref().unwrap_or_default();
            for (h, uid) in hooks.iter().zip(uids(&cname, hooks.iter().map(|h| h.name.as_str()))) {
                let mut lines = Vec::new();
                let w = Webhook::build(uid, &cname, &WebhookSpec::mutating(h), true, resolver, &mut lines);
                collect("MutatingWebhookConfiguration", &format!("{cname}/{}", h.name), lines, &mut problems);
                out.mutating_webhooks.push(w);
            }
        }

        let mut vaps: Vec<&ValidatingAdmissionPolicy> = sources.validating_policies.iter().collect();
        vaps.sort_by_key(|p| name_of(&p.metadata));
        let mut vbs: Vec<&ValidatingAdmissionPolicyBinding> = sources.validating_bindings.iter().collect();
        vbs.sort_by_key(|b| name_of(&b.metadata));
        for p in vaps {
            let name = name_of(&p.metadata);
            let bindings: Vec<&ValidatingAdmissionPolicyBinding> =
                vbs.iter().copied().filter(|b| b.spec.policy_name == name).collect();
            if bindings.is_empty() {
                continue;
            }
            let mut lines = Vec::new();
            out.validating_policies.push(ValidatingPolicy::build(p, &bindings, &mut lines));
            collect("ValidatingAdmissionPolicy", &name, lines, &mut problems);
        }

        let mut maps: Vec<&MutatingAdmissionPolicy> = sources.mutating_policies.iter().collect();
        maps.sort_by_key(|p| name_of(&p.metadata));
        let mut mbs: Vec<&MutatingAdmissionPolicyBinding> = sources.mutating_bindings.iter().collect();
        mbs.sort_by_key(|b| name_of(&b.metadata));
        for p in maps {
            let name = name_of(&p.metadata);
            let bindings: Vec<&MutatingAdmissionPolicyBinding> = mbs
                .iter()
                .copied()
                .filter(|b| b.spec.as_ref().and_then(|s| s.policy_name.as_deref()) == Some(name.as_str()))
                .collect();
            if bindings.is_empty() {
                continue;
            }
            let mut lines = Vec::new();
            out.mutating_policies.push(MutatingPolicy::build(p, &bindings, &mut lines));
            collect("MutatingAdmissionPolicy", &name, lines, &mut problems);
        }
        (out, problems)
    }

    /// Whether nothing is configured (every request is admitted as it is).
    pub fn is_empty(&self) -> bool {
        !self.has_mutating() && !self.has_validating()
    }

    /// Whether any mutating webhook or MutatingAdmissionPolicy (with a binding) exists.
    pub fn has_mutating(&self) -> bool {
        !self.mutating_webhooks.is_empty() || !self.mutating_policies.is_empty()
    }

    /// Whether any validating webhook or ValidatingAdmissionPolicy (with a binding) exists.
    pub fn has_validating(&self) -> bool {
        !self.validating_webhooks.is_empty() || !self.validating_policies.is_empty()
    }

    /// Mutating admission, kube's first half of the chain: MutatingAdmissionPolicies, then
    /// mutating webhooks; then, if anything changed the object, both once more for the
    /// policies and webhooks with `reinvocationPolicy: IfNeeded` that ran before the change
    /// (kube's reinvocation). `attrs.object` is replaced by the mutated object, at the
    /// request's version; the caller then runs its schema pipeline (default, prune, validate)
    /// on it before [`Configuration::validate`].
    pub async fn mutate(
        &self,
        attrs: &mut Attributes,
        host: Host<'_>,
        outcome: &mut Outcome,
    ) -> Result<(), AdmissionError> {
        if !self.has_mutating() || is_exempt(attrs) {
            return Ok(());
        }
        let resource = attrs.resource.resource.as_str();
        let policies = self.mutating_policies.iter().any(|p| p.may_match_resource(resource));
        let hooks = self.mutating_webhooks.iter().any(|w| w.criteria.may_match_resource(resource));
        if !policies && !hooks {
            return Ok(());
        }
        let mut state = RequestState::new(host);
        let mut policy_reinvocation = Reinvocation::default();
        let mut webhook_reinvocation = Reinvocation::default();
        let mut reinvoke = false;
        // Only what asked for reinvocation can run in the second round.
        let reinvocable =
            self.mutating_webhooks.iter().any(|w| w.reinvoke) || self.mutating_policies.iter().any(|p| p.reinvoke);
        for round in 0..2u8 {
            if round == 1 && !(reinvoke && reinvocable) {
                break;
            }
            if policies {
                let changed = mutating_policy::mutate(
                    &self.mutating_policies,
                    attrs,
                    &mut state,
                    outcome,
                    round,
                    &mut policy_reinvocation,
                )
                .await?;
                reinvoke |= changed;
            }
            if hooks {
                let changed = webhook::mutate(
                    &self.mutating_webhooks,
                    attrs,
                    &mut state,
                    outcome,
                    round,
                    &mut webhook_reinvocation,
                )
                .await?;
                reinvoke |= changed;
            }
        }
        Ok(())
    }

    /// Validating admission, kube's second half: ValidatingAdmissionPolicies, then validating
    /// webhooks (called concurrently). `attrs.object` is the object as it will be stored (after
    /// mutation and the schema pipeline), at the request's version.
    pub async fn validate(
        &self,
        attrs: &Attributes,
        host: Host<'_>,
        outcome: &mut Outcome,
    ) -> Result<(), AdmissionError> {
        if !self.has_validating() || is_exempt(attrs) {
            return Ok(());
        }
        let resource = attrs.resource.resource.as_str();
        let policies = self.validating_policies.iter().any(|p| p.may_match_resource(resource));
        let hooks = self.validating_webhooks.iter().any(|w| w.criteria.may_match_resource(resource));
        if !policies && !hooks {
            return Ok(());
        }
        let mut state = RequestState::new(host);
        if policies {
            validating_policy::validate(&self.validating_policies, attrs, &mut state, outcome).await?;
        }
        if hooks {
            webhook::validate(&self.validating_webhooks, attrs, &mut state, outcome).await?;
        }
        Ok(())
    }
}

fn collect(kind: &'static str, name: &str, lines: Vec<String>, problems: &mut Vec<Problem>) {
    problems.extend(lines.into_iter().map(|message| Problem { kind, name: name.to_owned(), message }));
}

/// kube's `IsExemptAdmissionConfigurationResource`: admission never applies to its own
/// configuration objects (a bad configuration could otherwise lock itself in).
fn is_exempt(attrs: &Attributes) -> bool {
    attrs.kind.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.kind.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}
