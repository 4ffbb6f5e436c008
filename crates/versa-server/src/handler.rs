//! Request handling: authenticate, authorize, route. Health endpoints answer before
//! authentication (kubelet probes carry no credentials); everything else needs a user that the
//! authorizer allows. Then: `/version`, discovery (`/api`, `/apis[/<group>[/<version>]]`),
//! OpenAPI, and resource requests, which go to the resource's REST handler (`rest/`) through
//! the registry snapshot taken here.
//!
//! The audit log (`audit/`) follows kube's filter chain: a request that fails authentication
//! (or names a bad `timeout`, which kube checks first) is recorded without a user; an
//! authenticated one from `RequestReceived`, through the in-flight limit and authorization
//! (whose decision becomes annotations), to its answer.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::json;

use crate::auth::{ClientCert, Credentials, Decision, UserInfo, forbidden_message};
use crate::body::{Body, full, json_response};
use crate::request_info::RequestInfo;
use crate::state::State;
use crate::status::Status;
use crate::{audit, discovery, limits, request_info, rest, spill};

/// The Kubernetes API version versa's types and behaviour follow (reported by `/version`).
const KUBE_MAJOR: &str = "1";
const KUBE_MINOR: &str = "36";

pub async fn handle(
    state: Arc<State>,
    client_cert: Option<Arc<ClientCert>>,
    peer: Option<IpAddr>,
    req: Request<Incoming>,
) -> Response<Body> {
    let received = SystemTime::now();
    let audit_id = audit_id(req.headers());
    let origin = Origin { audit_id: &audit_id, received, peer };
    let mut response = route(state, client_cert, &origin, req).await;
    // The id's own bytes, not a copy.
    if let Ok(value) = header::HeaderValue::from_maybe_shared(Bytes::from(audit_id)) {
        response.headers_mut().insert(AUDIT_ID, value);
    }
    response
}

/// The header that ties a request to kube-apiserver's audit log: echoed when the aggregator
/// sent one, made up otherwise (as kube-apiserver does); the audit events carry it as `auditID`.
const AUDIT_ID: &str = audit::AUDIT_ID_HEADER;

/// When and from where a request came, and its Audit-ID: what its audit events start from.
#[derive(Debug, Clone, Copy)]
struct Origin<'a> {
    audit_id: &'a str,
    received: SystemTime,
    peer: Option<IpAddr>,
}

impl<'a> Origin<'a> {
    fn arrival<'r>(&self, req: &'r Request<Incoming>) -> audit::Arrival<'r>
    where
        'a: 'r,
    {
        audit::Arrival {
            audit_id: self.audit_id,
            received: self.received,
            uri: req.uri(),
            headers: req.headers(),
            peer: self.peer,
        }
    }
}

fn audit_id(headers: &http::HeaderMap) -> String {
    match headers.get(AUDIT_ID).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty() && v.len() <= 128) {
        Some(id) => id.to_owned(),
        None => versa_registry::meta::new_uid(),
    }
}

async fn route(
    state: Arc<State>,
    client_cert: Option<Arc<ClientCert>>,
    origin: &Origin<'_>,
    req: Request<Incoming>,
) -> Response<Body> {
    if let Some(response) = health(&state, req.method(), req.uri().path()).await {
        return response;
    }
    if let Some(reason) = state.startup.as_ref().and_then(|s| s.pending()) {
        let status = Status {
            code: StatusCode::SERVICE_UNAVAILABLE,
            reason: "ServiceUnavailable",
            message: format!("versa is not ready: {reason}"),
            details: None,
        };
        return status.into_response();
    }
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let info = request_info::parse(req.method(), req.uri().path(), req.uri().query());
    let response = authenticated(state.clone(), client_cert, origin, &info, req).await;
    let code = response.status().as_u16();
    state.metrics.observe(&info, &method, code, started.elapsed().as_secs_f64());
    tracing::debug!(verb = %info.verb, path = %info.path, code, "request");
    response
}

