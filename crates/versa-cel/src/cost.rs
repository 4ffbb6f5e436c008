//! The static cost estimate of a compiled expression: cel-go's `checker/cost.go` estimator with
//! Kubernetes' size estimator (apiextensions `schema/cel/compilation.go`, `sizeEstimator`), so
//! that a definition is accepted or refused with Kubernetes' numbers.
//!
//! The estimate is a range of abstract cost units. Identifiers and field selections cost 1,
//! literals 0, list/map/struct literals 10/30/40 plus their parts, and most functions 1 plus
//! their arguments. What makes rules expensive is traversal: string functions cost 0.1 per byte
//! of the worst-case string (`contains` the product of both sizes, `matches` the string size
//! times a quarter of the pattern size), `in` on a list its size, and a comprehension (`all`,
//! `exists`, `filter`, `map`, `transformList`, ...) runs its loop condition and step once per
//! element of the worst-case range. A two-variable comprehension's variables are sized as
//! cel-go sizes them: a list's element by its items, a map's value by additionalProperties, a
//! list index as an int. Worst-case sizes come from the [`DeclType`] of `self`: `maxItems`,
//! `maxProperties`, `maxLength` (×4 bytes), or, when absent, what fits in a 3 MiB request.
//!
//! The functions of the Kubernetes libraries ([`crate::ext`]) are estimated as Kubernetes'
//! `library.CostEstimator.EstimateCallCost` estimates them, and cel-go's list and set
//! extensions with their own estimators (which cel-go consults first); see `library_cost`.

use crate::ast::{ACCUMULATOR_VAR, ExprKind, LEGACY_ACCUMULATOR_VAR, Literal, op};
use crate::types::{DeclKind, DeclType, MAX_REQUEST_SIZE_BYTES, Type};
use crate::{CompiledExpression, Expr};

/// Per-expression limit on the estimated cost of a definition's rule (`StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// Limit on the estimated cost of all rules of one schema (`StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;
const LIST_CREATE_BASE_COST: u64 = 10;
const MAP_CREATE_BASE_COST: u64 = 30;
const STRUCT_CREATE_BASE_COST: u64 = 40;

/// A range of cost units (cel-go `CostEstimate`); arithmetic saturates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostEstimate {
    pub min: u64,
    pub max: u64,
}

impl CostEstimate {
    const fn fixed(c: u64) -> CostEstimate {
        CostEstimate { min: c, max: c }
    }

    fn add(self, o: CostEstimate) -> CostEstimate {
        CostEstimate { min: self.min.saturating_add(o.min), max: self.max.saturating_add(o.max) }
    }

    fn multiply(self, o: CostEstimate) -> CostEstimate {
        CostEstimate { min: self.min.saturating_mul(o.min), max: self.max.saturating_mul(o.max) }
    }

    /// cel-go `MultiplyByCostFactor`: scaled and rounded up.
    fn scale(self, factor: f64) -> CostEstimate {
        let f = |v: u64| {
            let x = (v as f64 * factor).ceil();
            if x >= u64::MAX as f64 { u64::MAX } else { x as u64 }
        };
        CostEstimate { min: f(self.min), max: f(self.max) }
    }

    fn union(self, o: CostEstimate) -> CostEstimate {
        CostEstimate { min: self.min.min(o.min), max: self.max.max(o.max) }
    }
}

/// The element a list-building comprehension appends in its step (`@result + [elem]`, possibly
/// under a filter's `?:`): `x` for `filter`, the mapped expression for `map` and
/// `transformList`. `None` for any other comprehension.
fn appended_element(c: &crate::ast::Comprehension) -> Option<&Expr> {
    fn find<'e>(e: &'e Expr, accu: &str) -> Option<&'e Expr> {
        match &e.kind {
            ExprKind::Call { function, args, .. } if function == op::ADD => match args.as_slice() {
                [a, b] if matches!(&a.kind, ExprKind::Ident(n) if n == accu) => match &b.kind {
                    ExprKind::List { elements, .. } if elements.len() == 1 => elements.first(),
                    _ => None,
                },
                _ => None,
            },
            ExprKind::Call { args, .. } => args.iter().find_map(|a| find(a, accu)),
            _ => None,
        }
    }
    if !matches!(&c.accu_init.kind, ExprKind::List { elements, .. } if elements.is_empty()) {
        return None;
    }
    find(&c.loop_step, &c.accu_var)
}

