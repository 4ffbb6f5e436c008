//! Which fields of a JSON document its typed form drops: the keys of the document (with a value
//! other than null) that serializing the typed value does not write, as dotted paths
//! (`spec.versions[0].servd`) — what `fieldValidation` reports as unknown fields of a definition
//! (kube's strict decoding of CustomResourceDefinitions).
//!
//! It is the difference between the document and `serde_json::to_value` of the typed value,
//! found without building that value: a [`serde::Serializer`] walks the typed value beside the
//! document and only notes which keys it writes where (a definition is mostly schema — thousands
//! of nodes — and its typed form was written out as a whole tree just to be compared). Objects are
//! compared key by key, arrays element by element when both have the same length, values of
//! other shapes not at all; enum variants are objects of one key, as `serde_json` writes them
//! (the content of tuple and struct variants, which no type of a definition has, is not looked
//! into). The walk goes only where the document has objects and arrays, and builds a path only
//! for a key it reports. The paths come in the document's key order, depth first.

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::{Error, Map, Value};

/// The keys of `input` that `typed` does not write (see the module documentation); keys of the
/// root named in `skip_at_root` are not looked at.
pub fn dropped_fields<T: Serialize + ?Sized>(typed: &T, input: &Value, skip_at_root: &[&str]) -> Vec<String> {
    // The walker itself never fails; a typed value whose serialization fails has nothing to say.
    typed.serialize(Walk { input, at: At::Root, skip_at_root }).unwrap_or_default()
}

/// Where a node is: built as the walk goes down, written out only for a dropped key.
#[derive(Clone, Copy)]
enum At<'p> {
    Root,
    Key(&'p At<'p>, &'p str),
    Index(&'p At<'p>, usize),
}

impl At<'_> {
    fn write(&self, out: &mut String) {
        match self {
            At::Root => {}
            At::Key(parent, key) => {
                parent.write(out);
                if !matches!(parent, At::Root) {
                    out.push('.');
                }
                out.push_str(key);
            }
            At::Index(parent, n) => {
                parent.write(out);
                out.push_str(&format!("[{n}]"));
            }
        }
    }

    /// The path of `key` here.
    fn path_of(&self, key: &str) -> String {
        let mut out = String::new();
        At::Key(self, key).write(&mut out);
        out
    }
}

/// One node: the typed value's serialization meets `input` at `at`. What a walk returns is what
/// was dropped below it. Only objects and arrays of the document are walked into: nothing below
/// anything else can be dropped.
struct Walk<'a, 'p> {
    input: &'a Value,
    at: At<'p>,
    skip_at_root: &'a [&'a str],
}

/// Whether a value of the document can hold a dropped key.
fn has_keys_below(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_))
}

impl<'a, 'p> Walk<'a, 'p> {
    /// The object the typed value writes here: its keys are compared with the document's.
    fn object(self) -> Object<'a, 'p> {
        Object {
            input: self.input.as_object(),
            at: self.at,
            skip_at_root: if matches!(self.at, At::Root) { self.skip_at_root } else { &[] },
            written: Vec::new(),
            below: Vec::new(),
            key: String::new(),
        }
    }

    /// The array the typed value writes here, of `len` elements: compared element by element with
    /// the document's when it has as many.
    fn array(self, len: Option<usize>) -> Array<'a, 'p> {
        let input = self.input.as_array().filter(|a| Some(a.len()) == len);
        Array { input, at: self.at, next: 0, dropped: Vec::new() }
    }
}

/// An object being written: the document's keys it wrote so far (borrowed from the document),
/// and what was dropped below those where anything was.
struct Object<'a, 'p> {
    input: Option<&'a Map<String, Value>>,
    at: At<'p>,
    skip_at_root: &'a [&'a str],
    written: Vec<&'a str>,
    below: Vec<(&'a str, Vec<String>)>,
    /// The key of a map entry whose value comes next.
    key: String,
}

