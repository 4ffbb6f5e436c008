//! The seed's CEL rule set, shared by the benchmarks that time it: `versa-cel`'s (the rules
//! alone, beside the schema pipeline) and `versa-server`'s serving benchmark (updates through
//! the server, with and without the rules).
//!
//! Every example of the seed's "Validation rules" and "Transition rules" tables (plus its
//! messageExpression), placed on one CronTab-like schema with the sizes a definition author
//! would give it (maxItems, maxProperties, maxLength), so that the whole set passes definition
//! validation's cost limits; and a corpus of objects that satisfy every rule.

use serde_json::{Value, json};

/// A bounded string (maxLength), as definition authors are advised to write them.
fn string(max: u32) -> Value {
    json!({"type": "string", "maxLength": max})
}

fn strings(max_items: u32, list_type: &str) -> Value {
    json!({"type": "array", "maxItems": max_items, "x-kubernetes-list-type": list_type, "items": string(64)})
}

pub fn schema() -> Value {
    let rule = |r: &str| json!({"rule": r});
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            rule("self.metadata.name.startsWith(self.prefix)"),
            rule("self.status.availableReplicas >= self.spec.minReplicas"),
        ],
        "properties": {
            "prefix": string(16),
            "spec": {
                "type": "object",
                "required": ["minReplicas", "replicas", "maxReplicas"],
                "x-kubernetes-validations": [
                    {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be greater than or equal to minReplicas."},
                    {"rule": "self.replicas <= self.maxReplicas", "message": "replicas should be smaller than or equal to maxReplicas."},
                    rule("self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas"),
                    {"rule": "self.x <= self.maxLimit", "messageExpression": "\"x exceeded max limit of \" + string(self.maxLimit)"},
                    rule("'Available' in self.stateCounts"),
                    rule("(size(self.list1) == 0) != (size(self.list2) == 0)"),
                    // The docs' `self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches(...))`,
                    // written as Kubernetes' cost estimator can bound it: after `filter()` the
                    // elements' field paths are lost (cel-go sets no path on a comprehension's
                    // result), so `e.value` would have no size and the rule would be refused.
                    rule("self.envars.all(e, e.name != 'MY_ENV' || e.value.matches('^[a-zA-Z]*$'))"),
                    rule("has(self.expired) && self.created + self.ttl < self.expired"),
                    rule("self.health.startsWith('ok')"),
                    rule("self.widgets.exists(w, w.key == 'x' && w.foo < 10)"),
                    rule("self.set1.all(e, !(e in self.set2))"),
                    rule("size(self.names) == size(self.details) && self.names.all(n, n in self.details)"),
                    rule("size(self.clusters.filter(c, c.name == self.primary)) == 1"),
                    rule("self.components['Widget'].priority < 10"),
                ],
                "properties": {
                    "minReplicas": {"type": "integer"},
                    "replicas": {"type": "integer"},
                    "maxReplicas": {"type": "integer"},
                    "x": {"type": "integer"},
                    "maxLimit": {"type": "integer"},
                    "stateCounts": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "integer"}},
                    "list1": strings(8, "atomic"),
                    "list2": strings(8, "atomic"),
                    "map1": {
                        "type": "object", "maxProperties": 8, "additionalProperties": string(64),
                        "x-kubernetes-validations": [rule("!('MY_KEY' in self) || self['MY_KEY'].matches('^[a-zA-Z]*$')")]
                    },
                    "envars": {
                        "type": "array", "maxItems": 16,
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {"name": string(64), "value": string(64)}}
                    },
                    "created": {"type": "string", "format": "date-time"},
                    "ttl": {"type": "string", "format": "duration"},
                    "expired": {"type": "string", "format": "date-time"},
                    "health": string(64),
                    "widgets": {
                        "type": "array", "maxItems": 16,
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"],
                        "items": {"type": "object", "required": ["key"], "properties": {"key": string(16), "foo": {"type": "integer"}}}
                    },
                    "size": {
                        "x-kubernetes-int-or-string": true,
                        "x-kubernetes-validations": [rule("type(self) == string ? self == '100%' : self == 1000")]
                    },
                    "set1": strings(16, "set"),
                    "set2": strings(16, "set"),
                    "names": strings(16, "set"),
                    "details": {"type": "object", "maxProperties": 16, "additionalProperties": string(64)},
                    "primary": string(64),
                    "clusters": {
                        "type": "array", "maxItems": 16,
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {"name": string(64)}}
                    },
                    "components": {
                        "type": "object", "maxProperties": 8,
                        "additionalProperties": {"type": "object", "properties": {"priority": {"type": "integer"}}}
                    },
                    "values": {
                        "type": "array", "maxItems": 32, "items": {"type": "integer"},
                        "x-kubernetes-validations": [rule("self.all(value, value >= 0 && value < 100)")]
                    },
                    "kubeName": {"type": "string", "maxLength": 64, "x-kubernetes-validations": [rule("self.startsWith('kube')")]},
                    // Transition rules.
                    "level": {
                        "type": "string", "enum": ["low", "medium", "high"],
                        "x-kubernetes-validations": [{
                            "rule": "!(self == 'high' && oldSelf == 'low') && !(self == 'low' && oldSelf == 'high')",
                            "message": "cannot transition directly between 'low' and 'high'"
                        }]
                    },
                    "immutable": {
                        "type": "object", "properties": {"foo": string(64)},
                        "x-kubernetes-validations": [rule("self.foo == oldSelf.foo")]
                    },
                    "bar": {"type": "string", "maxLength": 64, "x-kubernetes-validations": [rule("oldSelf != 'bar' || self == 'bar'")]},
                    "guarded": {
                        "type": "object", "properties": {"field": string(64)},
                        "x-kubernetes-validations": [rule("!has(oldSelf.field) || has(self.field)")]
                    },
                    "appendOnly": {
                        "type": "array", "maxItems": 16, "x-kubernetes-list-type": "set", "items": string(64),
                        "x-kubernetes-validations": [rule("self.all(element, element in oldSelf)")]
                    },
                    "phase": {"type": "string", "maxLength": 16, "x-kubernetes-validations": [rule("oldSelf != 'X' || self in ['A', 'B']")]},
                    "counter": {"type": "integer", "x-kubernetes-validations": [rule("self >= oldSelf")]}
                }
            },
            "status": {"type": "object", "properties": {"availableReplicas": {"type": "integer"}}}
        }
    })
}

