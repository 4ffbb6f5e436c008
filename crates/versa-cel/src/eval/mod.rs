//! Evaluation of a checked expression, with Kubernetes' runtime cost metering.
//!
//! [`eval`] walks the AST (macros are already comprehensions) the way cel-go's interpreter
//! does: `&&` and `||` absorb errors commutatively (`false && error` is `false`, `error ||
//! true` is `true`), the ternary evaluates one branch, `or`/`orValue` evaluate their argument
//! only when needed, and every other call evaluates all its arguments and then dispatches on
//! their runtime values (the private `stdlib` module). Errors are values inside comprehensions (an
//! `all()` step may fail and a later `false` still decides), so comprehension variables hold
//! `Result`s.
//!
//! What does not depend on the input is not worked out here but once, when the expression is
//! compiled (the [`Plan`]): literal values, which function a call dispatches to (the operators
//! without comparing names or building an argument vector), whether a name is a variable, and
//! the schema field of each field selection, so that `self.x` is one lookup in the JSON object
//! (none when the validator has indexed `self`'s fields). The loop conditions and steps of
//! `all()` and `exists()` are decided from the accumulator without walking them. Every shortcut
//! charges exactly what the general evaluation charges; a node without a plan step is evaluated
//! the general way.
//!
//! # Cost
//!
//! Every step is charged as cel-go's `interpreter/runtimecost.go` charges it: identifiers and field
//! selections 1 (as cel-go's attributes: less where it only resolves them, see `attribute`),
//! literals and type names (constants to cel-go's planner) 0, list and map literals 10 and 30,
//! logical operators and the ternary nothing, calls 1 unless a size-dependent rule applies
//! (string equality and ordering, `+` on strings, `contains`, `startsWith`/`endsWith`, `matches`,
//! `in` on a list). The [`CostTracker`]
//! stops the evaluation as soon as the cost of this call exceeds the per-call limit
//! ([`PER_CALL_LIMIT`](crate::runtime::PER_CALL_LIMIT) for CRD rules: `operation cancelled: actual
//! cost limit exceeded`) or the remaining per-object budget (`validation failed due to running out
//! of cost budget`), so an expensive rule never runs to completion. Recursion follows the AST,
//! whose height the parser bounds; loops run over finite ranges and every iteration costs at least
//! 1.

use std::sync::Arc;

use crate::CompiledExpression;
use crate::ast::{Expr, ExprId, ExprKind, MapEntry};
use crate::plan::{Plan, Special, Step, literal, qualified_name, type_name};
use crate::runtime::{CallContext, CostTracker, EvalError, LiteralPatterns, no_overload};
use crate::stdlib::{self, Builtin};
use crate::types::Type;
use crate::value::{Map, Str, Value, equals};

mod activation;
mod attribute;
mod comprehension;

pub use activation::Activation;

/// Evaluates `compiled` with the variables of `activation`. The cost of the run is charged to
/// `tracker` (and deducted from its remaining budget, also when the run fails).
///
/// The expression is borrowed for as long as the result: field selections the checker could
/// resolve read the field's type from the compiled expression.
pub fn eval<'a>(
    compiled: &'a CompiledExpression,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    // The fast path, when the expression has one and it gets through (see `fast.rs`); the
    // general evaluation otherwise, from the start.
    let limit = tracker.per_call_limit.min(tracker.remaining_budget);
    if let Some(program) = &compiled.fast
        && let Ok((result, cost)) = program.run(activation, &compiled.patterns, limit)
    {
        #[cfg(debug_assertions)]
        {
            let mut general = tracker.clone();
            let value = run_general(compiled, activation, &mut general);
            debug_assert!(
                matches!(value, Ok(Value::Bool(b)) if b == result) && general.call_cost == cost,
                "fast and general evaluation differ for {}: {result} at cost {cost}, {value:?} at cost {}",
                compiled.source,
                general.call_cost
            );
        }
        tracker.call_cost = cost;
        tracker.remaining_budget = tracker.remaining_budget.saturating_sub(cost);
        return Ok(Value::Bool(result));
    }
    run_general(compiled, activation, tracker)
}

/// [`eval`] the general way.
pub(crate) fn run_general<'a>(
    compiled: &'a CompiledExpression,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    let plan = &compiled.plan;
    run(
        &compiled.ast.expr,
        plan,
        Some(plan),
        Some(&compiled.checked.types),
        Some(&compiled.patterns),
        activation,
        None,
        tracker,
    )
}

