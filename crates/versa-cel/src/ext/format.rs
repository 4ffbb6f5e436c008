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

use super::{FORMAT_TYPE, Opaque, Res, as_opaque, ceil_cost, charged, list_of_strings, opaque, str_size, text};
use crate::eval::{Interp, no_overload};
use crate::types::Type;
use crate::value::Value;
use versa_schema::names;

/// One named format.
#[derive(Debug)]
pub struct NamedFormat {
    /// The name after `format.`.
    pub key: &'static str,
    validate: fn(&str) -> Vec<String>,
    /// Kubernetes' `MaxRegexSize`: the length of the regex the check stands for.
    pub max_regex_size: u64,
}

impl PartialEq for NamedFormat {
    fn eq(&self, other: &NamedFormat) -> bool {
        self.key == other.key
    }
}

fn openapi(format: &str, message: &str, value: &str) -> Vec<String> {
    if versa_schema::formats::matches(format, value) { Vec::new() } else { vec![message.to_owned()] }
}

/// Kubernetes' `ConstantFormats`.
pub static FORMATS: &[NamedFormat] = &[
    NamedFormat { key: "dns1123Label", validate: |s| names::name_is_dns_label(s, false), max_regex_size: 30 },
    NamedFormat { key: "dns1123Subdomain", validate: |s| names::name_is_dns_subdomain(s, false), max_regex_size: 60 },
    NamedFormat { key: "dns1035Label", validate: |s| names::name_is_dns1035_label(s, false), max_regex_size: 30 },
    NamedFormat { key: "qualifiedName", validate: names::is_qualified_name, max_regex_size: 60 },
    NamedFormat { key: "dns1123LabelPrefix", validate: |s| names::name_is_dns_label(s, true), max_regex_size: 30 },
    NamedFormat {
        key: "dns1123SubdomainPrefix",
        validate: |s| names::name_is_dns_subdomain(s, true),
        max_regex_size: 60,
    },
    NamedFormat { key: "dns1035LabelPrefix", validate: |s| names::name_is_dns1035_label(s, true), max_regex_size: 30 },
    NamedFormat { key: "labelValue", validate: names::is_valid_label_value, max_regex_size: 40 },
    NamedFormat {
        key: "uri",
        validate: |s| match super::url::parse(s) {
            Ok(_) => Vec::new(),
            Err(e) => vec![e],
        },
        // govalidator's URL regex, which Kubernetes uses as the estimate.
        max_regex_size: 1067,
    },
    NamedFormat { key: "uuid", validate: |s| openapi("uuid", "does not match the UUID format", s), max_regex_size: 70 },
    NamedFormat { key: "byte", validate: |s| openapi("byte", "invalid base64", s), max_regex_size: 84 },
    NamedFormat { key: "date", validate: |s| openapi("date", "invalid date", s), max_regex_size: 71 },
    NamedFormat { key: "datetime", validate: |s| openapi("datetime", "invalid datetime", s), max_regex_size: 71 },
];

/// Kubernetes' `MaxNameFormatRegexSize`, used by the static estimate of `validate`.
pub const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;

fn named(key: &str) -> Option<&'static NamedFormat> {
    FORMATS.iter().find(|f| f.key == key)
}

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
    interp: &mut Interp<'a, '_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    if !member && function == "format.named" {
        let name = args.first().and_then(text)?;
        return Some(charged(interp, 1, || {
            Ok(Value::Optional(named(name).map(|f| Arc::new(opaque(Opaque::Format(f))))))
        }));
    }
    if !member && args.is_empty() {
        let f = named(function.strip_prefix("format.")?)?;
        return Some(charged(interp, 1, || Ok(opaque(Opaque::Format(f)))));
    }
    if member && function == "validate" {
        let Some(Opaque::Format(f)) = args.first().and_then(as_opaque) else { return None };
        let Some(s) = args.get(1).and_then(text) else { return Some(Err(no_overload(function))) };
        let str_cost = ceil_cost((1.0 + str_size(&args[1]) as f64) * 0.1);
        let re_cost = ceil_cost(f.max_regex_size as f64 * 0.25);
        return Some(charged(interp, str_cost.saturating_mul(re_cost), || {
            let errors = (f.validate)(s);
            Ok(Value::Optional(if errors.is_empty() { None } else { Some(Arc::new(list_of_strings(errors))) }))
        }));
    }
    None
}
