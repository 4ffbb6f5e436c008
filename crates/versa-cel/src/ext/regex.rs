//! Kubernetes' regex library: `<string>.find(<pattern>)` (the first match, or `""`) and
//! `<string>.findAll(<pattern>[, n])` (all matches, at most `n` when `n >= 0`).
//!
//! Patterns are Go RE2 patterns, compiled with `versa_schema::pattern` (Go's syntax and error
//! texts): literal ones (here and in `matches`) once, with the expression
//! ([`LiteralPatterns`](crate::runtime::LiteralPatterns)), computed ones once per evaluation. A
//! literal pattern that does not compile fails the rule at definition time
//! ([`literal_pattern_error`], Kubernetes' regex optimisation at program instantiation). At runtime
//! a bad pattern is `Illegal regex: <Go error>`. Cost: `(1 + size(string)) × 0.1` rounded up, times
//! `size(pattern) × 0.25` rounded up.

use super::{Res, ceil_cost, list_of_strings, str_size, text};
use crate::ast::{Expr, ExprKind, Literal};
use crate::runtime::{CallContext, EvalError, no_overload};
use crate::types::Type;
use crate::value::Value;

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    use Type::{Int, String as Str};
    add("find", true, vec![Str, Str], Str);
    add("findAll", true, vec![Str, Str], Type::list(Str));
    add("findAll", true, vec![Str, Str, Int], Type::list(Str));
}

/// The Go error of the first `find`/`findAll` whose pattern is a literal that does not compile.
pub fn literal_pattern_error(expr: &Expr) -> Option<String> {
    let mut error = None;
    expr.walk(&mut |e| {
        if error.is_some() {
            return;
        }
        if let ExprKind::Call { function, target: Some(_), args } = &e.kind
            && (function == "find" || function == "findAll")
            && let Some(ExprKind::Literal(Literal::String(p))) = args.first().map(|a| &a.kind)
            && let Err(err) = versa_schema::pattern::compile(p)
        {
            error = Some(err.to_string());
        }
    });
    error
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    if !member || !matches!(function, "find" | "findAll") {
        return None;
    }
    Some(find(calls, function, args))
}

fn find<'a>(calls: &mut CallContext<'_>, function: &str, args: &[Value<'a>]) -> Res<'a> {
    let (Some(s), Some(p)) = (args.first().and_then(text), args.get(1).and_then(text)) else {
        return Err(no_overload(function));
    };
    let limit = match args.get(2) {
        None => -1,
        Some(Value::Int(n)) if function == "findAll" => *n,
        Some(_) => return Err(no_overload(function)),
    };
    let str_cost = ceil_cost((1.0 + str_size(&args[0]) as f64) * 0.1);
    let re_cost = ceil_cost(str_size(&args[1]) as f64 * 0.25);
    calls.charge(str_cost.saturating_mul(re_cost))?;
    let re = calls.regex(p).map_err(|e| EvalError::new(format!("Illegal regex: {e}")))?;
    if function == "find" {
        return Ok(Value::string(re.find(s).map_or("", |m| m.as_str())));
    }
    let matches = re.find_iter(s).map(|m| m.as_str().to_owned());
    let found: Vec<String> = if limit < 0 { matches.collect() } else { matches.take(limit as usize).collect() };
    Ok(list_of_strings(found))
}
