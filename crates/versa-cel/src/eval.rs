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
//! # Cost
//!
//! Every step is charged as cel-go's `interpreter/runtimecost.go` charges it: identifiers and
//! field selections 1, literals 0, list and map literals 10 and 30, logical operators and the
//! ternary nothing, calls 1 unless a size-dependent rule applies (string equality and ordering,
//! `+` on strings, `contains`, `startsWith`/`endsWith`, `matches`, `in` on a list). The
//! [`CostTracker`] stops the evaluation as soon as the cost of this call exceeds the per-call
//! limit ([`PER_CALL_LIMIT`] for CRD rules: `operation cancelled: actual cost limit exceeded`)
//! or the remaining per-object budget (`validation failed due to running out of cost budget`),
//! so an expensive rule never runs to completion. Recursion follows the AST, whose height the
//! parser bounds; loops run over finite ranges and every iteration costs at least 1.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use regex::Regex;
use serde_json::Value as Json;

use crate::ast::{ACCUMULATOR_VAR, Comprehension, Expr, ExprId, ExprKind, Literal, MAP_INSERT, MapEntry, op};
use crate::ext::regex::LiteralPatterns;
use crate::types::{DeclType, Type};
use crate::value::{Map, MapKey, Str, Value, equals};
use crate::{CompiledExpression, OLD_SELF_VAR, SELF_VAR};

/// The per-call cost limit of a CRD validation rule (`celconfig.PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The cost budget for all rules of one object (`celconfig.RuntimeCELCostBudget`).
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;

/// Why an evaluation failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// A CEL runtime error (`no such key: x`, `division by zero`, ...).
    #[error("{0}")]
    Runtime(Arc<str>),
    /// No overload of `function` accepts the arguments' runtime types.
    #[error("no such overload")]
    NoSuchOverload { function: String },
    /// The call's cost exceeded the per-call limit.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostLimitExceeded,
    /// The call's cost exceeded what is left of the per-object budget.
    #[error("validation failed due to running out of cost budget, no further validation rules will be run")]
    BudgetExceeded,
}

impl EvalError {
    pub fn new(msg: impl Into<String>) -> EvalError {
        EvalError::Runtime(msg.into().into())
    }

    /// Cancellations stop the evaluation; no operator absorbs them.
    pub fn is_cancellation(&self) -> bool {
        matches!(self, EvalError::CostLimitExceeded | EvalError::BudgetExceeded)
    }
}

pub(crate) fn no_overload(function: &str) -> EvalError {
    EvalError::NoSuchOverload { function: function.to_owned() }
}

/// The variables of one evaluation.
#[derive(Clone, Debug, Default)]
pub struct Activation<'a> {
    vars: Vec<(String, Value<'a>)>,
}

impl<'a> Activation<'a> {
    pub fn new() -> Activation<'a> {
        Activation::default()
    }

    /// Binds a rule's variables: `self`, and `oldSelf` when there is an old value — as
    /// `optional_type(T)` when the rule has `optionalOldSelf` (none for a create).
    pub fn for_rule(
        self_json: &'a Json,
        old_self: Option<&'a Json>,
        decl: &'a DeclType,
        optional_old_self: bool,
    ) -> Result<Activation<'a>, EvalError> {
        let mut a = Activation::new();
        a.bind(SELF_VAR, Value::from_json(self_json, decl)?);
        match (old_self, optional_old_self) {
            (Some(old), false) => a.bind(OLD_SELF_VAR, Value::from_json(old, decl)?),
            (Some(old), true) => {
                a.bind(OLD_SELF_VAR, Value::Optional(Some(Arc::new(Value::from_json(old, decl)?))));
            }
            (None, true) => a.bind(OLD_SELF_VAR, Value::Optional(None)),
            (None, false) => {}
        }
        Ok(a)
    }

    /// Binds (or rebinds) a variable.
    pub fn bind(&mut self, name: &str, value: Value<'a>) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.vars.push((name.to_owned(), value)),
        }
    }

    fn get(&self, name: &str) -> Option<&Value<'a>> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Runtime cost accounting for one object: the per-call limit, what is left of the per-object
/// budget, and the cost of the last call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostTracker {
    per_call_limit: u64,
    remaining_budget: u64,
    call_cost: u64,
}

impl CostTracker {
    /// A tracker with Kubernetes' CRD limits: [`PER_CALL_LIMIT`] per rule and
    /// `remaining_budget` for the rest of the object.
    pub fn new(remaining_budget: u64) -> CostTracker {
        CostTracker::with_limits(PER_CALL_LIMIT, remaining_budget)
    }

