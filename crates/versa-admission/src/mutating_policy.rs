//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1`) and its bindings: each policy
//! compiled once ([`MutatingPolicy`]), and kube's `policy/mutating` dispatcher.
//!
//! Matching, bindings and parameters are as for ValidatingAdmissionPolicy
//! ([`crate::dispatch`]); every invocation is found before any is evaluated. For each
//! invocation (policy × binding × parameter) whose `matchConditions` hold, each mutation in
//! order is evaluated with its own budget on the object as the previous one left it:
//!
//! - `JSONPatch`: the expression yields `list(JSONPatch)` (`JSONPatch{op, path, from,
//!   value}` literals; `jsonpatch.escapeKey` for keys with `/` or `~`), applied to the object;
//!   a failed `test` operation leaves the object as it is, any other failure is an error;
//! - `ApplyConfiguration`: the expression yields an `Object{...}` literal (nested literals named
//!   after their field path, `Object.spec{...}`), merged into the object by its schema through
//!   the server's [`StructuredMerge`] (a kind it does not know is 503, as kube answers when it
//!   has no type converter).
//!
//! Errors (conditions, evaluations, patches, configuration) are collected; under
//! `failurePolicy: Fail` the first one refuses the request, 403 with `policy 'p' with binding
//! 'b' denied request: <error>` (reason `Invalid` for evaluation errors). An invocation that
//! changed the object makes earlier ones with `reinvocationPolicy: IfNeeded` run again in the
//! reinvocation round.

use k8s_openapi::api::admissionregistration::v1::{MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ParamRef};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;
use serde_json::{Map, Value as Json};

use crate::attributes::Attributes;
use crate::dispatch::{self, Dispatcher, Step, configure_message};
use crate::error::{AdmissionError, Outcome, admission_forbidden, go_quote};
use crate::expression::{
    Context, Declarations, Expression, Inputs, OUT_OF_BUDGET, RUNTIME_CEL_COST_BUDGET, Returns, Uses, Variables,
    evaluate_conditions,
};
use crate::matching::{Criteria, RequestState};
use crate::params::param_kind;
use crate::patch::{PatchFailure, apply_json_patch};
use crate::policy::{FailurePolicy, compile_conditions, compile_variables, report};
use crate::reinvocation::Reinvocation;
use crate::seams::{ParamKind, StructuredMerge};
use crate::versioned::{Versions, objects};

/// A compiled MutatingAdmissionPolicy with its bindings.
#[derive(Debug)]
pub(crate) struct MutatingPolicy {
    pub name: String,
    pub failure_policy: FailurePolicy,
    pub criteria: Result<Criteria, String>,
    pub param_kind: Option<ParamKind>,
    pub variables: Variables,
    pub conditions: Vec<(String, Expression)>,
    pub mutations: Vec<Mutation>,
    pub reinvoke: bool,
    pub bindings: Vec<MutatingBinding>,
    /// Whether any expression reads `request` or `namespaceObject`.
    pub uses: Uses,
}

#[derive(Debug)]
pub(crate) enum Mutation {
    JsonPatch(Box<Expression>),
    /// The expression, and the type-name mismatches of its `Object` literals (kube finds them
    /// when it evaluates; they are found once here and reported then).
    ApplyConfiguration(Box<Expression>, Option<String>),
    /// A patch type kube does not know, or one without its expression: nothing to do.
    None,
}

#[derive(Debug)]
pub(crate) struct MutatingBinding {
    pub name: String,
    pub criteria: Option<Criteria>,
    pub param_ref: Option<ParamRef>,
}

