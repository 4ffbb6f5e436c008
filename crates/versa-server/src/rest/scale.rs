//! The `scale` subresource: an `autoscaling/v1` `Scale` read from and written to the paths the
//! definition names (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`), as
//! apiextensions-apiserver's scale REST does. Writes change only the spec replicas field and go
//! through the ordinary update pipeline (validation, compare-and-swap).

use http::StatusCode;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresourceScale;
use serde_json::{Value, json};
use versa_registry::scale::set_path;

use super::fields::{self, Manager, Verb};
use versa_registry::store::{Fields, Write};

use super::write::update_through_store;
use super::{Answer, Ctx, Part};
use crate::codec;
use crate::patch::{self, PatchType};
use crate::status::Status;

/// The Scale of an object.
fn to_scale(obj: &Value, spec: &CustomResourceSubresourceScale) -> Result<Value, Status> {
    versa_registry::scale::to_scale(obj, spec).ok_or_else(|| {
        Status::internal(format!("the spec replicas field {:?} does not exist", spec.spec_replicas_path))
    })
}

fn scale_spec(ctx: &Ctx) -> Result<CustomResourceSubresourceScale, Status> {
    ctx.ver().scale.clone().ok_or_else(Status::not_found_path)
}

/// `GET .../<name>/scale`.
pub async fn get(ctx: &Ctx) -> Answer {
    let spec = scale_spec(ctx)?;
    let kv = ctx.state.store.get(&ctx.key(&ctx.name)).await.map_err(ctx.storage_error(&ctx.name))?;
    let obj = ctx.boundary().from_storage(&kv.ok_or_else(|| ctx.not_found())?).await?;
    ctx.respond_object(StatusCode::OK, &to_scale(&obj, &spec)?)
}

/// `PUT .../<name>/scale`.
pub async fn update(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let manager = fields::manager(ctx, Verb::Update, "scale")?;
    let format = codec::body_format(&ctx.headers)?;
    let decoded = codec::decode_object(body, format, "Scale")?;
    ctx.audit_request_object(&decoded, false);
    let scale = decoded.value;
    write_scale(ctx, &manager, |_| Ok(scale.clone())).await
}

/// `PATCH .../<name>/scale`: the patch applies to the Scale.
pub async fn patch(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let ct = ctx.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let patch_type = match PatchType::from_content_type(&ct) {
        Some(PatchType::Apply) => return apply(ctx, body).await,
        Some(t @ (PatchType::Json | PatchType::Merge)) => t,
        _ => {
            return Err(Status::unsupported_media_type(
                &ct,
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
    };
    let manager = fields::manager(ctx, Verb::Patch { apply: false }, "scale")?;
    let body = patch::Body::parse(body);
    if let Some(parsed) = body.parsed() {
        ctx.audit_patch(parsed);
    }
    write_scale(ctx, &manager, |current| {
        patch::apply(patch_type, current, &body).map_err(|e| Status::bad_request(e.message().to_owned()))
    })
    .await
}

/// Asks `make` for the new Scale (given the current one), writes its replicas into the object
/// through the one read–modify–write of the update pipeline, answers the new Scale.
async fn write_scale(ctx: &mut Ctx, manager: &Manager, make: impl Fn(&Value) -> Result<Value, Status>) -> Answer {
    let spec = scale_spec(ctx)?;
    let write = Write {
        part: Part::Main,
        subresource: "scale",
        duplicates: &[],
        fields: Fields::Track(manager),
        decoded: false,
    };
    let (_, updated) = update_through_store(ctx, write, |ctx, _, current, _| {
        let (kv, obj) = current.ok_or_else(|| ctx.not_found())?;
        let scale = make(&to_scale(obj, &spec).unwrap_or_else(|_| json!({"spec": {}})))?;
        let replicas = match scale.pointer("/spec/replicas") {
            Some(Value::Number(n)) if n.as_i64().is_some() => n.clone(),
            None | Some(Value::Null) => {
                return Err(Status::bad_request(format!(
                    "the spec replicas field {:?} cannot be empty",
                    spec.spec_replicas_path
                )));
            }
            Some(other) => {
                return Err(Status::bad_request(format!("spec.replicas: Invalid value: {other}: must be an integer")));
            }
        };
        let precondition = scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        if !precondition.is_empty() && precondition != kv.mod_revision.to_string() {
            return Err(Status::conflict(&ctx.res.group, &ctx.res.plural, &ctx.name));
        }
        let mut new = obj.clone();
        set_path(&mut new, &spec.spec_replicas_path, Value::Number(replicas));
        Ok(new)
    })
    .await?;
    ctx.respond_object(StatusCode::OK, &to_scale(&updated, &spec)?)
}

/// `PATCH .../<name>/scale` with `application/apply-patch+yaml`: an applied `autoscaling/v1`
/// Scale, as kube's scale handler runs it — the configuration's replicas applied to the object's
/// spec replicas field by the manager under subresource `scale` (so it conflicts with, or with
/// `force` takes the field from, whoever else owns it), then the ordinary update pipeline.
async fn apply(ctx: &mut Ctx, body: &[u8]) -> Answer {
    let spec = scale_spec(ctx)?;
    let manager = fields::manager(ctx, Verb::Patch { apply: true }, "scale")?;
    let scale = fields::decode_config(body)?.value;
    ctx.audit_patch(&scale);
    fields::check_type(&scale, "autoscaling/v1", "Scale")?;
    // The same configuration, in the object's terms.
    let mut config = json!({"apiVersion": ctx.api_version(), "kind": ctx.res.kind, "metadata": {"name": ctx.name}});
    if let Some(replicas) = scale.pointer("/spec/replicas") {
        set_path(&mut config, &spec.spec_replicas_path, replicas.clone());
    }
    let applied = fields::Applied { config, duplicates: Vec::new() };
    let force = ctx.query.get("force") == Some("true");
    let write =
        Write { part: Part::Main, subresource: "scale", duplicates: &[], fields: Fields::Applied, decoded: false };
    let (_, updated) = update_through_store(ctx, write, |ctx, conversions, current, warnings| {
        let (_, obj) = current.ok_or_else(|| ctx.not_found())?;
        fields::apply(ctx, conversions, &manager, Some(obj), &applied, force, warnings)
    })
    .await?;
    ctx.respond_object(StatusCode::OK, &to_scale(&updated, &spec)?)
}
