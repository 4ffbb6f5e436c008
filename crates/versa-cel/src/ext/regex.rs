//! Kubernetes' regex library: `<string>.find(<pattern>)` (the first match, or `""`) and
//! `<string>.findAll(<pattern>[, n])` (all matches, at most `n` when `n >= 0`).
//!
//! Patterns are Go RE2 patterns, compiled with `versa_schema::pattern` (Go's syntax and error
//! texts): literal ones (here and in `matches`) once, with the expression ([`LiteralPatterns`]),
//! computed ones once per evaluation. A literal pattern that does not compile fails the rule at
//! definition time ([`literal_pattern_error`], Kubernetes' regex optimisation at program
//! instantiation). At runtime a bad pattern is `Illegal regex: <Go error>`. Cost: `(1 +
//! size(string)) × 0.1` rounded up, times `size(pattern) × 0.25` rounded up.

use super::{Res, ceil_cost, list_of_strings, str_size, text};
use crate::ast::{Expr, ExprKind, Literal};
use crate::eval::{EvalError, Interp, no_overload};
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
            error = Some(err);
        }
    });
    error
}

/// The regular expressions of an expression's literal patterns (`matches`, `find`, `findAll`
/// with a string literal), compiled once with the expression instead of at every evaluation.
#[derive(Clone, Debug, Default)]
pub struct LiteralPatterns(std::sync::Arc<std::collections::HashMap<String, ::regex::Regex>>);

impl PartialEq for LiteralPatterns {
    /// Equal patterns compile to equal regular expressions.
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.0.keys().all(|k| other.0.contains_key(k))
    }
}

impl LiteralPatterns {
    /// Compiles the literal patterns of `expr` (those that do not compile are left to fail at
    /// evaluation, with the evaluation's error).
    pub(crate) fn of(expr: &Expr) -> LiteralPatterns {
        let mut map = std::collections::HashMap::new();
        expr.walk(&mut |e| {
            let ExprKind::Call { function, target, args } = &e.kind else { return };
            let pattern = match (function.as_str(), target.is_some(), args.as_slice()) {
                ("matches" | "find" | "findAll", true, [p, ..]) | ("matches", false, [_, p]) => p,
                _ => return,
            };
            if let ExprKind::Literal(Literal::String(p)) = &pattern.kind
                && !map.contains_key(p)
                && let Ok(re) = versa_schema::pattern::compile(p)
            {
                map.insert(p.clone(), re);
            }
        });
        LiteralPatterns(std::sync::Arc::new(map))
    }

    pub(crate) fn get(&self, pattern: &str) -> Option<&::regex::Regex> {
        self.0.get(pattern)
    }
}

pub(crate) fn call<'a>(
    interp: &mut Interp<'a, '_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    if !member || !matches!(function, "find" | "findAll") {
        return None;
    }
    Some(find(interp, function, args))
}

fn find<'a>(interp: &mut Interp<'a, '_>, function: &str, args: &[Value<'a>]) -> Res<'a> {
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
    interp.charge(str_cost.saturating_mul(re_cost))?;
    let re = interp.regex(p).map_err(|e| EvalError::new(format!("Illegal regex: {e}")))?;
    if function == "find" {
        return Ok(Value::string(re.find(s).map_or("", |m| m.as_str())));
    }
    let matches = re.find_iter(s).map(|m| m.as_str().to_owned());
    let found: Vec<String> = if limit < 0 { matches.collect() } else { matches.take(limit as usize).collect() };
    Ok(list_of_strings(found))
}