    pub fn with_limits(per_call_limit: u64, remaining_budget: u64) -> CostTracker {
        CostTracker { per_call_limit, remaining_budget, call_cost: 0 }
    }

    /// The cost of the last (or current) evaluation.
    pub fn last_cost(&self) -> u64 {
        self.call_cost
    }

    /// What is left of the per-object budget after the evaluations so far.
    pub fn remaining_budget(&self) -> u64 {
        self.remaining_budget
    }

    fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.call_cost = self.call_cost.saturating_add(cost);
        if self.call_cost > self.per_call_limit {
            return Err(EvalError::CostLimitExceeded);
        }
        if self.call_cost > self.remaining_budget {
            return Err(EvalError::BudgetExceeded);
        }
        Ok(())
    }
}

impl Default for CostTracker {
    fn default() -> Self {
        CostTracker::new(RUNTIME_CEL_COST_BUDGET)
    }
}

/// Evaluates `compiled` with the variables of `activation`. The cost of the run is charged to
/// `tracker` (and deducted from its remaining budget, also when the run fails).
pub fn eval<'a>(
    compiled: &CompiledExpression,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    run(&compiled.ast.expr, Some(&compiled.checked.types), Some(&compiled.patterns), activation, tracker)
}

/// Evaluates a parsed expression (checked or not: dispatch is on runtime values).
pub fn eval_expr<'a>(
    expr: &Expr,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    run(expr, None, None, activation, tracker)
}

fn run<'a>(
    expr: &Expr,
    types: Option<&[Type]>,
    patterns: Option<&LiteralPatterns>,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    tracker.call_cost = 0;
    let mut interp =
        Interp { act: activation, scopes: Vec::new(), tracker, patterns, regexes: HashMap::new(), types, call_id: 0 };
    let result = interp.eval(expr);
    let cost = interp.tracker.call_cost;
    interp.tracker.remaining_budget = interp.tracker.remaining_budget.saturating_sub(cost);
    result
}

type Res<'a> = Result<Value<'a>, EvalError>;

pub(crate) struct Interp<'a, 'e> {
    act: &'e Activation<'a>,
    scopes: Vec<(&'e str, Res<'a>)>,
    tracker: &'e mut CostTracker,
    /// The expression's literal patterns, compiled with it.
    patterns: Option<&'e LiteralPatterns>,
    /// The other `matches`, `find` and `findAll` patterns of this evaluation.
    regexes: HashMap<String, Regex>,
    /// The checker's types by node id, when the expression was checked.
    types: Option<&'e [Type]>,
    /// The node id of the call being dispatched.
    call_id: ExprId,
}

/// Names usable as type values.
fn type_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "int" => "int",
        "uint" => "uint",
        "double" => "double",
        "bool" => "bool",
        "string" => "string",
        "bytes" => "bytes",
        "null_type" => "null_type",
        "dyn" => "dyn",
        "list" => "list",
        "map" => "map",
        "type" => "type",
        "optional_type" => "optional_type",
        "google.protobuf.Timestamp" => "google.protobuf.Timestamp",
        "google.protobuf.Duration" => "google.protobuf.Duration",
        other => crate::ext::type_named(other)?,
    })
}

/// `a.b.c` as a dotted name, when the expression is only identifiers and selections.
fn qualified_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n.trim_start_matches('.').to_owned()),
        ExprKind::Select { operand, field, test_only: false } => {
            qualified_name(operand).map(|q| format!("{q}.{field}"))
        }
        _ => None,
    }
}

