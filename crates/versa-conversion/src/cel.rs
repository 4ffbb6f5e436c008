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
use versa_apiextensions::cel_conversion::{CompiledConversions, CompiledField, CompiledPair};
use versa_cel::{Activation, CostTracker, RUNTIME_CEL_COST_BUDGET, eval};

use std::collections::HashMap;

use crate::gv::{GroupVersion, gvk_string};

/// A definition's CEL rules, ready to run.
#[derive(Debug)]
pub(crate) struct CelConverter {
    pub(crate) rules: CompiledConversions,
    /// The storage version, through which versions without direct rules are converted.
    pub(crate) storage: String,
    /// The `apiVersion` of each version of the definition, written once.
    api_versions: HashMap<String, String>,
}

/// One step of a conversion: by rules, or by `apiVersion` alone.
pub(crate) enum Hop<'a> {
    Rules(&'a CompiledPair),
    None,
}

/// One step of a route: how, and to which version (and its `apiVersion`).
pub(crate) struct Step<'a> {
    pub(crate) hop: Hop<'a>,
    pub(crate) version: &'a str,
    pub(crate) api_version: &'a str,
}

/// The steps from one version to another: one, or two through the storage version.
pub(crate) struct Route<'a> {
    first: Step<'a>,
    second: Option<Step<'a>>,
}

impl<'a> Route<'a> {
    pub(crate) fn steps(self) -> impl Iterator<Item = Step<'a>> {
        std::iter::once(self.first).chain(self.second)
    }

    /// The step, when there is only one.
    pub(crate) fn single(self) -> Result<Step<'a>, Route<'a>> {
        match self.second {
            None => Ok(self.first),
            Some(_) => Err(self),
        }
    }
}

/// Why CEL conversion rules did not convert an object, as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CelRuleError {
    /// A version the definition does not have (the converter checks versions first).
    #[error("CEL conversion: {version} is not a version of the definition")]
    UnknownVersion { version: String },
    /// A rule failed on an object: `gvk` is the object's group, version and kind as kube
    /// prints them; `reason` names the rule and why it failed.
    #[error("CEL conversion for {gvk} failed: {reason}")]
    Failed { gvk: String, reason: String },
}

impl CelConverter {
    /// The rules of a definition in `group` with `versions`, stored at `storage`.
    pub(crate) fn new(rules: CompiledConversions, storage: String, group: &str, versions: &[String]) -> CelConverter {
        let api_versions =
            versions.iter().map(|v| (v.clone(), GroupVersion { group, version: v }.to_string())).collect();
        CelConverter { rules, storage, api_versions }
    }

    /// The steps from `from` to `to`: the direct rules; else through the storage version when
    /// either half has rules; else none (as `None`). An error names a version the definition
    /// does not have (the converter checks versions first).
    pub(crate) fn route<'s>(&'s self, from: &str, to: &str) -> Result<Route<'s>, CelRuleError> {
        let step = |hop: Hop<'s>, version: &str| match self.api_versions.get_key_value(version) {
            Some((version, api_version)) => Ok(Step { hop, version, api_version }),
            None => Err(CelRuleError::UnknownVersion { version: version.to_owned() }),
        };
        if let Some(pair) = self.rules.pair(from, to) {
            return Ok(Route { first: step(Hop::Rules(pair), to)?, second: None });
        }
        let via = self.storage.as_str();
        if from != via && to != via {
            let first = self.rules.pair(from, via);
            let second = self.rules.pair(via, to);
            if first.is_some() || second.is_some() {
                let hop = |p: Option<&'s CompiledPair>| p.map_or(Hop::None, Hop::Rules);
                return Ok(Route { first: step(hop(first), via)?, second: Some(step(hop(second), to)?) });
            }
        }
        Ok(Route { first: step(Hop::None, to)?, second: None })
    }

    /// Applies the rules of `pair` (from the version `obj` is at) to `obj`; `desired` is the
    /// destination's `apiVersion`. On error `obj` is unchanged.
    pub(crate) fn apply(&self, pair: &CompiledPair, obj: &mut Value, desired: &str) -> Result<(), CelRuleError> {
        let results = self.evaluate(pair, obj)?;
        write(obj, results, desired);
        Ok(())
    }

    /// What the rules of `pair` make of `obj` (at the version the pair converts from): each
    /// rule with its value, `None` for none (the field is to be removed). Every rule reads
    /// `obj` as it is; nothing is written (see [`write`]).
    pub(crate) fn evaluate<'p>(
        &self,
        pair: &'p CompiledPair,
        obj: &Value,
    ) -> Result<Vec<(&'p CompiledField, Option<Value>)>, CelRuleError> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let from = api_version.rsplit('/').next().unwrap_or("");
        let failed = |reason: String| {
            let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
            CelRuleError::Failed { gvk: gvk_string(api_version, kind), reason }
        };
        let Some(self_type) = self.rules.self_type(from) else {
            return Err(failed(format!("no schema for version {from}")));
        };
        let rule = |field: &CompiledField| {
            format!(
                "spec.conversion.cel.conversions[{}].fields[{}] (path {}, expression {:?})",
                pair.index, field.index, field.path, field.expression.source
            )
        };
        let Some(first) = pair.fields.first() else { return Ok(Vec::new()) };
        // One activation for all the rules: they all read the same object. (Binding `self`
        // fails the same way for every rule; the first is named, as when each bound it.)
        let activation =
            Activation::for_rule(obj, None, self_type, false).map_err(|e| failed(format!("{}: {e}", rule(first))))?;
        let mut tracker = CostTracker::new(RUNTIME_CEL_COST_BUDGET);
        let mut results = Vec::with_capacity(pair.fields.len());
        for field in &pair.fields {
            let value = eval(&field.expression, &activation, &mut tracker)
                .and_then(|v| versa_cel::json::to_json(&v))
                .map_err(|e| failed(format!("{}: {e}", rule(field))))?;
            results.push((field, value));
        }
        Ok(results)
    }
}

