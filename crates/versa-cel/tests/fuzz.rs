//! Generated input for the whole pipeline — parse, check, estimate, evaluate — with one
//! property: nothing panics, and input beyond the limits is an error, never a crash.
//!
//! Two generators, both driven by a xorshift generator from fixed seeds so that a failure
//! reproduces: token soups (random sequences of CEL tokens, keywords, macro names and odd
//! literals) and random well-formed-ish expressions over a realistic `self` (deep nesting, long
//! and unicode strings, huge numbers, every macro with right and wrong arities, the Kubernetes
//! libraries). Whatever compiles is cost-estimated and evaluated with a small cost budget, so
//! that the evaluator sees odd but type-correct programs too. Separately, adversarial shapes
//! (nesting just below and far beyond the limits) must come back as errors.
//!
//! # Stacks
//!
//! Every input is parsed, checked and estimated on a thread with a 2 MiB stack — the default
//! for test threads and what the parser promises to fit in (see `parser`'s input safety) — and
//! then run through every stage, evaluation included, on a thread with an 8 MiB stack: the
//! least versa evaluates on (the CLI's main thread; the server's workers have 32 MiB,
//! `WORKER_STACK_BYTES`). The evaluator recurses more per tree level than the checker: the
//! deepest accepted nesting of comprehensions takes about 4 MiB to evaluate unoptimized.
//!
//! `VERSA_FUZZ_ITERATIONS=N` runs N inputs per seed and generator (the default keeps
//! `cargo test` within seconds); `VERSA_FUZZ_SEED=S` replaces the seed list with one seed.
//! No timing is asserted (a hang shows as a test that never ends); the slowest input is
//! printed with `--nocapture`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::{Value as Json, json};
use versa_cel::parser::{MAX_CODE_POINTS, MAX_RECURSION_DEPTH};
use versa_cel::{Activation, CompileOptions, CostTracker, DeclType, compile_expression, estimate_cost, eval, parse};
use versa_schema::Structural;

/// The stack parsing, checking and estimating must fit in.
const COMPILE_STACK_BYTES: usize = 2 * 1024 * 1024;
/// The stack evaluation must fit in: the CLI's main thread, the smallest versa evaluates on.
const EVAL_STACK_BYTES: usize = 8 * 1024 * 1024;
const DEFAULT_ITERATIONS: usize = 400;
const SEEDS: &[u64] = &[0x9E37_79B9_7F4A_7C15, 1, 0xDEAD_BEEF, 20_260_101];
/// The evaluation budget: small, so that expensive programs are cancelled quickly.
const PER_CALL_LIMIT: u64 = 20_000;

/// xorshift64*: small, fast, and good enough to drive a generator.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn schema() -> JSONSchemaProps {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 64},
            "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 16}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}
                }
            },
            "size": {"x-kubernetes-int-or-string": true},
            "created": {"type": "string", "format": "date-time"},
            "ttl": {"type": "string", "format": "duration"},
            "ratio": {"type": "number"},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        }
    }))
    .unwrap()
}

