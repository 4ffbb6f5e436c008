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
use crate::plan::{Plan, Step, literal};
use crate::stdlib::Builtin;
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

/// The calls the evaluator handles itself rather than dispatching them to a function: they
/// decide which of their arguments to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    And,
    Or,
    Conditional,
    NotStrictlyFalse,
    OptSelect,
    OptOr,
    OptOrValue,
}

impl Special {
    pub(crate) fn of(function: &str) -> Option<Special> {
        Some(match function {
            op::LOGICAL_AND => Special::And,
            op::LOGICAL_OR => Special::Or,
            op::CONDITIONAL => Special::Conditional,
            op::NOT_STRICTLY_FALSE => Special::NotStrictlyFalse,
            op::OPT_SELECT => Special::OptSelect,
            "or" => Special::OptOr,
            "orValue" => Special::OptOrValue,
            _ => return None,
        })
    }
}

/// The loop steps that grow the accumulator in place (see `Interp::eval_step`).
#[derive(Clone, Copy)]
enum StepKind {
    Conditional,
    Append,
    Insert,
}

/// The variables of one evaluation. A rule's `self` and `oldSelf` have their own slots, so
/// that binding them allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Activation<'a> {
    pub(crate) self_value: Option<Value<'a>>,
    pub(crate) old_self: Option<Value<'a>>,
    others: Vec<(std::borrow::Cow<'static, str>, Value<'a>)>,
    /// Some variable has a dotted name (`authorizer.requestResource`).
    dotted: bool,
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
        let old = match old_self {
            Some(old) => Some(Value::from_json(old, decl)?),
            None => None,
        };
        Ok(Activation::for_rule_values(Value::from_json(self_json, decl)?, old, optional_old_self))
    }

    /// [`Activation::for_rule`] with `self` and `oldSelf` already converted (a node's rules
    /// share them).
    pub fn for_rule_values(
        self_value: Value<'a>,
        old_self: Option<Value<'a>>,
        optional_old_self: bool,
    ) -> Activation<'a> {
        let old_self = match (old_self, optional_old_self) {
            (Some(old), false) => Some(old),
            (Some(old), true) => Some(Value::Optional(Some(Arc::new(old)))),
            (None, true) => Some(Value::Optional(None)),
            (None, false) => None,
        };
        Activation { self_value: Some(self_value), old_self, others: Vec::new(), dotted: false }
    }

    /// [`Activation::bind`] for a variable whose name is a constant (nothing is allocated for
    /// the name).
    pub fn bind_static(&mut self, name: &'static str, value: Value<'a>) {
        match name {
            SELF_VAR | OLD_SELF_VAR => self.bind(name, value),
            _ => match self.others.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value,
                None => {
                    self.dotted |= name.contains('.');
                    self.others.push((name.into(), value));
                }
            },
        }
    }

    /// Binds (or rebinds) a variable.
    pub fn bind(&mut self, name: &str, value: Value<'a>) {
        match name {
            SELF_VAR => self.self_value = Some(value),
            OLD_SELF_VAR => self.old_self = Some(value),
            _ => match self.others.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value,
                None => {
                    self.dotted |= name.contains('.');
                    self.others.push((name.to_owned().into(), value));
                }
            },
        }
    }

    fn get(&self, name: &str) -> Option<&Value<'a>> {
        match name {
            SELF_VAR => self.self_value.as_ref(),
            OLD_SELF_VAR => self.old_self.as_ref(),
            _ => self.others.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
        }
    }

    /// The names of the bound variables.
    fn names(&self) -> Vec<&str> {
        let fixed = [(SELF_VAR, &self.self_value), (OLD_SELF_VAR, &self.old_self)];
        let fixed = fixed.into_iter().filter(|(_, v)| v.is_some()).map(|(n, _)| n);
        fixed.chain(self.others.iter().map(|(n, _)| &**n)).collect()
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

/// Evaluates a parsed expression (checked or not: dispatch is on runtime values).
pub fn eval_expr<'a>(
    expr: &Expr,
    activation: &Activation<'a>,
    tracker: &mut CostTracker,
) -> Result<Value<'a>, EvalError> {
    let plan = Plan::build(expr, &activation.names(), None);
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
        tracker,
        plan,
        fields,
        patterns,
        regexes: None,
        types,
        call_id: 0,
    };
    let result = interp.eval(expr);
    let cost = interp.tracker.call_cost;
    interp.tracker.remaining_budget = interp.tracker.remaining_budget.saturating_sub(cost);
    result
}

type Res<'a> = Result<Value<'a>, EvalError>;

