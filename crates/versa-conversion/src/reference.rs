//! The CEL strategy's lossless conversion as it was first written, kept to prove that the
//! cheaper one (`Converter::convert_cel`: only the compared fields copied, the way back
//! written into a copy of the body, the converted object defaulted only when something was
//! lost, one CEL activation per object) gives the very same objects and annotations, byte for
//! byte, on generated objects of several definitions — with and without `managedFields`, with
//! annotations that match, that are stale and that were written for another conversion, by
//! one hop and through the storage version, failing rules included (issue 18).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use serde_json::{Map, Value, json};
use versa_apiextensions::cel_conversion::lower_schemas;
use versa_apiextensions::{ResourceDefinition, set_defaults, validate_definition};
use versa_cel::{Activation, CostTracker, RUNTIME_CEL_COST_BUDGET, eval};

use crate::cel::{CelConverter, CelRuleError, Hop};
use crate::gv::{GroupVersion, gvk_string, str_field};
use crate::{ConversionError, Converter, Options, Strategy, lossless, samples};

impl Converter {
    /// `convert_sync` by the CEL strategy as first written.
    fn convert_as_first_written(&self, obj: Value, to: &str) -> Result<Value, ConversionError> {
        let Strategy::Cel { rules, lossless } = &self.strategy else { panic!("not CEL") };
        let desired = GroupVersion { group: &self.group, version: to }.to_string();
        if str_field(&obj, "apiVersion") == desired {
            return Ok(obj);
        }
        let from = GroupVersion::parse(str_field(&obj, "apiVersion")).version.to_owned();
        self.convert_cel_as_first_written(rules, *lossless, obj, &from, to)
    }

    fn convert_cel_as_first_written(
        &self,
        rules: &CelConverter,
        lossless: bool,
        mut obj: Value,
        from: &str,
        to: &str,
    ) -> Result<Value, ConversionError> {
        let kept = lossless::take(&mut obj);
        if !lossless {
            return self.hops_as_first_written(rules, obj, from, to);
        }
        let source = obj.clone();
        let mut converted = self.hops_as_first_written(rules, obj, from, to)?;
        if let Some(data) = kept {
            lossless::restore(&data, &source, &mut converted, from, to);
        }
        let back = match self.hops_as_first_written(rules, converted.clone(), to, from) {
            Ok(mut back) => {
                self.normalise(&mut back, from);
                back
            }
            Err(_) => Value::Object(Map::new()),
        };
        let defaulted;
        let seen = match self.schemas.get(to).filter(|s| s.below.defaults) {
            Some(schema) => {
                let mut c = converted.clone();
                versa_schema::pipeline::on_read(&mut c, schema);
                defaulted = c;
                &defaulted
            }
            None => &converted,
        };
        if let Some(text) = record_as_first_written(&source, seen, &back, from, to) {
            lossless::annotate(&mut converted, text);
        }
        Ok(converted)
    }

    fn hops_as_first_written(
        &self,
        rules: &CelConverter,
        mut obj: Value,
        from: &str,
        to: &str,
    ) -> Result<Value, ConversionError> {
        for step in rules.route(from, to).map_err(ConversionError::Rules)?.steps() {
            let desired = GroupVersion { group: &self.group, version: step.version }.to_string();
            match step.hop {
                Hop::Rules(pair) => {
                    apply_as_first_written(rules, pair, &mut obj, &desired).map_err(ConversionError::Rules)?
                }
                Hop::None => crate::set_api_version(&mut obj, &desired),
            }
            self.coerce(&mut obj, step.version);
        }
        Ok(obj)
    }
}

fn apply_as_first_written(
    rules: &CelConverter,
    pair: &versa_apiextensions::cel_conversion::CompiledPair,
    obj: &mut Value,
    desired: &str,
) -> Result<(), CelRuleError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let from = api_version.rsplit('/').next().unwrap_or("");
    let failed = |reason: String| {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        CelRuleError::Failed { gvk: gvk_string(api_version, kind), reason }
    };
    let Some(self_type) = rules.rules.self_type(from) else {
        return Err(failed(format!("no schema for version {from}")));
    };
    let mut tracker = CostTracker::new(RUNTIME_CEL_COST_BUDGET);
    let mut results = Vec::with_capacity(pair.fields.len());
    for field in &pair.fields {
        let rule = || {
            format!(
                "spec.conversion.cel.conversions[{}].fields[{}] (path {}, expression {:?})",
                pair.index, field.index, field.path, field.expression.source
            )
        };
        let activation =
            Activation::for_rule(obj, None, self_type, false).map_err(|e| failed(format!("{}: {e}", rule())))?;
        let value = eval(&field.expression, &activation, &mut tracker)
            .and_then(|v| versa_cel::json::to_json(&v))
            .map_err(|e| failed(format!("{}: {e}", rule())))?;
        results.push((field, value));
    }
    crate::cel::write(obj, results, desired);
    Ok(())
}