/// Authenticates, authorizes and routes a request, auditing it.
async fn authenticated(
    state: Arc<State>,
    client_cert: Option<Arc<ClientCert>>,
    origin: &Origin<'_>,
    info: &RequestInfo,
    req: Request<Incoming>,
) -> Response<Body> {
    // kube's request-deadline filter comes before authentication: a bad `timeout` is a 400
    // whoever asks, audited without a user.
    let deadline = match limits::deadline(info, req.uri().query(), &state.limits) {
        Ok(deadline) => deadline,
        Err(status) => return failed(&state, origin, info, &req, status).await,
    };
    let credentials = Credentials { client_cert: client_cert.as_deref(), headers: req.headers() };
    let user = match state.auth.authenticator.authenticate(credentials).await {
        Ok(Some(user)) => user,
        Ok(None) => return failed(&state, origin, info, &req, Status::unauthorized()).await,
        Err(e) => {
            tracing::info!(error = %e, "authentication failed");
            return failed(&state, origin, info, &req, Status::unauthorized()).await;
        }
    };
    let audit = state
        .audit
        .as_ref()
        .and_then(|auditor| auditor.begin(origin.arrival(&req), &user, info, limits::is_long_running(info)));
    match audit {
        None => admitted(state, user, info, req, deadline, None).await,
        // Boxed: the audited path's future is as large again as the request's own.
        Some(audit) => Box::pin(audited(state, user, info, req, deadline, audit)).await,
    }
}

/// [`admitted`], audited: the request's events, and its panics caught as kube's audit filter
/// records them.
async fn audited(
    state: Arc<State>,
    user: Arc<UserInfo>,
    info: &RequestInfo,
    mut req: Request<Incoming>,
    deadline: Option<std::time::Duration>,
    audit: audit::AuditedRequest,
) -> Response<Body> {
    audit.received().await;
    // The REST layer adds the request body (rest::serve).
    req.extensions_mut().insert(audit.record().clone());
    let work = admitted(state, user, info, req, deadline, Some(audit.record()));
    let response = audit::catch_panic(audit.record(), work).await;
    audit.respond(response).await
}

/// A request refused before it had a user: kube audits it as one `ResponseStarted` event.
async fn failed(
    state: &State,
    origin: &Origin<'_>,
    info: &RequestInfo,
    req: &Request<Incoming>,
    status: Status,
) -> Response<Body> {
    match &state.audit {
        Some(auditor) => auditor.failed(origin.arrival(req), info, status.into_response()).await,
        None => status.into_response(),
    }
}

