//! The CEL strategy: declarative conversion in process, with the rules of
//! `spec.conversion.cel` compiled once per definition change
//! ([`versa_apiextensions::cel_conversion`]).
//!
//! An object at version `from` is converted to `to` by the rules of the (from, to) pair: every
//! rule's expression is evaluated on the object as it is (`self`), and only then are the
//! results written — so no rule sees another's result. A rule's value replaces its
//! destination field; no value (`optional.none()`, or `null`) removes it. Fields no rule names
//! are carried over unchanged, `metadata` is never touched by rules, `apiVersion` is set here.
//! Between versions with no rules in a direction, through the storage version when it has
//! rules from `from` or to `to` (`from → storage → to`, the intermediate object pruned with the
//! storage schema as if it had been stored), else as `None`: only `apiVersion` changes. The
//! caller then prunes and coerces with the target schema, as for every strategy.
//!
//! Evaluation is bounded as validation rules are: each expression by the per-call limit, each
//! object's conversion by the per-object budget ([`versa_cel::PER_CALL_LIMIT`],
//! [`versa_cel::RUNTIME_CEL_COST_BUDGET`]). A failure is an error naming the rule and the
//! object's group, version and kind (kube-style, as the webhook's: the API answers 500 and
//! nothing is written).

use serde_json::{Map, Value};
use versa_apiextensions::cel_conversion::{CompiledConversions, CompiledPair};
use versa_cel::{Activation, CostTracker, RUNTIME_CEL_COST_BUDGET, eval};

use crate::gv::gvk_string;

/// A definition's CEL rules, ready to run.
#[derive(Debug)]
pub(crate) struct CelConverter {
    pub(crate) rules: CompiledConversions,
    /// The storage version, through which versions without direct rules are converted.
    pub(crate) storage: String,
}

/// One step of a conversion: by rules, or by `apiVersion` alone.
pub(crate) enum Hop<'a> {
    Rules(&'a CompiledPair),
    None,
}

impl CelConverter {
    /// The steps from `from` to `to`: the direct rules; else through the storage version when
    /// either half has rules; else none (as `None`).
    pub(crate) fn route<'a>(&'a self, from: &str, to: &str) -> Vec<(Hop<'a>, String)> {
        if let Some(pair) = self.rules.pair(from, to) {
            return vec![(Hop::Rules(pair), to.to_owned())];
        }
        let via = self.storage.as_str();
        if from != via && to != via {
            let first = self.rules.pair(from, via);
            let second = self.rules.pair(via, to);
            if first.is_some() || second.is_some() {
                let hop = |p: Option<&'a CompiledPair>| p.map_or(Hop::None, Hop::Rules);
                return vec![(hop(first), via.to_owned()), (hop(second), to.to_owned())];
            }
        }
        vec![(Hop::None, to.to_owned())]
    }

    /// Applies the rules of `pair` (from the version `obj` is at) to `obj`; `desired` is the
    /// destination's `apiVersion`. On error `obj` is unchanged.
    pub(crate) fn apply(&self, pair: &CompiledPair, obj: &mut Value, desired: &str) -> Result<(), String> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let from = api_version.rsplit('/').next().unwrap_or("");
        let failed = |what: String| {
            let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
            format!("CEL conversion for {} failed: {what}", gvk_string(api_version, kind))
        };
        let Some(self_type) = self.rules.self_type(from) else {
            return Err(failed(format!("no schema for version {from}")));
        };
        let mut tracker = CostTracker::new(RUNTIME_CEL_COST_BUDGET);
        let mut results = Vec::with_capacity(pair.fields.len());
        for field in &pair.fields {
            let rule = || {
                format!(
                    "spec.conversion.cel.conversions[{}].fields[{}] (path {}, expression {:?})",
                    pair.index, field.index, field.path, field.expression.source
                )
            };
            let activation =
                Activation::for_rule(obj, None, self_type, false).map_err(|e| failed(format!("{}: {e}", rule())))?;
            let value = eval(&field.expression, &activation, &mut tracker)
                .and_then(|v| versa_cel::json::to_json(&v))
                .map_err(|e| failed(format!("{}: {e}", rule())))?;
            results.push((field, value));
        }
        for (field, value) in results {
            set_path(obj, &field.steps, value.filter(|v| !v.is_null()));
        }
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".to_owned(), Value::String(desired.to_owned()));
        }
        Ok(())
    }
}

/// Sets the field at `steps` to `value`, making the objects on the way; `None` removes it.
fn set_path(obj: &mut Value, steps: &[String], value: Option<Value>) {
    let Some((last, parents)) = steps.split_last() else { return };
    let mut node = obj;
    for step in parents {
        let Some(map) = node.as_object_mut() else { return };
        if value.is_none() && !map.get(step).is_some_and(Value::is_object) {
            // Nothing to remove below a field that is not there.
            return;
        }
        let child = map.entry(step.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !child.is_object() {
            *child = Value::Object(Map::new());
        }
        node = child;
    }
    let Some(map) = node.as_object_mut() else { return };
    match value {
        Some(v) => {
            map.insert(last.clone(), v);
        }
        None => {
            map.remove(last);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_path_makes_and_removes() {
        let steps = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        let mut obj = json!({"spec": {"a": 1}});
        set_path(&mut obj, &steps("spec.b.c"), Some(json!(2)));
        assert_eq!(obj, json!({"spec": {"a": 1, "b": {"c": 2}}}));
        set_path(&mut obj, &steps("spec.a"), None);
        assert_eq!(obj, json!({"spec": {"b": {"c": 2}}}));
        set_path(&mut obj, &steps("status.x"), None);
        assert_eq!(obj, json!({"spec": {"b": {"c": 2}}}), "removing below a missing field adds nothing");
        set_path(&mut obj, &steps("spec.b"), Some(json!("x")));
        assert_eq!(obj, json!({"spec": {"b": "x"}}));
    }
}
