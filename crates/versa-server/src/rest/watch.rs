//! `watch`: newline-delimited JSON events (`{"type":…,"object":…}`) streamed from the store's
//! watch, as kube-apiserver sends them.
//!
//! - Without a `resourceVersion` (or `0`) the current objects come first as `ADDED` events;
//!   with one, only what happened after it. A revision older than the kept history ends the
//!   stream with an `ERROR` event carrying a 410 `Expired` Status; the client re-lists.
//! - `sendInitialEvents=true` (with `resourceVersionMatch=NotOlderThan` and bookmarks) sends the
//!   current objects and then a `BOOKMARK` annotated `k8s.io/initial-events-end: "true"`.
//! - `allowWatchBookmarks=true` turns the store's progress notifications into `BOOKMARK`s.
//! - Selectors apply to each event, and an object that stops (starts) matching is sent as
//!   `DELETED` (`ADDED`), so a filtered watch stays consistent with a filtered list.
//! - `timeoutSeconds` (default: a random 30–60 minutes, like kube) ends the stream cleanly; so
//!   does server shutdown.
//!
//! Events flow through a small bounded channel: a slow client slows its own watch, never the
//! server's memory.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use versa_registry::meta::{name_of, set_resource_version};
use versa_registry::table::IncludeObject;
use versa_schema::{Error as FieldError, ErrorList, Path};
use versa_storage::WatchEvent;

use super::read::{Filter, parse_rv, read_page};
use super::{Answer, Ctx, Shape, add_warnings, shape};
use crate::status::Status;

/// How the watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Current objects as ADDED events, then changes.
    Initial { end_bookmark: bool },
    /// Changes after this revision.
    After(i64),
}