/// The in-flight limit and the deadline, then authorization and the work.
async fn admitted(
    state: Arc<State>,
    user: Arc<UserInfo>,
    info: &RequestInfo,
    req: Request<Incoming>,
    deadline: Option<std::time::Duration>,
    audit: Option<&audit::Record>,
) -> Response<Body> {
    // kube's max-in-flight filter: after authentication (and auditing), before authorization.
    let _place = match state.inflight.admit(&user, info) {
        Ok(place) => place,
        Err(status) => {
            // kube writes this 429 as text: its audit event has only the code.
            if let Some(record) = audit {
                record.text_answer();
            }
            return status.into_response();
        }
    };
    let mut work = std::pin::pin!(authorized(state, user, info, req, audit));
    // Most requests finish in their first poll (the embedded store reads inline, rendered
    // objects are cached): only a request that has to wait gets a timer — arming one is a
    // registration in tokio's timer wheel, a measurable part of a GET (`hack/bench-serve.sh`).
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(work.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(response) = first {
        return response;
    }
    match deadline {
        Some(deadline) => {
            tokio::time::timeout(deadline, work).await.unwrap_or_else(|_| limits::timed_out().into_response())
        }
        None => work.await,
    }
}

/// Authorizes and routes a request of an authenticated user; the decision is audited as kube's
/// authorization filter annotates it.
async fn authorized(
    state: Arc<State>,
    user: Arc<UserInfo>,
    info: &RequestInfo,
    req: Request<Incoming>,
    audit: Option<&audit::Record>,
) -> Response<Body> {
    let decision = state.auth.authorizer.authorize(&user, info).await;
    if let Some(record) = audit {
        match &decision {
            Decision::Allow(reason) => {
                record.annotate(audit::DECISION_ANNOTATION, "allow");
                record.annotate(audit::REASON_ANNOTATION, reason);
            }
            Decision::Deny(reason) => {
                record.annotate(audit::DECISION_ANNOTATION, "forbid");
                record.annotate(audit::REASON_ANNOTATION, reason);
            }
            Decision::Error(_) => {
                // kube answers with a plain-text 500.
                record.annotate(audit::REASON_ANNOTATION, "internal error");
                record.text_answer();
            }
        }
    }
    if let Decision::Error(message) = decision {
        return Status::internal(message).into_response();
    }
    if let Decision::Deny(reason) = decision {
        let details = info.is_resource_request.then(|| {
            let mut d = json!({"kind": info.resource});
            if !info.name.is_empty() {
                d["name"] = json!(info.name);
            }
            if !info.api_group.is_empty() {
                d["group"] = json!(info.api_group);
            }
            d
        });
        return Status::forbidden(forbidden_message(&user, info, &reason), details).into_response();
    }
    if let Some(review) = crate::reviews::Review::of(info) {
        let (parts, body) = req.into_parts();
        let answer = match crate::rest::read_body(body).await {
            Ok(body) => crate::reviews::answer(&state, review, &user, info, &parts.headers, &body).await,
            Err(status) => Err(status),
        };
        return answer.unwrap_or_else(Status::into_response);
    }
    if info.is_resource_request {
        // Who asks goes on to the REST layer (admission needs it).
        return resource(state, info, user, req).await;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Status::method_not_allowed(req.method()).into_response();
    }
    let trimmed = info.path.trim_end_matches('/');
    let query = req.uri().query().map(str::to_owned);
    match trimmed {
        "/version" => json_response(StatusCode::OK, &version()),
        "/snapshot" if req.method() == Method::GET => snapshot(&state),
        "/metrics" => {
            let mut response = text_response(StatusCode::OK, state.metrics.encode());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            response
        }
        "/api" | "/apis" => discovery_root(&state, trimmed, req.headers()),
        "/openapi/v2" => openapi_v2(&state, req.headers()).await,
        "/openapi/v3" => {
            let index = state.openapi.lock().map(|o| o.v3_index()).unwrap_or_default();
            json_response(StatusCode::OK, &index)
        }
        _ => {
            if let Some(gv) = trimmed.strip_prefix("/openapi/v3/apis/")
                && let Some((group, version)) = gv.split_once('/')
            {
                return openapi_v3(&state, group, version, trimmed, query.as_deref(), req.headers()).await;
            }
            // The core group's document (standalone's core kinds), as kube-apiserver names it.
            if let Some(version) = trimmed.strip_prefix("/openapi/v3/api/")
                && !version.contains('/')
            {
                return openapi_v3(&state, "", version, trimmed, query.as_deref(), req.headers()).await;
            }
            // One group's documents, built once per change of the group.
            let docs = |group: &str| {
                let snapshot = state.registry.snapshot();
                snapshot.group(group).map(|g| discovery::GroupDocs::of(group, g))
            };
            let doc = if let Some(version) = trimmed.strip_prefix("/api/")
                && !version.contains('/')
            {
                docs("").and_then(|d| d.version(version))
            } else if let Some(rest) = trimmed.strip_prefix("/apis/")
                && !rest.is_empty()
            {
                let review = |group: &str, version: Option<&str>| {
                    let doc = discovery::review_doc(group, version).filter(|_| lists_reviews(&state))?;
                    Some(Bytes::from(serde_json::to_vec(&doc).unwrap_or_default()))
                };
                match rest.split_once('/') {
                    None => docs(rest).and_then(|d| d.group.clone()).or_else(|| review(rest, None)),
                    Some((group, version)) if !group.is_empty() && !version.contains('/') => {
                        docs(group).and_then(|d| d.version(version)).or_else(|| review(group, Some(version)))
                    }
                    Some(_) => None,
                }
            } else {
                None
            };
            match doc {
                Some(doc) => bytes_response(StatusCode::OK, "application/json", doc),
                None => Status::not_found_path().into_response(),
            }
        }
    }
}

/// A resource request: find the served resource, check version and scope, hand over.
async fn resource(
    state: Arc<State>,
    info: &RequestInfo,
    user: Arc<UserInfo>,
    req: Request<Incoming>,
) -> Response<Body> {
    // A write is counted from before it looks up what is served until it is answered, so that
    // this replica tells the others it follows a definition change only once no write of the
    // definition before it is in flight (`replicas.rs`).
    let _write = match state.replicas.admit_write(limits::is_mutating(info)) {
        Ok(guard) => guard,
        Err(status) => return status.into_response(),
    };
    let snapshot = state.registry.snapshot();
    let Some(res) = snapshot.route(&info.api_group, &info.resource).cloned() else {
        return Status::not_found_path().into_response();
    };
    if res.served_version(&info.api_version).is_none() {
        return Status::not_found_path().into_response();
    }
    // A namespace is the namespace of its own requests (kube's RequestInfo, which authorization
    // sees); the object itself is cluster-scoped.
    let own_namespace = versa_registry::kinds::of(&res).is_namespace() && info.namespace == info.name;
    let own;
    let info = if own_namespace {
        own = RequestInfo { namespace: String::new(), ..info.clone() };
        &own
    } else {
        info
    };
    let has_namespace = !info.namespace.is_empty();
    let scope_ok = if res.namespaced {
        has_namespace || matches!(info.verb.as_str(), "list" | "watch" | "deletecollection") && info.name.is_empty()
    } else {
        !has_namespace
    };
    if !scope_ok {
        return Status::not_found_path().into_response();
    }
    drop(snapshot);
    rest::serve(state, res, info, user, req).await
}

/// Accept asks for aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`).
fn wants_aggregated(headers: &http::HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    for entry in accept.split(',') {
        let params: Vec<&str> = entry.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if has("g=apidiscovery.k8s.io") && has("as=APIGroupDiscoveryList") && (has("v=v2") || has("v=v2beta1")) {
            return true;
        }
        if params.first().is_some_and(|m| matches!(*m, "application/json" | "*/*")) {
            return false;
        }
    }
    false
}

/// The content type kube-apiserver answers aggregated discovery with (clients check it).
const AGGREGATED_CONTENT_TYPE: &str = discovery::AGGREGATED_V2_CONTENT_TYPE;

fn discovery_root(state: &State, path: &str, headers: &http::HeaderMap) -> Response<Body> {
    let aggregated = wants_aggregated(headers);
    let snapshot = state.registry.snapshot();
    // The named groups' documents are cached per snapshot: the definitions are split only when
    // one is built (or for `/api`, which the core kinds answer).
    let split = || {
        let defs = snapshot.definitions();
        discovery::split_core(&defs)
    };
    if path == "/api" {
        // The core group's documents, built once per change of the group.
        let core = snapshot.group("").map(|g| discovery::GroupDocs::of("", g));
        let doc = if aggregated {
            core.and_then(|c| c.aggregated.clone())
                .unwrap_or_else(|| Bytes::from(serde_json::to_vec(&discovery::aggregated(&[])).unwrap_or_default()))
        } else {
            core.and_then(|c| c.group.clone())
                .unwrap_or_else(|| Bytes::from(serde_json::to_vec(&discovery::api_versions(&[])).unwrap_or_default()))
        };
        let content_type = if aggregated { AGGREGATED_CONTENT_TYPE } else { "application/json" };
        return bytes_response(StatusCode::OK, content_type, doc);
    }
    // Built once per snapshot, kept compressed; each answer shares the bytes.
    let reviews = lists_reviews(state);
    let with_reviews = |mut doc: serde_json::Value| {
        if reviews {
            discovery::add_review_groups(&mut doc, aggregated);
        }
        discovery::gzip_json(&doc)
    };
    let (content_type, gzip) = if aggregated {
        let doc = snapshot.discovery.aggregated.get_or_init(|| with_reviews(discovery::aggregated(&split().1)));
        (AGGREGATED_CONTENT_TYPE, doc)
    } else {
        let doc = snapshot.discovery.group_list.get_or_init(|| with_reviews(discovery::group_list(&split().1)));
        ("application/json", doc)
    };
    let mut response = if accepts_gzip(headers) {
        let mut response = bytes_response(StatusCode::OK, content_type, gzip.clone());
        response.headers_mut().insert(header::CONTENT_ENCODING, header::HeaderValue::from_static("gzip"));
        response
    } else {
        bytes_response(StatusCode::OK, content_type, discovery::gunzip(gzip))
    };
    response.headers_mut().insert(header::VARY, header::HeaderValue::from_static("Accept, Accept-Encoding"));
    response
}

/// Whether discovery lists the review groups: standalone, where versa answers them (behind
/// kube-apiserver, kube does, and versa's discovery is merged into kube's).
fn lists_reviews(state: &State) -> bool {
    state.registry.core(versa_registry::kinds::rbac::CLUSTER_ROLES).is_some()
}

/// `/openapi/v2`, as kube-openapi serves it: JSON, or gnostic's `openapi.v2.Document` protobuf
/// when `Accept` prefers `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (or the
/// `.v2.v1.0+protobuf` spelling) — what kubectl's OpenAPI getter asks for. Negotiation honours
/// q-values and wildcards, JSON first (`openapi::proto::negotiate`); nothing acceptable is a 406.
/// Both forms carry the JSON's hash as `ETag` (a matching `If-None-Match` gets 304, which is
/// how kube-aggregator polls). The cache keeps both forms gzip-compressed in temporary files
/// (`spill.rs`): a client whose `Accept-Encoding` allows gzip (client-go's transport sends
/// `gzip`) gets those bytes streamed from the file with `Content-Encoding: gzip`, any other the
/// inflated ones; answers vary by `Accept` and `Accept-Encoding`. The cache's lock is held only
/// to take the document or its sources: building, inflating and converting happen without it,
/// on a blocking thread.
async fn openapi_v2(state: &State, headers: &http::HeaderMap) -> Response<Body> {
    use crate::openapi::proto::{Format, PROTOBUF_CONTENT_TYPE, negotiate};
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let vary = |mut response: Response<Body>| {
        response.headers_mut().insert(header::VARY, header::HeaderValue::from_static("Accept, Accept-Encoding"));
        response
    };
    let Some(format) = negotiate(accept) else {
        let message = format!(
            "only the following media types are accepted: application/json, {PROTOBUF_CONTENT_TYPE}, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        );
        return vary(Status::not_acceptable(message).into_response());
    };
    let sources = match state.openapi.lock() {
        Ok(openapi) => openapi.v2_sources(),
        Err(_) => return Status::internal("OpenAPI cache unavailable").into_response(),
    };
    let gzip = accepts_gzip(headers);
    let conditions: Vec<header::HeaderValue> = headers.get_all(header::IF_NONE_MATCH).iter().cloned().collect();
    // Building the document (after a change), inflating and converting it take long on large
    // documents: off the async workers.
    let answer = tokio::task::spawn_blocking(move || {
        let doc = sources.document()?;
        let etag = format!("\"{}\"", doc.etag());
        if if_none_match(&conditions, &etag) {
            return Ok((etag, None));
        }
        let body = match (format, gzip) {
            (Format::Json, true) => spill::body(doc.json_gzip()),
            (Format::Json, false) => full(doc.json()?),
            (Format::Protobuf, true) => spill::body(doc.protobuf_gzip()?),
            (Format::Protobuf, false) => full(doc.protobuf()?),
        };
        Ok::<_, crate::openapi::Error>((etag, Some(body)))
    })
    .await;
    let (etag, body) = match answer {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => return vary(Status::internal(format!("OpenAPI v2: {e}")).into_response()),
        Err(e) => return vary(Status::internal(format!("OpenAPI v2: {e}")).into_response()),
    };
    let mut response = match body {
        None => not_modified(),
        Some(body) => {
            let content_type = match format {
                Format::Json => "application/json",
                Format::Protobuf => PROTOBUF_CONTENT_TYPE,
            };
            let mut response = Response::new(body);
            response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
            if gzip {
                response.headers_mut().insert(header::CONTENT_ENCODING, header::HeaderValue::from_static("gzip"));
            }
            response
        }
    };
    if let Ok(value) = header::HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    vary(response)
}

/// Whether an `If-None-Match` value names `etag` (quoted) or is `*`.
fn if_none_match<'a>(values: impl IntoIterator<Item = &'a header::HeaderValue>, etag: &str) -> bool {
    values
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag)
}

