//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): what `kubectl get`
//! prints for custom resources.
//!
//! This mirrors apiextensions-apiserver's `registry/customresource/tableconvertor` together with
//! the pieces of k8s.io/apiserver and apimachinery it relies on:
//!
//! - Columns: `Name` (type `string`, format `name`, ObjectMeta's description of `name`) first,
//!   then the version's `additionalPrinterColumns`; a version without any gets the single `Age`
//!   column (`date`, `.metadata.creationTimestamp`) that `serveDefaultColumnsIfEmpty` adds. No
//!   `Age` is added next to custom columns. A column without a description gets
//!   `Custom resource definition column (in JSONPath format): <jsonPath>`.
//! - Cells: the first JSONPath result ([`crate::jsonpath`]); none (or an evaluation error)
//!   gives `null`. `integer` keeps integers and truncates floats, `number` gives a float,
//!   `boolean` a bool, `date` the age of an RFC 3339 timestamp (`duration.HumanDuration`,
//!   `<invalid>` when unparseable, `<unknown>` for an empty or zero time); other JSON types give
//!   `null`. `string` columns print any value as client-go's jsonpath does (objects as JSON,
//!   `null` as `<no value>`).
//! - Rows carry `object` per `includeObject` (`asTable` in handlers/response.go): `Metadata`
//!   (the default) a `meta.k8s.io/v1` `PartialObjectMetadata`, `Object` the whole object, `None`
//!   `null`. The Table's `metadata` is the list's (`resourceVersion`, `continue`,
//!   `remainingItemCount`) or, for a single object, its `resourceVersion`.
//! - Watches (`handlers/watch.go`, `watchEmbeddedEncoder`): every event's object is a one-row
//!   Table; only the first event carries `columnDefinitions`, later ones have `null` there.
//!
//! Everything here is pure: the caller passes "now" so that tests are exact.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use serde_json::{Map, Value, json};

use crate::jsonpath::{self, JsonPath};

/// ObjectMeta's description of `name` (the `Name` column's description).
pub const OBJECT_META_NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// ObjectMeta's description of `creationTimestamp` (the default `Age` column's description).
pub const OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// `apiVersion` of Table and PartialObjectMetadata documents.
pub const META_API_VERSION: &str = "meta.k8s.io/v1";

/// What each row's `object` holds (the `includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `null`.
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object, in the requested version.
    Object,
}

/// A Table that cannot be made as asked; `Display` is kube-apiserver's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// `?includeObject=` is not one of kube's values (a 400, `ValidateTableOptions`).
    #[error(
        "Unable to convert to Table as requested: includeObject: Invalid value: {0:?}: must be 'Metadata', 'Object', 'None', or empty"
    )]
    InvalidIncludeObject(String),
    /// An `additionalPrinterColumns` JSONPath that does not parse.
    #[error("unrecognized column definition {json_path:?}")]
    UnrecognizedColumn {
        json_path: String,
        #[source]
        error: jsonpath::ParseError,
    },
}

impl IncludeObject {
    /// Parses `includeObject`; the error is kube-apiserver's 400 message
    /// (`ValidateTableOptions`).
    pub fn parse(value: &str) -> Result<IncludeObject, TableError> {
        match value {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(TableError::InvalidIncludeObject(other.to_owned())),
        }
    }

    /// A row's `object` for `obj`: `null`, its PartialObjectMetadata, or the object itself.
    pub fn object(self, obj: &Value) -> std::borrow::Cow<'_, Value> {
        match self {
            IncludeObject::None => std::borrow::Cow::Owned(Value::Null),
            IncludeObject::Object => std::borrow::Cow::Borrowed(obj),
            IncludeObject::Metadata => std::borrow::Cow::Owned(partial_object_metadata(obj)),
        }
    }
}

/// The list metadata a Table of a list carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListMeta<'a> {
    pub resource_version: &'a str,
    pub continue_token: Option<&'a str>,
    pub remaining_item_count: Option<i64>,
}

/// The column types a Table can render (validation allows nothing else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellType {
    Integer,
    Number,
    Boolean,
    String,
    Date,
    /// Any other type: cells are `null`, as `cellForJSONValue` returns nil.
    Other,
}

