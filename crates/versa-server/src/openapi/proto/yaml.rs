//! The YAML text of `Any` values (vendor extensions, `default`, `example`, `enum`) as gnostic
//! writes it with yaml.v3: block layout, plain strings where a reader gets the same string
//! back, double quotes elsewhere.

use serde_json::Value;

/// `v` as block YAML in yaml.v3's layout (gnostic's `compiler.Marshal`): four-space indentation,
/// a sequence under a key indented, a mapping in a sequence item starting on the dash's line,
/// empty collections as `{}` / `[]`, a final newline.
pub(super) fn yaml(v: &Value) -> String {
    let mut out = String::new();
    yaml_node(&mut out, v, 0);
    out
}

/// Writes `v` from the current position (column `indent`), through the end of its last line.
fn yaml_node(out: &mut String, v: &Value, indent: usize) {
    let is_block = |v: &Value| match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (i, (k, val)) in m.iter().enumerate() {
                if i > 0 {
                    pad(out, indent);
                }
                yaml_string(out, k);
                out.push(':');
                if is_block(val) {
                    out.push('\n');
                    pad(out, indent + 4);
                    yaml_node(out, val, indent + 4);
                } else {
                    out.push(' ');
                    yaml_scalar(out, val);
                    out.push('\n');
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    pad(out, indent);
                }
                out.push_str("- ");
                if is_block(item) {
                    yaml_node(out, item, indent + 2);
                } else {
                    yaml_scalar(out, item);
                    out.push('\n');
                }
            }
        }
        _ => {
            yaml_scalar(out, v);
            out.push('\n');
        }
    }
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// A scalar, or an empty collection.
fn yaml_scalar(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => yaml_string(out, s),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

/// A string: plain when every YAML 1.1 or 1.2 reader takes it for this string (as yaml.v3
/// writes it in the common cases), else double-quoted with escapes. Not plain: a first character
/// that is an indicator, a digit, a sign, `.`, `~`, `=` or `<` (numbers, timestamps, `.inf`,
/// merge keys); `: ` or ` #` inside, `:` or a space at the end; a tab, line break or other
/// character YAML does not print; the boolean and null words of either version.
fn yaml_string(out: &mut String, s: &str) {
    let first_ok = s.starts_with(|c: char| !c.is_ascii_digit() && !" -?:,[]{}#&*!|>'\"%@`+.~=<".contains(c));
    let plain = first_ok
        && !s.ends_with([' ', ':'])
        && !s.contains(": ")
        && !s.contains(" #")
        && s.chars().all(|c| c != '\t' && printable(c))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "y" | "yes" | "n" | "no" | "true" | "false" | "on" | "off" | "null"
        );
    if plain {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if printable(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", u32::from(c))),
        }
    }
    out.push('"');
}

/// Printed as itself in YAML text: printable ASCII and the printable rest of Unicode, less the
/// characters YAML 1.1 reads as line breaks (U+0085, U+2028, U+2029) and the byte-order mark.
/// Everything else is in the BMP, so `\uXXXX` escapes it.
fn printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    // -- YAML text -----------------------------------------------------------------------

    #[test]
    fn yaml_layout() {
        assert_eq!(yaml(&json!("get")), "get\n");
        assert_eq!(yaml(&json!(true)), "true\n");
        assert_eq!(yaml(&json!(1.5)), "1.5\n");
        assert_eq!(yaml(&json!([])), "[]\n");
        assert_eq!(
            yaml(&json!({"a": {"b": [{"c": 1, "d": []}, [2, 3]]}, "e": {}})),
            "a:\n    b:\n        - c: 1\n          d: []\n        - - 2\n          - 3\ne: {}\n"
        );
    }

    /// Strings that are not plainly safe are quoted, and every text reads back as its value.
    #[test]
    fn yaml_strings_read_back() {
        let plain = [
            "stable.example.com",
            "CronTab",
            "/apis",
            "a b (c), d",
            "_x",
            "a,",
            "self.x <= 10",
            "at most \"ten\"",
            "a:b",
            "a#b",
            "a-",
            "é😀",
            "Yesterday",
        ];
        for s in plain {
            assert_eq!(yaml(&json!(s)), format!("{s}\n"));
        }
        let quoted = [
            "",
            "true",
            "On",
            "NO",
            "y",
            "null",
            "~",
            "1",
            "1.5",
            "0x1F",
            "1e3",
            ".inf",
            "2001-12-14",
            "12:30",
            "-",
            "- a",
            "a: b",
            "a #b",
            "a:",
            "#a",
            "&a",
            "*a",
            "!a",
            "%a",
            "@a",
            "`a",
            "|",
            ">",
            "'a'",
            "\"a\"",
            "[a]",
            "{a}",
            ",a",
            "?a",
            ":a",
            "+1",
            "<<",
            "=",
            " a",
            "a ",
            "a\nb",
            "a\tb",
            "\u{7f}\u{85}\u{a0}\u{2028}\u{feff}é😀",
            "\u{0}\u{1b}",
            "a\u{85}",
            "...",
            "---",
        ];
        for s in quoted {
            let text = yaml(&json!(s));
            assert!(text.starts_with('"'), "{s:?} → {text:?}");
        }
        let values = json!({
            "strings": plain.iter().chain(quoted.iter()).collect::<Vec<_>>(),
            "numbers": [0, -1, 1.5, 1e300, u64::MAX],
            "nested": [{"a": [[], {}], "b": null, "c": [{"d": {"e": ["f"]}}]}],
        });
        let text = yaml(&values);
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, values, "{text}");
    }
}