fn not_modified() -> Response<Body> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::NOT_MODIFIED;
    response
}

/// Whether `Accept-Encoding` allows gzip (RFC 9110 §12.5.3): `gzip` (or `x-gzip`) with a
/// non-zero q-value, or else `*` with one. No header means identity only.
fn accepts_gzip(headers: &http::HeaderMap) -> bool {
    let (mut gzip, mut any) = (None::<f32>, None::<f32>);
    for clause in
        headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','))
    {
        let mut params = clause.split(';');
        let coding = params.next().unwrap_or_default().trim();
        let q = params
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                k.trim().eq_ignore_ascii_case("q").then(|| v.trim().parse::<f32>().unwrap_or(0.0))
            })
            .next()
            .unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(gzip.map_or(q, |g| g.max(q)));
        } else if coding == "*" {
            any = Some(any.map_or(q, |a| a.max(q)));
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// One group-version's OpenAPI v3 document, as kube-openapi serves it: `ETag` is the hash
/// (`OpenApiCache::v3_hash`, over the document's inputs); a request naming the current hash may
/// be cached for good, one naming an old hash is redirected to the current URL. Neither a
/// redirect nor a 304 (`If-None-Match` naming the hash) builds the document, and none is built
/// under the cache's lock. Built on a blocking thread, as `/openapi/v2` is: a group-version's
/// document of a large definition takes milliseconds, and the short-lived trees building it
/// leaves are then not interleaved with what the async workers keep (docs/memory.md).
async fn openapi_v3(
    state: &State,
    group: &str,
    version: &str,
    path: &str,
    query: Option<&str>,
    headers: &http::HeaderMap,
) -> Response<Body> {
    let sources = match state.openapi.lock() {
        Ok(openapi) => openapi.v3(group, version),
        Err(_) => return Status::internal("OpenAPI cache unavailable").into_response(),
    };
    let Some(sources) = sources else {
        return Status::not_found_path().into_response();
    };
    let hash = sources.hash();
    let asked = crate::query::Query::parse(query).get("hash").map(str::to_owned);
    if let Some(asked) = &asked
        && *asked != hash
    {
        let mut response = Response::new(full(Bytes::new()));
        *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
        if let Ok(location) = header::HeaderValue::from_str(&format!("{path}?hash={hash}")) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return response;
    }
    let etag = format!("\"{hash}\"");
    let mut response = if if_none_match(headers.get_all(header::IF_NONE_MATCH), &etag) {
        not_modified()
    } else {
        match tokio::task::spawn_blocking(move || sources.document()).await {
            Ok(document) => bytes_response(StatusCode::OK, "application/json", document),
            Err(e) => return Status::internal(format!("OpenAPI v3: {e}")).into_response(),
        }
    };
    if let Ok(etag) = header::HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    let cache = if asked.is_some() { "public, immutable" } else { "no-cache, private" };
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static(cache));
    response
}