impl CellType {
    fn of(type_: &str) -> CellType {
        match type_ {
            "integer" => CellType::Integer,
            "number" => CellType::Number,
            "boolean" => CellType::Boolean,
            "string" => CellType::String,
            "date" => CellType::Date,
            _ => CellType::Other,
        }
    }
}

#[derive(Debug, Clone)]
struct Column {
    path: JsonPath,
    cell_type: CellType,
}

/// Renders objects of one version of one definition as Tables; built once per version.
#[derive(Debug, Clone)]
pub struct TableConvertor {
    /// `columnDefinitions`, `Name` first, as compact JSON: written into every Table as it is,
    /// and a parsed array of maps costs a B-tree leaf per column (every definition holds one
    /// convertor per version).
    definitions: Box<str>,
    columns: Vec<Column>,
}

impl TableConvertor {
    /// The convertor for a version with these `additionalPrinterColumns` (the default `Age`
    /// column when there are none). A column whose JSONPath does not parse is an error
    /// (`unrecognized column definition "<jsonPath>"`); see [`TableConvertor::lenient`] for what
    /// kube-apiserver then serves.
    pub fn new(columns: &[CustomResourceColumnDefinition]) -> Result<TableConvertor, TableError> {
        let (convertor, err) = Self::lenient(columns);
        match err {
            Some(e) => Err(e),
            None => Ok(convertor),
        }
    }

    /// What kube-apiserver serves: the columns up to the first one whose JSONPath does not parse,
    /// and that error (which it only logs).
    pub fn lenient(columns: &[CustomResourceColumnDefinition]) -> (TableConvertor, Option<TableError>) {
        let defaulted;
        let columns = if columns.is_empty() {
            defaulted = [default_age_column()];
            &defaulted[..]
        } else {
            columns
        };
        let mut definitions = vec![json!({
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": OBJECT_META_NAME_DESCRIPTION,
            "priority": 0,
        })];
        let mut parsed = Vec::with_capacity(columns.len());
        let mut error = None;
        for col in columns {
            let path = match JsonPath::parse(&col.json_path) {
                Ok(path) => path,
                Err(e) => {
                    error = Some(TableError::UnrecognizedColumn { json_path: col.json_path.clone(), error: e });
                    break;
                }
            };
            let description = match col.description.as_deref() {
                Some(d) if !d.is_empty() => d.to_string(),
                _ => format!("Custom resource definition column (in JSONPath format): {}", col.json_path),
            };
            definitions.push(json!({
                "name": col.name,
                "type": col.type_,
                "format": col.format.clone().unwrap_or_default(),
                "description": description,
                "priority": col.priority.unwrap_or(0),
            }));
            parsed.push(Column { path, cell_type: CellType::of(&col.type_) });
        }
        let definitions = Value::Array(definitions).to_string().into_boxed_str();
        (TableConvertor { definitions, columns: parsed }, error)
    }

    /// The convertor of a version without `additionalPrinterColumns`: `Name` and `Age`.
    pub fn default_columns() -> TableConvertor {
        Self::lenient(&[]).0
    }

    /// The `columnDefinitions` array.
    pub fn column_definitions(&self) -> Value {
        // Only what `lenient` serialized is parsed: it is an array.
        serde_json::from_str(&self.definitions).unwrap_or(Value::Null)
    }

