//! One version's schema, old against new, node by node: types, fields, bounds, enums, formats,
//! patterns, defaults, `required`, CEL rules, pruning and the list and map types. Paths are
//! object paths (`.spec.template[*].name`; `.*` for any value of a map).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

use super::{Class, Findings};

/// What a tightened value rule costs objects stored before: kube-apiserver does not enforce it
/// on a value an update leaves unchanged.
const RATCHET: &str = "objects stored before stay updatable while an update leaves the value unchanged (ratcheting)";

/// Compares two versions of one version's schema.
pub(super) fn compare(old: Option<&JSONSchemaProps>, new: Option<&JSONSchemaProps>, out: &mut Findings) {
    match (old, new) {
        (None, None) => {}
        (None, Some(_)) => out.add(
            Class::Breaking,
            "schema-added",
            ".",
            "a schema is added: objects are now validated, and fields it does not name are pruned on the next write",
        ),
        (Some(_), None) => {
            out.add(Class::Compatible, "schema-removed", ".", "the schema is removed: nothing is validated")
        }
        (Some(o), Some(n)) => {
            let mut descriptions = 0;
            node(o, n, ".", out, &mut descriptions);
            if descriptions > 0 {
                let s = if descriptions == 1 { "" } else { "s" };
                out.add(
                    Class::Informational,
                    "descriptions-changed",
                    ".",
                    format!("{descriptions} description{s} changed"),
                );
            }
        }
    }
}

/// A child path: `.a` under the root, `.spec.a` below it.
fn child(path: &str, name: &str) -> String {
    if path == "." { format!(".{name}") } else { format!("{path}.{name}") }
}

fn node(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings, descriptions: &mut usize) {
    if o.description != n.description {
        *descriptions += 1;
    }
    if o.type_ != n.type_ {
        let name = |t: &Option<String>| t.clone().unwrap_or_else(|| "any".to_owned());
        out.add(
            Class::Breaking,
            "type-changed",
            path,
            format!(
                "type changed from {} to {}: stored values of the old type fail validation, and clients decode another type",
                name(&o.type_),
                name(&n.type_)
            ),
        );
        return;
    }
    flags(o, n, path, out);
    enums(o, n, path, out);
    bounds(o, n, path, out);
    texts(o, n, path, out);
    defaults(o, n, path, out);
    required(o, n, path, out);
    rules(o, n, path, out);
    combinators(o, n, path, out);
    properties(o, n, path, out, descriptions);
    match (&o.items, &n.items) {
        (Some(JSONSchemaPropsOrArray::Schema(a)), Some(JSONSchemaPropsOrArray::Schema(b))) => {
            node(a, b, &format!("{path}[*]"), out, descriptions);
        }
        (a, b) if a != b => out.add(Class::Breaking, "items-changed", path, "the schema of the items changed"),
        _ => {}
    }
    additional_properties(o, n, path, out, descriptions);
}

/// `nullable`, the kube extensions that change what a value is, and pruning.
fn flags(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    let on = |b: Option<bool>| b.unwrap_or(false);
    match (on(o.nullable), on(n.nullable)) {
        (true, false) => out.add(Class::Breaking, "nullable-removed", path, "null is no longer accepted"),
        (false, true) => out.add(Class::Compatible, "nullable-added", path, "null is accepted"),
        _ => {}
    }
    for (name, a, b) in [
        ("x-kubernetes-int-or-string", o.x_kubernetes_int_or_string, n.x_kubernetes_int_or_string),
        ("x-kubernetes-embedded-resource", o.x_kubernetes_embedded_resource, n.x_kubernetes_embedded_resource),
    ] {
        if on(a) != on(b) {
            out.add(
                Class::Breaking,
                "extension-changed",
                path,
                format!("{name} changed from {} to {}: what the value may be changed", on(a), on(b)),
            );
        }
    }
    let keeps_any_key =
        matches!(n.additional_properties, Some(JSONSchemaPropsOrBool::Schema(_) | JSONSchemaPropsOrBool::Bool(true)));
    match (on(o.x_kubernetes_preserve_unknown_fields), on(n.x_kubernetes_preserve_unknown_fields)) {
        (true, false) if keeps_any_key => out.add(
            Class::Breaking,
            "unknown-fields-typed",
            path,
            "any key is still kept, but its value must now match the map's value schema: stored values that do not fail validation on the next write that changes them",
        ),
        (true, false) => out.add(
            Class::Breaking,
            "unknown-fields-pruned",
            path,
            "unknown fields are no longer kept: stored ones are pruned on the next write, and clients that set them lose them",
        ),
        (false, true) => out.add(Class::Compatible, "unknown-fields-kept", path, "unknown fields are kept"),
        _ => {}
    }
    let list_type = |s: &JSONSchemaProps| s.x_kubernetes_list_type.clone().unwrap_or_else(|| "atomic".to_owned());
    if list_type(o) != list_type(n) {
        out.add(
            Class::Breaking,
            "list-type-changed",
            path,
            format!(
                "x-kubernetes-list-type changed from {} to {}: server-side apply merges the list differently, and stored lists may no longer validate",
                list_type(o),
                list_type(n)
            ),
        );
    } else if o.x_kubernetes_list_map_keys != n.x_kubernetes_list_map_keys {
        out.add(
            Class::Breaking,
            "list-map-keys-changed",
            path,
            format!(
                "x-kubernetes-list-map-keys changed from {:?} to {:?}: server-side apply identifies items by other keys",
                o.x_kubernetes_list_map_keys.clone().unwrap_or_default(),
                n.x_kubernetes_list_map_keys.clone().unwrap_or_default()
            ),
        );
    }
    let map_type = |s: &JSONSchemaProps| s.x_kubernetes_map_type.clone().unwrap_or_else(|| "granular".to_owned());
    if map_type(o) != map_type(n) {
        out.add(
            Class::Breaking,
            "map-type-changed",
            path,
            format!(
                "x-kubernetes-map-type changed from {} to {}: server-side apply merges the map differently",
                map_type(o),
                map_type(n)
            ),
        );
    }
    if !on(o.unique_items) && on(n.unique_items) {
        out.add(Class::Breaking, "unique-items-added", path, format!("items must be unique: {RATCHET}"));
    }
}