fn record_as_first_written(source: &Value, converted: &Value, back: &Value, from: &str, to: &str) -> Option<String> {
    let (Some(src), Some(back)) = (source.as_object(), back.as_object()) else { return None };
    let mut fields = Map::new();
    let keys = src.keys().chain(back.keys().filter(|k| !src.contains_key(*k)));
    for key in keys {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") || src.get(key) == back.get(key) {
            continue;
        }
        let value = src.get(key).cloned().unwrap_or(Value::Null);
        fields.insert(key.clone(), json!({"sha256": fingerprint_as_first_written(converted.get(key)), "value": value}));
    }
    if fields.is_empty() {
        return None;
    }
    Some(json!({"version": from, "at": to, "fields": fields}).to_string())
}

fn fingerprint_as_first_written(v: Option<&Value>) -> String {
    use ring::digest::{Context, SHA256};
    fn feed(ctx: &mut Context, v: &Value) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                ctx.update(b"{");
                for k in keys {
                    feed(ctx, &Value::String(k.clone()));
                    ctx.update(b":");
                    if let Some(x) = m.get(k) {
                        feed(ctx, x);
                    }
                    ctx.update(b",");
                }
                ctx.update(b"}");
            }
            Value::Array(items) => {
                ctx.update(b"[");
                for x in items {
                    feed(ctx, x);
                    ctx.update(b",");
                }
                ctx.update(b"]");
            }
            scalar => ctx.update(scalar.to_string().as_bytes()),
        }
    }
    let mut ctx = Context::new(&SHA256);
    match v {
        None => ctx.update(b"absent"),
        Some(v) => feed(&mut ctx, v),
    }
    ctx.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn yaml(name: &str) -> Value {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn definition(doc: &Value) -> ResourceDefinition {
    let mut def = ResourceDefinition::from_document(doc).unwrap();
    set_defaults(&mut def);
    let errs = validate_definition(&def);
    assert!(errs.is_empty(), "{}: {}", def.name(), errs.aggregate());
    def
}

/// Versions with one schema (the serving benchmark's Widget), rules copying two fields.
fn widgets() -> Value {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "cronSpec": {"type": "string"}, "image": {"type": "string"},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}})
    };
    let rules = |from: &str, to: &str| {
        json!({"from": from, "to": to, "fields": [
            {"path": "spec.image", "expression": "self.?spec.?image"},
            {"path": "spec.replicas", "expression": "self.?spec.?replicas"}]})
    };
    json!({"apiVersion": "versa.dev/v1", "kind": "ResourceDefinition", "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version("v1", true), version("v2", false)],
            "conversion": {"strategy": "CEL", "cel": {"conversions": [rules("v1", "v2"), rules("v2", "v1")]}}}})
}

/// Defaults on both sides, a map written into by key, metadata read (whole, into a field
/// that keeps unknown fields), an embedded resource, a status the rules move, and a version
/// `v3` reached through the storage version.
fn gadgets() -> Value {
    let spec = |name_field: &str, default_size: i64| {
        json!({"type": "object", "required": ["notes"], "properties": {
            name_field: {"type": "string", "maxLength": 20},
            "size": {"type": "integer", "minimum": 0, "maximum": 10, "default": default_size},
            "labels": {"type": "object", "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 20}},
            "meta": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "inner": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "notes": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 10}}}})
    };
    let status = |phase_default: &str| json!({"type": "object", "properties": {"phase": {"type": "string", "maxLength": 10, "default": phase_default}, "ready": {"type": "boolean"}}});
    let version = |name: &str, storage: bool, spec: Value, status: Value| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"spec": spec, "status": status}}}})
    };
    json!({"apiVersion": "versa.dev/v1", "kind": "ResourceDefinition", "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            version("v1", true, spec("name", 1), status("Pending")),
            version("v2", false, spec("title", 2), status("New")),
            version("v3", false, json!({"type": "object", "properties": {"label": {"type": "string", "maxLength": 20}}}),
                json!({"type": "object", "properties": {"ready": {"type": "boolean"}}})),
        ],
        "conversion": {"strategy": "CEL", "cel": {"conversions": [
            {"from": "v1", "to": "v2", "fields": [
                {"path": "spec.title", "expression": "self.?spec.?name"},
                {"path": "spec.labels.origin", "expression": "self.metadata.name"},
                {"path": "spec.meta", "expression": "self.metadata"},
                {"path": "status.phase", "expression": "self.?status.?phase.orValue('') == 'Pending' ? optional.none() : self.?status.?phase"}]},
            {"from": "v2", "to": "v1", "fields": [
                {"path": "spec.name", "expression": "self.?spec.?title"},
                {"path": "spec.notes", "expression": "self.spec.notes.filter(n, n != 'a')"}]},
            {"from": "v1", "to": "v3", "fields": [
                {"path": "spec.label", "expression": "self.?spec.?name"}]},
            {"from": "v3", "to": "v1", "fields": [
                {"path": "spec.name", "expression": "self.?spec.?label"}]},
        ]}}}})
}

