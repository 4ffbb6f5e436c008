//! The REST layer: one implementation of Kubernetes' resource verbs for every served resource
//! (custom resources and the definitions API alike).
//!
//! [`serve`] routes a resource request to a verb handler: `read.rs` (get, list; `stream.rs`
//! writes unpaginated LISTs as they are read), `watch.rs`,
//! `write.rs` (create, update, patch, delete, deletecollection), `scale.rs` and `token.rs`
//! (ServiceAccounts' TokenRequests). They are HTTP adapters over the registry: objects cross the storage boundary through
//! [`Ctx::boundary`] (`versa_registry::storage`) and are admitted by [`Ctx::strategy`]
//! (`versa_registry::strategy`). Every answer is JSON (or YAML, or a Table, when asked) and
//! every error a `metav1.Status`.

mod fields;
mod filter;
mod read;
mod scale;
mod stream;
mod token;
mod watch;
mod write;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde_json::{Value, json};
use versa_registry::storage::Boundary;
use versa_registry::strategy::{FieldValidation, Strategy};
use versa_registry::{Resource, Version};

use crate::auth::UserInfo;
use crate::body::{Body, full};
use crate::codec;
use crate::query::Query;
use crate::request_info::RequestInfo;
use crate::state::State;
use crate::status::Status;

/// Everything a verb handler needs about the request.
#[derive(Debug)]
pub struct Ctx {
    pub state: Arc<State>,
    pub res: Arc<Resource>,
    /// The request version (served).
    pub version: String,
    /// Its index in `res.versions` (resolved at routing; `res` never changes).
    version_index: usize,
    pub namespace: Option<String>,
    pub name: String,
    pub query: Query,
    pub headers: HeaderMap,
    /// `Warning` headers to send.
    pub warnings: Vec<String>,
    /// The write options of the query, parsed once before anything else.
    pub write: WriteOptions,
    /// Who asks.
    pub user: Arc<UserInfo>,
    /// The request's audit event, when the policy records this request.
    pub audit: Option<crate::audit::Record>,
}

/// What every write takes from the query, parsed and checked once, up front — as kube decodes
/// and validates Create/Update/Patch/DeleteOptions before it reads the body.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: admit, do not store.
    pub dry_run: bool,
    /// `fieldValidation` (creates, updates and patches).
    pub field_validation: FieldValidation,
}

impl WriteOptions {
    /// The options of a request with `method`: none for reads; `dryRun` for every write (other
    /// values refused as kube does), `fieldValidation` for those with a body to decode.
    pub fn parse(method: &Method, query: &Query) -> Result<WriteOptions, Status> {
        let mut options = WriteOptions::default();
        if matches!(*method, Method::GET | Method::HEAD) {
            return Ok(options);
        }
        for v in query.all("dryRun") {
            match v {
                "All" => options.dry_run = true,
                "" => {}
                other => {
                    return Err(Status::bad_request(format!(
                        "Invalid dry run value {other:?}: supported values: \"All\""
                    )));
                }
            }
        }
        if *method != Method::DELETE {
            options.field_validation = FieldValidation::parse(query.get("fieldValidation").unwrap_or(""))?;
        }
        Ok(options)
    }
}

impl Ctx {
    /// Records a patch as kube's audit does from level `Request` on (kube's `LogRequestPatch`):
    /// the body as the verb decoded it — once its type and options are accepted, before it is
    /// applied — whether or not it then applies.
    pub fn audit_patch(&self, patch: &Value) {
        if let Some(record) = self.audit.as_ref().filter(|r| r.level() >= crate::audit::Level::Request) {
            record.request_body(patch.clone());
        }
    }

