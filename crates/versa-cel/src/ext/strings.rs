//! cel-go's strings extension as Kubernetes 1.36 enables it (version 2; no `reverse`, which is
//! version 3's):
//! `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`,
//! `substring`, `trim`, `join`, `strings.quote` and `format`.
//!
//! Indexes count Unicode code points, as cel-go's `[]rune` conversions do; `split`, `replace`
//! and `trim` follow Go's `strings.SplitN`, `strings.Replace` and `strings.TrimSpace` (an empty
//! separator splits into code points). Runtime costs are Kubernetes' `CallCost`: a traversal of
//! the receiver for the casing, `substring` and `trim` (0.1 per code point), twice that for
//! `replace` and `split`, twice the result for `join`, and cel-go's default of 1 for the rest.
//! `format` is cel-go's formatting with its clause set (`%s %d %f %e %b %o %x %X`, precision
//! for `%f`/`%e`) and error texts; a literal format string with a list literal of arguments is
//! checked at compile time, as cel-go's string format validator does.

use std::fmt::Write as _;

use super::{Res, ceil_cost, list_of_strings, text};
use crate::ast::{Expr, ExprId, ExprKind, Literal};
use crate::runtime::{CallContext, EvalError, no_overload};
use crate::time;
use crate::types::Type;
use crate::value::{List, Value};

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    use Type::{Int, String as Str};
    add("charAt", true, vec![Str, Int], Str);
    add("indexOf", true, vec![Str, Str], Int);
    add("indexOf", true, vec![Str, Str, Int], Int);
    add("lastIndexOf", true, vec![Str, Str], Int);
    add("lastIndexOf", true, vec![Str, Str, Int], Int);
    add("lowerAscii", true, vec![Str], Str);
    add("upperAscii", true, vec![Str], Str);
    add("replace", true, vec![Str, Str, Str], Str);
    add("replace", true, vec![Str, Str, Str, Int], Str);
    add("split", true, vec![Str, Str], Type::list(Str));
    add("split", true, vec![Str, Str, Int], Type::list(Str));
    add("substring", true, vec![Str, Int], Str);
    add("substring", true, vec![Str, Int, Int], Str);
    add("trim", true, vec![Str], Str);
    add("join", true, vec![Type::list(Str)], Str);
    add("join", true, vec![Type::list(Str), Str], Str);
    add("strings.quote", false, vec![Str], Str);
    add("format", true, vec![Str, Type::list(Type::Dyn)], Str);
}

fn out_of_range(i: i64) -> EvalError {
    EvalError::new(format!("index out of range: {i}"))
}

/// Kubernetes' `traversalCost` of a string: 0.1 per byte, rounded down.
pub(crate) fn string_traversal(s: &str) -> u64 {
    (s.len() as f64 * 0.1) as u64
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    let nso = || Some(Err(no_overload(function)));
    if function != "join" && !matches!(args.first(), Some(Value::String(_))) {
        // Not a string receiver: another library's function of the same name (`reverse` on
        // lists), or no overload at all.
        return None;
    }
    let code_points = |s: &str| s.chars().count() as u64;
    match (function, member) {
        ("charAt", true)
        | ("lowerAscii" | "upperAscii" | "substring" | "trim" | "replace" | "split", true)
        | ("strings.quote", false)
        | ("format", true) => {}
        ("indexOf" | "lastIndexOf", true) if matches!(args.first(), Some(Value::String(_))) => {}
        ("join", true) => return Some(join(calls, args)),
        _ => return None,
    }
    let Some(s) = args.first().and_then(text) else { return nso() };
    let cost = match function {
        "lowerAscii" | "upperAscii" | "substring" | "trim" | "strings.quote" | "format" => {
            ceil_cost(code_points(s) as f64 * 0.1)
        }
        "replace" | "split" => ceil_cost(code_points(s) as f64 * 2.0 * 0.1),
        "indexOf" | "lastIndexOf" => string_traversal(s),
        _ => 1,
    };
    if let Err(e) = calls.charge(cost) {
        return Some(Err(e));
    }
    let rest = &args[1..];
    Some(match (function, rest) {
        ("charAt", [Value::Int(i)]) => char_at(s, *i),
        ("indexOf", [sub]) => match text(sub) {
            Some(sub) => index_of(s, sub, None),
            None => return nso(),
        },
        ("indexOf", [sub, Value::Int(off)]) => match text(sub) {
            Some(sub) => index_of(s, sub, Some(*off)),
            None => return nso(),
        },
        ("lastIndexOf", [sub]) => match text(sub) {
            Some(sub) => last_index_of(s, sub, None),
            None => return nso(),
        },
        ("lastIndexOf", [sub, Value::Int(off)]) => match text(sub) {
            Some(sub) => last_index_of(s, sub, Some(*off)),
            None => return nso(),
        },
        ("lowerAscii", []) => Ok(Value::string(s.to_ascii_lowercase())),
        ("upperAscii", []) => Ok(Value::string(s.to_ascii_uppercase())),
        ("replace", [Value::String(from), Value::String(to)]) => Ok(Value::string(s.replace(&**from, to))),
        ("replace", [Value::String(from), Value::String(to), Value::Int(n)]) => {
            Ok(Value::string(if *n < 0 { s.replace(&**from, to) } else { s.replacen(&**from, to, *n as usize) }))
        }
        ("split", [Value::String(sep)]) => Ok(list_of_strings(split(s, sep, -1))),
        ("split", [Value::String(sep), Value::Int(n)]) => Ok(list_of_strings(split(s, sep, *n))),
        ("substring", [Value::Int(start)]) => substring(s, *start, None),
        ("substring", [Value::Int(start), Value::Int(end)]) => substring(s, *start, Some(*end)),
        ("trim", []) => Ok(Value::string(s.trim_matches(char::is_whitespace))),
        ("strings.quote", []) => Ok(Value::string(quote(s))),
        ("format", [Value::List(l)]) => format(s, l),
        _ => return nso(),
    })
}

