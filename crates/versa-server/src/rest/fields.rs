//! Field management on the request side: who the manager is and what the apply body is. The
//! merge and the bookkeeping of `metadata.managedFields` are the registry's
//! (`versa_registry::fields`); this module gives them what kube's handlers give the field
//! manager:
//!
//! - the manager's name: `fieldManager`, else the user agent up to its first `/` (kube's
//!   `managerOrUserAgent`), checked as apimachinery checks Create/Update/PatchOptions (at most
//!   128 bytes, printable; `fieldManager` required for apply, `force` only for apply), and the
//!   subresource an entry is written for;
//! - the applied configuration decoded (YAML or JSON) and its type checked (400 for a
//!   configuration of another kind), its duplicate keys reported as `fieldValidation` says.
//!
//! The apply's other failures come from the registry as kube answers them: 409 with one cause
//! per conflicting field, 400 for a configuration carrying `managedFields`, 500 with kube's
//! `failed to create typed patch object (...)` for one that does not fit the schema.

use serde_json::Value;
pub use versa_registry::fields::Manager;
use versa_registry::strategy::FieldValidation;
use versa_registry::versions::Conversions;
use versa_schema::{BadValue, Error as FieldError, ErrorList, Path};

use super::{Ctx, Part};
use crate::codec::{self, Decoded};
use crate::status::Status;

/// apimachinery's `FieldManagerMaxLength`.
const MAX_MANAGER_BYTES: usize = 128;

/// The options kind a request's parameters are checked as (for kube's error texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Create,
    Update,
    Patch { apply: bool },
}

impl Verb {
    fn options_kind(self) -> &'static str {
        match self {
            Verb::Create => "CreateOptions",
            Verb::Update => "UpdateOptions",
            Verb::Patch { .. } => "PatchOptions",
        }
    }
}