    /// Records the object a create or update decoded from its body (the verb's decoding, not a
    /// second one) as kube's audit does: custom resources defaulted, pruned and with metadata
    /// round-tripped through `ObjectMeta`, whose zero `creationTimestamp` is `null`. Its name,
    /// uid and resourceVersion reach the object reference at every level. A body kube's decoder
    /// would refuse (not an object, unknown or duplicate fields with `fieldValidation=Strict`)
    /// is not recorded: kube fails the request before it records the object. `of_resource`:
    /// the body is the resource's object (not a `Scale`).
    pub fn audit_request_object(&self, decoded: &codec::Decoded, of_resource: bool) {
        let Some(record) = &self.audit else { return };
        let strict = self.query.get("fieldValidation") == Some("Strict");
        if !decoded.value.is_object() || (strict && !decoded.duplicates.is_empty()) {
            return;
        }
        let mut obj = decoded.value.clone();
        if self.res.is_custom() && of_resource {
            if let Some(schema) = self.ver().schema() {
                let malformed = versa_schema::objectmeta::Malformed::Reject;
                match versa_schema::pipeline::normalise(&mut obj, &schema, malformed) {
                    Ok(unknown) if !strict || unknown.is_empty() => {}
                    _ => return,
                }
            }
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.entry("creationTimestamp").or_insert(Value::Null);
            }
        }
        record.request_object(obj);
    }

    pub fn ver(&self) -> &Version {
        &self.res.versions[self.version_index]
    }

    /// A copy for another task or another object (no warnings carried over, and nothing it
    /// decodes is the request's audited object).
    pub fn fork(&self) -> Ctx {
        Ctx {
            state: self.state.clone(),
            res: self.res.clone(),
            version: self.version.clone(),
            version_index: self.version_index,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            query: self.query.clone(),
            headers: self.headers.clone(),
            warnings: Vec::new(),
            write: self.write,
            user: self.user.clone(),
            audit: None,
        }
    }

    /// The storage boundary of the request's resource, for objects at the request version.
    pub fn boundary(&self) -> Boundary<'_> {
        Boundary::new(&self.res, &self.version, &self.state.metrics)
    }

    /// The write rules of the request's resource at the request version.
    pub fn strategy(&self) -> Strategy<'_> {
        Strategy::new(&self.res, self.ver())
    }

    /// The server's admission for the registry's store: the request's resource, version and
    /// user.
    pub fn admitter(&self) -> crate::admission::Admitter<'_> {
        crate::admission::Admitter { state: &self.state, res: &self.res, version: &self.version, user: &self.user }
    }

    /// The registry's store of the request's resource at the request version, in the request's
    /// namespace, with the request's write options, admitted by `admitter`.
    pub fn store<'a>(
        &'a self,
        admitter: &'a crate::admission::Admitter<'a>,
        conversions: &'a versa_registry::versions::Conversions,
    ) -> versa_registry::store::Store<'a, crate::admission::Admitter<'a>> {
        versa_registry::store::Store {
            res: &self.res,
            ver: self.ver(),
            storage: &*self.state.store,
            keys: &self.state.keys,
            observer: &self.state.metrics,
            conversions,
            admission: admitter,
            namespace: self.namespace.as_deref(),
            options: versa_registry::store::Options {
                dry_run: self.write.dry_run,
                field_validation: self.write.field_validation,
                field_manager: self.query.get("fieldManager"),
                garbage_collection: self.state.garbage_collection,
            },
        }
    }

    /// A storage error about object `name` of the request's resource, as its Status.
    pub fn storage_error<'a>(&'a self, name: &'a str) -> impl Fn(versa_storage::Error) -> Status + 'a {
        move |e| versa_registry::Error::storage(e, &self.res.group, &self.res.plural, name).into()
    }

    /// `<group>/<version>` of the request.
    pub fn api_version(&self) -> String {
        self.res.api_version(&self.version)
    }

    /// The store key of object `name` in the request's namespace.
    pub fn key(&self, name: &str) -> String {
        let (group, plural) = self.res.stored_as();
        self.state.keys.object(group, plural, self.namespace.as_deref(), name)
    }

    /// The store prefix of the request's collection (one namespace, or all).
    pub fn collection_prefix(&self) -> String {
        let (group, plural) = self.res.stored_as();
        match &self.namespace {
            Some(ns) => self.state.keys.namespace(group, plural, ns),
            None => self.state.keys.resource(group, plural),
        }
    }

    pub fn not_found(&self) -> Status {
        Status::not_found(&self.res.group, &self.res.plural, &self.name)
    }

    /// A JSON (or YAML) answer carrying the collected warnings.
    pub fn respond(&self, code: StatusCode, value: &Value) -> Response<Body> {
        let (bytes, content_type) = codec::encode(value, codec::response_encoding(&self.headers));
        let mut response = Response::new(full(bytes));
        *response.status_mut() = code;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        add_warnings(response.headers_mut(), self.ver().warning.iter().chain(self.warnings.iter()));
        response
    }
}

