//! Definition-time checks of CEL conversion rules on generated objects: what `versa lint` and
//! the server run when a definition with `strategy: CEL` is written, after its rules compiled.
//!
//! For each conversion (`spec.conversion.cel.conversions[i]`, from `S` to `T`), [`check`]
//! generates sample objects of `S`'s schema ([`sample`]: deterministic, valid — objects the
//! schema or its validation rules refuse are skipped, since no such object can be stored),
//! converts each to `T` exactly as the server would, and reports:
//!
//! - a rule that fails (`...conversions[0].fields[1].expression: Invalid value: "<rule>":
//!   fails on a generated v1alpha1 object: <error>; the object: {...}`);
//! - a result that `T`'s schema refuses (`...conversions[0]: Invalid value: ...: converts a
//!   generated v1alpha1 object into one v1beta1 refuses: ...`);
//! - unless `cel.allowLoss`, a round trip `S → T → S` (through the annotation that keeps what
//!   `T` cannot hold) that does not give the object back.
//!
//! Only the first failure of each conversion is reported, with the sample that shows it.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_apiextensions::cel_conversion::lower_schemas;
use versa_cel::SchemaRules;
use versa_schema::field::{Error, ErrorList, Path};
use versa_schema::structural::Type as SchemaType;
use versa_schema::{Structural, pipeline};

use crate::{Converter, Options, Strategy};

/// How many objects of each source version are tried.
pub const SAMPLES_PER_VERSION: usize = 24;

/// Runs every CEL conversion of `def` on generated objects (see the module documentation).
/// Nothing to report for other strategies, or when the converter cannot be built (validation
/// reports why).
pub fn check(def: &ResourceDefinition) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(cel) = def.conversion_cel.as_ref() else { return errs };
    let schemas = lower_schemas(def);
    let Ok(converter) = Converter::new(def, schemas.clone(), &Options::default()) else { return errs };
    if !matches!(converter.strategy, Strategy::Cel { .. }) {
        return errs;
    }
    let mut samples: HashMap<&str, Vec<Value>> = HashMap::new();
    let path = Path::new("spec").child("conversion").child("cel").child("conversions");
    for (i, conv) in cel.conversions.iter().enumerate() {
        let (Some(from_schema), Some(to_schema)) = (schemas.get(&conv.from), schemas.get(&conv.to)) else { continue };
        let objects = samples
            .entry(conv.from.as_str())
            .or_insert_with(|| generate(def, &conv.from, from_schema, SAMPLES_PER_VERSION));
        for obj in objects.iter() {
            if let Some(e) =
                try_one(&converter, def, obj, &conv.from, &conv.to, to_schema, &path.index(i), cel.allow_loss)
            {
                errs.push(e);
                break;
            }
        }
    }
    errs
}

/// One sample through one conversion: the first thing wrong, if any.
#[allow(clippy::too_many_arguments, reason = "one conversion of one sample, as check() sees it")]
fn try_one(
    converter: &Converter,
    def: &ResourceDefinition,
    obj: &Value,
    from: &str,
    to: &str,
    to_schema: &Structural,
    at: &Path,
    allow_loss: bool,
) -> Option<Error> {
    let shown = || obj.to_string();
    let converted = match converter.convert_sync(obj.clone(), to) {
        Ok(c) => c,
        Err(e) => {
            // Name the rule's own field when the message names one.
            let at = rule_path(at, &e.message);
            let expr = rule_expression(def, &at);
            return Some(Error::invalid(
                at,
                expr.as_str(),
                format!("fails on a generated {from} object: {}; the object: {}", e.message, shown()),
            ));
        }
    };
    let mut stored = converted.clone();
    pipeline::on_read(&mut stored, to_schema);
    let refused = versa_schema::validation::validate(to_schema, &stored);
    if !refused.is_empty() {
        return Some(Error::invalid(
            at.clone(),
            format!("{from} -> {to}"),
            format!(
                "converts a generated {from} object into one {to} refuses: {}; the object: {}",
                refused.aggregate(),
                shown()
            ),
        ));
    }
    if allow_loss {
        return None;
    }
    let back = match converter.convert_sync(stored, from) {
        Ok(b) => b,
        Err(e) => {
            return Some(Error::invalid(
                at.clone(),
                format!("{from} -> {to}"),
                format!("the way back to {from} fails: {}; the object: {}", e.message, shown()),
            ));
        }
    };
    let mut want = obj.clone();
    let mut got = back;
    if let Some(schema) = converter.schemas.get(from) {
        pipeline::on_read(&mut want, schema);
        pipeline::on_read(&mut got, schema);
    }
    if got != want {
        return Some(Error::invalid(
            at.clone(),
            format!("{from} -> {to}"),
            format!("a round trip {from} -> {to} -> {from} does not give the object back: {} became {}", shown(), got),
        ));
    }
    None
}

