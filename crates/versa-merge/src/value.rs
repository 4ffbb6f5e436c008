//! How structured merge sees a JSON value: its total order, its equality, and the JSON text it
//! writes for values inside field paths.
//!
//! structured-merge-diff works on Go values decoded from JSON, where an integer literal becomes an
//! `int64` and anything else a `float64`; ordering and equality follow from that (an `int64` and
//! a `float64` compare as numbers, `1 == 1.0`). Keys of associative lists (`k:{...}`) and members
//! of sets (`v:...`) are written into `managedFields` by Go's JSON encoder with HTML escaping and
//! sorted object keys, and conflict messages print values with Go's `%v`/`%q`. All of that is
//! reproduced here by hand because the bytes must match what kube-apiserver writes; serde_json's
//! own spelling differs (floats, escapes).
//!
//! Recursion follows the nesting of the value, which the server's decoder bounds at 128 levels.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Number, Value};

/// A JSON number as Go decodes it: `int64` when it is an integer literal that fits, else
/// `float64` (kube's decoder turns integers beyond `int64` into floats).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

pub(crate) fn num(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or_default()),
    }
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    // Go's FloatCompare: NaN is neither less nor greater, so it compares equal.
    if a > b {
        Ordering::Greater
    } else if a < b {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

fn num_cmp(a: &Number, b: &Number) -> Ordering {
    match (num(a), num(b)) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Int(x), Num::Float(y)) => float_cmp(x as f64, y),
        (Num::Float(x), Num::Int(y)) => float_cmp(x, y as f64),
        (Num::Float(x), Num::Float(y)) => float_cmp(x, y),
    }
}

/// structured-merge-diff's total order on values: numbers < strings < booleans < lists < maps <
/// null; lists lexicographically; maps by their sorted keys, then values.
pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let c = compare(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.is_empty() && y.is_empty() {
                return Ordering::Equal;
            }
            // Walk the union of keys in order; the side that runs out of entries first, or
            // lacks the key the other has, is the smaller.
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for (i, k) in keys.into_iter().enumerate() {
                let c = if i == x.len() {
                    Ordering::Less
                } else if i == y.len() {
                    Ordering::Greater
                } else {
                    match (x.get(k), y.get(k)) {
                        (None, _) => Ordering::Greater,
                        (_, None) => Ordering::Less,
                        (Some(l), Some(r)) => compare(l, r),
                    }
                };
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// structured-merge-diff's equality: numbers compare as numbers (`1 == 1.0`), everything else
/// structurally.
pub(crate) fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (num(x), num(y)) {
            (Num::Int(x), Num::Int(y)) => x == y,
            (Num::Int(x), Num::Float(y)) => x as f64 == y,
            (Num::Float(x), Num::Int(y)) => x == y as f64,
            (Num::Float(x), Num::Float(y)) => x == y,
        },
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(l, r)| equals(l, r)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, l)| y.get(k).is_some_and(|r| equals(l, r)))
        }
        _ => false,
    }
}

/// Writes `v` as Go's JSON encoder does in `managedFields` (json-iterator in its
/// standard-library-compatible mode): object keys sorted, `<`, `>`, `&`, U+2028 and U+2029
/// escaped, integers as integers, floats in `encoding/json`'s spelling.
pub(crate) fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match num(n) {
            Num::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Num::Float(f) => write_go_json_float(f, out),
        },
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                if let Some(item) = m.get(k) {
                    write_go_json(item, out);
                }
            }
            out.push('}');
        }
    }
}

/// A JSON string as Go's encoder writes it with HTML escaping on.
pub(crate) fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `encoding/json`'s float spelling: shortest round-trip digits, plain decimal between 1e-6
/// and 1e21, exponent form (`1e+21`, `1e-7`) outside.
fn write_go_json_float(f: f64, out: &mut String) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        write_exponent(f, 1, out);
    } else {
        let _ = write!(out, "{f}");
    }
}

