//! Parser tests: precedence and macro expansion (printed as S-expressions), literals and
//! escapes, the input-safety limits, and no panics on garbage.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use versa_cel::ast::{Expr, ExprKind, Literal};
use versa_cel::{escape_property_name, parse, unescape_property_name};

/// A compact S-expression of the tree: calls as `(f args)`, member calls as `(.f target args)`.
fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Literal(Literal::Null) => "null".into(),
        ExprKind::Literal(Literal::Bool(b)) => b.to_string(),
        ExprKind::Literal(Literal::Int(i)) => i.to_string(),
        ExprKind::Literal(Literal::Uint(u)) => format!("{u}u"),
        ExprKind::Literal(Literal::Double(d)) => format!("{d:?}"),
        ExprKind::Literal(Literal::String(s)) => format!("{s:?}"),
        ExprKind::Literal(Literal::Bytes(b)) => format!("b{b:?}"),
        ExprKind::Ident(n) => n.clone(),
        ExprKind::Select { operand, field, test_only } => {
            format!("{}{}.{field}", if *test_only { "has:" } else { "" }, sexpr(operand))
        }
        ExprKind::Call { function, target, args } => {
            let mut parts: Vec<String> = Vec::new();
            match target {
                Some(t) => {
                    parts.push(format!(".{function}"));
                    parts.push(sexpr(t));
                }
                None => parts.push(function.clone()),
            }
            parts.extend(args.iter().map(sexpr));
            format!("({})", parts.join(" "))
        }
        ExprKind::List { elements, optional_indices } => {
            let els: Vec<String> = elements
                .iter()
                .enumerate()
                .map(|(i, e)| format!("{}{}", if optional_indices.contains(&i) { "?" } else { "" }, sexpr(e)))
                .collect();
            format!("[{}]", els.join(" "))
        }
        ExprKind::Map { entries } => {
            let els: Vec<String> = entries
                .iter()
                .map(|en| format!("{}{}: {}", if en.optional { "?" } else { "" }, sexpr(&en.key), sexpr(&en.value)))
                .collect();
            format!("{{{}}}", els.join(", "))
        }
        ExprKind::Struct { type_name, fields } => {
            let els: Vec<String> = fields.iter().map(|f| format!("{}: {}", f.field, sexpr(&f.value))).collect();
            format!("{type_name}{{{}}}", els.join(", "))
        }
        ExprKind::Comprehension(c) => format!(
            "(fold {}{} {} {} {} {} {} {})",
            c.iter_var,
            c.iter_var2.as_ref().map(|v| format!(",{v}")).unwrap_or_default(),
            sexpr(&c.iter_range),
            c.accu_var,
            sexpr(&c.accu_init),
            sexpr(&c.loop_condition),
            sexpr(&c.loop_step),
            sexpr(&c.result)
        ),
    }
}

fn check(src: &str, want: &str) {
    match parse(src) {
        Ok(p) => assert_eq!(sexpr(&p.expr), want, "{src}"),
        Err(e) => panic!("{src}: {e:?}"),
    }
}

fn check_err(src: &str, want: &str) {
    match parse(src) {
        Ok(p) => panic!("{src}: parsed as {}", sexpr(&p.expr)),
        Err(errs) => {
            let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            assert_eq!(shown.join("\n"), want, "{src}");
        }
    }
}

