//! Running a version's `x-kubernetes-validations` on every create and update, as
//! kube-apiserver's `schema/cel.Validator.Validate` does.
//!
//! [`SchemaRules::compile`] compiles every rule (and `messageExpression`) of a lowered structural
//! schema once, when the definition is loaded; rules that do not compile were reported when the
//! definition was written and are skipped here. Subtrees without rules are not kept, so a walk
//! only visits nodes that lead to a rule.
//!
//! [`SchemaRules::check`] walks the object and the schema together:
//!
//! - `self` is bound at the rule's node; rules on list items and map values run once per
//!   element; `null` values are not validated (a rule on the parent must check presence).
//! - `oldSelf` is the old value at the correlated path: object properties and map values by key
//!   (map types granular and atomic), items of `x-kubernetes-list-type: map` lists by their keys;
//!   nothing below set and atomic lists. A transition rule (one using `oldSelf`) is skipped when
//!   there is no old value, unless it has `optionalOldSelf` (then `oldSelf` is
//!   `optional.none()`).
//! - One [`CostTracker`] per object, with [`RUNTIME_CEL_COST_BUDGET`]: running out of it, or a
//!   rule over the per-call limit, stops the walk with kube's error.
//! - A failed rule reports `<path>[.<fieldPath>]: Invalid value: [<scalar>: ]<message>` — the
//!   value is omitted for objects and arrays; the message is the `messageExpression` result
//!   (trimmed; falling back when it fails, is empty, has line breaks or exceeds 5 KiB), else
//!   `message`, else `failed rule: <rule>`; `reason` picks the error type.
//! - Ratcheting (kube's `CRDValidationRatcheting`, GA): on updates, a failure of a rule that does
//!   not use `oldSelf` at a node whose value is unchanged (or, below an uncorrelatable list, whose
//!   nearest correlated ancestor is unchanged) is a warning, not an error.
//!
//! - Cost of a passing walk: the field path and the ratcheting comparison of old and new
//!   values are worked out only when a rule fails; a node's rules share one activation; when
//!   they read many fields of `self`, those are looked up once, in one merge with the object
//!   (`value::field_index`); children are found by merging the schema's properties with the
//!   object's when the rules are on many of them.
//!
//! Not here: rules inside `allOf` branches, which a structural schema cannot have (kube's
//! validator also walks them, for schemas that are not CRDs'), and the metrics.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use versa_schema::Structural;
use versa_schema::field::{BadValue, Error, ErrorList, ErrorType, Path, go_quote};
use versa_schema::structural::Type as SchemaType;

use crate::eval::{Activation, eval};
use crate::runtime::{CostTracker, EvalError, RUNTIME_CEL_COST_BUDGET};
use crate::types::{DeclKind, DeclType};
use crate::value::{Value, field_index};
use crate::{CompileOptions, CompiledExpression, compile_message_expression, compile_rule};

/// The longest `messageExpression` result used (`celconfig.MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES: usize = 5 * 1024;

/// The compiled rules of one version's schema.
#[derive(Clone, Debug, Default)]
pub struct SchemaRules {
    /// `None` when the schema has no rules anywhere.
    root: Option<Node>,
}

/// What a validation of one object found.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub errors: ErrorList,
    /// Ratcheted failures (kube sends them as `Warning` headers).
    pub warnings: Vec<String>,
}

/// A schema node that has rules at or below it.
#[derive(Clone, Debug)]
struct Node {
    /// The schema's `type` as written (kube's `sts.Type`, the value of budget errors).
    type_name: String,
    /// The CEL type of `self`; present when the node has rules.
    decl: Option<DeclType>,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Node>,
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    /// Map values can be correlated with the old ones (map type granular or atomic).
    map_correlatable: bool,
    /// List-map keys when the node is an `x-kubernetes-list-type: map` list.
    list_map_keys: Option<Vec<String>>,
    /// When the node's rules read many fields of `self`: its object type's field positions
    /// ordered by property name, to look all of them up at once (`value::field_index`).
    self_index: Option<Vec<(String, usize)>>,
}

#[derive(Clone, Debug)]
struct Rule {
    source: String,
    message: String,
    reason: Option<ErrorType>,
    /// `fieldPath`, normalized to a relative field path (`a.b[key]`).
    field_path: Option<String>,
    optional_old_self: bool,
    compiled: CompiledExpression,
    message_expression: Option<(String, CompiledExpression)>,
}

impl Rule {
    /// kube's `ruleErrorString`: the message if any, else the rule.
    fn error_string(&self) -> &str {
        if self.message.is_empty() { self.source.trim() } else { self.message.trim() }
    }

