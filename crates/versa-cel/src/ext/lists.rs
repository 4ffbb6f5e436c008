//! List functions: Kubernetes' lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//! `lastIndexOf`), cel-go's lists extension as Kubernetes enables it (`slice`, `flatten`,
//! `sort`, `sortBy` through `@sortByAssociatedKeys`, `lists.range`, `reverse`, `distinct`,
//! `first`, `last`) and cel-go's sets extension (`sets.contains`, `sets.equivalent`,
//! `sets.intersects`).
//!
//! Runtime costs: the Kubernetes functions charge one traversal of the list (Kubernetes'
//! `traversalCost`: 1 per scalar, 0.1 per byte of strings, recursively through lists and
//! maps); cel-go's list functions charge the size of what they build plus 11 (the call and a
//! list allocation), and quadratic functions (`distinct`, `sort`) twice the square of the size
//! (2.1 for strings and bytes); the set functions 1 plus the product of both sizes (twice that
//! for `sets.equivalent`). Every charge is made before the work it pays for.

use std::cmp::Ordering;
use std::sync::Arc;

use super::Res;
use crate::runtime::{CallContext, EvalError, no_overload};
use crate::types::Type;
use crate::value::{List, Value, compare, equals};

const LIST_CREATE_BASE_COST: u64 = 10;
const CALL_COST: u64 = 1;

/// The element types that order (cel-go's `comparableTypes`).
fn comparable_types() -> [Type; 8] {
    use Type::*;
    [Int, Uint, Double, Bool, Duration, Timestamp, String, Bytes]
}

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let a = || Type::param("A");
    let list = Type::list;
    for t in comparable_types() {
        add("isSorted", true, vec![list(t.clone())], Type::Bool);
        add("max", true, vec![list(t.clone())], t.clone());
        add("min", true, vec![list(t.clone())], t.clone());
        add("sort", true, vec![list(t.clone())], list(t.clone()));
        add("@sortByAssociatedKeys", true, vec![list(a()), list(t)], list(a()));
    }
    for t in [Type::Int, Type::Uint, Type::Double, Type::Duration] {
        add("sum", true, vec![list(t.clone())], t);
    }
    add("indexOf", true, vec![list(a()), a()], Type::Int);
    add("lastIndexOf", true, vec![list(a()), a()], Type::Int);
    add("slice", true, vec![list(a()), Type::Int, Type::Int], list(a()));
    add("flatten", true, vec![list(list(a()))], list(a()));
    add("flatten", true, vec![list(Type::Dyn), Type::Int], list(Type::Dyn));
    add("lists.range", false, vec![Type::Int], list(Type::Int));
    add("reverse", true, vec![list(a())], list(a()));
    add("distinct", true, vec![list(a())], list(a()));
    add("first", true, vec![list(a())], Type::optional(a()));
    add("last", true, vec![list(a())], Type::optional(a()));
    for f in ["sets.contains", "sets.equivalent", "sets.intersects"] {
        add(f, false, vec![list(a()), list(a())], Type::Bool);
    }
}

/// Kubernetes' `traversalCost`: the cost of walking a value as a data tree.
pub(crate) fn traversal_cost(v: &Value<'_>, depth: u32) -> Result<u64, EvalError> {
    if depth > 256 {
        return Err(EvalError::new("value nesting too deep"));
    }
    Ok(match v {
        Value::String(s) => super::strings::string_traversal(s),
        Value::Bytes(b) => (b.len() as f64 * 0.1) as u64,
        Value::List(l) => {
            let mut cost = 0u64;
            for i in 0..l.len() {
                cost = cost.saturating_add(traversal_cost(&l.get(i)?, depth + 1)?);
            }
            cost
        }
        Value::Map(m) => {
            let mut cost = 0u64;
            for k in m.keys() {
                cost = cost.saturating_add(traversal_cost(&k, depth + 1)?);
                if let Some(v) = m.get(&k)? {
                    cost = cost.saturating_add(traversal_cost(&v, depth + 1)?);
                }
            }
            cost
        }
        Value::Object(o) => {
            let mut cost = 0u64;
            for name in o.ty.fields.keys() {
                if let Some(v) = o.field(name)? {
                    cost = cost.saturating_add(super::strings::string_traversal(name));
                    cost = cost.saturating_add(traversal_cost(&v, depth + 1)?);
                }
            }
            cost
        }
        _ => 1,
    })
}

/// cel-go's `trackAllocatingListCall`.
fn allocating(factor: f64, size: u64) -> u64 {
    ((size as f64 * factor) as u64).saturating_add(CALL_COST + LIST_CREATE_BASE_COST)
}