/// Whether a comprehension keeps some of its range's elements as they are: an empty list
/// accumulator whose step appends the iteration variable itself (`filter`).
fn is_filter(c: &crate::ast::Comprehension) -> bool {
    c.iter_var2.is_none()
        && appended_element(c).is_some_and(|x| matches!(&x.kind, ExprKind::Ident(n) if *n == c.iter_var))
}

/// How many times data of a type whose smallest JSON form is `min_serialized_size` bytes can
/// occur in one request (apiextensions `maxCardinality`): one comma per element assumed.
pub fn max_cardinality(min_serialized_size: i64) -> u64 {
    let size = min_serialized_size.max(0).saturating_add(1);
    (MAX_REQUEST_SIZE_BYTES / size) as u64
}

/// The estimated cost of one run of `compiled`, whose `self` (and `oldSelf`) is `self_type`.
pub fn estimate_cost(compiled: &CompiledExpression, self_type: &DeclType) -> CostEstimate {
    let mut c = Coster {
        compiled,
        root: self_type,
        iter_ranges: Vec::new(),
        paths: Vec::new(),
        sizes: Vec::new(),
        element_sizes: Vec::new(),
    };
    c.cost(&compiled.ast.expr)
}

/// A path from `self` through fields, `@items`, `@keys` and `@values`, for size lookups.
type FieldPath = Vec<String>;

/// What a comprehension variable is bound to in each iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IterRole {
    /// The only variable: a list's element, a map's key.
    Single,
    /// The first of two: a list's index, a map's key.
    Key,
    /// The second of two: a list's element, a map's value.
    Value,
}

struct Coster<'a> {
    compiled: &'a CompiledExpression,
    root: &'a DeclType,
    /// Comprehension variables in scope, innermost last, with their range and what of it they
    /// are bound to.
    iter_ranges: Vec<(String, &'a Expr, IterRole)>,
    paths: Vec<(u32, FieldPath)>,
    /// Sizes computed for comprehension and concatenation results.
    sizes: Vec<(u32, CostEstimate)>,
    /// The size of the elements of lists built by `map()` and `transformList()` (cel-go's
    /// entry sizes): the mapped expression's.
    element_sizes: Vec<(u32, CostEstimate)>,
}

impl<'a> Coster<'a> {
    fn ty(&self, e: &Expr) -> Type {
        self.compiled.checked.types.get(e.id as usize).cloned().unwrap_or(Type::Dyn)
    }

    fn path(&self, e: &Expr) -> Option<&FieldPath> {
        self.paths.iter().rev().find(|(id, _)| *id == e.id).map(|(_, p)| p)
    }