    /// kube's `ruleMessageOrDefault`.
    fn message_or_default(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.error_string())
        } else {
            self.message.trim().to_owned()
        }
    }
}

impl SchemaRules {
    /// Compiles every rule of `root` (the lowered schema of one version).
    pub fn compile(root: &Structural) -> SchemaRules {
        SchemaRules { root: Node::build(root, true) }
    }

    /// Whether there is any rule to run.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Runs the rules on `new` (with `old` on updates) and returns the errors.
    pub fn validate(&self, new: &Json, old: Option<&Json>) -> ErrorList {
        self.check(new, old).errors
    }

    /// Runs the rules on `new` (with `old` on updates): errors, and ratcheted failures.
    pub fn check(&self, new: &Json, old: Option<&Json>) -> Outcome {
        let mut walk = Walk { tracker: CostTracker::new(RUNTIME_CEL_COST_BUDGET), out: Outcome::default() };
        if let Some(root) = &self.root {
            // A stop only ends the walk early; what it found is in `walk.out`.
            let _stopped = walk.node(root, &At { parent: None, step: PathStep::Root, new, old });
        }
        walk.out
    }
}

impl Node {
    fn build(s: &Structural, is_root: bool) -> Option<Node> {
        let properties: BTreeMap<String, Node> =
            s.properties.iter().filter_map(|(k, p)| Node::build(p, false).map(|n| (k.clone(), n))).collect();
        let additional =
            s.additional_properties.as_ref().and_then(|ap| ap.schema()).and_then(|ap| Node::build(ap, false));
        let items = s.items.as_deref().and_then(|i| Node::build(i, false));
        let mut decl = None;
        let mut rules = Vec::new();
        if !s.validations.is_empty() {
            decl = DeclType::from_structural(s, is_root || s.embedded_resource);
            if let Some(d) = &decl {
                rules = s
                    .validations
                    .iter()
                    .filter_map(|r| {
                        let spec = RuleSpec {
                            rule: &r.rule,
                            message: r.message.as_deref(),
                            message_expression: r.message_expression.as_deref(),
                            reason: r.reason.as_deref(),
                            field_path: r.field_path.as_deref(),
                            optional_old_self: r.optional_old_self == Some(true),
                        };
                        compile_one(spec, d, s)
                    })
                    .collect();
            }
        }
        if rules.is_empty() && properties.is_empty() && additional.is_none() && items.is_none() {
            return None;
        }
        let self_reads: usize = rules.iter().map(|r| r.compiled.plan.self_field_reads(&r.compiled.ast.expr)).sum();
        let self_index = match decl.as_ref().map(|d| &d.kind) {
            // One merge of the object with its fields costs about as much as a lookup per four
            // fields.
            Some(DeclKind::Object(ty)) if self_reads >= 2 + ty.fields.len() / 4 => {
                let mut by_property: Vec<(String, usize)> =
                    ty.fields.values().enumerate().map(|(slot, f)| (f.property.clone(), slot)).collect();
                by_property.sort();
                Some(by_property)
            }
            _ => None,
        };
        Some(Node {
            type_name: s.type_name.clone(),
            decl,
            rules,
            properties,
            additional: additional.map(Box::new),
            items: items.map(Box::new),
            map_correlatable: matches!(s.map_type.as_deref(), None | Some("granular" | "atomic")),
            list_map_keys: (s.type_ == SchemaType::Array && s.list_type.as_deref() == Some("map"))
                .then(|| s.list_map_keys.clone()),
            self_index,
        })
    }
}

/// A rule's fields, as `x-kubernetes-validations` has them.
struct RuleSpec<'a> {
    rule: &'a str,
    message: Option<&'a str>,
    message_expression: Option<&'a str>,
    reason: Option<&'a str>,
    field_path: Option<&'a str>,
    optional_old_self: bool,
}

/// Compiles one rule; `None` when it does not compile (already reported for the definition).
fn compile_one(r: RuleSpec<'_>, decl: &DeclType, s: &Structural) -> Option<Rule> {
    let opts = CompileOptions { optional_old_self: r.optional_old_self, ..CompileOptions::default() };
    let compiled = compile_rule(r.rule, decl, &opts).ok()?;
    let message_expression = r
        .message_expression
        .filter(|e| !e.trim().is_empty())
        .and_then(|e| compile_message_expression(e, decl, &opts).ok().map(|c| (e.to_owned(), c)));
    Some(Rule {
        source: r.rule.to_owned(),
        message: r.message.unwrap_or_default().to_owned(),
        reason: r.reason.and_then(ErrorType::from_reason),
        field_path: r.field_path.filter(|p| !p.is_empty()).and_then(|p| normalize_field_path(p, s)),
        optional_old_self: r.optional_old_self,
        compiled,
        message_expression,
    })
}

