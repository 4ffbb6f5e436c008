//! Unpaginated LISTs written as they are read (issue 41), as kube-apiserver streams large
//! lists since 1.34: plain JSON `<Kind>List`s and Tables, with or without label and field
//! selectors. The store is read [`FIRST_PAGE`], then [`STREAM_PAGE`] objects at a time at the first page's revision;
//! each page is converted, filtered by the selectors, rendered and sent as one chunk of the
//! body, so the server holds a page, not the list. The bytes are those of the buffered answer
//! (`read.rs` with a `limit` large enough): unselected lists render through the render cache as
//! `read::list_rendered` does, selected ones are filtered on the converted objects and written
//! from them as `read::list` writes a selected list.
//!
//! The first page is read and rendered before the answer starts, so a list that fits in it —
//! and any failure in it (a compacted `resourceVersion`, a conversion webhook down) — is
//! answered exactly as a buffered one; a failure in a later page ends the body early, and the
//! client sees a truncated document (kube's streaming encoder does the same). The list's
//! `metadata` comes after its items, as in the buffered answer (serde_json's key order).
//!
//! Protobuf: versa answers every request in JSON (client-go's typed clients ask for protobuf
//! *or* JSON), so a LIST asking for protobuf first is streamed as JSON here.

use std::time::SystemTime;

use bytes::Bytes;
use http::StatusCode;
use serde_json::json;
use versa_registry::Version;
use versa_registry::render::RenderedRow;
use versa_registry::storage::{Boundary, values};
use versa_registry::table::{IncludeObject, ListMeta};
use versa_storage::{KeyValue, ListOptions, ListPage};

use super::filter::Filter;
use super::{Answer, Ctx};
use crate::state::State;
use crate::status::Status;

/// Objects read, rendered and sent per chunk of a streamed LIST after its first page.
pub const STREAM_PAGE: usize = 250;

/// Objects in a streamed LIST's first page: a list of up to this many is one store read, as a
/// buffered one was (pages of [`STREAM_PAGE`] from the start made four concurrent LISTs of 1,000
/// objects a quarter slower: `docs/serving.md`).
pub const FIRST_PAGE: usize = 1000;

/// What a streamed LIST writes.
#[derive(Debug, Clone, Copy)]
pub enum Streamed {
    /// The `<Kind>List`.
    Json,
    /// A Table with the objects as `includeObject` asks.
    Table(IncludeObject),
}

/// Answers the LIST whose first store page is `first` as it reads the rest (see the module's
/// doc): the objects `filter` selects, as `what` asks.
pub async fn list(ctx: &Ctx, mut first: ListPage, what: Streamed, filter: Filter) -> Answer {
    let (state, res, version) = (ctx.state.clone(), ctx.res.clone(), ctx.version.clone());
    let prefix = ctx.collection_prefix();
    let rv = first.revision.to_string();
    let mut page = Page {
        state: &state,
        boundary: ctx.boundary(),
        ver: ctx.ver(),
        what,
        filter: &filter,
        now: SystemTime::now(),
        written: 0,
        bytes: 0,
    };
    let mut opening = match what {
        Streamed::Json => {
            let mut out = b"{\"apiVersion\":".to_vec();
            let _ = serde_json::to_writer(&mut out, &ctx.api_version());
            out.extend_from_slice(b",\"items\":[");
            out
        }
        Streamed::Table(_) => ctx.ver().table().list_head(ListMeta {
            resource_version: &rv,
            continue_token: None,
            remaining_item_count: None,
        }),
    };
    page.render(&first.items, &mut opening).await?;
    let (now, written, bytes) = (page.now, page.written, page.bytes);
    let mut tail = Vec::new();
    match what {
        Streamed::Json => {
            tail.extend_from_slice(b"],\"kind\":");
            let _ = serde_json::to_writer(&mut tail, &res.list_kind);
            tail.extend_from_slice(b",\"metadata\":");
            let _ = serde_json::to_writer(&mut tail, &json!({"resourceVersion": rv}));
            tail.push(b'}');
        }
        Streamed::Table(_) => tail.extend_from_slice(b"]}"),
    }
    let Some(mut token) = first.continue_token.take() else {
        opening.extend_from_slice(&tail);
        return Ok(ctx.respond_json_bytes(StatusCode::OK, opening));
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
    tokio::spawn(async move {
        let Some(ver) = res.version(&version) else { return };
        let boundary = Boundary::new(&res, &version, &state.metrics);
        let mut page = Page { state: &state, boundary, ver, what, filter: &filter, now, written, bytes };
        if tx.send(Bytes::from(opening)).await.is_err() {
            return;
        }
        loop {
            let options = ListOptions { limit: STREAM_PAGE, continue_token: Some(token), revision: 0 };
            let read = match state.store.list(&prefix, options).await {
                Ok(read) => read,
                Err(e) => {
                    tracing::warn!(error = %e, "a streamed list ended early");
                    return;
                }
            };
            let mut chunk = Vec::with_capacity(read.items.len() * 512);
            if let Err(e) = page.render(&read.items, &mut chunk).await {
                tracing::warn!(error = %e.message, "a streamed list ended early");
                return;
            }
            if !chunk.is_empty() && tx.send(Bytes::from(chunk)).await.is_err() {
                return;
            }
            match read.continue_token {
                Some(next) => token = next,
                None => break,
            }
        }
        let _ = tx.send(Bytes::from(tail)).await;
    });
    Ok(ctx.respond_json_body(StatusCode::OK, crate::body::channel(rx)))
}

/// Writes the pages of one streamed list: what they are rendered with, and how many objects
/// were written so far (all but the first follow a comma).
struct Page<'a> {
    state: &'a State,
    boundary: Boundary<'a>,
    ver: &'a Version,
    what: Streamed,
    filter: &'a Filter,
    /// When the Table's ages are computed, once for the whole list.
    now: SystemTime,
    written: usize,
    /// Bytes of the objects' JSON rendered so far: past half the render cache, objects are no
    /// longer kept in it.
    bytes: usize,
}

