//! Attributes on the general path: identifiers, field selections, indexes, optional selections
//! and indexes, and the ternary, evaluated and charged as cel-go's planner builds and its cost
//! tracker observes them (`interpreter/planner.go`, `attributes.go`, `runtimecost.go`).
//!
//! cel-go turns such an expression into one *attribute*: a root (a variable; or, when the
//! operand is no attribute — a call, a literal — that operand, a *relative* attribute; or the
//! ternary's chosen branch) and a chain of *qualifiers* (`.f`, `[k]`). Evaluating the attribute
//! costs 1 (the ternary 0) plus *resolving* it: the root (a variable nothing, a relative root
//! its operand's evaluation) and 1 per qualifier. Where cel-go only resolves an attribute — the
//! ternary's branches, an index that is itself an attribute, the operand of `has()` — the 1 is
//! not charged, so:
//!
//! - `self.a` costs 2 and `[1, 2][0]` 2 (the relative attribute 1, the qualifier 1);
//! - `c ? self.a : self.b` charges 1 for the branch taken, `self.l[self.i]` 4;
//! - `has(self.a)` 1 (Kubernetes sets `PresenceTestHasCost(false)`);
//! - an optional qualifier (`.?f`, `[?k]`, or any after one) is charged only when present, and
//!   nothing after an absent one is evaluated.
//!
//! [`Interp::eval`] evaluates attributes in evaluation position, [`Interp::resolve`] in
//! resolution position; a constant (a type name, a folded literal) is no attribute.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::ast::{Expr, ExprId, ExprKind, Literal, op};
use crate::plan::{Special, Step, qualified_name, type_name};
use crate::runtime::EvalError;
use crate::stdlib::{self, Builtin};
use crate::value::{Str, Value};

use super::{Interp, Res};

/// The calls cel-go plans as attributes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum AttributeCall {
    /// `_[_]`, or `_[?_]` when `optional`.
    Index { optional: bool },
    /// `_?._`.
    OptSelect,
    /// `_?_:_`.
    Conditional,
}