fn bytes_response(code: StatusCode, content_type: &'static str, bytes: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = code;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    response
}

/// `/healthz`, `/livez`, `/readyz` (ready once storage answers, the definitions and the
/// admission configuration are loaded, standalone's default RBAC policy is in force and, in
/// cluster mode, kube-apiserver has been reached).
async fn health(state: &State, method: &Method, path: &str) -> Option<Response<Body>> {
    let check = path.trim_end_matches('/');
    if !matches!(check, "/healthz" | "/livez" | "/readyz") {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        return Some(Status::method_not_allowed(method).into_response());
    }
    if check == "/readyz" {
        if let Some(reason) = state.startup.as_ref().and_then(|s| s.pending()) {
            let body = format!("[-]kube-apiserver failed: {reason}\nreadyz check failed\n");
            return Some(text_response(StatusCode::INTERNAL_SERVER_ERROR, body));
        }
        if let Err(e) = state.store.current_revision().await {
            let body = format!("[-]storage failed: {e}\nreadyz check failed\n");
            return Some(text_response(StatusCode::INTERNAL_SERVER_ERROR, body));
        }
        if !state.registry.is_ready() {
            let body = "[-]definitions not loaded yet\nreadyz check failed\n".to_string();
            return Some(text_response(StatusCode::INTERNAL_SERVER_ERROR, body));
        }
        if !state.admission.is_loaded() {
            let body = "[-]admission configuration not loaded yet\nreadyz check failed\n".to_string();
            return Some(text_response(StatusCode::INTERNAL_SERVER_ERROR, body));
        }
        if let Some(check) = state.auth.authorizer.not_ready() {
            let body = format!("[-]poststarthook/{check} failed: not finished\nreadyz check failed\n");
            return Some(text_response(StatusCode::INTERNAL_SERVER_ERROR, body));
        }
    }
    Some(text_response(StatusCode::OK, "ok".to_string()))
}