impl MutatingPolicy {
    pub fn build(
        policy: &MutatingAdmissionPolicy,
        bindings: &[&MutatingAdmissionPolicyBinding],
        problems: &mut Vec<String>,
    ) -> MutatingPolicy {
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
        let conditions = compile_conditions(spec.match_conditions.as_ref(), &decls);
        let patch_decls = Declarations { patch_types: true, ..decls.clone() };
        let mutations: Vec<Mutation> = spec
            .mutations
            .iter()
            .flatten()
            .map(|m| match (m.patch_type.as_str(), &m.json_patch, &m.apply_configuration) {
                ("JSONPatch", Some(p), _) => Mutation::JsonPatch(Box::new(Expression::compile(
                    p.expression.as_deref().unwrap_or(""),
                    &patch_decls,
                    Returns::JsonPatchList,
                ))),
                ("ApplyConfiguration", _, Some(a)) => {
                    let e = Expression::compile(
                        a.expression.as_deref().unwrap_or(""),
                        &patch_decls,
                        Returns::ApplyConfiguration,
                    );
                    let mismatches = e.compiled.as_ref().ok().and_then(|c| type_name_mismatches(&c.ast.expr));
                    Mutation::ApplyConfiguration(Box::new(e), mismatches)
                }
                _ => Mutation::None,
            })
            .collect();
        for (i, (vname, e)) in variables.names.iter().zip(&variables.exprs).enumerate() {
            report(problems, &format!("spec.variables[{i}] ({vname})"), e);
        }
        for (i, (_, e)) in conditions.iter().enumerate() {
            report(problems, &format!("spec.matchConditions[{i}].expression"), e);
        }
        for (i, m) in mutations.iter().enumerate() {
            match m {
                Mutation::JsonPatch(e) => report(problems, &format!("spec.mutations[{i}].jsonPatch.expression"), e),
                Mutation::ApplyConfiguration(e, _) => {
                    report(problems, &format!("spec.mutations[{i}].applyConfiguration.expression"), e)
                }
                Mutation::None => {}
            }
        }
        let criteria = match &spec.match_constraints {
            Some(m) => Ok(Criteria::policy(m)),
            None => Err("policy contained no match constraints, a required field".to_owned()),
        };
        let bindings = bindings
            .iter()
            .map(|b| {
                let spec = b.spec.clone().unwrap_or_default();
                MutatingBinding {
                    name: b.metadata.name.clone().unwrap_or_default(),
                    criteria: spec.match_resources.as_ref().map(Criteria::policy),
                    param_ref: spec.param_ref,
                }
            })
            .collect();
        let uses = Uses::of(variables.exprs.iter().chain(conditions.iter().map(|(_, e)| e)).chain(
            mutations.iter().filter_map(|m| match m {
                Mutation::JsonPatch(e) | Mutation::ApplyConfiguration(e, _) => Some(&**e),
                Mutation::None => None,
            }),
        ));
        MutatingPolicy {
            uses,
            name,
            failure_policy: FailurePolicy::parse(spec.failure_policy.as_deref()),
            criteria,
            param_kind,
            variables,
            conditions,
            mutations,
            reinvoke: spec.reinvocation_policy.as_deref() == Some("IfNeeded"),
            bindings,
        }
    }
}

dispatch::dispatched!(MutatingPolicy, MutatingBinding);

/// A policy error, kube's `PolicyError`.
struct PolicyError<'p> {
    policy: &'p MutatingPolicy,
    binding: Option<String>,
    message: String,
    reason: Option<&'static str>,
}

/// One invocation: policy × binding × parameter.
struct Invocation<'p> {
    policy: &'p MutatingPolicy,
    binding: &'p MutatingBinding,
    matched: crate::matching::Matched,
    param: Option<std::sync::Arc<Json>>,
}

