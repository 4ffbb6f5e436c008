//! `x-kubernetes-list-type: set|map` uniqueness (listtype/validation.go).
//!
//! A `set` list may not hold the same item twice; a `map` list may not hold two items with the
//! same values for the `x-kubernetes-list-map-keys`, and every item must be an object (or
//! `null`). The walk follows the schema everywhere (`properties`, `additionalProperties`,
//! `items`); the junctors carry no list types in a structural schema and are not visited.
//!
//! Equality is Go's: scalars compare by type and value (`1` and `1.0` differ, as an `int64` and
//! a `float64` do), compound items (objects, arrays) by their JSON encoding (where `1` and `1.0`
//! are the same text). Only the second occurrence of a repeated item is reported, at its index.
//! Sibling keys are visited in sorted order (Go iterates a map and has no order).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::field::{Error, ErrorList, Path, go_json};
use crate::structural::Structural;

/// Reports duplicate items of set lists and duplicate keys of map lists anywhere in `value`.
pub fn validate_list_set_and_map(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    walk(schema, value, &At::Base(path), &mut errs);
    ErrorList(errs)
}

/// Where a value sits: a chain of stack frames, rendered into a [`Path`] only for an error, so
/// that a clean object costs no allocation per node.
enum At<'a> {
    Base(&'a Path),
    Child(&'a At<'a>, &'a str),
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn path(&self) -> Path {
        match self {
            At::Base(p) => (*p).clone(),
            At::Child(parent, name) => parent.path().child(name),
            At::Key(parent, key) => parent.path().key(key),
            At::Index(parent, i) => parent.path().index(*i),
        }
    }
}

fn walk(s: &Structural, v: &Value, at: &At<'_>, errs: &mut Vec<Error>) {
    // Nothing below declares a set or map list: nothing to check in this subtree.
    if !s.below.list_types {
        return;
    }
    match v {
        Value::Array(items) => walk_array(s, items, at, errs),
        Value::Object(map) => walk_object(s, map, at, errs),
        _ => {}
    }
}

fn walk_object(s: &Structural, map: &Map<String, Value>, at: &At<'_>, errs: &mut Vec<Error>) {
    if let Some(ap) = s.additional_properties.as_ref().and_then(|ap| ap.schema()) {
        for (k, v) in map {
            if needs_walk(v) {
                walk(ap, v, &At::Key(at, k), errs);
            }
        }
    }
    for (k, v) in map {
        if let Some(sub) = s.properties.get(k)
            && needs_walk(v)
        {
            walk(sub, v, &At::Child(at, k), errs);
        }
    }
}

fn walk_array(s: &Structural, items: &[Value], at: &At<'_>, errs: &mut Vec<Error>) {
    match s.list_type.as_deref() {
        Some("set") => {
            for i in non_unique(items.iter().map(Some)) {
                errs.push(Error::duplicate(at.path().index(i), &items[i]));
            }
        }
        Some("map") => validate_map_list(s, items, &at.path_lazy(), errs),
        _ => {}
    }
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            if needs_walk(item) {
                walk(item_schema, item, &At::Index(at, i), errs);
            }
        }
    }
}

/// A path rendered at most once, on the first error of a list.
struct LazyAt<'a> {
    at: &'a At<'a>,
    rendered: std::cell::OnceCell<Path>,
}

impl LazyAt<'_> {
    fn get(&self) -> &Path {
        self.rendered.get_or_init(|| self.at.path())
    }
}

impl<'a> At<'a> {
    fn path_lazy(&'a self) -> LazyAt<'a> {
        LazyAt { at: self, rendered: std::cell::OnceCell::new() }
    }
}

fn needs_walk(v: &Value) -> bool {
    matches!(v, Value::Array(_) | Value::Object(_))
}

fn validate_map_list(s: &Structural, items: &[Value], at: &LazyAt<'_>, errs: &mut Vec<Error>) {
    // Only objects and nulls; the first offender is the only error for this list.
    if let Some((i, item)) = items.iter().enumerate().find(|(_, x)| !matches!(x, Value::Object(_) | Value::Null)) {
        errs.push(Error::invalid(at.get().index(i), item, "must be an object for an array of list-type map"));
        return;
    }
    if items.len() <= 1 {
        return;
    }

    if let [key_field] = s.list_map_keys.as_slice() {
        // One key: compare the key values themselves; a null item or a missing key is the
        // "unspecified" key, which equals only itself and is reported as `{}`.
        let keys: Vec<Option<&Value>> = items
            .iter()
            .map(|x| match x {
                Value::Object(m) => m.get(key_field),
                _ => None,
            })
            .collect();
        for i in non_unique(keys.iter().copied()) {
            let mut dup = Map::new();
            if let Some(k) = keys[i] {
                dup.insert(key_field.clone(), k.clone());
            }
            errs.push(Error::duplicate(at.get().index(i), Value::Object(dup)));
        }
        return;
    }

    // Several keys: compare the objects made of the key fields each item has.
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Value::Object(m) = x {
                for f in &s.list_map_keys {
                    if let Some(k) = m.get(f) {
                        key.insert(f.clone(), k.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in non_unique(keys.iter().map(Some)) {
        errs.push(Error::duplicate(at.get().index(i), &keys[i]));
    }
}

/// The identity of a set item under Go's rules. `None` stands for the unspecified key of a
/// map list.
#[derive(PartialEq, Eq, Hash)]
enum ItemKey<'v> {
    Unspecified,
    Null,
    Bool(bool),
    Int(i64),
    /// Bits of the float, with -0 folded into 0 as Go's `==` folds them.
    Float(u64),
    Str(&'v str),
    Compound(String),
}

fn item_key(v: Option<&Value>) -> ItemKey<'_> {
    match v {
        None => ItemKey::Unspecified,
        Some(Value::Null) => ItemKey::Null,
        Some(Value::Bool(b)) => ItemKey::Bool(*b),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => ItemKey::Int(i),
            None => ItemKey::Float((n.as_f64().unwrap_or(0.0) + 0.0).to_bits()),
        },
        Some(Value::String(s)) => ItemKey::Str(s),
        Some(c @ (Value::Array(_) | Value::Object(_))) => ItemKey::Compound(go_json(c)),
    }
}

/// Indices of the second occurrence of every repeated item, in order.
fn non_unique<'v>(items: impl ExactSizeIterator<Item = Option<&'v Value>>) -> Vec<usize> {
    let n = items.len();
    let mut out = Vec::new();
    if n <= 1 {
        return out;
    }
    let mut seen: HashMap<ItemKey<'v>, usize> = HashMap::with_capacity(n);
    for (i, item) in items.enumerate() {
        let times = seen.entry(item_key(item)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_and_map_duplicates() {
        let s = Structural::from_json(&json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                          "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
            }
        }))
        .unwrap();
        let errs = validate_list_set_and_map(
            &s,
            &json!({"tags": ["a", "b", "a", "a"], "ports": [{"k": "v"}, {"k": "v"}, "x"]}),
            &Path::none(),
        );
        let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            got,
            vec![
                r#"ports[2]: Invalid value: "x": must be an object for an array of list-type map"#,
                r#"tags[2]: Duplicate value: "a""#,
            ]
        );
        let errs = validate_list_set_and_map(&s, &json!({"ports": [{"k": "v"}, {"k": "v"}]}), &Path::new("spec"));
        assert_eq!(errs.aggregate(), r#"spec.ports[1]: Duplicate value: {"k":"v"}"#);
    }
}