/// The manager of a write through `part`, after checking `fieldManager` and `force` as kube's
/// `ValidateCreateOptions`/`ValidateUpdateOptions`/`ValidatePatchOptions` do.
pub fn manager(ctx: &Ctx, verb: Verb, subresource: &'static str) -> Result<Manager, Status> {
    let given = ctx.query.get("fieldManager").unwrap_or("");
    let mut errs = ErrorList::new();
    match verb {
        Verb::Patch { apply: true } if given.is_empty() => {
            errs.push(FieldError::required(Path::new("fieldManager"), "is required for apply patch"));
        }
        Verb::Patch { apply: false } if ctx.query.get("force").is_some() => {
            errs.push(FieldError::forbidden(Path::new("force"), "may not be specified for non-apply patch"));
        }
        _ => {}
    }
    if given.len() > MAX_MANAGER_BYTES {
        errs.push(FieldError::too_long(Path::new("fieldManager"), MAX_MANAGER_BYTES as i64));
    }
    for (i, c) in given.char_indices() {
        if !is_printable(c) {
            errs.push(FieldError::invalid(
                Path::new("fieldManager"),
                BadValue::from(given),
                format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    if !errs.is_empty() {
        return Err(Status::invalid("meta.k8s.io", verb.options_kind(), "", &errs));
    }
    let name = if given.is_empty() { from_user_agent(&ctx.headers) } else { given.to_owned() };
    Ok(Manager { name, subresource })
}

/// kube's `prefixFromUserAgent`: the user agent up to its first `/`, printable characters only,
/// at most 128 bytes (`kubectl/v1.36.0 (linux/amd64) ...` is `kubectl`).
fn from_user_agent(headers: &http::HeaderMap) -> String {
    let ua = headers.get(http::header::USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes())).unwrap_or_default();
    let mut name = String::new();
    for c in ua.split('/').next().unwrap_or("").chars().filter(|c| is_printable(*c)) {
        if name.len() + c.len_utf8() > MAX_MANAGER_BYTES {
            break;
        }
        name.push(c);
    }
    name
}

/// Go's `unicode.IsPrint` for the characters a query or header can carry: no control
/// characters, and of the spaces only U+0020.
fn is_printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// An applied configuration, decoded.
#[derive(Debug)]
pub struct Applied {
    pub config: Value,
    /// Keys given twice (a Strict apply fails on them after merging, as kube's does).
    pub duplicates: Vec<String>,
}

/// Decodes an apply body (YAML, of which JSON is a part) and checks that it is an object of the
/// endpoint's kind and version (kube's `versionCheckManager`, then the structured merge
/// manager's checks).
pub fn decode_applied(ctx: &Ctx, body: &[u8]) -> Result<Applied, Status> {
    let Decoded { value: config, duplicates } = decode_config(body)?;
    ctx.audit_patch(&config);
    if !config.is_object() {
        return Err(Status::bad_request(
            "error decoding YAML: error unmarshaling JSON: json: cannot unmarshal non-object into Go value of type map[string]interface {}",
        ));
    }
    check_type(&config, &ctx.api_version(), &ctx.res.kind)?;
    Ok(Applied { config, duplicates })
}

/// An applied configuration must be of the endpoint's kind and version (kube's
/// `versionCheckManager`): `invalid object type: <group>/<version>, Kind=<kind>` otherwise.
pub fn check_type(config: &Value, api_version: &str, kind: &str) -> Result<(), Status> {
    let text = |k: &str| config.get(k).and_then(Value::as_str).unwrap_or("");
    let (given_version, given_kind) = (text("apiVersion"), text("kind"));
    if given_version != api_version || given_kind != kind {
        let (group, version) = given_version.rsplit_once('/').unwrap_or(("", given_version));
        return Err(Status::bad_request(format!("invalid object type: {group}/{version}, Kind={given_kind}")));
    }
    Ok(())
}

/// An apply body: YAML, of which JSON is a part. Most clients send JSON; it is read as JSON
/// (several times faster), and anything else, or anything the JSON reader refuses, by the YAML
/// reader.
pub fn decode_config(body: &[u8]) -> Result<Decoded, Status> {
    let looks_json = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if looks_json && let Ok(decoded) = codec::decode(body, codec::Format::Json) {
        return Ok(decoded);
    }
    codec::decode(body, codec::Format::Yaml)
        .map_err(|s| Status { message: format!("error decoding YAML: {}", s.message), ..s })
}

/// Server-side apply of `applied` by `manager` to `live` (at the request version, with its
/// `managedFields`; `None` when creating): the merged object with its new `managedFields` (the
/// registry's `Strategy::apply`, a webhook's conversions answered from `conversions`, which the
/// store makes between runs), then the configuration's duplicate keys reported as
/// `fieldValidation` says.
pub fn apply(
    ctx: &Ctx,
    conversions: &Conversions,
    manager: &Manager,
    live: Option<&Value>,
    applied: &Applied,
    force: bool,
    warnings: &mut Vec<String>,
) -> Result<Value, Status> {
    let merged = ctx.strategy().apply(manager, live, &applied.config, force, conversions, &ctx.state.metrics)?;
    report_duplicates(ctx, &applied.duplicates, warnings)?;
    Ok(merged)
}

/// Keys given twice in the applied configuration: a 400 with `fieldValidation=Strict`, a
/// warning with `Warn` (the default), nothing with `Ignore` — after the merge, as kube checks
/// them.
fn report_duplicates(ctx: &Ctx, duplicates: &[String], warnings: &mut Vec<String>) -> Result<(), Status> {
    if duplicates.is_empty() {
        return Ok(());
    }
    let text = duplicates.iter().map(|d| format!("duplicate field {d:?}")).collect::<Vec<_>>().join(", ");
    match ctx.write.field_validation {
        FieldValidation::Strict => Err(Status::bad_request(format!("error strict decoding YAML: {text}"))),
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            warnings.push(text);
            Ok(())
        }
    }
}

/// The `managedFields` a kind's subresource writes under: an apply or update through `part`.
pub fn subresource(part: Part) -> &'static str {
    match part {
        Part::Main => "",
        Part::Status => "status",
        Part::Finalize => "finalize",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manager_from_user_agent() {
        let cases = [
            ("kubectl/v1.36.0 (linux/amd64) kubernetes/abcdef", "kubectl"),
            ("Go-http-client/1.1", "Go-http-client"),
            ("OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"),
            ("", ""),
            ("tab\there", "tabhere"),
        ];
        for (ua, want) in cases {
            let mut headers = http::HeaderMap::new();
            if !ua.is_empty() {
                headers.insert(http::header::USER_AGENT, ua.parse().unwrap());
            }
            assert_eq!(from_user_agent(&headers), want, "{ua:?}");
        }
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::USER_AGENT, "a".repeat(300).parse().unwrap());
        assert_eq!(from_user_agent(&headers).len(), MAX_MANAGER_BYTES);
    }
}