/// Runs the MutatingAdmissionPolicies on a request for one round; whether the object was
/// patched (which asks for a reinvocation round, as in kube).
pub(crate) async fn mutate(
    policies: &[MutatingPolicy],
    attrs: &mut Attributes,
    state: &mut RequestState<'_>,
    outcome: &mut Outcome,
    round: u8,
    reinvocation: &mut Reinvocation,
) -> Result<bool, AdmissionError> {
    let _ = outcome;
    let mut errors: Vec<PolicyError<'_>> = Vec::new();
    // The invocations, as kube's generic policy dispatcher finds them.
    let mut invocations: Vec<Invocation<'_>> = Vec::new();
    let mut dispatcher = Dispatcher::new(policies);
    while let Some(step) = dispatcher.next(attrs, state).await {
        match step {
            Step::Error { policy, binding, error } => errors.push(PolicyError {
                policy,
                binding: binding.map(|b| b.name.clone()),
                message: configure_message(binding.is_some(), &error),
                reason: None,
            }),
            Step::Bound { policy, binding, matched, params } => {
                invocations.extend(params.into_iter().map(|param| Invocation {
                    policy,
                    binding,
                    matched: matched.clone(),
                    param,
                }))
            }
            Step::Done(_) => {}
        }
    }

    let mut dirty = false;
    if !invocations.is_empty() {
        if round > 0 && reinvocation.changed_since_last_output(&attrs.object) {
            reinvocation.require_reinvoking_previous();
        }
        let result = run_invocations(&invocations, attrs, state, round, reinvocation, &mut errors).await;
        reinvocation.set_last_output(&attrs.object);
        dirty = result?;
    }

    let mut failing = errors.into_iter().filter(|e| !e.policy.failure_policy.ignore());
    let Some(first) = failing.next() else { return Ok(dirty) };
    let text = |e: &PolicyError| match &e.binding {
        Some(b) => format!("policy '{}' with binding '{b}' denied request: {}", e.policy.name, e.message),
        None => format!("policy {} denied request: {}", go_quote(&e.policy.name), e.message),
    };
    let mut status = admission_forbidden(attrs, "admission request denied by policy");
    let message = text(&first);
    status.message = Some(message.clone());
    if let Some(r) = first.reason {
        status.reason = Some(r.to_owned());
    }
    let mut causes = vec![StatusCause { message: Some(message), ..StatusCause::default() }];
    causes.extend(failing.map(|e| StatusCause { message: Some(text(&e)), ..StatusCause::default() }));
    if let Some(d) = status.details.as_mut() {
        d.causes = Some(causes);
    }
    Err(AdmissionError::PolicyDenied(Box::new(status)))
}

