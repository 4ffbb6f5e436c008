//! The fast path of rule evaluation: a checked `bool` expression lowered, once, into a tree of
//! typed steps that evaluates over small copyable values, and that gives up ([`Bail`]) on
//! anything outside the common case.
//!
//! Most rules are field reads, comparisons, logical operators, string functions and the
//! `all`/`exists`/`exists_one`/`filter`/`map` macros over schema values, and most evaluations
//! pass. For those, the general evaluator's work per node — matching the syntax tree, looking up
//! the plan, building, cloning and dropping [`Value`]s, carrying CEL errors as values — is most
//! of the cost. Here a node is one match on an already-resolved step, values are `Copy` views of
//! the JSON (nothing is allocated but the lists `filter()` and `map()` build), and an error of
//! any kind is not produced at all: the evaluation stops and the caller evaluates the rule again
//! the general way, which yields the exact result, error and cost. Giving up is only ever slower.
//!
//! Exactness on the path that does not give up: every operation is one the general evaluator
//! performs with the same operands, charged what it charges (`runtimecost.go`: identifiers and
//! selections 1 unless only resolved as attributes (`eval::attribute`), literals 0, list
//! literals 10, logical operators and the ternary nothing, calls their size-dependent cost), and
//! the result is the general evaluator's whenever it is not an error. What is not covered gives
//! up: equality of lists, maps and objects; doubles, unsigned and bytes values; optionals; the
//! Kubernetes libraries; two-variable comprehensions. Debug builds evaluate every fast result
//! again the general way and compare value and cost.
//!
//! Bounded like the general evaluator: the tree follows the parsed expression (whose depth the
//! parser limits), loops run over finite lists, and the cost limit is checked at every charge.

use serde_json::{Map as JsonMap, Value as Json};

use crate::ast::Expr;
use crate::eval::Activation;
use crate::plan::{Plan, ResolvedField};
use crate::runtime::LiteralPatterns;
use crate::stdlib::Builtin;
use crate::time::{self, Timestamp};
use crate::types::{DeclKind, DeclType, ObjectType, Type};
use crate::value::{Map, Value, json_int};

mod lower;
mod run;

use lower::Lower;
use run::Run;

/// The evaluation left the fast path (an error, an uncovered value, the cost limit): evaluate
/// the general way.
#[derive(Debug)]
pub(crate) struct Bail;

type Fast<T> = Result<T, Bail>;

/// A compiled `bool` expression's fast form.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    root: Node,
    /// The most comprehension variables in scope at once.
    locals: usize,
}

