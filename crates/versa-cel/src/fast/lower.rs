//! Lowering of a checked `bool` expression into the fast path's [`Node`] tree, once, when the
//! expression is compiled: each node becomes a typed step using what the [`Plan`] resolved, or
//! the expression gets no fast form when a node is not covered.

use crate::ast::{ACCUMULATOR_VAR, Expr, ExprKind};
use crate::plan::{Plan, Special, Step};
use crate::stdlib::Builtin;
use crate::value::Value;

use super::{Loop, Node, Var, covered};

/// Lowering of the syntax tree, using what the plan resolved.
pub(super) struct Lower<'p> {
    pub(super) plan: &'p Plan,
    /// The stack positions of the accumulators of the enclosing comprehensions.
    pub(super) accumulators: Vec<usize>,
    /// Comprehension variables in scope (the plan's `Scope` positions count them).
    pub(super) depth: usize,
    pub(super) max_depth: usize,
}

impl Lower<'_> {
    pub(super) fn lower(&mut self, e: &Expr) -> Option<Node> {
        let step = self.plan.step(e.id);
        if let Step::Constant(v) = step {
            // Folded constants cost nothing; the scalars and lists of literals are covered.
            return match (v, &e.kind) {
                (Value::Null, _) => Some(Node::Null),
                (Value::Bool(b), _) => Some(Node::Bool(*b)),
                (Value::Int(i), _) => Some(Node::Int(*i)),
                (Value::String(s), _) => Some(Node::Str((**s).into())),
                (_, ExprKind::List { elements, .. }) if elements.is_empty() => Some(Node::EmptyList),
                (_, ExprKind::List { elements, .. }) => {
                    let elements: Box<[Node]> = elements.iter().map(|el| self.lower(el)).collect::<Option<_>>()?;
                    let literal = |n: &Node| matches!(n, Node::Null | Node::Bool(_) | Node::Int(_) | Node::Str(_));
                    elements.iter().all(literal).then_some(Node::ConstList(elements))
                }
                _ => None,
            };
        }
        Some(match &e.kind {
            ExprKind::Literal(_) => match step {
                Step::Literal(Value::Null) => Node::Null,
                Step::Literal(Value::Bool(b)) => Node::Bool(*b),
                Step::Literal(Value::Int(i)) => Node::Int(*i),
                Step::Literal(Value::String(s)) => Node::Str((**s).into()),
                _ => return None,
            },
            ExprKind::Ident(_) => match step {
                Step::Scope(i) if *i < self.depth => Node::Local(*i),
                Step::SelfVar => Node::SelfVar,
                Step::OldSelfVar => Node::OldSelfVar,
                Step::TypeName(t) => Node::TypeName(t),
                _ => return None,
            },
            ExprKind::Select { operand, test_only, .. } => match step {
                Step::Field(Some(field)) if covered(&field.ty) => match self.lower(operand)? {
                    Node::SelfVar => Node::VarField { var: Var::Itself, field: field.clone(), test_only: *test_only },
                    Node::OldSelfVar => Node::VarField { var: Var::Old, field: field.clone(), test_only: *test_only },
                    Node::Local(i) => {
                        Node::VarField { var: Var::Local(i), field: field.clone(), test_only: *test_only }
                    }
                    operand => Node::Field { operand: Box::new(operand), field: field.clone(), test_only: *test_only },
                },
                _ => return None,
            },
            ExprKind::Call { function, target, args } => match (step, target.as_deref(), args.as_slice()) {
                (Step::Special(Special::And), None, [l, r]) => Node::And(self.boxed(l)?, self.boxed(r)?),
                (Step::Special(Special::Or), None, [l, r]) => Node::Or(self.boxed(l)?, self.boxed(r)?),
                (Step::Special(Special::Conditional), None, [c, t, f]) => {
                    Node::Conditional(Box::new([self.lower(c)?, self.lower(t)?, self.lower(f)?]))
                }
                (Step::Special(Special::NotStrictlyFalse), None, [a]) => Node::NotStrictlyFalse(self.boxed(a)?),
                (Step::Builtin(Builtin::Add), None, [accu, list]) if self.is_accumulator(accu) => match &list.kind {
                    ExprKind::List { elements, optional_indices }
                        if elements.len() == 1 && optional_indices.is_empty() =>
                    {
                        let Step::Scope(slot) = self.plan.step(accu.id) else { return None };
                        Node::Append { accu: *slot, elem: Box::new(self.lower(&elements[0])?) }
                    }
                    _ => self.call(Builtin::Add, None, args)?,
                },
                (Step::Builtin(b), target, args) if *b != Builtin::OptIndex => self.call(*b, target, args)?,
                (Step::Call, None, [a]) if function == "type" => Node::TypeOf(self.boxed(a)?),
                _ => return None,
            },
            ExprKind::List { elements, optional_indices } if optional_indices.is_empty() => {
                let elements: Box<[Node]> = elements.iter().map(|el| self.lower(el)).collect::<Option<_>>()?;
                let literal = |n: &Node| matches!(n, Node::Null | Node::Bool(_) | Node::Int(_) | Node::Str(_));
                if !elements.is_empty() && elements.iter().all(literal) {
                    Node::ConstList(elements)
                } else {
                    Node::List(elements)
                }
            }
            ExprKind::Comprehension(c) if c.iter_var2.is_none() => {
                // As the evaluator stacks them: the accumulator, then the iteration variable.
                let range = self.lower(&c.iter_range)?;
                let init = self.lower(&c.accu_init)?;
                let base = self.depth;
                self.depth += 1;
                if c.accu_var == ACCUMULATOR_VAR {
                    self.accumulators.push(base);
                }
                let result = self.lower(&c.result);
                self.depth += 1;
                self.max_depth = self.max_depth.max(self.depth);
                let condition = self.lower(&c.loop_condition);
                let step = self.lower(&c.loop_step);
                self.depth = base;
                if c.accu_var == ACCUMULATOR_VAR {
                    self.accumulators.pop();
                }
                Node::Comprehension(Box::new(Loop { range, init, condition: condition?, step: step?, result: result? }))
            }
            _ => return None,
        })
    }

    fn boxed(&mut self, e: &Expr) -> Option<Box<Node>> {
        self.lower(e).map(Box::new)
    }

    fn call(&mut self, b: Builtin, target: Option<&Expr>, args: &[Expr]) -> Option<Node> {
        let operands: Vec<Node> = target.into_iter().chain(args).map(|a| self.lower(a)).collect::<Option<_>>()?;
        (1..=2).contains(&operands.len()).then(|| Node::Call(b, operands.into()))
    }

    /// Whether `e` names the accumulator of the innermost enclosing macro.
    fn is_accumulator(&self, e: &Expr) -> bool {
        matches!((self.plan.step(e.id), self.accumulators.last()), (Step::Scope(i), Some(a)) if i == a)
    }
}
