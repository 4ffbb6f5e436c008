//! One evaluation on the fast path ([`Run`]): the [`Node`] tree walked over copyable views of
//! the JSON, charged as the general evaluator charges, stopping ([`Bail`]) at anything else.

use std::sync::Arc;

use serde_json::{Map as JsonMap, Value as Json};

use crate::plan::ResolvedField;
use crate::runtime::LiteralPatterns;
use crate::stdlib::{self, Builtin};
use crate::value::Value;

use super::{Bail, Fast, Fv, Loop, Node, Var, from_json, scalar_value, type_name};

/// `self`'s JSON object, and its values by field (see `value::field_index`).
pub(super) type SelfIndex<'r> = (&'r JsonMap<String, Json>, &'r [Option<&'r Json>]);

/// One evaluation.
pub(super) struct Run<'r> {
    pub(super) cost: u64,
    pub(super) limit: u64,
    pub(super) self_value: Option<Fv<'r>>,
    pub(super) old_self: Option<Fv<'r>>,
    /// `self`'s JSON object and its values by field, when the validator looked them up at once.
    pub(super) self_index: Option<SelfIndex<'r>>,
    pub(super) patterns: &'r LiteralPatterns,
    /// Comprehension variables, outermost first.
    pub(super) locals: Vec<Fv<'r>>,
    /// The lists built by `filter()` and `map()` (and list literals).
    pub(super) lists: Vec<Vec<Fv<'r>>>,
    /// The lists of [`Node::ConstList`]s already built, by node.
    pub(super) consts: Vec<(&'r [Node], usize)>,
}

impl<'r> Run<'r> {
    fn charge(&mut self, cost: u64) -> Fast<()> {
        self.cost = self.cost.saturating_add(cost);
        if self.cost > self.limit { Err(Bail) } else { Ok(()) }
    }