/// A program is a function of the expression it was built from, which is compared instead.
impl PartialEq for Program {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[derive(Clone, Debug)]
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Str(Box<str>),
    /// An identifier naming a type (`string` in `type(x) == string`).
    TypeName(&'static str),
    SelfVar,
    OldSelfVar,
    /// A comprehension variable, by its position on the stack of them.
    Local(usize),
    /// A field of an object type the checker resolved (`test_only`: `has()`).
    Field {
        operand: Box<Node>,
        field: Box<ResolvedField>,
        test_only: bool,
    },
    /// The same on a variable (`self.x`, `e.name`): the identifier and the selection in one step.
    VarField {
        var: Var,
        field: Box<ResolvedField>,
        test_only: bool,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Conditional(Box<[Node; 3]>),
    NotStrictlyFalse(Box<Node>),
    /// A standard operator or string function with its operands (the receiver first).
    Call(Builtin, Box<[Node]>),
    /// `type(x)`.
    TypeOf(Box<Node>),
    List(Box<[Node]>),
    /// A list literal of literals (not a comprehension's initial accumulator): built once per
    /// evaluation, however often it is reached.
    ConstList(Box<[Node]>),
    /// A folded `[]` (a macro's initial accumulator): a new list each time, free.
    EmptyList,
    /// `@result + [elem]` in a macro's loop step: the accumulator list at `accu` grows in place.
    Append {
        accu: usize,
        elem: Box<Node>,
    },
    Comprehension(Box<Loop>),
}

#[derive(Clone, Copy, Debug)]
enum Var {
    Itself,
    Old,
    Local(usize),
}

#[derive(Clone, Debug)]
struct Loop {
    range: Node,
    init: Node,
    condition: Node,
    step: Node,
    result: Node,
}

/// A value on the fast path: scalars, and views of JSON through their declared type.
#[derive(Clone, Copy, Debug)]
enum Fv<'r> {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'r str),
    Timestamp(Timestamp),
    Duration(i64),
    Type(&'static str),
    /// A JSON object through its object type (`self`'s fields may be indexed: [`run::Run`]'s `self_index`).
    Object(&'r JsonMap<String, Json>, &'r ObjectType),
    /// A JSON array and the declared type of its elements.
    List(&'r Vec<Json>, &'r DeclType),
    /// A JSON object under `additionalProperties` and the declared type of its values.
    Map(&'r JsonMap<String, Json>, &'r DeclType),
    /// A list built by the evaluation, by its index in [`run::Run`]'s `lists`.
    Built(usize),
}

impl Program {
    /// The fast form of a checked expression, when it has a `bool` result and every node is
    /// covered.
    pub(crate) fn build(expr: &Expr, plan: &Plan, result_type: &Type, self_type: &DeclType) -> Option<Program> {
        // Values the fast path does not cover would make every evaluation give up: no fast form.
        if *result_type != Type::Bool || !covered(self_type) {
            return None;
        }
        let mut b = Lower { plan, accumulators: Vec::new(), depth: 0, max_depth: 0 };
        let root = b.lower(expr)?;
        Some(Program { root, locals: b.max_depth })
    }

    /// Evaluates the program with `activation`'s variables: `Ok((result, cost))` unless the
    /// evaluation left the fast path, or its cost would exceed `limit`.
    pub(crate) fn run<'r>(
        &'r self,
        activation: &'r Activation<'_>,
        patterns: &'r LiteralPatterns,
        limit: u64,
    ) -> Result<(bool, u64), Bail> {
        let self_value = activation.self_value.as_ref().map(fv_of).transpose()?;
        // `oldSelf` as `optional_type` (`optionalOldSelf`) is not covered: a rule gives up only
        // where it reads it.
        let old_self = activation.old_self.as_ref().and_then(|v| fv_of(v).ok());
        let self_index = match &activation.self_value {
            Some(Value::Object(o)) => o.index.map(|ix| (o.json, ix)),
            _ => None,
        };
        let mut run = Run {
            cost: 0,
            limit,
            self_value,
            old_self,
            self_index,
            patterns,
            locals: Vec::with_capacity(self.locals),
            lists: Vec::new(),
            consts: Vec::new(),
        };
        match run.eval(&self.root)? {
            Fv::Bool(b) => Ok((b, run.cost)),
            _ => Err(Bail),
        }
    }
}

/// The fast view of a bound variable.
fn fv_of<'r>(v: &'r Value<'_>) -> Fast<Fv<'r>> {
    Ok(match v {
        Value::Null => Fv::Null,
        Value::Bool(b) => Fv::Bool(*b),
        Value::Int(i) => Fv::Int(*i),
        Value::String(s) => Fv::Str(s),
        Value::Timestamp(t) => Fv::Timestamp(*t),
        Value::Duration(d) => Fv::Duration(*d),
        Value::Object(o) => Fv::Object(o.json, o.ty),
        Value::List(l) => match l.json_view() {
            Some((items, elem)) => Fv::List(items, elem),
            None => return Err(Bail),
        },
        Value::Map(Map::Json(m, decl)) => Fv::Map(m, decl),
        _ => return Err(Bail),
    })
}

/// Whether values of `decl` (and the elements of lists and maps of it) are ones the fast path
/// covers: not doubles, unsigned integers or bytes.
fn covered(decl: &DeclType) -> bool {
    match &decl.kind {
        DeclKind::Scalar(t) => !matches!(t, Type::Double | Type::Uint | Type::Bytes),
        DeclKind::List { elem, .. } => covered(elem),
        DeclKind::Map { value } => covered(value),
        DeclKind::Object(_) => true,
    }
}