    /// The Table of `objects`: of a list when `list_meta` is given, else of a single object
    /// (whose `resourceVersion` the Table's metadata then carries).
    pub fn table(
        &self,
        objects: &[&Value],
        list_meta: Option<ListMeta<'_>>,
        include_object: IncludeObject,
        now: SystemTime,
    ) -> Value {
        let mut metadata = Map::new();
        match list_meta {
            Some(lm) => list_metadata(&mut metadata, lm),
            None => {
                if let [obj] = objects
                    && let Some(rv) = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str)
                    && !rv.is_empty()
                {
                    metadata.insert("resourceVersion".into(), json!(rv));
                }
            }
        }
        let rows: Vec<Value> = objects.iter().map(|obj| self.row(obj, include_object, now)).collect();
        json!({
            "kind": "Table",
            "apiVersion": META_API_VERSION,
            "metadata": metadata,
            "columnDefinitions": self.column_definitions(),
            "rows": rows,
        })
    }

    /// The one-row Table a watch event carries. Only the first event of a watch has
    /// `with_columns`; later events have `"columnDefinitions": null`, as kube-apiserver sends.
    pub fn row_table(&self, obj: &Value, include_object: IncludeObject, now: SystemTime, with_columns: bool) -> Value {
        let mut table = self.table(&[obj], None, include_object, now);
        if !with_columns {
            table["columnDefinitions"] = Value::Null;
        }
        table
    }

    fn row(&self, obj: &Value, include_object: IncludeObject, now: SystemTime) -> Value {
        json!({"cells": self.cells(obj).at(now), "object": include_object.object(obj)})
    }

    /// A row's cells for `obj`, evaluated up to the age of `date` columns (which depends on
    /// when the Table is written).
    pub fn cells(&self, obj: &Value) -> Cells {
        let mut cells = Vec::with_capacity(1 + self.columns.len());
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        cells.push(Cell::Ready(json!(name)));
        for col in &self.columns {
            let cell = match col.path.find(obj).first() {
                None => Cell::Ready(Value::Null),
                Some(v) => cell(col.cell_type, v),
            };
            cells.push(cell);
        }
        Cells(cells)
    }

    /// The JSON [`TableConvertor::table`] gives for a list, written from rows whose cells were
    /// evaluated before ([`TableConvertor::cells`]) and whose `object`s are already JSON
    /// (`null`, a PartialObjectMetadata or the object, as `includeObject` asks): the same bytes,
    /// without a value tree for the rows. This is what makes `kubectl get` of unchanged objects
    /// cheap (`render::RenderCache::render_rows` keeps both parts per object).
    pub fn write_list<'r>(
        &self,
        list_meta: ListMeta<'_>,
        rows: impl ExactSizeIterator<Item = (&'r Cells, &'r [u8])>,
        now: SystemTime,
    ) -> Vec<u8> {
        let capacity = rows.len() * 256 + 4096;
        let mut out = self.list_head(list_meta);
        out.reserve(capacity);
        for (i, (cells, object)) in rows.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.write_row(&mut out, cells, object, now);
        }
        out.extend_from_slice(b"]}");
        out
    }

    /// A Table list up to its first row: what [`TableConvertor::write_list`] writes before the
    /// rows (a streamed list sends its rows after it, then `]}`).
    pub fn list_head(&self, list_meta: ListMeta<'_>) -> Vec<u8> {
        let mut metadata = Map::new();
        list_metadata(&mut metadata, list_meta);
        let mut out = Vec::with_capacity(4096);
        // serde_json's maps are sorted: apiVersion, columnDefinitions, kind, metadata, rows.
        out.extend_from_slice(b"{\"apiVersion\":");
        write_json(&mut out, &Value::String(META_API_VERSION.into()));
        out.extend_from_slice(b",\"columnDefinitions\":");
        out.extend_from_slice(self.definitions.as_bytes());
        out.extend_from_slice(b",\"kind\":\"Table\",\"metadata\":");
        write_json(&mut out, &Value::Object(metadata));
        out.extend_from_slice(b",\"rows\":[");
        out
    }

    /// One row: its cells (ages at `now`) and its `object`.
    pub fn write_row(&self, out: &mut Vec<u8>, cells: &Cells, object: &[u8], now: SystemTime) {
        out.extend_from_slice(b"{\"cells\":[");
        for (j, c) in cells.0.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            match c {
                Cell::Ready(v) => write_json(out, v),
                Cell::Age(age) => write_json(out, &Value::String(age.at(now))),
            }
        }
        out.extend_from_slice(b"],\"object\":");
        out.extend_from_slice(object);
        out.push(b'}');
    }
}

/// Adds a list's `resourceVersion`, `continue` and `remainingItemCount` to a Table's metadata.
fn list_metadata(metadata: &mut Map<String, Value>, lm: ListMeta<'_>) {
    if !lm.resource_version.is_empty() {
        metadata.insert("resourceVersion".into(), json!(lm.resource_version));
    }
    if let Some(c) = lm.continue_token.filter(|c| !c.is_empty()) {
        metadata.insert("continue".into(), json!(c));
    }
    if let Some(n) = lm.remaining_item_count {
        metadata.insert("remainingItemCount".into(), json!(n));
    }
}