fn sample_object(rng: &mut Rng) -> Json {
    let n = rng.below(4);
    let name = *rng.pick(&["", "web", "ü😀-name", "a.b/c"]);
    let tier = *rng.pick(&["", "backend"]);
    json!({
        "replicas": rng.below(5) as i64 - 1,
        "name": name,
        "tags": (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>(),
        "labels": {"app": "web", "tier": tier},
        "ports": (0..n).map(|i| json!({"name": format!("p{i}"), "port": 8000 + i})).collect::<Vec<_>>(),
        "size": if rng.chance(50) { json!(100) } else { json!("50%") },
        "created": "2024-01-02T03:04:05Z",
        "ttl": "1h30m",
        "ratio": 0.5,
        "grid": [[1, 2], [3], []],
        "set": ["a", "b"]
    })
}

const LEAVES: &[&str] = &[
    "self",
    "self.replicas",
    "self.name",
    "self.tags",
    "self.labels",
    "self.ports",
    "self.size",
    "self.created",
    "self.ttl",
    "self.ratio",
    "self.grid",
    "self.set",
    "self.ports[0]",
    "self.labels['app']",
    "oldSelf",
    "oldSelf.replicas",
    "x",
    "i",
    "v",
    "k",
    "0",
    "1",
    "-1",
    "42u",
    "0x7fffffffffffffff",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615u",
    "18446744073709551616u",
    "99999999999999999999999",
    "1.5",
    "1e308",
    "1e999",
    "-0.0",
    "true",
    "false",
    "null",
    "''",
    "'a'",
    "'ü😀'",
    "'\\u00e9\\x41\\101\\n'",
    "\"dq\"",
    "r'\\d+'",
    "'''tri\nple'''",
    "b'\\xff\\x00'",
    "[]",
    "{}",
    "[1, 2, 3]",
    "['a', 'b']",
    "{'a': 1}",
    "duration('1s')",
    "timestamp('2024-01-01T00:00:00Z')",
    "int",
    "string",
    "dyn",
];

const BINARY: &[&str] = &["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"];

const MEMBER_FUNCTIONS: &[&str] = &[
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "lowerAscii",
    "upperAscii",
    "split",
    "join",
    "indexOf",
    "lastIndexOf",
    "charAt",
    "substring",
    "replace",
    "trim",
    "reverse",
    "format",
    "sum",
    "min",
    "max",
    "isSorted",
    "slice",
    "flatten",
    "sort",
    "distinct",
    "first",
    "last",
    "find",
    "findAll",
    "orValue",
    "hasValue",
    "value",
    "or",
    "getHours",
    "getFullYear",
    "isGreaterThan",
    "compareTo",
    "add",
    "getScheme",
    "family",
    "containsIP",
    "validate",
    "major",
];

const GLOBAL_FUNCTIONS: &[&str] = &[
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "dyn",
    "type",
    "timestamp",
    "duration",
    "matches",
    "quantity",
    "isQuantity",
    "ip",
    "isIP",
    "cidr",
    "isCIDR",
    "url",
    "isURL",
    "semver",
    "isSemver",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "sets.contains",
    "sets.intersects",
    "lists.range",
    "strings.quote",
    "format.dns1123Label",
    "format.named",
    "frobnicate",
];

const ONE_VAR_MACROS: &[(&str, usize)] = &[
    ("all", 1),
    ("exists", 1),
    ("exists_one", 1),
    ("map", 1),
    ("map", 2),
    ("filter", 1),
    ("sortBy", 1),
    ("optMap", 1),
    ("optFlatMap", 1),
];

const TWO_VAR_MACROS: &[(&str, usize)] = &[
    ("all", 1),
    ("exists", 1),
    ("existsOne", 1),
    ("exists_one", 1),
    ("transformList", 1),
    ("transformList", 2),
    ("transformMap", 1),
    ("transformMap", 2),
    ("transformMapEntry", 1),
    ("transformMapEntry", 2),
];

const VARS: &[&str] = &["x", "i", "v", "k", "self", "__result__", "a.b", "1"];

/// A random expression of at most `depth` levels, mostly well-formed.
fn expr(rng: &mut Rng, depth: usize) -> String {
    if depth == 0 || rng.chance(20) {
        return leaf(rng);
    }
    let d = depth - 1;
    match rng.below(16) {
        0 | 1 => format!("{} {} {}", expr(rng, d), rng.pick(BINARY), expr(rng, d)),
        2 => format!("{}{}", rng.pick(&["!", "-", "!!", "--"]), expr(rng, d)),
        3 => format!("{} ? {} : {}", expr(rng, d), expr(rng, d), expr(rng, d)),
        4 => format!("({})", expr(rng, d)),
        5 => format!("{}[{}]", expr(rng, d), expr(rng, d)),
        6 => format!("{}{}", expr(rng, d), rng.pick(&[".name", ".?name", "[?0]", ".port", ".tier", ".x"])),
        7 | 8 => {
            let n = rng.below(3);
            let args = args(rng, d, n);
            format!("{}.{}({args})", expr(rng, d), rng.pick(MEMBER_FUNCTIONS))
        }
        9 => {
            let n = rng.below(3);
            let args = args(rng, d, n);
            format!("{}({args})", rng.pick(GLOBAL_FUNCTIONS))
        }
        10 | 11 => {
            let (name, extra) = *rng.pick(ONE_VAR_MACROS);
            let var = if rng.chance(90) { *rng.pick(&VARS[..4]) } else { *rng.pick(VARS) };
            let body = args(rng, d, extra);
            format!("{}.{name}({var}, {body})", expr(rng, d))
        }
        12 | 13 => {
            let (name, extra) = *rng.pick(TWO_VAR_MACROS);
            let (a, b) = if rng.chance(90) { ("i", "v") } else { (*rng.pick(VARS), *rng.pick(VARS)) };
            let body = args(rng, d, extra);
            format!("{}.{name}({a}, {b}, {body})", expr(rng, d))
        }
        14 => match rng.below(4) {
            0 => {
                let n = rng.below(4);
                format!("[{}]", args(rng, d, n))
            }
            1 => format!("[?optional.of({}), {}]", expr(rng, d), expr(rng, d)),
            2 => format!("{{{}: {}, ?'o': optional.none()}}", expr(rng, d), expr(rng, d)),
            _ => format!("Msg{{f: {}}}", expr(rng, d)),
        },
        _ => match rng.below(5) {
            0 => format!("has({}.name)", expr(rng, d)),
            1 => format!("optional.of({}).optMap(x, {})", expr(rng, d), expr(rng, d)),
            2 => format!("'{}'", "ab\u{e9}😀".repeat(rng.below(2_000))),
            3 => format!("{}{}", "(".repeat(rng.below(40)), leaf(rng)) + &")".repeat(rng.below(40)),
            _ => format!("{}.all(x, {})", expr(rng, d), expr(rng, d)),
        },
    }
}

fn leaf(rng: &mut Rng) -> String {
    (*rng.pick(LEAVES)).to_owned()
}

fn args(rng: &mut Rng, depth: usize, n: usize) -> String {
    (0..n).map(|_| expr(rng, depth)).collect::<Vec<_>>().join(", ")
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ".",
    ",",
    ":",
    "?",
    "!",
    "-",
    "+",
    "*",
    "/",
    "%",
    "<",
    ">",
    "=",
    "==",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "&",
    "|",
    "in",
    "?.",
    ".?",
    "[?",
    "self",
    "oldSelf",
    "x",
    "i",
    "v",
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "has",
    "cel",
    "bind",
    "optional",
    "null",
    "true",
    "false",
    "if",
    "while",
    "namespace",
    "0",
    "1u",
    "0x",
    "1e",
    "1.",
    ".5",
    "9999999999999999999999",
    "'",
    "\"",
    "'''",
    "r'",
    "b'",
    "\\",
    "\\u",
    "\\x4",
    "`",
    "ü",
    "😀",
    " ",
    "\n",
    "\t",
    "\u{0}",
    "#",
    "@result",
    "__result__",
    "cel.@mapInsert",
];

fn token_soup(rng: &mut Rng) -> String {
    let n = 1 + rng.below(60);
    let mut s = String::new();
    for _ in 0..n {
        let token: &&str = rng.pick(TOKENS);
        s.push_str(token);
        if rng.chance(40) {
            s.push(' ');
        }
    }
    s
}

#[derive(Debug, Default)]
struct Stats {
    inputs: usize,
    compiled: usize,
    evaluated: usize,
    eval_errors: usize,
    cancelled: usize,
    slowest: (Duration, String),
}

/// Runs one input through every stage (evaluation only when `evaluate`); a panic names the
/// input.
fn exercise(src: &str, decl: &DeclType, object: &Json, old: &Json, evaluate: bool, stats: &mut Stats) {
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let opts = CompileOptions::default();
        let Ok(compiled) = compile_expression(src, decl, &opts) else {
            return (false, None);
        };
        let _ = estimate_cost(&compiled, decl);
        if !evaluate {
            return (true, None);
        }
        let act = Activation::for_rule(object, Some(old), decl, false).unwrap();
        let mut tracker = CostTracker::with_limits(PER_CALL_LIMIT, 10 * PER_CALL_LIMIT);
        (true, Some(eval(&compiled, &act, &mut tracker).map(|_| ())))
    }));
    let (compiled, result) = match outcome {
        Ok(r) => r,
        Err(_) => panic!("panicked on input {src:?}"),
    };
    stats.inputs += 1;
    stats.compiled += usize::from(compiled);
    match result {
        Some(Ok(())) => stats.evaluated += 1,
        Some(Err(e)) if e.is_cancellation() => stats.cancelled += 1,
        Some(Err(_)) => stats.eval_errors += 1,
        None => {}
    }
    let took = started.elapsed();
    if took > stats.slowest.0 {
        stats.slowest = (took, src.chars().take(200).collect());
    }
}