/// `at.fields[j].expression` when `message` names `conversions[i].fields[j]`, else `at`.
fn rule_path(at: &Path, message: &str) -> Path {
    let field =
        message.split("].fields[").nth(1).and_then(|rest| rest.split(']').next()).and_then(|j| j.parse::<usize>().ok());
    match field {
        Some(j) => at.child("fields").index(j).child("expression"),
        None => at.clone(),
    }
}

/// The expression at `at` (a rule's path), for the error's value.
fn rule_expression(def: &ResourceDefinition, at: &Path) -> String {
    let text = at.as_str();
    let index =
        |key: &str| text.split(key).nth(1).and_then(|r| r.split(']').next()).and_then(|n| n.parse::<usize>().ok());
    let (Some(i), Some(j)) = (index("conversions["), index("fields[")) else { return String::new() };
    def.conversion_cel
        .as_ref()
        .and_then(|c| c.conversions.get(i))
        .and_then(|c| c.fields.get(j))
        .map(|f| f.expression.clone())
        .unwrap_or_default()
}

/// `n` valid objects of `version` (its lowered `schema`), as the read path would hand them to
/// the converter: generated, pruned and defaulted, and kept only when the schema and its
/// validation rules accept them.
pub fn generate(def: &ResourceDefinition, version: &str, schema: &Structural, n: usize) -> Vec<Value> {
    let rules = SchemaRules::compile(schema);
    let api_version = format!("{}/{version}", def.spec.group);
    let namespaced = def.spec.scope == "Namespaced";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ version.len() as u64);
    let mut out = Vec::new();
    // Invalid samples are skipped; bounded tries keep a schema nothing satisfies cheap.
    for attempt in 0..n * 4 {
        if out.len() == n {
            break;
        }
        let mut obj = sample(schema, &mut rng, 0);
        let Some(map) = obj.as_object_mut() else { continue };
        map.insert("apiVersion".into(), Value::String(api_version.clone()));
        map.insert("kind".into(), Value::String(def.spec.names.kind.clone()));
        let mut meta =
            json!({"name": format!("sample-{attempt}"), "uid": format!("00000000-0000-0000-0000-{attempt:012}")});
        if namespaced {
            meta["namespace"] = json!("default");
        }
        map.insert("metadata".into(), meta);
        pipeline::on_read(&mut obj, schema);
        if versa_schema::validation::validate(schema, &obj).is_empty() && rules.check(&obj, None).errors.is_empty() {
            out.push(obj);
        }
    }
    out
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// Few distinct strings, so that lists repeat values (what `distinct`, `filter` and list maps
/// are about).
const WORDS: &[&str] = &["tomato", "mozzarella", "basil", "a", "mushroom"];
/// How deep samples go; deeper schemas get their minimal form below.
const MAX_DEPTH: usize = 12;