pub(crate) struct Interp<'a, 'e> {
    act: &'e Activation<'a>,
    /// The variable whose fields are computed on selection, with what computes them.
    lazy: Option<(&'e str, &'e dyn LazyFields<'a>)>,
    scopes: Vec<(&'e str, Res<'a>)>,
    tracker: &'e mut CostTracker,
    /// What was worked out when the expression was compiled.
    plan: &'e Plan,
    /// The same plan, when it lives as long as the values (its resolved fields' types are the
    /// types of the values they select).
    fields: Option<&'a Plan>,
    /// The expression's literal patterns, compiled with it.
    patterns: Option<&'e LiteralPatterns>,
    /// The other `matches`, `find` and `findAll` patterns of this evaluation.
    regexes: Option<HashMap<String, Regex>>,
    /// The checker's types by node id, when the expression was checked.
    types: Option<&'e [Type]>,
    /// The node id of the call being dispatched.
    call_id: ExprId,
}

/// Names usable as type values.
pub(crate) fn type_name(name: &str) -> Option<&'static str> {
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
pub(crate) fn qualified_name(e: &Expr) -> Option<String> {
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
        if let Step::Constant(v) = self.plan.step(e.id) {
            return Ok(v.clone());
        }
        match &e.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => self.leaf(e),
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
            ExprKind::Ident(name) => {
                self.charge(1)?;
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
                    Step::TypeName(t) => Ok(Value::Type(Str::Borrowed(t))),
                    _ => self.lookup(name.trim_start_matches('.')),
                }
            }
            _ => self.eval(e),
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

    fn eval_select(&mut self, e: &'e Expr, operand: &'e Expr, field: &str, test_only: bool) -> Res<'a> {
        let step = self.plan.step(e.id);
        if let Step::TypeName(t) = step {
            self.charge(1)?;
            return Ok(Value::Type(Str::Borrowed(t)));
        }
        // A variable with a dotted name, bound as such.
        if self.act.dotted
            && !test_only
            && let Some(q) = qualified_name(e)
            && let Some(v) = self.act.get(&q)
        {
            self.charge(1)?;
            return Ok(v.clone());
        }
        if !test_only
            && matches!(step, Step::None)
            && let Some(q) = qualified_name(e)
            && let Some(t) = type_name(&q)
            && qualified_name(operand).is_some_and(|o| !self.is_variable(&o))
        {
            self.charge(1)?;
            return Ok(Value::Type(Str::Borrowed(t)));
        }
        if let Some((name, lazy)) = self.lazy
            && let ExprKind::Ident(ident) = &operand.kind
            && ident.trim_start_matches('.') == name
            && !matches!(self.plan.step(operand.id), Step::Scope(_))
            && !self.scopes.iter().any(|(n, _)| *n == name)
        {
            // The identifier and the selection, as for any other variable.
            self.charge(2)?;
            if test_only {
                return Ok(Value::Bool(lazy.has(field)));
            }
            if !lazy.has(field) {
                return Err(EvalError::new(format!("no such key: {field}")));
            }
            return lazy.field(field, self.act);
        }
        let v = self.operand(operand)?;
        self.charge(1)?;
        // A field the checker resolved, on a value of the type it was resolved on: one lookup
        // in the JSON object by property name, no lookup in the object type.
        if let Some(Step::Field(Some(r))) = self.fields.map(|p| p.step(e.id))
            && let Value::Object(o) = &v
            && std::ptr::eq(o.ty, Arc::as_ptr(&r.object))
        {
            let json = match o.indexed(r.slot) {
                Some(indexed) => indexed,
                None => o.json.get(&r.property),
            };
            let found = match json {
                None | Some(Json::Null) => None,
                Some(j) => Some(Value::from_json(j, &r.ty)?),
            };
            return match (found, test_only) {
                (found, true) => Ok(Value::Bool(found.is_some())),
                (Some(v), false) => Ok(v),
                (None, false) => Err(EvalError::new(format!("no such key: {field}"))),
            };
        }
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
                let proceed = match self.quick_condition(&c.loop_condition, base) {
                    Some(proceed) => proceed?,
                    None => !matches!(self.eval_catching(&c.loop_condition)?, Ok(Value::Bool(false))),
                };
                if !proceed {
                    self.scopes.truncate(base + 1);
                    break;
                }
                let step = match self.quick_logic_step(&c.loop_step, base) {
                    Some(step) => step?,
                    None => self.eval_step(&c.loop_step, &c.accu_var, &mut seen)?,
                };
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