/// Rust's `{:e}` (shortest digits) respelled as Go writes an exponent: a sign always, and at
/// least `min_digits` digits.
fn write_exponent(f: f64, min_digits: usize, out: &mut String) {
    let s = format!("{f:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    let _ = write!(out, "{mantissa}e{sign}{digits:0>min_digits$}");
}

/// A value as structured-merge-diff prints it inside a path (`value.ToString`): strings
/// quoted as Go's `%q`, numbers as `%v`.
pub(crate) fn write_display(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match num(n) {
            Num::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Num::Float(f) => write_go_v_float(f, out),
        },
        Value::String(s) => write_go_quoted(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_display(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            for (k, item) in m {
                out.push_str(k);
                out.push('=');
                write_display(item, out);
            }
        }
    }
}

/// Go's `%v` for a float64: `strconv.FormatFloat(f, 'g', -1, 64)`, whose exponent form starts at
/// 1e+06 and below 1e-04.
fn write_go_v_float(f: f64, out: &mut String) {
    if f == 0.0 || !f.is_finite() {
        let _ = write!(out, "{f}");
        return;
    }
    let exp = f.abs().log10().floor() as i32;
    // log10 can be off by one at exact powers; take the exponent from the digits instead.
    let s = format!("{f:e}");
    let exp = s.split_once('e').and_then(|(_, e)| e.parse::<i32>().ok()).unwrap_or(exp);
    if !(-4..6).contains(&exp) {
        write_exponent(f, 2, out);
    } else {
        let _ = write!(out, "{f}");
    }
}

/// Go's `%q` (`strconv.Quote`), as versa's field errors write it (`versa_schema::field::go_quote`).
pub(crate) fn write_go_quoted(s: &str, out: &mut String) {
    out.push_str(&versa_schema::field::go_quote(s));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use serde_json::json;

    use super::*;

    fn go_json(v: Value) -> String {
        let mut s = String::new();
        write_go_json(&v, &mut s);
        s
    }

    fn display(v: Value) -> String {
        let mut s = String::new();
        write_display(&v, &mut s);
        s
    }

    #[test]
    fn order_follows_structured_merge_diff() {
        let ordered = [
            json!(1),
            json!(1.5),
            json!(2),
            json!("a"),
            json!("b"),
            json!(false),
            json!(true),
            json!([1]),
            json!([1, 2]),
            json!({"a": 1}),
            json!({"a": 1, "b": 1}),
            json!(null),
        ];
        for w in ordered.windows(2) {
            assert_eq!(compare(&w[0], &w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
            assert_eq!(compare(&w[1], &w[0]), Ordering::Greater);
        }
        assert_eq!(compare(&json!(1), &json!(1.0)), Ordering::Equal);
        assert!(equals(&json!({"a": [1, "x"]}), &json!({"a": [1.0, "x"]})));
        assert!(!equals(&json!({"a": 1}), &json!({"a": 1, "b": null})));
    }

    #[test]
    fn go_json_spelling() {
        assert_eq!(go_json(json!({"b": 1, "a": "<x&y>"})), r#"{"a":"\u003cx\u0026y\u003e","b":1}"#);
        assert_eq!(go_json(json!(1.5)), "1.5");
        assert_eq!(go_json(json!(1.0)), "1");
        assert_eq!(go_json(json!(1e21)), "1e+21");
        assert_eq!(go_json(json!(1.5e-7)), "1.5e-7");
        assert_eq!(go_json(json!("a\u{1}\n")), r#""a\u0001\n""#);
    }

    #[test]
    fn go_display() {
        assert_eq!(display(json!("x\"y")), r#""x\"y""#);
        assert_eq!(display(json!(1234567.0)), "1.234567e+06");
        assert_eq!(display(json!(123456.0)), "123456");
        assert_eq!(display(json!(0.00001)), "1e-05");
        assert_eq!(display(json!(true)), "true");
    }
}