impl<'a, 'e> Interp<'a, 'e> {
    pub(crate) fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.tracker.charge(cost)
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scopes.iter().any(|(n, _)| *n == name) || self.act.get(name).is_some()
    }

    fn eval(&mut self, e: &'e Expr) -> Res<'a> {
        match &e.kind {
            ExprKind::Literal(l) => Ok(literal(l)),
            ExprKind::Ident(name) => {
                self.charge(1)?;
                self.lookup(name.trim_start_matches('.'))
            }
            ExprKind::Select { operand, field, test_only } => self.eval_select(e, operand, field, *test_only),
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
            ExprKind::Struct { type_name, .. } => {
                Err(EvalError::new(format!("unknown type: {}", type_name.trim_start_matches('.'))))
            }
            ExprKind::Comprehension(c) => self.eval_comprehension(c),
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

    fn eval_select(&mut self, e: &'e Expr, operand: &'e Expr, field: &str, test_only: bool) -> Res<'a> {
        if !test_only
            && let Some(q) = qualified_name(e)
            && let Some(t) = type_name(&q)
            && qualified_name(operand).is_some_and(|o| !self.is_variable(&o))
        {
            self.charge(1)?;
            return Ok(Value::Type(Str::Borrowed(t)));
        }
        let v = self.eval(operand)?;
        self.charge(1)?;
        if test_only {
            return has_field(&v, field).map(Value::Bool);
        }
        select(v, field)
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

    fn eval_comprehension(&mut self, c: &'e Comprehension) -> Res<'a> {
        let range = self.eval(&c.iter_range)?;
        let two = c.iter_var2.is_some();
        match &range {
            Value::List(l) => {
                // Elements are converted as the loop reaches them.
                let accu = self.eval(&c.accu_init)?;
                self.fold(c, accu, l.len(), |i| {
                    let v = l.get(i)?;
                    Ok(if two { (Value::Int(i as i64), Some(v)) } else { (v, None) })
                })
            }
            Value::Map(m) if two => {
                let entries = m.entry_refs();
                let accu = self.eval(&c.accu_init)?;
                self.fold(c, accu, entries.len(), |i| entries.get(i).map(|(k, v)| (k, Some(v))))
            }
            Value::Map(m) => {
                let keys = m.keys();
                let accu = self.eval(&c.accu_init)?;
                self.fold(c, accu, keys.len(), |i| match keys.get(i) {
                    Some(k) => Ok((k.clone(), None)),
                    None => Err(EvalError::new(format!("index out of bounds: {i}"))),
                })
            }
            _ => Err(no_overload("comprehension range")),
        }
    }

    /// Runs the loop of `c` over `len` items; `item(i)` gives the value of the iteration
    /// variable (and of the second one, for two-variable comprehensions).
    fn fold(
        &mut self,
        c: &'e Comprehension,
        accu: Value<'a>,
        len: usize,
        item: impl Fn(usize) -> Result<(Value<'a>, Option<Value<'a>>), EvalError>,
    ) -> Res<'a> {
        let base = self.scopes.len();
        self.scopes.push((c.accu_var.as_str(), Ok(accu)));
        // The keys of a `transformMap` accumulator, tracked while it grows in place.
        let mut seen: Option<HashSet<MapKey>> = None;
        let result = (|| {
            for i in 0..len {
                let (v, v2) = item(i)?;
                self.scopes.push((c.iter_var.as_str(), Ok(v)));
                if let (Some(name), Some(v2)) = (&c.iter_var2, v2) {
                    self.scopes.push((name.as_str(), Ok(v2)));
                }
                let cond = self.eval_catching(&c.loop_condition)?;
                if let Ok(Value::Bool(false)) = cond {
                    self.scopes.truncate(base + 1);
                    break;
                }
                let step = self.eval_step(&c.loop_step, &c.accu_var, &mut seen)?;
                self.scopes.truncate(base + 1);
                if let Some(slot) = self.scopes.last_mut() {
                    slot.1 = step;
                }
            }
            // The iteration variables are out of scope in the result.
            self.eval(&c.result)
        })();
        self.scopes.truncate(base);
        result
    }

    /// Evaluates a loop step. The steps that build a list or a map in the accumulator — `map()`,
    /// `filter()` and `transformList()`'s `@result + [x]`, `transformMap()`'s
    /// `cel.@mapInsert(@result, ...)`, each possibly behind a filter's `?:` — add to it in
    /// place, so that building the result is linear rather than quadratic. They are charged
    /// what the general evaluation would charge.
    fn eval_step(
        &mut self,
        step: &'e Expr,
        accu_var: &str,
        seen: &mut Option<HashSet<MapKey>>,
    ) -> Result<Res<'a>, EvalError> {
        let ExprKind::Call { function, target: None, args } = &step.kind else {
            return self.eval_catching(step);
        };
        if accu_var != ACCUMULATOR_VAR {
            return self.eval_catching(step);
        }
        let is_accu = |e: &Expr| matches!(&e.kind, ExprKind::Ident(n) if n == accu_var);
        match (function.as_str(), args.as_slice()) {
            // `filter ? <step> : @result`
            (op::CONDITIONAL, [cond, then, otherwise]) if is_accu(otherwise) => match self.eval_catching(cond)? {
                Ok(Value::Bool(true)) => self.eval_step(then, accu_var, seen),
                Ok(Value::Bool(false)) => self.eval_catching(otherwise),
                Ok(_) => Ok(Err(no_overload(op::CONDITIONAL))),
                Err(e) => Ok(Err(e)),
            },
            (op::ADD, [lhs, rhs])
                if is_accu(lhs)
                    && matches!(&rhs.kind, ExprKind::List { elements, optional_indices }
                        if elements.len() == 1 && optional_indices.is_empty())
                    && matches!(self.accumulator(accu_var), Some(Ok(Value::List(_)))) =>
            {
                let ExprKind::List { elements, .. } = &rhs.kind else {
                    return self.eval_catching(step);
                };
                self.charge(1)?; // the accumulator identifier
                let elem = match self.eval_catching(&elements[0])? {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(e)),
                };
                self.charge(10)?; // the list literal
                self.charge(1)?; // `_+_` on lists
                match self.take_accumulator(accu_var) {
                    Some(Ok(Value::List(l))) => Ok(l.push(elem).map(Value::List)),
                    _ => Err(EvalError::new("comprehension accumulator is not a list")),
                }
            }
            (MAP_INSERT, [accu, rest @ ..])
                if is_accu(accu)
                    && (1..=2).contains(&rest.len())
                    && matches!(self.accumulator(accu_var), Some(Ok(Value::Map(_)))) =>
            {
                self.charge(1)?; // the accumulator identifier
                let mut values = Vec::with_capacity(2);
                for a in rest {
                    match self.eval_catching(a)? {
                        Ok(v) => values.push(v),
                        Err(e) => return Ok(Err(e)),
                    }
                }
                self.charge(1)?; // the call
                let Some(Ok(Value::Map(map))) = self.take_accumulator(accu_var) else {
                    return Err(EvalError::new("comprehension accumulator is not a map"));
                };
                let seen = match seen {
                    Some(s) => s,
                    None => {
                        let mut keys = HashSet::new();
                        for k in map.keys() {
                            keys.insert(MapKey::of(&k)?);
                        }
                        seen.insert(keys)
                    }
                };
                Ok(map_insert(map, values, Some(seen)))
            }
            _ => self.eval_catching(step),
        }
    }

    /// The current value of comprehension variable `name`.
    fn accumulator(&self, name: &str) -> Option<&Res<'a>> {
        self.scopes.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Moves the accumulator's value out of its slot (its unique owner then grows it in place);
    /// the step's result is stored back by the loop.
    fn take_accumulator(&mut self, name: &str) -> Option<Res<'a>> {
        let slot = self.scopes.iter_mut().rev().find(|(n, _)| *n == name)?;
        Some(std::mem::replace(&mut slot.1, Ok(Value::Null)))
    }

    /// Evaluates `e`, returning a CEL error as a value and a cancellation as an error.
    fn eval_catching(&mut self, e: &'e Expr) -> Result<Res<'a>, EvalError> {
        match self.eval(e) {
            Err(err) if err.is_cancellation() => Err(err),
            other => Ok(other),
        }
    }

    /// The compiled form of `pattern`: the expression's own when it is a literal, else compiled
    /// once per evaluation.
    pub(crate) fn regex(&mut self, pattern: &str) -> Result<&Regex, String> {
        if let Some(re) = self.patterns.and_then(|p| p.get(pattern)) {
            return Ok(re);
        }
        if !self.regexes.contains_key(pattern) {
            let re = versa_schema::pattern::compile(pattern)?;
            self.regexes.insert(pattern.to_owned(), re);
        }
        self.regexes.get(pattern).ok_or_else(|| format!("pattern {pattern} not compiled"))
    }

    /// The checked type of the call being dispatched (`list(int).sum()` of an empty list is
    /// `0`, of a `list(double)` `0.0`), when the expression was checked.
    pub(crate) fn call_result_type(&self) -> Option<&'e Type> {
        self.types.and_then(|t| t.get(self.call_id as usize))
    }

    fn eval_call(&mut self, id: ExprId, function: &str, target: Option<&'e Expr>, args: &'e [Expr]) -> Res<'a> {
        match (function, target, args) {
            (op::LOGICAL_AND | op::LOGICAL_OR, None, [l, r]) => {
                return self.eval_logic(function == op::LOGICAL_AND, l, r);
            }
            (op::CONDITIONAL, None, [cond, t, f]) => {
                return match self.eval(cond)? {
                    Value::Bool(true) => self.eval(t),
                    Value::Bool(false) => self.eval(f),
                    _ => Err(no_overload(function)),
                };
            }
            (op::NOT_STRICTLY_FALSE, None, [a]) => {
                let v = self.eval_catching(a)?;
                self.charge(1)?;
                return Ok(Value::Bool(!matches!(v, Ok(Value::Bool(false)))));
            }
            (op::OPT_SELECT, None, [operand, field]) => {
                let ExprKind::Literal(Literal::String(field)) = &field.kind else {
                    return Err(EvalError::new("unsupported optional field selection"));
                };
                let v = self.eval(operand)?;
                self.charge(1)?;
                return optional_select(v, field);
            }
            ("or" | "orValue", Some(t), [alt]) => {
                let v = self.eval(t)?;
                self.charge(1)?;
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
        // `optional.of(x)` and friends: a namespaced global function, not a member call.
        let mut qualified = None;
        if let Some(t) = target
            && let Some(q) = qualified_name(t)
            && !self.is_variable(q.split('.').next().unwrap_or(""))
        {
            qualified = Some(format!("{q}.{function}"));
        }
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
        self.call_id = id;
        crate::stdlib::call(self, name, member, values)
    }

    fn eval_logic(&mut self, is_and: bool, l: &'e Expr, r: &'e Expr) -> Res<'a> {
        let decisive = !is_and;
        let lv = self.eval_catching(l)?;
        if let Ok(Value::Bool(b)) = lv
            && b == decisive
        {
            return Ok(Value::Bool(b));
        }
        let rv = self.eval_catching(r)?;
        if let Ok(Value::Bool(b)) = rv
            && b == decisive
        {
            return Ok(Value::Bool(b));
        }
        match (lv, rv) {
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!decisive)),
            (Err(e), _) => Err(e),
            (_, Err(e)) => Err(e),
            _ => Err(no_overload(if is_and { op::LOGICAL_AND } else { op::LOGICAL_OR })),
        }
    }
}