/// An object whose fields are computed when an expression first selects them: Kubernetes'
/// composited `variables` of admission policies (a lazy map in cel-go). The implementation
/// evaluates a field at most once per evaluation context and keeps its result (or error); the
/// cost of computing it is its own to account for, not the selecting expression's.
pub trait LazyFields<'a> {
    /// Whether the object has field `name` (`has(variables.x)` computes nothing).
    fn has(&self, name: &str) -> bool;
    /// The value of field `name`, computed with `activation` (and this same object bound as
    /// the lazy variable) on first use.
    fn field(&self, name: &str, activation: &Activation<'a>) -> Result<Value<'a>, EvalError>;
}

/// [`eval`] with variable `name` bound to `lazy`: every selection `name.f` asks `lazy` for
/// field `f` (and `has(name.f)` whether it has one). Only selections are supported: `name`
/// alone, or `name.?f`, is not bound. Always the general evaluation.
pub fn eval_with_lazy<'a>(
    compiled: &'a CompiledExpression,
    activation: &Activation<'a>,
    name: &str,
    lazy: &dyn LazyFields<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    let plan = &compiled.plan;
    run(
        &compiled.ast.expr,
        plan,
        Some(plan),
        Some(&compiled.checked.types),
        Some(&compiled.patterns),
        activation,
        Some((name, lazy)),
        tracker,
    )
}

/// The value of a constant expression (or the error that refuses its program): how a
/// [`Plan`] folds constants, handed to [`Plan::build`] since the evaluator is built on plans.
pub(crate) fn constant_value(e: &Expr) -> Result<Value<'static>, EvalError> {
    let act: Activation<'static> = Activation::new();
    eval_expr(e, &act, &mut CostTracker::default())
}

/// Evaluates a parsed expression (checked or not: dispatch is on runtime values).
pub fn eval_expr<'a>(
    expr: &Expr,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    let plan = Plan::build(expr, &activation.names(), None, &constant_value);
    run(expr, &plan, None, None, None, activation, None, tracker)
}

#[allow(clippy::too_many_arguments, reason = "one private entry point for every way in")]
fn run<'a>(
    expr: &Expr,
    plan: &Plan,
    fields: Option<&'a Plan>,
    types: Option<&[Type]>,
    patterns: Option<&LiteralPatterns>,
    activation: &Activation<'a>,
    lazy: Option<(&str, &dyn LazyFields<'a>)>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    tracker.call_cost = 0;
    let mut interp = Interp {
        act: activation,
        lazy,
        scopes: Vec::new(),
        calls: CallContext::new(tracker, patterns, types),
        plan,
        fields,
        types,
    };
    let result = interp.eval(expr);
    let tracker = interp.calls.tracker;
    tracker.remaining_budget = tracker.remaining_budget.saturating_sub(tracker.call_cost);
    result
}

type Res<'a> = Result<Value<'a>, EvalError>;

pub(crate) struct Interp<'a, 'e> {
    act: &'e Activation<'a>,
    /// The variable whose fields are computed on selection, with what computes them.
    lazy: Option<(&'e str, &'e dyn LazyFields<'a>)>,
    scopes: Vec<(&'e str, Res<'a>)>,
    /// What the functions it calls may use: the cost meter, the patterns, the checked types.
    calls: CallContext<'e>,
    /// What was worked out when the expression was compiled.
    plan: &'e Plan,
    /// The same plan, when it lives as long as the values (its resolved fields' types are the
    /// types of the values they select).
    fields: Option<&'a Plan>,
    /// The checker's types by node id, when the expression was checked.
    types: Option<&'e [Type]>,
}

impl<'a, 'e> Interp<'a, 'e> {
    fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.calls.charge(cost)
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scopes.iter().any(|(n, _)| *n == name) || self.act.get(name).is_some()
    }

