//! `create`, `update`, `patch`, `delete` and `deletecollection`: the HTTP side of the write
//! path. Each handler decodes the request (the body, bounded, JSON or YAML — protobuf for the
//! core kinds — and the options), calls the registry's store once
//! (`versa_registry::store::Store`: the strategy, admission, dry run, finalizers, storage and
//! the retry loop, in kube's order), and answers: the status code, the object at the request
//! version, or a `Status`.
//!
//! A patch and an apply are updates whose new object the store asks for inside its retry loop
//! (kube's `rest.UpdatedObjectInfo`): the patch body is parsed once, before the loop, and
//! applied there to the current object.

use http::StatusCode;
use serde_json::{Value, json};
use versa_registry::meta::{meta_mut, name_of};
use versa_registry::store::{DeleteOptions, Fields, Write};
use versa_registry::strategy::Checks;
use versa_registry::versions::Conversions;
use versa_schema::{BadValue, Error as FieldError, ErrorList, ErrorType, Path};
use versa_storage::KeyValue;

use super::fields::{self, Manager, Verb};
use super::read::{Filter, list_object, read_page};
use super::{Answer, Ctx, Part};
use crate::codec::{self, Decoded};
use crate::patch::{self, PatchType};
use crate::status::Status;

/// The format of the request's body: the core kinds also take Kubernetes' protobuf (client-go's
/// typed clients send it); custom resources, as in kube, only JSON and YAML.
fn body_format(ctx: &Ctx) -> Result<codec::Format, Status> {
    if versa_registry::kinds::of(&ctx.res).takes_protobuf() {
        codec::body_format_builtin(&ctx.headers)
    } else {
        codec::body_format(&ctx.headers)
    }
}

/// Decodes a create/update body: an object whose `apiVersion` (when set) is the request's.
fn decode_object(ctx: &Ctx, body: &[u8]) -> Result<Decoded, Status> {
    let format = body_format(ctx)?;
    let mut decoded = codec::decode_object(body, format, &ctx.res.kind)?;
    if !decoded.value.is_object() {
        return Err(Status::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): the body is not a JSON object",
            ctx.res.kind
        )));
    }
    let api_version = decoded.value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !api_version.is_empty() && api_version != ctx.api_version() {
        return Err(Status::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            ctx.api_version()
        )));
    }
    ctx.audit_request_object(&decoded, true);
    fill_type_meta(ctx, &mut decoded.value);
    Ok(decoded)
}

/// Kinds kube-apiserver serves as compiled types (the core kinds, the definitions) are decoded
/// with the request's group, version and kind as defaults (apimachinery's `gvkWithDefaults`):
/// a body without `kind` or `apiVersion` is that kind — kopf posts its Events so. Custom
/// resources decode as they come, and the pipeline asks for both.
fn fill_type_meta(ctx: &Ctx, obj: &mut Value) {
    if ctx.res.is_custom() {
        return;
    }
    let Some(map) = obj.as_object_mut() else { return };
    let missing = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some(""));
    if missing(map.get("kind")) {
        map.insert("kind".into(), json!(ctx.res.kind));
    }
    if missing(map.get("apiVersion")) {
        map.insert("apiVersion".into(), json!(ctx.api_version()));
    }
}