/// cel-go's `trackListSelfCompare`: quadratic in the size, 2.1 for strings and bytes.
fn self_compare_cost(l: &List<'_>) -> Result<u64, EvalError> {
    let n = l.len() as u64;
    if n == 0 {
        return Ok(allocating(2.0, 0));
    }
    let factor = match l.get(0)? {
        Value::String(_) | Value::Bytes(_) => 2.0 + 0.1,
        _ => 2.0,
    };
    Ok(allocating(factor, n.saturating_mul(n)))
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    let known = match (function, member) {
        ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", true) => {
            matches!(args.first(), Some(Value::List(_)))
        }
        ("slice" | "flatten" | "sort" | "@sortByAssociatedKeys" | "reverse" | "distinct" | "first" | "last", true) => {
            matches!(args.first(), Some(Value::List(_)))
        }
        ("lists.range" | "sets.contains" | "sets.equivalent" | "sets.intersects", false) => true,
        _ => false,
    };
    if !known {
        return None;
    }
    Some(dispatch(calls, function, args))
}

fn dispatch<'a>(calls: &mut CallContext<'_>, function: &str, args: &[Value<'a>]) -> Res<'a> {
    let nso = || no_overload(function);
    if function == "lists.range" {
        let [Value::Int(n)] = args else { return Err(nso()) };
        let n = (*n).max(0) as u64;
        calls.charge(allocating(1.0, n))?;
        return Ok(Value::list((0..n as i64).map(Value::Int).collect()));
    }
    if let Some(kind) = function.strip_prefix("sets.") {
        let [Value::List(a), Value::List(b)] = args else { return Err(nso()) };
        let factor = if kind == "equivalent" { 2.0 } else { 1.0 };
        let product = (a.len() as u64).saturating_mul(b.len() as u64);
        calls.charge(CALL_COST.saturating_add((product as f64 * factor) as u64))?;
        let result = match kind {
            "contains" => contains_all(a, b)?,
            "equivalent" => contains_all(a, b)? && contains_all(b, a)?,
            _ => intersects(a, b)?,
        };
        return Ok(Value::Bool(result));
    }
    let Some(Value::List(l)) = args.first() else { return Err(nso()) };
    match (function, &args[1..]) {
        ("isSorted" | "sum" | "max" | "min", []) | ("indexOf" | "lastIndexOf", [_]) => {
            calls.charge(traversal_cost(&args[0], 0)?)?;
        }
        _ => {}
    }
    match (function, &args[1..]) {
        ("isSorted", []) => {
            for i in 1..l.len() {
                if compare(&l.get(i - 1)?, &l.get(i)?) == Some(Ordering::Greater) {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        }
        ("sum", []) => {
            let mut acc = match (calls.call_result_type(), l.len()) {
                (Some(Type::Uint), _) => Value::Uint(0),
                (Some(Type::Double), _) => Value::Double(0.0),
                (Some(Type::Duration), _) => Value::Duration(0),
                (_, 0) => Value::Int(0),
                _ => match l.get(0)? {
                    Value::Uint(_) => Value::Uint(0),
                    Value::Double(_) => Value::Double(0.0),
                    Value::Duration(_) => Value::Duration(0),
                    _ => Value::Int(0),
                },
            };
            for i in 0..l.len() {
                acc = add(&acc, &l.get(i)?).ok_or_else(nso)??;
            }
            Ok(acc)
        }
        ("max" | "min", []) => {
            let prefer = if function == "min" { Ordering::Greater } else { Ordering::Less };
            let mut best: Option<Value<'a>> = None;
            for i in 0..l.len() {
                let next = l.get(i)?;
                best = Some(match best {
                    Some(b) if compare(&b, &next) == Some(prefer) => next,
                    Some(b) => b,
                    None => next,
                });
            }
            best.ok_or_else(|| EvalError::new(format!("{function} called on empty list")))
        }
        ("indexOf", [item]) => {
            for i in 0..l.len() {
                if equals(&l.get(i)?, item)? {
                    return Ok(Value::Int(i as i64));
                }
            }
            Ok(Value::Int(-1))
        }
        ("lastIndexOf", [item]) => {
            for i in (0..l.len()).rev() {
                if equals(&l.get(i)?, item)? {
                    return Ok(Value::Int(i as i64));
                }
            }
            Ok(Value::Int(-1))
        }
        ("slice", [Value::Int(start), Value::Int(end)]) => {
            let (start, end) = (*start, *end);
            let len = l.len() as i64;
            if start < 0 || end < 0 {
                return Err(EvalError::new(format!("cannot slice({start}, {end}), negative indexes not supported")));
            }
            if start > end {
                return Err(EvalError::new(format!(
                    "cannot slice({start}, {end}), start index must be less than or equal to end index"
                )));
            }
            if len < end {
                return Err(EvalError::new(format!("cannot slice({start}, {end}), list is length {len}")));
            }
            calls.charge(allocating(1.0, (end - start) as u64))?;
            let items: Result<Vec<_>, _> = (start as usize..end as usize).map(|i| l.get(i)).collect();
            Ok(Value::list(items?))
        }
        ("flatten", rest) => {
            let depth = match rest {
                [] => 1,
                [Value::Int(d)] => *d,
                _ => return Err(nso()),
            };
            if depth < 0 {
                return Err(EvalError::new("level must be non-negative"));
            }
            calls.charge(allocating(depth as f64, l.len() as u64))?;
            let mut out = Vec::new();
            flatten(l, depth, &mut out, calls)?;
            Ok(Value::list(out))
        }
        ("reverse", []) => {
            calls.charge(allocating(1.0, l.len() as u64))?;
            let mut items = l.to_vec()?;
            items.reverse();
            Ok(Value::list(items))
        }
        ("distinct", []) => {
            calls.charge(self_compare_cost(l)?)?;
            let mut out: Vec<Value<'a>> = Vec::new();
            for i in 0..l.len() {
                let v = l.get(i)?;
                let mut seen = false;
                for o in &out {
                    if equals(&v, o)? {
                        seen = true;
                        break;
                    }
                }
                if !seen {
                    out.push(v);
                }
            }
            Ok(Value::list(out))
        }
        ("sort", []) => {
            calls.charge(self_compare_cost(l)?)?;
            sort_by_keys(l, l)
        }
        ("@sortByAssociatedKeys", [Value::List(keys)]) => {
            calls.charge(self_compare_cost(keys)?)?;
            sort_by_keys(l, keys)
        }
        ("first", []) => {
            calls.charge(1)?;
            Ok(Value::Optional(if l.is_empty() { None } else { Some(Arc::new(l.get(0)?)) }))
        }
        ("last", []) => {
            calls.charge(1)?;
            Ok(Value::Optional(match l.len() {
                0 => None,
                n => Some(Arc::new(l.get(n - 1)?)),
            }))
        }
        _ => Err(nso()),
    }
}

fn add<'a>(a: &Value<'a>, b: &Value<'a>) -> Option<Res<'a>> {
    let overflow = || EvalError::new("integer overflow");
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_add(*y).map(Value::Int).ok_or_else(overflow),
        (Value::Uint(x), Value::Uint(y)) => {
            x.checked_add(*y).map(Value::Uint).ok_or_else(|| EvalError::new("unsigned integer overflow"))
        }
        (Value::Double(x), Value::Double(y)) => Ok(Value::Double(x + y)),
        (Value::Duration(x), Value::Duration(y)) => {
            x.checked_add(*y).map(Value::Duration).ok_or_else(|| EvalError::new("duration overflow"))
        }
        _ => return None,
    })
}

fn flatten<'a>(
    l: &List<'a>,
    depth: i64,
    out: &mut Vec<Value<'a>>,
    calls: &mut CallContext<'_>,
) -> Result<(), EvalError> {
    for i in 0..l.len() {
        match l.get(i)? {
            Value::List(inner) if depth > 0 => {
                // Nested levels are paid for as they are reached, so a deep flatten of a small
                // list stays cheap and a wide one is stopped by the limit.
                calls.charge(inner.len() as u64)?;
                flatten(&inner, depth - 1, out, calls)?;
            }
            v => out.push(v),
        }
    }
    Ok(())
}

