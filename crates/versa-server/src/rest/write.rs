//! `create`, `update`, `patch`, `delete` and `deletecollection` — the write pipeline of
//! `../shared/DESIGN.md`, in the order it lists:
//!
//! 1. decode the body (bounded; JSON or YAML) — for a patch, read the current object at the
//!    request version and apply the patch to it;
//! 2. server-owned metadata and subresource rules ([`prepare_create`], [`prepare_update`]);
//! 3. default → prune → validate at the request version ([`admit`]), with `fieldValidation`
//!    deciding what unknown and duplicate fields cost;
//! 4. convert to the storage version and store with compare-and-swap on the revision read;
//! 5. answer at the request version with the new `resourceVersion`.
//!
//! Deletion honours finalizers: an object that has some is only marked (`deletionTimestamp`),
//! and is deleted by the update that removes the last one. `propagationPolicy` sets the
//! garbage collector's finalizers (`orphan`, `foregroundDeletion`) as kube-apiserver does, when
//! there is a garbage collector to act on them (cluster mode: kube's).

use std::collections::BTreeSet;

use http::StatusCode;
use serde_json::{Value, json};
use versa_schema::pipeline::{self, ResourceKind};
use versa_schema::{BadValue, Error as FieldError, ErrorList, ErrorType, Path};
use versa_storage::KeyValue;

use super::core::{self, NamespaceDelete};
use super::fields::{self, Manager, Verb};
use super::objects::{from_storage, name_of, set_resource_version, set_type_meta, stored_elsewhere, to_storage};
use super::read::{Filter, list_object, read_page};
use super::{Answer, Ctx, Part};
use crate::codec::{self, Decoded};
use crate::definitions;
use crate::meta::{self, meta_mut};
use crate::patch::{self, PatchType};
use crate::registry::Flavor;
use crate::status::Status;

/// Maps a storage error on this request's resource to its Status.
pub fn storage_error(ctx: &Ctx) -> impl Fn(versa_storage::Error) -> Status + '_ {
    move |e| {
        let (group, plural) = (&ctx.res.group, &ctx.res.plural);
        match e {
            versa_storage::Error::NotFound { .. } => Status::not_found(group, plural, &ctx.name),
            versa_storage::Error::AlreadyExists { .. } => Status::already_exists(group, plural, &ctx.name),
            versa_storage::Error::Conflict { .. } => Status::conflict(group, plural, &ctx.name),
            versa_storage::Error::TooLarge { .. } => Status {
                code: StatusCode::PAYLOAD_TOO_LARGE,
                reason: "RequestEntityTooLarge",
                message: format!("Request entity too large: {e}"),
                details: None,
            },
            versa_storage::Error::Expired { .. } => Status::expired(e.to_string()),
            versa_storage::Error::Unavailable { .. } => Status::storage_unavailable(e.to_string()),
            other => Status::internal(other.to_string()),
        }
    }
}

/// What `fieldValidation` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

fn field_validation(ctx: &Ctx) -> Result<FieldValidation, Status> {
    match ctx.query.get("fieldValidation").unwrap_or("") {
        "" | "Warn" => Ok(FieldValidation::Warn),
        "Ignore" => Ok(FieldValidation::Ignore),
        "Strict" => Ok(FieldValidation::Strict),
        other => Err(Status::bad_request(format!(
            "fieldValidation: Invalid value: {other:?}: fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\""
        ))),
    }
}

/// Reports duplicate and unknown fields as `fieldValidation` says: warnings, a 400 in kube's
/// words, or nothing.
fn report_fields(
    ctx: &mut Ctx,
    mode: FieldValidation,
    duplicates: &[String],
    unknown: &[String],
) -> Result<(), Status> {
    let problems: Vec<String> = duplicates
        .iter()
        .map(|d| format!("duplicate field {d:?}"))
        .chain(unknown.iter().map(|u| format!("unknown field {u:?}")))
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    match mode {
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            ctx.warnings.extend(problems);
            Ok(())
        }
        FieldValidation::Strict => {
            let kind = &ctx.res.kind;
            Err(Status::bad_request(format!(
                "{kind} in version {:?} cannot be handled as a {kind}: strict decoding error: {}",
                ctx.version,
                problems.join(", ")
            )))
        }
    }
}

