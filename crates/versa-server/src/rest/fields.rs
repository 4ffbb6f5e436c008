//! Field management on the request side: who owns which field of an object
//! (`metadata.managedFields`), kept on every create, update and patch as kube-apiserver's field
//! manager keeps it, and server-side apply (`application/apply-patch+yaml`).
//!
//! The algorithms — field sets, merging by the schema, conflicts, the caps and resets of
//! `managedFields` — are `versa-merge`'s. This module gives them what kube's handlers give
//! the field manager:
//!
//! - the manager's name: `fieldManager`, else the user agent up to its first `/` (kube's
//!   `managerOrUserAgent`), checked as apimachinery checks Create/Update/PatchOptions (at most
//!   128 bytes, printable; `fieldManager` required for apply, `force` only for apply);
//! - the subresource an entry is written for, and the fields each endpoint resets (kube's
//!   `GetResetFields`: `status` on the main endpoint of a resource with a status subresource,
//!   `spec` on `/status`), which nobody owns through that endpoint;
//! - the applied configuration decoded (YAML or JSON), its type checked, and the apply's
//!   failures as kube answers them: 409 with one cause per conflicting field, 400 for a
//!   configuration of another kind or carrying `managedFields`, and 500 with kube's
//!   `failed to create typed patch object (...)` for one that does not fit the schema.
//!
//! Ownership is computed on the object as admitted (defaulted and pruned), so it never names a
//! field that is not stored. A failure of the bookkeeping of an update (which kube logs as
//! "should not happen") drops the object's `managedFields` rather than store wrong ones, as
//! kube does.

use http::StatusCode;
use serde_json::{Value, json};
use versa_merge::fieldmanager::Versions;
use versa_merge::{ApplyError, FieldPath, FieldSet, Options};
use versa_schema::Structural;
use versa_schema::{BadValue, Error as FieldError, ErrorList, Path};

use versa_registry::strategy::FieldValidation;

use super::{Ctx, Part};
use crate::codec::{self, Decoded};
use versa_registry::meta;
use versa_registry::{Flavor, Resource};
use crate::status::Status;

/// apimachinery's `FieldManagerMaxLength`.
const MAX_MANAGER_BYTES: usize = 128;

/// Who writes, and through which endpoint.
#[derive(Debug, Clone)]
pub struct Manager {
    /// The manager's name (`fieldManager` or the user agent's product).
    pub name: String,
    /// `status`, `scale`, or empty for the main resource.
    pub subresource: &'static str,
}

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

/// The fields an endpoint resets, which its writers never own (kube's `GetResetFields` of the
/// custom resource strategies).
fn reset_fields(ctx: &Ctx, subresource: &str) -> Option<FieldSet> {
    let has_status = ctx.res.flavor == Flavor::Definitions || ctx.ver().status;
    let field = match subresource {
        "" if has_status => "status",
        "status" => "spec",
        _ => return None,
    };
    Some(FieldSet::from_paths(&[FieldPath::fields(&[field])]))
}

/// What one operation needs besides the request: its version, time and reset fields, owned
/// here so that [`Operation::options`] can lend them to `versa-merge`.
struct Operation {
    api_version: String,
    now: String,
    reset: Option<FieldSet>,
}

impl Operation {
    fn new(ctx: &Ctx, manager: &Manager) -> Operation {
        Operation { api_version: ctx.api_version(), now: meta::now(), reset: reset_fields(ctx, manager.subresource) }
    }

    fn options<'a>(&'a self, ctx: &'a Ctx, manager: &'a Manager, versions: &'a ResourceVersions<'a>) -> Options<'a> {
        Options {
            schema: ctx.ver().merge_schema(),
            manager: &manager.name,
            api_version: &self.api_version,
            subresource: manager.subresource,
            now: &self.now,
            reset_fields: self.reset.as_ref(),
            versions: versions.offered().then_some(versions as &dyn Versions),
        }
    }
}

/// A resource's versions as structured merge reads them: entries written at another version
/// are judged on the objects converted there with the resource's conversion — in process for
/// `None` and `CEL`; through the webhook for `Webhook`, called from inside the (synchronous)
/// merge on the serving runtime's worker, which `block_in_place` hands its other tasks away
/// from while the webhook answers. Nothing a webhook answers is kept.
#[derive(Debug)]
struct ResourceVersions<'a>(&'a Resource);

impl ResourceVersions<'_> {
    fn offered(&self) -> bool {
        self.0.versions.len() > 1 && self.0.converter.is_ok()
    }

    /// `version` of `group/version`, for this resource's group.
    fn version<'v>(&self, api_version: &'v str) -> Option<&'v str> {
        match self.0.group.as_str() {
            "" => Some(api_version),
            group => api_version.strip_prefix(group)?.strip_prefix('/'),
        }
    }
}

