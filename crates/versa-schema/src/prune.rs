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

use serde_json::{Map, Value};

use crate::structural::Structural;

/// Prunes `obj` — a whole resource — against its `schema`, as the write and read paths do:
/// unknown fields and non-nullable `null`s without a default go. Returns the paths of the
/// removed unknown fields (`spec.foo`, `spec.list[0].bar`), sorted, when `track` is true.
pub fn prune(obj: &mut Value, schema: &Structural, track: bool) -> Vec<String> {
    let mut p = Pruner { track, drop_nulls: true, unknown: Vec::new(), path: String::new() };
    p.prune(obj, Some(schema), true);
    p.unknown.sort();
    p.unknown
}

/// Removes unknown fields only (Kubernetes' `pruning.Prune`), leaving `null`s alone; `root`
/// treats `v` as a resource, keeping its type and object metadata. Used to check that
/// `default` values are already pruned.
pub fn prune_unknown(v: &mut Value, schema: &Structural, root: bool) {
    let mut p = Pruner { track: false, drop_nulls: false, unknown: Vec::new(), path: String::new() };
    p.prune(v, Some(schema), root);
}

/// Fields of the type and object metadata of a resource, handled by [`crate::objectmeta`].
pub(crate) fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// The walk. `path` is one reusable buffer: a segment is appended before descending and the
/// buffer truncated after, so a clean object costs no allocation per node.
struct Pruner {
    track: bool,
    drop_nulls: bool,
    unknown: Vec<String>,
    path: String,
}

impl Pruner {
    /// `root` marks a resource root, which behaves as an embedded resource.
    fn prune(&mut self, x: &mut Value, s: Option<&Structural>, root: bool) {
        if let Some(s) = s
            && s.preserve_unknown_fields
        {
            self.skip_prune(x, s, root);
            return;
        }
        match x {
            Value::Object(map) => {
                let Some(s) = s else {
                    // No schema at all (e.g. under `additionalProperties: true`): nothing inside
                    // is specified.
                    if self.track {
                        let keys: Vec<String> = map.keys().cloned().collect();
                        for k in keys {
                            self.record(&k);
                        }
                    }
                    map.clear();
                    return;
                };
                self.object(map, s, root || s.embedded_resource, false);
            }
            Value::Array(items) => {
                let item = s.and_then(|s| s.items.as_deref());
                for (i, v) in items.iter_mut().enumerate() {
                    if is_container(v) {
                        let mark = self.push_index(i);
                        self.prune(v, item, false);
                        self.path.truncate(mark);
                    }
                }
            }
            _ => {}
        }
    }

    /// One pass over an object's keys: unknown keys are removed (unless `keep_unknown`),
    /// non-nullable `null`s without a default are removed (as Kubernetes does right after
    /// pruning), and specified objects and arrays are pruned recursively. Each key's schema is
    /// looked up once.
    fn object(&mut self, map: &mut Map<String, Value>, s: &Structural, embedded: bool, keep_unknown: bool) {
        // Decide in one read-only-keys pass (most objects lose nothing, and iterating is much
        // cheaper than `retain`'s extraction), then remove.
        let mut unknown: Vec<String> = Vec::new();
        let mut nulls: Vec<String> = Vec::new();
        for (k, v) in map.iter_mut() {
            if embedded && is_meta_field(k) {
                continue;
            }
            let child = match s.properties.get(k.as_str()) {
                Some(p) => Some(p),
                None => match &s.additional_properties {
                    Some(ap) => ap.schema(),
                    None if keep_unknown => continue,
                    None => {
                        unknown.push(k.clone());
                        continue;
                    }
                },
            };
            match v {
                Value::Null if self.drop_nulls && child.is_some_and(|c| !c.nullable && c.default.is_none()) => {
                    nulls.push(k.clone());
                }
                Value::Object(_) | Value::Array(_) => {
                    let mark = self.push_field(k);
                    self.prune(v, child, false);
                    self.path.truncate(mark);
                }
                _ => {}
            }
        }
        for k in nulls {
            map.remove(&k);
        }
        for k in unknown {
            map.remove(&k);
            self.record(&k);
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: keep unknown keys, prune inside the
    /// specified ones.
    fn skip_prune(&mut self, x: &mut Value, s: &Structural, root: bool) {
        match x {
            Value::Object(map) => self.object(map, s, root || s.embedded_resource, true),
            Value::Array(items) => {
                let Some(item) = s.items.as_deref() else { return };
                for (i, v) in items.iter_mut().enumerate() {
                    if is_container(v) {
                        let mark = self.push_index(i);
                        self.skip_prune(v, item, false);
                        self.path.truncate(mark);
                    }
                }
            }
            _ => {}
        }
    }

    fn push_field(&mut self, k: &str) -> usize {
        let mark = self.path.len();
        if self.track {
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(k);
        }
        mark
    }

    fn push_index(&mut self, i: usize) -> usize {
        let mark = self.path.len();
        if self.track {
            use std::fmt::Write as _;
            let _ = write!(self.path, "[{i}]");
        }
        mark
    }

    fn record(&mut self, k: &str) {
        if self.track {
            let mut p = String::with_capacity(self.path.len() + 1 + k.len());
            p.push_str(&self.path);
            if !p.is_empty() {
                p.push('.');
            }
            p.push_str(k);
            self.unknown.push(p);
        }
    }
}

/// Only objects and arrays can contain something to prune.
fn is_container(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_))
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
