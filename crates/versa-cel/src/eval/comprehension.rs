//! Comprehensions (the expanded macros) on the general path: the loop over a list or map with
//! errors as values, cel-go's charges per iteration, and the shortcuts that decide the common
//! conditions and steps of `all()`, `exists()`, `filter()` and `map()` from the accumulator
//! without walking them, each charging what the walk would charge.

use std::collections::HashSet;

use crate::ast::{ACCUMULATOR_VAR, Comprehension, Expr, ExprKind, Literal, MAP_INSERT, op};
use crate::plan::{Plan, Special, Step};
use crate::runtime::{EvalError, no_overload};
use crate::stdlib::{self, Builtin};
use crate::value::{MapKey, Value};

use super::{Interp, Res};

/// The loop steps that grow the accumulator in place (see `Interp::eval_step`).
#[derive(Clone, Copy)]
enum StepKind {
    Conditional,
    Append,
    Insert,
}

impl<'a, 'e> Interp<'a, 'e> {
    pub(super) fn eval_comprehension(&mut self, c: &'e Comprehension) -> Res<'a> {
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
    pub(super) fn combine_logic(&mut self, is_and: bool, lv: Res<'a>, r: &'e Expr) -> Result<Res<'a>, EvalError> {
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
            // (cel-go only resolves the branches: `@result` costs nothing there.)
            (StepKind::Conditional, [cond, then, otherwise]) if is_accu(otherwise) => match self.eval_catching(cond)? {
                Ok(Value::Bool(true)) if self.is_attribute(then) => self.branch_catching(then),
                Ok(Value::Bool(true)) => self.eval_step(then, accu_var, seen),
                Ok(Value::Bool(false)) => self.branch_catching(otherwise),
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
                Ok(stdlib::map_insert(map, values, Some(seen)))
            }
            _ => self.eval_catching(step),
        }
    }

    /// A ternary's branch ([`Interp::branch`]), a CEL error as a value and a cancellation as an
    /// error.
    fn branch_catching(&mut self, e: &'e Expr) -> Result<Res<'a>, EvalError> {
        match self.branch(e) {
            Err(err) if err.is_cancellation() => Err(err),
            other => Ok(other),
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
}
