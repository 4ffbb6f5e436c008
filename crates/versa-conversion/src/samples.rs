//! Definition-time checks of CEL conversion rules on generated objects: what `versa lint` and
//! the server run when a definition with `strategy: CEL` is written, after its rules compiled.
//!
//! For each conversion (`spec.conversion.cel.conversions[i]`, from `S` to `T`), [`check`]
//! generates sample objects of `S`'s schema ([`sample`]: deterministic, valid — strings valid
//! for their `format` and matched by their `pattern` where one can be built (`strings`);
//! objects the schema or its validation rules still refuse are skipped, since no such object
//! can be stored), converts each to `T` exactly as the server would, and reports:
//!
//! - a rule that fails (`...conversions[0].fields[1].expression: Invalid value: "<rule>":
//!   fails on a generated v1alpha1 object: <error>; the object: {...}`);
//! - a result that `T`'s schema refuses (`...conversions[0]: Invalid value: ...: converts a
//!   generated v1alpha1 object into one v1beta1 refuses: ...`);
//! - unless `cel.allowLoss`, a round trip `S → T → S` (through the annotation that keeps what
//!   `T` cannot hold) that does not give the object back.
//!
//! Only the first failure of each conversion is reported, with the sample that shows it. A
//! conversion for which no valid sample could be generated is not reported as failing (that
//! would be a false failure) but noted ([`check_with_notes`]; `versa lint` prints the notes).

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_apiextensions::cel_conversion::lower_schemas;
use versa_cel::SchemaRules;
use versa_schema::field::{Error, ErrorList, Path};
use versa_schema::structural::Type as SchemaType;
use versa_schema::{Structural, pipeline};

use crate::{Converter, Options, Strategy};

mod strings;

/// How many objects of each source version are tried.
pub const SAMPLES_PER_VERSION: usize = 24;

/// Runs every CEL conversion of `def` on generated objects (see the module documentation).
/// Nothing to report for other strategies, or when the converter cannot be built (validation
/// reports why).
pub fn check(def: &ResourceDefinition) -> ErrorList {
    check_with_notes(def).0
}

