//! ValidatingAdmissionPolicy and its bindings: each policy compiled once
//! ([`ValidatingPolicy`]), and kube's `policy/validating` dispatcher and validator.
//!
//! For each policy that has bindings and whose `matchConstraints` match, for each binding
//! whose `matchResources` match ([`crate::dispatch`]; each binding is evaluated as it is
//! found), for each of the binding's parameters ([`crate::params`]): the policy's
//! `matchConditions` (one false: skip), then every validation (with its `messageExpression`),
//! then the audit annotations — one cost budget for the validations and the messages, another
//! for the audit annotations.
//!
//! A validation that is false is a decision to deny, with the message (`messageExpression`'s
//! if it gives a one-line string of at most 5 KiB, else `message`, else `failed expression:
//! <expression>`) and the reason (`Invalid` by default). An error is a decision to deny or to
//! admit, as the `failurePolicy` says. The binding's `validationActions` act on each denial:
//! `Deny` refuses the request (the first denial is the answer: `ValidatingAdmissionPolicy 'p'
//! with binding 'b' denied request: <message>`, code from the reason: 422 `Invalid`, 403
//! `Forbidden`, 401, 413), `Warn` adds the warning `Validation failed for
//! ValidatingAdmissionPolicy 'p' with binding 'b': <message>`, `Audit` the audit annotation
//! `validation.policy.admission.k8s.io/validation_failure`. A policy that cannot be applied
//! (a binding's parameters are missing, a selector does not parse, ...) denies with `failed to
//! configure policy|binding: ...` under `failurePolicy: Fail`, and is skipped under `Ignore`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    ParamRef, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;
use serde::Serialize;
use serde_json::Value;

use crate::attributes::Attributes;
use crate::dispatch::{self, Dispatcher, Step, configure_message};
use crate::error::{AdmissionError, Outcome, PolicyCheck, admission_forbidden};
use crate::expression::{
    Context, Declarations, Expression, Inputs, MAX_MESSAGE_EXPRESSION_BYTES, OUT_OF_BUDGET, RUNTIME_CEL_COST_BUDGET,
    Returns, Uses, Variables, as_str, evaluate_conditions,
};
use crate::matching::{Criteria, RequestState};
use crate::params::param_kind;
use crate::policy::{FailurePolicy, compile_conditions, compile_variables, report};
use crate::seams::ParamKind;
use crate::versioned::{Versions, objects};

/// The longest audit annotation value kept (longer ones are cut).
pub const MAX_AUDIT_ANNOTATION_VALUE_BYTES: usize = 10 * 1024;

/// A compiled ValidatingAdmissionPolicy with its bindings.
#[derive(Debug)]
pub(crate) struct ValidatingPolicy {
    pub name: String,
    pub failure_policy: FailurePolicy,
    /// `matchConstraints`, or why there are none.
    pub criteria: Result<Criteria, String>,
    pub param_kind: Option<ParamKind>,
    pub variables: Variables,
    pub conditions: Vec<(String, Expression)>,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<(String, Expression)>,
    pub bindings: Vec<ValidatingBinding>,
    /// Whether any expression reads `request` or `namespaceObject`.
    pub uses: Uses,
}

#[derive(Debug)]
pub(crate) struct Validation {
    pub expression: Expression,
    pub message: String,
    pub message_expression: Option<Expression>,
    pub reason: Option<String>,
}

#[derive(Debug)]
pub(crate) struct ValidatingBinding {
    pub name: String,
    pub criteria: Option<Criteria>,
    pub param_ref: Option<ParamRef>,
    /// `validationActions` as written (the audit annotation repeats them).
    pub actions: Vec<String>,
}

