//! versa-cel: CEL for `x-kubernetes-validations`.
//!
//! A rule is compiled once, when its definition is written: [`compile_rule`] parses it, type
//! checks it against the CEL type of the schema node it sits on ([`DeclType::from_structural`])
//! and returns a [`CompiledRule`], or the error Kubernetes would report for the definition
//! (`compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'...`,
//! `cel expression must evaluate to a bool`). [`compile_message_expression`] does the same for
//! `messageExpression`, which must be a string. No request ever parses or checks anything.
//!
//! # Why our own parser
//!
//! The `cel` crate (0.15) parses CEL (through an ANTLR runtime, or a Pratt parser behind a
//! feature) and interprets it, but it has no type checker and no cost model, and both are what
//! Kubernetes' behaviour is made of: compile errors at definition time, the static cost
//! estimate, the runtime cost meter. Both need an AST we own, with node ids and source
//! positions, shaped like cel-go's so that cel-go's checker and estimator can be followed node
//! for node. Its AST is also its public API, which broke in every minor release of 2026. The
//! CEL grammar is small: the hand-written recursive-descent parser in [`parser`] is a few
//! hundred lines, has exact CEL precedence, every literal form and escape, the macros and the
//! optional syntax, bounded recursion with cel-go's limits, and positions for cel-go's
//! `<input>:line:column` messages. It costs no dependency and no build time.
//!
//! # Modules
//!
//! - `lexer` (private) and [`parser`]: source → [`ast::Expr`], macros expanded.
//! - [`types`]: the CEL type model and the OpenAPI → CEL mapping, with property-name escaping.
//! - [`check`]: the type checker (cel-go's unification-based algorithm and standard overloads).
//! - [`cost`]: the static cost estimate (cel-go's estimator, Kubernetes' sizes and limits).
//! - [`error`]: errors and their cel-go display.
//! - [`value`]: runtime values, with `self`/`oldSelf` as lazy views of the JSON through their
//!   [`DeclType`] (set/map list equality and `+`); [`time`]: timestamps and durations.
//! - [`mod@eval`]: the evaluator ([`eval()`] with an [`Activation`] and a [`CostTracker`] carrying
//!   Kubernetes' per-call limit and per-object budget); `stdlib` (private): the standard
//!   functions at runtime, each charged its cel-go runtime cost.
//! - [`validator`]: a version's rules compiled once ([`SchemaRules`]) and run on every create
//!   and update, with kube's correlation of `oldSelf`, cost budget, messages and ratcheting.
//!
//! - [`ext`]: the Kubernetes libraries and the cel-go extensions Kubernetes enables (strings,
//!   lists, sets, regex, URLs, IP/CIDR, quantity, semver, named formats), with their checker
//!   declarations, runtime semantics and costs.
//!
//! - [`plan`]: what evaluation works out once per expression (literal values, resolved
//!   functions and variables, the schema field of each selection); `fast` (private): the fast
//!   path of [`eval()`] for the common rules, exact or not taken.
//! - [`json`]: a value written back as JSON, for conversion rules, whose results become fields.
//! - [`field_path`]: `fieldPath` and `selectableFields` paths resolved against a schema;
//!   `zone` (private): IANA time zones from the system's zone database.
//!
//! Backtick-quoted field names (`` self.`a-b` ``) are refused as Kubernetes refuses them: its
//! environment does not enable cel-go's identifier escape syntax. `docs/cel.md` describes all
//! of this for definition authors.

pub mod ast;
mod calendar;
pub mod check;
pub mod cost;
pub mod error;
pub mod eval;
pub mod ext;
mod fast;
pub mod field_path;
pub mod json;
mod lexer;
pub mod opaque;
pub mod parser;
pub mod plan;
pub mod runtime;
mod stdlib;
pub mod time;
pub mod types;
pub mod validator;
pub mod value;
mod zone;

use std::fmt;
use std::sync::Arc;

pub use ast::{Expr, ExprId, ExprKind, Literal, Location, SourceInfo};
pub use check::{Checked, Variable};
pub use cost::{
    CostEstimate, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT, estimate_conversion_cost,
    estimate_cost, max_cardinality,
};
pub use error::{CompileError, CompileErrors, display_errors};
pub use eval::{Activation, LazyFields, eval, eval_with_lazy};
pub use parser::{ParsedExpr, parse};
pub use runtime::{CostTracker, EvalError, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET};
pub use types::{DYN, DeclKind, DeclType, ListType, ObjectType, Type, escape_property_name, unescape_property_name};
pub use validator::{Outcome, SchemaRules};
pub use value::Value;

