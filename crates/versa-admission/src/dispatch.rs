//! The matching half of kube's generic policy dispatcher
//! (`k8s.io/apiserver/pkg/admission/plugin/policy/generic`, `policyDispatcher.Dispatch`):
//! which policy × binding × parameter invocations a request makes, and the configuration
//! errors found on the way.
//!
//! For each policy, in order: its `matchConstraints` (an error, or none at all, is a
//! configuration error of the policy), then its `paramKind`, which must be a kind the server
//! knows (`failed to find resource referenced by paramKind: '...'`); then for each of its
//! bindings, in order: the binding's `matchResources` (an error is a configuration error of
//! the binding), then its parameter objects ([`crate::params::collect`]: `paramRef`,
//! `parameterNotFoundAction`; an error is a configuration error of the binding).
//!
//! ValidatingAdmissionPolicy and MutatingAdmissionPolicy match alike and differ only in what
//! follows: a ValidatingAdmissionPolicy evaluates each binding as soon as it is found (and
//! turns configuration errors into denials by its `failurePolicy`), a
//! MutatingAdmissionPolicy collects every invocation first (and its errors in a list). So the
//! dispatcher is pulled a step at a time ([`Dispatcher::next`]): it looks up nothing — no
//! namespace, no parameters — before the caller asks for the next step, and each caller keeps
//! kube's order of lookups, evaluations and errors.

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::ParamRef;
use serde_json::Value;

use crate::attributes::Attributes;
use crate::matching::{Criteria, Matched, RequestState, matches};
use crate::params::{collect, param_gvk_string};
use crate::seams::ParamKind;

/// What the dispatcher reads of a policy.
pub(crate) trait Policy {
    type Binding: Binding;
    /// `matchConstraints`, or why there are none.
    fn criteria(&self) -> Result<&Criteria, &str>;
    fn param_kind(&self) -> Option<&ParamKind>;
    /// The bindings naming the policy, in order.
    fn bindings(&self) -> &[Self::Binding];

    /// Whether the policy could apply to resource name `resource` (the fast path's index).
    fn may_match_resource(&self, resource: &str) -> bool {
        self.criteria().map_or(true, |c| c.may_match_resource(resource))
    }
}

/// What the dispatcher reads of a binding.
pub(crate) trait Binding {
    /// `matchResources` (none: every request the policy matches).
    fn criteria(&self) -> Option<&Criteria>;
    fn param_ref(&self) -> Option<&ParamRef>;
}

/// Implements [`Policy`] for a kind of policy and [`Binding`] for its binding: both kinds keep
/// what the dispatcher reads under the same field names (a policy's `criteria`, `param_kind`,
/// `bindings`; a binding's `criteria`, `param_ref`).
macro_rules! dispatched {
    ($policy:ty, $binding:ty) => {
        impl $crate::dispatch::Policy for $policy {
            type Binding = $binding;
            fn criteria(&self) -> Result<&$crate::matching::Criteria, &str> {
                self.criteria.as_ref().map_err(String::as_str)
            }
            fn param_kind(&self) -> Option<&$crate::seams::ParamKind> {
                self.param_kind.as_ref()
            }
            fn bindings(&self) -> &[$binding] {
                &self.bindings
            }
        }

        impl $crate::dispatch::Binding for $binding {
            fn criteria(&self) -> Option<&$crate::matching::Criteria> {
                self.criteria.as_ref()
            }
            fn param_ref(&self) -> Option<&k8s_openapi::api::admissionregistration::v1::ParamRef> {
                self.param_ref.as_ref()
            }
        }
    };
}
pub(crate) use dispatched;

/// One step of the dispatch.
pub(crate) enum Step<'p, P: Policy> {
    /// A configuration error of the policy (`binding` is `None`) or of one of its bindings:
    /// kube's text, without `failed to configure ...` ([`configure_message`]).
    Error { policy: &'p P, binding: Option<&'p P::Binding>, error: String },
    /// A binding that matches: the resource and kind the policy's `matchConstraints` matched
    /// as, and the binding's parameter objects, one invocation each (`None`: `params` is null;
    /// none found: no invocation).
    Bound { policy: &'p P, binding: &'p P::Binding, matched: Matched, params: Vec<Option<Arc<Value>>> },
    /// The last binding of a policy whose `matchConstraints` matched has been dispatched.
    Done(&'p P),
}

/// kube's text of a configuration error of a policy or (`binding`) of a binding.
pub(crate) fn configure_message(binding: bool, error: &str) -> String {
    if binding {
        format!("failed to configure binding: {error}")
    } else {
        format!("failed to configure policy: {error}")
    }
}

/// A policy whose `matchConstraints` matched, and the bindings left to dispatch.
struct Current<'p, P: Policy> {
    policy: &'p P,
    matched: Matched,
    bindings: std::slice::Iter<'p, P::Binding>,
}

/// kube's dispatch over `policies`, one step at a time.
pub(crate) struct Dispatcher<'p, P: Policy> {
    policies: std::slice::Iter<'p, P>,
    current: Option<Current<'p, P>>,
}

impl<'p, P: Policy> Dispatcher<'p, P> {
    pub fn new(policies: &'p [P]) -> Self {
        Dispatcher { policies: policies.iter(), current: None }
    }

    /// The next step, `None` at the end. Looks up only what this step needs: the namespace
    /// (for selectors), equivalent resources, the parameters of the binding it returns.
    pub async fn next(&mut self, attrs: &Attributes, state: &mut RequestState<'_>) -> Option<Step<'p, P>> {
        loop {
            let Some(current) = &mut self.current else {
                let policy = self.policies.next()?;
                let error = |error: String| Some(Step::Error { policy, binding: None, error });
                let criteria = match policy.criteria() {
                    Ok(c) => c,
                    Err(e) => return error(e.to_owned()),
                };
                let matched = match matches(criteria, attrs, state).await {
                    Ok(Some(m)) => m,
                    Ok(None) => continue,
                    Err(e) => return error(e.message().to_owned()),
                };
                if let Some(kind) = policy.param_kind()
                    && state.host.params.scope(kind).is_none()
                {
                    return error(format!(
                        "failed to find resource referenced by paramKind: '{}'",
                        param_gvk_string(kind)
                    ));
                }
                self.current = Some(Current { policy, matched, bindings: policy.bindings().iter() });
                continue;
            };
            let policy = current.policy;
            let Some(binding) = current.bindings.next() else {
                self.current = None;
                return Some(Step::Done(policy));
            };
            let error = |error: String| Some(Step::Error { policy, binding: Some(binding), error });
            if let Some(c) = binding.criteria() {
                match matches(c, attrs, state).await {
                    Ok(Some(_)) => {}
                    Ok(None) => continue,
                    Err(e) => return error(e.message().to_owned()),
                }
            }
            return match collect(policy.param_kind(), binding.param_ref(), &attrs.namespace, &state.host).await {
                Ok(params) => Some(Step::Bound { policy, binding, matched: current.matched.clone(), params }),
                Err(e) => error(e),
            };
        }
    }
}