impl<'a> Object<'a, '_> {
    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        let Some((key, input)) = self.input.and_then(|m| m.get_key_value(key)) else { return Ok(()) };
        let key = key.as_str();
        self.written.push(key);
        if self.skip_at_root.contains(&key) || !has_keys_below(input) {
            return Ok(());
        }
        let below = value.serialize(Walk { input, at: At::Key(&self.at, key), skip_at_root: &[] })?;
        if !below.is_empty() {
            self.below.push((key, below));
        }
        Ok(())
    }

    /// What was dropped here, in the document's key order: below each written key what its walk
    /// found, and each key not written (with a value other than null).
    fn finish(self) -> Vec<String> {
        let Some(input) = self.input else { return Vec::new() };
        // Keys are written once each: as many written as the document has means none dropped.
        if self.written.len() == input.len() && self.below.is_empty() {
            return Vec::new();
        }
        // Sorted, so that an object of many keys costs no more than sorting them.
        let (mut written, mut below) = (self.written, self.below);
        written.sort_unstable();
        below.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut dropped = Vec::new();
        for (k, v) in input {
            let k = k.as_str();
            if self.skip_at_root.contains(&k) {
                continue;
            }
            if let Ok(i) = below.binary_search_by(|(w, _)| (*w).cmp(k))
                && let Some((_, found)) = below.get_mut(i)
            {
                dropped.append(found);
            } else if !v.is_null() && written.binary_search(&k).is_err() {
                dropped.push(self.at.path_of(k));
            }
        }
        dropped
    }
}

/// An array being written: element `next` comes next; what was dropped below those before.
struct Array<'a, 'p> {
    input: Option<&'a Vec<Value>>,
    at: At<'p>,
    next: usize,
    dropped: Vec<String>,
}

impl Array<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let n = self.next;
        self.next += 1;
        let Some(input) = self.input.and_then(|a| a.get(n)).filter(|v| has_keys_below(v)) else { return Ok(()) };
        let below = value.serialize(Walk { input, at: At::Index(&self.at, n), skip_at_root: &[] })?;
        self.dropped.extend(below);
        Ok(())
    }
}

/// A tuple or struct variant, written as `{"<variant>": …}`: the keys beside the variant are
/// compared, its content is not looked into (no type of a definition has such variants).
struct Variant<'a, 'p> {
    outer: Object<'a, 'p>,
}

impl<'a, 'p> Variant<'a, 'p> {
    fn new(walk: Walk<'a, 'p>, variant: &'static str) -> Self {
        let mut outer = walk.object();
        if let Some((key, _)) = outer.input.and_then(|m| m.get_key_value(variant)) {
            outer.written.push(key.as_str());
        }
        Variant { outer }
    }
}

/// Only leaves (nothing below them to compare).
fn leaf() -> Result<Vec<String>, Error> {
    Ok(Vec::new())
}

impl<'a, 'p> ser::Serializer for Walk<'a, 'p> {
    type Ok = Vec<String>;
    type Error = Error;
    type SerializeSeq = Array<'a, 'p>;
    type SerializeTuple = Array<'a, 'p>;
    type SerializeTupleStruct = Array<'a, 'p>;
    type SerializeTupleVariant = Variant<'a, 'p>;
    type SerializeMap = Object<'a, 'p>;
    type SerializeStruct = Object<'a, 'p>;
    type SerializeStructVariant = Variant<'a, 'p>;

    fn serialize_bool(self, _: bool) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_i8(self, _: i8) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_i16(self, _: i16) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_i32(self, _: i32) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_i64(self, _: i64) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_u8(self, _: u8) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_u16(self, _: u16) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_u32(self, _: u32) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_u64(self, _: u64) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_f32(self, _: f32) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_f64(self, _: f64) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_char(self, _: char) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_str(self, _: &str) -> Result<Vec<String>, Error> {
        leaf()
    }
    /// `serde_json` writes bytes as an array of numbers: nothing below to compare.
    fn serialize_bytes(self, _: &[u8]) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_none(self) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Vec<String>, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<Vec<String>, Error> {
        leaf()
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<Vec<String>, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Vec<String>, Error> {
        let mut object = self.object();
        object.entry(variant, value)?;
        Ok(object.finish())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Array<'a, 'p>, Error> {
        Ok(self.array(len))
    }
    fn serialize_tuple(self, len: usize) -> Result<Array<'a, 'p>, Error> {
        Ok(self.array(Some(len)))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Array<'a, 'p>, Error> {
        Ok(self.array(Some(len)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant<'a, 'p>, Error> {
        Ok(Variant::new(self, variant))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object<'a, 'p>, Error> {
        Ok(self.object())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Object<'a, 'p>, Error> {
        Ok(self.object())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant<'a, 'p>, Error> {
        Ok(Variant::new(self, variant))
    }
}

impl ser::SerializeSeq for Array<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.dropped)
    }
}

impl ser::SerializeTuple for Array<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.dropped)
    }
}

impl ser::SerializeTupleStruct for Array<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.dropped)
    }
}

