//! The `FieldsV1` encoding of a [`FieldSet`], both ways, byte for byte as kube-apiserver writes
//! it in `metadata.managedFields[].fieldsV1`.
//!
//! A set is a JSON object whose keys are path elements — `f:<name>`, `k:<JSON object of the key
//! fields>`, `v:<JSON value>`, `i:<index>` — and whose values are the sets below them; `{}`
//! marks a member with nothing below, and `".": {}` marks a member that also has children.
//! Writing follows structured-merge-diff's `Set.ToJSON`: elements in [`PathElement`] order
//! (not byte order), embedded values in Go's JSON spelling, keys escaped as Go escapes them.
//! Reading follows `Set.FromJSON`: unknown element kinds are skipped, a key with neither
//! children nor `.` is a member. Hand-written because the bytes are compared by clients and by
//! the apiserver (an unchanged object must keep identical `managedFields`).
//!
//! serde_json's `Value` keeps object keys in byte order, so [`FieldSet::to_value`] has the same
//! content as [`FieldSet::to_json`] but not its key order; use the text where bytes matter.
//! Recursion follows the depth of the encoded set; serde_json refuses text nested deeper than
//! 128 levels, and values already inside an object are bounded by the server's decoder.

use serde_json::{Map, Value};

use crate::path::PathElement;
use crate::set::FieldSet;
use crate::value::{write_go_json, write_go_json_string};

/// A `fieldsV1` that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldsV1Error(pub String);

impl FieldSet {
    /// The `FieldsV1` text kube-apiserver writes for this set.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        emit(self, false, &mut out);
        out.push('}');
        out
    }

    /// The `FieldsV1` object as a JSON value (same content as [`FieldSet::to_json`]; key order
    /// is serde_json's).
    pub fn to_value(&self) -> Value {
        Value::Object(to_map(self, false))
    }

    /// Reads a `FieldsV1` text.
    pub fn from_json(text: &str) -> Result<FieldSet, FieldsV1Error> {
        let v: Value = serde_json::from_str(text).map_err(|e| FieldsV1Error(e.to_string()))?;
        FieldSet::from_value(&v)
    }

    /// Reads a `FieldsV1` object.
    pub fn from_value(v: &Value) -> Result<FieldSet, FieldsV1Error> {
        match v {
            Value::Object(m) => Ok(read(m)?.0.unwrap_or_default()),
            // An absent fieldsV1 is the empty set; kube decodes `null` the same way.
            Value::Null => Ok(FieldSet::new()),
            other => Err(FieldsV1Error(format!("fieldsV1 must be an object, got {other}"))),
        }
    }
}

/// The key string of one path element (`f:name`, `k:{"name":"x"}`, `v:"x"`, `i:0`).
pub fn path_element_key(pe: &PathElement) -> String {
    let mut s = String::new();
    match pe {
        PathElement::Field(name) => {
            s.push_str("f:");
            s.push_str(name);
        }
        PathElement::Key(fields) => {
            s.push_str("k:{");
            for (i, (name, v)) in fields.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                write_go_json_string(name, &mut s);
                s.push(':');
                write_go_json(v, &mut s);
            }
            s.push('}');
        }
        PathElement::Value(v) => {
            s.push_str("v:");
            write_go_json(v, &mut s);
        }
        PathElement::Index(i) => {
            s.push_str("i:");
            s.push_str(&i.to_string());
        }
    }
    s
}

/// Why a key is not a path element: unknown kinds are skipped, anything else is an error.
enum KeyError {
    UnknownKind,
    Invalid(String),
}

/// Parses one path-element key.
pub fn parse_path_element(key: &str) -> Result<PathElement, FieldsV1Error> {
    match parse_key(key) {
        Ok(pe) => Ok(pe),
        Err(KeyError::UnknownKind) => Err(FieldsV1Error("unknown path element type".into())),
        Err(KeyError::Invalid(e)) => Err(FieldsV1Error(e)),
    }
}

fn parse_key(key: &str) -> Result<PathElement, KeyError> {
    let b = key.as_bytes();
    if b.len() < 2 {
        return Err(KeyError::Invalid("key must be 2 characters long:".into()));
    }
    if b[1] != b':' {
        return Err(KeyError::Invalid(format!("missing colon: {key}")));
    }
    // The first two bytes are ASCII here, so byte 2 is a character boundary.
    let rest = key.get(2..).unwrap_or_default();
    match b[0] {
        b'f' => Ok(PathElement::Field(rest.to_string())),
        b'v' => serde_json::from_str::<Value>(rest)
            .map(PathElement::Value)
            .map_err(|e| KeyError::Invalid(format!("{key}: {e}"))),
        b'k' => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(m)) => Ok(PathElement::key(m.into_iter().collect())),
            Ok(_) => Err(KeyError::Invalid(format!("{key}: key must be a JSON object"))),
            Err(e) => Err(KeyError::Invalid(format!("{key}: {e}"))),
        },
        b'i' => rest.parse::<usize>().map(PathElement::Index).map_err(|e| KeyError::Invalid(format!("{key}: {e}"))),
        _ => Err(KeyError::UnknownKind),
    }
}

