//! Kubernetes' quantity library: `quantity(string)`, `isQuantity(string)` and the members
//! `sign` (a global function), `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub` (with a quantity or an
//! int), `compareTo`, `isGreaterThan`, `isLessThan`.
//!
//! Parsing is apimachinery's `resource.ParseQuantity`: an optional sign, digits with an optional
//! fraction, and a suffix — binary (`Ki` … `Ei`), decimal SI (`n u m k M G T P E`) or a decimal
//! exponent (`e3`, `E-2`); its three error texts. The value is kept exactly, in nano units:
//! like Kubernetes, values are rounded up (away from zero) to the nearest nano, and binary-SI
//! and exponent quantities are capped at 2^63-1. Numbers too large for that representation
//! (beyond about 10^29) are refused as not numeric. Parsing charges 0.1 per code point; the
//! members charge 1.

use std::cmp::Ordering;

use super::{Res, as_opaque, charged, opaque, parse_string, text};
use crate::opaque::{
    Opaque, QUANTITY_TYPE,
    quantity::{NANO, Quantity, parse},
};
use crate::runtime::{CallContext, EvalError, no_overload};
use crate::types::Type;
use crate::value::Value;

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let q = || Type::Opaque(QUANTITY_TYPE);
    add("quantity", false, vec![Type::String], q());
    add("isQuantity", false, vec![Type::String], Type::Bool);
    // Kubernetes declares `sign` as a global function, not a member: `sign(quantity('-1'))`.
    add("sign", false, vec![q()], Type::Int);
    add("isInteger", true, vec![q()], Type::Bool);
    add("asInteger", true, vec![q()], Type::Int);
    add("asApproximateFloat", true, vec![q()], Type::Double);
    for f in ["add", "sub"] {
        add(f, true, vec![q(), q()], q());
        add(f, true, vec![q(), Type::Int], q());
    }
    add("isGreaterThan", true, vec![q(), q()], Type::Bool);
    add("isLessThan", true, vec![q(), q()], Type::Bool);
    add("compareTo", true, vec![q(), q()], Type::Int);
}

fn quantity_of(v: &Value<'_>) -> Option<Quantity> {
    match as_opaque(v) {
        Some(Opaque::Quantity(q)) => Some(*q),
        _ => None,
    }
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    match (function, member) {
        ("quantity" | "isQuantity", false) => {
            let s = args.first().and_then(text)?;
            Some(parse_string(calls, &args[0], function == "isQuantity", || parse(s), Opaque::Quantity))
        }
        ("sign", false) => {
            let q = args.first().and_then(quantity_of)?;
            Some(charged(calls, 1, || member_call(function, q, &[])))
        }
        (
            "isInteger" | "asInteger" | "asApproximateFloat" | "add" | "sub" | "isGreaterThan" | "isLessThan"
            | "compareTo",
            true,
        ) => {
            let q = args.first().and_then(quantity_of)?;
            Some(charged(calls, 1, || member_call(function, q, &args[1..])))
        }
        _ => None,
    }
}

fn member_call<'a>(function: &str, q: Quantity, rest: &[Value<'a>]) -> Res<'a> {
    let overflow = || EvalError::new("quantity overflow");
    let as_int = |q: Quantity| q.as_int64();
    let other = |v: &Value<'_>| match v {
        Value::Int(i) => Some(Quantity::from_int(*i)),
        v => quantity_of(v),
    };
    match (function, rest) {
        ("sign", []) => Ok(Value::Int(q.nanos.signum() as i64)),
        ("isInteger", []) => Ok(Value::Bool(as_int(q).is_some())),
        ("asInteger", []) => as_int(q).map(Value::Int).ok_or_else(|| EvalError::new("cannot convert value to integer")),
        ("asApproximateFloat", []) => Ok(Value::Double(q.nanos as f64 / NANO as f64)),
        ("add" | "sub", [v]) => {
            let o = other(v).ok_or_else(|| no_overload(function))?;
            let r = q.add(&o, function == "sub").ok_or_else(overflow)?;
            Ok(opaque(Opaque::Quantity(r)))
        }
        ("isGreaterThan" | "isLessThan" | "compareTo", [v]) => {
            let o = quantity_of(v).ok_or_else(|| no_overload(function))?;
            let ord = q.cmp(&o);
            Ok(match function {
                "isGreaterThan" => Value::Bool(ord == Ordering::Greater),
                "isLessThan" => Value::Bool(ord == Ordering::Less),
                _ => Value::Int(ord as i64),
            })
        }
        _ => Err(no_overload(function)),
    }
}