fn enums(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    let values = |s: &JSONSchemaProps| -> Option<BTreeSet<String>> {
        s.enum_.as_ref().map(|e| e.iter().map(|v| v.0.to_string()).collect())
    };
    match (values(o), values(n)) {
        (None, Some(b)) => {
            out.add(Class::Breaking, "enum-added", path, format!("values are limited to {}: {RATCHET}", join(&b)))
        }
        (Some(_), None) => out.add(Class::Compatible, "enum-removed", path, "values are no longer limited to a list"),
        (Some(a), Some(b)) => {
            let removed: BTreeSet<String> = a.difference(&b).cloned().collect();
            let added: BTreeSet<String> = b.difference(&a).cloned().collect();
            if !removed.is_empty() {
                out.add(
                    Class::Breaking,
                    "enum-values-removed",
                    path,
                    format!("enum values removed: {}: {RATCHET}", join(&removed)),
                );
            }
            if !added.is_empty() {
                out.add(
                    Class::Compatible,
                    "enum-values-added",
                    path,
                    format!("enum values added: {} (clients that switch on the value may meet new ones)", join(&added)),
                );
            }
        }
        (None, None) => {}
    }
}

fn join(values: &BTreeSet<String>) -> String {
    values.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// Which way a bound tightens.
#[derive(Clone, Copy)]
enum Bound {
    /// A maximum: lowering it tightens.
    Upper,
    /// A minimum: raising it tightens.
    Lower,
}

/// One bound, old against new (`exclusive`: whether each excludes its value).
fn bound(
    name: &str,
    which: Bound,
    (old, old_exclusive): (Option<f64>, bool),
    (new, new_exclusive): (Option<f64>, bool),
    path: &str,
    out: &mut Findings,
) {
    let show = |v: f64| if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { v.to_string() };
    match (old, new) {
        (None, Some(b)) => {
            out.add(Class::Breaking, format!("{name}-added"), path, format!("{name} {} added: {RATCHET}", show(b)))
        }
        (Some(a), None) => {
            out.add(Class::Compatible, format!("{name}-removed"), path, format!("{name} {} removed", show(a)));
        }
        (Some(a), Some(b)) => {
            let tighter = match which {
                Bound::Upper => b < a,
                Bound::Lower => b > a,
            } || (a == b && new_exclusive && !old_exclusive);
            let looser = match which {
                Bound::Upper => b > a,
                Bound::Lower => b < a,
            } || (a == b && old_exclusive && !new_exclusive);
            let (verb_tight, verb_loose) = match which {
                Bound::Upper => ("lowered", "raised"),
                Bound::Lower => ("raised", "lowered"),
            };
            if tighter {
                let what = if a == b {
                    format!("{name} {} made exclusive", show(b))
                } else {
                    format!("{name} {verb_tight} from {} to {}", show(a), show(b))
                };
                out.add(Class::Breaking, format!("{name}-{verb_tight}"), path, format!("{what}: {RATCHET}"));
            } else if looser {
                let what = if a == b {
                    format!("{name} {} made inclusive", show(b))
                } else {
                    format!("{name} {verb_loose} from {} to {}", show(a), show(b))
                };
                out.add(Class::Compatible, format!("{name}-{verb_loose}"), path, what);
            }
        }
        (None, None) => {}
    }
}

fn bounds(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    let ex = |b: Option<bool>| b.unwrap_or(false);
    bound(
        "maximum",
        Bound::Upper,
        (o.maximum, ex(o.exclusive_maximum)),
        (n.maximum, ex(n.exclusive_maximum)),
        path,
        out,
    );
    bound(
        "minimum",
        Bound::Lower,
        (o.minimum, ex(o.exclusive_minimum)),
        (n.minimum, ex(n.exclusive_minimum)),
        path,
        out,
    );
    let f = |v: Option<i64>| v.map(|v| v as f64);
    for (name, which, a, b) in [
        ("maxLength", Bound::Upper, o.max_length, n.max_length),
        ("minLength", Bound::Lower, o.min_length, n.min_length),
        ("maxItems", Bound::Upper, o.max_items, n.max_items),
        ("minItems", Bound::Lower, o.min_items, n.min_items),
        ("maxProperties", Bound::Upper, o.max_properties, n.max_properties),
        ("minProperties", Bound::Lower, o.min_properties, n.min_properties),
    ] {
        bound(name, which, (f(a), false), (f(b), false), path, out);
    }
    match (o.multiple_of, n.multiple_of) {
        (a, Some(b)) if a != Some(b) && !a.is_some_and(|a| (a / b).fract() == 0.0) => {
            out.add(Class::Breaking, "multipleOf-changed", path, format!("values must be a multiple of {b}: {RATCHET}"))
        }
        (Some(_), None) => out.add(Class::Compatible, "multipleOf-removed", path, "multipleOf removed"),
        _ => {}
    }
}

/// `pattern` and `format`.
fn texts(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    for (name, a, b) in [("pattern", &o.pattern, &n.pattern), ("format", &o.format, &n.format)] {
        match (a, b) {
            (None, Some(b)) => out.add(
                Class::Breaking,
                if name == "pattern" { "pattern-added" } else { "format-added" },
                path,
                format!("{name} {b:?} added: {RATCHET}"),
            ),
            (Some(a), Some(b)) if a != b => out.add(
                Class::Breaking,
                if name == "pattern" { "pattern-changed" } else { "format-changed" },
                path,
                format!("{name} changed from {a:?} to {b:?}: {RATCHET}"),
            ),
            (Some(a), None) => out.add(
                Class::Compatible,
                if name == "pattern" { "pattern-removed" } else { "format-removed" },
                path,
                format!("{name} {a:?} removed"),
            ),
            _ => {}
        }
    }
}

fn defaults(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    let show = |v: &Value| v.to_string();
    match (&o.default, &n.default) {
        (None, Some(b)) => out.add(
            Class::Compatible,
            "default-added",
            path,
            format!("default {} added: objects without the field read with it", show(&b.0)),
        ),
        (Some(a), None) => out.add(
            Class::Breaking,
            "default-removed",
            path,
            format!("default {} removed: objects without the field no longer read with it", show(&a.0)),
        ),
        (Some(a), Some(b)) if a != b => out.add(
            Class::Breaking,
            "default-changed",
            path,
            format!(
                "default changed from {} to {}: objects without the field read with the new value",
                show(&a.0),
                show(&b.0)
            ),
        ),
        _ => {}
    }
}

fn required(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    let set = |s: &JSONSchemaProps| -> BTreeSet<String> { s.required.iter().flatten().cloned().collect() };
    let (a, b) = (set(o), set(n));
    for name in b.difference(&a) {
        let existed = o.properties.as_ref().is_some_and(|p| p.contains_key(name));
        let what = if existed { "an existing field" } else { "a new field" };
        out.add(
            Class::Breaking,
            "required-added",
            child(path, name),
            format!(
                "{what} is now required: creates without it fail; objects stored without it stay updatable while an update leaves the object holding it unchanged (ratcheting)"
            ),
        );
    }
    for name in a.difference(&b) {
        out.add(Class::Compatible, "required-removed", child(path, name), "no longer required");
    }
}

/// `x-kubernetes-validations`, matched by rule text, in the new schema's order.
fn rules(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    let list = |s: &JSONSchemaProps| -> Vec<(String, Value)> {
        s.x_kubernetes_validations
            .iter()
            .flatten()
            .map(|r| (r.rule.clone(), serde_json::to_value(r).unwrap_or(Value::Null)))
            .collect()
    };
    let (a, b) = (list(o), list(n));
    let find =
        |list: &[(String, Value)], rule: &str| list.iter().find(|(r, _)| r == rule).map(|(_, body)| body.clone());
    for (rule, body) in &b {
        match find(&a, rule) {
            None => {
                let note = if rule.contains("oldSelf") {
                    "a transition rule: it judges updates only".to_owned()
                } else {
                    RATCHET.to_owned()
                };
                out.add(Class::Breaking, "rule-added", path, format!("CEL rule added: {rule}: {note}"));
            }
            Some(old) if old != *body => out.add(
                Class::Informational,
                "rule-message-changed",
                path,
                format!("CEL rule {rule}: its message, reason or field path changed"),
            ),
            Some(_) => {}
        }
    }
    for (rule, _) in a.iter().filter(|(r, _)| find(&b, r).is_none()) {
        out.add(Class::Compatible, "rule-removed", path, format!("CEL rule removed: {rule}"));
    }
}

/// A schema as JSON without its descriptions (which judge nothing).
fn judging<T: serde::Serialize>(schema: &T) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("description");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(schema).unwrap_or(Value::Null);
    strip(&mut v);
    v
}