impl ValidatingPolicy {
    /// Compiles `policy` with `bindings` (those naming it). `problems` gets a line for each
    /// expression that does not compile.
    pub fn build(
        policy: &ValidatingAdmissionPolicy,
        bindings: &[&ValidatingAdmissionPolicyBinding],
        problems: &mut Vec<String>,
    ) -> ValidatingPolicy {
        let name = policy.metadata.name.clone().unwrap_or_default();
        let spec = policy.spec.clone().unwrap_or_default();
        let param_kind = param_kind(spec.param_kind.as_ref());
        let variables = compile_variables(spec.variables.as_ref(), param_kind.is_some());
        let decls = Declarations {
            params: param_kind.is_some(),
            variables: variables.ty.clone(),
            authorizer: true,
            ..Declarations::default()
        };
        // kube compiles messages without the authorizer.
        let message_decls = Declarations { authorizer: false, ..decls.clone() };
        let conditions = compile_conditions(spec.match_conditions.as_ref(), &decls);
        let validations: Vec<Validation> = spec
            .validations
            .iter()
            .flatten()
            .map(|v| Validation {
                expression: Expression::compile(&v.expression, &decls, Returns::Bool),
                message: v.message.clone().unwrap_or_default(),
                message_expression: v
                    .message_expression
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .map(|m| Expression::compile(m, &message_decls, Returns::String)),
                reason: v.reason.clone(),
            })
            .collect();
        let audit_annotations: Vec<(String, Expression)> = spec
            .audit_annotations
            .iter()
            .flatten()
            .map(|a| (a.key.clone(), Expression::compile(&a.value_expression, &decls, Returns::StringOrNull)))
            .collect();
        for (i, (vname, e)) in variables.names.iter().zip(&variables.exprs).enumerate() {
            report(problems, &format!("spec.variables[{i}] ({vname})"), e);
        }
        for (i, (_, e)) in conditions.iter().enumerate() {
            report(problems, &format!("spec.matchConditions[{i}].expression"), e);
        }
        for (i, v) in validations.iter().enumerate() {
            report(problems, &format!("spec.validations[{i}].expression"), &v.expression);
            if let Some(m) = &v.message_expression {
                report(problems, &format!("spec.validations[{i}].messageExpression"), m);
            }
        }
        for (i, (_, e)) in audit_annotations.iter().enumerate() {
            report(problems, &format!("spec.auditAnnotations[{i}].valueExpression"), e);
        }
        let criteria = match &spec.match_constraints {
            Some(m) => Ok(Criteria::policy(m)),
            None => Err("policy contained no match constraints, a required field".to_owned()),
        };
        let bindings = bindings
            .iter()
            .map(|b| {
                let spec = b.spec.clone();
                ValidatingBinding {
                    name: b.metadata.name.clone().unwrap_or_default(),
                    criteria: spec.match_resources.as_ref().map(Criteria::policy),
                    param_ref: spec.param_ref,
                    actions: spec.validation_actions,
                }
            })
            .collect();
        let uses = Uses::of(
            variables
                .exprs
                .iter()
                .chain(conditions.iter().map(|(_, e)| e))
                .chain(
                    validations
                        .iter()
                        .flat_map(|v| std::iter::once(&v.expression).chain(v.message_expression.as_ref())),
                )
                .chain(audit_annotations.iter().map(|(_, e)| e)),
        );
        ValidatingPolicy {
            uses,
            name,
            failure_policy: FailurePolicy::parse(spec.failure_policy.as_deref()),
            criteria,
            param_kind,
            variables,
            conditions,
            validations,
            audit_annotations,
            bindings,
        }
    }
}

dispatch::dispatched!(ValidatingPolicy, ValidatingBinding);

/// One decision of a validation, kube's `PolicyDecision`.
#[derive(Clone, Debug)]
struct Decision {
    deny: bool,
    message: String,
    reason: Option<String>,
    /// The decision comes from an error (kube's `EvalError`), not from the validation.
    error: bool,
    elapsed: Duration,
}

impl Decision {
    fn error(deny: bool, message: String, elapsed: Duration) -> Decision {
        Decision { deny, message, reason: None, error: true, elapsed }
    }