/// Reads one level: the set below it (if any key named an element) and whether the level is
/// itself a member (`"."`, or no children at all).
fn read(m: &Map<String, Value>) -> Result<(Option<FieldSet>, bool), FieldsV1Error> {
    let mut children: Option<FieldSet> = None;
    let mut is_member = false;
    for (key, v) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let pe = match parse_key(key) {
            Ok(pe) => pe,
            Err(KeyError::UnknownKind) => continue,
            Err(KeyError::Invalid(e)) => return Err(FieldsV1Error(format!("parsing key as path element: {e}"))),
        };
        let Value::Object(inner) = v else {
            return Err(FieldsV1Error(format!("{key}: expected an object, got {v}")));
        };
        let (grandchildren, child_is_member) = read(inner)?;
        if child_is_member {
            children.get_or_insert_with(FieldSet::new).members.insert(pe.clone());
        }
        if let Some(g) = grandchildren {
            children.get_or_insert_with(FieldSet::new).children.insert(pe, g);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

/// Writes the contents of `s` (without braces), merging members and children in element order.
fn emit(s: &FieldSet, include_self: bool, out: &mut String) {
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
    };
    if include_self && !(s.members.is_empty() && s.children.is_empty()) {
        sep(out);
        out.push_str(r#"".":{}"#);
    }
    let mut members = s.members.iter().peekable();
    let mut children = s.children.iter().peekable();
    loop {
        let (pe, child, is_member) = match (members.peek(), children.peek()) {
            (None, None) => break,
            (Some(m), None) => (*m, None, true),
            (None, Some((c, set))) => (*c, Some(*set), false),
            (Some(m), Some((c, set))) => match (*m).cmp(*c) {
                std::cmp::Ordering::Less => (*m, None, true),
                std::cmp::Ordering::Greater => (*c, Some(*set), false),
                std::cmp::Ordering::Equal => (*c, Some(*set), true),
            },
        };
        if is_member {
            members.next();
        }
        if child.is_some() {
            children.next();
        }
        sep(out);
        write_go_json_string(&path_element_key(pe), out);
        out.push_str(":{");
        if let Some(c) = child {
            emit(c, is_member, out);
        }
        out.push('}');
    }
}

fn to_map(s: &FieldSet, include_self: bool) -> Map<String, Value> {
    let mut out = Map::new();
    if include_self && !(s.members.is_empty() && s.children.is_empty()) {
        out.insert(".".into(), Value::Object(Map::new()));
    }
    for m in &s.members {
        let inner = match s.children.get(m) {
            Some(c) => to_map(c, true),
            None => Map::new(),
        };
        out.insert(path_element_key(m), Value::Object(inner));
    }
    for (pe, c) in &s.children {
        if !s.members.contains(pe) {
            out.insert(path_element_key(pe), Value::Object(to_map(c, false)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn round_trip_keeps_kube_bytes() {
        // Written by kube-apiserver 1.30 for a Deployment-like object (shortened).
        let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}},"k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}},"f:tags":{"v:\"a\"":{},"v:\"b\"":{}}}}"#;
        let s = FieldSet::from_json(text).unwrap();
        assert_eq!(s.to_json(), text);
        assert_eq!(FieldSet::from_value(&s.to_value()).unwrap(), s);
    }

    #[test]
    fn sorted_as_kube_sorts_not_as_bytes() {
        let mut s = FieldSet::new();
        s.insert(&[PathElement::field("l"), PathElement::Index(10)]);
        s.insert(&[PathElement::field("l"), PathElement::Index(2)]);
        s.insert(&[PathElement::field("n"), PathElement::Value(serde_json::json!(10))]);
        s.insert(&[PathElement::field("n"), PathElement::Value(serde_json::json!(9))]);
        assert_eq!(s.to_json(), r#"{"f:l":{"i:2":{},"i:10":{}},"f:n":{"v:9":{},"v:10":{}}}"#);
    }

    #[test]
    fn html_characters_escaped_as_go_does() {
        let mut s = FieldSet::new();
        s.insert(&[PathElement::field("a<b"), PathElement::key(vec![("k".into(), serde_json::json!("x&y"))])]);
        let text = s.to_json();
        assert_eq!(text, r#"{"f:a\u003cb":{"k:{\"k\":\"x\\u0026y\"}":{}}}"#);
        assert_eq!(FieldSet::from_json(&text).unwrap(), s);
    }

    #[test]
    fn unknown_kinds_skipped_bad_keys_rejected() {
        let s = FieldSet::from_json(r#"{"f:a":{"x:whatever":{}},"z:b":{}}"#).unwrap();
        assert_eq!(s.to_json(), r#"{"f:a":{}}"#);
        assert!(FieldSet::from_json(r#"{"fa":{}}"#).is_err());
        assert!(FieldSet::from_json(r#"{"k:[1]":{}}"#).is_err());
        assert!(FieldSet::from_json(r#"{"i:x":{}}"#).is_err());
        assert_eq!(FieldSet::from_json("{}").unwrap(), FieldSet::new());
    }
}