fn iterations() -> usize {
    std::env::var("VERSA_FUZZ_ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_ITERATIONS)
}

fn seeds() -> Vec<u64> {
    match std::env::var("VERSA_FUZZ_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => SEEDS.to_vec(),
    }
}

/// Runs `f(evaluate)` twice: without evaluation on a thread with [`COMPILE_STACK_BYTES`] of
/// stack, then with evaluation on one with [`EVAL_STACK_BYTES`] (a stack overflow aborts the
/// test binary, which fails the run just as loudly). Returns the second run's result.
fn on_known_stacks<T: Send + 'static>(f: impl Fn(bool) -> T + Send + Sync + Clone + 'static) -> T {
    let compile_only = f.clone();
    std::thread::Builder::new()
        .stack_size(COMPILE_STACK_BYTES)
        .spawn(move || compile_only(false))
        .unwrap()
        .join()
        .unwrap();
    std::thread::Builder::new().stack_size(EVAL_STACK_BYTES).spawn(move || f(true)).unwrap().join().unwrap()
}

#[test]
fn generated_expressions_never_panic() {
    let stats = on_known_stacks(|evaluate| {
        let decl = DeclType::from_structural(&Structural::lower(&schema()).unwrap(), true).unwrap();
        let mut stats = Stats::default();
        for seed in seeds() {
            let mut rng = Rng::new(seed);
            for _ in 0..iterations() {
                let object = sample_object(&mut rng);
                let old = sample_object(&mut rng);
                let depth = if rng.chance(10) { 12 } else { 5 };
                let src = expr(&mut rng, depth);
                exercise(&src, &decl, &object, &old, evaluate, &mut stats);
            }
        }
        stats
    });
    println!("{stats:?}");
    // The generator must keep producing programs that check and run, or it tests little.
    assert!(stats.compiled * 10 >= stats.inputs, "only {} of {} compiled", stats.compiled, stats.inputs);
    assert!(stats.evaluated > 0, "{stats:?}");
}

