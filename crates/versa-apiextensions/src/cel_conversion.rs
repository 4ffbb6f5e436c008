//! versa's declarative conversion: `spec.conversion.strategy: CEL` with the rules in
//! `spec.conversion.cel` — the types, and their compilation when a definition is written.
//!
//! ```yaml
//! conversion:
//!   strategy: CEL
//!   cel:
//!     conversions:
//!     - from: v1alpha1
//!       to: v1beta1
//!       fields:
//!       - path: spec.toppings
//!         expression: "self.spec.toppings.distinct().map(n, {'name': n, 'quantity': ...})"
//! ```
//!
//! Each rule sets one field of the destination version (`path`, dotted as kube field paths are)
//! to the value of a CEL `expression` over the whole source object (`self`, typed by the source
//! version's schema, with `apiVersion`, `kind` and `metadata.name` as for validation rules).
//! [`compile`] does, once per definition change, everything that can fail without an object:
//! the versions exist and differ, each (from, to) pair appears once, paths name a field of the
//! destination schema outside `apiVersion`, `kind` and `metadata` and do not overlap, each
//! expression parses and type checks, its result type can be assigned to the destination field
//! ([`fits`]), and its estimated cost ([`versa_cel::estimate_conversion_cost`]) stays within
//! the per-expression limit of validation rules. Every failure is a field error at its path
//! (`spec.conversion.cel.conversions[0].fields[1].expression: Invalid value: ...`), all of them
//! reported. Evaluation is the converter's (`versa-conversion`).
//!
//! Unlike validation rules, conversion rules build objects, so map literals may mix value types
//! (`{'name': n, 'quantity': 2}` is a `map(string, dyn)`): cel-go's homogeneous-literal
//! validator, on for validation rules, is off here — and with it the literal format checks.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use versa_cel::{
    CompileOptions, CompiledExpression, DeclKind, DeclType, STATIC_ESTIMATED_COST_LIMIT, Type, compile_expression,
    estimate_conversion_cost,
};
use versa_schema::Structural;
use versa_schema::field::{BadValue, Error, ErrorList, Path};

use crate::validation::schema::cel::cost_error_message;

/// `spec.conversion.cel`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CelConversion {
    /// The rules from one version to another.
    #[serde(default)]
    pub conversions: Vec<VersionConversion>,
    /// Conversions may lose data: the converter keeps no record of what a round trip would lose
    /// (see `versa-conversion`'s `lossless` module) and the sample checks do not report it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_loss: bool,
}

/// `spec.conversion.cel.conversions[*]`: the rules from one version to another.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionConversion {
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub fields: Vec<FieldRule>,
}

/// `spec.conversion.cel.conversions[*].fields[*]`: one destination field and its expression.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldRule {
    /// The destination field, dotted (`spec.toppings`).
    pub path: String,
    /// A CEL expression over the source object, `self`.
    pub expression: String,
}

/// A definition's conversion rules, compiled.
#[derive(Debug, Default)]
pub struct CompiledConversions {
    /// By (from, to).
    pairs: HashMap<(String, String), CompiledPair>,
    /// The type of `self` of each source version, named [`versa_cel::types::SELF_TYPE_NAME`].
    self_types: HashMap<String, Arc<DeclType>>,
}

/// The rules of one (from, to) pair.
#[derive(Debug)]
pub struct CompiledPair {
    /// Its index in `spec.conversion.cel.conversions`.
    pub index: usize,
    pub fields: Vec<CompiledField>,
}

/// One compiled rule.
#[derive(Debug)]
pub struct CompiledField {
    /// Its index in the pair's `fields`.
    pub index: usize,
    /// The destination path as written.
    pub path: String,
    /// The destination path, one property name a step.
    pub steps: Vec<String>,
    pub expression: CompiledExpression,
}

impl CompiledConversions {
    /// The rules from `from` to `to`, when the definition has some.
    pub fn pair(&self, from: &str, to: &str) -> Option<&CompiledPair> {
        self.pairs.get(&(from.to_owned(), to.to_owned()))
    }

