//! `create`, `update`, `patch`, `delete` and `deletecollection`: the HTTP side of the write
//! pipeline of `../shared/DESIGN.md`, in the order it lists:
//!
//! 1. decode the body (bounded; JSON or YAML) — for a patch, apply it to the current object at
//!    the request version;
//! 2. the registry's strategy (`versa_registry::strategy`): server-owned metadata and
//!    subresource rules, then default → prune → validate at the request version, with
//!    `fieldValidation` deciding what unknown and duplicate fields cost; `managedFields`;
//! 3. convert to the storage version and store with compare-and-swap on the revision read
//!    (`versa_registry::storage`), every change of an existing object in one read–modify–write
//!    ([`write_object`], on `versa_storage::guaranteed_update`);
//! 4. answer at the request version with the new `resourceVersion`.
//!
//! Deletion honours finalizers: an object that has some is only marked (`deletionTimestamp`),
//! and is deleted by the update that removes the last one. `propagationPolicy` sets the
//! garbage collector's finalizers (`orphan`, `foregroundDeletion`) as kube-apiserver does, when
//! there is a garbage collector to act on them (cluster mode: kube's).

use http::StatusCode;
use serde_json::{Value, json};
use versa_admission::Operation;
use versa_registry::meta::{self, meta_mut, name_of, set_resource_version};
use versa_registry::strategy::{Checks, Deletion, Propagation, Strategy};
use versa_schema::pipeline;
use versa_schema::{BadValue, Error as FieldError, ErrorList, ErrorType, Path};
use versa_storage::{Committed, KeyValue, ReadModifyWrite, Update};

use super::fields::{self, Manager, Verb};
use super::read::{Filter, list_object, read_page};
use super::{Answer, Ctx, Part};
use crate::admission;
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
    // A `generateName` becomes a name in `insert`, after mutating admission (which sees the
    // object without one, as kube's does).
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

/// What a write is, besides the object: which part of it may change, the duplicate fields its
/// body had (for `fieldValidation`), and what happens to `managedFields`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Write<'a> {
    pub part: Part,
    /// The subresource written through: `status`, `scale`, `finalize`, or empty.
    pub subresource: &'static str,
    pub duplicates: &'a [String],
    pub fields: Fields<'a>,
    /// The object was decoded from the body already (an update's), its fields reported.
    pub decoded: bool,
}

impl Write<'_> {
    /// What admission judges besides the object.
    fn checks(&self, ctx: &Ctx) -> Checks<'_> {
        Checks { field_validation: ctx.write.field_validation, duplicates: self.duplicates }
    }
}

/// The create rules, whoever creates (a POST, an apply of an object that does not exist yet), in
/// kube's order: no creates while the definition is terminating or in a terminating namespace;
/// the object decoded (defaults, pruning, `fieldValidation`); `managedFields`; mutating
/// admission; then [`create_checks`].
async fn create_rules(ctx: &mut Ctx, obj: &mut Value, write: Write<'_>) -> Result<(), Status> {
    create_decode_and_mutate(ctx, obj, write).await?;
    create_checks(ctx, obj, write).await
}

/// The create rules up to mutating admission (see [`create_rules`]).
async fn create_decode_and_mutate(ctx: &mut Ctx, obj: &mut Value, write: Write<'_>) -> Result<(), Status> {
    if ctx.res.terminating {
        // kube's admission.NewForbidden: `<resource>.<group> "<name>" is forbidden: <why>`.
        let who = crate::status::qualified(&ctx.res.group, &ctx.res.plural);
        let subject = if ctx.name.is_empty() { who } else { format!("{who} {:?}", ctx.name) };
        return Err(Status::forbidden(
            format!("{subject} is forbidden: create not allowed while custom resource definition is terminating"),
            Some(json!({"name": ctx.name, "group": ctx.res.group, "kind": ctx.res.plural})),
        ));
    }
    let res = ctx.res.clone();
    let strategy = Strategy::new(&res, &res.versions[ctx.version_index]);
    let mut warnings = Vec::new();
    let decoded = strategy.decode(obj, write.checks(ctx), &mut warnings);
    ctx.warnings.append(&mut warnings);
    decoded?;
    if let Fields::Track(manager) = write.fields {
        fields::track(ctx, manager, None, obj);
    }
    mutating_admission(ctx, write, Operation::Create, obj, None).await
}