fn char_at<'a>(s: &str, i: i64) -> Res<'a> {
    let len = s.chars().count() as i64;
    if i < 0 || i > len {
        return Err(out_of_range(i));
    }
    Ok(Value::string(s.chars().nth(i as usize).map(String::from).unwrap_or_default()))
}

fn index_of<'a>(s: &str, sub: &str, offset: Option<i64>) -> Res<'a> {
    if sub.is_empty() {
        return Ok(Value::Int(offset.unwrap_or(0)));
    }
    let runes: Vec<char> = s.chars().collect();
    let subr: Vec<char> = sub.chars().collect();
    let off = offset.unwrap_or(0);
    if off < 0 {
        return Err(out_of_range(off));
    }
    // cel-go (0.26) answers -1, not an error, for an offset past the end.
    if off >= runes.len() as i64 || subr.len() > runes.len() {
        return Ok(Value::Int(-1));
    }
    let last_start = runes.len() - subr.len();
    let found =
        (usize::try_from(off).unwrap_or(usize::MAX)..=last_start).find(|&i| runes[i..i + subr.len()] == subr[..]);
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn last_index_of<'a>(s: &str, sub: &str, offset: Option<i64>) -> Res<'a> {
    let runes: Vec<char> = s.chars().collect();
    if sub.is_empty() {
        return Ok(Value::Int(offset.unwrap_or(runes.len() as i64)));
    }
    let subr: Vec<char> = sub.chars().collect();
    let mut off = offset.unwrap_or(runes.len() as i64 - 1);
    if offset.is_some() && (off < 0 || off >= runes.len() as i64) {
        return Err(out_of_range(off));
    }
    if subr.len() > runes.len() {
        return Ok(Value::Int(-1));
    }
    off = off.min((runes.len() - subr.len()) as i64);
    let found = (0..=off.max(-1)).rev().find(|&i| {
        let i = i as usize;
        runes[i..i + subr.len()] == subr[..]
    });
    Ok(Value::Int(found.unwrap_or(-1)))
}

/// Go's `strings.SplitN` (`n < 0`: all parts).
fn split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let limit = if n < 0 || n as usize > chars.len() { chars.len() } else { n as usize };
        let mut out: Vec<String> = chars.iter().take(limit.saturating_sub(1)).map(|c| c.to_string()).collect();
        if limit > 0 {
            out.push(chars[limit - 1..].iter().collect());
        }
        return out;
    }
    if n < 0 { s.split(sep).map(String::from).collect() } else { s.splitn(n as usize, sep).map(String::from).collect() }
}

