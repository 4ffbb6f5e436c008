//! versa-admission: the admission chain of kube-apiserver (k8s.io/apiserver
//! `pkg/admission/plugin/{webhook,policy}`) as a library, for the resources versa serves. An
//! aggregated API server must run admission itself: kube-apiserver does not run it for the
//! requests it proxies.
//!
//! No HTTP server and no storage: the server describes each object it admits
//! ([`Attributes`]), hands over what only it knows ([`Host`]: namespaces, policy parameters,
//! equivalent resources and conversions, an authorizer), and gets back the mutated object, the
//! warnings and audit annotations ([`Outcome`]), or kube's refusal ([`AdmissionError`], with
//! the `metav1.Status` to answer).
//!
//! # The chain, in kube's order
//!
//! 1. [`Configuration::mutate`]: MutatingAdmissionPolicies, then mutating webhooks (in
//!    order, each on the object the previous one left); then, if the object changed, once
//!    more for those with `reinvocationPolicy: IfNeeded` that ran before the change.
//! 2. The caller runs its schema pipeline again on the mutated object (default, prune,
//!    validate): what a webhook added that the schema does not know is pruned, what it got
//!    wrong is refused with the schema's errors.
//! 3. [`Configuration::validate`]: ValidatingAdmissionPolicies, then validating webhooks
//!    (concurrently). Then the caller stores.
//!
//! A dry run goes through the same chain; webhooks with side effects refuse it. Before step 1,
//! kube runs its `NamespaceLifecycle` plugin: [`namespace_lifecycle`] (for cluster mode, where
//! namespaces are kube's).
//!
//! # Configuration
//!
//! [`Configuration::build`] compiles the `admissionregistration.k8s.io/v1` objects once —
//! rules, selectors, CEL programs (checked as kube checks them), webhook clients (through
//! versa-webhook's HTTPS client) — and reports what does not compile ([`Problem`]); the
//! caller swaps the whole configuration when an object changes. With nothing configured, or
//! nothing that names the request's resource, a call returns at once.
//! [`type_checking`] produces the `status.typeChecking` of a ValidatingAdmissionPolicy.
//!
//! # Using it from the server
//!
//! ```text
//! // When an admissionregistration object changes (a watch, or a write in standalone mode):
//! let (config, problems) = Configuration::build(&sources, &options);  // log the problems
//! // for each ValidatingAdmissionPolicy: write type_checking(&policy, &schemas) to status
//! swap(Arc::new(config));
//!
//! // For each object a write admits, with the request's user, kind, resource, objects:
//! let host = Host { namespaces, params, resources, authorizer, merge };
//! let mut outcome = Outcome::default();
//! namespace_lifecycle(&attrs, namespaces).await?;        // cluster mode
//! config.mutate(&mut attrs, host.clone(), &mut outcome).await?;
//! // default, prune, validate attrs.object with the schema again
//! config.validate(&attrs, host, &mut outcome).await?;
//! // store; send outcome.warnings as Warning headers, outcome.audit_annotations to the
//! // audit event, outcome.webhook_calls / policy_checks to the metrics
//! ```
//!
//! An [`AdmissionError`] is answered with its [`AdmissionError::status`] (and the warnings
//! collected so far). Nothing here needs the server's runtime beyond tokio timers and sockets
//! for webhook calls.
//!
//! # Modules
//!
//! - [`attributes`]: the request; [`error`]: refusals, warnings, audit annotations;
//!   [`seams`]: the traits the server implements.
//! - `rules`, `selector`, `matching`: which webhooks and policies apply (scope, operations,
//!   groups, versions, resources, namespace and object selectors, `matchPolicy: Equivalent`);
//!   `versioned`: the objects at the version a configuration asked for.
//! - `expression`: the CEL environment (`object`, `oldObject`, `request`, `namespaceObject`,
//!   `params`, `variables`) and cost budgets, on versa-cel.
//! - `review`: AdmissionReview v1/v1beta1; `webhook`: calling webhooks and the two
//!   dispatchers; `patch`: JSON Patch; `reinvocation`: what the second mutating round needs.
//! - `params`, `policy`, `validating_policy`, `mutating_policy`: policies and bindings;
//!   `dispatch`: which policy × binding × parameter invocations a request makes (kube's
//!   generic policy dispatcher, shared by both kinds of policy).
//! - `config`: [`Configuration`] and the chain; `typecheck`: policy type checking;
//!   `lifecycle`: namespace lifecycle.
//!
//! - [`objects`]: the configuration objects themselves as kube-apiserver writes them
//!   (decoding, v1 defaults, validation.go's create and update validation), for the registry
//!   of standalone versa.
//!
//! `docs/admission.md` (in the repository) describes all of it for operators: order,
//! limits, and the differences from kube that remain.

pub mod attributes;
mod config;
mod dispatch;
pub mod error;
mod expression;
mod lifecycle;
mod matching;
mod mutating_policy;
pub mod objects;
mod params;
mod patch;
mod policy;
mod reinvocation;
mod review;
mod rules;
pub mod seams;
mod selector;
mod typecheck;
mod validating_policy;
mod versioned;
mod webhook;

pub use attributes::{Attributes, GroupVersionKind, GroupVersionResource, Operation, UserInfo};
pub use config::{BuildOptions, Configuration, Problem, Sources};
pub use error::{AdmissionError, Outcome, PATCH_ANNOTATION_PREFIX, PolicyCheck, WebhookCall};
pub use expression::{MATCH_CONDITIONS_BUDGET, MAX_MESSAGE_EXPRESSION_BYTES, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET};
pub use lifecycle::{IMMORTAL_NAMESPACES, namespace_lifecycle};
pub use seams::{
    Authorize, AuthzCheck, AuthzDecision, AuthzUser, BoxError, BoxFuture, Host, HostError, NamespaceLookup, ParamKind,
    ParamLookup, ParamScope, Resources, StructuredMerge,
};
pub use selector::{Selector, SelectorError};
pub use typecheck::{SchemaResolver, type_checking};
pub use validating_policy::MAX_AUDIT_ANNOTATION_VALUE_BYTES;
pub use versa_webhook::{ResolveError, ServiceResolver};
pub use webhook::DEFAULT_TIMEOUT;
