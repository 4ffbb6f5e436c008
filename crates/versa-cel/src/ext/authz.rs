//! Kubernetes' authorization library (k8s.io/apiserver `pkg/cel/library/authz.go`), the
//! `authorizer` of admission expressions:
//!
//! - `authorizer.path('/healthz').check('get')`,
//! - `authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns')
//!   .name('n').check('update')` (and `fieldSelector`, `labelSelector`),
//! - `authorizer.serviceAccount('ns', 'sa')`: the same checks for that service account,
//! - `Decision.allowed()`, `.reason()`, `.errored()`, `.error()`.
//!
//! The values are opaque (`kubernetes.authorization.Authorizer`, `...PathCheck`,
//! `...GroupCheck`, `...ResourceCheck`, `...Decision`); a check asks an [`Authorize`]
//! implementation, synchronously, as kube's does. A check costs 350,000 (two per expression fit
//! the per-call limit), everything else 1.

use std::sync::Arc;

use super::{Res, charged, opaque, text};
use crate::opaque::{
    Opaque,
    authz::{
        AUTHORIZER_TYPE, Authorize, AuthzCheck, AuthzUser, AuthzValue, DECISION_TYPE, GROUP_CHECK_TYPE,
        PATH_CHECK_TYPE, RESOURCE_CHECK_TYPE,
    },
};
use crate::runtime::{CallContext, EvalError};
use crate::types::Type;
use crate::value::Value;

/// What an authorization check costs (Kubernetes' fixed cost).
pub const CHECK_COST: u64 = 350_000;

/// The `authorizer` variable: checks for `user`, answered by `authorizer`.
pub fn authorizer_value<'a>(user: AuthzUser, authorizer: Arc<dyn Authorize>) -> Value<'a> {
    opaque(Opaque::Authz(AuthzValue::Authorizer { user: Arc::new(user), authorizer }))
}

/// The `authorizer.requestResource` variable: a resource check of the request's own group,
/// resource, subresource, namespace and name.
pub fn resource_check_value<'a>(user: AuthzUser, authorizer: Arc<dyn Authorize>, check: AuthzCheck) -> Value<'a> {
    opaque(Opaque::Authz(AuthzValue::ResourceCheck { user: Arc::new(user), authorizer, check }))
}

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let t = Type::Opaque;
    let s = || Type::String;
    add("path", true, vec![t(AUTHORIZER_TYPE), s()], t(PATH_CHECK_TYPE));
    add("group", true, vec![t(AUTHORIZER_TYPE), s()], t(GROUP_CHECK_TYPE));
    add("serviceAccount", true, vec![t(AUTHORIZER_TYPE), s(), s()], t(AUTHORIZER_TYPE));
    add("resource", true, vec![t(GROUP_CHECK_TYPE), s()], t(RESOURCE_CHECK_TYPE));
    for f in ["subresource", "namespace", "name", "fieldSelector", "labelSelector"] {
        add(f, true, vec![t(RESOURCE_CHECK_TYPE), s()], t(RESOURCE_CHECK_TYPE));
    }
    add("check", true, vec![t(PATH_CHECK_TYPE), s()], t(DECISION_TYPE));
    add("check", true, vec![t(RESOURCE_CHECK_TYPE), s()], t(DECISION_TYPE));
    add("allowed", true, vec![t(DECISION_TYPE)], Type::Bool);
    add("errored", true, vec![t(DECISION_TYPE)], Type::Bool);
    add("reason", true, vec![t(DECISION_TYPE)], s());
    add("error", true, vec![t(DECISION_TYPE)], s());
}

fn authz<'v>(v: Option<&'v Value<'_>>) -> Option<&'v AuthzValue> {
    match v {
        Some(Value::Opaque(o)) => match &**o {
            Opaque::Authz(a) => Some(a),
            _ => None,
        },
        _ => None,
    }
}