fn substring<'a>(s: &str, start: i64, end: Option<i64>) -> Res<'a> {
    let len = s.chars().count() as i64;
    if start < 0 || start > len {
        return Err(out_of_range(start));
    }
    let end_i = end.unwrap_or(len);
    if end_i < 0 || end_i > len {
        return Err(out_of_range(end_i));
    }
    if start > end_i {
        return Err(EvalError::new(format!("invalid substring range. start: {start}, end: {end_i}")));
    }
    Ok(Value::string(s.chars().skip(start as usize).take((end_i - start) as usize).collect::<String>()))
}

/// `<list(string)>.join([sep])`, charged twice the result's size × 0.1 (computed before the
/// result is built).
fn join<'a>(calls: &mut CallContext<'_>, args: &[Value<'a>]) -> Res<'a> {
    let (Some(Value::List(l)), sep) = (args.first(), args.get(1)) else {
        return Err(no_overload("join"));
    };
    let sep = match sep {
        None => "",
        Some(v) => text(v).ok_or_else(|| no_overload("join"))?,
    };
    let items = l.to_vec()?;
    let mut size = 0u64;
    for (i, v) in items.iter().enumerate() {
        let Value::String(s) = v else {
            return Err(EvalError::new(format!("join: invalid input: {v}")));
        };
        size += s.chars().count() as u64 + if i > 0 { sep.chars().count() as u64 } else { 0 };
    }
    calls.charge(ceil_cost(size as f64 * 2.0 * 0.1))?;
    let parts: Vec<&str> = items.iter().filter_map(text).collect();
    Ok(Value::string(parts.join(sep)))
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn format_error(msg: String) -> EvalError {
    EvalError::new(format!("error during formatting: {msg}"))
}

/// A formatting clause: what follows its `%`.
struct Clause {
    verb: char,
    precision: Option<usize>,
    /// Bytes of the format string the clause takes after the `%`.
    len: usize,
}

/// Parses the clause at the start of `rest` (non-empty, what follows a `%`) as cel-go's
/// `parseFormattingClause` does, byte by byte; the error is the text after
/// `could not parse formatting clause: `.
fn parse_clause(rest: &[u8]) -> Result<Clause, String> {
    let mut i = 0;
    let mut precision = None;
    if rest.first() == Some(&b'.') {
        i = 1;
        loop {
            match rest.get(i) {
                None => return Err("error while parsing precision: could not find end of precision specifier".into()),
                Some(d) if d.is_ascii_digit() => i += 1,
                Some(_) => break,
            }
        }
        let digits = String::from_utf8_lossy(&rest[1..i]);
        let reason = if digits.is_empty() { "invalid syntax" } else { "value out of range" };
        precision = Some(digits.parse::<usize>().map_err(|_| {
            format!(
                "error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing {digits:?}: {reason}"
            )
        })?);
    }
    // cel-go reads one byte as the verb.
    let verb = char::from(rest.get(i).copied().unwrap_or(b'%'));
    if !matches!(verb, 's' | 'd' | 'f' | 'e' | 'b' | 'o' | 'x' | 'X') {
        return Err(format!("unrecognized formatting clause \"{verb}\""));
    }
    Ok(Clause { verb, precision, len: i + 1 })
}

fn clause_error(msg: String) -> EvalError {
    EvalError::new(format!("could not parse formatting clause: {msg}"))
}

/// `"<fmt>".format([args])`.
fn format<'a>(fmt: &str, args: &List<'a>) -> Res<'a> {
    let bytes = fmt.as_bytes();
    let mut out = String::new();
    let (mut i, mut text_start, mut next_arg) = (0, 0, 0);
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        out.push_str(&fmt[text_start..i]);
        if bytes.get(i + 1) == Some(&b'%') {
            out.push('%');
            i += 2;
            text_start = i;
            continue;
        }
        if next_arg >= args.len() {
            return Err(EvalError::new(format!("index {next_arg} out of range")));
        }
        if i + 1 >= bytes.len() {
            return Err(EvalError::new("unexpected end of string"));
        }
        let clause = parse_clause(&bytes[i + 1..]).map_err(clause_error)?;
        let arg = args.get(next_arg)?;
        next_arg += 1;
        match clause.verb {
            's' => format_string(&arg, &mut out, 0)?,
            'd' => out.push_str(&format_decimal(&arg)?),
            'f' => out.push_str(&format_float(&arg, clause.precision.unwrap_or(6), false)?),
            'e' => out.push_str(&format_float(&arg, clause.precision.unwrap_or(6), true)?),
            'b' => out.push_str(&format_radix(&arg, 2)?),
            'o' => out.push_str(&format_radix(&arg, 8)?),
            verb => out.push_str(&format_hex(&arg, verb == 'X')?),
        }
        // A valid verb is one ASCII byte, so this is a character boundary.
        i += 1 + clause.len;
        text_start = i;
    }
    out.push_str(&fmt[text_start..]);
    Ok(Value::string(out))
}

