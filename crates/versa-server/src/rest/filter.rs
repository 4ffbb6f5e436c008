//! Label and field selectors of a list or watch request, parsed from the query and matched
//! against request-form objects (values, or converted text with its metadata beside it).

use serde_json::{Map, Value};
use versa_conversion::Converted;

use super::Ctx;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::Status;

/// The selectors and paging of a list or watch request.
#[derive(Debug)]
pub struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    /// Parses `labelSelector` and `fieldSelector`; unsupported field labels are 400.
    pub fn from_query(ctx: &Ctx) -> Result<Filter, Status> {
        let labels = LabelSelector::parse(ctx.query.get("labelSelector").unwrap_or(""))
            .map_err(|e| Status::bad_request(e.to_string()))?;
        let fields = FieldSelector::parse(ctx.query.get("fieldSelector").unwrap_or(""))
            .map_err(|e| Status::bad_request(e.to_string()))?;
        let selectable = &ctx.ver().selectable_fields;
        for f in fields.fields() {
            if f != "metadata.name" && f != "metadata.namespace" && !selectable.iter().any(|s| s == f) {
                return Err(Status::bad_request(format!("field label not supported: {f}")));
            }
        }
        Ok(Filter { labels, fields })
    }

    /// No selector at all.
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether a request-form object passes both selectors.
    pub fn matches(&self, obj: &Value) -> bool {
        let empty = Map::new();
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object).unwrap_or(&empty);
        self.labels.matches(labels) && self.fields.matches(|field| printed(descend(obj, field.split('.'))?))
    }

    /// Whether the field selector reads only `metadata` (which converted text carries beside
    /// it; other fields need the object as a value).
    pub(super) fn reads_only_metadata(&self) -> bool {
        self.fields.fields().all(|f| f.starts_with("metadata."))
    }

    /// [`Filter::matches`] for a converted object; text is asked only metadata fields (see
    /// [`Filter::reads_only_metadata`]).
    pub(super) fn matches_converted(&self, obj: &Converted) -> bool {
        let metadata = match obj {
            Converted::Value(v) => return self.matches(v),
            Converted::Json { metadata, .. } => metadata,
        };
        let empty = Map::new();
        let labels = metadata.get("labels").and_then(Value::as_object).unwrap_or(&empty);
        self.labels.matches(labels)
            && self.fields.matches(|field| {
                let mut parts = field.split('.');
                if parts.next() != Some("metadata") {
                    return None;
                }
                printed(descend(metadata.get(parts.next()?)?, parts)?)
            })
    }
}

/// The value at the end of `parts` below `v`.
fn descend<'a, 'p>(mut v: &'a Value, parts: impl Iterator<Item = &'p str>) -> Option<&'a Value> {
    for part in parts {
        v = v.get(part)?;
    }
    Some(v)
}

/// A field's value as a field selector compares it (`fmt.Sprint` of the value; `null` as
/// absent).
fn printed(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(versa_schema::field::go_number(n)),
        other => Some(other.to_string()),
    }
}