/// The Kubernetes version whose CEL environment versa-cel implements: kube-apiserver's base
/// environment (`k8s.io/apiserver/pkg/cel/environment`) at this compatibility version, with its
/// libraries at the versions it enables (cel-go strings 2, lists 3, Kubernetes semver 1, ...)
/// and its string formats. It is the only one: versa has no flag to choose another, since
/// 1.36's kube-apiserver itself evaluates stored rules in this environment (its `NewExpressions`
/// compatibility version, 1.35, enables the same libraries). `docs/cel.md` refers here;
/// `tests/data/environment_1_36.yaml` holds kube's answers for every entry.
pub const COMPATIBILITY_VERSION: &str = "1.36";

/// The variable a rule's value is bound to.
pub const SELF_VAR: &str = "self";
/// The variable a transition rule's old value is bound to.
pub const OLD_SELF_VAR: &str = "oldSelf";

/// How to compile a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// The rule's `optionalOldSelf`: `oldSelf` is `optional_type(T)` instead of `T`.
    pub optional_old_self: bool,
    /// cel-go's literal validators, on in Kubernetes since 1.29: list and map literals whose
    /// elements have different types, `duration`/`timestamp` calls on a literal that does not
    /// convert, and `matches` on a literal that is not a regular expression are compile errors.
    pub validate_literals: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { optional_old_self: false, validate_literals: true }
    }
}

/// A parsed and checked expression.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledExpression {
    /// The source text.
    pub source: String,
    /// The tree with macros expanded, and node positions.
    pub ast: ParsedExpr,
    /// The checker's output: the type of every node and the result type.
    pub checked: Checked,
    /// The type of the whole expression.
    pub result_type: Type,
    /// The expression references `oldSelf` (which makes a rule a transition rule).
    pub uses_old_self: bool,
    /// Its literal regular expressions, compiled.
    pub patterns: runtime::LiteralPatterns,
    /// What evaluation can work out before it sees the input (literal values, resolved
    /// functions).
    pub plan: plan::Plan,
    /// The fast form of a `bool` expression, when every node of it is covered (`fast.rs`).
    pub(crate) fast: Option<fast::Program>,
}

/// A compiled validation rule.
pub type CompiledRule = CompiledExpression;

/// Why a rule does not compile, with Kubernetes' detail text as its `Display`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Parse or check errors: `compilation failed: ERROR: <input>:1:6: ...`.
    #[error("compilation failed: {0}")]
    Compile(CompileErrors),
    /// The rule checks but is not a `bool`.
    #[error("cel expression must evaluate to a bool")]
    NotBool,
    /// A literal `find`/`findAll` pattern does not compile (Kubernetes compiles them when it
    /// instantiates the program).
    #[error("program instantiation failed: {0}")]
    Program(String),
}

/// Why a `messageExpression` does not compile, with Kubernetes' detail text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageExpressionError {
    #[error("messageExpression compilation failed: {0}")]
    Compile(CompileErrors),
    #[error("messageExpression must evaluate to a string")]
    NotString,
    #[error("program instantiation failed: {0}")]
    Program(String),
}

/// Parses and checks `source` with `self` (and `oldSelf`) of type `self_type`.
pub fn compile_expression(
    source: &str,
    self_type: &DeclType,
    opts: &CompileOptions,
) -> Result<CompiledExpression, CompileErrors> {
    let fail = |errors: Vec<CompileError>| CompileErrors { source: source.to_owned(), errors };
    let ast = parse(source).map_err(fail)?;
    let self_cel = self_type.cel_type();
    let old_self = if opts.optional_old_self { Type::optional(self_cel.clone()) } else { self_cel.clone() };
    let vars = [
        Variable { name: SELF_VAR.to_owned(), ty: self_cel },
        Variable { name: OLD_SELF_VAR.to_owned(), ty: old_self },
    ];
    let checked = check::check(&ast.expr, &ast.source_info, source, &vars).map_err(fail)?;
    let errors = validator_errors(&ast, &checked, source, opts);
    if !errors.is_empty() {
        return Err(fail(errors));
    }
    let uses_old_self = checked.referenced_idents.iter().any(|n| n == OLD_SELF_VAR);
    let plan = plan::Plan::build(&ast.expr, &[SELF_VAR, OLD_SELF_VAR], Some(&checked.types), &eval::constant_value);
    Ok(CompiledExpression {
        source: source.to_owned(),
        result_type: checked.result_type.clone(),
        patterns: runtime::LiteralPatterns::of(&ast.expr),
        fast: fast::Program::build(&ast.expr, &plan, &checked.result_type, self_type),
        plan,
        ast,
        checked,
        uses_old_self,
    })
}