    /// kube's `ErrorType` of a decision, for its metrics.
    fn error_type(&self) -> &'static str {
        if !self.error {
            "no_error"
        } else if self.message.starts_with("compilation") {
            "compile_error"
        } else if self.message.starts_with("validation failed due to running out of cost budget") {
            "out_of_budget"
        } else {
            "invalid_error"
        }
    }
}

#[derive(Default)]
struct Validated {
    decisions: Vec<Decision>,
    /// `(key, Ok(value) to publish | Err(error) to deny)`; excluded ones are left out.
    audit: Vec<(String, Result<String, String>)>,
}

/// A denial to report.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ValidationFailure<'a> {
    message: &'a str,
    policy: &'a str,
    binding: &'a str,
    expression_index: usize,
    validation_actions: &'a [String],
}

/// Runs the ValidatingAdmissionPolicies on a request.
pub(crate) async fn validate(
    policies: &[ValidatingPolicy],
    attrs: &Attributes,
    state: &mut RequestState<'_>,
    outcome: &mut Outcome,
) -> Result<(), AdmissionError> {
    let mut denials: Vec<Denial> = Vec::new();
    let config_error = |denials: &mut Vec<Denial>, policy: &ValidatingPolicy, binding: Option<&str>, err: &str| {
        let message = match &policy.failure_policy {
            FailurePolicy::Ignore => return,
            FailurePolicy::Fail => configure_message(binding.is_some(), err),
            FailurePolicy::Unknown(v) => format!("unrecognized failure policy: '{v}'"),
        };
        denials.push(Denial {
            policy: policy.name.clone(),
            binding: binding.map(str::to_owned),
            message,
            reason: None,
        });
    };
    let mut versions = Versions::default();
    let mut collector: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut dispatcher = Dispatcher::new(policies);
    while let Some(step) = dispatcher.next(attrs, state).await {
        let (policy, binding, matched, params) = match step {
            Step::Error { policy, binding, error } => {
                config_error(&mut denials, policy, binding.map(|b| b.name.as_str()), &error);
                continue;
            }
            Step::Done(policy) => {
                for (key, values) in std::mem::take(&mut collector) {
                    outcome.annotate(format!("{}/{key}", policy.name), values.join(", "));
                }
                continue;
            }
            Step::Bound { policy, binding, matched, params } => (policy, binding, matched, params),
        };
        if params.is_empty() {
            continue;
        }
        let converted = match versions.get(attrs, &matched.kind, &state.host).await {
            Ok(c) => c,
            Err(e) => {
                let err = format!("failed to convert object version: {}", e.message());
                config_error(&mut denials, policy, Some(&binding.name), &err);
                continue;
            }
        };
        let namespace = state.policy_namespace(attrs, policy.uses.namespace).await?;
        let requests = policy.uses.request.then(|| {
            // kube evaluates a policy's conditions with the request's resource.
            (
                state.request(attrs, &attrs.resource, &matched.kind),
                state.request(attrs, &matched.resource, &matched.kind),
            )
        });
        let authz = if policy.uses.authorizer { state.authz(attrs) } else { None };
        let (object, old_object) = objects(attrs, &converted);
        let inputs = Inputs {
            object,
            old_object,
            request: requests.as_ref().map(|(_, r)| &**r),
            namespace: namespace.as_deref(),
            params: None,
            authz: authz.as_deref(),
        };
        let condition_request = requests.as_ref().map(|(r, _)| &**r);
        for param in &params {
            let inputs = Inputs { params: param.as_deref(), ..inputs };
            let validated = validate_one(policy, inputs, condition_request);
            apply_decisions(policy, binding, validated, outcome, &mut denials, &mut collector);
        }
    }
    let Some(first) = denials.into_iter().next() else { return Ok(()) };
    let message = match &first.binding {
        Some(b) => {
            format!("ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}", first.policy, first.message)
        }
        None => format!("ValidatingAdmissionPolicy '{}' denied request: {}", first.policy, first.message),
    };
    let mut status = admission_forbidden(attrs, &message);
    let reason = first.reason.filter(|r| !r.is_empty()).unwrap_or_else(|| "Invalid".to_owned());
    status.code = Some(reason_to_code(&reason));
    status.reason = Some(reason);
    if let Some(d) = status.details.as_mut() {
        d.causes.get_or_insert_with(Vec::new).push(StatusCause { message: Some(message), ..StatusCause::default() });
    }
    Err(AdmissionError::PolicyDenied(Box::new(status)))
}