/// kube's `dispatchInvocations`: returns whether any mutation was applied.
async fn run_invocations<'p>(
    invocations: &[Invocation<'p>],
    attrs: &mut Attributes,
    state: &mut RequestState<'_>,
    round: u8,
    reinvocation: &mut Reinvocation,
    errors: &mut Vec<PolicyError<'p>>,
) -> Result<bool, AdmissionError> {
    let uses_namespace = invocations.iter().any(|i| i.policy.uses.namespace);
    let namespace = state.policy_namespace(attrs, uses_namespace).await?;
    let mut versions = Versions::default();
    let mut dirty = false;
    for inv in invocations {
        let policy = inv.policy;
        let fail = !policy.failure_policy.ignore();
        let converted = versions.get(attrs, &inv.matched.kind, &state.host).await?;
        let authz = if policy.uses.authorizer { state.authz(attrs) } else { None };
        if !policy.conditions.is_empty() {
            let (object, old_object) = objects(attrs, &converted);
            // kube evaluates a policy's conditions with the request's resource, no namespace.
            let request = policy.uses.request.then(|| state.request(attrs, &attrs.resource, &inv.matched.kind));
            let inputs = Inputs {
                object,
                old_object,
                request: request.as_deref(),
                namespace: None,
                params: inv.param.as_deref(),
                authz: authz.as_deref(),
            };
            match evaluate_conditions(&policy.conditions, inputs, Some(&policy.variables), fail) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    errors.push(PolicyError {
                        policy,
                        binding: Some(inv.binding.name.clone()),
                        message: e,
                        reason: Some("Invalid"),
                    });
                    continue;
                }
            }
        }
        let key =
            format!("{}/{}/{}", policy.name, inv.binding.name, inv.param.as_deref().map(param_key).unwrap_or_default());
        if round > 0 && !reinvocation.should_reinvoke(&key) {
            continue;
        }
        let request = policy.uses.request.then(|| state.request(attrs, &inv.matched.resource, &inv.matched.kind));
        // The object as the mutations leave it, when one changed it.
        let mut changed: Option<Json> = None;
        for mutation in &policy.mutations {
            let (object, old_object) = objects(attrs, &converted);
            let Some(object) = changed.as_ref().or(object) else { continue };
            let inputs = Inputs {
                object: Some(object),
                old_object,
                request: request.as_deref(),
                namespace: namespace.as_deref(),
                params: inv.param.as_deref(),
                authz: authz.as_deref(),
            };
            match apply_mutation(mutation, inputs, &policy.variables, &inv.matched.kind, state.host.merge) {
                Ok(Some(patched)) => {
                    dirty = true;
                    if patched != *object {
                        changed = Some(patched);
                    }
                }
                Ok(None) => {}
                Err(MutationFailure::Status(e)) => return Err(e),
                Err(MutationFailure::Policy(message)) => {
                    errors.push(PolicyError {
                        policy,
                        binding: Some(inv.binding.name.clone()),
                        message,
                        reason: Some("Invalid"),
                    });
                }
            }
        }
        if let Some(object) = changed {
            let object = match &converted {
                Some(_) => state.host.resources.convert(&object, &attrs.kind).await?,
                None => object,
            };
            attrs.object = Some(object);
            versions.invalidate();
            reinvocation.require_reinvoking_previous();
        }
        if policy.reinvoke {
            reinvocation.invoked(key);
        }
    }
    if dirty {
        reinvocation.require_reinvoking_previous();
    }
    Ok(dirty)
}

/// `namespace/name` of a parameter object.
fn param_key(p: &Json) -> String {
    let meta = p.get("metadata");
    let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(Json::as_str).unwrap_or("").to_owned();
    format!("{}/{}", field("namespace"), field("name"))
}

/// Why a mutation failed: a policy error (the failure policy decides), or a status kube
/// answers at once.
enum MutationFailure {
    Policy(String),
    Status(AdmissionError),
}

impl From<String> for MutationFailure {
    fn from(s: String) -> Self {
        MutationFailure::Policy(s)
    }
}

impl From<&str> for MutationFailure {
    fn from(s: &str) -> Self {
        MutationFailure::Policy(s.to_owned())
    }
}

