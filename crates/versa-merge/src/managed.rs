//! `metadata.managedFields`: the entries kube-apiserver writes, and the owners they decode to.
//!
//! An entry names a manager, the operation it used (`Apply` or `Update`), the apiVersion its
//! field set is written in, when it last changed something, an optional subresource, and its
//! `fieldsV1` set. Inside the field manager an owner is identified by the JSON of its entry
//! without time and fields — and, for appliers, without apiVersion, so one applier keeps one
//! entry across versions while updaters get one entry per version — which is also the order
//! conflicts are grouped in. Entries are written back sorted as kube sorts them: `Apply` before
//! `Update`, then by time (seconds), manager, apiVersion, subresource. Hand-written to match
//! kube-apiserver's decoding errors, identifiers and order.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::set::FieldSet;
use crate::value::write_go_json_string;

/// `operation: Apply`.
pub const APPLY: &str = "Apply";
/// `operation: Update`.
pub const UPDATE: &str = "Update";

/// One entry of `metadata.managedFields`, as kube-apiserver writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    /// RFC 3339, seconds, UTC (`2024-05-01T10:00:00Z`).
    pub time: Option<String>,
    /// Always `FieldsV1` when kube writes it.
    pub fields_type: String,
    pub fields_v1: Option<Value>,
    pub subresource: String,
}

/// Why `managedFields` cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ManagedFieldsError(pub String);

impl ManagedFieldsEntry {
    /// Reads one entry from its JSON form.
    pub fn from_value(v: &Value) -> Result<ManagedFieldsEntry, ManagedFieldsError> {
        let Value::Object(m) = v else {
            return Err(ManagedFieldsError(format!("managedFields entry must be an object, got {v}")));
        };
        let string = |k: &str| -> Result<String, ManagedFieldsError> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(ManagedFieldsError(format!("managedFields {k} must be a string, got {other}"))),
            }
        };
        let time = string("time")?;
        Ok(ManagedFieldsEntry {
            manager: string("manager")?,
            operation: string("operation")?,
            api_version: string("apiVersion")?,
            time: if time.is_empty() { None } else { Some(time) },
            fields_type: string("fieldsType")?,
            fields_v1: m.get("fieldsV1").filter(|v| !v.is_null()).cloned(),
            subresource: string("subresource")?,
        })
    }

    /// The entry's JSON form (empty fields omitted, as kube omits them).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        let put = |m: &mut Map<String, Value>, k: &str, v: &str| {
            if !v.is_empty() {
                m.insert(k.into(), Value::String(v.into()));
            }
        };
        put(&mut m, "manager", &self.manager);
        put(&mut m, "operation", &self.operation);
        put(&mut m, "apiVersion", &self.api_version);
        put(&mut m, "time", self.time.as_deref().unwrap_or(""));
        put(&mut m, "fieldsType", &self.fields_type);
        if let Some(f) = &self.fields_v1 {
            m.insert("fieldsV1".into(), f.clone());
        }
        put(&mut m, "subresource", &self.subresource);
        Value::Object(m)
    }
}

/// The `managedFields` of an object, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFields(pub Vec<ManagedFieldsEntry>);

impl ManagedFields {
    /// The entries of `obj.metadata.managedFields`; `None` when the field is absent or null.
    pub fn from_object(obj: &Value) -> Result<Option<ManagedFields>, ManagedFieldsError> {
        match obj.pointer("/metadata/managedFields") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => {
                Ok(Some(ManagedFields(items.iter().map(ManagedFieldsEntry::from_value).collect::<Result<_, _>>()?)))
            }
            Some(other) => Err(ManagedFieldsError(format!("managedFields must be a list, got {other}"))),
        }
    }

    /// The JSON list.
    pub fn to_value(&self) -> Value {
        Value::Array(self.0.iter().map(ManagedFieldsEntry::to_value).collect())
    }

    /// Sets `obj.metadata.managedFields` to these entries, or removes it when there are none
    /// (kube writes no empty list).
    pub fn write_to(&self, obj: &mut Value) {
        let Some(o) = obj.as_object_mut() else { return };
        if self.0.is_empty() {
            if let Some(Value::Object(meta)) = o.get_mut("metadata") {
                meta.remove("managedFields");
            }
            return;
        }
        let meta = o.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert("managedFields".into(), self.to_value());
        }
    }
}

/// Who owns a field set: the identity part of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagerId {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// Set for updaters only: an update manager is one per apiVersion.
    pub update_api_version: Option<String>,
    pub subresource: String,
}

impl ManagerId {
    /// The identifier kube-apiserver keys owners by: the entry's JSON without time and fields
    /// (and without apiVersion for appliers).
    pub fn identifier(&self) -> String {
        let mut s = String::from("{");
        let mut first = true;
        let mut field = |s: &mut String, k: &str, v: &str| {
            if v.is_empty() {
                return;
            }
            if !first {
                s.push(',');
            }
            first = false;
            let _ = write!(s, "\"{k}\":");
            write_go_json_string(v, s);
        };
        field(&mut s, "manager", &self.manager);
        field(&mut s, "operation", &self.operation);
        field(&mut s, "apiVersion", self.update_api_version.as_deref().unwrap_or(""));
        field(&mut s, "subresource", &self.subresource);
        s.push('}');
        s
    }

    /// Reads an identifier back; `None` for keys that are not identifiers.
    pub(crate) fn from_identifier(id: &str) -> Option<ManagerId> {
        let e = ManagedFieldsEntry::from_value(&serde_json::from_str::<Value>(id).ok()?).ok()?;
        Some(ManagerId {
            update_api_version: (e.operation != APPLY && !e.api_version.is_empty()).then_some(e.api_version),
            manager: e.manager,
            operation: e.operation,
            subresource: e.subresource,
        })
    }

