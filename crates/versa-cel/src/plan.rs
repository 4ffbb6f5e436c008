//! What the evaluator can know about an expression before it sees any input, worked out once
//! when the expression is compiled instead of at every evaluation.
//!
//! A [`Plan`] holds one step per node id: the value of each literal (string literals are
//! shared, not copied), the type value a dotted name such as `google.protobuf.Timestamp`
//! stands for, and for each call the function it dispatches to — a namespaced global written
//! like a member call (`optional.of(x)`, `sets.contains(a, b)`) resolved to its full name, and
//! the standard operators and string functions resolved to a builtin that the evaluator
//! calls without building an argument vector or comparing function names. Identifiers are
//! resolved to `self`, `oldSelf` or a comprehension variable's slot, and each field selection
//! on an object type to its schema field (JSON property, type, position), so that evaluating
//! it is one lookup in the JSON object.
//!
//! Whether a dotted name is a variable or a namespace is decided by lexical scope: the
//! expression's declared variables and the comprehension variables in scope at the node, which
//! is what the evaluator's scopes hold when it reaches the node. A node without a step (ids the
//! plan does not cover) is evaluated the general way, so a plan only ever saves work.

use std::sync::Arc;

use crate::ast::{Expr, ExprKind, Literal, op};
use crate::runtime::EvalError;
use crate::stdlib::Builtin;
use crate::types::{DeclType, ObjectType, Type};
use crate::value::{Str, Value};
use crate::{OLD_SELF_VAR, SELF_VAR};

/// How a plan evaluates the constant expressions it folds: the evaluator's evaluation
/// (`eval::constant_value`), handed in because the evaluator is built on plans.
pub type Fold<'f> = &'f dyn Fn(&Expr) -> Result<Value<'static>, EvalError>;

/// The precomputed steps of one expression, by node id.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    steps: Vec<Step>,
}

/// A plan is a function of the expression it was built from, which is compared instead.
impl PartialEq for Plan {
    fn eq(&self, _: &Self) -> bool {
        true
    }
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

/// What is known about one node.
#[derive(Clone, Debug, Default)]
pub(crate) enum Step {
    #[default]
    None,
    /// The value of a literal.
    Literal(Value<'static>),
    /// The value of a constant expression that cel-go's planner folds (`OptOptimize`): a list
    /// or map literal of constants, or a type conversion of one (`duration('1h')`,
    /// `timestamp(0)`). Evaluating it costs nothing, as in cel-go.
    Constant(Value<'static>),
    /// A selection that names a type (`google.protobuf.Timestamp`, `net.IP`), not a field.
    TypeName(&'static str),
    /// A field selection (or presence test), with the field when the checker typed the
    /// operand as an object type.
    Field(Option<Box<ResolvedField>>),
    /// An identifier naming the comprehension variable at this index of the evaluator's
    /// scopes (outermost first).
    Scope(usize),
    /// The identifier `self`.
    SelfVar,
    /// The identifier `oldSelf`.
    OldSelfVar,
    /// A call the evaluator handles itself (`&&`, `?:`, `or`, ...).
    Special(Special),
    /// A call of a namespaced global function (`optional.of`): its full name; the target is
    /// part of the name, not a receiver.
    Qualified(Box<str>),
    /// A call of a standard operator or string function.
    Builtin(Builtin),
    /// Any other call: the general dispatch by name.
    Call,
}

/// A field of an object type, found when the expression was compiled.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedField {
    /// The operand's type (the field applies to values of exactly this type, by identity).
    pub object: Arc<ObjectType>,
    /// The JSON property.
    pub property: String,
    pub ty: DeclType,
    /// The field's position in `object.fields`.
    pub slot: usize,
}

impl Plan {
    /// The plan of `expr`, whose free variables are `variables`; `types` are the checker's
    /// types by node id, when it was checked.
    /// `fold` evaluates the constants it folds (only for checked expressions).
    pub fn build(expr: &Expr, variables: &[&str], types: Option<&[Type]>, fold: Fold<'_>) -> Plan {
        let mut nodes = 0usize;
        expr.walk(&mut |_| nodes += 1);
        let mut b = Builder {
            steps: Vec::new(),
            id_limit: nodes.saturating_mul(2).saturating_add(16),
            scope: variables.iter().map(|v| (*v).to_owned()).collect(),
            declared: variables.len(),
            types,
            fold,
        };
        b.visit(expr);
        Plan { steps: b.steps }
    }

    /// How many field selections on `self` the checker resolved (a validator looks the fields
    /// of `self` up once for all the rules of a node when they read many).
    pub fn self_field_reads(&self, expr: &Expr) -> usize {
        let mut n = 0;
        expr.walk(&mut |e| {
            if let ExprKind::Select { operand, test_only: false, .. } = &e.kind
                && matches!(self.step(operand.id), Step::SelfVar)
                && matches!(self.step(e.id), Step::Field(Some(_)))
            {
                n += 1;
            }
        });
        n
    }

    /// Only what changes the cost of an evaluation (the folded constants and set lookups of
    /// cel-go's planner): the plan that [`eval`](crate::eval) tests compare a full plan with.
    #[cfg(test)]
    pub(crate) fn folding_only(&self) -> Plan {
        let steps = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Constant(_) | Step::Builtin(Builtin::InSet) => s.clone(),
                _ => Step::None,
            })
            .collect();
        Plan { steps }
    }

