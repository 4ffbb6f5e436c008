//! Generated schemas and objects for the differential tests: random structural schemas that
//! draw on every keyword the walks treat specially, objects mostly of their shape, and
//! variations of objects (unknown keys, `null`s, duplicated items, retyped scalars, broken type
//! and object metadata). Deterministic: a seeded xorshift.

#![allow(clippy::unwrap_used, reason = "test code")]

use serde_json::{Map, Value, json};
use versa_schema::pipeline::ResourceKind;

/// A small deterministic generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
}

pub const KEYS: &[&str] = &["a", "spec", "name", "metadata", "kind", "apiVersion", "status", "unknown", "items", "k"];

pub fn scalar(r: &mut Rng) -> Value {
    match r.below(8) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(r.below(5) as i64 - 1),
        3 => json!(1.5),
        4 => json!(""),
        5 => json!("Bad_Name"),
        6 => json!({}),
        _ => json!("a"),
    }
}

/// A variation of `v`: keys added, removed or nulled, items duplicated, scalars retyped.
pub fn vary(r: &mut Rng, v: &mut Value, depth: usize) {
    match v {
        Value::Object(m) => {
            if r.one_in(4) {
                let key = KEYS[r.below(KEYS.len())].to_owned();
                m.insert(key, scalar(r));
            }
            if r.one_in(6) && !m.is_empty() {
                let k = m.keys().nth(r.below(m.len())).cloned().unwrap();
                if r.one_in(2) {
                    m.remove(&k);
                } else {
                    m.insert(k, Value::Null);
                }
            }
            if depth > 0 {
                for c in m.values_mut() {
                    if r.one_in(2) {
                        vary(r, c, depth - 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            if r.one_in(4) && !items.is_empty() {
                let c = items[r.below(items.len())].clone();
                items.push(c);
            }
            if depth > 0 {
                for c in items.iter_mut() {
                    if r.one_in(2) {
                        vary(r, c, depth - 1);
                    }
                }
            }
        }
        _ => {
            if r.one_in(6) {
                *v = scalar(r);
            }
        }
    }
}

/// Gives `obj` the type and object metadata of a `kind` resource, sometimes broken.
pub fn as_resource(r: &mut Rng, obj: &mut Value, kind: &ResourceKind<'_>) {
    let Value::Object(m) = obj else { return };
    m.insert("apiVersion".into(), json!(format!("{}/{}", kind.group, kind.version)));
    m.insert("kind".into(), json!(kind.kind));
    if r.one_in(3) {
        // Keep what the object has, for those that specify their metadata.
        m.remove("metadata");
    }
    let mut meta = Map::new();
    meta.insert("name".into(), json!("n"));
    meta.insert("namespace".into(), json!("default"));
    match r.below(16) {
        0 => {
            meta.insert("bogus".into(), json!(1));
        }
        1 => {
            meta.insert("labels".into(), json!({"app": 1}));
        }
        2 => {
            meta.insert("name".into(), json!("Bad_Name"));
        }
        3 => {
            meta.insert("labels".into(), json!({}));
        }
        4 => {
            m.insert("kind".into(), json!(7));
        }
        _ => {}
    }
    m.entry("metadata").or_insert(Value::Object(meta));
}

/// A random structural schema node `depth` levels deep, drawing on every keyword the walk
/// treats specially.
pub fn schema(r: &mut Rng, depth: usize) -> Value {
    let mut s = Map::new();
    let pick = if depth == 0 { 4 + r.below(4) } else { r.below(12) };
    match pick {
        0..=2 => {
            s.insert("type".into(), json!("object"));
            let mut props = Map::new();
            for _ in 0..1 + r.below(3) {
                let key = KEYS[r.below(KEYS.len())].to_owned();
                props.insert(key, schema(r, depth - 1));
            }
            s.insert("properties".into(), Value::Object(props));
            if r.one_in(5) {
                s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
            if r.one_in(6) {
                s.insert("x-kubernetes-embedded-resource".into(), json!(true));
            }
            if r.one_in(5) {
                s.insert("required".into(), json!([KEYS[r.below(KEYS.len())]]));
            }
            if r.one_in(3) {
                // A property count violation hides everything below, `required` included.
                s.insert(if r.one_in(2) { "minProperties" } else { "maxProperties" }.into(), json!(r.below(3)));
                s.insert("required".into(), json!(["zz"]));
            }
        }
        3 => {
            s.insert("type".into(), json!("object"));
            let ap = if r.one_in(4) { json!(r.one_in(2)) } else { schema(r, depth - 1) };
            s.insert("additionalProperties".into(), ap);
        }
        4 => {
            s.insert("type".into(), json!("string"));
            match r.below(4) {
                0 => {
                    s.insert("pattern".into(), json!("^[a-z]+$"));
                }
                1 => {
                    s.insert("enum".into(), json!(["a", "b"]));
                }
                2 => {
                    s.insert("format".into(), json!("date-time"));
                }
                _ => {
                    s.insert("maxLength".into(), json!(1));
                }
            }
        }
        5 => {
            s.insert("type".into(), json!("integer"));
            s.insert("minimum".into(), json!(0));
        }
        6 => {
            s.insert("x-kubernetes-int-or-string".into(), json!(true));
        }
        7 => {
            s.insert("type".into(), json!("boolean"));
        }
        8..=9 => {
            s.insert("type".into(), json!("array"));
            let mut item = schema(r, depth - 1);
            match r.below(3) {
                0 => {
                    s.insert("x-kubernetes-list-type".into(), json!("set"));
                }
                1 => {
                    item =
                        json!({"type": "object", "properties": {"k": {"type": "string"}, "v": schema(r, depth - 1)}});
                    s.insert("x-kubernetes-list-type".into(), json!("map"));
                    s.insert("x-kubernetes-list-map-keys".into(), json!(["k"]));
                }
                _ => {}
            }
            s.insert("items".into(), item);
        }
        10 => {
            s.insert("type".into(), json!("object"));
            s.insert("x-kubernetes-embedded-resource".into(), json!(true));
            s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        }
        _ => {
            s.insert("anyOf".into(), json!([{"type": "integer"}, {"minLength": 2}]));
            s.insert("x-kubernetes-int-or-string".into(), json!(true));
        }
    }
    if r.one_in(6) {
        s.insert("nullable".into(), json!(true));
    }
    if r.one_in(5) {
        let d = object_for(r, &Value::Object(s.clone()), 2);
        s.insert("default".into(), d);
    }
    Value::Object(s)
}

/// A value for schema `s`, mostly of the right shape.
pub fn object_for(r: &mut Rng, s: &Value, depth: usize) -> Value {
    if depth == 0 || r.one_in(10) {
        return scalar(r);
    }
    if s.get("x-kubernetes-int-or-string").is_some() {
        return if r.one_in(2) { json!(3) } else { json!("ab") };
    }
    match s["type"].as_str() {
        Some("object") => {
            let mut m = Map::new();
            if let Some(Value::Object(props)) = s.get("properties") {
                for (k, p) in props {
                    if !r.one_in(4) {
                        m.insert(k.clone(), object_for(r, p, depth - 1));
                    }
                }
            }
            if let Some(ap) = s.get("additionalProperties") {
                let key = KEYS[r.below(KEYS.len())].to_owned();
                m.insert(key, object_for(r, ap, depth - 1));
            }
            if s.get("x-kubernetes-embedded-resource").is_some() && !r.one_in(4) {
                m.insert("apiVersion".into(), json!("v1"));
                m.insert("kind".into(), json!(if r.one_in(5) { "Bad_Kind" } else { "Pod" }));
                m.insert("metadata".into(), json!({"name": "p", "bogus": 1}));
            }
            Value::Object(m)
        }
        Some("array") => {
            let item = s.get("items").cloned().unwrap_or(Value::Null);
            let mut items: Vec<Value> = (0..r.below(4)).map(|_| object_for(r, &item, depth - 1)).collect();
            if r.one_in(3) && !items.is_empty() {
                items.push(items[0].clone());
            }
            Value::Array(items)
        }
        Some("string") => json!(["a", "b", "ab", "2026-11-21T10:00:00Z", "A"][r.below(5)]),
        Some("integer") => json!(r.below(4) as i64 - 1),
        Some("boolean") => json!(r.one_in(2)),
        _ => scalar(r),
    }
}

/// A resource's root schema: an object with one to three properties named from `keys`, each a
/// random schema one to four levels deep.
pub fn root_schema(r: &mut Rng, keys: &[&str]) -> Value {
    let mut props = Map::new();
    for _ in 0..1 + r.below(3) {
        let key = keys[r.below(keys.len())].to_owned();
        let depth = 1 + r.below(4);
        props.insert(key, schema(r, depth));
    }
    json!({"type": "object", "properties": props})
}

/// An object for the root schema `root` (never a scalar).
pub fn root_object(r: &mut Rng, root: &Value) -> Value {
    let mut object = Value::Null;
    while !object.is_object() {
        object = object_for(r, root, 7);
    }
    object
}