/// The declarations an expression is compiled against when it is not a rule on a schema node:
/// its variables (Kubernetes admission's `object`, `request`, `params`, `variables`, ...) and
/// the message types its struct literals may construct (`JSONPatch`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Environment {
    pub variables: Vec<Variable>,
    pub struct_types: Vec<Arc<types::ObjectType>>,
    /// Kubernetes' dynamic object types (`Object{spec: Object.spec{...}}`), see
    /// [`check::check_in`].
    pub dynamic_objects: bool,
}

/// Parses and checks `source` in `env`. The caller judges the result type. The expression has
/// no fast path (that is keyed to `self`); its plan resolves `env`'s variables.
pub fn compile_in(source: &str, env: &Environment, opts: &CompileOptions) -> Result<CompiledExpression, CompileErrors> {
    let fail = |errors: Vec<CompileError>| CompileErrors { source: source.to_owned(), errors };
    let ast = parse(source).map_err(fail)?;
    let checked =
        check::check_in(&ast.expr, &ast.source_info, source, &env.variables, &env.struct_types, env.dynamic_objects)
            .map_err(fail)?;
    let errors = validator_errors(&ast, &checked, source, opts);
    if !errors.is_empty() {
        return Err(fail(errors));
    }
    let names: Vec<&str> = env.variables.iter().map(|v| v.name.as_str()).collect();
    let plan = plan::Plan::build(&ast.expr, &names, Some(&checked.types), &eval::constant_value);
    Ok(CompiledExpression {
        source: source.to_owned(),
        result_type: checked.result_type.clone(),
        patterns: runtime::LiteralPatterns::of(&ast.expr),
        fast: None,
        plan,
        ast,
        checked,
        uses_old_self: false,
    })
}

/// Compiles a validation rule: it must check, and be a `bool` (exactly: a `dyn` result is
/// rejected, as in Kubernetes).
pub fn compile_rule(rule: &str, self_type: &DeclType, opts: &CompileOptions) -> Result<CompiledRule, RuleError> {
    let compiled = compile_expression(rule, self_type, opts).map_err(RuleError::Compile)?;
    if compiled.result_type != Type::Bool {
        return Err(RuleError::NotBool);
    }
    if let Some(e) = program_error(&compiled) {
        return Err(RuleError::Program(e));
    }
    Ok(compiled)
}

/// Compiles an expression of any result type on a schema node, as [`compile_rule`] does a
/// rule: parse and check errors, then what fails when Kubernetes instantiates the program.
pub fn compile_program(
    source: &str,
    self_type: &DeclType,
    opts: &CompileOptions,
) -> Result<CompiledExpression, RuleError> {
    let compiled = compile_expression(source, self_type, opts).map_err(RuleError::Compile)?;
    if let Some(e) = program_error(&compiled) {
        return Err(RuleError::Program(e));
    }
    Ok(compiled)
}

/// What fails when cel-go instantiates a checked expression's program with Kubernetes'
/// options: a literal `find`/`findAll` pattern that does not compile, or a type conversion
/// of a constant that fails (cel-go's `OptOptimize` folds `int('x')` then, and the error
/// refuses the program).
fn program_error(compiled: &CompiledExpression) -> Option<String> {
    ext::regex::literal_pattern_error(&compiled.ast.expr).or_else(|| constant_conversion_error(&compiled.ast.expr))
}

/// The first conversion of a constant that fails, as cel-go's planner reports it.
fn constant_conversion_error(expr: &Expr) -> Option<String> {
    let mut error = None;
    expr.walk(&mut |e| {
        if error.is_some() || !plan::is_constant(e) || !matches!(&e.kind, ExprKind::Call { .. }) {
            return;
        }
        if let Err(err) = eval::constant_value(e) {
            error = Some(err.to_string());
        }
    });
    error
}

/// Compiles a `messageExpression`: it must check, and be a `string`.
pub fn compile_message_expression(
    expr: &str,
    self_type: &DeclType,
    opts: &CompileOptions,
) -> Result<CompiledExpression, MessageExpressionError> {
    let compiled = compile_expression(expr, self_type, opts).map_err(MessageExpressionError::Compile)?;
    if compiled.result_type != Type::String {
        return Err(MessageExpressionError::NotString);
    }
    if let Some(e) = program_error(&compiled) {
        return Err(MessageExpressionError::Program(e));
    }
    Ok(compiled)
}