/// A DNS-1123 label (namespaces) or subdomain (service account names), as kube validates them
/// for `serviceAccount`.
fn valid_name(s: &str, subdomain: bool) -> bool {
    let errors =
        if subdomain { versa_schema::names::is_dns1123_subdomain(s) } else { versa_schema::names::is_dns1123_label(s) };
    errors.is_empty()
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    if !member {
        return None;
    }
    let target = authz(args.first())?;
    let arg = |i: usize| args.get(i).and_then(text);
    let value = |v: AuthzValue| Ok(opaque(Opaque::Authz(v)));
    Some(match (function, target) {
        ("path", AuthzValue::Authorizer { user, authorizer }) => {
            let path = arg(1)?;
            charged(calls, 1, || {
                if path.is_empty() {
                    return Err(EvalError::new("path must not be empty"));
                }
                value(AuthzValue::PathCheck {
                    user: user.clone(),
                    authorizer: authorizer.clone(),
                    path: path.to_owned(),
                })
            })
        }
        ("group", AuthzValue::Authorizer { user, authorizer }) => {
            let group = arg(1)?;
            charged(calls, 1, || {
                value(AuthzValue::GroupCheck {
                    user: user.clone(),
                    authorizer: authorizer.clone(),
                    group: group.to_owned(),
                })
            })
        }
        ("serviceAccount", AuthzValue::Authorizer { authorizer, .. }) => {
            let (namespace, name) = (arg(1)?, arg(2)?);
            charged(calls, 1, || {
                if !valid_name(name, true) {
                    return Err(EvalError::new("Invalid service account name"));
                }
                if !valid_name(namespace, false) {
                    return Err(EvalError::new("Invalid service account namespace"));
                }
                let user = AuthzUser {
                    username: format!("system:serviceaccount:{namespace}:{name}"),
                    groups: vec![
                        "system:serviceaccounts".to_owned(),
                        format!("system:serviceaccounts:{namespace}"),
                        "system:authenticated".to_owned(),
                    ],
                    ..AuthzUser::default()
                };
                value(AuthzValue::Authorizer { user: Arc::new(user), authorizer: authorizer.clone() })
            })
        }
        ("resource", AuthzValue::GroupCheck { user, authorizer, group }) => {
            let resource = arg(1)?;
            charged(calls, 1, || {
                if resource.is_empty() {
                    return Err(EvalError::new("resource must not be empty"));
                }
                let check = AuthzCheck { group: group.clone(), resource: resource.to_owned(), ..AuthzCheck::default() };
                value(AuthzValue::ResourceCheck { user: user.clone(), authorizer: authorizer.clone(), check })
            })
        }
        (
            "subresource" | "namespace" | "name" | "fieldSelector" | "labelSelector",
            AuthzValue::ResourceCheck { user, authorizer, check },
        ) => {
            let v = arg(1)?.to_owned();
            charged(calls, 1, || {
                let mut check = check.clone();
                match function {
                    "subresource" => check.subresource = v,
                    "namespace" => check.namespace = v,
                    "name" => check.name = v,
                    "fieldSelector" => check.field_selector = v,
                    _ => check.label_selector = v,
                }
                value(AuthzValue::ResourceCheck { user: user.clone(), authorizer: authorizer.clone(), check })
            })
        }
        ("check", AuthzValue::PathCheck { user, authorizer, path }) => {
            let verb = arg(1)?;
            charged(calls, CHECK_COST, || {
                let check = AuthzCheck { verb: verb.to_owned(), path: Some(path.clone()), ..AuthzCheck::default() };
                value(AuthzValue::Decision(authorizer.authorize(user, &check)))
            })
        }
        ("check", AuthzValue::ResourceCheck { user, authorizer, check }) => {
            let verb = arg(1)?;
            charged(calls, CHECK_COST, || {
                let check = AuthzCheck { verb: verb.to_owned(), ..check.clone() };
                value(AuthzValue::Decision(authorizer.authorize(user, &check)))
            })
        }
        ("allowed" | "errored" | "reason" | "error", AuthzValue::Decision(d)) => charged(calls, 1, || {
            Ok(match function {
                "allowed" => Value::Bool(d.allowed),
                "errored" => Value::Bool(d.error.is_some()),
                "reason" => Value::string(d.reason.clone()),
                _ => Value::string(d.error.clone().unwrap_or_default()),
            })
        }),
        _ => return None,
    })
}