/// Metadata as the server writes it, with `managedFields` (`tracked`) or without.
fn as_stored(obj: &mut Value, i: usize, tracked: bool) {
    let api_version = obj["apiVersion"].clone();
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    meta.insert("resourceVersion".into(), json!((100 + i).to_string()));
    meta.insert("generation".into(), json!(1 + i as i64 % 3));
    meta.insert("creationTimestamp".into(), json!("2026-11-26T18:22:00Z"));
    meta.insert("labels".into(), json!({"app": "test", "n": i.to_string()}));
    if i % 4 == 1 {
        meta.insert("annotations".into(), json!({"note": "kept"}));
    }
    if tracked {
        meta.insert(
            "managedFields".into(),
            json!([{"manager": "test", "operation": "Update", "apiVersion": api_version,
                "time": "2026-11-26T18:22:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:n": {}}}, "f:spec": {".": {}}}}]),
        );
    }
}

/// What [`check`] compared: conversions, those whose result carries the annotation, those
/// that failed.
#[derive(Debug, Default)]
struct Compared {
    conversions: usize,
    annotated: usize,
    failed: usize,
}

/// Every object converted to every other version both ways, then what that gave converted on
/// (its annotation restored, stale, or for another conversion), compared.
fn check(doc: &Value, per_version: usize) -> Compared {
    let def = definition(doc);
    let schemas = lower_schemas(&def);
    let converter = Converter::new(&def, schemas.clone(), &Options::default()).unwrap();
    let versions: Vec<String> = def.spec.versions.iter().map(|v| v.name.clone()).collect();
    let compared = std::cell::RefCell::new(Compared::default());
    let same = |what: &str, obj: &Value, to: &str| -> Option<Value> {
        let new = converter.convert_sync(obj.clone(), to).map_err(|e| e.to_string());
        let old = converter.convert_as_first_written(obj.clone(), to).map_err(|e| e.to_string());
        assert_eq!(new, old, "{}: {what}: {obj} to {to}", def.name());
        let mut c = compared.borrow_mut();
        c.conversions += 1;
        match &new {
            Ok(v) if v.pointer("/metadata/annotations").is_some_and(|a| a.get(lossless::ANNOTATION).is_some()) => {
                c.annotated += 1
            }
            Ok(_) => {}
            Err(_) => c.failed += 1,
        }
        new.ok()
    };
    for from in &versions {
        let mut objects = samples::generate(&def, from, &schemas[from], per_version);
        for (i, obj) in objects.iter_mut().enumerate() {
            as_stored(obj, i, i % 2 == 0);
            versa_schema::pipeline::on_read(obj, &schemas[from]);
        }
        for obj in &objects {
            for to in versions.iter().filter(|v| *v != from) {
                let Some(there) = same("converted", obj, to) else { continue };
                for again in &versions {
                    // Back where it came from (its annotation restored), and on to the others
                    // (written for another conversion).
                    let mut read = there.clone();
                    versa_schema::pipeline::on_read(&mut read, &schemas[to]);
                    if again != to {
                        same("converted again", &read, again);
                    }
                }
                // Written at `to` since: the annotation is stale.
                let mut changed = there.clone();
                if let Some(spec) = changed.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.clear();
                    versa_schema::pipeline::on_read(&mut changed, &schemas[to]);
                    same("changed since", &changed, from);
                }
            }
        }
    }
    compared.into_inner()
}

#[test]
fn the_pizza_converts_as_first_written() {
    let c = check(&yaml("pizza-cel-definition.yaml"), 60);
    assert!(c.conversions > 150 && c.annotated >= 10, "{c:?}");
}

#[test]
fn things_convert_as_first_written_including_a_failing_rule() {
    let file = yaml("cel-cases.yaml");
    let c = check(&file["definitions"]["things"], 40);
    assert!(c.conversions > 300 && c.annotated > 50 && c.failed > 5, "{c:?}");
}

#[test]
fn widgets_of_one_schema_convert_as_first_written() {
    let c = check(&widgets(), 40);
    assert!(c.conversions > 100, "{c:?}");
}

#[test]
fn gadgets_convert_as_first_written() {
    let c = check(&gadgets(), 60);
    assert!(c.conversions > 300 && c.annotated > 50, "{c:?}");
}

#[test]
fn without_allow_loss_too() {
    let mut doc = yaml("pizza-cel-definition.yaml");
    doc["spec"]["conversion"]["cel"]["allowLoss"] = json!(true);
    let c = check(&doc, 30);
    assert!(c.conversions > 60 && c.annotated == 0, "{c:?}");
}