impl Ctx {
    /// One object's answer in the shape the client asked for, as kube's
    /// `transformResponseObject` gives it for every verb (reads, writes, deletes): the object,
    /// its PartialObjectMetadata, or a one-row Table. A `Status` (a delete's success) goes as it
    /// is; PartialObjectMetadataList for one object is a 406, kube's words. Only objects of the
    /// resource's own kind become Table rows (a Scale goes as it is).
    pub fn respond_object(&self, code: StatusCode, obj: &Value) -> Answer {
        if obj.get("kind").and_then(Value::as_str) == Some("Status") && obj.get("apiVersion") == Some(&json!("v1")) {
            return Ok(self.respond(code, obj));
        }
        Ok(match shape(&self.headers) {
            Shape::Object => self.respond(code, obj),
            Shape::Metadata => self.respond(code, &versa_registry::table::partial_object_metadata(obj)),
            Shape::MetadataList => {
                return Err(Status::not_acceptable(
                    "you requested PartialObjectMetadataList, but the requested object is not a list (*unstructured.Unstructured)",
                ));
            }
            Shape::Table if obj.get("kind").and_then(Value::as_str) == Some(self.res.kind.as_str()) => {
                let include = read::include_object(self)?;
                let table = self.ver().table().table(&[obj], None, include, std::time::SystemTime::now());
                self.respond(code, &table)
            }
            Shape::Table => self.respond(code, obj),
        })
    }

    /// Whether the answer is plain JSON objects (no Table, no metadata-only, no YAML): then
    /// rendered objects can be sent as they are.
    pub fn wants_plain_json(&self) -> bool {
        // What most clients send (client-go: JSON; the bench and curl: nothing), known at once.
        match self.headers.get(header::ACCEPT).map(HeaderValue::as_bytes) {
            None | Some(b"application/json") => true,
            Some(_) => shape(&self.headers) == Shape::Object && self.answers_in_json(),
        }
    }

    /// Whether the answer is encoded as JSON (not YAML or protobuf).
    pub fn answers_in_json(&self) -> bool {
        codec::response_encoding(&self.headers) == codec::Encoding::Json
    }

    /// A JSON answer already serialised.
    pub fn respond_json_bytes(&self, code: StatusCode, bytes: impl Into<Bytes>) -> Response<Body> {
        self.respond_json_body(code, full(bytes))
    }

    /// [`Ctx::respond_json_bytes`] with a body of its own (a stream).
    pub fn respond_json_body(&self, code: StatusCode, body: Body) -> Response<Body> {
        let mut response = Response::new(body);
        *response.status_mut() = code;
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        add_warnings(response.headers_mut(), self.ver().warning.iter().chain(self.warnings.iter()));
        response
    }
}

/// Adds `Warning: 299 - "<text>"` headers.
pub fn add_warnings<'a>(headers: &mut HeaderMap, warnings: impl Iterator<Item = &'a String>) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            headers.append(header::WARNING, v);
        }
    }
}

/// What the client asked the response to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The objects themselves.
    Object,
    /// `meta.k8s.io/v1` Table.
    Table,
    /// `meta.k8s.io/v1` PartialObjectMetadata: one object's metadata.
    Metadata,
    /// `meta.k8s.io/v1` PartialObjectMetadataList: a list of them.
    MetadataList,
}