    fn eval(&mut self, e: &'e Expr) -> Res<'a> {
        if let Step::Constant(v) = self.plan.step(e.id) {
            return Ok(v.clone());
        }
        match &e.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => self.leaf(e),
            ExprKind::Select { operand, field, test_only } => self.eval_select(e, operand, field, *test_only, false),
            ExprKind::Call { function, target, args } => self.eval_call(e.id, function, target.as_deref(), args),
            ExprKind::List { elements, optional_indices } => {
                let mut out = Vec::with_capacity(elements.len());
                for (i, el) in elements.iter().enumerate() {
                    let v = self.eval(el)?;
                    if optional_indices.contains(&i) {
                        match v {
                            Value::Optional(Some(inner)) => out.push((*inner).clone()),
                            Value::Optional(None) => {}
                            _ => return Err(no_overload("optional list element")),
                        }
                    } else {
                        out.push(v);
                    }
                }
                self.charge(10)?;
                Ok(Value::list(out))
            }
            ExprKind::Map { entries } => self.eval_map(entries),
            ExprKind::Struct { type_name, fields } => {
                // Only a checked expression constructs messages: the checker accepted the type.
                let declared =
                    self.types.and_then(|t| t.get(e.id as usize)).is_some_and(|t| matches!(t, Type::Object(_)));
                if !declared {
                    return Err(EvalError::new(format!("unknown type: {}", type_name.trim_start_matches('.'))));
                }
                // A message is a map of its set fields (cel-go's runtime charges a struct 40).
                let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(fields.len());
                for f in fields {
                    let v = self.eval(&f.value)?;
                    let v = if f.optional {
                        match v {
                            Value::Optional(Some(inner)) => (*inner).clone(),
                            Value::Optional(None) => continue,
                            _ => return Err(no_overload("optional field")),
                        }
                    } else {
                        v
                    };
                    out.push((Value::string(f.field.clone()), v));
                }
                self.charge(40)?;
                Ok(Value::Map(Map::Owned(Arc::new(out))))
            }
            ExprKind::Comprehension(c) => self.eval_comprehension(c),
        }
    }