/// A value of schema `s`, mostly valid: enums, bounds, required properties and unique keys of
/// list maps and sets are respected; formats and patterns are not (such samples fail
/// validation and are skipped).
fn sample(s: &Structural, rng: &mut Rng, depth: usize) -> Value {
    let vv = s.value_validation.as_deref();
    if let Some(values) = vv.map(|v| &v.enum_).filter(|e| !e.is_empty()) {
        return values[rng.below(values.len() as u64) as usize].clone();
    }
    if s.int_or_string {
        return json!(rng.below(5));
    }
    match s.type_ {
        SchemaType::Object => {
            let mut m = Map::new();
            if depth >= MAX_DEPTH {
                return Value::Object(m);
            }
            let required: &[String] = vv.map_or(&[], |v| v.required.as_slice());
            for (name, prop) in &s.properties {
                if depth == 0 && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if required.contains(name) || rng.below(3) > 0 {
                    m.insert(name.clone(), sample(prop, rng, depth + 1));
                }
            }
            if let Some(ap) = s.additional_properties.as_ref().and_then(|a| a.schema()) {
                for _ in 0..rng.below(3) {
                    m.insert(WORDS[rng.below(WORDS.len() as u64) as usize].to_owned(), sample(ap, rng, depth + 1));
                }
            }
            Value::Object(m)
        }
        SchemaType::Array => {
            let Some(items) = s.items.as_deref() else { return json!([]) };
            let min = vv.and_then(|v| v.min_items).unwrap_or(0).max(0) as u64;
            let max = vv.and_then(|v| v.max_items).unwrap_or(6).clamp(0, 6) as u64;
            let len = if max <= min { min } else { min + rng.below(max - min + 1) };
            let unique = matches!(s.list_type.as_deref(), Some("set")) || vv.is_some_and(|v| v.unique_items);
            let keys = (s.list_type.as_deref() == Some("map")).then_some(&s.list_map_keys);
            let mut out: Vec<Value> = Vec::new();
            for _ in 0..len * 3 {
                if out.len() as u64 == len {
                    break;
                }
                let item = sample(items, rng, depth + 1);
                let clash = out.iter().any(|o| match keys {
                    Some(keys) => keys.iter().all(|k| o.get(k) == item.get(k)),
                    None => unique && *o == item,
                });
                if !clash {
                    out.push(item);
                }
            }
            Value::Array(out)
        }
        SchemaType::String => {
            let format = vv.map_or("", |v| v.format.as_str());
            let word = match format {
                "date-time" => "2024-05-06T07:08:09Z",
                "date" => "2024-05-06",
                "duration" => "1m30s",
                "byte" => "aGk=",
                _ => WORDS[rng.below(WORDS.len() as u64) as usize],
            };
            let mut text = word.to_owned();
            let min = vv.and_then(|v| v.min_length).unwrap_or(0).max(0) as usize;
            while text.chars().count() < min {
                text.push('x');
            }
            if let Some(max) = vv.and_then(|v| v.max_length) {
                text = text.chars().take(max.max(0) as usize).collect();
            }
            Value::String(text)
        }
        SchemaType::Integer => {
            let lo = vv.and_then(|v| v.minimum).map_or(0, |m| m.ceil() as i64);
            let hi = vv.and_then(|v| v.maximum).map_or(lo.saturating_add(5), |m| m.floor() as i64);
            let span = hi.saturating_sub(lo).max(0) as u64;
            // The bounds themselves half the time: where rules go wrong.
            let v = match rng.below(4) {
                0 => lo,
                1 => hi,
                _ => lo.saturating_add(rng.below(span.saturating_add(1)) as i64),
            };
            json!(v)
        }
        SchemaType::Number => {
            let lo = vv.and_then(|v| v.minimum).unwrap_or(0.0);
            json!(lo + 1.5)
        }
        SchemaType::Boolean => json!(rng.below(2) == 1),
        SchemaType::None | SchemaType::Other => json!({}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn samples_respect_bounds_and_keys() {
        let schema: Value = serde_json::from_str(
            r#"{"type": "object", "properties": {"spec": {"type": "object", "required": ["l"], "properties": {
                "l": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name", "n"], "properties": {
                          "name": {"type": "string", "maxLength": 3}, "n": {"type": "integer", "minimum": 1, "maximum": 3}}}}}}}}"#,
        )
        .unwrap();
        let s = Structural::from_json(&schema).unwrap();
        let mut rng = Rng(7);
        for _ in 0..50 {
            let v = sample(&s, &mut rng, 0);
            let Some(items) = v.pointer("/spec/l").and_then(Value::as_array) else { continue };
            assert!(items.len() <= 4);
            let mut names: Vec<&str> = items.iter().map(|i| i["name"].as_str().unwrap()).collect();
            assert!(names.iter().all(|n| n.len() <= 3));
            assert!(items.iter().all(|i| (1..=3).contains(&i["n"].as_i64().unwrap())));
            names.sort();
            names.dedup();
            assert_eq!(names.len(), items.len(), "unique keys: {v}");
        }
    }
}