fn version() -> serde_json::Value {
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0+versa-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", other => other }),
    })
}

/// `GET /snapshot`: every stored key at one revision, in versa's snapshot format
/// (`versa_storage::snapshot`), streamed while serving goes on (`versa backup`). A snapshot that
/// fails midway ends the body early, which readers refuse as truncated.
fn snapshot(state: &Arc<State>) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let store = state.store.clone();
    tokio::spawn(async move {
        match store.snapshot(tx).await {
            Ok(header) => tracing::info!(revision = header.revision, "snapshot sent"),
            Err(e) => tracing::warn!(error = %e, "snapshot failed"),
        }
    });
    let mut response = Response::new(crate::body::channel(rx));
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/octet-stream"));
    response
}

fn text_response(code: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(full(Bytes::from(body)));
    *response.status_mut() = code;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `make` returns.
    fn future_size<A, B, C, D, F, Fut>(_: F) -> usize
    where
        F: FnOnce(A, B, C, D) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// hyper moves each request's future whole when the request starts, and a GET's own work is
    /// a few microseconds: with every verb's future inline it was 17.7 KiB (`docs/scale.md`,
    /// section 5, says what making it small did, with the store's shared snapshot, to GET).
    /// Verbs other than GET, rendering on a cache miss, and auditing are boxed (`rest::serve`,
    /// `rest::read::get`, `authenticated`).
    #[test]
    fn a_request_future_stays_small() {
        let size = future_size(|s: Arc<State>, c: Option<Arc<ClientCert>>, p: Option<IpAddr>, r: Request<Incoming>| {
            handle(s, c, p, r)
        });
        assert!(size <= 8 * 1024, "handle's future is {size} bytes: box the cold path that grew it");
    }
}
