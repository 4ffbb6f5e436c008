//! Label selectors (`metav1.LabelSelector`) compiled once: apimachinery's
//! `LabelSelectorAsSelector` and `labels.Selector.Matches`.
//!
//! `matchLabels` are `key = value` requirements, `matchExpressions` `In`, `NotIn`, `Exists`,
//! `DoesNotExist`; all must hold. An empty selector matches everything. A selector that does
//! not parse (a bad operator, key or value) is kept as its error, which kube reports when the
//! selector is first needed, worded as apimachinery words it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use versa_schema::Path;
use versa_schema::field::Error as FieldError;

/// Why a label selector does not compile, worded as apimachinery words it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SelectorError {
    /// An operator other than `In`, `NotIn`, `Exists` and `DoesNotExist`.
    #[error("{} is not a valid label selector operator", crate::error::go_quote(.operator))]
    Operator { operator: String },
    /// A requirement's key, its values or their number is invalid: the field errors, printed
    /// as `utilerrors.NewAggregate` prints them (one alone, several as `[a, b]`).
    #[error("{}", aggregate(.0))]
    Requirement(Vec<FieldError>),
}

fn aggregate(errs: &[FieldError]) -> String {
    match errs {
        [one] => one.to_string(),
        _ => format!("[{}]", errs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// A compiled label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Selector {
        Selector { requirements: Vec::new() }
    }

    /// Compiles `s`; `None` (an unset selector, which kube's API defaults to `{}`) matches
    /// everything.
    pub fn compile(s: Option<&LabelSelector>) -> Result<Selector, SelectorError> {
        let Some(s) = s else { return Ok(Selector::everything()) };
        let mut requirements = Vec::new();
        for (k, v) in s.match_labels.iter().flatten() {
            requirements.push(requirement(k, Op::In, std::slice::from_ref(v), true)?);
        }
        for e in s.match_expressions.iter().flatten() {
            let op = match e.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => return Err(SelectorError::Operator { operator: other.to_owned() }),
            };
            requirements.push(requirement(&e.key, op, e.values.as_deref().unwrap_or(&[]), false)?);
        }
        Ok(Selector { requirements })
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches<'l>(&self, labels: impl Iterator<Item = (&'l str, &'l str)> + Clone) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.clone().find(|(k, _)| *k == r.key).map(|(_, v)| v);
            match (r.op, value) {
                (Op::In, Some(v)) => r.values.iter().any(|x| x == v),
                (Op::In, None) => false,
                (Op::NotIn, Some(v)) => !r.values.iter().any(|x| x == v),
                (Op::NotIn, None) => true,
                (Op::Exists, v) => v.is_some(),
                (Op::DoesNotExist, v) => v.is_none(),
            }
        })
    }
}

/// apimachinery's `labels.NewRequirement`: the key, the number of values for the operator and
/// each value are checked; the errors are aggregated as `utilerrors.NewAggregate` prints them.
fn requirement(key: &str, op: Op, values: &[String], equals: bool) -> Result<Requirement, SelectorError> {
    let mut errs: Vec<FieldError> = Vec::new();
    let key_errs = versa_schema::names::is_qualified_name(key);
    if !key_errs.is_empty() {
        errs.push(FieldError::invalid(Path::new("key"), key, key_errs.join("; ")));
    }
    let values_path = Path::new("values");
    let shown = || serde_json::Value::from(values.to_vec());
    match op {
        _ if equals && values.len() != 1 => errs.push(FieldError::invalid(
            values_path.clone(),
            shown(),
            "exact-match compatibility requires one single value",
        )),
        Op::In | Op::NotIn if values.is_empty() => errs.push(FieldError::invalid(
            values_path.clone(),
            shown(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        Op::Exists | Op::DoesNotExist if !values.is_empty() => errs.push(FieldError::invalid(
            values_path.clone(),
            shown(),
            "values set must be empty for exists and does not exist",
        )),
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        let value_errs = versa_schema::names::is_valid_label_value(v);
        if !value_errs.is_empty() {
            errs.push(FieldError::invalid(values_path.index(i), v.as_str(), value_errs.join("; ")));
        }
    }
    if errs.is_empty() {
        Ok(Requirement { key: key.to_owned(), op, values: values.to_vec() })
    } else {
        Err(SelectorError::Requirement(errs))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(v: serde_json::Value) -> Result<Selector, String> {
        let s: LabelSelector = serde_json::from_value(v).map_err(|e| e.to_string())?;
        Selector::compile(Some(&s)).map_err(|e| e.to_string())
    }

    #[test]
    fn matching() {
        let s = sel(json!({"matchLabels": {"a": "1"}, "matchExpressions": [
            {"key": "b", "operator": "NotIn", "values": ["x"]},
            {"key": "c", "operator": "DoesNotExist"}]}))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.matches([("a", "1")].into_iter()));
        assert!(s.matches([("a", "1"), ("b", "y")].into_iter()));
        assert!(!s.matches([("a", "1"), ("b", "x")].into_iter()));
        assert!(!s.matches([("a", "1"), ("c", "")].into_iter()));
        assert!(!s.matches([("a", "2")].into_iter()));
        assert!(sel(json!({})).is_ok_and(|s| s.is_empty()));
    }

    #[test]
    fn errors() {
        assert_eq!(
            sel(json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})).err().as_deref(),
            Some(r#""Foo" is not a valid label selector operator"#)
        );
        assert_eq!(
            sel(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).err().as_deref(),
            Some("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
        );
    }
}
