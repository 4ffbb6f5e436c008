//! What a running evaluation is given and charged, below the evaluator and the functions it
//! calls: the error an evaluation fails with ([`EvalError`]), the cost meter with Kubernetes'
//! limits ([`CostTracker`]), an expression's literal patterns compiled with it
//! ([`LiteralPatterns`]) and the context every function call gets (`CallContext`: the meter
//! to charge, the regular expressions, the checked type of the call). The standard library
//! (`stdlib`) and the Kubernetes libraries ([`crate::ext`]) see the evaluation through
//! `CallContext` only, so that they need nothing of [`mod@crate::eval`], which calls them.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use versa_schema::pattern::PatternError;

use crate::ast::{Expr, ExprId, ExprKind, Literal};
use crate::types::Type;

/// The per-call cost limit of a CRD validation rule (`celconfig.PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The cost budget for all rules of one object (`celconfig.RuntimeCELCostBudget`).
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;

/// Why an evaluation failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// A CEL runtime error (`no such key: x`, `division by zero`, ...).
    #[error("{0}")]
    Runtime(Arc<str>),
    /// No overload of `function` accepts the arguments' runtime types.
    #[error("no such overload")]
    NoSuchOverload { function: String },
    /// The call's cost exceeded the per-call limit.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostLimitExceeded,
    /// The call's cost exceeded what is left of the per-object budget.
    #[error("validation failed due to running out of cost budget, no further validation rules will be run")]
    BudgetExceeded,
}

impl EvalError {
    pub fn new(msg: impl Into<String>) -> EvalError {
        EvalError::Runtime(msg.into().into())
    }

    /// Cancellations stop the evaluation; no operator absorbs them.
    pub fn is_cancellation(&self) -> bool {
        matches!(self, EvalError::CostLimitExceeded | EvalError::BudgetExceeded)
    }
}

pub(crate) fn no_overload(function: &str) -> EvalError {
    EvalError::NoSuchOverload { function: function.to_owned() }
}

/// Runtime cost accounting for one object: the per-call limit, what is left of the per-object
/// budget, and the cost of the last call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostTracker {
    pub(crate) per_call_limit: u64,
    pub(crate) remaining_budget: u64,
    pub(crate) call_cost: u64,
}

impl CostTracker {
    /// A tracker with Kubernetes' CRD limits: [`PER_CALL_LIMIT`] per rule and
    /// `remaining_budget` for the rest of the object.
    pub fn new(remaining_budget: u64) -> CostTracker {
        CostTracker::with_limits(PER_CALL_LIMIT, remaining_budget)
    }

    pub fn with_limits(per_call_limit: u64, remaining_budget: u64) -> CostTracker {
        CostTracker { per_call_limit, remaining_budget, call_cost: 0 }
    }

    /// The cost of the last (or current) evaluation.
    pub fn last_cost(&self) -> u64 {
        self.call_cost
    }

    /// What is left of the per-object budget after the evaluations so far.
    pub fn remaining_budget(&self) -> u64 {
        self.remaining_budget
    }

    pub(crate) fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.call_cost = self.call_cost.saturating_add(cost);
        if self.call_cost > self.per_call_limit {
            return Err(EvalError::CostLimitExceeded);
        }
        if self.call_cost > self.remaining_budget {
            return Err(EvalError::BudgetExceeded);
        }
        Ok(())
    }
}

impl Default for CostTracker {
    fn default() -> Self {
        CostTracker::new(RUNTIME_CEL_COST_BUDGET)
    }
}

/// The regular expressions of an expression's literal patterns (`matches`, `find`, `findAll`
/// with a string literal), compiled once with the expression instead of at every evaluation.
#[derive(Clone, Debug, Default)]
pub struct LiteralPatterns(Arc<HashMap<String, Regex>>);

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
        let mut map = HashMap::new();
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
        LiteralPatterns(Arc::new(map))
    }

    pub(crate) fn get(&self, pattern: &str) -> Option<&Regex> {
        self.0.get(pattern)
    }
}

/// What a function call may use of the evaluation that runs it. The evaluator keeps one for
/// the whole evaluation and sets [`CallContext::call_id`] before each dispatch.
pub(crate) struct CallContext<'e> {
    pub(crate) tracker: &'e mut CostTracker,
    /// The expression's literal patterns, compiled with it.
    patterns: Option<&'e LiteralPatterns>,
    /// The other `matches`, `find` and `findAll` patterns of this evaluation.
    regexes: Option<HashMap<String, Regex>>,
    /// The checker's types by node id, when the expression was checked.
    types: Option<&'e [Type]>,
    /// The node id of the call being dispatched.
    pub(crate) call_id: ExprId,
}

impl<'e> CallContext<'e> {
    pub(crate) fn new(
        tracker: &'e mut CostTracker,
        patterns: Option<&'e LiteralPatterns>,
        types: Option<&'e [Type]>,
    ) -> CallContext<'e> {
        CallContext { tracker, patterns, regexes: None, types, call_id: 0 }
    }

    /// Charges `cost` to the evaluation: a cancellation when it goes over a limit.
    pub(crate) fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.tracker.charge(cost)
    }

    /// The compiled form of `pattern`: the expression's own when it is a literal, else compiled
    /// once per evaluation.
    pub(crate) fn regex(&mut self, pattern: &str) -> Result<&Regex, PatternError> {
        if let Some(re) = self.patterns.and_then(|p| p.get(pattern)) {
            return Ok(re);
        }
        let regexes = self.regexes.get_or_insert_with(HashMap::new);
        if !regexes.contains_key(pattern) {
            let re = versa_schema::pattern::compile(pattern)?;
            return Ok(regexes.entry(pattern.to_owned()).or_insert(re));
        }
        // Present: checked just above (the key is copied only when a pattern is first compiled).
        Ok(&regexes[pattern])
    }

    /// The checked type of the call being dispatched (`list(int).sum()` of an empty list is
    /// `0`, of a `list(double)` `0.0`), when the expression was checked.
    pub(crate) fn call_result_type(&self) -> Option<&'e Type> {
        self.types.and_then(|t| t.get(self.call_id as usize))
    }
}