    pub(super) fn eval(&mut self, n: &'r Node) -> Fast<Fv<'r>> {
        Ok(match n {
            Node::Null => Fv::Null,
            Node::Bool(b) => Fv::Bool(*b),
            Node::Int(i) => Fv::Int(*i),
            Node::Str(s) => Fv::Str(s),
            Node::TypeName(t) => Fv::Type(t),
            Node::SelfVar => {
                self.charge(1)?;
                self.self_value.ok_or(Bail)?
            }
            Node::OldSelfVar => {
                self.charge(1)?;
                self.old_self.ok_or(Bail)?
            }
            Node::Local(i) => {
                self.charge(1)?;
                *self.locals.get(*i).ok_or(Bail)?
            }
            Node::Field { operand, field, test_only } => self.select(operand, field, *test_only, false)?,
            Node::VarField { var, field, test_only } => self.var_field(*var, field, *test_only)?,
            Node::And(l, r) | Node::Or(l, r) => {
                let decisive = matches!(n, Node::Or(..));
                match self.operand(l)? {
                    Fv::Bool(b) if b == decisive => Fv::Bool(b),
                    Fv::Bool(_) => match self.operand(r)? {
                        Fv::Bool(b) => Fv::Bool(b),
                        _ => return Err(Bail),
                    },
                    _ => return Err(Bail),
                }
            }
            Node::Conditional(parts) => {
                let [c, t, f] = &**parts;
                match self.eval(c)? {
                    Fv::Bool(true) => self.branch(t)?,
                    Fv::Bool(false) => self.branch(f)?,
                    _ => return Err(Bail),
                }
            }
            Node::NotStrictlyFalse(a) => {
                let v = self.operand(a)?;
                self.charge(1)?;
                Fv::Bool(!matches!(v, Fv::Bool(false)))
            }
            Node::Call(Builtin::Index, operands) => self.index(operands, false)?,
            Node::Call(b, operands) => match &**operands {
                [x] => {
                    let x = self.operand(x)?;
                    self.builtin(*b, &[x])?
                }
                [x, y] => {
                    let x = self.operand(x)?;
                    let y = self.operand(y)?;
                    self.builtin(*b, &[x, y])?
                }
                _ => return Err(Bail),
            },
            Node::TypeOf(a) => {
                let v = self.eval(a)?;
                self.charge(1)?;
                Fv::Type(type_name(v)?)
            }
            Node::List(elements) => {
                let list = self.list(elements)?;
                self.charge(10)?;
                list
            }
            Node::EmptyList => self.list(&[])?,
            Node::ConstList(elements) => {
                match self.consts.iter().find(|(n, _)| std::ptr::eq(*n, &**elements)).map(|(_, l)| *l) {
                    Some(list) => Fv::Built(list),
                    None => {
                        let list = self.list(elements)?;
                        if let Fv::Built(i) = list {
                            self.consts.push((elements, i));
                        }
                        list
                    }
                }
            }
            Node::Append { accu, elem } => self.append(*accu, elem)?,
            Node::Comprehension(c) => self.fold(c)?,
        })
    }

    /// An operand: literals, variables and their fields in place, anything else through
    /// [`Run::eval`].
    #[inline(always)]
    fn operand(&mut self, n: &'r Node) -> Fast<Fv<'r>> {
        match n {
            Node::Int(i) => Ok(Fv::Int(*i)),
            Node::Str(s) => Ok(Fv::Str(s)),
            Node::Bool(b) => Ok(Fv::Bool(*b)),
            Node::Local(i) => {
                self.charge(1)?;
                self.locals.get(*i).copied().ok_or(Bail)
            }
            Node::VarField { var, field, test_only } => self.var_field(*var, field, *test_only),
            _ => self.eval(n),
        }
    }

    /// Resolves an attribute node without the charge for evaluating it (`eval::attribute`);
    /// evaluates any other.
    fn resolve(&mut self, n: &'r Node) -> Fast<Fv<'r>> {
        match n {
            Node::SelfVar => self.self_value.ok_or(Bail),
            Node::OldSelfVar => self.old_self.ok_or(Bail),
            Node::Local(i) => self.locals.get(*i).copied().ok_or(Bail),
            Node::VarField { var, field, test_only } => self.var_field_charged(*var, field, *test_only, 1),
            Node::Field { operand, field, test_only } => self.select(operand, field, *test_only, true),
            Node::Call(Builtin::Index, operands) => self.index(operands, true),
            _ => self.eval(n),
        }
    }

    /// A branch of the ternary, which cel-go only resolves.
    fn branch(&mut self, n: &'r Node) -> Fast<Fv<'r>> {
        if is_attribute(n) { self.resolve(n) } else { self.eval(n) }
    }

    /// The operand of a qualifier: an attribute evaluated (resolved when `resolving`), or the
    /// root of a relative attribute, which costs 1 more when evaluated.
    fn qualified(&mut self, n: &'r Node, resolving: bool) -> Fast<Fv<'r>> {
        if is_attribute(n) {
            return if resolving { self.resolve(n) } else { self.eval(n) };
        }
        let v = self.eval(n)?;
        if !resolving {
            self.charge(1)?;
        }
        Ok(v)
    }

    /// `operand.field` (`has(operand.field)`, whose operand is only resolved).
    fn select(
        &mut self,
        operand: &'r Node,
        field: &'r ResolvedField,
        test_only: bool,
        resolving: bool,
    ) -> Fast<Fv<'r>> {
        let v = self.qualified(operand, resolving || test_only)?;
        self.charge(1)?;
        self.field(v, field, test_only)
    }

    /// `x[k]`: the operand, the key (resolved when it is an attribute), the qualifier.
    fn index(&mut self, operands: &'r [Node], resolving: bool) -> Fast<Fv<'r>> {
        let [x, k] = operands else { return Err(Bail) };
        let x = self.qualified(x, resolving)?;
        let k = if is_attribute(k) { self.resolve(k)? } else { self.operand(k)? };
        self.builtin(Builtin::Index, &[x, k])
    }

    /// `var.field` (or `has(var.field)`): the identifier and the selection (only the selection
    /// for `has()`).
    fn var_field(&mut self, var: Var, field: &'r ResolvedField, test_only: bool) -> Fast<Fv<'r>> {
        self.var_field_charged(var, field, test_only, if test_only { 1 } else { 2 })
    }

    fn var_field_charged(&mut self, var: Var, field: &'r ResolvedField, test_only: bool, cost: u64) -> Fast<Fv<'r>> {
        self.charge(cost)?;
        let v = match var {
            Var::Itself => self.self_value,
            Var::Old => self.old_self,
            Var::Local(i) => self.locals.get(i).copied(),
        };
        self.field(v.ok_or(Bail)?, field, test_only)
    }

    /// A list literal.
    #[inline(never)]
    fn list(&mut self, elements: &'r [Node]) -> Fast<Fv<'r>> {
        let mut out = Vec::with_capacity(elements.len());
        for el in elements {
            out.push(self.eval(el)?);
        }
        self.lists.push(out);
        Ok(Fv::Built(self.lists.len() - 1))
    }

    /// `@result + [elem]`, charged as the general evaluator's in-place step charges it: the
    /// identifier, the element, the list literal, `_+_`.
    #[inline(never)]
    fn append(&mut self, accu: usize, elem: &'r Node) -> Fast<Fv<'r>> {
        self.charge(1)?;
        let Some(Fv::Built(list)) = self.locals.get(accu).copied() else { return Err(Bail) };
        // A shared constant list is never grown (macros start from `[]`, which is not one).
        if self.consts.iter().any(|(_, l)| *l == list) {
            return Err(Bail);
        }
        let v = self.eval(elem)?;
        self.charge(10)?;
        self.charge(1)?;
        self.lists.get_mut(list).ok_or(Bail)?.push(v);
        Ok(Fv::Built(list))
    }

    /// `v.field`, or `has(v.field)` when `test_only`.
    fn field(&self, v: Fv<'r>, field: &'r ResolvedField, test_only: bool) -> Fast<Fv<'r>> {
        let Fv::Object(json, ty) = v else { return Err(Bail) };
        if !std::ptr::eq(ty, Arc::as_ptr(&field.object)) {
            return Err(Bail);
        }
        let indexed = match self.self_index {
            Some((self_json, index)) if std::ptr::eq(self_json, json) => index.get(field.slot).copied(),
            _ => None,
        };
        let found = match indexed {
            Some(indexed) => indexed,
            None => json.get(&field.property),
        };
        match (found.filter(|j| !j.is_null()), test_only) {
            (found, true) => Ok(Fv::Bool(found.is_some())),
            (Some(j), false) => from_json(j, &field.ty),
            (None, false) => Err(Bail),
        }
    }

    #[inline(never)]
    fn fold(&mut self, c: &'r Loop) -> Fast<Fv<'r>> {
        let range = self.eval(&c.range)?;
        let len = match range {
            Fv::List(items, _) => items.len(),
            Fv::Built(i) => self.lists.get(i).ok_or(Bail)?.len(),
            Fv::Map(m, _) => m.len(),
            _ => return Err(Bail),
        };
        let accu = self.eval(&c.init)?;
        let base = self.locals.len();
        self.locals.push(accu);
        let mut keys = match range {
            Fv::Map(m, _) => Some(m.keys()),
            _ => None,
        };
        for i in 0..len {
            let item = match (range, keys.as_mut()) {
                (Fv::List(items, elem), _) => from_json(items.get(i).ok_or(Bail)?, elem)?,
                (Fv::Built(l), _) => *self.lists.get(l).and_then(|l| l.get(i)).ok_or(Bail)?,
                (_, Some(keys)) => Fv::Str(keys.next().ok_or(Bail)?),
                _ => return Err(Bail),
            };
            self.locals.push(item);
            let proceed = !matches!(self.eval(&c.condition)?, Fv::Bool(false));
            if !proceed {
                break;
            }
            let next = self.eval(&c.step)?;
            self.locals.truncate(base + 1);
            *self.locals.get_mut(base).ok_or(Bail)? = next;
        }
        self.locals.truncate(base + 1);
        let result = self.eval(&c.result)?;
        self.locals.truncate(base);
        Ok(result)
    }

    /// A standard operator or string function, charged as `stdlib::builtin_cost` charges it.
    fn builtin(&mut self, b: Builtin, args: &[Fv<'r>]) -> Fast<Fv<'r>> {
        self.charge(self.builtin_cost(b, args)?)?;
        Ok(match (b, args) {
            (Builtin::Not, [Fv::Bool(v)]) => Fv::Bool(!v),
            (Builtin::Equals, [x, y]) => Fv::Bool(self.equals(*x, *y)?),
            (Builtin::NotEquals, [x, y]) => Fv::Bool(!self.equals(*x, *y)?),
            (Builtin::Less | Builtin::LessEquals | Builtin::Greater | Builtin::GreaterEquals, [x, y]) => {
                let ordering = match (x, y) {
                    (Fv::Int(x), Fv::Int(y)) => x.cmp(y),
                    (Fv::Str(x), Fv::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
                    (Fv::Bool(x), Fv::Bool(y)) => x.cmp(y),
                    (Fv::Timestamp(x), Fv::Timestamp(y)) => x.cmp(y),
                    (Fv::Duration(x), Fv::Duration(y)) => x.cmp(y),
                    _ => return Err(Bail),
                };
                Fv::Bool(match b {
                    Builtin::Less => ordering.is_lt(),
                    Builtin::LessEquals => ordering.is_le(),
                    Builtin::Greater => ordering.is_gt(),
                    _ => ordering.is_ge(),
                })
            }
            (Builtin::Add | Builtin::Subtract | Builtin::Multiply | Builtin::Divide | Builtin::Modulo, [x, y]) => {
                let (x, y) = (scalar_value(*x)?, scalar_value(*y)?);
                match stdlib::arithmetic(b, &x, &y) {
                    Some(Ok(Value::Int(i))) => Fv::Int(i),
                    Some(Ok(Value::Timestamp(t))) => Fv::Timestamp(t),
                    Some(Ok(Value::Duration(d))) => Fv::Duration(d),
                    _ => return Err(Bail),
                }
            }
            (Builtin::Negate, [Fv::Int(i)]) => Fv::Int(i.checked_neg().ok_or(Bail)?),
            (Builtin::Index, [Fv::Map(m, decl), Fv::Str(k)]) => from_json(m.get(*k).ok_or(Bail)?, decl)?,
            (Builtin::Index, [Fv::List(items, elem), Fv::Int(i)]) => {
                from_json(usize::try_from(*i).ok().and_then(|i| items.get(i)).ok_or(Bail)?, elem)?
            }
            (Builtin::Index, [Fv::Built(l), Fv::Int(i)]) => {
                *self.lists.get(*l).and_then(|l| usize::try_from(*i).ok().and_then(|i| l.get(i))).ok_or(Bail)?
            }
            (Builtin::In | Builtin::InSet, [k, Fv::Map(m, _)]) => {
                Fv::Bool(matches!(k, Fv::Str(k) if m.contains_key(*k)))
            }
            (Builtin::In | Builtin::InSet, [v, Fv::List(items, elem)]) => {
                for item in items.iter() {
                    if self.equals(*v, from_json(item, elem)?)? {
                        return Ok(Fv::Bool(true));
                    }
                }
                Fv::Bool(false)
            }
            (Builtin::In | Builtin::InSet, [v, Fv::Built(l)]) => {
                let len = self.lists.get(*l).ok_or(Bail)?.len();
                for i in 0..len {
                    let item = *self.lists.get(*l).and_then(|l| l.get(i)).ok_or(Bail)?;
                    if self.equals(*v, item)? {
                        return Ok(Fv::Bool(true));
                    }
                }
                Fv::Bool(false)
            }
            (Builtin::Size, [v]) => Fv::Int(i64::try_from(self.size(*v).ok_or(Bail)?).map_err(|_| Bail)?),
            (Builtin::Contains, [Fv::Str(s), Fv::Str(sub)]) => Fv::Bool(s.contains(sub)),
            (Builtin::StartsWith, [Fv::Str(s), Fv::Str(p)]) => Fv::Bool(s.starts_with(p)),
            (Builtin::EndsWith, [Fv::Str(s), Fv::Str(p)]) => Fv::Bool(s.ends_with(p)),
            (Builtin::Matches, [Fv::Str(s), Fv::Str(p)]) => Fv::Bool(self.patterns.get(p).ok_or(Bail)?.is_match(s)),
            _ => return Err(Bail),
        })
    }

    /// `stdlib::builtin_cost` on fast values.
    fn builtin_cost(&self, b: Builtin, args: &[Fv<'r>]) -> Fast<u64> {
        let size = |i: usize| args.get(i).map_or(Some(1), |v| self.cost_size(*v)).ok_or(Bail);
        let is_text = |i: usize| matches!(args.get(i), Some(Fv::Str(_)));
        Ok(match b {
            Builtin::StartsWith | Builtin::EndsWith => stdlib::traversal_cost(size(0)?),
            Builtin::InSet => 0,
            Builtin::In if matches!(args.get(1), Some(Fv::List(..) | Fv::Built(_))) => size(1)?,
            Builtin::Equals | Builtin::NotEquals => stdlib::traversal_cost(size(0)?.min(size(1)?)),
            Builtin::Less | Builtin::LessEquals | Builtin::Greater | Builtin::GreaterEquals
                if is_text(0) && is_text(1) =>
            {
                stdlib::traversal_cost(size(0)?.min(size(1)?))
            }
            Builtin::Add if is_text(0) && is_text(1) => stdlib::traversal_cost(size(0)?.saturating_add(size(1)?)),
            Builtin::Matches => stdlib::matches_cost(size(0)?, size(1)?),
            Builtin::Contains => stdlib::contains_cost(size(0)?, size(1)?),
            _ => 1,
        })
    }

    /// `Value::cost_size`.
    fn cost_size(&self, v: Fv<'r>) -> Option<u64> {
        Some(match v {
            Fv::Str(s) => s.chars().count() as u64,
            Fv::List(items, _) => items.len() as u64,
            Fv::Map(m, _) => m.len() as u64,
            Fv::Built(l) => self.lists.get(l)?.len() as u64,
            _ => 1,
        })
    }

    /// `size()`: of strings, lists and maps only.
    fn size(&self, v: Fv<'r>) -> Option<u64> {
        matches!(v, Fv::Str(_) | Fv::List(..) | Fv::Map(..) | Fv::Built(_)).then(|| self.cost_size(v)).flatten()
    }

    /// `value::equals` for scalars; structured values give up.
    fn equals(&self, x: Fv<'r>, y: Fv<'r>) -> Fast<bool> {
        Ok(match (x, y) {
            (Fv::Object(..) | Fv::List(..) | Fv::Map(..) | Fv::Built(_), _)
            | (_, Fv::Object(..) | Fv::List(..) | Fv::Map(..) | Fv::Built(_)) => return Err(Bail),
            (Fv::Null, Fv::Null) => true,
            (Fv::Bool(x), Fv::Bool(y)) => x == y,
            (Fv::Int(x), Fv::Int(y)) => x == y,
            (Fv::Str(x), Fv::Str(y)) => x == y,
            (Fv::Timestamp(x), Fv::Timestamp(y)) => x == y,
            (Fv::Duration(x), Fv::Duration(y)) => x == y,
            (Fv::Type(x), Fv::Type(y)) => x == y,
            // Scalars of different kinds (no doubles or unsigned here) are not equal.
            _ => false,
        })
    }
}

/// Whether cel-go plans the node as an attribute (`eval::attribute`).
fn is_attribute(n: &Node) -> bool {
    matches!(
        n,
        Node::SelfVar
            | Node::OldSelfVar
            | Node::Local(_)
            | Node::Field { .. }
            | Node::VarField { .. }
            | Node::Conditional(_)
            | Node::Call(Builtin::Index, _)
    )
}