    /// The type of `self` in the rules from `version`.
    pub fn self_type(&self, version: &str) -> Option<&DeclType> {
        self.self_types.get(version).map(Arc::as_ref)
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// The options conversion rules compile with (see the module documentation).
fn compile_options() -> CompileOptions {
    CompileOptions { optional_old_self: false, validate_literals: false }
}

/// Compiles `cel` (found at `path`, `spec.conversion.cel`) for a definition with `versions`,
/// whose lowered schemas are `schemas` (a version without one — or whose schema does not lower,
/// which its own validation reports — gets no type checks). Returns the compiled rules and
/// every error; the rules are only usable when there are none.
pub fn compile(
    cel: &CelConversion,
    versions: &[String],
    schemas: &HashMap<String, Arc<Structural>>,
    path: &Path,
) -> (CompiledConversions, ErrorList) {
    let mut errs = ErrorList::new();
    let mut out = CompiledConversions::default();
    let mut dest_types: HashMap<String, Option<DeclType>> = HashMap::new();
    let convs = path.child("conversions");
    for (i, conv) in cel.conversions.iter().enumerate() {
        let at = convs.index(i);
        let mut ok = true;
        for (field, version) in [("from", &conv.from), ("to", &conv.to)] {
            if version.is_empty() {
                errs.push(Error::required(at.child(field), ""));
                ok = false;
            } else if !versions.contains(version) {
                errs.push(Error::not_supported(at.child(field), version.as_str(), versions));
                ok = false;
            }
        }
        if ok && conv.from == conv.to {
            errs.push(Error::invalid(at.child("to"), conv.to.as_str(), "must differ from from"));
            ok = false;
        }
        let key = (conv.from.clone(), conv.to.clone());
        if ok && out.pairs.contains_key(&key) {
            errs.push(Error::duplicate(
                at.clone(),
                BadValue::Json(serde_json::json!({"from": conv.from, "to": conv.to})),
            ));
            ok = false;
        }
        let self_type = schemas.get(&conv.from).and_then(|s| DeclType::from_structural(s, true)).map(Arc::new);
        let dest = dest_types
            .entry(conv.to.clone())
            .or_insert_with(|| schemas.get(&conv.to).and_then(|s| DeclType::from_structural_named(s, true, &conv.to)));
        let mut fields = Vec::new();
        let mut paths: Vec<(usize, Vec<String>)> = Vec::new();
        for (j, rule) in conv.fields.iter().enumerate() {
            let at = at.child("fields").index(j);
            let steps = match parse_path(&rule.path) {
                Err(detail) => {
                    match rule.path.is_empty() {
                        true => errs.push(Error::required(at.child("path"), "")),
                        false => errs.push(Error::invalid(at.child("path"), rule.path.as_str(), detail)),
                    }
                    None
                }
                Ok(steps) => {
                    if matches!(steps[0].as_str(), "metadata" | "apiVersion" | "kind") {
                        errs.push(Error::forbidden(
                            at.child("path"),
                            "conversion rules may not set metadata, apiVersion or kind: the converter sets apiVersion \
                             and keeps metadata",
                        ));
                        None
                    } else if let Some((k, _)) = paths.iter().find(|(_, p)| overlaps(p, &steps)) {
                        errs.push(Error::invalid(
                            at.child("path"),
                            rule.path.as_str(),
                            format!("overlaps fields[{k}].path {:?}", conv.fields[*k].path),
                        ));
                        None
                    } else {
                        paths.push((j, steps.clone()));
                        Some(steps)
                    }
                }
            };
            // The destination field's type: `None` when the version has no CEL type to check
            // against (no schema), `Some(None)` when the path is not in its schema.
            let dest_field = match (&steps, dest.as_ref()) {
                (Some(steps), Some(dest)) => Some(field_type(dest, steps)),
                _ => None,
            };
            if let (Some(None), Some(_)) = (&dest_field, &steps) {
                errs.push(Error::invalid(
                    at.child("path"),
                    rule.path.as_str(),
                    format!("no such field in the schema of version {}", conv.to),
                ));
            }
            let expr_at = at.child("expression");
            if rule.expression.trim().is_empty() {
                errs.push(Error::required(expr_at, ""));
                continue;
            }
            let Some(self_type) = self_type.as_ref() else { continue };
            let compiled = match compile_expression(&rule.expression, self_type, &compile_options()) {
                Ok(c) => c,
                Err(e) => {
                    errs.push(Error::invalid(expr_at, rule.expression.as_str(), format!("compilation failed: {e}")));
                    continue;
                }
            };
            if let Some(Some(field)) = &dest_field
                && !fits(&compiled.result_type, field)
            {
                errs.push(Error::invalid(
                    expr_at.clone(),
                    rule.expression.as_str(),
                    format!(
                        "the expression's type {} cannot be assigned to {} of version {}, whose type is {}",
                        quoted(&compiled.result_type),
                        rule.path,
                        conv.to,
                        quoted(&field.cel_type())
                    ),
                ));
                continue;
            }
            let cost = estimate_conversion_cost(&compiled, self_type).max;
            if cost > STATIC_ESTIMATED_COST_LIMIT {
                errs.push(Error::forbidden(
                    expr_at,
                    cost_error_message("estimated conversion rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
                ));
                continue;
            }
            if let Some(steps) = steps {
                fields.push(CompiledField { index: j, path: rule.path.clone(), steps, expression: compiled });
            }
        }
        if ok {
            if let Some(t) = self_type {
                out.self_types.entry(conv.from.clone()).or_insert(t);
            }
            out.pairs.insert(key, CompiledPair { index: i, fields });
        }
    }
    (out, errs)
}

/// The lowered schema of each version of `def` that has one that lowers (what the server
/// hands the converter; validation reports the others).
pub fn lower_schemas(def: &crate::ResourceDefinition) -> HashMap<String, Arc<Structural>> {
    def.spec
        .versions
        .iter()
        .filter_map(|v| {
            let props = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
            Some((v.name.clone(), Arc::new(Structural::lower(props).ok()?)))
        })
        .collect()
}

/// The property names of a dotted field path, or why it is not one.
fn parse_path(path: &str) -> Result<Vec<String>, &'static str> {
    let path = path.strip_prefix('.').unwrap_or(path);
    if path.is_empty() {
        return Err("must be a dotted field path, such as spec.toppings");
    }
    let steps: Vec<String> = path.split('.').map(str::to_owned).collect();
    if steps.iter().any(String::is_empty) {
        return Err("must be a dotted field path, such as spec.toppings");
    }
    Ok(steps)
}

/// Whether one path is the other or lies below it.
fn overlaps(a: &[String], b: &[String]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// The declared type at `steps` below `root`: properties of objects, values of maps. `None`
/// when the schema has no such field.
fn field_type<'a>(root: &'a DeclType, steps: &[String]) -> Option<&'a DeclType> {
    let mut node = root;
    for step in steps {
        node = match &node.kind {
            DeclKind::Object(o) => &o.fields.values().find(|f| f.property == *step)?.ty,
            DeclKind::Map { value } => value,
            _ => return None,
        };
    }
    Some(node)
}

/// `'type'`, as cel-go quotes types in its messages.
fn quoted(t: &Type) -> String {
    format!("'{t}'")
}

/// Whether a value of CEL type `result` can be written into a field declared as `dest`. What
/// the checker could not type (`dyn`) fits anywhere — the destination schema validates it when
/// it is written. `optional(T)` fits where `T` does (none leaves the field unset), `null` fits
/// anywhere (it unsets the field too). Maps fit objects (a map literal is how a rule builds an
/// object) when their values fit some field; objects (a field of `self` copied over) fit when
/// every field they share with the destination fits. JSON numbers take ints; strings take
/// timestamps, durations and bytes, which are written in their string formats.
pub fn fits(result: &Type, dest: &DeclType) -> bool {
    match result {
        Type::Dyn | Type::Error | Type::Param(_) | Type::Null => return true,
        Type::Optional(inner) => return fits(inner, dest),
        _ => {}
    }
    let key_ok = |k: &Type| matches!(k, Type::String | Type::Dyn | Type::Param(_));
    match (&dest.kind, result) {
        (DeclKind::Scalar(Type::Dyn), _) => true,
        (DeclKind::Scalar(Type::Double), Type::Int | Type::Uint | Type::Double) => true,
        (DeclKind::Scalar(Type::Int), Type::Int | Type::Uint) => true,
        (DeclKind::Scalar(Type::Timestamp | Type::Duration | Type::Bytes), Type::String) => true,
        (DeclKind::Scalar(t), r) => t.is_exact(r),
        (DeclKind::List { elem, .. }, Type::List(e)) => fits(e, elem),
        (DeclKind::Map { value }, Type::Map(k, v)) => key_ok(k) && fits(v, value),
        (DeclKind::Map { value }, Type::Object(o)) => o.fields.values().all(|f| fits(&f.ty.cel_type(), value)),
        (DeclKind::Object(o), Type::Map(k, v)) => key_ok(k) && o.fields.values().any(|f| fits(v, &f.ty)),
        (DeclKind::Object(o), Type::Object(src)) => {
            let dest_fields: BTreeSet<&str> = o.fields.values().map(|f| f.property.as_str()).collect();
            src.fields.values().filter(|f| dest_fields.contains(f.property.as_str())).all(|f| {
                o.fields.values().find(|d| d.property == f.property).is_some_and(|d| fits(&f.ty.cel_type(), &d.ty))
            })
        }
        _ => false,
    }
}