impl Page<'_> {
    /// Appends the objects of `items` the filter selects to `out`, as the list asks.
    async fn render(&mut self, items: &[KeyValue], out: &mut Vec<u8>) -> Result<(), Status> {
        if self.filter.is_everything() {
            return self.render_all(items, out).await;
        }
        match self.what {
            Streamed::Json => {
                let text = self.filter.reads_only_metadata();
                for obj in self.boundary.from_storage_as(items, text).await? {
                    if self.filter.matches_converted(&obj) {
                        self.comma(out);
                        obj.write(out).map_err(|e| Status::internal(e.to_string()))?;
                    }
                }
            }
            Streamed::Table(include) => {
                let table = self.ver.table();
                for obj in values(self.boundary.from_storage_as(items, false).await?)? {
                    if !self.filter.matches(&obj) {
                        continue;
                    }
                    let object =
                        serde_json::to_vec(&include.object(&obj)).map_err(|e| Status::internal(e.to_string()))?;
                    self.comma(out);
                    table.write_row(out, &table.cells(&obj), &object, self.now);
                }
            }
        }
        Ok(())
    }

    /// Every object of `items`, through the render cache — kept in it while the list could
    /// fit (a larger one would only push out its own objects, and grow the server by the
    /// cache's bound while doing so).
    async fn render_all(&mut self, items: &[KeyValue], out: &mut Vec<u8>) -> Result<(), Status> {
        let keep = self.bytes < versa_registry::render::CACHE_BYTES / 2;
        match self.what {
            Streamed::Json => {
                for item in self.state.render.render_all_kept(self.boundary, items, keep).await? {
                    self.bytes += item.len();
                    self.comma(out);
                    out.extend_from_slice(&item);
                }
            }
            Streamed::Table(include) => {
                let table = self.ver.table();
                for r in &self.state.render.render_rows_kept(self.boundary, table, items, keep).await? {
                    self.bytes += r.json.len();
                    self.comma(out);
                    table.write_row(out, &r.row.cells, row_object(r, include), self.now);
                }
            }
        }
        Ok(())
    }

    /// The comma before every object but the first, counting it.
    fn comma(&mut self, out: &mut Vec<u8>) {
        if self.written > 0 {
            out.push(b',');
        }
        self.written += 1;
    }
}

/// A Table row's `object` as JSON, as `includeObject` asks.
pub fn row_object(r: &RenderedRow, include: IncludeObject) -> &[u8] {
    match include {
        IncludeObject::None => b"null",
        IncludeObject::Metadata => &r.row.metadata,
        IncludeObject::Object => &r.json,
    }
}
