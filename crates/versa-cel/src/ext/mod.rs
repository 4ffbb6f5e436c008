//! The Kubernetes CEL libraries (k8s.io/apiserver/pkg/cel/library) and the cel-go extensions
//! Kubernetes enables, one module per library: [`strings`], [`lists`] (with the sets
//! extension), [`regex`], [`quantity`], [`net`] (IP and CIDR), [`url`], [`semver`],
//! [`format`] (named formats), [`jsonpatch`] (admission's `jsonpatch.escapeKey`) and
//! [`authz`] (admission's `authorizer`).
//!
//! Each module declares its overloads to the checker (`declare`, so a wrong-typed call gets
//! cel-go's `found no matching overload` at definition time), evaluates them (`call`, which
//! returns `None` for a function that is not its own, so the standard library keeps its
//! names) and charges each call its Kubernetes runtime cost (`CallCost`) before doing the work.
//! Their static costs (`EstimateCallCost`) are in [`crate::cost`], next to cel-go's.
//!
//! The library types are [`Opaque`] values ([`crate::opaque`]): `net.IP` and `net.CIDR` (opaque types),
//! `kubernetes.URL`, `kubernetes.Quantity`, `kubernetes.Semver` and `kubernetes.NamedFormat`
//! (object types without fields). They compare equal as Kubernetes compares them (quantities
//! by value, semvers ignoring build metadata) and charge 1 for `==`.

pub mod authz;
pub mod format;
pub mod jsonpatch;
pub mod lists;
pub mod net;
pub mod quantity;
pub mod regex;
pub mod semver;
pub mod strings;
pub mod url;

use std::sync::Arc;

use crate::opaque::{self, CIDR_TYPE, IP_TYPE, Opaque};
use crate::runtime::{CallContext, EvalError};
use crate::types::Type;
use crate::value::{Str, Value};

pub(crate) type Res<'a> = Result<Value<'a>, EvalError>;

/// A library type by its CEL name (for `type(x) == net.IP`). Only the opaque types are
/// declared as names: Kubernetes 1.36 leaves `kubernetes.URL`, `kubernetes.Quantity`,
/// `kubernetes.Semver` and `kubernetes.NamedFormat` undeclared (`undeclared reference to
/// 'kubernetes'`), though `type()` of their values prints them.
pub(crate) fn type_named(name: &str) -> Option<&'static str> {
    [
        IP_TYPE,
        CIDR_TYPE,
        opaque::authz::AUTHORIZER_TYPE,
        opaque::authz::PATH_CHECK_TYPE,
        opaque::authz::GROUP_CHECK_TYPE,
        opaque::authz::RESOURCE_CHECK_TYPE,
        opaque::authz::DECISION_TYPE,
    ]
    .into_iter()
    .find(|t| *t == name)
}

pub(crate) fn opaque<'a>(o: Opaque) -> Value<'a> {
    Value::Opaque(Arc::new(o))
}

/// Declares every library overload to the checker.
pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    strings::declare(add);
    lists::declare(add);
    regex::declare(add);
    quantity::declare(add);
    net::declare(add);
    url::declare(add);
    semver::declare(add);
    format::declare(add);
    jsonpatch::declare(add);
    authz::declare(add);
}

/// Evaluates a library function, or `None` when `function` is not one of them (or not for
/// these arguments).
pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    strings::call(calls, function, member, args)
        .or_else(|| lists::call(calls, function, member, args))
        .or_else(|| regex::call(calls, function, member, args))
        .or_else(|| quantity::call(calls, function, member, args))
        .or_else(|| net::call(calls, function, member, args))
        .or_else(|| url::call(calls, function, member, args))
        .or_else(|| semver::call(calls, function, member, args))
        .or_else(|| format::call(calls, function, member, args))
        .or_else(|| jsonpatch::call(calls, function, member, args))
        .or_else(|| authz::call(calls, function, member, args))
}

/// Charges a library call's `cost`, then computes its result: the charge's error (a
/// cancellation) instead when the cost is over a limit.
pub(crate) fn charged<'a>(calls: &mut CallContext<'_>, cost: u64, result: impl FnOnce() -> Res<'a>) -> Res<'a> {
    calls.charge(cost)?;
    result()
}

/// The library's conversion of the string `arg` (`quantity(s)`, `url(s)`, `semver(s)`), or its
/// test (`isQuantity(s)`, ...: `check`), charged a tenth of the string's size as Kubernetes
/// charges it: the value `parse` makes of it, whether it parses, or the parse error.
pub(crate) fn parse_string<'a, T, E: std::fmt::Display>(
    calls: &mut CallContext<'_>,
    arg: &Value<'_>,
    check: bool,
    parse: impl FnOnce() -> Result<T, E>,
    value: impl FnOnce(T) -> Opaque,
) -> Res<'a> {
    charged(calls, ceil_cost(str_size(arg) as f64 * 0.1), || match (check, parse()) {
        (true, r) => Ok(Value::Bool(r.is_ok())),
        (false, Ok(v)) => Ok(opaque(value(v))),
        (false, Err(e)) => Err(EvalError::new(e.to_string())),
    })
}

/// `ceil(x)` as a cost, saturating.
pub(crate) fn ceil_cost(x: f64) -> u64 {
    let c = x.ceil();
    if c >= u64::MAX as f64 { u64::MAX } else { c as u64 }
}

/// The text of a string value.
pub(crate) fn text<'v>(v: &'v Value<'_>) -> Option<&'v str> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// The string size cel-go uses for costs: code points.
pub(crate) fn str_size(v: &Value<'_>) -> u64 {
    v.cost_size()
}

pub(crate) fn list_of_strings<'a>(items: Vec<String>) -> Value<'a> {
    Value::list(items.into_iter().map(|s| Value::String(Str::Owned(s.into()))).collect())
}

/// The library value in `v`, if any.
pub(crate) fn as_opaque<'v>(v: &'v Value<'_>) -> Option<&'v Opaque> {
    match v {
        Value::Opaque(o) => Some(o),
        _ => None,
    }
}