fn start(ctx: &Ctx) -> Result<Start, Status> {
    let rv = ctx.query.get("resourceVersion").unwrap_or("");
    let rv_match = ctx.query.get("resourceVersionMatch").unwrap_or("");
    let send_initial = ctx.query.get("sendInitialEvents");
    let mut errs = ErrorList::new();
    match send_initial {
        Some(v @ ("true" | "false")) => {
            if rv_match != "NotOlderThan" {
                errs.push(FieldError::forbidden(
                    Path::new("resourceVersionMatch"),
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if v == "true" && !ctx.query.flag("allowWatchBookmarks") {
                errs.push(FieldError::forbidden(
                    Path::new("allowWatchBookmarks"),
                    "sendInitialEvents requires setting allowWatchBookmarks to true",
                ));
            }
        }
        Some(other) => {
            return Err(Status::bad_request(format!("sendInitialEvents: invalid value {other:?}")));
        }
        None if !rv_match.is_empty() => errs.push(FieldError::forbidden(
            Path::new("resourceVersionMatch"),
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )),
        None => {}
    }
    if !errs.is_empty() {
        return Err(Status::invalid("meta.k8s.io", "ListOptions", "", &errs));
    }
    Ok(match (send_initial, rv) {
        (Some("true"), _) => Start::Initial { end_bookmark: true },
        (Some(_), "" | "0") => Start::Initial { end_bookmark: false },
        (Some(_), rv) => Start::After(parse_rv(rv)?),
        (None, "" | "0") => Start::Initial { end_bookmark: false },
        (None, rv) => Start::After(parse_rv(rv)?),
    })
}

/// Per-watch settings the event loop needs.
#[derive(Debug)]
struct Stream {
    filter: Filter,
    shape: Shape,
    bookmarks: bool,
    /// Only this object (a watch on `.../<name>`).
    name: Option<String>,
    /// Table column definitions go out with the first Table event only.
    columns_sent: bool,
}

/// `GET ...?watch=true` (or `/watch/...`).
pub async fn watch(ctx: &Ctx) -> Answer {
    let filter = Filter::from_query(ctx)?;
    let start = start(ctx)?;
    let timeout = match ctx.query.get("timeoutSeconds") {
        Some(t) if !t.is_empty() => Duration::from_secs(
            t.parse::<u64>().map_err(|_| Status::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
        ),
        _ => default_timeout(),
    };
    let mut stream = Stream {
        filter,
        shape: shape(&ctx.headers),
        bookmarks: ctx.query.flag("allowWatchBookmarks"),
        name: (!ctx.name.is_empty()).then(|| ctx.name.clone()),
        columns_sent: false,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    // The initial state and the store watch are set up before answering, so that errors
    // (bad resourceVersion, storage down) are plain HTTP errors rather than stream events.
    let mut initial = Vec::new();
    let from = match start {
        Start::Initial { .. } => {
            let page = read_page(&list_ctx(ctx), &stream.filter).await?;
            initial = page.items;
            page.revision
        }
        Start::After(rev) => rev,
    };
    let prefix = ctx.collection_prefix();
    let store_watch = ctx.state.store.watch(&prefix, from).await;
    let task_ctx = ctx.fork();
    let shutdown = ctx.state.shutdown.clone();
    tokio::spawn(async move {
        let ctx = task_ctx;
        let metrics = &ctx.state.metrics;
        metrics.watchers(&ctx.res.group, &ctx.version, &ctx.res.kind, 1);
        let run = async {
            for obj in &initial {
                if !stream.wants(obj) {
                    continue;
                }
                if !send(&tx, &mut stream, &ctx, "ADDED", obj).await {
                    return;
                }
            }
            if let Start::Initial { end_bookmark: true } = start {
                let mut bookmark = bookmark_object(&ctx, &stream, from);
                bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                if !send_raw(&tx, "BOOKMARK", &bookmark).await {
                    return;
                }
            }
            let mut store_watch = match store_watch {
                Ok(w) => w,
                Err(e) => {
                    let _ = send_error(&tx, &watch_error(from, e)).await;
                    return;
                }
            };
            while let Some(item) = store_watch.next().await {
                let event = match item {
                    Ok(ev) => ev,
                    Err(e) => {
                        let _ = send_error(&tx, &watch_error(from, e)).await;
                        return;
                    }
                };
                if !forward(&tx, &mut stream, &ctx, event).await {
                    return;
                }
            }
        };
        tokio::select! {
            () = run => {}
            () = tokio::time::sleep(timeout) => {}
            () = shutdown.cancelled() => {}
        }
        metrics.watchers(&ctx.res.group, &ctx.version, &ctx.res.kind, -1);
    });
    let mut response = Response::new(crate::body::channel(rx));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    add_warnings(response.headers_mut(), ctx.ver().warning.iter());
    Ok(response)
}

/// The request context without paging: a watch's initial list is the whole collection.
fn list_ctx(ctx: &Ctx) -> Ctx {
    let mut list = ctx.fork();
    list.query.remove(&["limit", "continue", "resourceVersion", "resourceVersionMatch", "sendInitialEvents"]);
    list
}

/// kube-apiserver picks a random timeout between one and two times its minimum request
/// timeout (30 minutes) so that watches do not all end together.
fn default_timeout() -> Duration {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    Duration::from_secs(1800 + u64::from(nanos) % 1800)
}

fn watch_error(from: i64, e: versa_storage::Error) -> Status {
    match e {
        versa_storage::Error::Expired { compacted, .. } => {
            Status::expired(format!("too old resource version: {from} ({compacted})"))
        }
        e @ versa_storage::Error::Unavailable { .. } => Status::storage_unavailable(e.to_string()),
        other => Status::internal(other.to_string()),
    }
}

/// `{kind, apiVersion, metadata: {resourceVersion}}` — a bookmark's object; for a metadata-only
/// watch its PartialObjectMetadata, as kube transforms every event's object (issue 15,
/// defect 4: client-go's metadata informers decode bookmarks as PartialObjectMetadata).
fn bookmark_object(ctx: &Ctx, stream: &Stream, revision: i64) -> Value {
    let bookmark = json!({"kind": ctx.res.kind, "apiVersion": ctx.api_version(), "metadata": {"resourceVersion": revision.to_string()}});
    match stream.shape {
        Shape::Metadata => versa_registry::table::partial_object_metadata(&bookmark),
        _ => bookmark,
    }
}

/// Turns one store event into zero or one watch events.
async fn forward(tx: &mpsc::Sender<Bytes>, stream: &mut Stream, ctx: &Ctx, event: WatchEvent) -> bool {
    let (kind, obj) = match event {
        WatchEvent::Progress { revision } => {
            if stream.bookmarks {
                return send_raw(tx, "BOOKMARK", &bookmark_object(ctx, stream, revision)).await;
            }
            return true;
        }
        WatchEvent::Added(kv) => match present(ctx, &kv).await {
            Ok(obj) if stream.wants(&obj) => ("ADDED", obj),
            Ok(_) => return true,
            Err(status) => return fail(tx, &status).await,
        },
        WatchEvent::Modified { kv, prev } => {
            let obj = match present(ctx, &kv).await {
                Ok(obj) => obj,
                Err(status) => return fail(tx, &status).await,
            };
            let old = match &prev {
                Some(p) => match present(ctx, p).await {
                    Ok(old) => Some(old),
                    Err(status) => return fail(tx, &status).await,
                },
                None => None,
            };
            let was = old.as_ref().is_some_and(|p| stream.wants(p));
            match (was, stream.wants(&obj)) {
                (true, true) => ("MODIFIED", obj),
                (false, true) => ("ADDED", obj),
                // It left the selection: kube sends the last object the client saw, at the
                // revision of the change.
                (true, false) => match old {
                    Some(mut old) => {
                        set_resource_version(&mut old, kv.mod_revision);
                        ("DELETED", old)
                    }
                    None => return true,
                },
                (false, false) => return true,
            }
        }
        WatchEvent::Deleted { revision, prev } => match present(ctx, &prev).await {
            Ok(mut obj) if stream.wants(&obj) => {
                set_resource_version(&mut obj, revision);
                ("DELETED", obj)
            }
            Ok(_) => return true,
            Err(status) => return fail(tx, &status).await,
        },
    };
    send(tx, stream, ctx, kind, &obj).await
}

/// An event's object in the request form.
async fn present(ctx: &Ctx, kv: &versa_storage::KeyValue) -> Result<Value, Status> {
    Ok(ctx.boundary().from_storage(kv).await?)
}

/// An event that cannot be delivered (say, its conversion webhook is down) ends the watch with
/// an ERROR event carrying the Status: the client re-lists and re-watches from what it has, so
/// no event is silently skipped.
async fn fail(tx: &mpsc::Sender<Bytes>, status: &Status) -> bool {
    let _ = send_error(tx, status).await;
    false
}

impl Stream {
    fn wants(&self, obj: &Value) -> bool {
        let name_ok = self.name.as_deref().is_none_or(|n| name_of(obj) == n);
        name_ok && self.filter.matches(obj)
    }
}

/// Sends one event with the object in the shape the client asked for.
async fn send(tx: &mpsc::Sender<Bytes>, stream: &mut Stream, ctx: &Ctx, kind: &str, obj: &Value) -> bool {
    let object = match stream.shape {
        // kube sends the object as it is when it cannot take the asked form (a list's form).
        Shape::Object | Shape::MetadataList => obj.clone(),
        Shape::Metadata => versa_registry::table::partial_object_metadata(obj),
        Shape::Table => {
            let include = match ctx.query.get("includeObject") {
                Some("None") => IncludeObject::None,
                Some("Object") => IncludeObject::Object,
                _ => IncludeObject::Metadata,
            };
            let with_columns = !stream.columns_sent;
            stream.columns_sent = true;
            ctx.ver().table().row_table(obj, include, SystemTime::now(), with_columns)
        }
    };
    send_raw(tx, kind, &object).await
}

async fn send_raw(tx: &mpsc::Sender<Bytes>, kind: &str, object: &Value) -> bool {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    line.push(b'\n');
    tx.send(Bytes::from(line)).await.is_ok()
}

async fn send_error(tx: &mpsc::Sender<Bytes>, status: &Status) -> bool {
    send_raw(tx, "ERROR", &status.to_json()).await
}