struct Walk {
    tracker: CostTracker,
    out: Outcome,
}

/// Where the walk is: the value here and its old value, and how it was reached. The field path
/// and the ratcheting decision are worked out from it only when a rule fails, so that a passing
/// walk builds no path and compares no subtrees.
struct At<'w> {
    parent: Option<&'w At<'w>>,
    step: PathStep<'w>,
    new: &'w Json,
    /// The correlated old value (`None` on creates and below uncorrelatable lists).
    old: Option<&'w Json>,
}

#[derive(Clone, Copy)]
enum PathStep<'w> {
    Root,
    Property(&'w str),
    Index(usize),
    Key(&'w str),
}

impl<'w> At<'w> {
    fn child(&'w self, step: PathStep<'w>, new: &'w Json, old: Option<&'w Json>) -> At<'w> {
        At { parent: Some(self), step, new, old }
    }

    /// The field path of this value.
    fn path(&self) -> Path {
        let parent = || self.parent.map_or_else(Path::none, At::path);
        match self.step {
            PathStep::Root => Path::none(),
            PathStep::Property(name) => parent().child(name),
            PathStep::Index(i) => parent().index(i),
            PathStep::Key(k) => parent().key(k),
        }
    }

    /// Whether failures of non-transition rules here are ratcheted: the nearest correlated
    /// value at or above this node equals its old value.
    fn ratchet(&self) -> bool {
        match self.old {
            Some(old) => old == self.new,
            None => self.parent.is_some_and(At::ratchet),
        }
    }
}

/// The walk stops (budget spent, or a rule over the per-call limit).
struct Stop;