/// Serialises a value into `out` (a `Value` always serialises).
fn write_json(out: &mut Vec<u8>, v: &Value) {
    let _ = serde_json::to_writer(out, v);
}

/// One row's cells with everything evaluated but the ages of `date` columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Cells(Vec<Cell>);

impl Cells {
    /// The cells as of `now`.
    pub fn at(&self, now: SystemTime) -> Vec<Value> {
        self.0
            .iter()
            .map(|c| match c {
                Cell::Ready(v) => v.clone(),
                Cell::Age(age) => Value::String(age.at(now)),
            })
            .collect()
    }

    /// Heap bytes held, about (for caches that count what they keep).
    pub fn size(&self) -> usize {
        self.0.len() * std::mem::size_of::<Cell>()
            + self.0.iter().map(|c| if let Cell::Ready(Value::String(s)) = c { s.len() } else { 0 }).sum::<usize>()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Ready(Value),
    Age(Age),
}

/// A `date` cell before "now" is known.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Age {
    /// `<unknown>`: an empty or zero time.
    Unknown,
    /// `<invalid>`: not a time.
    Invalid,
    At(SystemTime),
}

impl Age {
    /// `metav1.Time.UnmarshalQueryParameter` of a timestamp string.
    fn of(timestamp: &str) -> Age {
        if timestamp.is_empty() || timestamp == "null" {
            return Age::Unknown;
        }
        match parse_rfc3339(timestamp) {
            None => Age::Invalid,
            Some(t) if t == go_zero_time() => Age::Unknown,
            Some(t) => Age::At(t),
        }
    }

    /// `ConvertToHumanReadableDateType` as of `now`.
    fn at(self, now: SystemTime) -> String {
        let t = match self {
            Age::Unknown => return "<unknown>".into(),
            Age::Invalid => return "<invalid>".into(),
            Age::At(t) => t,
        };
        match now.duration_since(t) {
            Ok(d) => human_duration(d),
            // A timestamp in the future: up to (but excluding) two seconds ahead is "now".
            Err(ahead) => {
                if ahead.duration().as_secs() >= 2 {
                    "<invalid>".into()
                } else {
                    "0s".into()
                }
            }
        }
    }
}

/// `meta.k8s.io/v1` `PartialObjectMetadata` of an object. ObjectMeta always serialises
/// `creationTimestamp` (as `null` when unset), so this does too.
pub fn partial_object_metadata(obj: &Value) -> Value {
    let mut metadata = match obj.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    metadata.entry("creationTimestamp").or_insert(Value::Null);
    json!({"kind": "PartialObjectMetadata", "apiVersion": META_API_VERSION, "metadata": metadata})
}

fn default_age_column() -> CustomResourceColumnDefinition {
    CustomResourceColumnDefinition {
        name: "Age".into(),
        type_: "date".into(),
        description: Some(OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION.into()),
        json_path: ".metadata.creationTimestamp".into(),
        format: None,
        priority: None,
    }
}

/// `cellForJSONValue`, plus the `string` case the convertor prints through jsonpath.
fn cell(cell_type: CellType, v: &Value) -> Cell {
    Cell::Ready(match cell_type {
        CellType::String => Value::String(jsonpath::print_value(v)),
        CellType::Integer => match v {
            Value::Number(n) => match n.as_i64() {
                Some(i) => json!(i),
                // Go's int64(float64) truncates toward zero (Rust saturates out of range).
                None => json!(n.as_f64().unwrap_or(0.0) as i64),
            },
            _ => Value::Null,
        },
        CellType::Number => match v {
            Value::Number(n) => json!(n.as_f64().unwrap_or(0.0)),
            _ => Value::Null,
        },
        CellType::Boolean => match v {
            Value::Bool(b) => json!(b),
            _ => Value::Null,
        },
        CellType::Date => match v {
            Value::String(s) => return Cell::Age(Age::of(s)),
            _ => Value::Null,
        },
        CellType::Other => Value::Null,
    })
}

/// Go's zero `time.Time` (0001-01-01T00:00:00Z), which Kubernetes shows as `<unknown>`.
fn go_zero_time() -> SystemTime {
    crate::meta::go_zero_time().into()
}