fn contains_all(a: &List<'_>, b: &List<'_>) -> Result<bool, EvalError> {
    'outer: for j in 0..b.len() {
        let x = b.get(j)?;
        for i in 0..a.len() {
            if equals(&a.get(i)?, &x)? {
                continue 'outer;
            }
        }
        return Ok(false);
    }
    Ok(true)
}

fn intersects(a: &List<'_>, b: &List<'_>) -> Result<bool, EvalError> {
    for i in 0..a.len() {
        let x = a.get(i)?;
        for j in 0..b.len() {
            if equals(&b.get(j)?, &x)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Sorts `list` by the order of `keys` (cel-go `sortListByAssociatedKeys`).
fn sort_by_keys<'a>(list: &List<'a>, keys: &List<'a>) -> Res<'a> {
    if list.len() != keys.len() {
        return Err(EvalError::new(format!(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
            list.len(),
            keys.len()
        )));
    }
    if list.is_empty() {
        return Ok(Value::List(list.clone()));
    }
    let keys = keys.to_vec()?;
    let first = &keys[0];
    let comparable = matches!(
        first,
        Value::Int(_)
            | Value::Uint(_)
            | Value::Double(_)
            | Value::Bool(_)
            | Value::Duration(_)
            | Value::Timestamp(_)
            | Value::String(_)
            | Value::Bytes(_)
    );
    if !comparable {
        return Err(EvalError::new("list elements must be comparable"));
    }
    if keys.iter().any(|k| std::mem::discriminant(k) != std::mem::discriminant(first)) {
        return Err(EvalError::new("list elements must have the same type"));
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&i, &j| compare(&keys[i], &keys[j]).unwrap_or(Ordering::Equal));
    let items: Result<Vec<_>, _> = order.into_iter().map(|i| list.get(i)).collect();
    Ok(Value::list(items?))
}