/// The create rules after mutating admission: the server-owned fields; validation; validating
/// admission. Run again for each name a `generateName` retry draws.
async fn create_checks(ctx: &mut Ctx, obj: &mut Value, write: Write<'_>) -> Result<(), Status> {
    let res = ctx.res.clone();
    let strategy = Strategy::new(&res, &res.versions[ctx.version_index]);
    let mut warnings = Vec::new();
    strategy.prepare_create(obj);
    let validated = strategy.validate(obj, None, Part::Main, &mut warnings);
    ctx.warnings.extend(warnings);
    validated?;
    validating_admission(ctx, write, Operation::Create, Some(obj), None).await
}

/// The update rules on the object a write makes from the current one (`old`), in kube's
/// order: the object decoded; `managedFields`; mutating admission; the subresource rules and
/// server-owned fields; validation; `generation`; validating admission.
async fn update_rules(ctx: &mut Ctx, new: &mut Value, old: &Value, write: Write<'_>) -> Result<(), Status> {
    let res = ctx.res.clone();
    let strategy = Strategy::new(&res, &res.versions[ctx.version_index]);
    let mut warnings = Vec::new();
    if !write.decoded {
        let decoded = strategy.decode(new, write.checks(ctx), &mut warnings);
        ctx.warnings.append(&mut warnings);
        decoded?;
    }
    if let Fields::Track(manager) = write.fields {
        fields::track(ctx, manager, Some(old), new);
    }
    mutating_admission(ctx, write, Operation::Update, new, Some(old)).await?;
    strategy.prepare_update(new, old, write.part);
    let validated = strategy.validate(new, Some(old), write.part, &mut warnings);
    ctx.warnings.extend(warnings);
    validated?;
    strategy.set_generation(new, old, write.part);
    validating_admission(ctx, write, Operation::Update, Some(new), Some(old)).await
}

/// Mutating admission (`admission/`) on the object a write makes. Through the scale
/// subresource admission sees the `Scale` (the new one and the old), and its mutated
/// `spec.replicas` is taken back into the object's spec replicas path, as kube's scale
/// subresource applies the admitted Scale.
async fn mutating_admission(
    ctx: &mut Ctx,
    write: Write<'_>,
    operation: Operation,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), Status> {
    admission::lifecycle(&ctx.admission(write.subresource), operation, obj).await?;
    let mut warnings = Vec::new();
    let result = match (write.subresource, ctx.ver().scale.clone()) {
        ("scale", Some(spec)) => {
            let Some(mut scale) = versa_registry::scale::to_scale(obj, &spec) else { return Ok(()) };
            let old_scale = old.and_then(|o| versa_registry::scale::to_scale(o, &spec));
            let request = ctx.admission(write.subresource);
            let mutated = admission::mutate(&request, operation, &mut scale, old_scale.as_ref(), &mut warnings).await;
            match mutated {
                Ok(true) => match scale.pointer("/spec/replicas") {
                    Some(Value::Number(n)) if n.is_i64() => {
                        versa_registry::scale::set_path(obj, &spec.spec_replicas_path, Value::Number(n.clone()));
                        Ok(())
                    }
                    other => Err(Status::bad_request(format!(
                        "spec.replicas: Invalid value: {}: must be an integer",
                        other.unwrap_or(&Value::Null)
                    ))),
                },
                other => other.map(|_| ()),
            }
        }
        _ => admission::mutate(&ctx.admission(write.subresource), operation, obj, old, &mut warnings).await.map(|_| ()),
    };
    ctx.warnings.extend(warnings);
    result
}