    /// The loop conditions the macros build — `true`, and `all()`'s and `exists()`'s
    /// `@not_strictly_false(@result)` and `@not_strictly_false(!@result)` — decided from the
    /// accumulator in scope slot `accu` without walking them, and charged what the walk charges
    /// (1 for the identifier, 1 for `!_` when it runs, 1 for `@not_strictly_false`). `None`
    /// for any other condition.
    fn quick_condition(&mut self, cond: &'e Expr, accu: usize) -> Option<Result<bool, EvalError>> {
        let is_accu = |e: &Expr, plan: &Plan| matches!(plan.step(e.id), Step::Scope(i) if *i == accu);
        match &cond.kind {
            ExprKind::Literal(Literal::Bool(true)) => return Some(Ok(true)),
            ExprKind::Call { target: None, args, .. }
                if matches!(self.plan.step(cond.id), Step::Special(Special::NotStrictlyFalse)) && args.len() == 1 => {}
            _ => return None,
        }
        let ExprKind::Call { args, .. } = &cond.kind else { return None };
        let arg = args.first()?;
        // `Some(b)`: the argument evaluated to the bool `b`; `None`: to something else or an
        // error (which `@not_strictly_false` takes as true).
        // A cancellation in the accumulator (which the loop never stores: it stops on one) is
        // left to the general evaluation.
        let value: Option<bool> = if is_accu(arg, self.plan) {
            let value = match self.scopes.get(accu) {
                Some((_, Ok(Value::Bool(b)))) => Some(*b),
                Some((_, Err(e))) if e.is_cancellation() => return None,
                Some(_) => None,
                None => return None,
            };
            if let Err(e) = self.charge(1) {
                return Some(Err(e));
            }
            value
        } else if let ExprKind::Call { target: None, args: not_args, .. } = &arg.kind
            && matches!(self.plan.step(arg.id), Step::Builtin(Builtin::Not))
            && let [operand] = not_args.as_slice()
            && is_accu(operand, self.plan)
        {
            let operand = match self.scopes.get(accu) {
                Some((_, Ok(Value::Bool(b)))) => Some(Some(*b)),
                Some((_, Ok(_))) => Some(None),
                Some((_, Err(e))) if e.is_cancellation() => return None,
                Some((_, Err(_))) => None,
                None => return None,
            };
            if let Err(e) = self.charge(1) {
                return Some(Err(e));
            }
            match operand {
                // An error operand: `!_` is not called, and `@not_strictly_false` absorbs the
                // error.
                None => None,
                Some(b) => {
                    if let Err(e) = self.charge(1) {
                        return Some(Err(e));
                    }
                    b.map(|b| !b)
                }
            }
        } else {
            return None;
        };
        if let Err(e) = self.charge(1) {
            return Some(Err(e));
        }
        Some(Ok(value != Some(false)))
    }

