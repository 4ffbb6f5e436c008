//! What CEL rules cost: compiling the seed's rules (parse + check + cost estimate, per rule),
//! and running them on updates of a 1,000-object corpus, printed as ns per rule evaluation and
//! as a share of the schema write pipeline (JSON parse + `pipeline::admit`: default → prune →
//! coerce metadata → validate) measured in the same run, in interleaved rounds.
//!
//! The rule set (`support/seed.rs`) is every example of the seed's "Validation rules" and
//! "Transition rules" tables (plus its messageExpression), placed on one CronTab-like schema
//! with the sizes a definition author would give it (maxItems, maxProperties, maxLength). Every
//! object of the corpus is valid, and every write is an update (so that the transition rules run
//! too): each rule runs once per object.
//!
//! Target (issue 6): CEL adds at most 20 % to the write pipeline for the seed's rule set. The
//! full write pipeline — an update through the server: HTTPS, decoding, admission, storage, the
//! answer — is measured by `hack/bench-serve.sh cel`, with the same rules and corpus; the share
//! printed here is of the schema steps alone, a much smaller denominator.
//!
//! Run: `cargo bench -p versa-cel` (prints the numbers; not a test, asserts nothing).

// The schema is one `json!` literal, deeper than the macro's default recursion allows.
#![recursion_limit = "512"]

use std::hint::black_box;
use std::time::Duration;

use serde_json::{Value, json};
use versa_cel::{CompileOptions, DeclType, SchemaRules, compile_message_expression, compile_rule, estimate_cost};
use versa_schema::Structural;
use versa_schema::pipeline::{self, ResourceKind};

#[path = "support/seed.rs"]
mod seed;

#[path = "../../versa-schema/benches/support/rounds.rs"]
mod rounds;
use rounds::time;
use seed::{object, rules_with_nodes, schema};

/// `node` with only its `keep`-th rule (counting rules in `rules_with_nodes` order; `seen`
/// counts the rules passed so far).
fn only_rule(node: &Value, keep: usize, seen: &mut usize) -> Value {
    let mut out = node.clone();
    if let Some(rules) = node.get("x-kubernetes-validations").and_then(Value::as_array) {
        let mut kept = Vec::new();
        for r in rules {
            if *seen == keep {
                kept.push(r.clone());
            }
            *seen += 1;
        }
        out["x-kubernetes-validations"] = Value::Array(kept);
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            out["properties"][name] = only_rule(child, keep, seen);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key).filter(|c| c.is_object()) {
            out[key] = only_rule(child, keep, seen);
        }
    }
    out
}

/// The time of each rule on its own (set VERSA_BENCH_RULES=1): the corpus validated against
/// the schema with only that rule, minus the same walk with no rule at all.
fn per_rule(schema_json: &Value, rule_count: usize, admitted: &[Value], olds: &[&Value]) {
    let run = |rules: &SchemaRules| {
        for (v, old) in admitted.iter().zip(olds) {
            black_box(rules.validate(black_box(v), Some(old)));
        }
    };
    for k in 0..rule_count {
        let single = only_rule(schema_json, k, &mut 0);
        let Ok(structural) = Structural::from_json(&single) else { continue };
        let rules = SchemaRules::compile(&structural);
        let [t] = time(Duration::from_millis(300), [&mut || run(&rules)]);
        let mut found = Vec::new();
        rules_with_nodes(&single, true, &mut found);
        let source = found.iter().find(|(_, _, _, m)| !m).map_or("?", |(_, _, s, _)| s.as_str());
        println!("  {:>7.0} ns  {source}", t.as_secs_f64() * 1e9 / admitted.len() as f64);
    }
}