/// Reads the `Accept` header: the first acceptable entry wins, as kube's negotiation does.
pub fn shape(headers: &HeaderMap) -> Shape {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    for entry in accept.split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let (mut as_, mut g, mut v) = ("", "", "");
        for p in parts {
            match p.split_once('=') {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        if as_.is_empty() {
            if matches!(media, "application/json" | "application/yaml" | "*/*" | "application/*" | "") {
                return Shape::Object;
            }
            continue;
        }
        if g != "meta.k8s.io" || !matches!(v, "v1" | "v1beta1") {
            continue;
        }
        match as_ {
            "Table" => return Shape::Table,
            "PartialObjectMetadata" => return Shape::Metadata,
            "PartialObjectMetadataList" => return Shape::MetadataList,
            _ => {}
        }
    }
    Shape::Object
}

/// Serves a resource request for `res` at a served version (routing checked both).
/// `user` asks.
pub async fn serve(
    state: Arc<State>,
    res: Arc<Resource>,
    info: &RequestInfo,
    user: Arc<UserInfo>,
    req: Request<Incoming>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(b) => b,
        Err(status) => return status.into_response(),
    };
    call(state, res, info, user, parts, body).await
}

/// [`serve`] with the body read: the entry of in-process clients too (the controllers'
/// `controllers::loopback`), whose requests take exactly the API's path from here on.
pub async fn call(
    state: Arc<State>,
    res: Arc<Resource>,
    info: &RequestInfo,
    user: Arc<UserInfo>,
    parts: http::request::Parts,
    body: Bytes,
) -> Response<Body> {
    let Some(version_index) = res.versions.iter().position(|v| v.served && v.name == info.api_version) else {
        return Status::not_found_path().into_response();
    };
    let query = Query::parse(parts.uri.query());
    let write = match WriteOptions::parse(&parts.method, &query) {
        Ok(write) => write,
        Err(status) => return status.into_response(),
    };
    let mut ctx = Ctx {
        state,
        res,
        version: info.api_version.clone(),
        version_index,
        namespace: (!info.namespace.is_empty()).then(|| info.namespace.clone()),
        name: info.name.clone(),
        query,
        headers: parts.headers,
        warnings: Vec::new(),
        write,
        user,
        audit: parts.extensions.get::<crate::audit::Record>().cloned(),
    };
    let b = &body[..];
    if let Some(record) = &ctx.audit {
        audit_body(record, &ctx, info, b);
    }
    // A GET is most requests and its future is small; every other verb's future is boxed, so
    // that the future of each request is as small as a GET's (hyper moves it whole when it
    // starts the request, and a GET's whole work is a few microseconds).
    let result = match (info.subresource.as_str(), info.name.is_empty()) {
        ("", false) if info.verb == "get" => read::get(&ctx).await,
        ("status", false) if parts.method == Method::GET && ctx.ver().status => read::get(&ctx).await,
        _ => Box::pin(other(&mut ctx, info, &parts.method, b)).await,
    };
    match result {
        Ok(response) => response,
        Err(status) => {
            // kube's handler warns of a deprecated version before it does anything else, so a
            // refused request carries the warning too.
            let mut response = status.into_response();
            add_warnings(response.headers_mut(), ctx.ver().warning.iter().chain(ctx.warnings.iter()));
            response
        }
    }
}