impl Walk {
    fn node(&mut self, n: &Node, at: &At<'_>) -> Result<(), Stop> {
        let (new, old) = (at.new, at.old);
        if new.is_null() {
            return Ok(());
        }
        if let Some(decl) = &n.decl
            && !n.rules.is_empty()
        {
            self.rules(n, decl, at)?;
        }
        match new {
            Json::Array(items) => {
                let Some(item_node) = &n.items else { return Ok(()) };
                let olds = old.and_then(Json::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (&n.list_map_keys, olds) {
                        (Some(keys), Some(olds)) => olds.iter().find(|o| same_keys(keys, item, o)),
                        _ => None,
                    };
                    self.node(item_node, &at.child(PathStep::Index(i), item, old_item))?;
                }
            }
            Json::Object(map) => {
                let olds = old.and_then(Json::as_object).filter(|_| n.map_correlatable);
                if let Some(value_node) = &n.additional {
                    for (k, v) in map {
                        let old_v = olds.and_then(|o| o.get(k));
                        self.node(value_node, &at.child(PathStep::Key(k), v, old_v))?;
                    }
                }
                // The schema's properties, the object's and the old object's are all sorted by
                // name: when the rules are on many of the properties, one merge finds their
                // values, instead of a search per property in each object.
                if json_maps_are_sorted() && n.properties.len().saturating_mul(4) >= map.len() {
                    let mut values = map.iter().peekable();
                    let mut old_values = olds.map(|o| o.iter().peekable());
                    for (k, prop) in &n.properties {
                        let Some(v) = advance_to(&mut values, k) else { continue };
                        let old_v = old_values.as_mut().and_then(|o| advance_to(o, k));
                        self.node(prop, &at.child(PathStep::Property(k), v, old_v))?;
                    }
                } else {
                    for (k, prop) in &n.properties {
                        let Some(v) = map.get(k) else { continue };
                        let old_v = olds.and_then(|o| o.get(k));
                        self.node(prop, &at.child(PathStep::Property(k), v, old_v))?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn rules(&mut self, n: &Node, decl: &DeclType, at_node: &At<'_>) -> Result<(), Stop> {
        let (new, old) = (at_node.new, at_node.old);
        let type_value = || BadValue::from(n.type_name.as_str());
        if self.tracker.remaining_budget() == 0 {
            self.out.errors.push(Error::invalid(at_node.path(), type_value(), budget_message()));
            return Err(Stop);
        }
        // `self` and `oldSelf` as values (views: converting an object, list or map reads nothing
        // yet), `self` with its fields looked up at once when the rules read many.
        let index = match (&n.self_index, new, &decl.kind) {
            (Some(by_property), Json::Object(m), DeclKind::Object(ty)) => {
                field_index(m, ty, by_property, json_maps_are_sorted())
            }
            _ => None,
        };
        let self_value = Value::from_json(new, decl).map(|v| match (v, &index) {
            (Value::Object(o), Some(ix)) => Value::Object(o.with_index(ix)),
            (v, _) => v,
        });
        let old_value = old.map(|o| Value::from_json(o, decl)).transpose();
        // The activations of the node's rules, built once for all of them: `oldSelf` plain, and
        // as an optional for rules with `optionalOldSelf`.
        let mut activations: [Option<Result<Activation<'_>, EvalError>>; 2] = [None, None];
        for rule in &n.rules {
            if rule.compiled.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let activation = activations[usize::from(rule.optional_old_self)].get_or_insert_with(|| {
                Ok(Activation::for_rule_values(self_value.clone()?, old_value.clone()?, rule.optional_old_self))
            });
            let result = match activation {
                Ok(act) => eval(&rule.compiled, act, &mut self.tracker),
                Err(e) => Err(e.clone()),
            };
            let path = || at_node.path();
            let activation = match result {
                Ok(Value::Bool(true)) => continue,
                Ok(_) => match &*activation {
                    Ok(act) => act,
                    // Without an activation there is no value either.
                    Err(_) => continue,
                },
                Err(EvalError::BudgetExceeded) => {
                    self.out.errors.push(Error::invalid(path(), type_value(), budget_message()));
                    return Err(Stop);
                }
                Err(e @ EvalError::CostLimitExceeded) => {
                    self.out.errors.push(Error::invalid(
                        path(),
                        type_value(),
                        format!(
                            "'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                            rule.error_string()
                        ),
                    ));
                    return Err(Stop);
                }
                Err(e @ EvalError::NoSuchOverload { .. }) => {
                    self.out.errors.push(Error::invalid(
                        path(),
                        type_value(),
                        format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature \
                             for rule: {}",
                            rule.error_string()
                        ),
                    ));
                    continue;
                }
                Err(e) => {
                    self.out.errors.push(Error::invalid(
                        path(),
                        type_value(),
                        format!("{e} evaluating rule: {}", rule.error_string()),
                    ));
                    continue;
                }
            };
            let at = match &rule.field_path {
                Some(fp) => path().child(fp),
                None => path(),
            };
            let ratcheted = !rule.compiled.uses_old_self && at_node.ratchet();
            let mut detail = None;
            if let Some((src, expr)) = &rule.message_expression {
                match eval(expr, activation, &mut self.tracker) {
                    Ok(Value::String(s)) => {
                        let s = s.trim();
                        if !s.is_empty() && s.len() <= MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES && !s.contains('\n')
                        {
                            detail = Some(s.to_owned());
                        }
                    }
                    Err(EvalError::BudgetExceeded) => {
                        self.report(
                            Error::invalid(
                                at,
                                type_value(),
                                "messageExpression evaluation failed due to running out of cost budget, no further \
                                 validation rules will be run",
                            ),
                            ratcheted,
                        );
                        return Err(Stop);
                    }
                    Err(EvalError::CostLimitExceeded) => {
                        self.report(
                            Error::invalid(
                                at,
                                type_value(),
                                format!(
                                    "no further validation rules will be run due to call cost exceeds limit for \
                                     messageExpression: {}",
                                    go_quote(src)
                                ),
                            ),
                            ratcheted,
                        );
                        return Err(Stop);
                    }
                    // Other failures fall back to the message (kube logs them).
                    _ => {}
                }
            }
            let detail = detail.unwrap_or_else(|| rule.message_or_default());
            let value =
                if matches!(n.type_name.as_str(), "object" | "array") { BadValue::Omit } else { BadValue::from(new) };
            let err = match rule.reason {
                Some(ErrorType::Forbidden) => Error::forbidden(at, detail),
                Some(ErrorType::Required) => Error::required(at, detail),
                Some(ErrorType::Duplicate) => Error::duplicate(at, value),
                _ => Error::invalid(at, value, detail),
            };
            self.report(err, ratcheted);
        }
        Ok(())
    }

    fn report(&mut self, err: Error, ratcheted: bool) {
        if ratcheted {
            self.out.warnings.push(err.to_string());
        } else {
            self.out.errors.push(err);
        }
    }
}

fn budget_message() -> &'static str {
    "validation failed due to running out of cost budget, no further validation rules will be run"
}

/// Whether `serde_json::Map` iterates in key order. It does unless a crate in the build enables
/// serde_json's `preserve_order` feature (insertion order), which nothing here controls.
fn json_maps_are_sorted() -> bool {
    static SORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SORTED.get_or_init(|| {
        let mut m = serde_json::Map::new();
        m.insert("b".to_owned(), Json::Null);
        m.insert("a".to_owned(), Json::Null);
        m.keys().next().is_some_and(|k| k == "a")
    })
}

/// The value under `key` in a sorted iteration of an object's entries, advancing past smaller
/// keys (the keys asked for come in increasing order).
fn advance_to<'j>(entries: &mut std::iter::Peekable<serde_json::map::Iter<'j>>, key: &str) -> Option<&'j Json> {
    while let Some((k, v)) = entries.peek() {
        match k.as_str().cmp(key) {
            std::cmp::Ordering::Less => {
                entries.next();
            }
            std::cmp::Ordering::Equal => {
                let v = *v;
                entries.next();
                return Some(v);
            }
            std::cmp::Ordering::Greater => return None,
        }
    }
    None
}

/// Whether two list-map items have the same key values (absent keys compare equal to absent).
fn same_keys(keys: &[String], a: &Json, b: &Json) -> bool {
    keys.iter().all(|k| a.get(k) == b.get(k))
}

/// A rule's `fieldPath` (`.a.b['c.d']`), resolved against the schema, as a relative field path
/// (`a.b[c.d]` when `b` is a map). `None` when it does not resolve (definition validation has
/// refused such a rule already).
fn normalize_field_path(json_path: &str, schema: &Structural) -> Option<String> {
    let target = crate::field_path::valid_field_path(json_path, schema, true).ok()?;
    (!target.path.is_none()).then(|| target.path.as_str().to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(schema: Json) -> SchemaRules {
        let props = serde_json::from_value(schema).unwrap();
        SchemaRules::compile(&Structural::lower(&props).unwrap())
    }

    fn texts(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn replicas() -> SchemaRules {
        rules(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be greater than or equal to minReplicas."},
                {"rule": "self.replicas <= self.maxReplicas"},
            ],
            "properties": {"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"},
                           "maxReplicas": {"type": "integer"}}}}}))
    }

    #[test]
    fn object_rules_omit_the_value() {
        let r = replicas();
        let bad = json!({"spec": {"minReplicas": 0, "replicas": 20, "maxReplicas": 10}});
        assert_eq!(
            texts(&r.validate(&bad, None)),
            ["spec: Invalid value: failed rule: self.replicas <= self.maxReplicas"]
        );
        let good = json!({"spec": {"minReplicas": 0, "replicas": 5, "maxReplicas": 10}});
        assert!(r.validate(&good, None).is_empty());
        assert!(rules(json!({"type": "object"})).is_empty());
    }

    #[test]
    fn transition_rules_need_an_old_value() {
        let r = rules(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "image": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]},
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer",
                        "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}}}}}}}}));
        let old = json!({"spec": {"image": "a", "items": [{"name": "x", "v": 2}]}});
        assert!(r.validate(&old, None).is_empty());
        let new = json!({"spec": {"image": "b", "items": [{"name": "y", "v": 0}, {"name": "x", "v": 1}]}});
        assert_eq!(
            texts(&r.validate(&new, Some(&old))),
            [
                r#"spec.image: Invalid value: "b": immutable"#,
                "spec.items[1].v: Invalid value: 1: failed rule: self >= oldSelf",
            ]
        );
    }

    #[test]
    fn message_expression_reason_and_field_path() {
        let r = rules(json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.x <= 3", "messageExpression": "'x is ' + string(self.x)", "fieldPath": ".x"},
                {"rule": "self.x <= 3", "messageExpression": "''", "message": "fallback"},
                {"rule": "has(self.y)", "reason": "FieldValueRequired", "fieldPath": ".y"},
            ],
            "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}}}}));
        assert_eq!(
            texts(&r.validate(&json!({"spec": {"x": 4}}), None)),
            [
                "spec.x: Invalid value: x is 4",
                "spec: Invalid value: fallback",
                "spec.y: Required value: failed rule: has(self.y)",
            ]
        );
    }

    #[test]
    fn unchanged_values_ratchet() {
        let r = rules(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"x": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self <= 3"}]}}},
            "status": {"type": "object", "properties": {"n": {"type": "integer"}}}}}));
        let old = json!({"spec": {"x": 4}, "status": {"n": 1}});
        let new = json!({"spec": {"x": 4}, "status": {"n": 2}});
        let out = r.check(&new, Some(&old));
        assert!(out.errors.is_empty());
        assert_eq!(out.warnings, ["spec.x: Invalid value: 4: failed rule: self <= 3"]);
    }
}