/// `Value::from_json` for the values the fast path covers.
fn from_json<'r>(j: &'r Json, decl: &'r DeclType) -> Fast<Fv<'r>> {
    Ok(match (&decl.kind, j) {
        (_, Json::Null) => Fv::Null,
        (DeclKind::List { elem, .. }, Json::Array(items)) => Fv::List(items, elem),
        (DeclKind::Map { value }, Json::Object(m)) => Fv::Map(m, value),
        (DeclKind::Object(ty), Json::Object(m)) => Fv::Object(m, ty),
        (DeclKind::Scalar(t), j) => match (t, j) {
            (Type::Bool | Type::Dyn, Json::Bool(b)) => Fv::Bool(*b),
            (Type::Int, Json::Number(n)) => Fv::Int(json_int(n).ok_or(Bail)?),
            (Type::String | Type::Dyn, Json::String(s)) => Fv::Str(s),
            (Type::Timestamp, Json::String(s)) => {
                Fv::Timestamp(time::parse_rfc3339(s).or_else(|| time::parse_date(s)).ok_or(Bail)?)
            }
            (Type::Duration, Json::String(s)) => Fv::Duration(time::parse_duration(s).map_err(|_| Bail)?),
            // int-or-string: a number that is not an integer is a double, not covered.
            (Type::Dyn, Json::Number(n)) => Fv::Int(json_int(n).ok_or(Bail)?),
            _ => return Err(Bail),
        },
        _ => return Err(Bail),
    })
}

