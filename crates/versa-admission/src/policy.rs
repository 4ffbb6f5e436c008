//! What ValidatingAdmissionPolicy and MutatingAdmissionPolicy share: the failure policy, the
//! compilation of variables and match conditions, the report of what does not compile.

use crate::expression::{Declarations, Expression, Returns, Variables};

/// A policy's `failurePolicy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FailurePolicy {
    Fail,
    Ignore,
    /// A value kube does not know: failures deny, with `unrecognized failure policy: '<v>'`
    /// for configuration errors.
    Unknown(String),
}

impl FailurePolicy {
    pub fn parse(s: Option<&str>) -> FailurePolicy {
        match s {
            None | Some("Fail") => FailurePolicy::Fail,
            Some("Ignore") => FailurePolicy::Ignore,
            Some(other) => FailurePolicy::Unknown(other.to_owned()),
        }
    }

    pub fn ignore(&self) -> bool {
        *self == FailurePolicy::Ignore
    }
}

/// A policy's variables, compiled in order.
pub(crate) fn compile_variables(
    vars: Option<&Vec<k8s_openapi::api::admissionregistration::v1::Variable>>,
    params: bool,
) -> Variables {
    let pairs: Vec<(String, String)> =
        vars.iter().flat_map(|v| v.iter()).map(|v| (v.name.clone(), v.expression.clone())).collect();
    Variables::compile_in(&pairs, &Declarations { params, authorizer: true, ..Declarations::default() })
}

/// A policy's `matchConditions`.
pub(crate) fn compile_conditions(
    conditions: Option<&Vec<k8s_openapi::api::admissionregistration::v1::MatchCondition>>,
    decls: &Declarations,
) -> Vec<(String, Expression)> {
    conditions
        .iter()
        .flat_map(|c| c.iter())
        .map(|c| (c.name.clone(), Expression::compile(&c.expression, decls, Returns::Bool)))
        .collect()
}

/// Adds a line to `problems` when `e` does not compile.
pub(crate) fn report(problems: &mut Vec<String>, at: &str, e: &Expression) {
    if let Err(err) = &e.compiled {
        problems.push(format!("{at}: {err}"));
    }
}