/// Writes what [`CelConverter::evaluate`] gave into `obj` — each value at its rule's path, a
/// `null` or no value removing the field — and sets `apiVersion` to `desired`.
pub(crate) fn write(obj: &mut Value, results: Vec<(&CompiledField, Option<Value>)>, desired: &str) {
    for (field, value) in results {
        set_path(obj, &field.steps, value.filter(|v| !v.is_null()));
    }
    crate::set_api_version(obj, desired);
}

/// A copy of the fields of `obj` that [`crate::lossless::body`] copies, for the rules of
/// `pair` to be written into: the fields at the rules' paths are left out, since writing
/// replaces or removes each of them whatever it was (the objects on the way are copied).
pub(crate) fn body_to_write(obj: &Value, pair: &CompiledPair) -> Value {
    let paths: Vec<&[String]> = pair.fields.iter().map(|f| f.steps.as_slice()).collect();
    body_without(obj, &paths)
}

/// [`body_to_write`] for rules writing at `paths`.
fn body_without(obj: &Value, paths: &[&[String]]) -> Value {
    match obj.as_object() {
        Some(map) => Value::Object(copy_without(map, paths, true)),
        None => Value::Null,
    }
}

/// The entries of `map` without what lies at `paths` below it — at the `root` of an object,
/// without `apiVersion`, `kind` and `metadata`.
fn copy_without(map: &Map<String, Value>, paths: &[&[String]], root: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in map.iter().filter(|(k, _)| !root || !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")) {
        let below: Vec<&[String]> = paths.iter().filter(|p| p.first() == Some(k)).map(|p| &p[1..]).collect();
        if below.is_empty() {
            out.insert(k.clone(), v.clone());
        } else if below.iter().any(|p| p.is_empty()) {
            // A rule writes this very field (the paths of a pair do not overlap).
        } else {
            let v = match v {
                Value::Object(inner) => Value::Object(copy_without(inner, &below, false)),
                other => other.clone(),
            };
            out.insert(k.clone(), v);
        }
    }
    out
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
        // The key is copied only when the field is new.
        let child = match map.contains_key(step) {
            true => map.get_mut(step),
            false => Some(map.entry(step.clone()).or_insert_with(|| Value::Object(Map::new()))),
        };
        let Some(child) = child else { return };
        if !child.is_object() {
            *child = Value::Object(Map::new());
        }
        node = child;
    }
    let Some(map) = node.as_object_mut() else { return };
    match value {
        Some(v) => match map.get_mut(last) {
            Some(slot) => *slot = v,
            None => {
                map.insert(last.clone(), v);
            }
        },
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

    /// Writing into [`body_to_write`]'s copy gives what writing into a whole copy of the
    /// body gives.
    #[test]
    fn the_copy_to_write_into_leaves_out_only_what_is_replaced() {
        let obj = json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a", "labels": {"x": "y"}},
            "spec": {"a": 1, "b": {"c": [1, 2], "d": "e"}, "f": "g"}, "status": {"h": true}, "other": "i"});
        let cases: &[&[&str]] = &[
            &["spec.a"],
            &["spec.b.c", "status"],
            &["spec.b.d", "spec.f", "new.x.y"],
            &["spec"],
            &["spec.a.z"],
            &["other.x"],
            &[],
        ];
        for paths in cases {
            let steps: Vec<Vec<String>> = paths.iter().map(|p| p.split('.').map(str::to_owned).collect()).collect();
            for value in [Some(json!({"v": 1})), None] {
                let mut whole = crate::lossless::body(&obj);
                for s in &steps {
                    set_path(&mut whole, s, value.clone());
                }
                let mut copy = copy_leaving_out(&obj, &steps);
                for s in &steps {
                    set_path(&mut copy, s, value.clone());
                }
                assert_eq!(copy, whole, "{paths:?} <- {value:?}");
            }
        }
    }

    fn copy_leaving_out(obj: &Value, steps: &[Vec<String>]) -> Value {
        let paths: Vec<&[String]> = steps.iter().map(Vec::as_slice).collect();
        body_without(obj, &paths)
    }

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
