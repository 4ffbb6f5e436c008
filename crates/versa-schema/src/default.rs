//! Defaulting (k8s `defaulting/algorithm.go`).
//!
//! Top-down: for each specified property that is absent, or `null` while not `nullable`, a deep
//! copy of its `default` is set, and then the walk descends. A parent that is absent is never
//! created — nested defaults apply only once the parent exists (or has a `default: {}` itself).
//! Items and map values only get defaults in place of a non-nullable `null`. Non-nullable
//! `null`s without a default are left for [`crate::prune::prune`], which drops them in its pass —
//! together that is how the seed's `foo/bar/baz` example ends up as `foo: "default"`,
//! `bar: null`, and no `baz`.

use serde_json::{Map, Value};

use crate::structural::{Structural, with_props};

/// Applies the defaults of `schema` to `x`. Only `null`s that have a default are touched.
pub fn default(x: &mut Value, s: &Structural) {
    if !s.below.defaults {
        return;
    }
    match x {
        Value::Object(map) => {
            insert_missing(map, s);
            let ap = s.additional_properties.as_ref().and_then(|ap| ap.schema());
            for (_, v, prop) in with_props(&s.properties, map.iter_mut()) {
                if let Some(child) = prop.or(ap) {
                    apply_to_item(v, child);
                    default(v, child);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = s.items.as_deref() else { return };
            for v in items.iter_mut() {
                apply_to_item(v, item);
                default(v, item);
            }
        }
        _ => {}
    }
}

/// The defaulting of one object node's absent properties: each one with a default is set to a
/// copy of it. The walks — [`default`] here, and the write path's single walk
/// ([`crate::walk`]) — then take every value, freshly set ones included, through
/// [`apply_to_item`] and descend into it, which gives a default its own nested defaults as
/// Kubernetes does.
pub(crate) fn insert_missing(map: &mut Map<String, Value>, s: &Structural) {
    if !s.below.child_defaults {
        return;
    }
    for (k, p) in &s.properties {
        if let Some(d) = &p.default
            && !map.contains_key(k)
        {
            map.insert(k.clone(), d.clone());
        }
    }
}

/// A non-nullable `null` with a default becomes a copy of the default (the step for a value
/// whose schema is `s`: an array item, a map value, a property).
#[inline]
pub(crate) fn apply_to_item(v: &mut Value, s: &Structural) {
    if v.is_null()
        && !s.nullable
        && let Some(d) = &s.default
    {
        *v = d.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, mut obj: Value, want: Value) {
        let s = Structural::from_json(&schema).unwrap();
        // The write path's composition: defaulting, then pruning (which drops the remaining
        // non-nullable nulls).
        default(&mut obj, &s);
        crate::prune::prune(&mut obj, &s, false);
        assert_eq!(obj, want);
    }

    #[test]
    fn seed_nullable_example() {
        check(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "foo": {"type": "string", "nullable": false, "default": "default"},
                "bar": {"type": "string", "nullable": true},
                "baz": {"type": "string"}
            }}}}),
            json!({"spec": {"foo": null, "bar": null, "baz": null}}),
            json!({"spec": {"foo": "default", "bar": null}}),
        );
    }

    #[test]
    fn absent_parent_is_not_created_but_default_parent_is_filled() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"x": {"type": "integer", "default": 1}}},
            "b": {"type": "object", "default": {}, "properties": {"y": {"type": "integer", "default": 2}}}
        }});
        check(schema.clone(), json!({}), json!({"b": {"y": 2}}));
        check(schema, json!({"a": {}}), json!({"a": {"x": 1}, "b": {"y": 2}}));
    }

    #[test]
    fn items_and_map_values_only_replace_nulls() {
        check(
            json!({"type": "object", "properties": {
                "l": {"type": "array", "items": {"type": "object", "default": {"d": true}, "properties": {"d": {"type": "boolean"}, "n": {"type": "integer", "default": 5}}}},
                "m": {"type": "object", "additionalProperties": {"type": "string", "default": "v"}}
            }}),
            json!({"l": [null, {}], "m": {"k": null, "j": "x"}}),
            json!({"l": [{"d": true, "n": 5}, {"n": 5}], "m": {"k": "v", "j": "x"}}),
        );
    }
}