/// The format of the request's body: the core kinds also take Kubernetes' protobuf (client-go's
/// typed clients send it); custom resources, as in kube, only JSON and YAML.
fn body_format(ctx: &Ctx) -> Result<codec::Format, Status> {
    if ctx.res.builtin.is_some() { codec::body_format_builtin(&ctx.headers) } else { codec::body_format(&ctx.headers) }
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
    fill_type_meta(ctx, &mut decoded.value);
    Ok(decoded)
}

/// Kinds kube-apiserver serves as compiled types (the core kinds, the definitions) are decoded
/// with the request's group, version and kind as defaults (apimachinery's `gvkWithDefaults`):
/// a body without `kind` or `apiVersion` is that kind — kopf posts its Events so. Custom
/// resources decode as they come, and the pipeline asks for both.
fn fill_type_meta(ctx: &Ctx, obj: &mut Value) {
    if ctx.res.builtin.is_none() && ctx.res.flavor != Flavor::Definitions {
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

/// Default → prune → validate → `x-kubernetes-validations` at the request version (custom
/// resources), or definition validation. Returns the pruned field paths; ratcheted rule
/// failures go to `warnings`.
fn admit(
    ctx: &Ctx,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
    warnings: &mut Vec<String>,
) -> Result<Vec<String>, Status> {
    let res = &ctx.res;
    let name = name_of(obj).to_owned();
    let invalid = |errs: &ErrorList| Status::invalid(&res.group, &res.kind, &name, errs);
    match res.flavor {
        Flavor::Definitions => {
            let result = match old {
                None => definitions::admit_create(obj),
                Some(old) => definitions::admit_update(obj, old, part == Part::Status),
            };
            let unknown = result.map_err(|errs| invalid(&errs))?;
            // Definitions are decoded and defaulted in their ResourceDefinition form; the
            // answer is in the face the request came through.
            set_type_meta(obj, &ctx.api_version(), &res.kind);
            if let Some(old) = old {
                let errs = pipeline::validate_update(obj, old);
                if !errs.is_empty() {
                    return Err(invalid(&errs));
                }
            }
            Ok(unknown)
        }
        Flavor::Custom => {
            let kind =
                ResourceKind { group: &res.group, version: &ctx.version, kind: &res.kind, namespaced: res.namespaced };
            let Some(schema) = ctx.ver().schema.as_deref() else {
                return Err(Status::internal(format!("no schema for version {}", ctx.version)));
            };
            let mut errs = ErrorList::new();
            let mut schema_valid = false;
            // On updates, errors about values that did not change are ratcheted (KEP-4008).
            let admitted = match old {
                Some(old) => pipeline::admit_update(obj, old, schema, &kind),
                None => pipeline::admit(obj, schema, &kind),
            };
            let unknown = match admitted {
                Ok(admitted) => {
                    schema_valid = true;
                    admitted.unknown_fields
                }
                Err(e) => {
                    errs = e;
                    Vec::new()
                }
            };
            if let Some(old) = old {
                errs.extend(pipeline::validate_update(obj, old));
                errs.extend(finalizer_rules(obj, old));
                if core::is_secret(ctx) {
                    errs.extend(core::validate_secret_update(obj, old));
                }
            }
            // x-kubernetes-validations run unless the schema found a blocking error (a value of
            // the wrong type, a missing required field, an unsupported enum value, too long, too
            // many); then kube says so instead of running them.
            let rules = &ctx.ver().rules;
            if !rules.is_empty() {
                if schema_valid || !versa_schema::validation::has_blocking_error(&errs) {
                    let outcome = rules.check(obj, old);
                    errs.extend(outcome.errors);
                    warnings.extend(outcome.warnings);
                } else {
                    errs.push(versa_schema::validation::cel_skipped_error());
                }
            }
            if let Some(scale) = &ctx.ver().scale {
                errs.extend(super::scale::validate_replica_paths(obj, scale));
            }
            if errs.is_empty() { Ok(unknown) } else { Err(invalid(&errs)) }
        }
    }
}

/// While an object is being deleted no finalizer may be added.
fn finalizer_rules(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return errs;
    }
    let set = |v: &Value| -> BTreeSet<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let (n, o) = (set(new), set(old));
    if n.difference(&o).next().is_some() {
        errs.push(FieldError::forbidden(
            Path::new("metadata").child("finalizers"),
            "no new finalizers can be added if the object is being deleted",
        ));
    }
    errs
}

/// The unknown fields a Strict request must fail on even when validation fails too (kube's
/// strict decoder runs before validation).
fn unknown_fields_of(ctx: &Ctx, obj: &Value) -> Vec<String> {
    let mut copy = obj.clone();
    match ctx.ver().schema.as_deref() {
        Some(schema) if ctx.res.flavor == Flavor::Custom => {
            pipeline::normalise(&mut copy, schema, versa_schema::objectmeta::Malformed::Drop).unwrap_or_default()
        }
        _ => definitions::admit_create(&mut copy).unwrap_or_default(),
    }
}

/// Runs [`admit`] and reports fields as `fieldValidation` says.
fn admit_reporting(
    ctx: &mut Ctx,
    obj: &mut Value,
    old: Option<&Value>,
    part: Part,
    duplicates: &[String],
) -> Result<(), Status> {
    let mode = field_validation(ctx)?;
    if mode == FieldValidation::Strict {
        // Strict decoding errors come before validation errors, as in kube.
        let unknown = unknown_fields_of(ctx, obj);
        report_fields(ctx, mode, duplicates, &unknown)?;
    }
    let mut warnings = Vec::new();
    let result = admit(ctx, obj, old, part, &mut warnings);
    ctx.warnings.extend(warnings);
    let unknown = result?;
    if mode == FieldValidation::Warn {
        report_fields(ctx, mode, duplicates, &unknown)?;
    }
    if ctx.res.flavor == Flavor::Custom {
        warn_finalizer_names(ctx, obj, old);
    }
    Ok(())
}

/// kube warns about finalizers without a domain (`example.com/name`) that an object gains.
fn warn_finalizer_names(ctx: &mut Ctx, obj: &Value, old: Option<&Value>) {
    let names = |v: &Value| -> Vec<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let before = old.map(names).unwrap_or_default();
    for f in names(obj) {
        if !f.contains('/') && !before.contains(&f) {
            ctx.warnings.push(format!(
                "metadata.finalizers: {f:?}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
}

/// The answer to a write stored at the request version: the object as admitted, with its new
/// resourceVersion (what reading it back would give, without reading it back).
fn stored_form(mut obj: Value, kv: &KeyValue) -> Value {
    set_resource_version(&mut obj, kv.mod_revision);
    obj
}

/// Server-owned fields on create, and the subresource rules.
fn prepare_create(ctx: &Ctx, obj: &mut Value) {
    if let Some(meta) = meta_mut(obj) {
        for field in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            meta.remove(field);
        }
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(meta::now()));
        meta.insert("generation".into(), json!(1));
    }
    if ctx.res.flavor == Flavor::Custom
        && ctx.ver().status
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    if ctx.res.builtin.is_some() {
        // The core kinds have no generation in kube.
        if let Some(meta) = meta_mut(obj) {
            meta.remove("generation");
        }
    }
    if core::is_namespace(ctx) {
        core::prepare_create_namespace(obj);
    }
    if core::is_secret(ctx) {
        core::prepare_secret(obj);
    }
}

/// `POST .../<plural>`.
pub async fn create(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let manager = fields::manager(ctx, Verb::Create, "")?;
    let Decoded { value: mut obj, duplicates } = decode_object(ctx, body)?;
    check_namespace(ctx, &mut obj)?;
    pipeline::generate_name(&mut obj, &meta::name_suffix());
    ctx.name = name_of(&obj).to_owned();
    let (code, answer) = insert(ctx, obj, &duplicates, Fields::Track(&manager)).await?;
    ctx.respond_object(code, &answer)
}

/// What a write does with `managedFields`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fields<'a> {
    /// Records the manager's change (create, update, non-apply patch).
    Track(&'a Manager),
    /// Nothing: an apply has computed them already.
    Applied,
}

/// The rest of a create once the object is decoded and named: admission, server-owned fields,
/// `managedFields`, the store. Answers 201 and the object as stored.
async fn insert(
    ctx: &mut Ctx,
    mut obj: Value,
    duplicates: &[String],
    fields: Fields<'_>,
) -> Result<(StatusCode, Value), Status> {
    if ctx.res.terminating {
        // kube's admission.NewForbidden: `<resource>.<group> "<name>" is forbidden: <why>`.
        let who = crate::status::qualified(&ctx.res.group, &ctx.res.plural);
        let subject = if ctx.name.is_empty() { who } else { format!("{who} {:?}", ctx.name) };
        return Err(Status::forbidden(
            format!("{subject} is forbidden: create not allowed while custom resource definition is terminating"),
            Some(json!({"name": ctx.name, "group": ctx.res.group, "kind": ctx.res.plural})),
        ));
    }
    super::core::admit_create_in_namespace(ctx).await?;
    prepare_create(ctx, &mut obj);
    admit_reporting(ctx, &mut obj, None, Part::Main, duplicates)?;
    if let Fields::Track(manager) = fields {
        fields::track(ctx, manager, None, &mut obj);
    }
    if ctx.dry_run()? {
        // A dry run answers what the real create would, including AlreadyExists.
        if ctx.state.store.get(&ctx.key(&ctx.name)).await.map_err(storage_error(ctx))?.is_some() {
            return Err(Status::already_exists(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        return Ok((StatusCode::CREATED, obj));
    }
    let bytes = to_storage(ctx, &obj).await?;
    let kv = ctx.state.store.create(&ctx.key(&ctx.name), bytes).await.map_err(storage_error(ctx))?;
    let answer = if stored_elsewhere(ctx) { from_storage(ctx, &kv).await? } else { stored_form(obj, &kv) };
    Ok((StatusCode::CREATED, answer))
}

/// How often an unconditional update is tried against a changing object.
const UNCONDITIONAL_UPDATE_TRIES: usize = 16;

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
    let rv = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("").to_owned();
    if rv.is_empty() && ctx.res.builtin.is_some() {
        // The core kinds allow unconditional updates (kube's AllowUnconditionalUpdate), as
        // client-go's typed clients send them (helm records its releases so): the update
        // applies to whatever is stored, retried if a writer comes between.
        for _ in 0..UNCONDITIONAL_UPDATE_TRIES {
            let current = ctx.state.store.get(&ctx.key(&ctx.name)).await.map_err(storage_error(ctx))?;
            let current = current.ok_or_else(|| ctx.not_found())?;
            match apply_update(ctx, &current, obj.clone(), part, &duplicates, Fields::Track(&manager)).await {
                Err(status) if status.code == StatusCode::CONFLICT && status.reason == "Conflict" => continue,
                answer => {
                    let (code, obj) = answer?;
                    return ctx.respond_object(code, &obj);
                }
            }
        }
        return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
    }
    if rv.is_empty() {
        let errs = ErrorList(vec![FieldError::new(
            ErrorType::Invalid,
            Path::new("metadata").child("resourceVersion"),
            BadValue::Raw("0x0".into()),
            "must be specified for an update",
        )]);
        return Err(Status::invalid(&ctx.res.group, &ctx.res.plural, &ctx.name, &errs));
    }
    let expected = super::read::parse_rv(&rv)?;
    let current = ctx.state.store.get(&ctx.key(&ctx.name)).await.map_err(storage_error(ctx))?;
    let current = current.ok_or_else(|| ctx.not_found())?;
    if current.mod_revision != expected {
        return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
    }
    let (code, obj) = apply_update(ctx, &current, obj, part, &duplicates, Fields::Track(&manager)).await?;
    ctx.respond_object(code, &obj)
}

/// The rest of an update once the new object is known and the current one read: subresource
/// rules and server-owned fields, admission, `managedFields`, finalizers, compare-and-swap.
pub(super) async fn apply_update(
    ctx: &mut Ctx,
    current: &KeyValue,
    mut new: Value,
    part: Part,
    duplicates: &[String],
    fields: Fields<'_>,
) -> Result<(StatusCode, Value), Status> {
    let old = from_storage(ctx, current).await?;
    prepare_update(ctx, &mut new, &old, part);
    admit_reporting(ctx, &mut new, Some(&old), part, duplicates)?;
    set_generation(ctx, &mut new, &old, part);
    if let Fields::Track(manager) = fields {
        fields::track(ctx, manager, Some(&old), &mut new);
    }
    let deleting = old.pointer("/metadata/deletionTimestamp").is_some();
    let empty = |path: &str| new.pointer(path).and_then(Value::as_array).is_none_or(|f| f.is_empty());
    // A namespace also waits for its `spec.finalizers` (kube's ShouldDeleteDuringUpdate).
    let no_finalizers = empty("/metadata/finalizers") && (!core::is_namespace(ctx) || empty("/spec/finalizers"));
    if deleting && no_finalizers {
        // The last finalizer is gone: the object goes.
        if !ctx.dry_run()? {
            ctx.state
                .store
                .delete(&ctx.key(&ctx.name), Some(current.mod_revision))
                .await
                .map_err(storage_error(ctx))?;
        }
        return Ok((StatusCode::OK, new));
    }
    let bytes = to_storage(ctx, &new).await?;
    if bytes == current.value {
        // Nothing changed: no write, the resourceVersion stays (as kube's GuaranteedUpdate).
        return Ok((StatusCode::OK, old));
    }
    if ctx.dry_run()? {
        return Ok((StatusCode::OK, new));
    }
    let kv =
        ctx.state.store.update(&ctx.key(&ctx.name), bytes, current.mod_revision).await.map_err(storage_error(ctx))?;
    let answer = if stored_elsewhere(ctx) { from_storage(ctx, &kv).await? } else { stored_form(new, &kv) };
    Ok((StatusCode::OK, answer))
}

/// Update rules: `/status` takes only `status` (and managedFields) from the request; the main
/// endpoint keeps the old `status` when the status subresource is on; identity and timestamps
/// come from the old object.
fn prepare_update(ctx: &Ctx, new: &mut Value, old: &Value, part: Part) {
    let has_status_subresource = ctx.res.flavor == Flavor::Definitions || ctx.ver().status;
    match part {
        Part::Status => {
            let status = new.get("status").cloned();
            let managed = new.pointer("/metadata/managedFields").cloned();
            *new = old.clone();
            if let Some(o) = new.as_object_mut() {
                match status {
                    Some(s) => o.insert("status".into(), s),
                    None => o.remove("status"),
                };
            }
            if let Some(meta) = meta_mut(new) {
                match managed {
                    Some(m) => meta.insert("managedFields".into(), m),
                    None => meta.remove("managedFields"),
                };
            }
        }
        Part::Main if has_status_subresource => {
            if let Some(o) = new.as_object_mut() {
                match old.get("status") {
                    Some(s) => o.insert("status".into(), s.clone()),
                    None => o.remove("status"),
                };
            }
        }
        Part::Main => {}
        Part::Finalize => core::prepare_finalize(new, old),
    }
    if core::is_namespace(ctx) && part != Part::Finalize {
        core::prepare_update_namespace(new, old);
    }
    if core::is_secret(ctx) {
        core::prepare_secret(new);
    }
    let old_meta = old.get("metadata");
    if let Some(meta) = meta_mut(new) {
        for field in ["creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
            match old_meta.and_then(|m| m.get(field)) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty)
            && let Some(uid) = old_meta.and_then(|m| m.get("uid"))
        {
            meta.insert("uid".into(), uid.clone());
        }
        meta.remove("selfLink");
    }
}

/// Bumps `generation` when anything outside `metadata` (and, behind the status subresource,
/// `status`) changed; `/status` writes never bump it.
fn set_generation(ctx: &Ctx, new: &mut Value, old: &Value, part: Part) {
    if part == Part::Status || ctx.res.builtin.is_some() {
        return;
    }
    let outside_meta = |v: &Value| -> Vec<(String, Value)> {
        v.as_object()
            .map(|o| o.iter().filter(|(k, _)| k.as_str() != "metadata").map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    let _ = ctx;
    if outside_meta(new) != outside_meta(old) {
        let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0) + 1;
        if let Some(meta) = meta_mut(new) {
            meta.insert("generation".into(), json!(generation));
        }
    }
}

/// How many times a patch is re-applied after losing a race.
const PATCH_ATTEMPTS: usize = 16;

/// `PATCH .../<name>` and `PATCH .../<name>/status`.
pub async fn patch(ctx: &mut Ctx, body: &[u8], part: Part) -> Answer {
    let patch_type = patch_type(ctx)?;
    let apply = patch_type == PatchType::Apply;
    let manager = fields::manager(ctx, Verb::Patch { apply }, fields::subresource(part))?;
    if apply {
        return server_side_apply(ctx, body, part, &manager).await;
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = ctx.state.store.get(&ctx.key(&ctx.name)).await.map_err(storage_error(ctx))?;
        let current = current.ok_or_else(|| ctx.not_found())?;
        let old = from_storage(ctx, &current).await?;
        let patched = patch::apply(patch_type, &old, body).map_err(|e| patch_status(ctx, &e))?;
        if !patched.is_object() {
            return Err(Status::bad_request("the patched object is not a JSON object"));
        }
        // A resourceVersion set by the patch is a precondition.
        let rv_after = patched.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        let precondition = rv_after != current.mod_revision.to_string();
        if precondition && !rv_after.is_empty() {
            return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        match apply_update(ctx, &current, patched, part, &[], Fields::Track(&manager)).await {
            Err(s) if s.reason == "Conflict" && !precondition && attempt < PATCH_ATTEMPTS => continue,
            Err(s) => return Err(s),
            Ok((code, obj)) => return ctx.respond_object(code, &obj),
        }
    }
}

fn patch_type(ctx: &Ctx) -> Result<PatchType, Status> {
    const ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";
    let ct = ctx.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    match PatchType::from_content_type(ct) {
        Some(t @ (PatchType::Json | PatchType::Merge | PatchType::Apply)) => Ok(t),
        _ => Err(Status::unsupported_media_type(ct, ACCEPTED)),
    }
}

/// `PATCH` with `application/apply-patch+yaml`: server-side apply, as kube's patch handler runs
/// it — the configuration merged into the live object (or, on the main endpoint, into a new one:
/// create-on-apply, 201), then the ordinary create or update pipeline, retried if a writer comes
/// between.
async fn server_side_apply(ctx: &mut Ctx, body: &[u8], part: Part, manager: &Manager) -> Answer {
    let applied = fields::decode_applied(ctx, body)?;
    let force = ctx.query.get("force") == Some("true");
    for _ in 0..PATCH_ATTEMPTS {
        let current = ctx.state.store.get(&ctx.key(&ctx.name)).await.map_err(storage_error(ctx))?;
        let Some(current) = current else {
            if part != Part::Main {
                return Err(ctx.not_found());
            }
            let mut obj = fields::apply(ctx, manager, None, &applied, force)?;
            if let Some(uid) = obj.pointer("/metadata/uid").and_then(Value::as_str).filter(|u| !u.is_empty()) {
                let why =
                    format!("uid mismatch: the provided object specified uid {uid}, and no existing object was found");
                return Err(Status::conflict_with(&ctx.res.group, &ctx.res.plural, &ctx.name, &why));
            }
            check_namespace(ctx, &mut obj)?;
            check_name(ctx, &obj)?;
            match insert(ctx, obj, &[], Fields::Applied).await {
                // Created by another writer meanwhile: apply to that object.
                Err(s) if s.reason == "AlreadyExists" => continue,
                answer => {
                    let (code, obj) = answer?;
                    return ctx.respond_object(code, &obj);
                }
            }
        };
        let old = from_storage(ctx, &current).await?;
        let mut merged = fields::apply(ctx, manager, Some(&old), &applied, force)?;
        check_namespace(ctx, &mut merged)?;
        check_name(ctx, &merged)?;
        // A resourceVersion in the configuration is a precondition.
        let rv = merged.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        let precondition = !rv.is_empty() && rv != current.mod_revision.to_string();
        if precondition {
            return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        match apply_update(ctx, &current, merged, part, &[], Fields::Applied).await {
            // Lost a race with another writer: merge into what it wrote.
            Err(s) if s.reason == "Conflict" => continue,
            answer => {
                let (code, obj) = answer?;
                return ctx.respond_object(code, &obj);
            }
        }
    }
    Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name))
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

fn patch_status(ctx: &Ctx, e: &patch::PatchError) -> Status {
    let code = StatusCode::from_u16(e.status_code()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut status = Status { code, reason: e.reason(), message: e.message().to_owned(), details: None };
    if code == StatusCode::UNPROCESSABLE_ENTITY {
        status.details = Some(json!({"name": ctx.name, "group": ctx.res.group, "kind": ctx.res.kind}));
    }
    status
}

/// `DeleteOptions` from the query and the body (empty: defaults) — preconditions, dry run and
/// how dependents are garbage-collected.
#[derive(Debug, Default)]
struct DeleteOptions {
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
    /// `orphanDependents` (deprecated, still honoured by kube).
    orphan_dependents: Option<bool>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
    propagation: Option<String>,
}

fn delete_options(ctx: &Ctx, body: &[u8]) -> Result<DeleteOptions, Status> {
    let mut opts = DeleteOptions { dry_run: ctx.dry_run()?, ..Default::default() };
    // DeleteOptions may come as query parameters too (client-go's `DeleteCollection` and
    // `kubectl delete --raw` send them that way); the body wins where both are given.
    opts.propagation = ctx.query.get("propagationPolicy").filter(|p| !p.is_empty()).map(str::to_owned);
    opts.orphan_dependents = match ctx.query.get("orphanDependents") {
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
            opts.propagation = Some(p.to_owned());
        }
        if let Some(o) = value.get("orphanDependents").and_then(Value::as_bool) {
            opts.orphan_dependents = Some(o);
        }
    }
    // apimachinery's ValidateDeleteOptions.
    let mut errs = ErrorList::default();
    if let (Some(_), Some(p)) = (opts.orphan_dependents, &opts.propagation) {
        errs.push(FieldError::invalid(
            Path::new("propagationPolicy"),
            BadValue::from(p.as_str()),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    match opts.propagation.as_deref() {
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

/// The finalizer that makes kube's garbage collector orphan an object's dependents before the
/// object goes (`metav1.FinalizerOrphanDependents`).
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer that makes it delete the dependents first (`metav1.FinalizerDeleteDependents`).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizers an object gets when deleted with `opts`, if they change — kube's
/// `deletionFinalizersForGarbageCollection`. The explicit options win (`orphanDependents`, then
/// `propagationPolicy`), else a garbage-collection finalizer the object already has; custom
/// resources default to `Background`, which needs no finalizer. Without a garbage collector
/// (standalone mode: nothing would ever remove these finalizers) nothing changes, as in a
/// kube-apiserver whose garbage collection is disabled.
fn finalizers_for_deletion(ctx: &Ctx, obj: &Value, opts: &DeleteOptions) -> Option<Vec<Value>> {
    if !ctx.state.garbage_collection || ctx.res.flavor != Flavor::Custom {
        return None;
    }
    let current: Vec<Value> =
        obj.pointer("/metadata/finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
    let has = |name: &str| current.iter().any(|f| f == name);
    let from_finalizers = if has(ORPHAN_FINALIZER) {
        Some("Orphan")
    } else if has(FOREGROUND_FINALIZER) {
        Some("Foreground")
    } else {
        None
    };
    let policy = match (opts.orphan_dependents, opts.propagation.as_deref()) {
        (Some(true), _) => "Orphan",
        (Some(false), _) => "Background",
        (None, Some(p)) => p,
        (None, None) => from_finalizers.unwrap_or("Background"),
    };
    let mut wanted: Vec<Value> =
        current.iter().filter(|f| **f != ORPHAN_FINALIZER && **f != FOREGROUND_FINALIZER).cloned().collect();
    match policy {
        "Orphan" => wanted.push(json!(ORPHAN_FINALIZER)),
        "Foreground" => wanted.push(json!(FOREGROUND_FINALIZER)),
        _ => {}
    }
    let as_set = |v: &[Value]| v.iter().filter_map(Value::as_str).map(str::to_owned).collect::<BTreeSet<_>>();
    (as_set(&current) != as_set(&wanted)).then_some(wanted)
}

/// `DELETE .../<name>`.
pub async fn delete(ctx: &Ctx, body: &[u8]) -> Answer {
    let opts = delete_options(ctx, body)?;
    let (code, value) = delete_one(ctx, &ctx.name, &opts).await?;
    ctx.respond_object(code, &value)
}

/// Deletes (or marks) one object; returns the answer's code and body.
///
/// kube's generic store for resources without graceful deletion: preconditions first; then, if
/// the object has finalizers or the options change its garbage-collection finalizers, the
/// finalizers are set and — while any remain — the object is only marked (`deletionTimestamp`
/// kept if it was already set, `deletionGracePeriodSeconds: 0`, `generation` moved on the first
/// mark) and answered; otherwise it is deleted.
async fn delete_one(ctx: &Ctx, name: &str, opts: &DeleteOptions) -> Result<(StatusCode, Value), Status> {
    let key = ctx.key(name);
    let (group, plural) = (&ctx.res.group, &ctx.res.plural);
    loop {
        let current = ctx.state.store.get(&key).await.map_err(storage_error(ctx))?;
        let current = current.ok_or_else(|| Status::not_found(group, plural, name))?;
        let mut obj = from_storage(ctx, &current).await?;
        let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_owned();
        // kube's rest.BeforeDelete: the conflict names the kind, not the resource.
        let kind = &ctx.res.kind;
        if let Some(want) = &opts.uid
            && *want != uid
        {
            let why = format!(
                "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            );
            return Err(Status::conflict_with(group, kind, name, &why));
        }
        if let Some(want) = &opts.resource_version
            && *want != current.mod_revision.to_string()
        {
            let why = format!(
                "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({}). The object might have been modified",
                current.mod_revision
            );
            return Err(Status::conflict_with(group, kind, name, &why));
        }
        if core::is_namespace(ctx) {
            match core::delete_namespace(&obj, name) {
                NamespaceDelete::Refuse(status) => return Err(status),
                NamespaceDelete::Mark(mut marked) => {
                    if opts.dry_run {
                        return Ok((StatusCode::OK, marked));
                    }
                    let bytes = to_storage(ctx, &marked).await?;
                    match ctx.state.store.update(&key, bytes, current.mod_revision).await {
                        Ok(kv) => {
                            set_resource_version(&mut marked, kv.mod_revision);
                            return Ok((StatusCode::OK, marked));
                        }
                        Err(versa_storage::Error::Conflict { .. }) => continue,
                        Err(e) => return Err(storage_error(ctx)(e)),
                    }
                }
                NamespaceDelete::Proceed => {}
            }
        }
        let new_finalizers = finalizers_for_deletion(ctx, &obj, opts);
        if let (Some(finalizers), Some(meta)) = (&new_finalizers, meta_mut(&mut obj)) {
            meta.insert("finalizers".into(), Value::Array(finalizers.clone()));
        }
        let finalizers = obj.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        let marked = obj.pointer("/metadata/deletionTimestamp").is_some();
        let outcome = if ctx.res.flavor == Flavor::Definitions || finalizers {
            if marked && new_finalizers.is_none() {
                // Marked already, and nothing to change: kube's update is a no-op.
                return Ok((StatusCode::OK, obj));
            }
            if ctx.res.flavor == Flavor::Definitions {
                definitions::mark_deleted(&mut obj, &meta::now());
            } else {
                mark_deleting(&mut obj);
            }
            if opts.dry_run {
                return Ok((StatusCode::OK, obj));
            }
            let bytes = to_storage(ctx, &obj).await?;
            ctx.state.store.update(&key, bytes, current.mod_revision).await.map(|kv| {
                set_resource_version(&mut obj, kv.mod_revision);
                (StatusCode::OK, obj)
            })
        } else {
            let success = json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "group": group, "kind": plural, "uid": uid},
            });
            if opts.dry_run {
                return Ok((StatusCode::OK, success));
            }
            ctx.state.store.delete(&key, Some(current.mod_revision)).await.map(|_| (StatusCode::OK, success))
        };
        match outcome {
            Ok(answer) => return Ok(answer),
            // Lost a race with a writer: look again (preconditions are re-checked).
            Err(versa_storage::Error::Conflict { .. }) => continue,
            Err(versa_storage::Error::NotFound { .. }) => return Err(Status::not_found(group, plural, name)),
            Err(e) => return Err(storage_error(ctx)(e)),
        }
    }
}

/// kube's `markAsDeleting`: `deletionTimestamp` set unless it already is (to an earlier time),
/// `deletionGracePeriodSeconds: 0`, and `generation` moved on when the object is first marked.
fn mark_deleting(obj: &mut Value) {
    let Some(meta) = meta_mut(obj) else { return };
    if !meta.contains_key("deletionTimestamp") {
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
            meta.insert("generation".into(), json!(generation + 1));
        }
        meta.insert("deletionTimestamp".into(), json!(meta::now()));
    }
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
}

/// `DELETE .../<plural>`: every object the selectors match, one by one; answers the list of
/// what was deleted (or marked).
pub async fn delete_collection(ctx: &Ctx, body: &[u8]) -> Answer {
    let opts = delete_options(ctx, body)?;
    let filter = Filter::from_query(ctx)?;
    let page = read_page(ctx, &filter).await?;
    let mut deleted = Vec::new();
    for obj in &page.items {
        let name = name_of(obj).to_owned();
        let ns_ctx;
        let target = match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(ns) if ctx.namespace.is_none() && ctx.res.namespaced => {
                ns_ctx = Ctx { namespace: Some(ns.to_owned()), name: name.clone(), ..ctx.fork() };
                &ns_ctx
            }
            _ => ctx,
        };
        match delete_one(target, &name, &opts).await {
            Ok(_) => deleted.push(obj.clone()),
            Err(s) if s.code == StatusCode::NOT_FOUND => {}
            Err(s) => return Err(s),
        }
    }
    let page = super::read::Page { items: deleted, revision: page.revision, continue_token: None };
    Ok(ctx.respond(StatusCode::OK, &list_object(ctx, page)))
}