impl ser::SerializeTupleVariant for Variant<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &T) -> Result<(), Error> {
        Ok(())
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.outer.finish())
    }
}

impl ser::SerializeMap for Object<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = key.serialize(KeyText)?;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = std::mem::take(&mut self.key);
        self.entry(&key, value)
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeStruct for Object<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.entry(key, value)
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeStructVariant for Variant<'_, '_> {
    type Ok = Vec<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, _: &T) -> Result<(), Error> {
        Ok(())
    }
    fn end(self) -> Result<Vec<String>, Error> {
        Ok(self.outer.finish())
    }
}

/// A map key as `serde_json` writes it: strings as they are, numbers and characters as text;
/// other keys are errors there as here.
struct KeyText;

fn not_a_key() -> Error {
    ser::Error::custom("key must be a string")
}

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<String, Error> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<String, Error> {
        value.serialize(self)
    }
    fn serialize_bool(self, _: bool) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_f32(self, _: f32) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_f64(self, _: f64) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_none(self) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Error> {
        Err(not_a_key())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_key())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_key())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_key())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_key())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_key())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(not_a_key())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_key())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    /// The walk finds what comparing the document with `serde_json::to_value` of the typed value
    /// finds, key by key.
    fn by_value(input: &Value, output: &Value, path: &str, out: &mut Vec<String>) {
        match (input, output) {
            (Value::Object(i), Value::Object(o)) => {
                for (k, v) in i {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    match o.get(k) {
                        Some(ov) => by_value(v, ov, &p, out),
                        None if !v.is_null() => out.push(p),
                        None => {}
                    }
                }
            }
            (Value::Array(i), Value::Array(o)) if i.len() == o.len() => {
                for (n, (iv, ov)) in i.iter().zip(o).enumerate() {
                    by_value(iv, ov, &format!("{path}[{n}]"), out);
                }
            }
            _ => {}
        }
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Typed {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        count: Option<i64>,
        items: Vec<Item>,
        labels: std::collections::BTreeMap<String, Item>,
        free: Value,
        choice: Choice,
        #[serde(skip_serializing_if = "Option::is_none")]
        shape: Option<Shape>,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Item {
        a: Option<String>,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(untagged)]
    enum Choice {
        Flag(bool),
        Item(Item),
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    enum Shape {
        Named(Item),
    }

    #[test]
    fn finds_what_the_typed_value_drops() {
        let cases = [
            (json!({"name": "x", "items": [], "labels": {}, "free": null, "choice": true}), vec![]),
            (
                json!({"name": "x", "zz": 1, "aa": {"b": 1}, "nothing": null, "items": [{"a": "1", "b": 2}, {"c": [1]}],
                       "labels": {"k": {"a": null, "d": "x"}, "j": {"z": 1}}, "free": {"any": {"thing": 1}},
                       "choice": {"a": "y", "e": 1}, "count": 3, "apiVersion": "v9", "skipped": {"q": 1}}),
                vec!["aa", "choice.e", "items[0].b", "items[1].c", "labels.j.z", "labels.k.d", "zz"],
            ),
            (
                json!({"name": "x", "items": [], "labels": {}, "free": 1, "choice": false,
                       "shape": {"Named": {"y": 1}}}),
                vec!["shape.Named.y"],
            ),
            (
                json!({"name": "x", "items": [{"q": 1}], "labels": {}, "free": [{"q": 1}], "choice": true}),
                vec!["items[0].q"],
            ),
        ];
        for (input, want) in cases {
            let typed: Typed = serde_json::from_value(input.clone()).unwrap();
            // By value, the keys skipped at the root are made to compare equal.
            let mut expected = Vec::new();
            let mut doc = serde_json::to_value(&typed).unwrap();
            doc.as_object_mut().unwrap().insert("skipped".into(), input.get("skipped").cloned().unwrap_or(Value::Null));
            doc.as_object_mut().unwrap().insert("apiVersion".into(), Value::Null);
            by_value(&input, &doc, "", &mut expected);
            let got = dropped_fields(&typed, &input, &["apiVersion", "skipped"]);
            assert_eq!(got, want, "{input}");
            assert_eq!(got, expected, "the same as by value: {input}");
        }
    }
}
