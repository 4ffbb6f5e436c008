//! The encoder: a JSON value written as the protobuf message its table describes, with Go's
//! `proto.Marshal` rules (field-number order, proto3 defaults left out), and the document read
//! from its text one top-level entry at a time ([`Streamed`]).

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::messages::{Any, Bool, F64, Field, I64, Key, Kind, Message, Msg, OneOrMany, Oneof, Rep, Str};
use super::yaml::yaml;

pub(super) const VARINT: u64 = 0;
pub(super) const FIXED64: u64 = 1;
pub(super) const LEN: u64 = 2;

pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn tag(out: &mut Vec<u8>, number: u32, wire: u64) {
    varint(out, (u64::from(number) << 3) | wire);
}

pub(super) fn bytes(out: &mut Vec<u8>, number: u32, b: &[u8]) {
    tag(out, number, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A length-delimited field whose content `body` writes in place (the length is patched in
/// after; it moves the content only when longer than 127 bytes).
pub(super) fn nested(out: &mut Vec<u8>, number: u32, body: impl FnOnce(&mut Vec<u8>)) {
    tag(out, number, LEN);
    let at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(4);
        varint(&mut prefix, len as u64);
        out.splice(at..=at, prefix);
    }
}

/// The fields of `message` from the object `m`.
pub(super) fn message(out: &mut Vec<u8>, m: &Map<String, Value>, message: &Message) {
    for &Field(number, key, kind) in message.0 {
        match key {
            Key::Named(name) => {
                if let Some(v) = m.get(name) {
                    field(out, number, kind, v, false);
                }
            }
            _ => {
                for (k, v) in m.iter().filter(|(k, _)| key.matches(k)) {
                    named(out, number, k, kind, v);
                }
            }
        }
    }
}

/// A `Named*` pair: `name` (1) and `value` (2).
pub(super) fn named(out: &mut Vec<u8>, number: u32, name: &str, kind: Kind, v: &Value) {
    nested(out, number, |out| {
        if !name.is_empty() {
            bytes(out, 1, name.as_bytes());
        }
        field(out, 2, kind, v, true);
    });
}

/// Field `number` from `v`. `present`: written even when equal to its default (repeated
/// elements, oneof members).
pub(super) fn field(out: &mut Vec<u8>, number: u32, kind: Kind, v: &Value, present: bool) {
    match kind {
        Str => {
            let s = match v {
                Value::String(s) => Cow::Borrowed(s.as_str()),
                Value::Number(n) if !n.is_f64() => Cow::Owned(n.to_string()),
                _ => return,
            };
            if present || !s.is_empty() {
                bytes(out, number, s.as_bytes());
            }
        }
        Bool => {
            if let Value::Bool(b) = v
                && (present || *b)
            {
                tag(out, number, VARINT);
                out.push(u8::from(*b));
            }
        }
        F64 => {
            if let Some(x) = v.as_f64()
                && (present || x.to_bits() != 0)
            {
                tag(out, number, FIXED64);
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        I64 => {
            if let Some(i) = v.as_i64()
                && (present || i != 0)
            {
                tag(out, number, VARINT);
                varint(out, i as u64);
            }
        }
        Any => nested(out, number, |out| bytes(out, 2, yaml(v).as_bytes())),
        Msg(inner) => nested(out, number, |out| {
            if let Value::Object(m) = v {
                message(out, m, inner);
            }
        }),
        Rep(item) => {
            if let Value::Array(items) = v {
                for i in items {
                    field(out, number, *item, i, true);
                }
            }
        }
        OneOrMany(item) => nested(out, number, |out| match v {
            Value::Array(items) => items.iter().for_each(|i| field(out, 1, *item, i, true)),
            _ => field(out, 1, *item, v, true),
        }),
        Oneof(pick) => nested(out, number, |out| {
            if let Some((member, kind)) = pick(v) {
                field(out, member, kind, v, true);
            }
        }),
    }
}

/// A message read from the JSON text entry by entry: values of its nested-message fields are
/// themselves streamed while `depth` allows, every other value is parsed (as one `Value`),
/// encoded and dropped. The result is the message's content, in field-number order.
pub(super) struct Streamed {
    pub(super) message: &'static Message,
    pub(super) depth: u8,
}

impl<'de> DeserializeSeed<'de> for Streamed {
    type Value = Vec<u8>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Streamed {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<u8>, A::Error> {
        let fields = self.message.0;
        let mut parts: Vec<Vec<u8>> = vec![Vec::new(); fields.len()];
        while let Some(key) = map.next_key::<String>()? {
            let Some(i) = fields.iter().position(|f| f.1.matches(&key)) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let Field(number, from, kind) = fields[i];
            let out = &mut parts[i];
            match (from, kind) {
                (Key::Named(_), Msg(inner)) if self.depth > 0 => {
                    let content = map.next_value_seed(Streamed { message: inner, depth: self.depth - 1 })?;
                    bytes(out, number, &content);
                }
                (Key::Named(_), _) => field(out, number, kind, &map.next_value::<Value>()?, false),
                _ => named(out, number, &key, kind, &map.next_value::<Value>()?),
            }
        }
        Ok(parts.concat())
    }
}