impl<'a, 'e> Interp<'a, 'e> {
    /// Which attribute call the call `id` of `function` is, if any.
    pub(super) fn attribute_call(&self, id: ExprId, function: &str) -> Option<AttributeCall> {
        match self.plan.step(id) {
            Step::Builtin(Builtin::Index) => Some(AttributeCall::Index { optional: false }),
            Step::Builtin(Builtin::OptIndex) => Some(AttributeCall::Index { optional: true }),
            Step::Special(Special::OptSelect) => Some(AttributeCall::OptSelect),
            Step::Special(Special::Conditional) => Some(AttributeCall::Conditional),
            Step::None => match function {
                op::INDEX => Some(AttributeCall::Index { optional: false }),
                op::OPT_INDEX => Some(AttributeCall::Index { optional: true }),
                op::OPT_SELECT => Some(AttributeCall::OptSelect),
                op::CONDITIONAL => Some(AttributeCall::Conditional),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether cel-go plans `e` as an attribute.
    pub(super) fn is_attribute(&self, e: &Expr) -> bool {
        match (&e.kind, self.plan.step(e.id)) {
            (_, Step::Constant(_) | Step::TypeName(_)) => false,
            (ExprKind::Ident(name), Step::None) => {
                let name = name.trim_start_matches('.');
                self.is_variable(name) || type_name(name).is_none()
            }
            (ExprKind::Ident(_) | ExprKind::Select { .. }, _) => true,
            (ExprKind::Call { function, target: None, .. }, _) => self.attribute_call(e.id, function).is_some(),
            _ => false,
        }
    }

    /// Resolves `e` without the charge for evaluating it as an attribute (see the module
    /// documentation); what is no attribute is evaluated.
    pub(super) fn resolve(&mut self, e: &'e Expr) -> Res<'a> {
        match &e.kind {
            ExprKind::Ident(name) if self.is_attribute(e) => self.ident(e, name, false),
            ExprKind::Select { operand, field, test_only } => self.eval_select(e, operand, field, *test_only, true),
            ExprKind::Call { function, target: None, args } => match (self.attribute_call(e.id, function), &args[..]) {
                (Some(AttributeCall::Index { optional }), [x, k]) => self.eval_index(x, k, optional, true),
                (Some(AttributeCall::OptSelect), [x, f]) => self.eval_opt_select(x, f, true),
                _ => self.eval(e),
            },
            _ => self.eval(e),
        }
    }

    /// A branch of the ternary, which cel-go only resolves.
    pub(super) fn branch(&mut self, e: &'e Expr) -> Res<'a> {
        if self.is_attribute(e) { self.resolve(e) } else { self.eval(e) }
    }

    /// The operand of a qualifier: an attribute evaluated (or resolved, when `resolving`), or
    /// the root of a relative attribute, whose evaluation as an attribute costs 1 more.
    fn qualified(&mut self, operand: &'e Expr, resolving: bool) -> Res<'a> {
        if self.is_attribute(operand) {
            return if resolving { self.resolve(operand) } else { self.eval(operand) };
        }
        let v = self.eval(operand)?;
        if !resolving {
            self.charge(1)?;
        }
        Ok(v)
    }

    /// `x[k]` (or `x[?k]`): the operand, the key (resolved when it is an attribute) and 1 for
    /// the qualifier unless it is optional and absent.
    pub(super) fn eval_index(&mut self, x: &'e Expr, k: &'e Expr, optional: bool, resolving: bool) -> Res<'a> {
        let container = self.qualified(x, resolving)?;
        if let Value::Optional(None) = container {
            return Ok(container);
        }
        let key = self.branch(k)?;
        let chained = matches!(container, Value::Optional(_));
        let result = stdlib::index(&container, &key, optional);
        if !(matches!(result, Ok(Value::Optional(None))) && (optional || chained)) {
            self.charge(1)?;
        }
        result
    }

    /// `x.?f`: the operand, and 1 for the qualifier when the field is present.
    pub(super) fn eval_opt_select(&mut self, x: &'e Expr, field: &'e Expr, resolving: bool) -> Res<'a> {
        let ExprKind::Literal(Literal::String(field)) = &field.kind else {
            return Err(EvalError::new("unsupported optional field selection"));
        };
        let v = self.qualified(x, resolving)?;
        if let Value::Optional(None) = v {
            return Ok(v);
        }
        let result = optional_select(v, field)?;
        if matches!(result, Value::Optional(Some(_))) {
            self.charge(1)?;
        }
        Ok(result)
    }

    /// `operand.field`, or `has(operand.field)` when `test_only` (whose operand is resolved,
    /// and which costs its qualifier only).
    pub(super) fn eval_select(
        &mut self,
        e: &'e Expr,
        operand: &'e Expr,
        field: &str,
        test_only: bool,
        resolving: bool,
    ) -> Res<'a> {
        let step = self.plan.step(e.id);
        if let Step::TypeName(t) = step {
            return Ok(Value::Type(Str::Borrowed(t)));
        }
        // A variable with a dotted name, bound as such.
        if self.act.dotted
            && !test_only
            && let Some(q) = qualified_name(e)
            && let Some(v) = self.act.get(&q)
        {
            if !resolving {
                self.charge(1)?;
            }
            return Ok(v.clone());
        }
        if !test_only
            && matches!(step, Step::None)
            && let Some(q) = qualified_name(e)
            && let Some(t) = type_name(&q)
            && qualified_name(operand).is_some_and(|o| !self.is_variable(&o))
        {
            return Ok(Value::Type(Str::Borrowed(t)));
        }
        if let Some((name, lazy)) = self.lazy
            && let ExprKind::Ident(ident) = &operand.kind
            && ident.trim_start_matches('.') == name
            && !matches!(self.plan.step(operand.id), Step::Scope(_))
            && !self.scopes.iter().any(|(n, _)| *n == name)
        {
            // The identifier (unless only resolved) and the selection, as for any other
            // variable.
            self.charge(if test_only || resolving { 1 } else { 2 })?;
            if test_only {
                return Ok(Value::Bool(lazy.has(field)));
            }
            if !lazy.has(field) {
                return Err(EvalError::new(format!("no such key: {field}")));
            }
            return lazy.field(field, self.act);
        }
        let v = self.qualified(operand, resolving || test_only)?;
        if let Value::Optional(None) = v {
            // Nothing after an absent optional qualifier is evaluated or charged.
            return Ok(if test_only { Value::Bool(false) } else { v });
        }
        // A field the checker resolved, on a value of the type it was resolved on: one lookup
        // in the JSON object by property name, no lookup in the object type.
        if let Some(Step::Field(Some(r))) = self.fields.map(|p| p.step(e.id))
            && let Value::Object(o) = &v
            && std::ptr::eq(o.ty, Arc::as_ptr(&r.object))
        {
            self.charge(1)?;
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
            self.charge(1)?;
            return has_field(&v, field).map(Value::Bool);
        }
        let chained = matches!(v, Value::Optional(_));
        let result = select(v, field);
        if !(chained && matches!(result, Ok(Value::Optional(None)))) {
            self.charge(1)?;
        }
        result
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