/// [`check`], and a note for each conversion that could not be checked because no generated
/// object of its source version was valid (a `pattern` no string could be built for, bounds
/// that contradict each other): `spec.conversion.cel.conversions[0]: not checked on generated
/// objects: no generated v1 object is valid (the last one: spec.id: Invalid value: ...)`.
/// Such conversions are reported neither as failing nor as passing.
pub fn check_with_notes(def: &ResourceDefinition) -> (ErrorList, Vec<String>) {
    let mut errs = ErrorList::new();
    let mut notes = Vec::new();
    let Some(cel) = def.conversion_cel.as_ref() else { return (errs, notes) };
    let schemas = lower_schemas(def);
    let Ok(converter) = Converter::new(def, schemas.clone(), &Options::default()) else { return (errs, notes) };
    if !matches!(converter.strategy, Strategy::Cel { .. }) {
        return (errs, notes);
    }
    let mut samples: HashMap<&str, Generated> = HashMap::new();
    let path = Path::new("spec").child("conversion").child("cel").child("conversions");
    for (i, conv) in cel.conversions.iter().enumerate() {
        let (Some(from_schema), Some(to_schema)) = (schemas.get(&conv.from), schemas.get(&conv.to)) else { continue };
        let generated = samples
            .entry(conv.from.as_str())
            .or_insert_with(|| generate_reporting(def, &conv.from, from_schema, SAMPLES_PER_VERSION));
        let objects = &generated.objects;
        if objects.is_empty() {
            let why = generated.refused.as_deref().map(|r| format!(" (the last one: {r})")).unwrap_or_default();
            notes.push(format!(
                "{}: not checked on generated objects: no generated {} object is valid{why}",
                path.index(i),
                conv.from
            ));
            continue;
        }
        for obj in objects.iter() {
            if let Some(e) =
                try_one(&converter, def, obj, &conv.from, &conv.to, to_schema, &path.index(i), cel.allow_loss)
            {
                errs.push(e);
                break;
            }
        }
    }
    (errs, notes)
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
            let at = rule_path(at, &e.to_string());
            let expr = rule_expression(def, &at);
            return Some(Error::invalid(
                at,
                expr.as_str(),
                format!("fails on a generated {from} object: {e}; the object: {}", shown()),
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
                format!("the way back to {from} fails: {e}; the object: {}", shown()),
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
    generate_reporting(def, version, schema, n).objects
}

/// `n` generated objects of `version` (its lowered `schema`) as a client would send them: not
/// pruned, not defaulted, not checked — most valid, some not (a pattern no string could be
/// built for, a rule the generator knows nothing of). `seed` picks the sequence. The
/// differential suite against the real kube-apiserver (`tests/e2e/kube_diff.rs`) sends them to
/// kube and to versa alike.
pub fn generate_unchecked(
    def: &ResourceDefinition,
    version: &str,
    schema: &Structural,
    n: usize,
    seed: u64,
) -> Vec<Value> {
    let api_version = format!("{}/{version}", def.spec.group);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    (0..n)
        .filter_map(|i| {
            let mut obj = sample(schema, &mut rng, 0);
            let map = obj.as_object_mut()?;
            map.insert("apiVersion".into(), Value::String(api_version.clone()));
            map.insert("kind".into(), Value::String(def.spec.names.kind.clone()));
            map.insert("metadata".into(), json!({"name": format!("generated-{i}")}));
            Some(obj)
        })
        .collect()
}

/// What [`generate_reporting`] made.
struct Generated {
    objects: Vec<Value>,
    /// Why the last object refused was refused (its first error).
    refused: Option<String>,
}

/// [`generate`], also saying why the last refused object was refused.
fn generate_reporting(def: &ResourceDefinition, version: &str, schema: &Structural, n: usize) -> Generated {
    let rules = SchemaRules::compile(schema);
    let api_version = format!("{}/{version}", def.spec.group);
    let namespaced = def.spec.scope == "Namespaced";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ version.len() as u64);
    let mut out = Vec::new();
    let mut refused = None;
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
        let invalid = versa_schema::validation::validate(schema, &obj);
        if let Some(e) = invalid.iter().next() {
            refused = Some(e.to_string());
            continue;
        }
        match rules.check(&obj, None).errors.iter().next() {
            Some(e) => refused = Some(e.to_string()),
            None => out.push(obj),
        }
    }
    Generated { objects: out, refused }
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

/// A value of schema `s`, mostly valid: enums, bounds, required properties, unique keys of
/// list maps and sets, the formats Kubernetes checks and the patterns a string can be built
/// for are respected (samples that still fail validation are skipped).
fn sample(s: &Structural, rng: &mut Rng, depth: usize) -> Value {
    let vv = s.value_validation.as_deref();
    if let Some(values) = vv.map(|v| &v.enum_).filter(|e| !e.is_empty()) {
        return values[rng.below(values.len() as u64) as usize].clone();
    }
    if s.int_or_string {
        // Either, as such fields hold both ("1", "25%"): a number within the bounds, or a
        // string (one the pattern matches, when there is one).
        if rng.below(2) == 0 {
            let lo = vv.and_then(|v| v.minimum).map_or(0, |m| m.ceil() as i64);
            return json!(lo.saturating_add(rng.below(5) as i64));
        }
        return match vv.and_then(|v| v.pattern.as_ref()) {
            Some(_) => Value::String(string(vv, rng)),
            None => json!(format!("{}%", 5 * (1 + rng.below(19)))),
        };
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
        SchemaType::String => Value::String(string(vv, rng)),
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

/// A string for a field with value validations `vv`: valid for its `format` (one Kubernetes
/// checks), else matched by its `pattern`, else a word — padded to `minLength` and cut at
/// `maxLength` (a formatted or patterned string is left as it is: cutting it would make it
/// invalid, and the sample is then skipped anyway).
fn string(vv: Option<&versa_schema::structural::ValueValidation>, rng: &mut Rng) -> String {
    if let Some(format) = vv.and_then(|v| v.format_kind) {
        return strings::for_format(format, rng);
    }
    if let Some(pattern) = vv.and_then(|v| v.pattern.as_ref())
        && let Some(text) = strings::for_pattern(pattern, rng)
    {
        return text;
    }
    let mut text = WORDS[rng.below(WORDS.len() as u64) as usize].to_owned();
    let min = vv.and_then(|v| v.min_length).unwrap_or(0).max(0) as usize;
    while text.chars().count() < min {
        text.push('x');
    }
    if let Some(max) = vv.and_then(|v| v.max_length) {
        text = text.chars().take(max.max(0) as usize).collect();
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn testdata(name: &str) -> Value {
        let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    /// `testdata/sample-strings.yaml`: strings generated for formats and patterns.
    #[test]
    fn strings_satisfy_formats_and_patterns() {
        let cases = testdata("sample-strings.yaml");
        let mut failures = Vec::new();
        for name in cases["formats"].as_array().unwrap() {
            let name = name.as_str().unwrap();
            let Some(format) = versa_schema::formats::Format::parse(name) else {
                failures.push(format!("format {name}: not one Kubernetes checks"));
                continue;
            };
            let mut rng = Rng(11);
            for _ in 0..20 {
                let text = strings::for_format(format, &mut rng);
                if !format.matches(&text) {
                    failures.push(format!("format {name}: {text:?} is not valid"));
                }
            }
        }
        for case in cases["patterns"].as_array().unwrap() {
            let source = case["pattern"].as_str().unwrap();
            let pattern = versa_schema::pattern::Pattern::new(source);
            assert!(pattern.error().is_none(), "{source}: {:?}", pattern.error());
            let want_built = case.get("built").and_then(Value::as_bool).unwrap_or(true);
            let max = case.get("maxLength").and_then(Value::as_u64);
            let mut rng = Rng(5);
            for _ in 0..20 {
                match strings::for_pattern(&pattern, &mut rng) {
                    Some(text) if !want_built => failures.push(format!("pattern {source}: built {text:?}")),
                    Some(text) if !pattern.is_match(&text) => {
                        failures.push(format!("pattern {source}: {text:?} does not match"))
                    }
                    Some(text) if max.is_some_and(|m| text.chars().count() as u64 > m) => {
                        failures.push(format!("pattern {source}: {text:?} is longer than {max:?}"))
                    }
                    None if want_built => failures.push(format!("pattern {source}: nothing built")),
                    _ => {}
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// A definition whose rules read fields with formats and patterns.
    fn patterned(id_pattern: &str) -> ResourceDefinition {
        let spec = |id: &str| {
            json!({"type": "object", "required": [id, "when", "owner", "size"], "properties": {
                id: {"type": "string", "pattern": id_pattern, "maxLength": 40},
                "when": {"type": "string", "format": "date-time"},
                "owner": {"type": "string", "format": "email", "maxLength": 64},
                "size": {"x-kubernetes-int-or-string": true, "pattern": "^\\d+%$", "maxLength": 4}}})
        };
        let version = |name: &str, storage: bool, id: &str| {
            json!({"name": name, "served": true, "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"], "properties": {"spec": spec(id)}}}})
        };
        let doc = json!({"apiVersion": "versa.dev/v1", "kind": "ResourceDefinition", "metadata": {"name": "ovens.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "ovens", "kind": "Oven"},
                "versions": [version("v1", true, "id"), version("v2", false, "serial")],
                "conversion": {"strategy": "CEL", "cel": {"conversions": [
                    {"from": "v1", "to": "v2", "fields": [{"path": "spec.serial", "expression": "self.spec.id"}]},
                    {"from": "v2", "to": "v1", "fields": [{"path": "spec.id", "expression": "self.spec.serial"}]}]}}}});
        let mut def = ResourceDefinition::from_document(&doc).unwrap();
        versa_apiextensions::set_defaults(&mut def);
        let errs = versa_apiextensions::validate_definition(&def);
        assert!(errs.is_empty(), "{}", errs.aggregate());
        def
    }

    #[test]
    fn rules_reading_formatted_and_patterned_fields_are_checked() {
        let def = patterned("^OVEN-[0-9]{4}$");
        let schemas = lower_schemas(&def);
        let samples = generate(&def, "v1", &schemas["v1"], 24);
        assert_eq!(samples.len(), 24, "every sample is valid");
        assert!(samples.iter().all(|s| s["spec"]["id"].as_str().is_some_and(|id| id.starts_with("OVEN-"))));
        assert!(
            samples.iter().any(|s| s["spec"]["size"].is_string())
                && samples.iter().any(|s| s["spec"]["size"].is_number())
        );
        let (errs, notes) = check_with_notes(&def);
        assert_eq!((errs.aggregate(), notes), (String::new(), Vec::<String>::new()));
    }

    #[test]
    fn conversions_no_sample_can_be_made_for_are_noted_not_failed() {
        let def = patterned("^a\\bb$");
        let (errs, notes) = check_with_notes(&def);
        assert_eq!(errs.aggregate(), "");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "spec.conversion.cel.conversions[0]: not checked on generated objects: no generated v1 object is valid (the last one: spec.id: Invalid value: "
            ),
            "{notes:?}"
        );
        assert!(notes[1].starts_with("spec.conversion.cel.conversions[1]: not checked on generated objects: no generated v2 object is valid (the last one: spec.serial: Invalid value: "), "{notes:?}");
    }

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