/// apimachinery's `duration.HumanDuration`: a succinct age with two or three significant
/// figures, e.g. `45s`, `5m30s`, `90m`, `7h15m`, `3d2h`, `400d`, `2y30d`, `9y`.
pub fn human_duration(d: Duration) -> String {
    let seconds = d.as_secs();
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{dy}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, s)` does (CEL's parser:
/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, with calendar-checked fields).
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let t = versa_cel::time::parse_rfc3339(s)?;
    let base = if t.seconds >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(t.seconds.unsigned_abs()))?
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(t.seconds.unsigned_abs()))?
    };
    base.checked_add(Duration::from_nanos(u64::from(t.nanos)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    fn col(v: Value) -> CustomResourceColumnDefinition {
        serde_json::from_value(v).unwrap()
    }

    fn at(s: &str) -> SystemTime {
        parse_rfc3339(s).unwrap()
    }

    const NOW: &str = "2026-11-22T03:00:00Z";

    fn crontab(name: &str, created: &str) -> Value {
        json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "42", "creationTimestamp": created},
            "spec": {"cronSpec": "* * * * */5", "replicas": 3, "ratio": 2.75, "suspend": false,
                     "selector": {"app": "x"}, "image": null},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        })
    }

    #[test]
    fn human_durations() {
        let cases = [
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (5 * 60 + 30, "5m30s"),
            (9 * 60 + 59, "9m59s"),
            (10 * 60 + 30, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (7 * 3600 + 15 * 60, "7h15m"),
            (8 * 3600 + 15 * 60, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (3 * 86400 + 2 * 3600, "3d2h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (2 * 365 * 86400 + 30 * 86400, "2y30d"),
            (8 * 365 * 86400, "8y"),
            (20 * 365 * 86400 + 100 * 86400, "20y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(Duration::from_secs(secs)), want, "{secs}s");
        }
    }

    #[test]
    fn parses_rfc3339_like_go() {
        let epoch = |s: &str| {
            parse_rfc3339(s).map(|t| match t.duration_since(UNIX_EPOCH) {
                Ok(d) => d.as_secs_f64(),
                Err(e) => -e.duration().as_secs_f64(),
            })
        };
        assert_eq!(epoch("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(epoch("2026-11-22T03:00:00Z"), Some(1_795_316_400.0));
        assert_eq!(epoch("2026-11-22T05:00:00+02:00"), Some(1_795_316_400.0));
        assert_eq!(epoch("2026-11-22T02:30:00.5-00:30"), Some(1_795_316_400.5));
        // Go also takes a comma before the fraction, and more than nine digits (truncated).
        assert_eq!(epoch("2026-11-22T03:00:00,25Z"), Some(1_795_316_400.25));
        assert_eq!(epoch("2026-11-22T03:00:00.5000000009Z"), Some(1_795_316_400.5));
        assert_eq!(epoch("1969-12-31T23:59:59Z"), Some(-1.0));
        assert_eq!(parse_rfc3339("0001-01-01T00:00:00Z"), Some(go_zero_time()));
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22 03:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-22T24:00:00Z",
            "2026-11-22T03:00:00",
            "2026-11-22T03:00:00+0200",
            "2026-11-22T03:00:00.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        assert!(parse_rfc3339("2024-02-29T00:00:00Z").is_some());
    }

    #[test]
    fn default_columns_are_name_and_age() {
        let t = TableConvertor::new(&[]).unwrap();
        let obj = crontab("a", "2026-11-22T02:55:00Z");
        let table = t.table(&[&obj], None, IncludeObject::Metadata, at(NOW));
        assert_eq!(
            table,
            json!({
                "kind": "Table", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "42"},
                "columnDefinitions": [
                    {"name": "Name", "type": "string", "format": "name", "description": OBJECT_META_NAME_DESCRIPTION, "priority": 0},
                    {"name": "Age", "type": "date", "format": "", "description": OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION, "priority": 0},
                ],
                "rows": [{
                    "cells": ["a", "5m"],
                    "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": {"name": "a", "namespace": "default", "resourceVersion": "42",
                                            "creationTimestamp": "2026-11-22T02:55:00Z"}},
                }],
            })
        );
        assert_eq!(TableConvertor::default_columns().column_definitions(), t.column_definitions());
    }

    /// (column type, jsonPath, expected cell).
    #[test]
    fn cells_follow_cell_for_json_value() {
        let obj = crontab("a", "2026-11-22T02:55:00Z");
        let cases = [
            ("string", ".spec.cronSpec", json!("* * * * */5")),
            ("string", ".spec.replicas", json!("3")),
            ("string", ".spec.ratio", json!("2.75")),
            ("string", ".spec.suspend", json!("false")),
            ("string", ".spec.selector", json!("{\"app\":\"x\"}")),
            ("string", ".spec.image", json!("<no value>")),
            ("string", ".spec.missing", Value::Null),
            ("string", ".status.conditions[?(@.type==\"Ready\")].status", json!("True")),
            ("string", ".status.conditions[*].type", json!("Ready")),
            ("string", ".spec.items[3]", Value::Null),
            ("integer", ".spec.replicas", json!(3)),
            ("integer", ".spec.ratio", json!(2)),
            ("integer", ".spec.cronSpec", Value::Null),
            ("integer", ".spec.image", Value::Null),
            ("number", ".spec.replicas", json!(3.0)),
            ("number", ".spec.ratio", json!(2.75)),
            ("boolean", ".spec.suspend", json!(false)),
            ("boolean", ".spec.replicas", Value::Null),
            ("date", ".metadata.creationTimestamp", json!("5m")),
            ("date", ".spec.cronSpec", json!("<invalid>")),
            ("date", ".spec.replicas", Value::Null),
        ];
        for (type_, path, want) in cases {
            let t = TableConvertor::new(&[col(json!({"name": "C", "type": type_, "jsonPath": path}))]).unwrap();
            let row = &t.table(&[&obj], None, IncludeObject::None, at(NOW))["rows"][0];
            assert_eq!(row["cells"], json!(["a", want]), "{type_} {path}");
            assert_eq!(row["object"], Value::Null);
        }
    }

    #[test]
    fn dates_in_the_future_and_unset() {
        let t = TableConvertor::new(&[]).unwrap();
        let cases = [
            ("2026-11-22T03:00:01Z", "0s"),
            ("2026-11-22T03:00:01.9Z", "0s"),
            ("2026-11-22T03:00:02Z", "<invalid>"),
            ("", "<unknown>"),
            ("0001-01-01T00:00:00Z", "<unknown>"),
            ("2026-11-19T01:00:00Z", "3d2h"),
        ];
        for (created, want) in cases {
            let obj = crontab("a", created);
            let table = t.table(&[&obj], None, IncludeObject::None, at(NOW));
            assert_eq!(table["rows"][0]["cells"][1], json!(want), "{created:?}");
        }
    }

    #[test]
    fn custom_columns_replace_age_and_keep_their_fields() {
        let t = TableConvertor::new(&[
            col(json!({"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"})),
            col(json!({"name": "Replicas", "type": "integer", "format": "int32", "description": "How many",
                       "priority": 1, "jsonPath": ".spec.replicas"})),
        ])
        .unwrap();
        assert_eq!(
            t.column_definitions(),
            json!([
                {"name": "Name", "type": "string", "format": "name", "description": OBJECT_META_NAME_DESCRIPTION, "priority": 0},
                {"name": "Spec", "type": "string", "format": "",
                 "description": "Custom resource definition column (in JSONPath format): .spec.cronSpec", "priority": 0},
                {"name": "Replicas", "type": "integer", "format": "int32", "description": "How many", "priority": 1},
            ])
        );
    }

    #[test]
    fn lists_carry_list_metadata_and_objects() {
        let t = TableConvertor::new(&[]).unwrap();
        let (a, b) = (crontab("a", "2026-11-22T02:00:00Z"), crontab("b", "2026-11-21T03:00:00Z"));
        let lm = ListMeta { resource_version: "77", continue_token: Some("tok"), remaining_item_count: Some(3) };
        let table = t.table(&[&a, &b], Some(lm), IncludeObject::Object, at(NOW));
        assert_eq!(table["metadata"], json!({"resourceVersion": "77", "continue": "tok", "remainingItemCount": 3}));
        assert_eq!(table["rows"][0]["cells"], json!(["a", "60m"]));
        assert_eq!(table["rows"][1]["cells"], json!(["b", "24h"]));
        assert_eq!(table["rows"][1]["object"], b);

        let empty = t.table(
            &[],
            Some(ListMeta { resource_version: "9", continue_token: None, remaining_item_count: None }),
            IncludeObject::Metadata,
            at(NOW),
        );
        assert_eq!(empty["metadata"], json!({"resourceVersion": "9"}));
        assert_eq!(empty["rows"], json!([]));
    }

    #[test]
    fn lists_written_from_evaluated_cells_are_the_same_bytes() {
        let cols = [
            col(json!({"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"})),
            col(json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"})),
            col(json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"})),
            col(json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})),
            col(json!({"name": "Quoted \"x\"", "type": "string", "jsonPath": ".status.conditions[0]"})),
        ];
        let mut odd = crontab("odd \"é\"", "not a time");
        odd["spec"]["cronSpec"] = json!("line\nbreak\u{7}");
        let objects =
            [crontab("a", "2026-11-22T02:00:00Z"), crontab("b", "2026-11-22T03:00:01Z"), crontab("c", ""), odd];
        let refs: Vec<&Value> = objects.iter().collect();
        let lists = [
            ListMeta { resource_version: "77", continue_token: Some("tok"), remaining_item_count: Some(3) },
            ListMeta { resource_version: "9", continue_token: None, remaining_item_count: None },
        ];
        for t in [TableConvertor::new(&cols).unwrap(), TableConvertor::default_columns()] {
            for include in [IncludeObject::None, IncludeObject::Metadata, IncludeObject::Object] {
                let cells: Vec<Cells> = objects.iter().map(|o| t.cells(o)).collect();
                let objs: Vec<Vec<u8>> = objects
                    .iter()
                    .map(|o| match include {
                        IncludeObject::None => b"null".to_vec(),
                        IncludeObject::Metadata => serde_json::to_vec(&partial_object_metadata(o)).unwrap(),
                        IncludeObject::Object => serde_json::to_vec(o).unwrap(),
                    })
                    .collect();
                for lm in lists {
                    let want = serde_json::to_vec(&t.table(&refs, Some(lm), include, at(NOW))).unwrap();
                    let rows = cells.iter().zip(objs.iter().map(Vec::as_slice));
                    let got = t.write_list(lm, rows, at(NOW));
                    assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "{include:?}");
                }
            }
        }
    }

    #[test]
    fn watch_rows_drop_columns_after_the_first() {
        let t = TableConvertor::new(&[]).unwrap();
        let obj = crontab("a", "2026-11-22T02:59:00Z");
        let first = t.row_table(&obj, IncludeObject::Metadata, at(NOW), true);
        let later = t.row_table(&obj, IncludeObject::Metadata, at(NOW), false);
        assert_eq!(first["columnDefinitions"], t.column_definitions());
        assert_eq!(later["columnDefinitions"], Value::Null);
        assert_eq!(later["rows"][0]["cells"], json!(["a", "60s"]));
        assert_eq!(later["metadata"], json!({"resourceVersion": "42"}));
    }

    #[test]
    fn bad_paths_fall_back_like_kube() {
        let cols = [
            col(json!({"name": "Good", "type": "string", "jsonPath": ".spec.cronSpec"})),
            col(json!({"name": "Bad", "type": "string", "jsonPath": ".spec.items["})),
            col(json!({"name": "After", "type": "string", "jsonPath": ".spec.image"})),
        ];
        assert_eq!(
            TableConvertor::new(&cols).unwrap_err().to_string(),
            "unrecognized column definition \".spec.items[\""
        );
        let (t, err) = TableConvertor::lenient(&cols);
        assert!(err.is_some());
        let definitions = t.column_definitions();
        let names: Vec<&str> = definitions.as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(names, ["Name", "Good"]);
    }

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(""), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse("Object"), Ok(IncludeObject::Object));
        assert_eq!(IncludeObject::parse("None"), Ok(IncludeObject::None));
        assert_eq!(
            IncludeObject::parse("all").unwrap_err().to_string(),
            "Unable to convert to Table as requested: includeObject: Invalid value: \"all\": must be 'Metadata', 'Object', 'None', or empty"
        );
        assert_eq!(
            partial_object_metadata(&json!({"metadata": {"name": "x"}})),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": {"name": "x", "creationTimestamp": null}})
        );
    }
}