/// kube's `reasonToCode`.
fn reason_to_code(reason: &str) -> i32 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

fn apply_decisions(
    policy: &ValidatingPolicy,
    binding: &ValidatingBinding,
    validated: Validated,
    outcome: &mut Outcome,
    denials: &mut Vec<Denial>,
    collector: &mut BTreeMap<String, Vec<String>>,
) {
    let check = |outcome: &mut Outcome, d: &Decision, action: &'static str| {
        outcome.policy_checks.push(PolicyCheck {
            policy: policy.name.clone(),
            binding: binding.name.clone(),
            error_type: d.error_type(),
            enforcement_action: action,
            elapsed: d.elapsed,
        });
    };
    for (i, d) in validated.decisions.iter().enumerate() {
        if !d.deny {
            if d.error {
                check(outcome, d, "allow");
            }
            continue;
        }
        for action in &binding.actions {
            match action.as_str() {
                "Deny" => check(outcome, d, "deny"),
                "Audit" => check(outcome, d, "audit"),
                "Warn" => check(outcome, d, "warn"),
                _ => {}
            }
            match action.as_str() {
                "Deny" => denials.push(Denial {
                    policy: policy.name.clone(),
                    binding: Some(binding.name.clone()),
                    message: d.message.clone(),
                    reason: d.reason.clone(),
                }),
                "Audit" => {
                    let failure = [ValidationFailure {
                        message: &d.message,
                        policy: &policy.name,
                        binding: &binding.name,
                        expression_index: i,
                        validation_actions: &binding.actions,
                    }];
                    outcome.annotate(
                        "validation.policy.admission.k8s.io/validation_failure".into(),
                        serde_json::to_string(&failure).unwrap_or_default(),
                    );
                }
                "Warn" => outcome.warn(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    policy.name, binding.name, d.message
                )),
                _ => {}
            }
        }
    }
    for (key, value) in validated.audit {
        match value {
            Ok(mut v) => {
                truncate(&mut v, MAX_AUDIT_ANNOTATION_VALUE_BYTES);
                let values = collector.entry(key).or_default();
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            Err(message) => {
                check(outcome, &Decision::error(true, message.clone(), Duration::ZERO), "deny");
                denials.push(Denial {
                    policy: policy.name.clone(),
                    binding: Some(binding.name.clone()),
                    message,
                    reason: None,
                })
            }
        }
    }
}

fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