/// cel-go's `stringFormatValidator`: a call of `format` on a literal string with a list literal
/// argument is checked at compile time, each clause against the checked type of its argument.
/// Returns the error message and the node it is reported at (the argument for a type error,
/// else the call).
pub(crate) fn check_literal_format(call: &Expr, types: &dyn Fn(ExprId) -> Type) -> Option<(ExprId, String)> {
    let ExprKind::Call { function, target: Some(target), args } = &call.kind else { return None };
    let (ExprKind::Literal(Literal::String(fmt)), [list]) = (&target.kind, args.as_slice()) else { return None };
    let ExprKind::List { elements, .. } = &list.kind else { return None };
    if function != "format" {
        return None;
    }
    let bytes = fmt.as_bytes();
    let (mut i, mut requested) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        let index = requested;
        requested += 1;
        if i + 1 >= bytes.len() {
            return Some((call.id, "unexpected end of string".into()));
        }
        let Some(arg) = elements.get(index) else {
            return Some((call.id, format!("index {index} out of range")));
        };
        let clause = match parse_clause(&bytes[i + 1..]) {
            Ok(c) => c,
            Err(msg) => return Some((call.id, format!("could not parse formatting clause: {msg}"))),
        };
        if let Some((bad, message)) = check_clause_type(clause.verb, arg, types) {
            return Some((bad, format!("error during formatting: {message}")));
        }
        i += 1 + clause.len;
    }
    (elements.len() > requested).then(|| {
        let got = elements.len();
        (call.id, format!("too many arguments supplied to string.format (expected {requested}, got {got})"))
    })
}

/// The kind of a checked type as cel-go's `Type.TypeName` names it (no type parameters);
/// `None` for `dyn` (and free type parameters, which cel-go's checker makes `dyn`).
fn kind_name(t: &Type) -> Option<String> {
    Some(match t {
        Type::Dyn | Type::Param(_) => return None,
        Type::List(_) => "list".into(),
        Type::Map(..) => "map".into(),
        Type::Optional(_) => "optional_type".into(),
        Type::TypeOf(_) => "type".into(),
        other => other.to_string(),
    })
}

/// Whether `arg`'s checked type suits `verb`; if not, the node and the runtime's message.
fn check_clause_type(verb: char, arg: &Expr, types: &dyn Fn(ExprId) -> Type) -> Option<(ExprId, String)> {
    if verb == 's' {
        return check_string_clause(arg, types);
    }
    let kind = kind_name(&types(arg.id))?;
    let (allowed, message): (&[&str], &str) = match verb {
        'd' => (&["int", "uint"], "decimal clause can only be used on integers"),
        'f' => (&["double", "string"], "fixed-point clause can only be used on doubles"),
        'e' => (&["double", "string"], "scientific clause can only be used on doubles"),
        'b' => (&["int", "uint", "bool"], "only integers and bools can be formatted as binary"),
        'o' => (&["int", "uint"], "octal clause can only be used on integers"),
        _ => (&["int", "uint", "string", "bytes"], "only integers, byte buffers, and strings can be formatted as hex"),
    };
    (!allowed.contains(&kind.as_str())).then(|| (arg.id, format!("{message}, was given {kind}")))
}

/// `%s` takes every scalar, list and map; the elements of a list or map literal are checked too.
fn check_string_clause(arg: &Expr, types: &dyn Fn(ExprId) -> Type) -> Option<(ExprId, String)> {
    const ALLOWED: &[&str] = &[
        "list",
        "map",
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "google.protobuf.Timestamp",
        "bytes",
        "google.protobuf.Duration",
        "type",
        "null_type",
    ];
    if let Some(kind) = kind_name(&types(arg.id))
        && !ALLOWED.contains(&kind.as_str())
    {
        let message = format!(
            "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {kind}"
        );
        return Some((arg.id, message));
    }
    match &arg.kind {
        ExprKind::List { elements, .. } => elements.iter().find_map(|e| check_string_clause(e, types)),
        ExprKind::Map { entries } => entries
            .iter()
            .find_map(|e| check_string_clause(&e.key, types).or_else(|| check_string_clause(&e.value, types))),
        _ => None,
    }
}