    /// A literal or an identifier. Operators and field selections evaluate their operands with
    /// [`Interp::operand`], which inlines this instead of going through `eval`.
    #[inline(always)]
    fn leaf(&mut self, e: &'e Expr) -> Res<'a> {
        match &e.kind {
            ExprKind::Literal(l) => match self.plan.step(e.id) {
                // A string literal of a plan that outlives the values is borrowed, not shared.
                Step::Literal(Value::String(lit)) => match self.fields.map(|p| p.step(e.id)) {
                    Some(Step::Literal(Value::String(lit))) => Ok(Value::String(Str::Borrowed(lit))),
                    _ => Ok(Value::String(lit.clone())),
                },
                Step::Literal(v) => Ok(v.clone()),
                _ => Ok(literal(l)),
            },
            ExprKind::Ident(name) => self.ident(e, name, true),
            _ => self.eval(e),
        }
    }

    /// The identifier `e` (`name`): a type name (a constant, free), or a variable, charged 1
    /// when `charge` (evaluated rather than only resolved as an attribute).
    #[inline(always)]
    fn ident(&mut self, e: &'e Expr, name: &str, charge: bool) -> Res<'a> {
        // A type name is a constant to cel-go's planner (the checker resolved it), and
        // constants cost nothing.
        let type_name = match self.plan.step(e.id) {
            Step::TypeName(t) => Some(*t),
            Step::None if !self.is_variable(name.trim_start_matches('.')) => type_name(name.trim_start_matches('.')),
            _ => None,
        };
        if let Some(t) = type_name {
            return Ok(Value::Type(Str::Borrowed(t)));
        }
        if charge {
            self.charge(1)?;
        }
        match self.plan.step(e.id) {
            Step::Scope(i) => match self.scopes.get(*i) {
                Some((_, v)) => v.clone(),
                None => self.lookup(name.trim_start_matches('.')),
            },
            Step::SelfVar => match &self.act.self_value {
                Some(v) => Ok(v.clone()),
                None => self.lookup(name.trim_start_matches('.')),
            },
            Step::OldSelfVar => match &self.act.old_self {
                Some(v) => Ok(v.clone()),
                None => self.lookup(name.trim_start_matches('.')),
            },
            _ => self.lookup(name.trim_start_matches('.')),
        }
    }

    /// Evaluates an operand: literals and identifiers in place, anything else through `eval`.
    #[inline(always)]
    fn operand(&mut self, e: &'e Expr) -> Res<'a> {
        match &e.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => self.leaf(e),
            _ => self.eval(e),
        }
    }

    fn lookup(&self, name: &str) -> Res<'a> {
        if let Some((_, v)) = self.scopes.iter().rev().find(|(n, _)| *n == name) {
            return v.clone();
        }
        if let Some(v) = self.act.get(name) {
            return Ok(v.clone());
        }
        match type_name(name) {
            Some(t) => Ok(Value::Type(Str::Borrowed(t))),
            None => Err(EvalError::new(format!("no such attribute(s): {name}"))),
        }
    }

    fn eval_map(&mut self, entries: &'e [MapEntry]) -> Res<'a> {
        let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::with_capacity(entries.len());
        for entry in entries {
            let k = self.eval(&entry.key)?;
            let v = self.eval(&entry.value)?;
            if !matches!(k, Value::Bool(_) | Value::Int(_) | Value::Uint(_) | Value::String(_)) {
                return Err(EvalError::new(format!("unsupported key type: {}", &*k.type_name())));
            }
            let v = if entry.optional {
                match v {
                    Value::Optional(Some(inner)) => (*inner).clone(),
                    Value::Optional(None) => continue,
                    _ => return Err(no_overload("optional map entry")),
                }
            } else {
                v
            };
            for (existing, _) in &out {
                if equals(existing, &k)? {
                    return Err(EvalError::new(format!("Failed with repeated key: {k}")));
                }
            }
            out.push((k, v));
        }
        self.charge(30)?;
        Ok(Value::Map(Map::Owned(Arc::new(out))))
    }
    /// Evaluates `e`, returning a CEL error as a value and a cancellation as an error.
    fn eval_catching(&mut self, e: &'e Expr) -> Result<Res<'a>, EvalError> {
        match self.eval(e) {
            Err(err) if err.is_cancellation() => Err(err),
            other => Ok(other),
        }
    }

    fn eval_call(&mut self, id: ExprId, function: &str, target: Option<&'e Expr>, args: &'e [Expr]) -> Res<'a> {
        if let (None, [x, k]) = (target, args)
            && let Some(attribute::AttributeCall::Index { optional }) = self.attribute_call(id, function)
        {
            return self.eval_index(x, k, optional, false);
        }
        let step = self.plan.step(id);
        if let Step::Builtin(b) = step {
            return self.eval_builtin(id, *b, target, args);
        }
        let special = match step {
            Step::Special(s) => Some(*s),
            Step::None => Special::of(function),
            _ => None,
        };
        match (special, target, args) {
            (Some(s @ (Special::And | Special::Or)), None, [l, r]) => {
                return self.eval_logic(s == Special::And, l, r);
            }
            (Some(Special::Conditional), None, [cond, t, f]) => {
                return match self.eval(cond)? {
                    Value::Bool(true) => self.branch(t),
                    Value::Bool(false) => self.branch(f),
                    _ => Err(no_overload(function)),
                };
            }
            (Some(Special::NotStrictlyFalse), None, [a]) => {
                let v = self.eval_catching(a)?;
                self.charge(1)?;
                return Ok(Value::Bool(!matches!(v, Ok(Value::Bool(false)))));
            }
            (Some(Special::OptSelect), None, [operand, field]) => {
                return self.eval_opt_select(operand, field, false);
            }
            (Some(Special::OptOr | Special::OptOrValue), Some(t), [alt]) => {
                // cel-go evaluates `or` and `orValue` itself, and charges nothing for them.
                let v = self.eval(t)?;
                return match v {
                    Value::Optional(Some(inner)) if function == "or" => Ok(Value::Optional(Some(inner))),
                    Value::Optional(Some(inner)) => Ok((*inner).clone()),
                    Value::Optional(None) => {
                        let alt = self.eval(alt)?;
                        if function == "or" && !matches!(alt, Value::Optional(_)) {
                            return Err(no_overload(function));
                        }
                        Ok(alt)
                    }
                    _ => Err(no_overload(function)),
                };
            }
            _ => {}
        }
        let qualified: Option<std::borrow::Cow<'e, str>> = match step {
            Step::Qualified(name) => Some(std::borrow::Cow::Borrowed(name)),
            Step::Call => None,
            // `optional.of(x)` and friends: a namespaced global function, not a member call.
            _ => match target.and_then(qualified_name) {
                Some(q) if !self.is_variable(q.split('.').next().unwrap_or("")) => {
                    Some(std::borrow::Cow::Owned(format!("{q}.{function}")))
                }
                _ => None,
            },
        };
        let mut values = Vec::with_capacity(args.len() + 1);
        let member = match (target, &qualified) {
            (Some(t), None) => {
                values.push(self.eval(t)?);
                true
            }
            _ => false,
        };
        for a in args {
            values.push(self.eval(a)?);
        }
        let name = qualified.as_deref().unwrap_or(function);
        self.calls.call_id = id;
        stdlib::call(&mut self.calls, name, member, values)
    }

    /// A call of a builtin: its operands (the receiver first) are evaluated into an array
    /// rather than a vector, and dispatch is by the resolved function.
    fn eval_builtin(&mut self, id: ExprId, b: Builtin, target: Option<&'e Expr>, args: &'e [Expr]) -> Res<'a> {
        let operands: [Value<'a>; 2];
        let n = match (target, args) {
            (None, [x]) | (Some(x), []) => {
                operands = [self.operand(x)?, Value::Null];
                1
            }
            (None, [x, y]) | (Some(x), [y]) => {
                let x = self.operand(x)?;
                operands = [x, self.operand(y)?];
                2
            }
            _ => {
                let mut values = Vec::with_capacity(args.len() + 1);
                if let Some(t) = target {
                    values.push(self.eval(t)?);
                }
                for a in args {
                    values.push(self.eval(a)?);
                }
                self.calls.call_id = id;
                return stdlib::call_builtin(&mut self.calls, b, &values);
            }
        };
        self.calls.call_id = id;
        stdlib::call_builtin(&mut self.calls, b, &operands[..n])
    }

    fn eval_logic(&mut self, is_and: bool, l: &'e Expr, r: &'e Expr) -> Res<'a> {
        let lv = self.eval_catching(l)?;
        self.combine_logic(is_and, lv, r)?
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{Value as Json, json};

    use super::*;
    use crate::types::DeclType;
    use crate::{CompileOptions, compile_expression};

    /// The result (as text) and the cost of `compiled` on `self_json`, evaluated with the
    /// compiled plan (`planned`) or with none at all (every node the general way).
    fn run_both(source: &str, schema: serde_json::Value, self_json: &Json) -> [(String, u64); 2] {
        let structural = versa_schema::Structural::from_json(&schema).unwrap();
        let decl = DeclType::from_structural(&structural, false).unwrap();
        let compiled = compile_expression(source, &decl, &CompileOptions::default()).unwrap();
        let act = Activation::for_rule(self_json, Some(self_json), &decl, false).unwrap();
        let mut out = Vec::new();
        for plan in [Some(&compiled.plan), None] {
            let empty = compiled.plan.folding_only();
            let mut tracker = CostTracker::default();
            let types = Some(compiled.checked.types.as_slice());
            let r = run(
                &compiled.ast.expr,
                plan.unwrap_or(&empty),
                plan,
                types,
                Some(&compiled.patterns),
                &act,
                None,
                &mut tracker,
            );
            out.push((format!("{r:?}"), tracker.last_cost()));
        }
        [out[0].clone(), out[1].clone()]
    }

    /// A plan only saves work: every expression gives the same result (or error) and costs the
    /// same with and without one — the quick loop conditions and steps, the resolved fields and
    /// functions included.
    #[test]
    fn a_plan_changes_neither_results_nor_costs() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "integer"}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "o": {"type": "object", "properties": {"a": {"type": "integer"}, "x-y": {"type": "string"}}},
            "ios": {"x-kubernetes-int-or-string": true},
        }});
        let value = json!({"n": 3, "s": "abc", "l": [1, 2, 0], "m": {"k": "v", "j": "w"},
                           "o": {"a": 1, "x-y": "z"}, "ios": "x"});
        for source in [
            "self.n > 2 && self.s.startsWith('a')",
            "self.l.all(x, x > 0)",
            "self.l.exists(x, x == 0)",
            "self.l.all(x, 10 / x > 1)",
            "self.l.exists(x, 10 / x == 5)",
            // An error in the accumulator, absorbed (or not) by a later element.
            "[0, 1].all(x, 10 / x > 50)",
            "[0, 1].all(x, 10 / x > 5)",
            "[0, 1].exists(x, 10 / x == 10)",
            "self.l.exists_one(x, x > 1)",
            "self.l.filter(x, x > 0).map(x, x * 2) == [2, 4]",
            "self.m.all(k, self.m[k].size() == 1)",
            "self.l.all(i, v, i < 5 && v < 5)",
            "self.m.transformMap(k, v, v + k).size() == 2",
            "has(self.o.a) && self.o.x__dash__y == 'z' && !has(self.m.missing)",
            "self.?o.?a.orValue(0) == 1",
            "type(self.ios) == string && type(self.n) == int",
            "[self.n * self.n].all(x, x + x == 18)",
            "self.l.sortBy(x, -x)[0] == 2",
            "self.o == oldSelf.o && self.l == oldSelf.l",
            "'k' in self.m && 2 in self.l",
            "self.s.matches('^[a-c]+$') && self.s.find('b') == 'b'",
            "optional.of(self.n).hasValue() && optional.none().orValue(1) == 1",
            "self.ios > 1",
            // Attributes: ternary branches and attribute indexes are only resolved.
            "(self.n > 2 ? self.o : oldSelf.o).a == 1 && self.l[self.o.a] == 2",
            "[5, 6][self.o.a] == 6 && self.m[self.n > 0 ? 'k' : 'j'] == 'v'",
            "self.?m.?missing.orValue('') == '' && self.l[?7].orValue(0) == 0",
        ] {
            let [planned, general] = run_both(source, schema.clone(), &value);
            assert_eq!(planned, general, "{source}");
        }
    }
}
