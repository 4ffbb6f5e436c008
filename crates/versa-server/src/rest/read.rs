//! `get` and `list`.
//!
//! List follows kube-apiserver's ListOptions: `labelSelector`, `fieldSelector`
//! (`metadata.name`, `metadata.namespace`, the version's `selectableFields`), `limit` +
//! `continue` (the store's token, re-minted after the last returned item when a selector
//! filters a page short), `resourceVersion` with `resourceVersionMatch` (`NotOlderThan`, the
//! default, reads the latest state; `Exact` reads the store at that revision). Results are the
//! objects, a Table, or PartialObjectMetadata, as the `Accept` header asks.

use http::StatusCode;
use serde_json::{Value, json};
use versa_conversion::Converted;
use versa_registry::storage::values;
use versa_registry::table::{IncludeObject, partial_object_metadata};
use versa_schema::{Error as FieldError, ErrorList, Path};
use versa_storage::{ContinueToken, ListOptions};

pub use super::filter::Filter;
use super::stream::{self, Streamed, row_object};
use super::{Answer, Ctx, Shape, shape};
use crate::status::Status;

/// `GET .../<plural>/<name>` (and `.../<name>/status`).
///
/// Without `resourceVersion` a consistent read of the store; with one, a read no older than it
/// (`0`: any, which the watch cache answers from memory), as kube's cacher `Get` does.
pub async fn get(ctx: &Ctx) -> Answer {
    let key = ctx.key(&ctx.name);
    let kv = match ctx.query.get("resourceVersion").filter(|rv| !rv.is_empty()) {
        None => ctx.state.store.get(&key).await,
        Some(rv) => ctx.state.store.get_at(&key, parse_get_rv(rv)?).await,
    };
    let kv = kv.map_err(|e| match e {
        versa_storage::Error::FutureRevision { requested, current } => {
            Status::too_large_resource_version(requested, current)
        }
        e => ctx.storage_error(&ctx.name)(e),
    })?;
    let kv = kv.ok_or_else(|| ctx.not_found())?;
    if ctx.wants_plain_json()
        && let Some(bytes) = ctx.state.render.cached_one(ctx.boundary(), &kv)
    {
        return Ok(ctx.respond_json_bytes(StatusCode::OK, bytes));
    }
    // Rendering and conversion (perhaps by a webhook) make a large future: boxed, so that a
    // cached GET's stays small.
    Box::pin(render(ctx, kv)).await
}

/// The answer to a GET of `kv` that the render cache did not have.
async fn render(ctx: &Ctx, kv: versa_storage::KeyValue) -> Answer {
    if ctx.wants_plain_json() {
        let bytes = ctx.state.render.render(ctx.boundary(), &kv).await?;
        return Ok(ctx.respond_json_bytes(StatusCode::OK, bytes));
    }
    let obj = ctx.boundary().from_storage(&kv).await?;
    ctx.respond_object(StatusCode::OK, &obj)
}

/// A GET's `resourceVersion`, parsed as kube's storage versioner parses it (Go's `ParseUint`),
/// with kube's answer to one it cannot parse: a plain 500 carrying the field error.
fn parse_get_rv(rv: &str) -> Result<i64, Status> {
    let why = if !rv.bytes().all(|b| b.is_ascii_digit()) {
        "invalid syntax"
    } else {
        match rv.parse::<u64>() {
            // Revisions are i64; a larger one is as far beyond the store as i64::MAX.
            Ok(n) => return Ok(i64::try_from(n).unwrap_or(i64::MAX)),
            Err(_) => "value out of range",
        }
    };
    Err(Status::unknown(format!("resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {why}")))
}

/// `resourceVersion` / `resourceVersionMatch` / `continue`, checked as kube's
/// `ValidateListOptions` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// The latest state.
    Latest,
    /// The latest state, which must be at least this revision.
    NotOlderThan(i64),
    /// Exactly this revision.
    Exact(i64),
}

/// Parses a `resourceVersion` parameter.
pub fn parse_rv(rv: &str) -> Result<i64, Status> {
    rv.parse::<i64>()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| Status::bad_request(format!("invalid resource version: {rv:?}")))
}