/// Validating admission (`admission/`) on the object about to be stored (`None`: a delete).
async fn validating_admission(
    ctx: &mut Ctx,
    write: Write<'_>,
    operation: Operation,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), Status> {
    let (obj, old) = match (write.subresource, &ctx.ver().scale) {
        ("scale", Some(spec)) => (
            obj.and_then(|o| versa_registry::scale::to_scale(o, spec)),
            old.and_then(|o| versa_registry::scale::to_scale(o, spec)),
        ),
        _ => (obj.cloned(), old.cloned()),
    };
    let mut warnings = Vec::new();
    let result =
        admission::validate(&ctx.admission(write.subresource), operation, obj.as_ref(), old.as_ref(), &mut warnings)
            .await;
    ctx.warnings.extend(warnings);
    result
}

/// How many names a create with `generateName` draws before it answers `AlreadyExists` (kube's
/// `maxNameGenerationCreateAttempts`).
const NAME_GENERATION_ATTEMPTS: usize = 8;

/// A create: the create rules, then the store (`AlreadyExists` if the name is taken — after
/// admission, as kube answers). Answers 201 and the object as stored.
///
/// An object with `generateName` and no name (after mutating admission) gets its name here, and
/// when the name drawn is taken, another, up to [`NAME_GENERATION_ATTEMPTS`] names, each attempt
/// running the checks after mutating admission again, as kube's store retries its create.
async fn insert(
    ctx: &mut Ctx,
    mut obj: Value,
    duplicates: &[String],
    fields: Fields<'_>,
) -> Result<(StatusCode, Value), Status> {
    let write = Write { part: Part::Main, subresource: "", duplicates, fields, decoded: false };
    create_decode_and_mutate(ctx, &mut obj, write).await?;
    if !needs_generated_name(&obj) {
        create_checks(ctx, &mut obj, write).await?;
        return store_new(ctx, obj).await;
    }
    let mut attempt = CreateAttempt { write, warnings_before: ctx.warnings.len() };
    with_generated_names(ctx, &obj, NAME_GENERATION_ATTEMPTS, meta::name_suffix, &mut attempt).await
}

/// One attempt of a create with a generated name: the checks after mutating admission, then
/// the store. Warnings of earlier attempts are dropped.
struct CreateAttempt<'a> {
    write: Write<'a>,
    warnings_before: usize,
}

impl Attempt<Ctx, (StatusCode, Value)> for CreateAttempt<'_> {
    async fn attempt(&mut self, ctx: &mut Ctx, mut candidate: Value) -> Result<(StatusCode, Value), Status> {
        ctx.warnings.truncate(self.warnings_before);
        ctx.name = name_of(&candidate).to_owned();
        create_checks(ctx, &mut candidate, self.write).await?;
        store_new(ctx, candidate).await
    }
}

/// One try of a write with a name drawn for it.
trait Attempt<C, T> {
    async fn attempt(&mut self, ctx: &mut C, candidate: Value) -> Result<T, Status>;
}

/// Whether `obj` has a `generateName` and no name.
fn needs_generated_name(obj: &Value) -> bool {
    let meta = obj.get("metadata");
    let text = |field: &str| meta.and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("");
    text("name").is_empty() && !text("generateName").is_empty()
}

/// Runs `attempt` on `obj` named from its `generateName` with a suffix from `suffix`, again with
/// a new suffix while it answers `AlreadyExists`, at most `attempts` times.
async fn with_generated_names<C, T>(
    ctx: &mut C,
    obj: &Value,
    attempts: usize,
    mut suffix: impl FnMut() -> String,
    attempt: &mut impl Attempt<C, T>,
) -> Result<T, Status> {
    let mut result = Err(Status::internal("no name was generated"));
    for _ in 0..attempts {
        let mut candidate = obj.clone();
        pipeline::generate_name(&mut candidate, &suffix());
        result = attempt.attempt(ctx, candidate).await;
        if !matches!(&result, Err(status) if status.reason == "AlreadyExists") {
            break;
        }
    }
    result
}