/// Every request but a GET of one object or of its status (which [`serve`] answers): lists,
/// watches, writes and the `scale` subresource.
async fn other(ctx: &mut Ctx, info: &RequestInfo, method: &Method, b: &[u8]) -> Answer {
    match (info.subresource.as_str(), info.name.is_empty()) {
        ("", true) => match info.verb.as_str() {
            "list" => read::list(ctx).await,
            "watch" => watch::watch(ctx).await,
            "create" => write::create(ctx, b).await,
            "deletecollection" => write::delete_collection(ctx, b).await,
            verb => Err(Status::method_not_supported(&ctx.res.group, &ctx.res.plural, verb)),
        },
        ("", false) => match (method, info.verb.as_str()) {
            (_, "watch") => watch::watch(ctx).await,
            (&Method::PUT, _) => write::update(ctx, b, Part::Main).await,
            (&Method::PATCH, _) => write::patch(ctx, b, Part::Main).await,
            (&Method::DELETE, _) => write::delete(ctx, b).await,
            (_, verb) => Err(Status::method_not_supported(&ctx.res.group, &ctx.res.plural, verb)),
        },
        ("status", false) if ctx.ver().status => match *method {
            Method::PUT => write::update(ctx, b, Part::Status).await,
            Method::PATCH => write::patch(ctx, b, Part::Status).await,
            _ => Err(Status::method_not_supported(&ctx.res.group, &ctx.res.plural, &info.verb)),
        },
        ("scale", false) if ctx.ver().scale.is_some() => match *method {
            Method::GET => scale::get(ctx).await,
            Method::PUT => scale::update(ctx, b).await,
            Method::PATCH => scale::patch(ctx, b).await,
            _ => Err(Status::method_not_supported(&ctx.res.group, &ctx.res.plural, &info.verb)),
        },
        ("finalize", false) if versa_registry::kinds::of(&ctx.res).is_namespace() => match *method {
            Method::PUT => write::update(ctx, b, Part::Finalize).await,
            _ => Err(Status::method_not_supported(&ctx.res.group, &ctx.res.plural, &info.verb)),
        },
        ("token", false) if versa_registry::kinds::of(&ctx.res).has_token_subresource() => match *method {
            Method::POST => token::create(ctx, b).await,
            _ => Err(Status::method_not_supported(&ctx.res.group, &ctx.res.plural, &info.verb)),
        },
        // An unknown (or disabled) subresource of an object: kube answers as for a missing
        // object.
        (_, false) => Err(ctx.not_found()),
        _ => Err(Status::not_found_path()),
    }
}

/// Records what kube's audit records of a delete's body, from level `Request` on: its
/// `DeleteOptions`. (A create's or update's object, and a patch, are recorded by the verb from
/// what it decoded: [`Ctx::audit_request_object`], [`Ctx::audit_patch`].)
fn audit_body(record: &crate::audit::Record, ctx: &Ctx, info: &RequestInfo, body: &[u8]) {
    use crate::audit::Level;
    let decode = |format| codec::decode(body, format).ok().map(|d| d.value).filter(Value::is_object);
    // The core kinds also take Kubernetes' protobuf; kube records what it decoded, as JSON.
    let format = || {
        if versa_registry::kinds::of(&ctx.res).takes_protobuf() {
            codec::body_format_builtin(&ctx.headers)
        } else {
            codec::body_format(&ctx.headers)
        }
    };
    match info.verb.as_str() {
        "delete" | "deletecollection" if record.level() >= Level::Request && !body.is_empty() => {
            let Some(mut options) = format().ok().and_then(decode) else { return };
            if let Some(o) = options.as_object_mut() {
                const FIELDS: &[&str] = &[
                    "kind",
                    "apiVersion",
                    "gracePeriodSeconds",
                    "preconditions",
                    "orphanDependents",
                    "propagationPolicy",
                    "dryRun",
                    "ignoreStoreReadErrorWithClusterBreakingPotential",
                ];
                o.retain(|k, _| FIELDS.contains(&k.as_str()));
                // Decoded with meta.k8s.io/v1 DeleteOptions as the default kind.
                o.entry("kind").or_insert_with(|| json!("DeleteOptions"));
                o.entry("apiVersion").or_insert_with(|| json!("meta.k8s.io/v1"));
            }
            record.request_body(options);
        }
        _ => {}
    }
}

pub use versa_registry::strategy::Part;

/// The result type of verb handlers.
pub type Answer = Result<Response<Body>, Status>;

/// Reads a request body, refusing more than [`codec::MAX_BODY_BYTES`] without buffering it.
pub async fn read_body(body: Incoming) -> Result<Bytes, Status> {
    let limited = http_body_util::Limited::new(body, codec::MAX_BODY_BYTES);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(Status::too_large(codec::MAX_BODY_BYTES))
        }
        Err(e) => Err(Status::bad_request(format!("error reading the request body: {e}"))),
    }
}