    pub(crate) fn step(&self, id: u32) -> &Step {
        static NONE: Step = Step::None;
        self.steps.get(id as usize).unwrap_or(&NONE)
    }
}

struct Builder<'t> {
    types: Option<&'t [Type]>,
    fold: Fold<'t>,
    steps: Vec<Step>,
    /// Ids are dense (the parser hands them out in order); a node with a larger id (a tree
    /// built by hand) gets no step rather than a table sized by its id.
    id_limit: usize,
    /// Variable names in scope (declared first, then comprehension variables, innermost last).
    scope: Vec<String>,
    /// How many of `scope` are declared variables.
    declared: usize,
}

impl Builder<'_> {
    fn set(&mut self, id: u32, step: Step) {
        let i = id as usize;
        if i >= self.id_limit {
            return;
        }
        if i >= self.steps.len() {
            self.steps.resize_with(i + 1, Step::default);
        }
        self.steps[i] = step;
    }

    /// The field `field` of the operand with id `operand`, when the checker typed it as an
    /// object type that has it.
    fn resolve(&self, operand: u32, field: &str) -> Option<Box<ResolvedField>> {
        let Some(Type::Object(object)) = self.types?.get(operand as usize) else { return None };
        let slot = object.fields.keys().position(|k| k == field)?;
        let f = object.fields.get(field)?;
        Some(Box::new(ResolvedField { object: object.clone(), property: f.property.clone(), ty: f.ty.clone(), slot }))
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scope.iter().any(|v| v == name)
    }

    fn visit(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Literal(l) => self.set(e.id, Step::Literal(literal(l))),
            ExprKind::Ident(name) => {
                let name = name.trim_start_matches('.');
                let step = match self.scope.iter().rposition(|v| v == name) {
                    Some(i) if i >= self.declared => Step::Scope(i - self.declared),
                    Some(_) if name == SELF_VAR => Step::SelfVar,
                    Some(_) if name == OLD_SELF_VAR => Step::OldSelfVar,
                    Some(_) => Step::None,
                    None => type_name(name).map_or(Step::None, Step::TypeName),
                };
                self.set(e.id, step);
            }
            ExprKind::Select { operand, field, test_only } => {
                let type_name = (!test_only)
                    .then(|| qualified_name(e))
                    .flatten()
                    .and_then(|q| type_name(&q))
                    .filter(|_| qualified_name(operand).is_some_and(|o| !self.is_variable(&o)));
                let step = match type_name {
                    Some(t) => Step::TypeName(t),
                    None => Step::Field(self.resolve(operand.id, field)),
                };
                self.set(e.id, step);
                self.visit(operand);
            }
            ExprKind::Call { function, target, args } => {
                let qualified = target
                    .as_deref()
                    .and_then(qualified_name)
                    .filter(|q| !self.is_variable(q.split('.').next().unwrap_or("")));
                let step = match (Special::of(function), qualified) {
                    (Some(special), _) => Step::Special(special),
                    (None, Some(q)) => Step::Qualified(format!("{q}.{function}").into()),
                    (None, None) => Builtin::of(function).map_or(Step::Call, Step::Builtin),
                };
                let step = match (&step, args.as_slice()) {
                    (Step::Builtin(Builtin::In), [_, list]) if self.types.is_some() => {
                        set_membership(list, self.fold).unwrap_or(step)
                    }
                    _ => self.folded(e).unwrap_or(step),
                };
                self.set(e.id, step);
                if let Some(t) = target {
                    self.visit(t);
                }
                for a in args {
                    self.visit(a);
                }
            }
            ExprKind::List { elements, .. } => {
                elements.iter().for_each(|el| self.visit(el));
                if let Some(step) = self.folded(e) {
                    self.set(e.id, step);
                }
            }
            ExprKind::Map { entries } => {
                for entry in entries {
                    self.visit(&entry.key);
                    self.visit(&entry.value);
                }
                if let Some(step) = self.folded(e) {
                    self.set(e.id, step);
                }
            }
            ExprKind::Struct { fields, .. } => fields.iter().for_each(|f| self.visit(&f.value)),
            ExprKind::Comprehension(c) => {
                // The evaluator's scopes: the range and the initial accumulator outside the
                // loop; the accumulator in the condition, step and result; the iteration
                // variables in the condition and the step only.
                self.visit(&c.iter_range);
                self.visit(&c.accu_init);
                let base = self.scope.len();
                self.scope.push(c.accu_var.clone());
                self.visit(&c.result);
                self.scope.push(c.iter_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push(v2.clone());
                }
                self.visit(&c.loop_condition);
                self.visit(&c.loop_step);
                self.scope.truncate(base);
            }
        }
    }
}

