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
//! element of the worst-case range. Worst-case sizes come from the [`DeclType`] of `self`:
//! `maxItems`, `maxProperties`, `maxLength` (×4 bytes), or, when absent, what fits in a 3 MiB
//! request, found by following an expression's field path (see [`FieldPath`]): an iteration
//! variable's is its range's plus `@items`, `@keys`, `@values` or `@indices`, so a list's
//! element is sized by its items, a map's value by additionalProperties, a list index as an int.
//! Calls have no path; cel-go sizes some results itself: string and list concatenations (the sum
//! of both sides), `string(bytes)` and `bytes(string)` (the other conversions give none),
//! `?:`, `strings.quote`, and the entries of list and map literals. A call with a `dyn`
//! argument is estimated for every overload the argument may call, and covers them all.
//!
//! The functions of the Kubernetes libraries ([`crate::ext`]) are estimated as Kubernetes'
//! `library.CostEstimator.EstimateCallCost` estimates them, and cel-go's list and set
//! extensions with their own estimators (which cel-go consults first); see `library_cost`.

use std::collections::HashMap;

use crate::ast::{ACCUMULATOR_VAR, ExprKind, Literal, op};
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
/// The longest name of a format (`cel.MaxFormatSize`).
const MAX_FORMAT_SIZE: u64 = 64;

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

/// How many times data of a type whose smallest JSON form is `min_serialized_size` bytes can
/// occur in one request (apiextensions `maxCardinality`): one comma per element assumed.
pub fn max_cardinality(min_serialized_size: i64) -> u64 {
    let size = min_serialized_size.max(0).saturating_add(1);
    (MAX_REQUEST_SIZE_BYTES / size) as u64
}

/// The estimated cost of one run of `compiled`, whose `self` (and `oldSelf`) is `self_type`.
pub fn estimate_cost(compiled: &CompiledExpression, self_type: &DeclType) -> CostEstimate {
    Coster::new(compiled, self_type, false).run()
}

/// [`estimate_cost`] for a versa conversion rule, which builds values where a validation rule
/// only tests them: the same estimate, except that `lists.range(n)` with `n` a field of `self`
/// is bounded by that field's `maximum` (Kubernetes knows no bound but a literal's, so
/// `lists.range(t.quantity)` would be unbounded however `quantity` is declared).
pub fn estimate_conversion_cost(compiled: &CompiledExpression, self_type: &DeclType) -> CostEstimate {
    Coster::new(compiled, self_type, true).run()
}

/// A path from a variable through fields, `@items`, `@keys`, `@values` and `@indices`, for
/// size lookups (cel-go's field paths). A variable's, a selection's, an index's and an
/// iteration variable's path extend their operand's, and the operand may have none: a call,
/// a literal, a comprehension. Such a path starts with what was appended (`["f"]` for
/// `dyn(self.obj).f`, `["@items"]` for `x` in `[a, b].all(x, ...)`), and since Kubernetes'
/// size estimator skips a path's first element (the variable), it is looked up from `self`:
/// upstream's estimate, kept as it is.
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

/// The sizes of a container's entries, when cel-go can tell them (`entrySizeEstimate`): list
/// and map literals, and what is built from them (`+` on lists, `?:`, `map()`/`filter()`
/// results, `dyn()`, bindings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EntrySize {
    list: bool,
    /// A list's index (always 1) or a map's key.
    key: CostEstimate,
    /// A list's element or a map's value.
    val: CostEstimate,
}

impl EntrySize {
    /// cel-go `entrySizeEstimate.union`: unknown unless both are known.
    fn union(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
        let (a, b) = (a?, b?);
        Some(EntrySize { list: a.list, key: a.key.union(b.key), val: a.val.union(b.val) })
    }
}

/// A comprehension's accumulator, a binding (`cel.bind`, `optMap`, `sortBy`) or an iteration
/// variable, as cel-go's coster tracks it in scope.
struct LocalVar {
    name: String,
    path: FieldPath,
    size: Option<CostEstimate>,
    entry: Option<EntrySize>,
}

/// cel-go's estimate of one overload of a call: its cost (arguments included) and, when known,
/// the size of its result.
type CallEstimate = (CostEstimate, Option<CostEstimate>);

/// How many bytes or code points, at least and at most (cel-go `SizeEstimate`); kept as a
/// [`CostEstimate`], whose arithmetic is the same.
type SizeEstimate = CostEstimate;

const UNKNOWN_SIZE: SizeEstimate = CostEstimate { min: 0, max: u64::MAX };

