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

use std::cell::OnceCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::field::{At, Error, ErrorList, Path, go_json};
use crate::structural::Structural;

/// Reports duplicate items of set lists and duplicate keys of map lists anywhere in `value`.
pub fn validate_list_set_and_map(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    walk(schema, value, &At::ROOT, path, &mut errs);
    ErrorList(errs)
}

/// [`validate_list_set_and_map`] from `v`, found at `at` (below `base`) with schema `s`. Paths
/// are rendered only for errors, so a clean object costs no allocation per node.
pub(crate) fn walk(s: &Structural, v: &Value, at: &At<'_>, base: &Path, errs: &mut Vec<Error>) {
    // Nothing below declares a set or map list: nothing to check in this subtree.
    if !s.below.list_types {
        return;
    }
    match v {
        Value::Array(items) => walk_array(s, items, at, base, errs),
        Value::Object(map) => walk_object(s, map, at, base, errs),
        _ => {}
    }
}

fn walk_object(s: &Structural, map: &Map<String, Value>, at: &At<'_>, base: &Path, errs: &mut Vec<Error>) {
    if let Some(ap) = s.additional_properties.as_ref().and_then(|ap| ap.schema()) {
        for (k, v) in map {
            if needs_walk(v) {
                walk(ap, v, &at.extra(k), base, errs);
            }
        }
    }
    for (k, v) in map {
        if let Some(sub) = s.properties.get(k)
            && needs_walk(v)
        {
            walk(sub, v, &at.prop(k), base, errs);
        }
    }
}

fn walk_array(s: &Structural, items: &[Value], at: &At<'_>, base: &Path, errs: &mut Vec<Error>) {
    check_list(s, items, at, base, errs);
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            if needs_walk(item) {
                walk(item_schema, item, &at.index(i), base, errs);
            }
        }
    }
}

/// The check of one list itself, per its `x-kubernetes-list-type` (nothing for `atomic` or
/// none), without descending into its items.
pub(crate) fn check_list(s: &Structural, items: &[Value], at: &At<'_>, base: &Path, errs: &mut Vec<Error>) {
    let path = LazyPath { at, base, rendered: OnceCell::new() };
    match s.list_type.as_deref() {
        Some("set") => {
            for i in non_unique(items.len(), |i| items.get(i)) {
                errs.push(Error::duplicate(path.get().index(i), &items[i]));
            }
        }
        Some("map") => validate_map_list(s, items, &path, errs),
        _ => {}
    }
}

/// A path rendered at most once, on the first error of a list.
struct LazyPath<'a> {
    at: &'a At<'a>,
    base: &'a Path,
    rendered: OnceCell<Path>,
}

impl LazyPath<'_> {
    fn get(&self) -> &Path {
        self.rendered.get_or_init(|| self.at.field_path(self.base))
    }
}

fn needs_walk(v: &Value) -> bool {
    matches!(v, Value::Array(_) | Value::Object(_))
}

fn validate_map_list(s: &Structural, items: &[Value], at: &LazyPath<'_>, errs: &mut Vec<Error>) {
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
        let key = |i: usize| match items.get(i) {
            Some(Value::Object(m)) => m.get(key_field),
            _ => None,
        };
        for i in non_unique(items.len(), key) {
            let mut dup = Map::new();
            if let Some(k) = key(i) {
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
    for i in non_unique(keys.len(), |i| keys.get(i)) {
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
        Some(c @ (Value::Array(_) | Value::Object(_))) => ItemKey::Compound(go_json(c)),
        _ => scalar_key(v).unwrap_or(ItemKey::Unspecified),
    }
}

/// [`item_key`] of a scalar (or of the unspecified key), which needs no encoding; `None` for
/// an object or array.
fn scalar_key(v: Option<&Value>) -> Option<ItemKey<'_>> {
    Some(match v {
        None => ItemKey::Unspecified,
        Some(Value::Null) => ItemKey::Null,
        Some(Value::Bool(b)) => ItemKey::Bool(*b),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => ItemKey::Int(i),
            None => ItemKey::Float((n.as_f64().unwrap_or(0.0) + 0.0).to_bits()),
        },
        Some(Value::String(s)) => ItemKey::Str(s),
        Some(Value::Array(_) | Value::Object(_)) => return None,
    })
}

/// Lists up to this long whose items are all scalars are compared pairwise, by a fingerprint
/// first, without hashing into a table or allocating; longer ones, or ones with compound
/// items, go through a hash map.
const PAIRWISE_MAX: usize = 16;

/// Indices of the second occurrence of every repeated item among `item(0..n)`, in order.
fn non_unique<'v>(n: usize, item: impl Fn(usize) -> Option<&'v Value>) -> Vec<usize> {
    let mut out = Vec::new();
    if n <= 1 {
        return out;
    }
    if n <= PAIRWISE_MAX {
        let mut items: [Option<&'v Value>; PAIRWISE_MAX] = [None; PAIRWISE_MAX];
        let mut prints = [0u64; PAIRWISE_MAX];
        let mut scalars = true;
        for i in 0..n {
            items[i] = item(i);
            match fingerprint(items[i]) {
                Some(f) => prints[i] = f,
                None => scalars = false,
            }
        }
        if scalars {
            for i in 1..n {
                let earlier =
                    (0..i).filter(|&j| prints[j] == prints[i] && scalar_key(items[j]) == scalar_key(items[i])).count();
                if earlier == 1 {
                    out.push(i);
                }
            }
            return out;
        }
    }
    let mut seen: HashMap<ItemKey<'v>, usize> = HashMap::with_capacity(n);
    for i in 0..n {
        let times = seen.entry(item_key(item(i))).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// A 64-bit digest of a scalar item: equal [`scalar_key`]s give equal fingerprints, so
/// different fingerprints mean different items. `None` for an object or array. A string is
/// digested by its length and three of its bytes — list keys mostly differ there, and a
/// collision only costs a full comparison.
fn fingerprint(v: Option<&Value>) -> Option<u64> {
    Some(match scalar_key(v)? {
        ItemKey::Unspecified => 1,
        ItemKey::Null => 2,
        ItemKey::Bool(b) => 3 + u64::from(b),
        ItemKey::Int(i) => (i as u64).rotate_left(8) ^ 5,
        ItemKey::Float(bits) => bits.rotate_left(8) ^ 6,
        ItemKey::Str(s) => {
            let b = s.as_bytes();
            let at = |i: usize| b.get(i).map_or(0, |&c| u64::from(c));
            ((b.len() as u64) << 32) ^ (at(0) << 24) ^ (at(b.len() / 2) << 16) ^ (at(b.len().wrapping_sub(1)) << 8) ^ 7
        }
        ItemKey::Compound(_) => return None,
    })
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