    /// `all()`'s and `exists()`'s loop step, `@result && P` and `@result || P`, with the
    /// accumulator in scope slot `accu`: `&&`/`||` as `eval_logic` computes them, without
    /// walking the operator and the identifier (charged 1, as the walk charges it). `None` for
    /// any other step.
    fn quick_logic_step(&mut self, step: &'e Expr, accu: usize) -> Option<Result<Res<'a>, EvalError>> {
        let is_and = match self.plan.step(step.id) {
            Step::Special(Special::And) => true,
            Step::Special(Special::Or) => false,
            _ => return None,
        };
        let ExprKind::Call { target: None, args, .. } = &step.kind else { return None };
        let [lhs, rhs] = args.as_slice() else { return None };
        if !matches!(self.plan.step(lhs.id), Step::Scope(i) if *i == accu) {
            return None;
        }
        let lv = match self.scopes.get(accu) {
            Some((_, Err(e))) if e.is_cancellation() => return None,
            Some((_, v)) => v.clone(),
            None => return None,
        };
        if let Err(e) = self.charge(1) {
            return Some(Err(e));
        }
        Some(self.combine_logic(is_and, lv, rhs))
    }

    /// The rest of `eval_logic` once the left operand `lv` is known.
    fn combine_logic(&mut self, is_and: bool, lv: Res<'a>, r: &'e Expr) -> Result<Res<'a>, EvalError> {
        let decisive = !is_and;
        if let Ok(Value::Bool(b)) = lv
            && b == decisive
        {
            return Ok(Ok(Value::Bool(b)));
        }
        let rv = self.eval_catching(r)?;
        if let Ok(Value::Bool(b)) = rv
            && b == decisive
        {
            return Ok(Ok(Value::Bool(b)));
        }
        Ok(match (lv, rv) {
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!decisive)),
            (Err(e), _) => Err(e),
            (_, Err(e)) => Err(e),
            _ => Err(no_overload(if is_and { op::LOGICAL_AND } else { op::LOGICAL_OR })),
        })
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
        // Only the steps the macros build are candidates (the plan knows the operators).
        let kind = match self.plan.step(step.id) {
            Step::Special(Special::Conditional) => StepKind::Conditional,
            Step::Builtin(Builtin::Add) => StepKind::Append,
            Step::None | Step::Call => match function.as_str() {
                op::CONDITIONAL => StepKind::Conditional,
                op::ADD => StepKind::Append,
                MAP_INSERT => StepKind::Insert,
                _ => return self.eval_catching(step),
            },
            _ => return self.eval_catching(step),
        };
        if accu_var != ACCUMULATOR_VAR {
            return self.eval_catching(step);
        }
        let is_accu = |e: &Expr| matches!(&e.kind, ExprKind::Ident(n) if n == accu_var);
        match (kind, args.as_slice()) {
            // `filter ? <step> : @result`
            (StepKind::Conditional, [cond, then, otherwise]) if is_accu(otherwise) => match self.eval_catching(cond)? {
                Ok(Value::Bool(true)) => self.eval_step(then, accu_var, seen),
                Ok(Value::Bool(false)) => self.eval_catching(otherwise),
                Ok(_) => Ok(Err(no_overload(op::CONDITIONAL))),
                Err(e) => Ok(Err(e)),
            },
            (StepKind::Append, [lhs, rhs])
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
            (StepKind::Insert, [accu, rest @ ..])
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
        let regexes = self.regexes.get_or_insert_with(HashMap::new);
        if !regexes.contains_key(pattern) {
            let re = versa_schema::pattern::compile(pattern)?;
            regexes.insert(pattern.to_owned(), re);
        }
        regexes.get(pattern).ok_or_else(|| format!("pattern {pattern} not compiled"))
    }

    /// The checked type of the call being dispatched (`list(int).sum()` of an empty list is
    /// `0`, of a `list(double)` `0.0`), when the expression was checked.
    pub(crate) fn call_result_type(&self) -> Option<&'e Type> {
        self.types.and_then(|t| t.get(self.call_id as usize))
    }

    fn eval_call(&mut self, id: ExprId, function: &str, target: Option<&'e Expr>, args: &'e [Expr]) -> Res<'a> {
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
                    Value::Bool(true) => self.eval(t),
                    Value::Bool(false) => self.eval(f),
                    _ => Err(no_overload(function)),
                };
            }
            (Some(Special::NotStrictlyFalse), None, [a]) => {
                let v = self.eval_catching(a)?;
                self.charge(1)?;
                return Ok(Value::Bool(!matches!(v, Ok(Value::Bool(false)))));
            }
            (Some(Special::OptSelect), None, [operand, field]) => {
                let ExprKind::Literal(Literal::String(field)) = &field.kind else {
                    return Err(EvalError::new("unsupported optional field selection"));
                };
                let v = self.eval(operand)?;
                self.charge(1)?;
                return optional_select(v, field);
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
        self.call_id = id;
        crate::stdlib::call(self, name, member, values)
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
                self.call_id = id;
                return crate::stdlib::call_builtin(self, b, &values);
            }
        };
        self.call_id = id;
        crate::stdlib::call_builtin(self, b, &operands[..n])
    }

    fn eval_logic(&mut self, is_and: bool, l: &'e Expr, r: &'e Expr) -> Res<'a> {
        let lv = self.eval_catching(l)?;
        self.combine_logic(is_and, lv, r)?
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
        Value::Map(m) => {
            m.get(&Value::String(Str::Borrowed(field)))?.ok_or_else(|| EvalError::new(format!("no such key: {field}")))
        }
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
        Value::Map(m) => m.get(&Value::String(Str::Borrowed(field)))?,
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
        Value::Map(m) => Ok(m.get(&Value::String(Str::Borrowed(field)))?.is_some()),
        Value::Optional(None) => Ok(false),
        Value::Optional(Some(inner)) => has_field(inner, field),
        other => Err(EvalError::new(format!("invalid type for field selection: {}", &*other.type_name()))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
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
            "cel.bind(x, self.n * self.n, x + x) == 18",
            "self.l.sortBy(x, -x)[0] == 2",
            "self.o == oldSelf.o && self.l == oldSelf.l",
            "'k' in self.m && 2 in self.l",
            "self.s.matches('^[a-c]+$') && self.s.find('b') == 'b'",
            "optional.of(self.n).hasValue() && optional.none().orValue(1) == 1",
            "self.ios > 1",
        ] {
            let [planned, general] = run_both(source, schema.clone(), &value);
            assert_eq!(planned, general, "{source}");
        }
    }
}