    fn cost(&mut self, e: &'a Expr) -> CostEstimate {
        match &e.kind {
            ExprKind::Literal(_) => CostEstimate::default(),
            ExprKind::Ident(name) => {
                let path = match self.iter_ranges.iter().rev().find(|(v, _, _)| v == name) {
                    Some((_, range, role)) => {
                        // cel-go's pushIterSingle/pushIterKey/pushIterValue: `@indices` names
                        // no schema node, so a list index is sized by its type (an int).
                        let suffix = match (self.ty(range), role) {
                            (Type::List(_), IterRole::Single | IterRole::Value) => Some("@items"),
                            (Type::List(_), IterRole::Key) => Some("@indices"),
                            (Type::Map(..), IterRole::Single | IterRole::Key) => Some("@keys"),
                            (Type::Map(..), IterRole::Value) => Some("@values"),
                            _ => None,
                        };
                        match (self.path(range).cloned(), suffix) {
                            (Some(mut p), Some(s)) => {
                                p.push(s.to_owned());
                                Some(p)
                            }
                            // An element of a list `map()` built: the mapped expression's size.
                            (None, Some("@items")) => {
                                if let Some((_, size)) = self.element_sizes.iter().rev().find(|(id, _)| *id == range.id)
                                {
                                    self.sizes.push((e.id, *size));
                                }
                                None
                            }
                            _ => None,
                        }
                    }
                    // Accumulators have no path: their size is not the schema's.
                    None if name == ACCUMULATOR_VAR || name == LEGACY_ACCUMULATOR_VAR => None,
                    None => Some(vec![name.clone()]),
                };
                if let Some(p) = path {
                    self.paths.push((e.id, p));
                }
                CostEstimate::fixed(1)
            }
            ExprKind::Select { operand, field, test_only } => {
                if *test_only {
                    return CostEstimate::fixed(1).add(self.cost(operand));
                }
                let mut sum = self.cost(operand);
                if matches!(self.ty(operand), Type::Map(..) | Type::Object(_) | Type::Param(_)) {
                    sum = sum.add(CostEstimate::fixed(1));
                }
                if let Some(mut p) = self.path(operand).cloned() {
                    p.push(field.clone());
                    self.paths.push((e.id, p));
                }
                sum
            }
            ExprKind::Call { function, target, args } => self.call(e, function, target.as_deref(), args),
            ExprKind::List { elements, .. } => {
                elements.iter().fold(CostEstimate::fixed(LIST_CREATE_BASE_COST), |s, el| s.add(self.cost(el)))
            }
            ExprKind::Map { entries } => entries.iter().fold(CostEstimate::fixed(MAP_CREATE_BASE_COST), |s, en| {
                let k = self.cost(&en.key);
                s.add(k).add(self.cost(&en.value))
            }),
            ExprKind::Struct { fields, .. } => {
                fields.iter().fold(CostEstimate::fixed(STRUCT_CREATE_BASE_COST), |s, f| s.add(self.cost(&f.value)))
            }
            ExprKind::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                let scope_base = self.iter_ranges.len();
                match &c.iter_var2 {
                    None => self.iter_ranges.push((c.iter_var.clone(), &c.iter_range, IterRole::Single)),
                    Some(var2) => {
                        self.iter_ranges.push((c.iter_var.clone(), &c.iter_range, IterRole::Key));
                        self.iter_ranges.push((var2.clone(), &c.iter_range, IterRole::Value));
                    }
                }
                let loop_cost = self.cost(&c.loop_condition);
                let step_cost = self.cost(&c.loop_step);
                self.iter_ranges.truncate(scope_base);
                sum = sum.add(self.cost(&c.result));
                let range = self.size(&c.iter_range);
                // A comprehension building a list or map (`map`, `filter`) has as many entries as
                // its range; one folding into a value (`all`, `exists`) has that value's size.
                let result_size = match c.accu_init.kind {
                    ExprKind::List { .. } | ExprKind::Map { .. } => Some(range),
                    ExprKind::Literal(_) => Some(self.size(&c.accu_init)),
                    _ => None,
                };
                if let Some(size) = result_size {
                    self.sizes.push((e.id, size));
                }
                // A filter's result holds elements of its range: they keep the range's element
                // sizes (cel-go carries them through), so `l.filter(...).all(x, ...)` costs
                // `x` as an element of `l`.
                if is_filter(c) {
                    if let Some(p) = self.path(&c.iter_range).cloned() {
                        self.paths.push((e.id, p));
                    }
                } else if let Some(elem) = appended_element(c) {
                    // A mapped list's elements have the mapped expression's size (cel-go 0.23
                    // and later), so `l.map(x, x.name).all(n, ...)` costs `n` as a name.
                    let size = self.size(elem);
                    self.element_sizes.push((e.id, size));
                }
                sum.add(range.multiply(step_cost.add(loop_cost)))
            }
        }
    }

    fn call(&mut self, e: &'a Expr, function: &str, target: Option<&'a Expr>, args: &'a [Expr]) -> CostEstimate {
        // `sets.contains(...)`, `format.named(...)`: namespaced global functions, resolved as the
        // checker resolves them (no receiver to cost).
        if let Some(t) = target
            && let Some(q) = qualified_name(t)
        {
            let name = format!("{q}.{function}");
            if crate::check::overloads().contains_key(name.as_str()) {
                return self.call(e, &name, None, args);
            }
        }
        // `dyn(x)` only switches type checking off: x plus one, with x's size.
        if function == "dyn"
            && target.is_none()
            && let [arg] = args
        {
            let cost = self.cost(arg);
            let size = self.size(arg);
            self.sizes.push((e.id, size));
            if let Some(p) = self.path(arg).cloned() {
                self.paths.push((e.id, p));
            }
            return CostEstimate::fixed(1).add(cost);
        }
        let arg_costs: Vec<CostEstimate> = args.iter().map(|a| self.cost(a)).collect();
        let arg_sum = arg_costs.iter().fold(CostEstimate::default(), |s, c| s.add(*c));
        let mut sum = CostEstimate::default();
        if let Some(t) = target {
            sum = sum.add(self.cost(t));
        }
        if let Some((cost, size)) = self.library_cost(function, target, args) {
            if let Some(size) = size {
                self.sizes.push((e.id, size));
            }
            return sum.add(cost).add(arg_sum);
        }
        let is_string_like = |t: &Type| matches!(t, Type::String | Type::Bytes);
        let fn_cost = match (function, target, args) {
            (op::LOGICAL_AND | op::LOGICAL_OR, None, [_, _]) => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                CostEstimate { min: l.min, max: l.add(r).max }
            }
            (op::CONDITIONAL, None, [_, _, _]) => {
                let (c, t, f) = (arg_costs[0], arg_costs[1], arg_costs[2]);
                c.add(t.union(f))
            }
            ("startsWith" | "endsWith", Some(_), [prefix]) => {
                self.size(prefix).scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum)
            }
            ("matches", Some(t), [pattern]) => {
                let s = self.size(t).add(CostEstimate::fixed(1)).scale(STRING_TRAVERSAL_COST_FACTOR);
                let r = self.size(pattern).scale(REGEX_STRING_LENGTH_COST_FACTOR);
                s.multiply(r).add(arg_sum)
            }
            ("contains", Some(t), [sub]) if is_string_like(&self.ty(t)) => {
                let s = self.size(t).scale(STRING_TRAVERSAL_COST_FACTOR);
                let sub = self.size(sub).scale(STRING_TRAVERSAL_COST_FACTOR);
                s.multiply(sub).add(arg_sum)
            }
            (op::IN, None, [_, list]) if matches!(self.ty(list), Type::List(_)) => self.size(list).add(arg_sum),
            (op::ADD, None, [l, r]) if matches!(self.ty(l), Type::String | Type::Bytes | Type::List(_)) => {
                let (ls, rs) = (self.size(l), self.size(r));
                let size = ls.add(rs);
                self.sizes.push((e.id, size));
                if matches!(self.ty(l), Type::List(_)) {
                    CostEstimate::fixed(1).add(arg_sum)
                } else {
                    size.scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum)
                }
            }
            (
                op::EQUALS | op::NOT_EQUALS | op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS,
                None,
                [l, r],
            ) if function == op::EQUALS
                || function == op::NOT_EQUALS
                || (is_string_like(&self.ty(l)) && is_string_like(&self.ty(r))) =>
            {
                let smallest_max = self.size(l).max.min(self.size(r).max);
                let min = u64::from(smallest_max > 0);
                CostEstimate { min, max: smallest_max }.scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum)
            }
            _ => CostEstimate::fixed(1).add(arg_sum),
        };
        if function == op::INDEX
            && let [container, _] = args
            && let Some(mut p) = self.path(container).cloned()
        {
            match self.ty(container) {
                Type::List(_) => p.push("@items".into()),
                Type::Map(..) => p.push("@values".into()),
                _ => {}
            }
            self.paths.push((e.id, p));
        }
        sum.add(fn_cost)
    }

    /// The size of the elements of list `e` (Kubernetes' `listElementNode`): a mapped list's
    /// element size, the schema's `@items` size when the list has a path, else unknown.
    fn element_size(&self, e: &Expr) -> CostEstimate {
        if let Some((_, size)) = self.element_sizes.iter().rev().find(|(id, _)| *id == e.id) {
            return *size;
        }
        if let Some(p) = self.path(e) {
            let mut p = p.clone();
            p.push("@items".into());
            if let Some(max) = self.schema_size(&p) {
                return CostEstimate { min: 0, max };
            }
        }
        CostEstimate { min: 0, max: u64::MAX }
    }

    /// Kubernetes' `EstimateCallCost` for its libraries, and cel-go's estimators for the
    /// strings, lists and sets extensions: the call's own cost (arguments excluded) and, when
    /// known, the size of its result.
    fn library_cost(
        &mut self,
        function: &str,
        target: Option<&'a Expr>,
        args: &'a [Expr],
    ) -> Option<(CostEstimate, Option<CostEstimate>)> {
        const STF: f64 = STRING_TRAVERSAL_COST_FACTOR;
        let fixed = CostEstimate::fixed;
        let allocating = |factor: f64, size: CostEstimate| {
            (size.scale(factor).add(fixed(1)).add(fixed(LIST_CREATE_BASE_COST)), Some(size))
        };
        let literal_int = |e: &Expr, default: u64| match &e.kind {
            ExprKind::Literal(Literal::Int(i)) => (*i).max(0) as u64,
            _ => default,
        };
        let target_ty = target.map(|t| self.ty(t));
        Some(match (function, target, args) {
            // cel-go's lists extension.
            ("slice", Some(t), [start, end]) if matches!(target_ty, Some(Type::List(_))) => {
                let sz = self.size(t);
                let n = literal_int(end, sz.max).wrapping_sub(literal_int(start, 0));
                allocating(1.0, fixed(n))
            }
            ("flatten", Some(t), rest) if rest.len() <= 1 && matches!(target_ty, Some(Type::List(_))) => {
                let depth = rest.first().map_or(1, |d| literal_int(d, u64::MAX));
                allocating(depth as f64, self.size(t))
            }
            ("lists.range", None, [n]) => allocating(1.0, fixed(literal_int(n, u64::MAX))),
            ("reverse", Some(t), []) if matches!(target_ty, Some(Type::List(_))) => allocating(1.0, self.size(t)),
            ("distinct", Some(t), []) => {
                let sz = self.size(t);
                allocating(2.0, sz.multiply(sz))
            }
            ("sort", Some(t), []) | ("@sortByAssociatedKeys", Some(_), [t]) => {
                let sz = self.size(t);
                let factor = match self.ty(t) {
                    Type::List(el) if matches!(*el, Type::String | Type::Bytes) => 2.0 + STF,
                    _ => 2.0,
                };
                allocating(factor, sz.multiply(sz))
            }
            // cel-go's sets extension.
            ("sets.contains" | "sets.intersects" | "sets.equivalent", None, [a, b]) => {
                let factor = if function == "sets.equivalent" { 2.0 } else { 1.0 };
                (self.size(a).multiply(self.size(b)).scale(factor).add(fixed(1)), None)
            }
            // cel-go's strings extension.
            ("format", Some(t), [_]) => (self.size(t).scale(STF), None),
            ("strings.quote", None, [s]) => {
                let sz = self.size(s);
                (sz.scale(STF), Some(CostEstimate { min: sz.min, max: sz.max.saturating_mul(4) }))
            }
            // Kubernetes' library.CostEstimator.
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", Some(t), _) => match target_ty {
                Some(Type::List(el)) => {
                    let mut el_cost = fixed(1);
                    if matches!(*el, Type::String | Type::Bytes) {
                        el_cost = el_cost.add(self.element_size(t).scale(STF));
                    }
                    (self.size(t).multiply(el_cost), None)
                }
                _ => (self.size(t).scale(STF), None),
            },
            ("url", None, [s]) => {
                let sz = self.size(s);
                (sz.scale(STF), Some(sz))
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(t), _) => {
                let sz = self.size(t);
                (sz.scale(STF), Some(sz))
            }
            ("replace", Some(t), [from, to, ..]) => {
                let (sz, from_sz, to_sz) = (self.size(t), self.size(from), self.size(to));
                let (mut count, mut retained) = (CostEstimate::default(), CostEstimate::default());
                if from_sz.min == 0 {
                    count.max = if sz.max < u64::MAX { sz.max + 1 } else { sz.max };
                    retained.max = sz.max;
                } else if to_sz.max <= from_sz.min {
                    retained.max = sz.max;
                } else {
                    count.max = (sz.max as f64 / from_sz.min as f64).ceil() as u64;
                }
                if from_sz.max == 0 {
                    count.min = if sz.min < u64::MAX { sz.min + 1 } else { sz.min };
                    retained.min = sz.min;
                } else if from_sz.max <= to_sz.min {
                    retained.min = sz.min;
                } else {
                    count.min = (sz.min as f64 / from_sz.max as f64).ceil() as u64;
                }
                (sz.scale(2.0 * STF), Some(count.multiply(to_sz).add(retained)))
            }
            ("split", Some(t), rest) => {
                let sz = self.size(t);
                let max = match rest.get(1).map(|e| &e.kind) {
                    Some(ExprKind::Literal(Literal::Int(i))) => *i as u64,
                    _ => sz.max,
                };
                (sz.scale(2.0 * STF), Some(CostEstimate { min: 0, max }))
            }
            ("join", Some(t), rest) => {
                let list = self.size(t);
                let mut sz = match target_ty {
                    Some(Type::List(_)) => list.multiply(self.element_size(t)),
                    _ => CostEstimate::default(),
                };
                if let Some(sep) = rest.first() {
                    let seps = CostEstimate { min: list.min.saturating_sub(1), max: list.max.saturating_sub(1) };
                    sz = sz.add(self.size(sep).multiply(seps));
                }
                (sz.scale(STF), Some(sz))
            }
            ("find" | "findAll", Some(t), [pattern, ..]) => {
                let sz = self.size(t);
                let str_cost = sz.add(fixed(1)).scale(STF);
                let re_cost = self.size(pattern).scale(REGEX_STRING_LENGTH_COST_FACTOR);
                (str_cost.multiply(re_cost), Some(CostEstimate { min: 0, max: sz.max }))
            }
            ("ip", Some(_), []) => (fixed(1), None),
            ("containsIP" | "containsCIDR", Some(_), [other]) => {
                let sz = CostEstimate { min: 4, max: 16 };
                let mut cost = sz.add(sz).scale(STF);
                if function == "containsCIDR" {
                    cost = cost.add(sz.scale(STF)).add(fixed(1));
                }
                if matches!(self.ty(other), Type::String) {
                    cost = cost.add(self.size(other).scale(STF));
                }
                (cost, None)
            }
            ("validate", Some(_), [s]) => (
                self.size(s)
                    .scale(STF)
                    .scale(crate::ext::format::MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR),
                None,
            ),
            (op::EQUALS, None, [l, _]) if matches!(self.ty(l), Type::Opaque(_)) => (fixed(1), None),
            _ => return None,
        })
    }

    /// cel-go `sizeEstimate`: a literal's or computed size, else the schema's worst case, else 1
    /// for scalars and unbounded for the rest.
    fn size(&self, e: &Expr) -> CostEstimate {
        if let Some((_, s)) = self.sizes.iter().rev().find(|(id, _)| *id == e.id) {
            return *s;
        }
        let literal = match &e.kind {
            ExprKind::Literal(Literal::String(s)) => Some(s.chars().count() as u64),
            ExprKind::Literal(Literal::Bytes(b)) => Some(b.len() as u64),
            ExprKind::Literal(_) => Some(1),
            ExprKind::List { elements, .. } => Some(elements.len() as u64),
            ExprKind::Map { entries } => Some(entries.len() as u64),
            _ => None,
        };
        if let Some(n) = literal {
            return CostEstimate::fixed(n);
        }
        if let Some(p) = self.path(e)
            && let Some(max) = self.schema_size(p)
        {
            return CostEstimate { min: 0, max };
        }
        match self.ty(e) {
            Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => {
                CostEstimate::fixed(1)
            }
            _ => CostEstimate { min: 0, max: u64::MAX },
        }
    }

    /// Kubernetes' `sizeEstimator.EstimateSize`: follows the path below the root (whatever
    /// variable it starts from, as upstream) to the declared type's maximum element count.
    fn schema_size(&self, path: &FieldPath) -> Option<u64> {
        let mut node = self.root;
        for step in path.iter().skip(1) {
            node = match (&node.kind, step.as_str()) {
                (DeclKind::List { elem, .. }, "@items") => elem,
                (DeclKind::Map { value }, "@values") => value,
                // Keys are Kubernetes' plain `StringType`, which declares no size.
                (DeclKind::Map { .. }, "@keys") => return Some(0),
                (DeclKind::Object(o), field) => &o.fields.get(field)?.ty,
                _ => return None,
            };
        }
        Some(node.max_elements.unwrap_or(0).max(0) as u64)
    }
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