/// `allOf`, `anyOf`, `oneOf`, `not`: compared whole, descriptions aside.
fn combinators(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings) {
    for (name, a, b) in
        [("allOf", &o.all_of, &n.all_of), ("anyOf", &o.any_of, &n.any_of), ("oneOf", &o.one_of, &n.one_of)]
    {
        match (a, b) {
            (None, Some(_)) => out.add(
                Class::Breaking,
                "combinator-added",
                path,
                format!("{name} added: values must now match it; {RATCHET}"),
            ),
            (_, Some(_)) if judging(a) != judging(b) => out.add(
                Class::Breaking,
                "combinator-changed",
                path,
                format!("{name} changed: values may be judged differently; {RATCHET}"),
            ),
            (Some(_), None) => out.add(Class::Compatible, "combinator-removed", path, format!("{name} removed")),
            _ => {}
        }
    }
    match (&o.not, &n.not) {
        (a, Some(_)) if judging(a) != judging(&n.not) => out.add(
            Class::Breaking,
            "combinator-changed",
            path,
            format!("not changed: values may be judged differently; {RATCHET}"),
        ),
        (Some(_), None) => out.add(Class::Compatible, "combinator-removed", path, "not removed"),
        _ => {}
    }
}

fn properties(o: &JSONSchemaProps, n: &JSONSchemaProps, path: &str, out: &mut Findings, descriptions: &mut usize) {
    let empty = BTreeMap::new();
    let (a, b) = (o.properties.as_ref().unwrap_or(&empty), n.properties.as_ref().unwrap_or(&empty));
    let kept = n.x_kubernetes_preserve_unknown_fields.unwrap_or(false);
    for (name, old) in a {
        let at = child(path, name);
        match b.get(name) {
            Some(new) => node(old, new, &at, out, descriptions),
            None if kept => out.add(
                Class::Compatible,
                "field-removed",
                at,
                "field removed from the schema; unknown fields are kept here, so stored values stay, unvalidated",
            ),
            None => out.add(
                Class::Breaking,
                "field-removed",
                at,
                "field removed: stored values are pruned on the next write, and clients that set it get an unknown-field warning (an error with fieldValidation=Strict)",
            ),
        }
    }
    for name in b.keys().filter(|k| !a.contains_key(*k)) {
        out.add(Class::Compatible, "field-added", child(path, name), "field added");
    }
}

fn additional_properties(
    o: &JSONSchemaProps,
    n: &JSONSchemaProps,
    path: &str,
    out: &mut Findings,
    descriptions: &mut usize,
) {
    use JSONSchemaPropsOrBool::{Bool, Schema};
    match (&o.additional_properties, &n.additional_properties) {
        (Some(Schema(a)), Some(Schema(b))) => node(a, b, &format!("{path}.*"), out, descriptions),
        (Some(Schema(_) | Bool(true)), Some(Bool(false))) => out.add(
            Class::Breaking,
            "additional-properties-removed",
            path,
            "keys beyond the named fields are no longer kept: stored ones are pruned on the next write",
        ),
        (None, Some(Schema(_))) if o.properties.is_some() => {
            out.add(Class::Compatible, "additional-properties-added", path, "keys beyond the named fields are kept")
        }
        // Reported with the end of x-kubernetes-preserve-unknown-fields.
        (None, Some(Schema(_))) if o.x_kubernetes_preserve_unknown_fields.unwrap_or(false) => {}
        (Some(Schema(_)), None) | (None, Some(Schema(_))) => {
            out.add(Class::Breaking, "additional-properties-changed", path, "the schema of the map's values changed")
        }
        _ => {}
    }
}