/// Stores a created object (or, on a dry run, says whether it could be).
async fn store_new(ctx: &mut Ctx, obj: Value) -> Result<(StatusCode, Value), Status> {
    let key = ctx.key(&ctx.name);
    if ctx.write.dry_run {
        // A dry run answers what the real create would, including AlreadyExists.
        if ctx.state.store.get(&key).await.map_err(ctx.storage_error(&ctx.name))?.is_some() {
            return Err(Status::already_exists(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        return Ok((StatusCode::CREATED, obj));
    }
    let bytes = ctx.boundary().to_storage(&obj).await?;
    let kv = ctx.state.store.create(&key, bytes).await.map_err(ctx.storage_error(&ctx.name))?;
    Ok((StatusCode::CREATED, answer_of(ctx, obj, &kv).await?))
}

/// The answer to a stored write at the request version: the object as admitted with its new
/// resourceVersion (what reading it back would give, without reading it back), or — when it is
/// stored at another version — the stored object converted back, as kube answers.
async fn answer_of(ctx: &Ctx, mut obj: Value, kv: &KeyValue) -> Result<Value, Status> {
    let boundary = ctx.boundary();
    if boundary.stored_elsewhere() {
        return Ok(boundary.from_storage(kv).await?);
    }
    set_resource_version(&mut obj, kv.mod_revision);
    Ok(obj)
}

/// The one read–modify–write of an object, for every verb that changes one (update, patch,
/// apply, the scale subresource), on storage's [`ReadModifyWrite`]: `make` is given the current
/// object at the request version (with its stored form) — or `None` when there is none — and
/// returns the object to write, or refuses (preconditions, a patch that does not apply, "not
/// found"); the create or update rules run on it; it is stored with compare-and-swap. A lost
/// race reads again and makes again. An update that removes a marked object's last finalizer
/// deletes it; one that changes nothing writes nothing (the resourceVersion stays, as kube's
/// `GuaranteedUpdate`); a dry run stores nothing. Answers the code and the object as stored.
pub(super) async fn write_object<F>(ctx: &mut Ctx, write: Write<'_>, mut make: F) -> Result<(StatusCode, Value), Status>
where
    F: FnMut(&mut Ctx, Option<(&KeyValue, &Value)>) -> Result<Value, Status>,
{
    let store = ctx.state.store.clone();
    let key = ctx.key(&ctx.name);
    let mut rmw = ReadModifyWrite::start(&*store, &key).await?;
    loop {
        let (update, decided) = decide(ctx, write, &mut make, rmw.current()).await?;
        let after = match rmw.commit(update).await? {
            Committed::Raced => continue,
            Committed::Done(after) => after,
        };
        return match (decided, after) {
            (Decided::Answer(code, obj), _) => Ok((code, obj)),
            (Decided::Written(code, obj), Some(kv)) => Ok((code, answer_of(ctx, obj, &kv).await?)),
            (Decided::Written(..), None) => Err(Status::internal("the write left no object behind")),
        };
    }
}

/// What one attempt of a write decided, besides the store operation.
enum Decided {
    /// The answer, whatever the store does (dry runs, no change, a delete by update).
    Answer(StatusCode, Value),
    /// This object is written; the answer is it with its new revision.
    Written(StatusCode, Value),
}

/// One attempt of [`write_object`]: the object made from `stored`, the rules, and the store
/// operation.
async fn decide<F>(
    ctx: &mut Ctx,
    write: Write<'_>,
    make: &mut F,
    stored: Option<&KeyValue>,
) -> Result<(Update, Decided), Status>
where
    F: FnMut(&mut Ctx, Option<(&KeyValue, &Value)>) -> Result<Value, Status>,
{
    let dry_run = ctx.write.dry_run;
    let Some(kv) = stored else {
        let mut obj = make(ctx, None)?;
        create_rules(ctx, &mut obj, write).await?;
        if dry_run {
            return Ok((Update::Keep, Decided::Answer(StatusCode::CREATED, obj)));
        }
        let bytes = ctx.boundary().to_storage(&obj).await?;
        return Ok((Update::Set(bytes), Decided::Written(StatusCode::CREATED, obj)));
    };
    let old = ctx.boundary().from_storage(kv).await?;
    let mut new = make(ctx, Some((kv, &old)))?;
    update_rules(ctx, &mut new, &old, write).await?;
    if dry_run && ctx.strategy().judges_stored_objects(&new, &old) {
        // What the change would do to the objects already stored (a dry run answers once).
        let warning = crate::controllers::stored_objects::dry_run_warning(&ctx.state, &new).await;
        ctx.warnings.extend(warning);
    }
    if ctx.strategy().deleted_by_update(&new, &old) {
        // The last finalizer is gone: the object goes.
        let update = if dry_run { Update::Keep } else { Update::Delete };
        return Ok((update, Decided::Answer(StatusCode::OK, new)));
    }
    let bytes = ctx.boundary().to_storage(&new).await?;
    // Nothing changed, and nothing to rewrite (a value encrypted with a key no longer writing is
    // rewritten, as kube does: key rotation).
    if bytes == kv.value && !ctx.state.store.stale(kv) {
        return Ok((Update::Keep, Decided::Answer(StatusCode::OK, old)));
    }
    if dry_run {
        return Ok((Update::Keep, Decided::Answer(StatusCode::OK, new)));
    }
    Ok((Update::Set(bytes), Decided::Written(StatusCode::OK, new)))
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
    let (code, obj) = write_object(ctx, write, |ctx: &mut Ctx, current: Option<(&KeyValue, &Value)>| {
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
    let (code, obj) = write_object(ctx, write, |ctx: &mut Ctx, current: Option<(&KeyValue, &Value)>| {
        let (kv, old) = current.ok_or_else(|| ctx.not_found())?;
        let patched = patch::apply_to(versa_registry::kinds::of(&ctx.res).strategic_merge(), patch_type, old, body)
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
    let (code, obj) = write_object(ctx, write, |ctx: &mut Ctx, current: Option<(&KeyValue, &Value)>| {
        let Some((kv, old)) = current else {
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
            return Ok(obj);
        };
        let mut merged = fields::apply(ctx, manager, Some(old), &applied, force)?;
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
#[derive(Debug, Default)]
struct DeleteOptions {
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
    /// How dependents are collected.
    propagation: Propagation,
}

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
    let mut warnings = Vec::new();
    let result = match mutate_delete(ctx, &ctx.name, &opts, &mut warnings).await {
        Ok(()) => delete_one(ctx, &ctx.name, &opts, &mut warnings).await,
        Err(e) => Err(e),
    };
    ctx.warnings.extend(warnings);
    let (code, value) = result?;
    ctx.respond_object(code, &value)
}

/// Deletes (or marks) one object; returns the answer's code and body.
///
/// kube's generic store for resources without graceful deletion, in one read–modify–write:
/// preconditions first; then, if the object has finalizers or the options change its
/// garbage-collection finalizers, the finalizers are set and — while any remain — the object
/// is only marked (`deletionTimestamp` kept if it was already set,
/// `deletionGracePeriodSeconds: 0`, `generation` moved on the first mark) and answered;
/// otherwise it is deleted. A lost race looks again (preconditions are checked again).
async fn delete_one(
    ctx: &Ctx,
    name: &str,
    opts: &DeleteOptions,
    warnings: &mut Vec<String>,
) -> Result<(StatusCode, Value), Status> {
    let key = ctx.key(name);
    let mut rmw = ReadModifyWrite::start(&*ctx.state.store, &key).await?;
    loop {
        let (update, decided) = decide_delete(ctx, name, opts, rmw.current(), warnings).await?;
        let after = match rmw.commit(update).await? {
            Committed::Raced => continue,
            Committed::Done(after) => after,
        };
        return match (decided, after) {
            (Decided::Answer(code, obj), _) => Ok((code, obj)),
            (Decided::Written(code, mut obj), Some(kv)) => {
                set_resource_version(&mut obj, kv.mod_revision);
                Ok((code, obj))
            }
            (Decided::Written(..), None) => Err(Status::internal("the delete left no object behind")),
        };
    }
}

/// Mutating admission of a delete of `name` (the collection: empty), once per request.
async fn mutate_delete(ctx: &Ctx, name: &str, opts: &DeleteOptions, warnings: &mut Vec<String>) -> Result<(), Status> {
    let mut request = ctx.admission("");
    request.name = name;
    request.dry_run = opts.dry_run;
    request.field_manager = None;
    admission::mutate_delete(&request, warnings).await
}

/// One attempt of [`delete_one`].
async fn decide_delete(
    ctx: &Ctx,
    name: &str,
    opts: &DeleteOptions,
    stored: Option<&KeyValue>,
    warnings: &mut Vec<String>,
) -> Result<(Update, Decided), Status> {
    let (group, plural) = (&ctx.res.group, &ctx.res.plural);
    let current = stored.ok_or_else(|| Status::not_found(group, plural, name))?;
    let mut obj = ctx.boundary().from_storage(current).await?;
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
    // Validating admission sees the object as stored (kube's DELETE attributes: no object, the
    // old object), after the preconditions, before anything is marked or removed.
    let mut request = ctx.admission("");
    request.name = name;
    request.dry_run = opts.dry_run;
    request.field_manager = None;
    admission::validate(&request, Operation::Delete, None, Some(&obj), warnings).await?;
    let strategy = ctx.strategy();
    if let Some((group, plural)) = strategy.deletion_guard(&obj) {
        let (count, at_least) = count_objects(ctx, &group, &plural).await?;
        if count > 0 {
            let resource = format!("{}.{}", ctx.res.plural, ctx.res.group);
            return Err(versa_registry::definitions::protected_refusal(&resource, name, count, at_least).into());
        }
    }
    match strategy.deletion(&obj, name) {
        Deletion::Refuse(e) => return Err(e.into()),
        Deletion::Mark(marked) => return mark(ctx, opts, marked).await,
        Deletion::Proceed => {}
    }
    let new_finalizers = strategy.finalizers_for_deletion(&obj, &opts.propagation, ctx.state.garbage_collection);
    if let (Some(finalizers), Some(meta)) = (&new_finalizers, meta_mut(&mut obj)) {
        meta.insert("finalizers".into(), Value::Array(finalizers.clone()));
    }
    if strategy.marked_on_delete(&obj) {
        if obj.pointer("/metadata/deletionTimestamp").is_some() && new_finalizers.is_none() {
            // Marked already, and nothing to change: kube's update is a no-op.
            return Ok((Update::Keep, Decided::Answer(StatusCode::OK, obj)));
        }
        strategy.mark(&mut obj);
        return mark(ctx, opts, obj).await;
    }
    let success = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": name, "group": group, "kind": plural, "uid": uid},
    });
    let update = if opts.dry_run { Update::Keep } else { Update::Delete };
    Ok((update, Decided::Answer(StatusCode::OK, success)))
}

/// How many objects of `group`/`plural` are stored, counting at most [`GUARD_COUNT`] (then `true`:
/// at least that many).
async fn count_objects(ctx: &Ctx, group: &str, plural: &str) -> Result<(u64, bool), Status> {
    let prefix = ctx.state.keys.resource(group, plural);
    let mut options = versa_storage::ListOptions { limit: 1000, ..Default::default() };
    let mut count = 0u64;
    loop {
        let page = ctx.state.store.list(&prefix, options.clone()).await?;
        count += page.items.len() as u64;
        match page.continue_token {
            Some(_) if count >= GUARD_COUNT => return Ok((count, true)),
            Some(token) => options.continue_token = Some(token),
            None => return Ok((count, false)),
        }
    }
}

/// The most objects a protected definition's delete counts before saying "at least".
const GUARD_COUNT: u64 = 10_000;

/// A delete's mark: `obj` (marked) is answered as it is on a dry run, else stored.
async fn mark(ctx: &Ctx, opts: &DeleteOptions, obj: Value) -> Result<(Update, Decided), Status> {
    if opts.dry_run {
        return Ok((Update::Keep, Decided::Answer(StatusCode::OK, obj)));
    }
    let bytes = ctx.boundary().to_storage(&obj).await?;
    Ok((Update::Set(bytes), Decided::Written(StatusCode::OK, obj)))
}

/// `DELETE .../<plural>`: every object the selectors match, one by one; answers the list of
/// what was deleted (or marked).
pub async fn delete_collection(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let opts = delete_options(ctx, body)?;
    let filter = Filter::from_query(ctx)?;
    let mut warnings = Vec::new();
    if let Err(e) = mutate_delete(ctx, "", &opts, &mut warnings).await {
        ctx.warnings.extend(warnings);
        return Err(e);
    }
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
            _ => &*ctx,
        };
        match delete_one(target, &name, &opts, &mut warnings).await {
            Ok(_) => deleted.push(obj.clone()),
            Err(s) if s.code == StatusCode::NOT_FOUND => {}
            Err(s) => {
                ctx.warnings.extend(warnings);
                return Err(s);
            }
        }
    }
    ctx.warnings.extend(warnings);
    let page = super::read::Page { items: deleted, revision: page.revision, continue_token: None };
    Ok(ctx.respond(StatusCode::OK, &list_object(ctx, page)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::{Value, json};

    use super::{Attempt, Status, with_generated_names};

    /// A create that refuses the names it holds (`web-bad` with another error).
    struct Taken<'a>(&'a [&'a str]);

    impl Attempt<Vec<String>, String> for Taken<'_> {
        async fn attempt(&mut self, tried: &mut Vec<String>, candidate: Value) -> Result<String, Status> {
            let name = candidate["metadata"]["name"].as_str().unwrap().to_owned();
            tried.push(name.clone());
            if self.0.contains(&name.as_str()) {
                return Err(Status::already_exists("", "things", &name));
            }
            if name == "web-bad" {
                return Err(Status::bad_request("refused"));
            }
            Ok(name)
        }
    }

    /// A create that refuses the names in `taken`: which names were tried, and the answer.
    fn create(taken: &[&str], suffixes: &[&str], attempts: usize) -> (Vec<String>, Result<String, &'static str>) {
        let obj = json!({"metadata": {"generateName": "web-"}});
        let mut suffixes = suffixes.iter().map(|s| s.to_string());
        let mut tried: Vec<String> = Vec::new();
        let mut attempt = Taken(taken);
        let run = with_generated_names(&mut tried, &obj, attempts, || suffixes.next().unwrap(), &mut attempt);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let result = runtime.block_on(run).map_err(|s| s.reason);
        (tried, result)
    }

    #[test]
    fn a_generated_name_that_is_taken_is_drawn_again() {
        // (taken, suffixes drawn, attempts, names tried, answer)
        type Case<'a> = (&'a [&'a str], &'a [&'a str], usize, &'a [&'a str], Result<&'a str, &'a str>);
        let cases: &[Case] = &[
            (&[], &["aaaaa"], 8, &["web-aaaaa"], Ok("web-aaaaa")),
            (
                &["web-aaaaa", "web-bbbbb"],
                &["aaaaa", "bbbbb", "ccccc"],
                8,
                &["web-aaaaa", "web-bbbbb", "web-ccccc"],
                Ok("web-ccccc"),
            ),
            (&["web-a", "web-b"], &["a", "b", "c"], 2, &["web-a", "web-b"], Err("AlreadyExists")),
            // Any other refusal is the answer at once.
            (&[], &["bad", "ccccc"], 8, &["web-bad"], Err("BadRequest")),
        ];
        for (taken, suffixes, attempts, want_tried, want) in cases {
            let (tried, result) = create(taken, suffixes, *attempts);
            assert_eq!(tried, *want_tried, "taken {taken:?}");
            assert_eq!(result.as_deref().map_err(|e| *e), *want, "taken {taken:?}");
        }
    }
}
