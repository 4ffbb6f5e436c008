//! Kubernetes' semver library: `semver(string[, normalize])`, `isSemver(string[, normalize])`
//! and the members `major`, `minor`, `patch`, `compareTo`, `isGreaterThan`, `isLessThan`.
//!
//! Parsing is blang/semver v4's strict `Parse` (with its error texts); `normalize` first drops
//! a leading `v`, strips leading zeros and fills a missing minor or patch with 0, as
//! Kubernetes' `normalizeAndParse`. Precedence is Semantic Versioning 2.0's (build metadata is
//! ignored, also by `==`). Parsing costs 0.1 per code point, the members 1.

use std::cmp::Ordering;

use super::{Res, as_opaque, charged, parse_string, text};
use crate::opaque::{
    Opaque, SEMVER_TYPE,
    semver::{Semver, normalize_and_parse, parse},
};
use crate::runtime::{CallContext, no_overload};
use crate::types::Type;
use crate::value::Value;

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let v = || Type::Opaque(SEMVER_TYPE);
    add("semver", false, vec![Type::String], v());
    add("semver", false, vec![Type::String, Type::Bool], v());
    add("isSemver", false, vec![Type::String], Type::Bool);
    add("isSemver", false, vec![Type::String, Type::Bool], Type::Bool);
    for f in ["major", "minor", "patch"] {
        add(f, true, vec![v()], Type::Int);
    }
    add("isGreaterThan", true, vec![v(), v()], Type::Bool);
    add("isLessThan", true, vec![v(), v()], Type::Bool);
    add("compareTo", true, vec![v(), v()], Type::Int);
}

fn semver_of<'v>(v: &'v Value<'_>) -> Option<&'v Semver> {
    match as_opaque(v) {
        Some(Opaque::Semver(s)) => Some(s),
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
        ("semver" | "isSemver", false) => {
            let s = args.first().and_then(text)?;
            let normalize = match args.get(1) {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Some(Err(no_overload(function))),
            };
            let parsed = || if normalize { normalize_and_parse(s) } else { parse(s) };
            Some(parse_string(calls, &args[0], function == "isSemver", parsed, Opaque::Semver))
        }
        ("major" | "minor" | "patch" | "isGreaterThan" | "isLessThan" | "compareTo", true) => {
            let v = args.first().and_then(semver_of)?;
            let as_int = |n: u64| Value::Int(n as i64);
            Some(charged(calls, 1, || match (function, &args[1..]) {
                ("major", []) => Ok(as_int(v.major)),
                ("minor", []) => Ok(as_int(v.minor)),
                ("patch", []) => Ok(as_int(v.patch)),
                (_, [o]) => match semver_of(o) {
                    Some(o) => {
                        let ord = v.compare(o);
                        Ok(match function {
                            "isGreaterThan" => Value::Bool(ord == Ordering::Greater),
                            "isLessThan" => Value::Bool(ord == Ordering::Less),
                            _ => Value::Int(ord as i64),
                        })
                    }
                    None => Err(no_overload(function)),
                },
                _ => Err(no_overload(function)),
            }))
        }
        _ => None,
    }
}