/// A map key as the size estimator sees it: a string without a declared size.
static KEY_TYPE: DeclType =
    DeclType { kind: DeclKind::Scalar(Type::String), max_elements: Some(0), min_serialized_size: 0, int_maximum: None };

struct Coster<'a> {
    compiled: &'a CompiledExpression,
    root: &'a DeclType,
    /// Variables in scope, innermost last.
    locals: Vec<LocalVar>,
    /// Field paths of identifiers, selections and indexes, by node id.
    paths: HashMap<u32, FieldPath>,
    /// Sizes computed for call and comprehension results, by node id.
    sizes: HashMap<u32, SizeEstimate>,
    /// Entry sizes of containers, by node id.
    entries: HashMap<u32, EntrySize>,
    /// Estimating a conversion rule ([`estimate_conversion_cost`]).
    conversion: bool,
}

impl<'a> Coster<'a> {
    fn new(compiled: &'a CompiledExpression, root: &'a DeclType, conversion: bool) -> Coster<'a> {
        Coster {
            compiled,
            root,
            locals: Vec::new(),
            paths: HashMap::new(),
            sizes: HashMap::new(),
            entries: HashMap::new(),
            conversion,
        }
    }

    fn run(mut self) -> CostEstimate {
        self.cost(&self.compiled.ast.expr)
    }

    fn ty(&self, e: &Expr) -> Type {
        self.compiled.checked.types.get(e.id as usize).cloned().unwrap_or(Type::Dyn)
    }

    fn local(&self, name: &str) -> Option<&LocalVar> {
        self.locals.iter().rev().find(|v| v.name == name)
    }

    /// The field path of `e`, `None` when it has none (or an empty one).
    fn path(&self, e: &Expr) -> Option<&FieldPath> {
        self.paths.get(&e.id).filter(|p| !p.is_empty())
    }

    /// `e`'s path with `step` appended (a path of its own when `e` has none).
    fn path_with(&self, e: &Expr, step: &str) -> FieldPath {
        let mut p = self.path(e).cloned().unwrap_or_default();
        p.push(step.to_owned());
        p
    }

    /// cel-go `computeEntrySize`.
    fn entry(&self, e: &Expr) -> Option<EntrySize> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        match &e.kind {
            ExprKind::Ident(name) => self.local(name).and_then(|v| v.entry),
            _ => None,
        }
    }

    /// cel-go `pushLocalVar`: an accumulator or a binding, with its initializer's path and sizes.
    fn push_local(&mut self, name: &str, init: &Expr) {
        let var = LocalVar {
            name: name.to_owned(),
            path: self.path(init).cloned().unwrap_or_default(),
            size: self.size_opt(init),
            entry: self.entry(init),
        };
        self.locals.push(var);
    }

    /// cel-go `pushIterSingle`/`pushIterKey`/`pushIterValue`: an iteration variable's path is
    /// its range's plus `@items`, `@indices`, `@keys` or `@values`, by whether the range is a
    /// list.
    fn push_iter(&mut self, name: &str, range: &Expr, role: IterRole) {
        let entry = self.entry(range);
        let list = entry.map_or(matches!(self.ty(range), Type::List(_)), |s| s.list);
        let (step, size) = match (role, list) {
            (IterRole::Single | IterRole::Value, true) => ("@items", entry.map(|s| s.val)),
            (IterRole::Single | IterRole::Key, false) => ("@keys", entry.map(|s| s.key)),
            (IterRole::Key, true) => ("@indices", entry.map(|s| s.key)),
            (IterRole::Value, false) => ("@values", entry.map(|s| s.val)),
        };
        let path = self.path_with(range, step);
        self.locals.push(LocalVar { name: name.to_owned(), path, size, entry: None });
    }

    fn cost(&mut self, e: &'a Expr) -> CostEstimate {
        match &e.kind {
            ExprKind::Literal(_) => CostEstimate::default(),
            ExprKind::Ident(name) => {
                let path = self.local(name).map_or_else(|| vec![name.clone()], |v| v.path.clone());
                self.paths.insert(e.id, path);
                CostEstimate::fixed(1)
            }
            // A selection naming a type (`google.protobuf.Duration`, `net.IP`): cel-go's
            // checker rewrites it into one identifier, estimated as identifiers are.
            ExprKind::Select { .. } if let crate::plan::Step::TypeName(t) = self.compiled.plan.step(e.id) => {
                self.paths.insert(e.id, vec![(*t).to_owned()]);
                CostEstimate::fixed(1)
            }
            ExprKind::Select { operand, field, test_only } => {
                // `has()` costs nothing of its own: Kubernetes turns cel-go's presence test
                // cost off (`PresenceTestHasCost(false)`).
                if *test_only {
                    return self.cost(operand);
                }
                let mut sum = self.cost(operand);
                if matches!(self.ty(operand), Type::Map(..) | Type::Object(_) | Type::Param(_)) {
                    sum = sum.add(CostEstimate::fixed(1));
                }
                let path = self.path_with(operand, field);
                self.paths.insert(e.id, path);
                sum
            }
            ExprKind::Call { function, target, args } => self.call(e, function, target.as_deref(), args),
            ExprKind::List { elements, .. } => {
                let mut sum = CostEstimate::fixed(LIST_CREATE_BASE_COST);
                let mut item = CostEstimate { min: if elements.is_empty() { 0 } else { u64::MAX }, max: 0 };
                for el in elements {
                    sum = sum.add(self.cost(el));
                    item = item.union(self.size(el));
                }
                self.entries.insert(e.id, EntrySize { list: true, key: CostEstimate::fixed(1), val: item });
                sum
            }
            ExprKind::Map { entries } => {
                let mut sum = CostEstimate::fixed(MAP_CREATE_BASE_COST);
                let start = CostEstimate { min: if entries.is_empty() { 0 } else { u64::MAX }, max: 0 };
                let (mut key, mut val) = (start, start);
                for en in entries {
                    sum = sum.add(self.cost(&en.key));
                    sum = sum.add(self.cost(&en.value));
                    key = key.union(self.size(&en.key));
                    val = val.union(self.size(&en.value));
                }
                self.entries.insert(e.id, EntrySize { list: false, key, val });
                sum
            }
            ExprKind::Struct { fields, .. } => {
                fields.iter().fold(CostEstimate::fixed(STRUCT_CREATE_BASE_COST), |s, f| s.add(self.cost(&f.value)))
            }
            ExprKind::Comprehension(c) if is_bind(c) => {
                // cel-go `costBind`: the value once, the result once, with the variable bound.
                let sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                self.push_local(&c.accu_var, &c.accu_init);
                let sum = sum.add(self.cost(&c.result));
                self.locals.pop();
                self.copy_sizes(e, &c.result);
                sum
            }
            ExprKind::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                let scope_base = self.locals.len();
                self.push_local(&c.accu_var, &c.accu_init);
                match &c.iter_var2 {
                    None => self.push_iter(&c.iter_var, &c.iter_range, IterRole::Single),
                    Some(var2) => {
                        self.push_iter(&c.iter_var, &c.iter_range, IterRole::Key);
                        self.push_iter(var2, &c.iter_range, IterRole::Value);
                    }
                }
                let loop_cost = self.cost(&c.loop_condition);
                let step_cost = self.cost(&c.loop_step);
                self.locals.truncate(scope_base + 1);
                sum = sum.add(self.cost(&c.result));
                self.locals.truncate(scope_base);
                let range = self.size(&c.iter_range);
                // A comprehension folding into a value (`all`, `exists`) has that value's size;
                // one building a list or map (`map`, `filter`) as many entries as its range, and
                // the entry sizes of what its step builds.
                match c.accu_init.kind {
                    ExprKind::Literal(_) => {
                        let size = self.size(&c.accu_init);
                        self.sizes.insert(e.id, size);
                    }
                    ExprKind::List { .. } | ExprKind::Map { .. } => {
                        self.sizes.insert(e.id, range);
                        if let Some(entry) = self.entry(&c.loop_step) {
                            self.entries.insert(e.id, entry);
                        }
                    }
                    _ => {}
                }
                sum.add(range.multiply(step_cost.add(loop_cost)))
            }
        }
    }

    /// cel-go `copySizeEstimates`: `dst` gets `src`'s size and entry sizes (not its path).
    fn copy_sizes(&mut self, dst: &Expr, src: &Expr) {
        if let Some(size) = self.size_opt(src) {
            self.sizes.insert(dst.id, size);
        }
        if let Some(entry) = self.entry(src) {
            self.entries.insert(dst.id, entry);
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
        // `dyn(x)` only switches type checking off: x plus one, with x's sizes but not its path.
        if function == "dyn"
            && target.is_none()
            && let [arg] = args
        {
            let cost = self.cost(arg);
            self.copy_sizes(e, arg);
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
                self.sizes.insert(e.id, size);
            }
            return sum.add(cost).add(arg_sum);
        }
        // cel-go estimates every overload the checker found for the call (more than one when
        // an argument is `dyn`) and takes the range covering them all, and the union of the
        // result sizes they give; without one, the result is sized as any expression.
        let mut fn_cost: Option<CostEstimate> = None;
        let mut result: Option<SizeEstimate> = None;
        for params in matching_overloads(function, target.is_some(), &self.arg_types(target, args)) {
            let (cost, size) = self.overload_cost(e, function, &params, target, args, &arg_costs, arg_sum);
            fn_cost = Some(fn_cost.map_or(cost, |c| c.union(cost)));
            if let Some(size) = size {
                result = Some(result.map_or(size, |r| r.union(size)));
            }
            // An index has its container's entry size, and extends its path.
            if function == op::INDEX
                && let [container, _] = args
            {
                let step = match params.first() {
                    Some(Type::List(_)) => Some("@items"),
                    Some(Type::Map(..)) => Some("@values"),
                    _ => None,
                };
                if let Some(step) = step {
                    result = self.entry(container).map(|s| s.val);
                    let path = self.path_with(container, step);
                    self.paths.insert(e.id, path);
                }
            }
            if result.is_none() {
                result = self.size_opt(e);
            }
        }
        if let Some(size) = result {
            self.sizes.insert(e.id, size);
        }
        sum.add(fn_cost.unwrap_or_else(|| CostEstimate::fixed(1).add(arg_sum)))
    }

    fn arg_types(&self, target: Option<&Expr>, args: &[Expr]) -> Vec<Type> {
        target.into_iter().chain(args).map(|a| self.ty(a)).collect()
    }

    /// cel-go's `functionCost` for one overload of a standard function, given by its parameter
    /// types (the receiver's first).
    #[allow(clippy::too_many_arguments, reason = "the call as cel-go's coster sees it")]
    fn overload_cost(
        &mut self,
        e: &Expr,
        function: &str,
        params: &[Type],
        target: Option<&Expr>,
        args: &[Expr],
        arg_costs: &[CostEstimate],
        arg_sum: CostEstimate,
    ) -> CallEstimate {
        let string_like = |t: Option<&Type>| matches!(t, Some(Type::String | Type::Bytes));
        let (first, second) = (params.first(), params.get(1));
        match (function, target, args) {
            (op::LOGICAL_AND | op::LOGICAL_OR, None, [_, _]) => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                (CostEstimate { min: l.min, max: l.add(r).max }, None)
            }
            (op::CONDITIONAL, None, [_, t, f]) => {
                let size = self.size(t).union(self.size(f));
                if let Some(entry) = EntrySize::union(self.entry(t), self.entry(f)) {
                    self.entries.insert(e.id, entry);
                }
                (arg_costs[0].add(arg_costs[1].union(arg_costs[2])), Some(size))
            }
            // string(bytes): a traversal; at least a quarter of the bytes in code points.
            ("string", None, [b]) if first == Some(&Type::Bytes) => {
                let sz = self.size(b);
                (
                    sz.scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum),
                    Some(CostEstimate { min: sz.min / 4, max: sz.max }),
                )
            }
            // bytes(string): a traversal; up to four bytes a code point (cel-go multiplies as Go
            // does, without saturating).
            ("bytes", None, [s]) if first == Some(&Type::String) => {
                let sz = self.size(s);
                let size = CostEstimate { min: sz.min, max: sz.max.wrapping_mul(4) };
                (sz.scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), Some(size))
            }
            ("startsWith" | "endsWith", Some(_), [prefix]) if first == Some(&Type::String) => {
                (self.size(prefix).scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), None)
            }
            ("matches", Some(t), [pattern]) => {
                let s = self.size(t).add(CostEstimate::fixed(1)).scale(STRING_TRAVERSAL_COST_FACTOR);
                let r = self.size(pattern).scale(REGEX_STRING_LENGTH_COST_FACTOR);
                (s.multiply(r).add(arg_sum), None)
            }
            ("contains", Some(t), [sub]) if first == Some(&Type::String) => {
                let s = self.size(t).scale(STRING_TRAVERSAL_COST_FACTOR);
                let sub = self.size(sub).scale(STRING_TRAVERSAL_COST_FACTOR);
                (s.multiply(sub).add(arg_sum), None)
            }
            (op::IN, None, [_, list]) if matches!(second, Some(Type::List(_))) => (self.size(list).add(arg_sum), None),
            // Concatenation: the result is as long as both operands; strings and bytes are
            // copied, lists are not.
            (op::ADD, None, [l, r]) if string_like(first) || matches!(first, Some(Type::List(_))) => {
                let size = self.size(l).add(self.size(r));
                if let Some(entry) = EntrySize::union(self.entry(l), self.entry(r)) {
                    self.entries.insert(e.id, entry);
                }
                if matches!(first, Some(Type::List(_))) {
                    (CostEstimate::fixed(1).add(arg_sum), Some(size))
                } else {
                    (size.scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), Some(size))
                }
            }
            (op::EQUALS | op::NOT_EQUALS, None, [l, r])
            | (op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS, None, [l, r])
                if function == op::EQUALS || function == op::NOT_EQUALS || string_like(first) =>
            {
                let smallest_max = self.size(l).max.min(self.size(r).max);
                let min = u64::from(smallest_max > 0);
                (CostEstimate { min, max: smallest_max }.scale(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum), None)
            }
            _ => (CostEstimate::fixed(1).add(arg_sum), None),
        }
    }

    /// The size of the elements of list `e` (Kubernetes' `listElementNode`): the schema's
    /// `@items` size when the list has a path, else unknown.
    fn element_size(&self, e: &Expr) -> CostEstimate {
        if let Some(p) = self.path(e) {
            let mut p = p.clone();
            p.push("@items".into());
            if let Some(max) = self.schema_size(&p) {
                return CostEstimate { min: 0, max };
            }
        }
        UNKNOWN_SIZE
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
        let authz_target = matches!(target_ty, Some(Type::Opaque(n)) if n.starts_with("kubernetes.authorization."));
        Some(match (function, target, args) {
            // Kubernetes' authorization library: a check is fixed, the rest nominal.
            ("check", Some(_), [_]) if authz_target => (fixed(crate::ext::authz::CHECK_COST), None),
            (_, Some(_), _) if authz_target => (fixed(1), None),
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
            ("lists.range", None, [n]) => {
                let bound = match self.conversion {
                    true => self.path(n).and_then(|p| self.schema_node(p)).and_then(|t| t.int_maximum),
                    false => None,
                };
                allocating(1.0, fixed(literal_int(n, bound.map_or(u64::MAX, |m| m.max(0) as u64))))
            }
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
            // cel-go's core estimator: every character may be escaped, and two quotes are
            // added (computed as Go computes it, wrapping: an unbounded string's quote has a
            // maximum size of 0).
            ("strings.quote", None, [s]) => {
                let sz = self.size(s);
                let size = CostEstimate { min: sz.min.wrapping_add(2), max: sz.max.wrapping_mul(2).wrapping_add(2) };
                (sz.scale(STF), Some(size))
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
            ("url" | "jsonpatch.escapeKey", None, [s]) => {
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
            // Parsing a string into a library type is a traversal of the string (Kubernetes
            // 1.34 and later; before, these cost 1), `ip.isCanonical` two.
            ("quantity" | "isQuantity" | "semver" | "isSemver" | "cidr" | "isIP" | "isCIDR" | "ip", None, [s, ..]) => {
                (self.size(s).scale(STF), None)
            }
            ("ip.isCanonical", None, [s]) => (self.size(s).scale(2.0 * STF), None),
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
                    .scale(crate::opaque::format::MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR),
                None,
            ),
            // Equality of two values of one library type: 1, but for URLs (0.1 per byte of the
            // right side's computed size: Kubernetes sizes both sides by it) and formats (of at
            // most `MaxFormatSize` bytes).
            (op::EQUALS, None, [l, r]) if matches!(self.ty(l), Type::Opaque(_)) && self.ty(l) == self.ty(r) => {
                match self.ty(l) {
                    Type::Opaque(crate::opaque::URL_TYPE) => {
                        let size = self.computed_size(r).unwrap_or(fixed(1));
                        (CostEstimate { min: 1, max: size.max }.scale(STF), None)
                    }
                    Type::Opaque(crate::opaque::FORMAT_TYPE) => {
                        (CostEstimate { min: 1, max: MAX_FORMAT_SIZE }.scale(STF), None)
                    }
                    _ => (fixed(1), None),
                }
            }
            _ => return None,
        })
    }

    /// cel-go `AstNode.ComputedSize`: a size computed for a call or comprehension, or a
    /// literal's; no path or type is consulted.
    fn computed_size(&self, e: &Expr) -> Option<SizeEstimate> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        Some(CostEstimate::fixed(match &e.kind {
            ExprKind::Literal(Literal::String(s)) => s.chars().count() as u64,
            ExprKind::Literal(Literal::Bytes(b)) => b.len() as u64,
            ExprKind::Literal(_) => 1,
            ExprKind::List { elements, .. } => elements.len() as u64,
            ExprKind::Map { entries } => entries.len() as u64,
            _ => return None,
        }))
    }

    /// cel-go `sizeOrUnknown`: [`Self::size_opt`], or unbounded.
    fn size(&self, e: &Expr) -> SizeEstimate {
        self.size_opt(e).unwrap_or(UNKNOWN_SIZE)
    }

    /// cel-go `computeSize`: a computed size, a literal's, the schema's worst case for a path,
    /// 1 for scalars, a variable's own (an accumulator's or binding's initializer's), else
    /// unknown.
    fn size_opt(&self, e: &Expr) -> Option<SizeEstimate> {
        if let Some(s) = self.computed_size(e) {
            return Some(s);
        }
        if let Some(p) = self.path(e)
            && let Some(max) = self.schema_size(p)
        {
            return Some(CostEstimate { min: 0, max });
        }
        if is_scalar(&self.ty(e)) {
            return Some(CostEstimate::fixed(1));
        }
        match &e.kind {
            ExprKind::Ident(name) => self.local(name).and_then(|v| v.size),
            _ => None,
        }
    }

    /// Kubernetes' `sizeEstimator.EstimateSize`: follows the path below the root (whatever
    /// its first element, as upstream) to the declared type's maximum element count. `@items`
    /// and `@values` both step into a list's items or a map's values, `@keys` into a map's
    /// keys (Kubernetes' plain `StringType`, which declares no size).
    fn schema_size(&self, path: &FieldPath) -> Option<u64> {
        let node = self.schema_node(path)?;
        Some(node.max_elements.unwrap_or(0).max(0) as u64)
    }

    /// The declared type at `path` below the root (see [`Self::schema_size`]).
    fn schema_node(&self, path: &FieldPath) -> Option<&'a DeclType> {
        let mut node = self.root;
        let steps = path.get(1..).unwrap_or_default();
        for (i, step) in steps.iter().enumerate() {
            node = match (&node.kind, step.as_str()) {
                (DeclKind::List { elem, .. }, "@items" | "@values") => elem,
                (DeclKind::Map { value }, "@items" | "@values") => value,
                (DeclKind::Map { .. }, "@keys") => return (i + 1 == steps.len()).then_some(&KEY_TYPE),
                (DeclKind::Object(o), field) => &o.fields.get(field)?.ty,
                _ => return None,
            };
        }
        Some(node)
    }
}