/// Object `i` of the corpus, at `generation` (the old object is generation 0, the new one 1;
/// any later generation is a valid update of the one before: `spec.counter` only grows).
pub fn object(i: usize, generation: i64) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": format!("cron-{i}"), "namespace": "default", "labels": {"app": "cron"}},
        "prefix": "cron",
        "spec": {
            "minReplicas": 1, "replicas": 2 + (i % 5) as i64, "maxReplicas": 10,
            "x": 3, "maxLimit": 5,
            "stateCounts": {"Available": 3, "Pending": 1},
            "list1": ["a", "b"], "list2": [],
            "map1": {"MY_KEY": "abc", "OTHER": "x-1"},
            "envars": [{"name": "MY_ENV", "value": "abc"}, {"name": "OTHER", "value": format!("v{i}")}],
            "created": "2026-01-01T00:00:00Z", "ttl": "24h", "expired": "2026-03-01T00:00:00Z",
            "health": "ok: all good",
            "widgets": [{"key": "x", "foo": 3}, {"key": "y", "foo": 30}],
            "size": if i.is_multiple_of(2) { json!("100%") } else { json!(1000) },
            "set1": ["a", "b", "c"], "set2": ["d", "e"],
            "names": ["n1", "n2"], "details": {"n1": "one", "n2": "two"},
            "primary": "east", "clusters": [{"name": "east"}, {"name": "west"}],
            "components": {"Widget": {"priority": 3}, "Gadget": {"priority": 20}},
            "values": [1, 2, 3, 50, 99],
            "kubeName": format!("kube-{i}"),
            "level": if generation == 0 { "low" } else { "medium" },
            "immutable": {"foo": "fixed"},
            "bar": "bar",
            "guarded": {"field": "set"},
            "appendOnly": if generation == 0 { json!(["a", "b"]) } else { json!(["b", "a"]) },
            "phase": "A",
            "counter": 10 + generation
        },
        "status": {"availableReplicas": 2}
    })
}

/// Every rule (and messageExpression) of the schema with the schema node it sits on.
pub fn rules_with_nodes(node: &Value, is_root: bool, out: &mut Vec<(Value, bool, String, bool)>) {
    for r in node.get("x-kubernetes-validations").and_then(Value::as_array).into_iter().flatten() {
        if let Some(rule) = r.get("rule").and_then(Value::as_str) {
            out.push((node.clone(), is_root, rule.to_owned(), false));
        }
        if let Some(m) = r.get("messageExpression").and_then(Value::as_str) {
            out.push((node.clone(), is_root, m.to_owned(), true));
        }
    }
    for (_, child) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
        rules_with_nodes(child, false, out);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key).filter(|c| c.is_object()) {
            rules_with_nodes(child, false, out);
        }
    }
}

/// How many rules (not counting messageExpressions) the seed's schema has.
pub fn rule_count() -> usize {
    let mut found = Vec::new();
    rules_with_nodes(&schema(), true, &mut found);
    found.iter().filter(|(_, _, _, is_message)| !is_message).count()
}