fn read_at(ctx: &Ctx) -> Result<ReadAt, Status> {
    let rv = ctx.query.get("resourceVersion").unwrap_or("");
    let rv_match = ctx.query.get("resourceVersionMatch").unwrap_or("");
    let cont = ctx.query.get("continue").unwrap_or("");
    if !cont.is_empty() && !rv.is_empty() && rv != "0" {
        // kube checks this one before the ListOptions validation, as a plain 400.
        return Err(Status::bad_request("specifying resource version is not allowed when using continue"));
    }
    let mut errs = ErrorList::new();
    if ctx.query.get("sendInitialEvents").is_some() {
        errs.push(FieldError::forbidden(Path::new("sendInitialEvents"), "sendInitialEvents is forbidden for list"));
    }
    if !rv_match.is_empty() && rv.is_empty() {
        errs.push(FieldError::forbidden(
            Path::new("resourceVersionMatch"),
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if !rv_match.is_empty() && !cont.is_empty() {
        errs.push(FieldError::forbidden(
            Path::new("resourceVersionMatch"),
            "resourceVersionMatch is forbidden when continue is provided",
        ));
    }
    if !matches!(rv_match, "" | "NotOlderThan" | "Exact") {
        errs.push(FieldError::not_supported(
            Path::new("resourceVersionMatch"),
            rv_match,
            &["Exact", "NotOlderThan", ""],
        ));
    }
    if rv_match == "Exact" && rv == "0" {
        errs.push(FieldError::forbidden(
            Path::new("resourceVersionMatch"),
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    if !errs.is_empty() {
        return Err(Status::invalid("meta.k8s.io", "ListOptions", "", &errs));
    }
    Ok(match (rv, rv_match) {
        ("" | "0", _) => ReadAt::Latest,
        (rv, "Exact") => ReadAt::Exact(parse_rv(rv)?),
        (rv, _) => ReadAt::NotOlderThan(parse_rv(rv)?),
    })
}

pub(super) fn include_object(ctx: &Ctx) -> Result<IncludeObject, Status> {
    match ctx.query.get("includeObject").unwrap_or("") {
        "" | "Metadata" => Ok(IncludeObject::Metadata),
        "None" => Ok(IncludeObject::None),
        "Object" => Ok(IncludeObject::Object),
        other => Err(Status::bad_request(format!("includeObject: Unsupported value: {other:?}"))),
    }
}

/// One page of a list: request-form objects, the revision read at, the next token.
#[derive(Debug)]
pub struct Page<T = Value> {
    pub items: Vec<T>,
    pub revision: i64,
    pub continue_token: Option<String>,
}

/// `limit` and the revision to list at (0: the latest), from the list options.
async fn list_params(ctx: &Ctx) -> Result<(usize, i64), Status> {
    let limit = match ctx.query.get("limit").unwrap_or("") {
        "" => 0,
        l => l.parse::<i64>().map_err(|_| Status::bad_request(format!("invalid limit {l:?}")))?.max(0) as usize,
    };
    let revision = match read_at(ctx)? {
        ReadAt::Exact(r) => r,
        ReadAt::Latest => 0,
        ReadAt::NotOlderThan(want) => {
            let current = ctx.state.store.current_revision().await.map_err(ctx.storage_error(&ctx.name))?;
            if want > current {
                return Err(Status::too_large_resource_version(want, current));
            }
            0
        }
    };
    Ok((limit, revision))
}

/// Reads the collection as the list options ask.
pub async fn read_page(ctx: &Ctx, filter: &Filter) -> Result<Page, Status> {
    let page = read_converted(ctx, filter, false).await?;
    Ok(Page { items: values(page.items)?, revision: page.revision, continue_token: page.continue_token })
}

/// Reads the collection as the list options ask, for an answer in JSON: objects as text where
/// the converter has them.
async fn read_page_for_json(ctx: &Ctx, filter: &Filter) -> Result<Page<Converted>, Status> {
    read_converted(ctx, filter, filter.reads_only_metadata()).await
}

async fn read_converted(ctx: &Ctx, filter: &Filter, text: bool) -> Result<Page<Converted>, Status> {
    let (limit, mut revision) = list_params(ctx).await?;
    let prefix = ctx.collection_prefix();
    let store = &ctx.state.store;
    let mut token = ctx.query.get("continue").filter(|c| !c.is_empty()).map(str::to_owned);
    let mut items = Vec::new();
    loop {
        let options = ListOptions { limit, continue_token: token.take(), revision };
        let page = store.list(&prefix, options).await.map_err(|e| list_error(ctx, e))?;
        revision = page.revision;
        let mut last_key = None;
        // One conversion for the whole store page (selectors apply to converted objects).
        let objects = ctx.boundary().from_storage_as(&page.items, text).await?;
        for (kv, obj) in page.items.iter().zip(objects) {
            last_key = Some(kv.key.clone());
            if filter.matches_converted(&obj) {
                items.push(obj);
                if limit > 0 && items.len() == limit {
                    break;
                }
            }
        }
        let full = limit > 0 && items.len() == limit;
        let exhausted_page = last_key.as_deref() == page.items.last().map(|kv| kv.key.as_str());
        match (full, page.continue_token) {
            // Filled before the end of the store page: continue right after the last item.
            (true, _) if !exhausted_page => {
                let last = last_key.unwrap_or_default();
                let next = ContinueToken::after(&prefix, &last, revision).encode();
                return Ok(Page { items, revision, continue_token: Some(next) });
            }
            (true, next) | (false, next @ None) => return Ok(Page { items, revision, continue_token: next }),
            (false, Some(next)) => token = Some(next),
        }
    }
}

fn list_error(ctx: &Ctx, e: versa_storage::Error) -> Status {
    match e {
        versa_storage::Error::Expired { .. } if ctx.query.get("continue").is_some_and(|c| !c.is_empty()) => {
            Status::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            )
        }
        versa_storage::Error::Expired { .. } => {
            Status::expired("The resourceVersion for the provided list is too old.")
        }
        versa_storage::Error::InvalidContinue(_) => Status::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        versa_storage::Error::FutureRevision { requested, current } => {
            Status::too_large_resource_version(requested, current)
        }
        e => ctx.storage_error(&ctx.name)(e),
    }
}

/// `GET .../<plural>` (without `watch`).
pub async fn list(ctx: &Ctx) -> Answer {
    let filter = Filter::from_query(ctx)?;
    if ctx.wants_plain_json() {
        if let Some(first) = first_page(ctx).await? {
            return stream::list(ctx, first, Streamed::Json, filter).await;
        }
        if filter.is_everything() {
            return list_rendered(ctx).await;
        }
        let page = read_page_for_json(ctx, &filter).await?;
        let size = page.items.len() * 512;
        let list = list_json(ctx, page.revision, page.continue_token.as_deref(), size, |out| {
            for (i, item) in page.items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                item.write(out).map_err(|e| Status::internal(e.to_string()))?;
            }
            Ok(())
        })?;
        return Ok(ctx.respond_json_bytes(StatusCode::OK, list));
    }
    if shape(&ctx.headers) == Shape::Table && ctx.answers_in_json() {
        let include = include_object(ctx)?;
        if let Some(first) = first_page(ctx).await? {
            return stream::list(ctx, first, Streamed::Table(include), filter).await;
        }
        if filter.is_everything() {
            return list_table_rendered(ctx, include).await;
        }
    }
    let page = read_page(ctx, &filter).await?;
    let rv = page.revision.to_string();
    Ok(match shape(&ctx.headers) {
        Shape::Object => ctx.respond(StatusCode::OK, &list_object(ctx, page)),
        Shape::Metadata => {
            return Err(Status::not_acceptable(
                "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)",
            ));
        }
        Shape::MetadataList => {
            let mut meta = json!({"resourceVersion": rv});
            if let Some(c) = &page.continue_token {
                meta["continue"] = json!(c);
            }
            let items: Vec<Value> = page.items.iter().map(partial_object_metadata).collect();
            let doc = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items});
            ctx.respond(StatusCode::OK, &doc)
        }
        Shape::Table => {
            let refs: Vec<&Value> = page.items.iter().collect();
            let list_meta = versa_registry::table::ListMeta {
                resource_version: &rv,
                continue_token: page.continue_token.as_deref(),
                remaining_item_count: None,
            };
            let table =
                ctx.ver().table().table(&refs, Some(list_meta), include_object(ctx)?, std::time::SystemTime::now());
            ctx.respond(StatusCode::OK, &table)
        }
    })
}

/// The common paginated LIST (no selector, plain JSON): one store page, each object rendered
/// once and cached (`versa_registry::render`), the list written around them.
async fn list_rendered(ctx: &Ctx) -> Answer {
    let page = store_page(ctx).await?;
    let items = ctx.state.render.render_all(ctx.boundary(), &page.items).await?;
    let size: usize = items.iter().map(|b| b.len() + 1).sum();
    let list = list_json(ctx, page.revision, page.continue_token.as_deref(), size, |out| {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
        Ok(())
    })?;
    Ok(ctx.respond_json_bytes(StatusCode::OK, list))
}

/// One store page as the list options ask (no selector to fill a page with).
async fn store_page(ctx: &Ctx) -> Result<versa_storage::ListPage, Status> {
    let (limit, revision) = list_params(ctx).await?;
    let token = ctx.query.get("continue").filter(|c| !c.is_empty()).map(str::to_owned);
    let options = ListOptions { limit, continue_token: token, revision };
    ctx.state.store.list(&ctx.collection_prefix(), options).await.map_err(|e| list_error(ctx, e))
}

/// What `kubectl get` asks for (a Table, no selector, JSON), paginated, the way
/// [`list_rendered`] answers plain LISTs: one store page, each object's row evaluated once and
/// cached beside its JSON (`versa_registry::render`), the Table written around them.
async fn list_table_rendered(ctx: &Ctx, include: IncludeObject) -> Answer {
    let page = store_page(ctx).await?;
    let table = ctx.ver().table();
    let rows = ctx.state.render.render_rows(ctx.boundary(), table, &page.items).await?;
    let rv = page.revision.to_string();
    let list_meta = versa_registry::table::ListMeta {
        resource_version: &rv,
        continue_token: page.continue_token.as_deref(),
        remaining_item_count: None,
    };
    let cells = rows.iter().map(|r| (&r.row.cells, row_object(r, include)));
    let body = table.write_list(list_meta, cells, std::time::SystemTime::now());
    Ok(ctx.respond_json_bytes(StatusCode::OK, body))
}

/// The `<Kind>List` document as JSON, its items written by `items` (comma-separated), in
/// `serde_json`'s key order as the value path writes it. `size`: about the items' length.
fn list_json(
    ctx: &Ctx,
    revision: i64,
    continue_token: Option<&str>,
    size: usize,
    items: impl FnOnce(&mut Vec<u8>) -> Result<(), Status>,
) -> Result<Vec<u8>, Status> {
    let mut meta = json!({"resourceVersion": revision.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    let mut out = Vec::with_capacity(size + 256);
    out.extend_from_slice(b"{\"apiVersion\":");
    let _ = serde_json::to_writer(&mut out, &ctx.api_version());
    out.extend_from_slice(b",\"items\":[");
    items(&mut out)?;
    out.extend_from_slice(b"],\"kind\":");
    let _ = serde_json::to_writer(&mut out, &ctx.res.list_kind);
    out.extend_from_slice(b",\"metadata\":");
    let _ = serde_json::to_writer(&mut out, &meta);
    out.push(b'}');
    Ok(out)
}

/// The `<Kind>List` document.
pub fn list_object(ctx: &Ctx, page: Page) -> Value {
    let mut meta = json!({"resourceVersion": page.revision.to_string()});
    if let Some(c) = page.continue_token {
        meta["continue"] = json!(c);
    }
    // The items move into the list (json! would copy every object).
    let mut list = json!({"apiVersion": ctx.api_version(), "kind": ctx.res.list_kind, "metadata": meta});
    if let Some(o) = list.as_object_mut() {
        o.insert("items".into(), Value::Array(page.items));
    }
    list
}

/// The first store page of an unpaginated LIST (no `limit`, or `limit=0`, which kube reads as
/// none; no `continue`), read before the answer starts so that its errors are answered as
/// such; `None` for a paginated LIST.
async fn first_page(ctx: &Ctx) -> Result<Option<versa_storage::ListPage>, Status> {
    let (limit, revision) = list_params(ctx).await?;
    if limit > 0 || ctx.query.get("continue").is_some_and(|c| !c.is_empty()) {
        return Ok(None);
    }
    let options = ListOptions { limit: stream::FIRST_PAGE, continue_token: None, revision };
    ctx.state.store.list(&ctx.collection_prefix(), options).await.map(Some).map_err(|e| list_error(ctx, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "test code")]
mod tests {
    use super::*;

    /// A GET's resourceVersion as kube's versioner parses it, and its 500 for one it cannot.
    #[test]
    fn get_resource_versions() {
        for (rv, want) in [
            ("0", Ok(0)),
            ("42", Ok(42)),
            ("18446744073709551615", Ok(i64::MAX)),
            ("abc", Err(r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#)),
            ("-1", Err(r#"resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax"#)),
            ("+1", Err(r#"resourceVersion: Invalid value: "+1": strconv.ParseUint: parsing "+1": invalid syntax"#)),
            (
                "18446744073709551616",
                Err(
                    r#"resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range"#,
                ),
            ),
        ] {
            match (parse_get_rv(rv), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{rv}"),
                (Err(status), Err(want)) => {
                    assert_eq!(
                        (status.code, status.reason, status.message.as_str()),
                        (StatusCode::INTERNAL_SERVER_ERROR, "", want)
                    );
                }
                (got, want) => panic!("{rv}: {got:?}, want {want:?}"),
            }
        }
    }
}