    fn of_entry(e: &ManagedFieldsEntry) -> ManagerId {
        ManagerId {
            manager: e.manager.clone(),
            operation: e.operation.clone(),
            update_api_version: (e.operation != APPLY).then(|| e.api_version.clone()),
            subresource: e.subresource.clone(),
        }
    }
}

/// The fields one owner owns, in the apiVersion they are written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VersionedSet {
    pub set: FieldSet,
    pub api_version: String,
    pub applied: bool,
}

/// Owners by identifier, with the time each last changed something.
#[derive(Clone, Debug, Default)]
pub(crate) struct Managed {
    pub fields: BTreeMap<String, VersionedSet>,
    pub times: BTreeMap<String, Option<String>>,
}

/// Decodes `managedFields` as kube-apiserver does (`DecodeManagedFields`).
pub(crate) fn decode(entries: &ManagedFields) -> Result<Managed, ManagedFieldsError> {
    let mut out = Managed::default();
    for (i, e) in entries.0.iter().enumerate() {
        if e.operation != APPLY && e.operation != UPDATE {
            return Err(ManagedFieldsError("operation must be `Apply` or `Update`".into()));
        }
        if e.api_version.is_empty() {
            return Err(ManagedFieldsError("apiVersion must not be empty".into()));
        }
        match e.fields_type.as_str() {
            "FieldsV1" => {}
            "" => return Err(ManagedFieldsError(format!("missing fieldsType in managed fields entry {i}"))),
            other => {
                return Err(ManagedFieldsError(format!("invalid fieldsType \"{other}\" in managed fields entry {i}")));
            }
        }
        let set = match &e.fields_v1 {
            None => FieldSet::new(),
            Some(v) => FieldSet::from_value(v).map_err(|err| {
                ManagedFieldsError(format!("error decoding versioned set for {}: error decoding set: {err}", e.manager))
            })?,
        };
        let id = ManagerId::of_entry(e).identifier();
        out.fields.insert(
            id.clone(),
            VersionedSet { set, api_version: e.api_version.clone(), applied: e.operation == APPLY },
        );
        out.times.insert(id, e.time.clone());
    }
    Ok(out)
}

/// Encodes owners back into sorted entries (`encodeManagedFields`).
pub(crate) fn encode(managed: &Managed) -> ManagedFields {
    let mut entries: Vec<ManagedFieldsEntry> = managed
        .fields
        .iter()
        .map(|(id, vs)| {
            let who = ManagerId::from_identifier(id);
            ManagedFieldsEntry {
                manager: who.as_ref().map_or_else(|| id.clone(), |w| w.manager.clone()),
                operation: if vs.applied {
                    APPLY.into()
                } else {
                    who.as_ref().map_or_else(|| UPDATE.into(), |w| w.operation.clone())
                },
                api_version: vs.api_version.clone(),
                time: managed.times.get(id).cloned().flatten(),
                fields_type: "FieldsV1".into(),
                fields_v1: Some(vs.set.to_value()),
                subresource: who.map(|w| w.subresource).unwrap_or_default(),
            }
        })
        .collect();
    entries.sort_by(|p, q| {
        p.operation
            .cmp(&q.operation)
            .then_with(|| seconds(p.time.as_deref()).cmp(&seconds(q.time.as_deref())))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    ManagedFields(entries)
}

/// Seconds since the epoch of an RFC 3339 time (0 when absent or unreadable, as a nil time
/// sorts in kube), the fraction dropped (rounded down, as the seconds of Go's `time.Time`).
/// The times reaching here had their shape checked as `metav1.Time` when the object was decoded
/// (`versa_schema::objectmeta::is_rfc3339`), so jiff's parser (which also takes a few forms
/// Go's refuses) reads them as Go reads them.
pub(crate) fn seconds(t: Option<&str>) -> i64 {
    t.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, |t| t.as_second() - i64::from(t.subsec_nanosecond() < 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_as_kube_builds_them() {
        let apply = ManagerId {
            manager: "kubectl".into(),
            operation: APPLY.into(),
            update_api_version: None,
            subresource: String::new(),
        };
        assert_eq!(apply.identifier(), r#"{"manager":"kubectl","operation":"Apply"}"#);
        let update = ManagerId {
            manager: "ctl<x>".into(),
            operation: UPDATE.into(),
            update_api_version: Some("example.com/v1".into()),
            subresource: "status".into(),
        };
        assert_eq!(
            update.identifier(),
            r#"{"manager":"ctl\u003cx\u003e","operation":"Update","apiVersion":"example.com/v1","subresource":"status"}"#
        );
        assert_eq!(ManagerId::from_identifier(&update.identifier()), Some(update));
    }

    #[test]
    fn rfc3339_seconds() {
        assert_eq!(seconds(Some("1970-01-01T00:00:00Z")), 0);
        assert_eq!(seconds(Some("2024-03-01T12:30:05Z")), 1_709_296_205);
        assert_eq!(seconds(Some("2024-03-01T14:30:05.5+02:00")), 1_709_296_205);
        assert_eq!(seconds(Some("2024-02-29T23:59:59z")), 1_709_251_199);
        assert_eq!(seconds(Some("2024-12-31T23:30:00-01:00")), 1_735_691_400, "into the next year");
        assert_eq!(seconds(Some("1969-12-31T23:59:59Z")), -1);
        assert_eq!(seconds(Some("1969-12-31T23:59:59.5Z")), -1, "rounded down, not toward zero");
        assert_eq!(seconds(Some("0001-01-01T00:00:00Z")), -62_135_596_800);
        assert_eq!(seconds(Some("garbage")), 0);
        assert_eq!(seconds(Some("2023-02-29T00:00:00Z")), 0, "no such day");
        assert_eq!(seconds(None), 0);
    }
}