fn literal<'a>(l: &Literal) -> Value<'a> {
    match l {
        Literal::Null => Value::Null,
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Int(i) => Value::Int(*i),
        Literal::Uint(u) => Value::Uint(*u),
        Literal::Double(d) => Value::Double(*d),
        Literal::String(s) => Value::String(Str::Owned(s.as_str().into())),
        Literal::Bytes(b) => Value::Bytes(b.as_slice().into()),
    }
}

/// `cel.@mapInsert(map, key, value)` or `cel.@mapInsert(map, entries)`: the map with the new
/// entries, or cel-go's error for a key already present.
pub(crate) fn map_insert<'a>(map: Map<'a>, args: Vec<Value<'a>>, mut seen: Option<&mut HashSet<MapKey>>) -> Res<'a> {
    let mut args = args.into_iter();
    match (args.next(), args.next()) {
        (Some(Value::Map(entries)), None) => {
            let entries = entries.entry_refs();
            let mut out = map;
            for i in 0..entries.len() {
                let (k, v) = entries.get(i)?;
                out = out.insert(k, v, seen.as_deref_mut())?;
            }
            Ok(Value::Map(out))
        }
        (Some(k), Some(v)) => map.insert(k, v, seen).map(Value::Map),
        _ => Err(no_overload(MAP_INSERT)),
    }
}