/// The errors of cel-go's AST validators: the string format validator of the strings library
/// (always on), and, with [`CompileOptions::validate_literals`], Kubernetes' literal validators.
fn validator_errors(ast: &ParsedExpr, checked: &Checked, source: &str, opts: &CompileOptions) -> Vec<CompileError> {
    let mut errors = Vec::new();
    if opts.validate_literals {
        errors = format_literal_errors(ast, source);
        errors.extend(homogeneous_literal_errors(ast, checked, source));
    }
    let ty = |id: ExprId| checked.types.get(id as usize).cloned().unwrap_or(Type::Dyn);
    ast.expr.walk(&mut |e| {
        if let Some((id, message)) = ext::strings::check_literal_format(e, &ty) {
            errors.push(CompileError::new(ast.source_info.location(source, id), message));
        }
    });
    errors
}

/// cel-go's homogeneous aggregate literal validator: within one list literal all elements,
/// and within one map literal all keys and all values, must have the same type.
/// cel-go's format validators (`ValidateDurationLiterals`, `ValidateTimestampLiterals`,
/// `ValidateRegexLiterals`): every call of `duration` or `timestamp` whose first argument is a
/// literal must evaluate, and every call of `matches` whose first argument is a literal string
/// must compile as a regular expression (for `s.matches(re)` that is the pattern; cel-go also
/// looks at the first argument of the global `matches(s, re)`, which is the string). The error
/// is at the literal: `invalid duration argument`.
fn format_literal_errors(ast: &ParsedExpr, source: &str) -> Vec<CompileError> {
    let mut errors = Vec::new();
    ast.expr.walk(&mut |e| {
        let ExprKind::Call { function, args, .. } = &e.kind else { return };
        let Some(arg @ Expr { kind: ExprKind::Literal(literal), .. }) = args.first() else { return };
        let valid = match (function.as_str(), literal) {
            ("duration" | "timestamp", _) => {
                eval::eval_expr(e, &eval::Activation::new(), &mut CostTracker::default()).is_ok()
            }
            ("matches", ast::Literal::String(pattern)) => versa_schema::pattern::compile(pattern).is_ok(),
            _ => return,
        };
        if !valid {
            let loc = ast.source_info.location(source, arg.id);
            errors.push(CompileError::new(loc, format!("invalid {function} argument")));
        }
    });
    errors
}

fn homogeneous_literal_errors(ast: &ParsedExpr, checked: &Checked, source: &str) -> Vec<CompileError> {
    let ty = |id: ExprId| checked.types.get(id as usize).cloned().unwrap_or(Type::Dyn);
    let mut errors = Vec::new();
    let mut report = |id: ExprId, expected: &Type, found: &Type| {
        let loc = ast.source_info.location(source, id);
        errors.push(CompileError::new(loc, format!("expected type '{expected}' but found '{found}'")));
    };
    let unwrap = |t: Type, optional: bool| match (t, optional) {
        (Type::Optional(inner), true) => *inner,
        (t, _) => t,
    };
    // cel-go exempts every literal below a call of `format` (its argument list mixes types).
    ast.expr.walk_pruned(&mut |e| match &e.kind {
        ExprKind::Call { function, .. } if function == "format" => false,
        ExprKind::List { elements, optional_indices } => {
            let mut first: Option<Type> = None;
            for (i, el) in elements.iter().enumerate() {
                let t = unwrap(ty(el.id), optional_indices.contains(&i));
                match &first {
                    None => first = Some(t),
                    Some(f) if !f.is_exact(&t) => {
                        report(el.id, f, &t);
                        break;
                    }
                    Some(_) => {}
                }
            }
            true
        }
        ExprKind::Map { entries } => {
            let (mut fk, mut fv): (Option<Type>, Option<Type>) = (None, None);
            for entry in entries {
                let k = ty(entry.key.id);
                let v = unwrap(ty(entry.value.id), entry.optional);
                // Unlike a list's, every entry of a map that differs from the first is reported.
                match (&fk, &fv) {
                    (Some(f), Some(g)) => {
                        if !f.is_exact(&k) {
                            report(entry.key.id, f, &k);
                        }
                        if !g.is_exact(&v) {
                            report(entry.value.id, g, &v);
                        }
                    }
                    _ => (fk, fv) = (Some(k), Some(v)),
                }
            }
            true
        }
        _ => true,
    });
    errors
}

impl fmt::Display for CompiledExpression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