/// One mutation: the patched object (`None`: nothing to apply), or why not.
fn apply_mutation(
    mutation: &Mutation,
    inputs: Inputs<'_>,
    variables: &Variables,
    kind: &crate::attributes::GroupVersionKind,
    merge: Option<&dyn StructuredMerge>,
) -> Result<Option<Json>, MutationFailure> {
    let (expression, mismatches) = match mutation {
        Mutation::None => return Ok(None),
        Mutation::ApplyConfiguration(e, mismatches) => (&**e, mismatches.as_ref()),
        Mutation::JsonPatch(e) => (&**e, None),
    };
    if let Err(e) = &expression.compiled {
        return Err(e.clone().into());
    }
    let Some(object) = inputs.object else { return Ok(None) };
    let apply = matches!(mutation, Mutation::ApplyConfiguration(..));
    // kube's patcher needs the kind's schema before it evaluates anything.
    let merge = match (apply, merge) {
        (true, None) => return Err(MutationFailure::Status(unknown_kind(kind))),
        (_, m) => m,
    };
    let mut ctx = Context::new(inputs, Some(variables), RUNTIME_CEL_COST_BUDGET).map_err(|e| e.to_string())?;
    let value = match ctx.eval(expression) {
        Err(_) => return Err(OUT_OF_BUDGET.to_owned().into()),
        Ok(Err(e)) => return Err(e.into()),
        Ok(Ok(v)) => v,
    };
    if let Some(merge) = merge.filter(|_| apply) {
        if let Some(m) = mismatches {
            return Err(format!("type mismatch: {m}").into());
        }
        let Some(Json::Object(mut configuration)) = versa_cel::json::to_json(&value).map_err(|e| e.to_string())? else {
            return Err(format!("invalid return type: {}", &*value.type_name()).into());
        };
        for k in ["apiVersion", "kind"] {
            if let Some(v) = object.get(k) {
                configuration.insert(k.to_owned(), v.clone());
            }
        }
        return match merge.merge(kind, object, &Json::Object(configuration)) {
            None => Err(MutationFailure::Status(unknown_kind(kind))),
            Some(Ok(merged)) => Ok(Some(merged)),
            Some(Err(e)) => Err(format!("error applying patch: {e}").into()),
        };
    }
    let Some(Json::Array(items)) = versa_cel::json::to_json(&value)
        .map_err(|e| format!("JSONPath valueExpression evaluated to a type that could not marshal to JSON: {e}"))?
    else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    };
    let mut ops: Vec<Map<String, Json>> = Vec::with_capacity(items.len());
    for item in items {
        let Json::Object(mut op) = item else {
            return Err("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch".into());
        };
        // kube writes `op` and `path` always (empty when unset), `from` when set, `value` when
        // set; evanphx/json-patch v4 takes a missing value as null.
        op.entry("op").or_insert_with(|| Json::String(String::new()));
        op.entry("path").or_insert_with(|| Json::String(String::new()));
        if op.get("from").and_then(Json::as_str) == Some("") {
            op.remove("from");
        }
        if matches!(op.get("op").and_then(Json::as_str), Some("add" | "replace" | "test")) {
            op.entry("value").or_insert(Json::Null);
        }
        ops.push(op);
    }
    match apply_json_patch(object, &ops) {
        Ok(patched) => Ok(Some(patched)),
        // A failed `test` leaves the object as it is.
        Err(PatchFailure::TestFailed) => Ok(None),
        Err(e) => Err(format!("JSON Patch: {e}").into()),
    }
}

/// kube's answer when the type converter of a kind is missing.
fn unknown_kind(kind: &crate::attributes::GroupVersionKind) -> AdmissionError {
    AdmissionError::service_unavailable(format!(
        "Resource kind {kind} not found. There can be a delay between when CustomResourceDefinitions are created and when they are available."
    ))
}

/// kube's `CheckTypeNamesMatchFieldPathNames` on the `Object` literals of an expression:
/// below an `Object...{}` literal, a literal in field `f` (directly, or in a list or map
/// literal, or a branch of `?:`) must be named `<the parent's path>.f`.
fn type_name_mismatches(expr: &versa_cel::Expr) -> Option<String> {
    use versa_cel::ExprKind;
    fn walk(e: &versa_cel::Expr, expected: Option<&str>, errs: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Struct { type_name, fields }
                if versa_cel::check::is_dynamic_object(type_name.trim_start_matches('.')) =>
            {
                let name = type_name.trim_start_matches('.');
                let path = expected.unwrap_or(name).to_owned();
                if name != path {
                    errs.push(format!(
                        "unexpected type name {name:?}, expected {path:?}, which matches field name path from root Object type"
                    ));
                }
                for f in fields {
                    walk(&f.value, Some(&format!("{path}.{}", f.field)), errs);
                }
            }
            ExprKind::List { elements, .. } => elements.iter().for_each(|el| walk(el, expected, errs)),
            ExprKind::Map { entries } => entries.iter().for_each(|en| walk(&en.value, expected, errs)),
            ExprKind::Call { function, args, .. } if function == "_?_:_" && args.len() == 3 => {
                walk(&args[1], expected, errs);
                walk(&args[2], expected, errs);
            }
            _ => {}
        }
    }
    let mut errs = Vec::new();
    walk(expr, None, &mut errs);
    (!errs.is_empty()).then(|| errs.join("\n"))
}