/// `type(v)`'s name, for the values whose type name is static.
fn type_name(v: Fv<'_>) -> Fast<&'static str> {
    Ok(match v {
        Fv::Null => "null_type",
        Fv::Bool(_) => "bool",
        Fv::Int(_) => "int",
        Fv::Str(_) => "string",
        Fv::Timestamp(_) => "google.protobuf.Timestamp",
        Fv::Duration(_) => "google.protobuf.Duration",
        Fv::Type(_) => "type",
        Fv::List(..) | Fv::Built(_) => "list",
        Fv::Map(..) => "map",
        Fv::Object(..) => return Err(Bail),
    })
}

/// A scalar as a general value, for the arithmetic the standard library does.
fn scalar_value(v: Fv<'_>) -> Fast<Value<'static>> {
    Ok(match v {
        Fv::Int(i) => Value::Int(i),
        Fv::Timestamp(t) => Value::Timestamp(t),
        Fv::Duration(d) => Value::Duration(d),
        _ => return Err(Bail),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::eval::run_general;
    use crate::runtime::CostTracker;
    use crate::{CompileOptions, CompiledExpression, compile_rule};

    fn schema() -> DeclType {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "m": {"type": "integer"}, "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "integer"}},
            "names": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "kv": {"type": "object", "additionalProperties": {"type": "string"}},
            "o": {"type": "object", "properties": {"a": {"type": "integer"}, "x-y": {"type": "string"}}},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "v": {"type": "integer"}}}},
            "ios": {"x-kubernetes-int-or-string": true},
            "at": {"type": "string", "format": "date-time"},
            "ttl": {"type": "string", "format": "duration"},
            "d": {"type": "number"},
        }});
        let structural = versa_schema::Structural::from_json(&schema).unwrap();
        DeclType::from_structural(&structural, false).unwrap()
    }

    fn objects() -> Vec<Json> {
        vec![
            json!({"n": 3, "m": 5, "s": "abc", "l": [1, 2, 0], "names": ["a", "b"], "kv": {"k": "v", "j": "w"},
                   "o": {"a": 1, "x-y": "z"}, "items": [{"name": "a", "v": 1}, {"name": "b", "v": 20}],
                   "ios": "x", "at": "2026-01-01T00:00:00Z", "ttl": "1h", "d": 1.5}),
            json!({"n": -9223372036854775807_i64, "m": 0, "s": "", "l": [], "names": [], "kv": {},
                   "o": {}, "items": [{"name": "a"}], "ios": 1000, "at": "2026-01-01", "ttl": "0s"}),
            json!({"n": 2, "m": 2.0, "s": "ünïcödé", "ios": 1.5, "kv": {"k": "é"}, "l": [7, -7, 9223372036854775807_i64]}),
            json!({}),
        ]
    }

    /// Evaluates `compiled` both ways on `new` (with `old`); panics if the fast path gets
    /// through with another result or cost than the general evaluation. Whether it got through.
    fn agree(compiled: &CompiledExpression, decl: &DeclType, new: &Json, old: &Json) -> bool {
        let act = Activation::for_rule(new, Some(old), decl, false).unwrap();
        let mut general = CostTracker::default();
        let expected = run_general(compiled, &act, &mut general);
        let Some(program) = &compiled.fast else { return false };
        let Ok((result, cost)) = program.run(&act, &compiled.patterns, u64::MAX) else { return false };
        let context = format!("{} on {new} (old {old})", compiled.source);
        assert!(
            matches!(expected, Ok(Value::Bool(b)) if b == result),
            "{context}: fast {result}, general {expected:?}"
        );
        assert_eq!(cost, general.last_cost(), "{context}: cost");
        true
    }

    /// Rules, and the objects (`self`, `oldSelf`) they run on, evaluated both ways: the fast
    /// path either gives up or agrees with the general evaluation on the result and the cost.
    /// `covered`: the rule has a fast form, and gets through on the first object.
    #[test]
    fn the_fast_path_agrees_with_the_general_evaluation_or_gives_up() {
        // (rule, covered: on the fast path for the first object)
        let rules: &[(&str, bool)] = &[
            ("self.n <= self.m", true),
            ("self.n + 1 > self.m - 1 && self.n * 2 != 7", true),
            ("self.n / self.m == 0 || self.n % self.m == 3", true),
            ("-self.n < 0", true),
            ("self.s.startsWith('a') || self.s.endsWith('c') || self.s.contains('b')", true),
            ("self.s.matches('^[a-c]*$')", true),
            ("size(self.s) < 4 && self.s.size() >= 0", true),
            ("self.s == 'abc' ? self.n == 3 : self.n != 3", true),
            ("self.s < 'b' && self.s >= ''", true),
            ("'k' in self.kv && self.kv['k'] == 'v'", true),
            ("1 in self.l && !(5 in self.l)", true),
            ("self.l[0] == 1", true),
            ("self.names.all(n, n in ['a', 'b', 'c'])", true),
            ("self.l.all(x, x in [0, 1, 2] && size([1, 2]) == 2) && [3, 4][1] == 4", true),
            ("self.l.all(x, x >= 0 && x < 100)", true),
            ("self.l.exists(x, x == 2)", true),
            ("self.l.exists_one(x, x > 1)", true),
            ("self.kv.all(k, k.size() == 1)", true),
            ("self.items.filter(i, i.v > 5).all(i, i.name == 'b')", true),
            ("size(self.items.filter(i, has(i.v))) == 2", true),
            ("self.l.map(x, x * 2).exists(x, x == 4)", true),
            ("self.items.exists(i, i.name == 'a' && i.v < 10)", true),
            ("has(self.o.a) && self.o.x__dash__y == 'z' && has(self.o.x__dash__y)", true),
            ("type(self.ios) == string ? self.ios == 'x' : self.ios == 1000", true),
            ("self.at + self.ttl > self.at && self.at - self.ttl < self.at", true),
            ("self.n == oldSelf.n && self.s == oldSelf.s", true),
            ("self.l == oldSelf.l", false),
            ("self.o == oldSelf.o", false),
            ("self.d > 1.0", false),
            ("self.d == 1.5", false),
            ("self.l.all(x, 10 / x > 1)", false),
            ("[0, 1].all(x, 10 / x > 5)", false),
            ("self.kv.exists(k, self.kv[k] == 'w')", false),
            ("self.?o.?a.orValue(0) == 1", false),
        ];
        let decl = schema();
        let objects = objects();
        for (source, covered) in rules {
            let compiled = compile_rule(source, &decl, &CompileOptions::default()).unwrap();
            let fast_on_first = agree(&compiled, &decl, &objects[0], &objects[0]);
            assert!(!covered || fast_on_first, "{source}: not on the fast path");
            for new in &objects {
                for old in &objects {
                    agree(&compiled, &decl, new, old);
                }
            }
        }
    }

    /// Rules that would give up on every object get no fast form (they would pay twice).
    #[test]
    fn rules_over_uncovered_values_have_no_fast_form() {
        let decl = schema();
        for source in ["self.d > 1.0", "self.d == 1.5 || self.n == 1"] {
            let compiled = compile_rule(source, &decl, &CompileOptions::default()).unwrap();
            assert!(compiled.fast.is_none(), "{source}");
        }
        let structural = versa_schema::Structural::from_json(&json!({"type": "number"})).unwrap();
        let number = DeclType::from_structural(&structural, false).unwrap();
        assert!(compile_rule("self > 1.0", &number, &CompileOptions::default()).unwrap().fast.is_none());
        let compiled = compile_rule("self.n == 1", &decl, &CompileOptions::default()).unwrap();
        assert!(compiled.fast.is_some());
    }

    /// With `optionalOldSelf`, `oldSelf` is an optional, which the fast path does not cover:
    /// rules that do not read it still get through.
    #[test]
    fn an_optional_old_self_only_stops_rules_that_read_it() {
        let decl = schema();
        let opts = CompileOptions { optional_old_self: true, ..CompileOptions::default() };
        let objects = objects();
        let act = Activation::for_rule(&objects[0], None, &decl, true).unwrap();
        for (source, fast) in [("self.n == 3", true), ("!oldSelf.hasValue() || self.n == 3", false)] {
            let compiled = compile_rule(source, &decl, &opts).unwrap();
            let ran = compiled.fast.as_ref().is_some_and(|p| p.run(&act, &compiled.patterns, u64::MAX).is_ok());
            assert_eq!(ran, fast, "{source}");
        }
    }

    /// Random well-typed rules over the same schema, each evaluated both ways on every pair of
    /// objects: the fast path gets through on many of them, and always agrees.
    #[test]
    fn random_rules_agree() {
        let iterations: usize = std::env::var("VERSA_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(600);
        let seed: u64 = std::env::var("VERSA_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed);
        let mut g = Gen { state: seed | 1 };
        let decl = schema();
        let objects = objects();
        let (mut compiled_count, mut fast) = (0, 0);
        for _ in 0..iterations {
            let source = g.bool_expr(3, None);
            let Ok(compiled) = compile_rule(&source, &decl, &CompileOptions::default()) else { continue };
            compiled_count += 1;
            for new in &objects {
                for old in &objects {
                    fast += usize::from(agree(&compiled, &decl, new, old));
                }
            }
        }
        assert!(compiled_count > iterations / 2, "only {compiled_count} of {iterations} rules compiled");
        // About half of them get through (the others meet a missing field, an overflow, a
        // division by zero...).
        let runs = compiled_count * objects.len() * objects.len();
        assert!(fast * 4 > runs, "the fast path got through only {fast} times of {runs}");
    }

    /// A generator of well-typed rules (xorshift; no dependency).
    struct Gen {
        state: u64,
    }

    impl Gen {
        fn next(&mut self) -> u64 {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            self.state
        }

        fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
            options[(self.next() % options.len() as u64) as usize]
        }

        fn chance(&mut self, n: u64) -> bool {
            self.next().is_multiple_of(n)
        }

        /// `var`: the name of an int comprehension variable in scope.
        fn int_expr(&mut self, depth: u32, var: Option<&str>) -> String {
            if depth == 0 || self.chance(3) {
                let leaf = self.pick(&[
                    "self.n",
                    "self.m",
                    "self.o.a",
                    "0",
                    "1",
                    "-1",
                    "7",
                    "9223372036854775807",
                    "size(self.l)",
                    "self.l[0]",
                    "VAR",
                ]);
                return match (leaf, var) {
                    ("VAR", Some(v)) => v.to_owned(),
                    ("VAR", None) => "self.n".to_owned(),
                    (leaf, _) => leaf.to_owned(),
                };
            }
            let op = self.pick(&["+", "-", "*", "/", "%"]);
            format!("({} {op} {})", self.int_expr(depth - 1, var), self.int_expr(depth - 1, var))
        }

        fn string_expr(&mut self, var: Option<&str>) -> String {
            let leaf = self.pick(&["self.s", "'a'", "''", "'abc'", "'ü'", "self.kv['k']", "self.o.x__dash__y", "VAR"]);
            match (leaf, var) {
                ("VAR", Some(v)) => v.to_owned(),
                ("VAR", None) => "self.s".to_owned(),
                (leaf, _) => leaf.to_owned(),
            }
        }

        /// `var`: a comprehension variable in scope, `(name, is_int)`.
        fn bool_expr(&mut self, depth: u32, var: Option<(&str, bool)>) -> String {
            let int_var = var.filter(|(_, int)| *int).map(|(v, _)| v);
            let str_var = var.filter(|(_, int)| !*int).map(|(v, _)| v);
            if depth == 0 || self.chance(4) {
                let cmp = self.pick(&["==", "!=", "<", "<=", ">", ">="]);
                return match self.next() % 12 {
                    0 | 1 => format!("{} {cmp} {}", self.int_expr(2, int_var), self.int_expr(2, int_var)),
                    2 => format!("{} {cmp} {}", self.string_expr(str_var), self.string_expr(str_var)),
                    3 => format!(
                        "{}.{}({})",
                        self.string_expr(str_var),
                        self.pick(&["startsWith", "endsWith", "contains"]),
                        self.string_expr(str_var)
                    ),
                    4 => {
                        format!("{}.matches('{}')", self.string_expr(str_var), self.pick(&["^a", "b+", "^$", "[a-c]"]))
                    }
                    5 => format!("size({}) {cmp} {}", self.string_expr(str_var), self.int_expr(1, int_var)),
                    6 => format!("{} in self.l", self.int_expr(1, int_var)),
                    7 => format!("{} in self.kv", self.string_expr(str_var)),
                    8 => format!("{} in ['a', 'abc', '']", self.string_expr(str_var)),
                    9 => self.pick(&["has(self.o.a)", "has(self.s)", "true", "false"]).to_owned(),
                    10 => "type(self.ios) == string ? self.ios == 'x' : self.ios == 1000".to_owned(),
                    _ => format!("self.at + self.ttl {cmp} self.at"),
                };
            }
            match self.next() % 9 {
                0 => format!("({} && {})", self.bool_expr(depth - 1, var), self.bool_expr(depth - 1, var)),
                1 => format!("({} || {})", self.bool_expr(depth - 1, var), self.bool_expr(depth - 1, var)),
                2 => format!("!({})", self.bool_expr(depth - 1, var)),
                3 => format!(
                    "({} ? {} : {})",
                    self.bool_expr(depth - 1, var),
                    self.bool_expr(depth - 1, var),
                    self.bool_expr(depth - 1, var)
                ),
                4 | 5 => {
                    let m = self.pick(&["all", "exists", "exists_one"]);
                    format!("self.l.{m}(x, {})", self.bool_expr(depth - 1, Some(("x", true))))
                }
                6 => {
                    let m = self.pick(&["all", "exists"]);
                    format!("self.names.{m}(y, {})", self.bool_expr(depth - 1, Some(("y", false))))
                }
                7 => format!(
                    "size(self.l.filter(x, {})) {} {}",
                    self.bool_expr(depth - 1, Some(("x", true))),
                    self.pick(&["==", "<", ">="]),
                    self.int_expr(1, int_var)
                ),
                _ => format!(
                    "self.l.map(x, {}).exists(z, {})",
                    self.int_expr(1, Some("x")),
                    self.bool_expr(depth - 1, Some(("z", true)))
                ),
            }
        }
    }
}