impl Builder<'_> {
    /// The value of `e` when cel-go's planner folds it (only for checked expressions, as
    /// Kubernetes plans them; the folding evaluation itself is planned without types).
    fn folded(&self, e: &Expr) -> Option<Step> {
        if self.types.is_none() || matches!(e.kind, ExprKind::Literal(_)) || !is_constant(e) {
            return None;
        }
        (self.fold)(e).ok().map(Step::Constant)
    }
}

/// The type conversions cel-go's planner evaluates when their argument is a constant.
const CONVERSIONS: &[&str] =
    &["bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"];

/// Whether cel-go's planner sees `e` as a constant: a literal, a list or map literal of
/// constants, or a type conversion of a constant (which it folds).
pub(crate) fn is_constant(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_) => true,
        ExprKind::List { elements, optional_indices } => {
            optional_indices.is_empty() && elements.iter().all(is_constant)
        }
        ExprKind::Map { entries } => {
            entries.iter().all(|en| !en.optional && is_constant(&en.key) && is_constant(&en.value))
        }
        ExprKind::Call { function, target: None, args } => {
            CONVERSIONS.contains(&function.as_str()) && args.len() == 1 && args.iter().all(is_constant)
        }
        _ => false,
    }
}

/// The step of `x in list` for a constant `list`: cel-go's planner answers `false` for an
/// empty one without evaluating `x`, and looks a list of scalars (not bytes) up as a set,
/// which its cost tracker does not charge.
fn set_membership(list: &Expr, fold: Fold<'_>) -> Option<Step> {
    if !matches!(list.kind, ExprKind::List { .. }) || !is_constant(list) {
        return None;
    }
    let Ok(Value::List(items)) = fold(list) else { return None };
    let items = items.to_vec().ok()?;
    if items.is_empty() {
        return Some(Step::Constant(Value::Bool(false)));
    }
    let scalar = |v: &Value<'_>| {
        matches!(v, Value::Bool(_) | Value::Int(_) | Value::Uint(_) | Value::Double(_) | Value::String(_))
    };
    items.iter().all(scalar).then_some(Step::Builtin(Builtin::InSet))
}

/// The value of a literal.
pub(crate) fn literal(l: &Literal) -> Value<'static> {
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