fn main() {
    let schema_json = schema();
    let schema = match Structural::from_json(&schema_json) {
        Ok(s) => s,
        Err(e) => return eprintln!("cannot lower the schema: {e}"),
    };

    // --- compile: every rule on its node, as definition validation does ---------------------
    let mut rules = Vec::new();
    rules_with_nodes(&schema_json, true, &mut rules);
    let mut nodes = Vec::new();
    for (node, is_root, source, is_message) in &rules {
        let decl = match Structural::from_json(node).map(|s| DeclType::from_structural(&s, *is_root)) {
            Ok(Some(d)) => d,
            _ => return eprintln!("no CEL type for the node of {source}"),
        };
        nodes.push((decl, source.as_str(), *is_message));
    }
    // Compiles every expression; returns the rules whose estimate is over the per-expression
    // limit. One is, and is printed: the seed's messageExpression concatenates `string(int)`,
    // whose size cel-go cannot bound (Kubernetes refuses it at definition time too). It is
    // timed like the others.
    let compile_all = |nodes: &[(DeclType, &str, bool)]| -> Result<Vec<String>, String> {
        let mut over = Vec::new();
        for (decl, source, is_message) in nodes {
            let opts = CompileOptions::default();
            let compiled = if *is_message {
                compile_message_expression(source, decl, &opts).map_err(|e| format!("{source}: {e}"))?
            } else {
                compile_rule(source, decl, &opts).map_err(|e| format!("{source}: {e}"))?
            };
            if estimate_cost(&compiled, decl).max > versa_cel::STATIC_ESTIMATED_COST_LIMIT {
                over.push((*source).to_owned());
            }
        }
        Ok(over)
    };
    let over_limit = match compile_all(&nodes) {
        Ok(over) => over,
        Err(e) => return eprintln!("a seed rule does not compile: {e}"),
    };
    let profile = std::env::var("VERSA_BENCH_PROFILE").ok().and_then(|n| n.parse::<usize>().ok());
    let [compile] = time(
        if profile.is_some() { Duration::ZERO } else { Duration::from_secs(2) },
        [&mut || {
            black_box(compile_all(black_box(&nodes)).ok());
        }],
    );
    let [compile_schema] = time(
        if profile.is_some() { Duration::ZERO } else { Duration::from_secs(1) },
        [&mut || {
            black_box(SchemaRules::compile(black_box(&schema)));
        }],
    );
    let rule_count = seed::rule_count();
    println!(
        "compile: {} expressions ({rule_count} rules + {} messageExpression) | parse+check+cost {:.1} µs per \
         expression | SchemaRules::compile of the version {:.1} µs | estimated over the limit: {over_limit:?}",
        nodes.len(),
        nodes.len() - rule_count,
        compile.as_secs_f64() * 1e6 / nodes.len() as f64,
        compile_schema.as_secs_f64() * 1e6,
    );

    // --- evaluate: updates of 1,000 objects -------------------------------------------------
    // VERSA_BENCH_RULE=k (with VERSA_BENCH_PROFILE): only the k-th rule.
    let only = std::env::var("VERSA_BENCH_RULE").ok().and_then(|k| k.parse::<usize>().ok());
    let compiled = match only.map(|k| Structural::from_json(&only_rule(&schema_json, k, &mut 0))) {
        Some(Ok(single)) => SchemaRules::compile(&single),
        _ => SchemaRules::compile(&schema),
    };
    let kind = ResourceKind {
        group: "stable.example.com",
        version: "v1",
        kind: "CronTab",
        namespaced: true,
        name_rule: versa_schema::names::name_is_dns_subdomain,
    };
    let corpus: Vec<(Vec<u8>, Value)> =
        (0..1_000).map(|i| (serde_json::to_vec(&object(i, 1)).unwrap_or_default(), object(i, 0))).collect();
    // Sanity: the corpus is valid for the schema and the rules, and the rules do run (a
    // decreasing counter is refused), or the benchmark would time error paths or nothing.
    let mut admitted = Vec::with_capacity(corpus.len());
    for (bytes, old) in &corpus {
        let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        if let Err(errs) = pipeline::admit(&mut v, &schema, &kind) {
            return eprintln!("corpus object rejected by the schema: {}", errs.aggregate());
        }
        let errs = compiled.validate(&v, Some(old));
        if !errs.is_empty() {
            return eprintln!("corpus object rejected by a rule: {}", errs.aggregate());
        }
        admitted.push(v);
    }
    let mut decreasing = admitted[0].clone();
    decreasing["spec"]["counter"] = json!(0);
    if compiled.validate(&decreasing, Some(&corpus[0].1)).is_empty() {
        return eprintln!("the transition rules did not run");
    }

    // VERSA_BENCH_PROFILE=N: only the write path with CEL, N times, for a profiler (valgrind
    // --tool=callgrind counts instructions, which is steady on a loaded machine).
    if let Some(n) = profile {
        for _ in 0..n {
            for (bytes, old) in &corpus {
                let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                let r = pipeline::admit(&mut v, &schema, &kind);
                let errs = compiled.validate(&v, Some(old));
                black_box((v, r.is_ok(), errs));
            }
        }
        return;
    }
    let [parse_admit, admit_only, cel, with_old, with_cel] = time(
        Duration::from_secs(5),
        [
            // The schema half of the write path: parse the body, then admit it.
            &mut || {
                for (bytes, _) in &corpus {
                    let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                    let r = pipeline::admit(&mut v, &schema, &kind);
                    black_box((v, r.is_ok()));
                }
            },
            // admit alone, on copies of the parsed objects (the copy is timed too, and is
            // cheaper than a parse).
            &mut || {
                for v in &admitted {
                    let mut v = v.clone();
                    let r = pipeline::admit(&mut v, &schema, &kind);
                    black_box((v, r.is_ok()));
                }
            },
            // The CEL half: every rule on the admitted object, with its old version.
            &mut || {
                for (v, (_, old)) in admitted.iter().zip(&corpus) {
                    black_box(compiled.validate(black_box(v), Some(old)));
                }
            },
            // The write path of an update as the server runs it: the old object has just been
            // read and decoded (a copy here), the body is parsed and admitted ...
            &mut || {
                for (bytes, old) in &corpus {
                    let old = old.clone();
                    let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                    let r = pipeline::admit(&mut v, &schema, &kind);
                    black_box((v, old, r.is_ok()));
                }
            },
            // ... and then the rules run on both. The difference between the two passes is
            // what CEL adds to the write path; unlike the isolated CEL pass above, the rules
            // see objects that are in the cache, as they are in the server.
            &mut || {
                for (bytes, old) in &corpus {
                    let old = old.clone();
                    let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                    let r = pipeline::admit(&mut v, &schema, &kind);
                    let errs = compiled.validate(&v, Some(&old));
                    black_box((v, old, r.is_ok(), errs));
                }
            },
        ],
    );
    let evaluations = (admitted.len() * rule_count) as f64;
    println!(
        "evaluate: {} updates × {rule_count} rules | CEL {:.0} ns per rule evaluation, {:.1} µs per object | \
         parse+admit {:.1} µs per object (admit alone {:.1} µs)",
        admitted.len(),
        cel.as_secs_f64() * 1e9 / evaluations,
        cel.as_secs_f64() * 1e6 / admitted.len() as f64,
        parse_admit.as_secs_f64() * 1e6 / admitted.len() as f64,
        admit_only.as_secs_f64() * 1e6 / admitted.len() as f64,
    );
    if std::env::var_os("VERSA_BENCH_RULES").is_some() {
        let olds: Vec<&Value> = corpus.iter().map(|(_, old)| old).collect();
        per_rule(&schema_json, rule_count, &admitted, &olds);
    }
    // The target is a share of the full write pipeline: `hack/bench-serve.sh cel`.
    println!(
        "share: CEL / (parse+admit) = {:.1} % | CEL / admit alone = {:.1} % | \
         write path (old decoded + parse + admit) {:.1} µs, with CEL {:.1} µs per object: CEL adds {:.1} %",
        100.0 * cel.as_secs_f64() / parse_admit.as_secs_f64(),
        100.0 * cel.as_secs_f64() / admit_only.as_secs_f64(),
        with_old.as_secs_f64() * 1e6 / admitted.len() as f64,
        with_cel.as_secs_f64() * 1e6 / admitted.len() as f64,
        100.0 * (with_cel.as_secs_f64() / with_old.as_secs_f64() - 1.0),
    );
}
