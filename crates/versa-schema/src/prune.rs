//! Pruning: removing every field the schema does not specify (k8s `pruning/algorithm.go`).
//!
//! Unknown fields never reach storage. At the root of a resource and of every
//! `x-kubernetes-embedded-resource`, `apiVersion`, `kind` and `metadata` are left to
//! [`crate::objectmeta`]; everything else not named by `properties` (and not covered by
//! `additionalProperties`) is removed. `x-kubernetes-preserve-unknown-fields` keeps unknown keys
//! at its node but still prunes inside the properties, items and additionalProperties it
//! specifies. The paths of pruned fields are reported on request — the server turns them into
//! `fieldValidation=Warn` warnings or `Strict` errors. The same pass drops `null`s of
//! non-nullable fields without a default, which Kubernetes does right after pruning.
//!
//! The walk itself is [`crate::walk`]'s, which on the write and read paths also defaults,
//! coerces metadata and validates as it goes; here it only prunes.

use serde_json::Value;

use crate::structural::Structural;
use crate::walk::{self, Steps};

/// Prunes `obj` — a whole resource — against its `schema`, as the write and read paths do:
/// unknown fields and non-nullable `null`s without a default go. Returns the paths of the
/// removed unknown fields (`spec.foo`, `spec.list[0].bar`), sorted, when `track` is true.
pub fn prune(obj: &mut Value, schema: &Structural, track: bool) -> Vec<String> {
    let steps = Steps { track, drop_nulls: true, defaults: false, coerce: None, validate: false };
    walk::walk(obj, schema, true, steps).unknown
}

/// Removes unknown fields only (Kubernetes' `pruning.Prune`), leaving `null`s alone; `root`
/// treats `v` as a resource, keeping its type and object metadata. Used to check that
/// `default` values are already pruned.
pub fn prune_unknown(v: &mut Value, schema: &Structural, root: bool) {
    let steps = Steps { track: false, drop_nulls: false, defaults: false, coerce: None, validate: false };
    walk::walk(v, schema, root, steps);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, mut obj: Value, want: Value, want_unknown: &[&str]) {
        let s = Structural::from_json(&schema).unwrap();
        let unknown = prune(&mut obj, &s, true);
        assert_eq!(obj, want);
        assert_eq!(unknown, want_unknown);
    }

    #[test]
    fn root_meta_fields_stay_and_unknown_go() {
        check(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": "x", "b": 1}, "other": true}),
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": "x"}}),
            &["other", "spec.b"],
        );
    }

    #[test]
    fn items_and_additional_properties() {
        check(
            json!({"type": "object", "properties": {
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"b": {"type": "string"}}}},
                "any": {"type": "object", "additionalProperties": true}
            }}),
            json!({"list": [{"a": "1", "z": 1}, {"y": 2}], "map": {"k": {"b": "x", "c": 1}}, "any": {"k": "v", "o": {"deep": 1}}}),
            json!({"list": [{"a": "1"}, {}], "map": {"k": {"b": "x"}}, "any": {"k": "v", "o": {}}}),
            &["any.o.deep", "list[0].z", "list[1].y", "map.k.c"],
        );
    }
}