#[test]
fn precedence() {
    let cases = [
        ("1 + 2 * 3", "(_+_ 1 (_*_ 2 3))"),
        ("1 - 2 - 3", "(_-_ (_-_ 1 2) 3)"),
        ("a || b && c", "(_||_ a (_&&_ b c))"),
        ("a && b || c && d", "(_||_ (_&&_ a b) (_&&_ c d))"),
        ("a && b && c && d", "(_&&_ (_&&_ a b) (_&&_ c d))"),
        ("a ? b : c ? d : e", "(_?_:_ a b (_?_:_ c d e))"),
        ("a || b ? c : d", "(_?_:_ (_||_ a b) c d)"),
        ("1 < 2 == true", "(_==_ (_<_ 1 2) true)"),
        ("x in [1] && y", "(_&&_ (@in x [1]) y)"),
        ("!a == b", "(_==_ (!_ a) b)"),
        ("!!a", "a"),
        ("!!!a", "(!_ a)"),
        ("-x * 2", "(_*_ (-_ x) 2)"),
        ("--x", "x"),
        ("-5", "-5"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("- 5 + 1", "(_+_ -5 1)"),
        ("-(5)", "(-_ 5)"),
        ("a.b.c", "a.b.c"),
        ("a.b(c)[0].d", "(_[_] (.b a c) 0).d"),
        (".a.b", ".a.b"),
        ("f(1, 2)", "(f 1 2)"),
        ("a % b / c", "(_/_ (_%_ a b) c)"),
        ("a.?b", "(_?._ a \"b\")"),
        ("a[?0]", "(_[?_] a 0)"),
        ("[?a, b,]", "[?a b]"),
        ("{?'k': v, 1: 2}", "{?\"k\": v, 1: 2}"),
        ("Msg{f: 1}", "Msg{f: 1}"),
        ("a.b.Msg{}", "a.b.Msg{}"),
        ("1 // comment\n + 2", "(_+_ 1 2)"),
    ];
    for (src, want) in cases {
        check(src, want);
    }
}

#[test]
fn macros() {
    check("has(a.b)", "has:a.b");
    check("l.all(x, x > 0)", "(fold x l @result true (@not_strictly_false @result) (_&&_ @result (_>_ x 0)) @result)");
    check("l.exists(x, p)", "(fold x l @result false (@not_strictly_false (!_ @result)) (_||_ @result p) @result)");
    check("l.exists_one(x, p)", "(fold x l @result 0 true (_?_:_ p (_+_ @result 1) @result) (_==_ @result 1))");
    check("l.map(x, x * 2)", "(fold x l @result [] true (_+_ @result [(_*_ x 2)]) @result)");
    check("l.map(x, p, x)", "(fold x l @result [] true (_?_:_ p (_+_ @result [x]) @result) @result)");
    check("l.filter(x, p)", "(fold x l @result [] true (_?_:_ p (_+_ @result [x]) @result) @result)");
    // Wrong arity: not a macro, just a call.
    check("l.all(x)", "(.all l x)");
    check("has(a.b, c)", "(has a.b c)");
    check_err("l.all(1, true)", "ERROR: <input>:1:6: argument must be a simple name");
    check_err("has(a)", "ERROR: <input>:1:4: invalid argument to has() macro");
}

/// cel-go's `ext.TwoVarComprehensions` expansions: the same folds with a second variable, and
/// `cel.@mapInsert` steps for the map-building macros.
#[test]
fn two_variable_macros() {
    check("l.all(i, v, p)", "(fold i,v l @result true (@not_strictly_false @result) (_&&_ @result p) @result)");
    check(
        "l.exists(i, v, p)",
        "(fold i,v l @result false (@not_strictly_false (!_ @result)) (_||_ @result p) @result)",
    );
    let exists_one = "(fold i,v l @result 0 true (_?_:_ p (_+_ @result 1) @result) (_==_ @result 1))";
    check("l.existsOne(i, v, p)", exists_one);
    check("l.exists_one(i, v, p)", exists_one);
    check("l.transformList(i, v, t)", "(fold i,v l @result [] true (_+_ @result [t]) @result)");
    check("l.transformList(i, v, f, t)", "(fold i,v l @result [] true (_?_:_ f (_+_ @result [t]) @result) @result)");
    check("m.transformMap(k, v, t)", "(fold k,v m @result {} true (cel.@mapInsert @result k t) @result)");
    check(
        "m.transformMap(k, v, f, t)",
        "(fold k,v m @result {} true (_?_:_ f (cel.@mapInsert @result k t) @result) @result)",
    );
    check("m.transformMapEntry(k, v, t)", "(fold k,v m @result {} true (cel.@mapInsert @result t) @result)");
    check(
        "m.transformMapEntry(k, v, f, t)",
        "(fold k,v m @result {} true (_?_:_ f (cel.@mapInsert @result t) @result) @result)",
    );
    // Wrong arities are calls; `existsOne` has no one-variable form.
    check("l.existsOne(v, p)", "(.existsOne l v p)");
    check("l.transformMap(k, v)", "(.transformMap l k v)");
    check("l.all(i, v, p, q)", "(.all l i v p q)");
    // Misuse, with cel-go's texts at the call.
    check_err("l.all(i.j, v, p)", "ERROR: <input>:1:6: argument must be a simple name");
    check_err("l.all(i, .v, p)", "ERROR: <input>:1:6: argument must be a simple name");
    check_err("l.all(i, i, p)", "ERROR: <input>:1:6: duplicate variable name: i");
    check_err("l.all(__result__, v, p)", "ERROR: <input>:1:6: iteration variable overwrites accumulator variable");
    check_err("l.transformMapEntry(1, v, p)", "ERROR: <input>:1:20: argument must be a simple name");
}

#[test]
fn literals() {
    let cases = [
        ("123", "123"),
        ("0x1F", "31"),
        ("-0x10", "-16"),
        ("7u", "7u"),
        ("0xFFu", "255u"),
        ("18446744073709551615u", "18446744073709551615u"),
        ("1.5", "1.5"),
        ("1e3", "1000.0"),
        ("2.5E-1", "0.25"),
        (".5", "0.5"),
        ("-1.5", "-1.5"),
        ("true", "true"),
        ("null", "null"),
        (r#""a\nb""#, r#""a\nb""#),
        (r#"'\a\b\f\n\r\t\v\\\'\"\`\?'"#, r#""\u{7}\u{8}\u{c}\n\r\t\u{b}\\'\"`?""#),
        (r"'\x41\101\u00e9\U0001F600'", "\"AAé😀\""),
        (r"r'\n\x'", r#""\\n\\x""#),
        (r"R'a\'b'", r#""a\\'b""#),
        ("'''a\n'b'\n'''", "\"a\\n'b'\\n\""),
        (r#""""x"y""""#, r#""x\"y""#),
        (r"b'\xff\101a'", "b[255, 65, 97]"),
        (r"b'ü'", "b[195, 188]"),
        (r"rb'\x'", "b[92, 120]"),
        (r#"BR"\n""#, "b[92, 110]"),
        ("'ü'", "\"ü\""),
    ];
    for (src, want) in cases {
        check(src, want);
    }
}

#[test]
fn syntax_errors() {
    let cases = [
        ("9223372036854775808", "ERROR: <input>:1:1: invalid int literal"),
        ("18446744073709551616u", "ERROR: <input>:1:1: invalid uint literal"),
        ("'abc", "ERROR: <input>:1:1: Syntax error: token recognition error at: ''abc'"),
        ("'a\nb'", "ERROR: <input>:1:1: Syntax error: token recognition error at: ''a'"),
        (r"'\q'", r"ERROR: <input>:1:1: Syntax error: token recognition error at: ''\'"),
        (r"b'\u0041'", r"ERROR: <input>:1:1: Syntax error: token recognition error at: 'b'\'"),
        (r"'\uD800'", r"ERROR: <input>:1:1: Syntax error: token recognition error at: ''\uD800'"),
        ("a # b", "ERROR: <input>:1:3: Syntax error: token recognition error at: '#'"),
        (
            "1 +",
            "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'(', '[', '{', '.', '-', '!', 'IDENTIFIER', 'literal'}",
        ),
        ("(1", "ERROR: <input>:1:3: Syntax error: mismatched input '<EOF>' expecting ')'"),
        ("1 2", "ERROR: <input>:1:3: Syntax error: extraneous input '2' expecting '<EOF>'"),
        ("while", "ERROR: <input>:1:1: Syntax error: reserved identifier: while"),
        ("a.1", "ERROR: <input>:1:2: Syntax error: extraneous input '.1' expecting '<EOF>'"),
        ("a.+", "ERROR: <input>:1:3: Syntax error: extraneous input '+' expecting IDENTIFIER"),
        (
            "x\n  + ",
            "ERROR: <input>:2:5: Syntax error: mismatched input '<EOF>' expecting {'(', '[', '{', '.', '-', '!', 'IDENTIFIER', 'literal'}",
        ),
    ];
    let mut failures = Vec::new();
    for (src, want) in cases {
        let got = parse(src)
            .map(|p| sexpr(&p.expr))
            .map_err(|errs| errs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"));
        if got.as_ref().err().map(String::as_str) != Some(want) {
            failures.push(format!("{src:?}\n  got:  {got:?}\n  want: {want}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn recursion_limit_is_an_error_not_a_stack_overflow() {
    let ok = format!("{}1{}", "(".repeat(200), ")".repeat(200));
    assert!(parse(&ok).is_ok());
    for n in [251, 1_000, 20_000] {
        let deep = format!("{}1{}", "(".repeat(n), ")".repeat(n));
        let errs = parse(&deep).unwrap_err();
        assert!(errs[0].message.contains("expression recursion limit exceeded: 250"), "{n}: {errs:?}");
        let deep_list = format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(&deep_list).is_err());
        let deep_calls = format!("{}1{}", "f(".repeat(n), ")".repeat(n));
        assert!(parse(&deep_calls).is_err());
    }
    // Long flat chains are fine up to the height bound, and an error beyond it.
    assert!(parse(&vec!["1"; 450].join(" + ")).is_ok());
    let long = vec!["1"; 5_000].join(" + ");
    assert!(parse(&long).unwrap_err()[0].message.contains("expression nesting exceeds limit"));
    // Logical chains are balanced, so they can be long.
    assert!(parse(&vec!["a"; 5_000].join(" && ")).is_ok());
    // Unary chains are loops.
    assert!(parse(&format!("{}a", "!".repeat(10_001))).is_ok());
    let chain = format!("a{}", ".b".repeat(2_000));
    assert!(parse(&chain).is_err());
    let big = "1".repeat(100_001);
    assert!(parse(&big).unwrap_err()[0].message.starts_with("expression code point size exceeds limit"));
}

#[test]
fn garbage_never_panics() {
    let seeds = [
        "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
        "self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
        "type(self) == string ? self == '100%' : self == 1000",
        r#"b'\x00' + r"raw" + '''tri''' + {?'k': [?a.?b, 1u, 2.5e3, -0x1F]}[?'k']"#,
        "has(self.a) && self.map(x, x > 1, x * 2).exists_one(y, y in oldSelf)",
    ];
    let alphabet: Vec<char> = "()[]{}.,:?!-+*/%<>=&|'\"\\`rbux0123456789eE_aZ \n\tü".chars().collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let schema_type = versa_cel::DeclType {
        kind: versa_cel::DeclKind::Scalar(versa_cel::Type::Dyn),
        max_elements: None,
        min_serialized_size: 1,
        int_maximum: None,
    };
    for seed in seeds {
        for _ in 0..2_000 {
            let mut chars: Vec<char> = seed.chars().collect();
            for _ in 0..(next() % 4 + 1) {
                let at = (next() as usize) % (chars.len() + 1);
                match next() % 3 {
                    0 if at < chars.len() => {
                        chars.remove(at);
                    }
                    1 if at < chars.len() => chars[at] = alphabet[(next() as usize) % alphabet.len()],
                    _ => chars.insert(at, alphabet[(next() as usize) % alphabet.len()]),
                }
            }
            let src: String = chars.into_iter().collect();
            // Either outcome is fine; what matters is that neither panics.
            let _ = versa_cel::compile_rule(&src, &schema_type, &versa_cel::CompileOptions::default());
        }
    }
}

#[test]
fn property_name_escaping() {
    let cases = [
        ("foo", Some("foo")),
        ("namespace", Some("__namespace__")),
        ("in", Some("__in__")),
        ("sprint", Some("sprint")),
        ("x-prop", Some("x__dash__prop")),
        ("redact__d", Some("redact__underscores__d")),
        ("a.b/c", Some("a__dot__b__slash__c")),
        ("___x", Some("__underscores___x")),
        ("_x", Some("_x")),
        ("-x", Some("__dash__x")),
        ("", None),
        ("1abc", None),
        ("a b", None),
        ("a:b", None),
        ("ü", None),
    ];
    for (name, want) in cases {
        let got = escape_property_name(name);
        assert_eq!(got.as_deref(), want, "{name}");
        if let Some(escaped) = got {
            assert_eq!(unescape_property_name(&escaped), name);
        }
    }
}