fn special_double(d: f64) -> Option<&'static str> {
    if d.is_nan() {
        Some("NaN")
    } else if d == f64::INFINITY {
        Some("Infinity")
    } else if d == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

/// `%s`: strings as they are, lists and maps spelled out (map entries sorted by key text).
fn format_string(v: &Value<'_>, out: &mut String, depth: u32) -> Result<(), EvalError> {
    if depth > 64 {
        return Err(format_error("value nesting too deep".into()));
    }
    match v {
        Value::String(s) => out.push_str(s),
        Value::Bytes(b) => out.push_str(bytes_text(b)?),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Uint(u) => out.push_str(&u.to_string()),
        Value::Double(d) => match special_double(*d) {
            Some(s) => out.push_str(s),
            None => out.push_str(&versa_schema::field::go_float(*d)),
        },
        Value::Null => out.push_str("null"),
        Value::Type(t) => out.push_str(t),
        Value::Timestamp(t) => out.push_str(&time::format_rfc3339(*t)),
        Value::Duration(d) => out.push_str(&time::format_duration(*d)),
        Value::List(l) => {
            out.push('[');
            for i in 0..l.len() {
                if i > 0 {
                    out.push_str(", ");
                }
                format_member(&l.get(i)?, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Map(m) => {
            let mut entries = Vec::with_capacity(m.len());
            for k in m.keys() {
                let ks = match &k {
                    Value::String(s) => versa_schema::field::go_quote(s),
                    Value::Bool(b) => b.to_string(),
                    Value::Int(i) => i.to_string(),
                    Value::Uint(u) => u.to_string(),
                    other => {
                        let kind = other.type_name();
                        return Err(format_error(format!("no formatting function for map key of type {}", &*kind)));
                    }
                };
                let mut vs = String::new();
                if let Some(v) = m.get(&k)? {
                    format_member(&v, &mut vs, depth + 1)?;
                }
                entries.push((ks, vs));
            }
            entries.sort();
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{k}:{v}");
            }
            out.push('}');
        }
        other => {
            return Err(format_error(format!(
                "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
                &*other.type_name()
            )));
        }
    }
    Ok(())
}

/// The text of bytes for `%s`, which must be UTF-8 (cel-go's conversion to string).
fn bytes_text(b: &[u8]) -> Result<&str, EvalError> {
    std::str::from_utf8(b).map_err(|_| {
        format_error("could not convert argument \"invalid UTF-8 in bytes, cannot convert to string\" to string".into())
    })
}

/// A list element or map value under `%s` (cel-go's `clauseForType` and `quoteForCEL`): strings
/// and bytes quoted, doubles with six decimals, timestamps and durations as their constructor.
fn format_member(v: &Value<'_>, out: &mut String, depth: u32) -> Result<(), EvalError> {
    use versa_schema::field::go_quote;
    match v {
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Bytes(b) => {
            out.push('b');
            out.push_str(&go_quote(bytes_text(b)?));
        }
        Value::Double(d) => match go_special(*d) {
            Some(special) => out.push_str(&go_quote(special)),
            None => {
                let _ = write!(out, "{d:.6}");
            }
        },
        Value::Timestamp(t) => {
            let _ = write!(out, "timestamp({})", go_quote(&time::format_rfc3339(*t)));
        }
        Value::Duration(d) => {
            let _ = write!(out, "duration({})", go_quote(&time::format_duration(*d)));
        }
        Value::Int(_)
        | Value::Uint(_)
        | Value::Bool(_)
        | Value::Null
        | Value::Type(_)
        | Value::List(_)
        | Value::Map(_) => format_string(v, out, depth)?,
        other => return Err(format_error(format!("no formatting function for {}", &*other.type_name()))),
    }
    Ok(())
}

/// Go's `%f` spelling of the special doubles.
fn go_special(d: f64) -> Option<&'static str> {
    if d.is_nan() {
        Some("NaN")
    } else if d == f64::INFINITY {
        Some("+Inf")
    } else if d == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

fn format_decimal(v: &Value<'_>) -> Result<String, EvalError> {
    match v {
        Value::Int(i) => Ok(i.to_string()),
        Value::Uint(u) => Ok(u.to_string()),
        other => {
            Err(format_error(format!("decimal clause can only be used on integers, was given {}", &*other.type_name())))
        }
    }
}

fn format_float(v: &Value<'_>, precision: usize, scientific: bool) -> Result<String, EvalError> {
    let d = match v {
        Value::Double(d) => *d,
        // cel-go takes the three spellings of the special doubles as strings too.
        Value::String(s) if matches!(&**s, "NaN" | "Infinity" | "-Infinity") => match &**s {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        },
        other => {
            let clause = if scientific { "scientific" } else { "fixed-point" };
            return Err(format_error(format!(
                "{clause} clause can only be used on doubles, was given {}",
                &*other.type_name()
            )));
        }
    };
    // cel-go prints through x/text's English printer: the infinities as `∞`, `%f` with grouped
    // thousands, and `%e` as `1.234500×10⁰³`. For `%e` cel-go passes the precision as the
    // width (`%6e`, `%2e`), so the precision is always six and the text is padded to that width.
    let text = if d.is_nan() {
        "NaN".to_owned()
    } else if d.is_infinite() {
        if d > 0.0 { "∞" } else { "-∞" }.to_owned()
    } else if scientific {
        let s = format!("{d:.6e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let digits = format!("{:02}", exp.unsigned_abs());
        let superscript: String = digits.chars().filter_map(superscript_digit).collect();
        format!("{mantissa}×10{}{superscript}", if exp < 0 { "⁻" } else { "" })
    } else {
        let precision = precision.min(1000);
        group_thousands(&format!("{d:.precision$}"))
    };
    if !scientific {
        return Ok(text);
    }
    let width = precision.min(1000);
    let pad = width.saturating_sub(text.chars().count());
    Ok(format!("{}{text}", " ".repeat(pad)))
}

fn superscript_digit(c: char) -> Option<char> {
    let d = c.to_digit(10)? as usize;
    "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().nth(d)
}

/// `-1234567.5` as `-1,234,567.5`.
fn group_thousands(s: &str) -> String {
    let (sign, rest) = s.strip_prefix('-').map_or(("", s), |r| ("-", r));
    let (int, frac) = rest.split_once('.').map_or((rest, None), |(i, f)| (i, Some(f)));
    let mut out = String::from(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

fn signed_radix(i: i128, radix: u32, upper: bool) -> String {
    let digits = |mut n: u128| {
        if n == 0 {
            return "0".to_owned();
        }
        let mut out = Vec::new();
        while n > 0 {
            let d = (n % u128::from(radix)) as u32;
            let c = char::from_digit(d, radix).unwrap_or('0');
            out.push(if upper { c.to_ascii_uppercase() } else { c });
            n /= u128::from(radix);
        }
        out.iter().rev().collect::<String>()
    };
    if i < 0 { format!("-{}", digits(i.unsigned_abs())) } else { digits(i as u128) }
}

fn format_radix(v: &Value<'_>, radix: u32) -> Result<String, EvalError> {
    match v {
        Value::Int(i) => Ok(signed_radix(i128::from(*i), radix, false)),
        Value::Uint(u) => Ok(signed_radix(i128::from(*u), radix, false)),
        Value::Bool(b) if radix == 2 => Ok(if *b { "1" } else { "0" }.to_owned()),
        other if radix == 2 => Err(format_error(format!(
            "only integers and bools can be formatted as binary, was given {}",
            &*other.type_name()
        ))),
        other => {
            Err(format_error(format!("octal clause can only be used on integers, was given {}", &*other.type_name())))
        }
    }
}

fn format_hex(v: &Value<'_>, upper: bool) -> Result<String, EvalError> {
    let bytes_hex = |b: &[u8]| {
        let mut s = String::with_capacity(b.len() * 2);
        for x in b {
            let _ = if upper { write!(s, "{x:02X}") } else { write!(s, "{x:02x}") };
        }
        s
    };
    match v {
        Value::Int(i) => Ok(signed_radix(i128::from(*i), 16, upper)),
        Value::Uint(u) => Ok(signed_radix(i128::from(*u), 16, upper)),
        Value::String(s) => Ok(bytes_hex(s.as_bytes())),
        Value::Bytes(b) => Ok(bytes_hex(b)),
        other => Err(format_error(format!(
            "only integers, byte buffers, and strings can be formatted as hex, was given {}",
            &*other.type_name()
        ))),
    }
}