#[test]
fn token_soups_never_panic() {
    let stats = on_known_stacks(|evaluate| {
        let decl = DeclType::from_structural(&Structural::lower(&schema()).unwrap(), true).unwrap();
        let mut stats = Stats::default();
        for seed in seeds() {
            let mut rng = Rng::new(seed);
            for _ in 0..iterations() {
                let object = sample_object(&mut rng);
                let src = token_soup(&mut rng);
                exercise(&src, &decl, &object, &object, evaluate, &mut stats);
            }
        }
        stats
    });
    println!("{stats:?}");
    assert_eq!(stats.inputs, seeds().len() * iterations());
}

/// Shapes at and beyond the limits: nesting one level under cel-go's recursion limit parses,
/// checks and runs within the known stacks; beyond it, and beyond the tree-height and size
/// limits, each is an error.
#[test]
fn nesting_and_size_limits_are_errors() {
    on_known_stacks(|evaluate| {
        let decl = DeclType::from_structural(&Structural::lower(&schema()).unwrap(), true).unwrap();
        let object = sample_object(&mut Rng::new(7));
        let mut stats = Stats::default();
        let deepest = MAX_RECURSION_DEPTH - 1;
        type Shape = fn(usize) -> String;
        let shapes: &[(&str, Shape)] = &[
            ("parentheses", |n| format!("{}1{}", "(".repeat(n), ")".repeat(n))),
            ("lists", |n| format!("{}1{}", "[".repeat(n), "]".repeat(n))),
            ("maps", |n| format!("{}1{}", "{1: ".repeat(n), "}".repeat(n))),
            ("calls", |n| format!("{}1{}", "dyn(".repeat(n), ")".repeat(n))),
            ("ternaries", |n| format!("{}1", "true ? 1 : ".repeat(n))),
            ("indexes", |n| format!("[1]{}", "[0]".repeat(n))),
            ("selections", |n| format!("self{}", ".name".repeat(n))),
            ("one-variable macros", |n| format!("{}true{}", "[1].all(x, ".repeat(n), ")".repeat(n))),
            ("two-variable macros", |n| format!("{}true{}", "[1].all(i, v, ".repeat(n), ")".repeat(n))),
            ("transformMap", |n| format!("{}1{}", "{1: 2}.transformMap(k, v, ".repeat(n), ")".repeat(n))),
            ("maps", |n| format!("{}1{}", "[1].map(x, ".repeat(n), ")".repeat(n))),
            ("additions", |n| vec!["1"; n].join(" + ")),
            ("negations", |n| format!("{}1", "-".repeat(n))),
            ("conjunctions", |n| vec!["true"; n].join(" && ")),
        ];
        for (name, shape) in shapes {
            // Just under the recursion limit: anything may happen, except a crash.
            exercise(&shape(deepest), &decl, &object, &object, evaluate, &mut stats);
            for n in [MAX_RECURSION_DEPTH * 4, 20_000] {
                let src = shape(n);
                // Flat chains (`+`, `&&`, unary runs) are not nested; only those need not fail.
                let flat = matches!(*name, "conjunctions" | "negations");
                if !flat {
                    assert!(parse(&src).is_err(), "{name} × {n} parsed");
                }
                exercise(&src, &decl, &object, &object, evaluate, &mut stats);
            }
        }
        // Longer than cel-go's size limit: refused before lexing.
        let long = format!("'{}'", "é".repeat(MAX_CODE_POINTS));
        let errs = parse(&long).unwrap_err();
        assert!(errs[0].message.starts_with("expression code point size exceeds limit"), "{errs:?}");
    });
}
