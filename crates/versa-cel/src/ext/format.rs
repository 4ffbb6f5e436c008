//! Kubernetes' format library (1.31): `format.<name>()` and `format.named(name)` (an optional)
//! give a `kubernetes.NamedFormat`, and `<format>.validate(string)` is `optional.none()` for a
//! valid string or `optional.of([messages])`.
//!
//! The names and their checks are Kubernetes' `ConstantFormats`: the name validators of
//! apimachinery (`versa_schema::names`, with their exact messages; the `...Prefix` variants
//! allow a trailing `-` as `generateName` does), `uri` (Go's `url.ParseRequestURI` error),
//! and the kube-openapi formats `uuid`, `byte`, `date`, `datetime` (`versa_schema::formats`).
//! `validate` costs `(1 + size) × 0.1` rounded up times a quarter of the format's longest
//! regex, rounded up, as Kubernetes charges it; `format.named` 1.

use std::sync::Arc;

use super::{Res, as_opaque, ceil_cost, charged, list_of_strings, opaque, str_size, text};
use crate::opaque::{FORMAT_TYPE, Opaque, format::named};
use crate::runtime::{CallContext, no_overload};
use crate::types::Type;
use crate::value::Value;

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let f = || Type::Opaque(FORMAT_TYPE);
    for name in [
        "format.dns1123Label",
        "format.dns1123Subdomain",
        "format.dns1035Label",
        "format.qualifiedName",
        "format.dns1123LabelPrefix",
        "format.dns1123SubdomainPrefix",
        "format.dns1035LabelPrefix",
        "format.labelValue",
        "format.uri",
        "format.uuid",
        "format.byte",
        "format.date",
        "format.datetime",
    ] {
        add(name, false, vec![], f());
    }
    add("format.named", false, vec![Type::String], Type::optional(f()));
    add("validate", true, vec![f(), Type::String], Type::optional(Type::list(Type::String)));
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    if !member && function == "format.named" {
        let name = args.first().and_then(text)?;
        return Some(charged(calls, 1, || {
            Ok(Value::Optional(named(name).map(|f| Arc::new(opaque(Opaque::Format(f))))))
        }));
    }
    if !member && args.is_empty() {
        let f = named(function.strip_prefix("format.")?)?;
        return Some(charged(calls, 1, || Ok(opaque(Opaque::Format(f)))));
    }
    if member && function == "validate" {
        let Some(Opaque::Format(f)) = args.first().and_then(as_opaque) else { return None };
        let Some(s) = args.get(1).and_then(text) else { return Some(Err(no_overload(function))) };
        let str_cost = ceil_cost((1.0 + str_size(&args[1]) as f64) * 0.1);
        let re_cost = ceil_cost(f.max_regex_size as f64 * 0.25);
        return Some(charged(calls, str_cost.saturating_mul(re_cost), || {
            let errors = (f.validate)(s);
            Ok(Value::Optional(if errors.is_empty() { None } else { Some(Arc::new(list_of_strings(errors))) }))
        }));
    }
    None
}