/// `v.field`.
fn select<'a>(v: Value<'a>, field: &str) -> Res<'a> {
    match v {
        Value::Object(o) => o.field(field)?.ok_or_else(|| EvalError::new(format!("no such key: {field}"))),
        Value::Map(m) => m
            .get(&Value::String(Str::Owned(field.into())))?
            .ok_or_else(|| EvalError::new(format!("no such key: {field}"))),
        // Selection on an optional continues the optional chain.
        Value::Optional(_) => optional_select(v, field),
        other => Err(EvalError::new(format!("type '{}' does not support field selection", &*other.type_name()))),
    }
}

/// `v.?field`: `optional.of(v.field)` when present, else `optional.none()`.
fn optional_select<'a>(v: Value<'a>, field: &str) -> Res<'a> {
    let found = match v {
        Value::Optional(None) => None,
        Value::Optional(Some(inner)) => return optional_select((*inner).clone(), field),
        Value::Object(o) => o.field(field)?,
        Value::Map(m) => m.get(&Value::String(Str::Owned(field.into())))?,
        other => {
            return Err(EvalError::new(format!("type '{}' does not support field selection", &*other.type_name())));
        }
    };
    Ok(Value::Optional(found.map(Arc::new)))
}

/// `has(v.field)`.
fn has_field(v: &Value<'_>, field: &str) -> Result<bool, EvalError> {
    match v {
        Value::Object(o) => Ok(o.field(field)?.is_some()),
        Value::Map(m) => Ok(m.get(&Value::String(Str::Owned(field.into())))?.is_some()),
        Value::Optional(None) => Ok(false),
        Value::Optional(Some(inner)) => has_field(inner, field),
        other => Err(EvalError::new(format!("invalid type for field selection: {}", &*other.type_name()))),
    }
}