/// cel-go `isScalar`: a type of constant size (not strings, bytes or containers).
fn is_scalar(t: &Type) -> bool {
    match t {
        Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => true,
        Type::Optional(inner) => is_scalar(inner),
        _ => false,
    }
}

/// cel-go `isBind`: the comprehension `cel.bind` (and `optMap`, `sortBy`) expands to.
fn is_bind(c: &crate::ast::Comprehension) -> bool {
    matches!(&c.iter_range.kind, ExprKind::List { elements, .. } if elements.is_empty())
        && matches!(c.loop_condition.kind, ExprKind::Literal(Literal::Bool(false)))
        && c.accu_var != ACCUMULATOR_VAR
}

/// The parameter types (the receiver's first) of the overloads of `function` the checker can
/// have chosen for arguments of types `args`: one, unless an argument is `dyn` (cel-go keeps
/// every overload such an argument may call).
fn matching_overloads(function: &str, member: bool, args: &[Type]) -> Vec<Vec<Type>> {
    crate::check::overloads()
        .get(function)
        .into_iter()
        .flatten()
        .filter(|ov| {
            ov.member == member
                && ov.params.len() == args.len()
                && args.iter().zip(&ov.params).all(|(a, p)| may_assign(a, p))
        })
        .map(|ov| ov.params.clone())
        .collect()
}

/// Whether a checked argument of type `arg` can be passed for parameter `param`.
fn may_assign(arg: &Type, param: &Type) -> bool {
    match (arg, param) {
        (Type::Dyn | Type::Param(_) | Type::Error, _) | (_, Type::Dyn | Type::Param(_)) => true,
        (Type::List(_), Type::List(_)) | (Type::Map(..), Type::Map(..)) => true,
        (Type::Optional(a), Type::Optional(p)) => may_assign(a, p),
        (a, p) => a == p,
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