/// kube's `validator.Validate` for one parameter. The conditions see `condition_request`
/// and no namespace, as in kube.
fn validate_one(policy: &ValidatingPolicy, inputs: Inputs<'_>, condition_request: Option<&Value>) -> Validated {
    let fail = !policy.failure_policy.ignore();
    let error = |message: String| Validated {
        decisions: vec![Decision::error(fail, message, Duration::ZERO)],
        audit: Vec::new(),
    };
    if !policy.conditions.is_empty() {
        let conditions = Inputs { request: condition_request, namespace: None, ..inputs };
        match evaluate_conditions(&policy.conditions, conditions, Some(&policy.variables), fail) {
            Ok(true) => {}
            Ok(false) => return Validated::default(),
            Err(e) => return error(e),
        }
    }
    let mut ctx = match Context::new(inputs, Some(&policy.variables), RUNTIME_CEL_COST_BUDGET) {
        Ok(c) => c,
        Err(e) => return error(e.to_string()),
    };
    let mut results = Vec::with_capacity(policy.validations.len());
    for v in &policy.validations {
        let started = Instant::now();
        match ctx.eval(&v.expression) {
            Ok(r) => results.push((r.map(|value| matches!(value, versa_cel::Value::Bool(true))), started.elapsed())),
            Err(_) => return error(OUT_OF_BUDGET.to_owned()),
        }
    }
    // The messages, all evaluated, with what is left of the budget (in a context of their
    // own: variables are computed again).
    let remaining = ctx.remaining();
    let mut messages: Vec<Option<Result<String, String>>> = Vec::with_capacity(policy.validations.len());
    let mut message_budget_error = false;
    if policy.validations.iter().any(|v| v.message_expression.is_some()) {
        // kube binds no authorizer for messages.
        match Context::new(Inputs { authz: None, ..inputs }, Some(&policy.variables), remaining) {
            Ok(mut mctx) => {
                for v in &policy.validations {
                    let Some(m) = &v.message_expression else {
                        messages.push(None);
                        continue;
                    };
                    match mctx.eval(m) {
                        Ok(r) => messages.push(Some(r.map(|value| as_str(&value).unwrap_or_default().to_owned()))),
                        Err(_) => {
                            message_budget_error = true;
                            break;
                        }
                    }
                }
            }
            Err(e) => return error(e.to_string()),
        }
    }
    let mut out = Validated::default();
    for (i, (v, (result, elapsed))) in policy.validations.iter().zip(results).enumerate() {
        let decision = match result {
            Err(e) => Decision::error(fail, e, elapsed),
            Ok(_) if message_budget_error => {
                Decision::error(fail, format!("failed messageExpression: {OUT_OF_BUDGET}"), elapsed)
            }
            Ok(true) => Decision { deny: false, message: String::new(), reason: None, error: false, elapsed },
            Ok(false) => {
                let mut message = match messages.get(i) {
                    Some(Some(Ok(m))) => {
                        let m = m.trim();
                        if m.len() > MAX_MESSAGE_EXPRESSION_BYTES || m.contains('\n') {
                            String::new()
                        } else {
                            m.to_owned()
                        }
                    }
                    _ => String::new(),
                };
                if message.is_empty() {
                    message = v.message.trim().to_owned();
                }
                if message.is_empty() {
                    message = format!("failed expression: {}", v.expression.source.trim());
                }
                let reason = Some(v.reason.clone().unwrap_or_else(|| "Invalid".to_owned()));
                Decision { deny: true, message, reason, error: false, elapsed }
            }
        };
        out.decisions.push(decision);
    }
    if policy.audit_annotations.is_empty() {
        return out;
    }
    // kube binds no authorizer for audit annotations either.
    let mut actx =
        match Context::new(Inputs { authz: None, ..inputs }, Some(&policy.variables), RUNTIME_CEL_COST_BUDGET) {
            Ok(c) => c,
            Err(e) => return error(e.to_string()),
        };
    for (key, e) in &policy.audit_annotations {
        let result = match actx.eval(e) {
            Ok(r) => r,
            Err(_) => return error(OUT_OF_BUDGET.to_owned()),
        };
        match result {
            Err(err) if fail => out.audit.push((key.clone(), Err(err))),
            Err(_) => {}
            Ok(versa_cel::Value::String(s)) => {
                let s = s.trim();
                if !s.is_empty() {
                    out.audit.push((key.clone(), Ok(s.to_owned())));
                }
            }
            Ok(versa_cel::Value::Null) => {}
            Ok(other) => out.audit.push((
                key.clone(),
                Err(format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    e.source,
                    &*other.type_name()
                )),
            )),
        }
    }
    out
}