/// The namespace of the body must be the request's (filled in when empty); cluster-scoped
/// objects lose any namespace they carry.
fn check_namespace(ctx: &Ctx, obj: &mut Value) -> Result<(), Status> {
    let Some(meta) = meta_mut(obj) else { return Ok(()) };
    match &ctx.namespace {
        Some(ns) if ctx.res.namespaced => match meta.get("namespace").and_then(Value::as_str).unwrap_or("") {
            "" => {
                meta.insert("namespace".into(), json!(ns));
            }
            given if given != ns => {
                return Err(Status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        },
        _ => {
            meta.remove("namespace");
        }
    }
    Ok(())
}

/// `POST .../<plural>`.
pub async fn create(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let manager = fields::manager(ctx, Verb::Create, "")?;
    let Decoded { value: mut obj, duplicates } = decode_object(ctx, body)?;
    check_namespace(ctx, &mut obj)?;
    ctx.name = name_of(&obj).to_owned();
    let mut warnings = std::mem::take(&mut ctx.warnings);
    let (admitter, conversions) = (ctx.admitter(), Conversions::default());
    let created = ctx.store(&admitter, &conversions).create(obj, &duplicates, &manager, &mut warnings).await;
    ctx.warnings = warnings;
    ctx.respond_object(StatusCode::CREATED, &created?)
}

/// Runs an update of the request's object through the store, with the request's warnings;
/// answers its code (201 when an apply created it) and object. `updated` is given the
/// request's webhook conversions, which an apply's merge answers from (the store makes them
/// between its runs).
pub(super) async fn update_through_store(
    ctx: &mut Ctx,
    write: Write<'_>,
    updated: impl FnMut(&Ctx, &Conversions, Option<(&KeyValue, &Value)>, &mut Vec<String>) -> Result<Value, Status>,
) -> Result<(StatusCode, Value), Status> {
    let mut updated = updated;
    let mut warnings = std::mem::take(&mut ctx.warnings);
    let ctx_ref: &Ctx = ctx;
    let (admitter, conversions) = (ctx_ref.admitter(), Conversions::default());
    let result = ctx_ref
        .store(&admitter, &conversions)
        .update(
            &ctx_ref.name,
            write,
            |current: Option<(&KeyValue, &Value)>, warnings: &mut Vec<String>| {
                updated(ctx_ref, &conversions, current, warnings)
            },
            &mut warnings,
        )
        .await;
    ctx.warnings = warnings;
    let updated = result?;
    if updated.judge_stored_objects {
        // What the change would do to the objects already stored (a dry run answers once).
        let warning = crate::controllers::stored_objects::dry_run_warning(&ctx.state, &updated.object).await;
        ctx.warnings.extend(warning);
    }
    let code = if updated.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((code, updated.object))
}

/// `PUT .../<name>` and `PUT .../<name>/status`.
pub async fn update(ctx: &mut Ctx, body: &[u8], part: Part) -> Answer {
    let manager = fields::manager(ctx, Verb::Update, fields::subresource(part))?;
    let Decoded { value: mut obj, duplicates } = decode_object(ctx, body)?;
    let body_name = name_of(&obj);
    if body_name != ctx.name {
        return Err(Status::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            ctx.name
        )));
    }
    check_namespace(ctx, &mut obj)?;
    // The body is decoded once, before anything is read: its unknown and duplicate fields are
    // reported (or refused, `fieldValidation=Strict`) even when the update then conflicts, as
    // kube's handler decodes before its store compares resourceVersions.
    let mut warnings = Vec::new();
    let checks = Checks { field_validation: ctx.write.field_validation, duplicates: &duplicates };
    let decoded = ctx.strategy().decode(&mut obj, checks, &mut warnings);
    ctx.warnings.append(&mut warnings);
    decoded?;
    let rv = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("").to_owned();
    // The core kinds allow unconditional updates (kube's AllowUnconditionalUpdate), as
    // client-go's typed clients send them (helm records its releases so): the update applies to
    // whatever is stored. Custom resources need the resourceVersion they were read at.
    let expected = match rv.as_str() {
        "" if versa_registry::kinds::of(&ctx.res).allows_unconditional_update() => None,
        "" => {
            let errs = ErrorList(vec![FieldError::new(
                ErrorType::Invalid,
                Path::new("metadata").child("resourceVersion"),
                BadValue::Raw("0x0".into()),
                "must be specified for an update",
            )]);
            return Err(Status::invalid(&ctx.res.group, &ctx.res.plural, &ctx.name, &errs));
        }
        rv => Some(super::read::parse_rv(rv)?),
    };
    let write = Write {
        part,
        subresource: fields::subresource(part),
        duplicates: &[],
        fields: Fields::Track(&manager),
        decoded: true,
    };
    let (code, obj) = update_through_store(ctx, write, |ctx, _, current, _| {
        let (kv, _) = current.ok_or_else(|| ctx.not_found())?;
        if expected.is_some_and(|rv| rv != kv.mod_revision) {
            return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        Ok(obj.clone())
    })
    .await?;
    ctx.respond_object(code, &obj)
}

/// `PATCH .../<name>` and `PATCH .../<name>/status`.
pub async fn patch(ctx: &mut Ctx, body: &[u8], part: Part) -> Answer {
    let patch_type = patch_type(ctx)?;
    let apply = patch_type == PatchType::Apply;
    let manager = fields::manager(ctx, Verb::Patch { apply }, fields::subresource(part))?;
    if apply {
        return server_side_apply(ctx, body, part, &manager).await;
    }
    let write = Write {
        part,
        subresource: fields::subresource(part),
        duplicates: &[],
        fields: Fields::Track(&manager),
        decoded: false,
    };
    // Parsed once; applied to the object as read on each attempt.
    let body = patch::Body::parse(body);
    if let Some(parsed) = body.parsed() {
        ctx.audit_patch(parsed);
    }
    let (code, obj) = update_through_store(ctx, write, |ctx, _, current, _| {
        let (kv, old) = current.ok_or_else(|| ctx.not_found())?;
        let patched = patch::apply_to(versa_registry::kinds::of(&ctx.res).strategic_merge(), patch_type, old, &body)
            .map_err(|e| patch_status(&e))?;
        if !patched.is_object() {
            return Err(Status::bad_request("the patched object is not a JSON object"));
        }
        // A resourceVersion set by the patch is a precondition.
        let rv = patched.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        if !rv.is_empty() && rv != kv.mod_revision.to_string() {
            return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        Ok(patched)
    })
    .await?;
    ctx.respond_object(code, &obj)
}

/// The request's patch type, if the resource takes it: strategic merge patch for the built-in
/// kinds only, as kube-apiserver (`patch::accepted`).
fn patch_type(ctx: &Ctx) -> Result<PatchType, Status> {
    let accepted = patch::accepted(versa_registry::kinds::of(&ctx.res).strategic_merge());
    let ct = ctx.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    match PatchType::from_content_type(ct) {
        Some(t) if accepted.contains(&t) => Ok(t),
        _ => {
            let listed: Vec<&str> = accepted.iter().map(|t| t.media_type()).collect();
            Err(Status::unsupported_media_type(ct, &listed.join(", ")))
        }
    }
}

/// `PATCH` with `application/apply-patch+yaml`: server-side apply, as kube's patch handler runs
/// it — the configuration merged into the live object (or, on the main endpoint, into a new one:
/// create-on-apply, 201), then the ordinary create or update rules, in the one
/// read–modify–write ([`write_object`]).
async fn server_side_apply(ctx: &mut Ctx, body: &[u8], part: Part, manager: &Manager) -> Answer {
    let applied = fields::decode_applied(ctx, body)?;
    let force = ctx.query.get("force") == Some("true");
    let write = Write {
        part,
        subresource: fields::subresource(part),
        duplicates: &[],
        fields: Fields::Applied,
        decoded: false,
    };
    let (code, obj) = update_through_store(ctx, write, |ctx, conversions, current, warnings| {
        let Some((kv, old)) = current else {
            if part != Part::Main {
                return Err(ctx.not_found());
            }
            let mut obj = fields::apply(ctx, conversions, manager, None, &applied, force, warnings)?;
            if let Some(uid) = obj.pointer("/metadata/uid").and_then(Value::as_str).filter(|u| !u.is_empty()) {
                let why =
                    format!("uid mismatch: the provided object specified uid {uid}, and no existing object was found");
                return Err(Status::conflict_with(&ctx.res.group, &ctx.res.plural, &ctx.name, &why));
            }
            check_namespace(ctx, &mut obj)?;
            check_name(ctx, &obj)?;
            return Ok(obj);
        };
        let mut merged = fields::apply(ctx, conversions, manager, Some(old), &applied, force, warnings)?;
        check_namespace(ctx, &mut merged)?;
        check_name(ctx, &merged)?;
        // A resourceVersion in the configuration is a precondition.
        let rv = merged.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        if !rv.is_empty() && rv != kv.mod_revision.to_string() {
            return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        Ok(merged)
    })
    .await?;
    ctx.respond_object(code, &obj)
}

/// The object's name must be the URL's (kube's `checkName` after a patch).
fn check_name(ctx: &Ctx, obj: &Value) -> Result<(), Status> {
    let name = name_of(obj);
    if name != ctx.name {
        return Err(Status::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            ctx.name
        )));
    }
    Ok(())
}

fn patch_status(e: &patch::PatchError) -> Status {
    let code = StatusCode::from_u16(e.status_code()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut status = Status { code, reason: e.reason(), message: e.message().to_owned(), details: None };
    if code == StatusCode::UNPROCESSABLE_ENTITY {
        // kube's NewGenericServerResponse with no resource and no name: empty details.
        status.details = Some(json!({}));
    }
    status
}

/// `DeleteOptions` from the query and the body (empty: defaults) — preconditions, dry run and
/// how dependents are garbage-collected.
fn delete_options(ctx: &Ctx, body: &[u8]) -> Result<DeleteOptions, Status> {
    let mut opts = DeleteOptions { dry_run: ctx.write.dry_run, ..Default::default() };
    // DeleteOptions may come as query parameters too (client-go's `DeleteCollection` and
    // `kubectl delete --raw` send them that way); the body wins where both are given.
    opts.propagation.policy = ctx.query.get("propagationPolicy").filter(|p| !p.is_empty()).map(str::to_owned);
    opts.propagation.orphan_dependents = match ctx.query.get("orphanDependents") {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        let format = body_format(ctx)?;
        let value = codec::decode(body, format)?.value;
        opts.uid = value.pointer("/preconditions/uid").and_then(Value::as_str).map(str::to_owned);
        opts.resource_version =
            value.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(str::to_owned);
        if value.get("dryRun").and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v == "All")) {
            opts.dry_run = true;
        }
        if let Some(p) = value.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation.policy = Some(p.to_owned());
        }
        if let Some(o) = value.get("orphanDependents").and_then(Value::as_bool) {
            opts.propagation.orphan_dependents = Some(o);
        }
    }
    // apimachinery's ValidateDeleteOptions.
    let mut errs = ErrorList::default();
    if let (Some(_), Some(p)) = (opts.propagation.orphan_dependents, &opts.propagation.policy) {
        errs.push(FieldError::invalid(
            Path::new("propagationPolicy"),
            BadValue::from(p.as_str()),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    match opts.propagation.policy.as_deref() {
        None | Some("Orphan" | "Background" | "Foreground") => {}
        Some(other) => errs.push(FieldError::not_supported(
            Path::new("propagationPolicy"),
            other,
            &["Foreground", "Background", "Orphan", "nil"],
        )),
    }
    if !errs.is_empty() {
        return Err(Status::invalid("meta.k8s.io", "DeleteOptions", "", &errs));
    }
    Ok(opts)
}

/// `DELETE .../<name>`.
pub async fn delete(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let opts = delete_options(ctx, body)?;
    let mut warnings = std::mem::take(&mut ctx.warnings);
    let (admitter, conversions) = (ctx.admitter(), Conversions::default());
    let result = ctx.store(&admitter, &conversions).delete(&ctx.name, &opts, &mut warnings).await;
    ctx.warnings = warnings;
    ctx.respond_object(StatusCode::OK, &result?)
}

/// `DELETE .../<plural>`: every object the selectors match, one by one; answers the list of
/// what was deleted (or marked).
pub async fn delete_collection(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let opts = delete_options(ctx, body)?;
    let filter = Filter::from_query(ctx)?;
    let mut warnings = std::mem::take(&mut ctx.warnings);
    let admitter = ctx.admitter();
    let list = async {
        let page = read_page(ctx, &filter).await?;
        Ok((page.items, page.revision))
    };
    let conversions = Conversions::default();
    let result = ctx.store(&admitter, &conversions).delete_collection(&opts, list, &mut warnings).await;
    ctx.warnings = warnings;
    let (deleted, revision) = result?;
    let page = super::read::Page { items: deleted, revision, continue_token: None };
    Ok(ctx.respond(StatusCode::OK, &list_object(ctx, page)))
}
