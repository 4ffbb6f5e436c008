//! Defaulting (k8s `defaulting/algorithm.go`).
//!
//! Top-down: for each specified property that is absent, or `null` while not `nullable`, a deep
//! copy of its `default` is set, and then the walk descends. A parent that is absent is never
//! created — nested defaults apply only once the parent exists (or has a `default: {}` itself).
//! Items and map values only get defaults in place of a non-nullable `null`. Non-nullable
//! `null`s without a default are left for [`crate::prune::prune`], which drops them in its pass —
//! together that is how the seed's `foo/bar/baz` example ends up as `foo: "default"`,
//! `bar: null`, and no `baz`.

use serde_json::Value;

use crate::structural::Structural;

/// Applies the defaults of `schema` to `x`. Only `null`s that have a default are touched.
pub fn default(x: &mut Value, s: &Structural) {
    if !s.below.defaults {
        return;
    }
    match x {
        Value::Object(map) => {
            // Both maps are sorted by key: one merge walk finds the absent properties with a
            // default and the schema of every present key, without per-key lookups.
            let mut missing: Vec<(&String, &Value)> = Vec::new();
            let ap = s.additional_properties.as_ref().and_then(|ap| ap.schema());
            let mut props = s.properties.iter().peekable();
            for (k, v) in map.iter_mut() {
                let mut prop = None;
                while let Some((pk, p)) = props.peek() {
                    match pk.as_str().cmp(k.as_str()) {
                        std::cmp::Ordering::Less => {
                            if let Some(d) = &p.default {
                                missing.push((pk, d));
                            }
                            props.next();
                        }
                        std::cmp::Ordering::Equal => {
                            prop = Some(*p);
                            props.next();
                            break;
                        }
                        std::cmp::Ordering::Greater => break,
                    }
                }
                match prop {
                    Some(prop) => {
                        if v.is_null()
                            && !prop.nullable
                            && let Some(d) = &prop.default
                        {
                            *v = d.clone();
                        }
                        default(v, prop);
                    }
                    None => {
                        if let Some(ap) = ap {
                            if v.is_null()
                                && !ap.nullable
                                && let Some(d) = &ap.default
                            {
                                *v = d.clone();
                            }
                            default(v, ap);
                        }
                    }
                }
            }
            for (pk, p) in props {
                if let Some(d) = &p.default {
                    missing.push((pk, d));
                }
            }
            for (k, d) in missing {
                let mut v = d.clone();
                // A freshly set default gets the defaults nested inside it, as Kubernetes
                // defaults the parent first and then descends into it.
                if let Some(prop) = s.properties.get(k) {
                    default(&mut v, prop);
                }
                map.insert(k.clone(), v);
            }
        }
        Value::Array(items) => {
            let Some(item) = s.items.as_deref() else { return };
            for v in items.iter_mut() {
                if v.is_null()
                    && !item.nullable
                    && let Some(d) = &item.default
                {
                    *v = d.clone();
                }
                default(v, item);
            }
        }
        _ => {}
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