impl Versions for ResourceVersions<'_> {
    fn schema(&self, api_version: &str) -> Option<&Structural> {
        self.0.version(self.version(api_version)?)?.schema.as_deref()
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, String> {
        let version =
            self.version(api_version).ok_or_else(|| format!("{api_version} is not a version of this resource"))?;
        let converter = self.0.converter.as_ref().map_err(String::clone)?;
        if converter.is_deterministic() {
            return converter.convert_sync(obj.clone(), version).map_err(|e| e.message);
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err("a conversion webhook cannot be called from a single-threaded runtime".into());
        }
        let converted = tokio::task::block_in_place(|| handle.block_on(converter.convert(vec![obj.clone()], version)));
        converted.map_err(|e| e.message)?.pop().ok_or_else(|| "the conversion returned no object".into())
    }
}

/// Records `manager`'s change from `live` (`None` on create) to `new` in `new`'s
/// `managedFields`.
pub fn track(ctx: &Ctx, manager: &Manager, live: Option<&Value>, new: &mut Value) {
    let (op, versions) = (Operation::new(ctx, manager), ResourceVersions(&ctx.res));
    match versa_merge::update(live, new, &op.options(ctx, manager, &versions)) {
        Ok(outcome) => *new = outcome.object,
        Err(e) => {
            tracing::error!(resource = %ctx.res.plural, name = %ctx.name, error = %e, "managedFields could not be updated; dropping them");
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
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
/// `managedFields`; `None` when creating): the merged object with its new `managedFields`.
pub fn apply(
    ctx: &mut Ctx,
    manager: &Manager,
    live: Option<&Value>,
    applied: &Applied,
    force: bool,
) -> Result<Value, Status> {
    let empty = json!({"apiVersion": ctx.api_version(), "kind": ctx.res.kind});
    let live = live.unwrap_or(&empty);
    let managed = versa_merge::ManagedFields::from_object(live)
        .map_err(|e| Status::unknown(format!("failed to decode managed fields: {e}")))?
        .unwrap_or_default();
    let (op, versions) = (Operation::new(ctx, manager), ResourceVersions(&ctx.res));
    let outcome = versa_merge::apply(live, &applied.config, &managed, &op.options(ctx, manager, &versions), force)
        .map_err(|e| match e {
            ApplyError::Conflicts(conflicts) => conflict_status(&conflicts),
            ApplyError::ManagedFieldsInPatch => Status::bad_request(e.to_string()),
            ApplyError::InvalidPatch(errs) => Status::unknown(format!(
                "failed to create typed patch object ({}): {errs}",
                identity(ctx, &applied.config)
            )),
            other => Status::unknown(other.to_string()),
        })?;
    report_duplicates(ctx, &applied.duplicates)?;
    Ok(outcome.object)
}

/// kube's `objectGVKNN` of the applied object: `namespace/name; group/version, Kind=Kind`.
fn identity(ctx: &Ctx, obj: &Value) -> String {
    let meta = |k: &str| obj.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or("").to_owned();
    let (group, version) = (&ctx.res.group, &ctx.version);
    format!("{}/{}; {group}/{version}, Kind={}", meta("namespace"), meta("name"), ctx.res.kind)
}

/// The 409 kube-apiserver answers conflicts with (`internal.NewConflictError`).
fn conflict_status(conflicts: &versa_merge::Conflicts) -> Status {
    let causes: Vec<Value> = conflicts
        .causes()
        .into_iter()
        .map(|c| json!({"reason": "FieldManagerConflict", "message": c.message, "field": c.field}))
        .collect();
    Status {
        code: StatusCode::CONFLICT,
        reason: "Conflict",
        message: conflicts.to_string(),
        details: Some(json!({"causes": causes})),
    }
}

/// Keys given twice in the applied configuration: a 400 with `fieldValidation=Strict`, a
/// warning with `Warn` (the default), nothing with `Ignore` — after the merge, as kube checks
/// them.
fn report_duplicates(ctx: &mut Ctx, duplicates: &[String]) -> Result<(), Status> {
    if duplicates.is_empty() {
        return Ok(());
    }
    let text = duplicates.iter().map(|d| format!("duplicate field {d:?}")).collect::<Vec<_>>().join(", ");
    match ctx.write.field_validation {
        FieldValidation::Strict => Err(Status::bad_request(format!("error strict decoding YAML: {text}"))),
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            ctx.warnings.push(text);
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
