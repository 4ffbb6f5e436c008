//! Value validation of a JSON value against a structural schema, with kube-openapi's messages
//! mapped to field errors as kube-apiserver maps them.
//!
//! kube-apiserver validates a custom resource with kube-openapi's `SchemaValidator` and turns
//! the result into field errors (`kubeOpenAPIResultToFieldErrors`). This module reproduces both
//! steps in one walk: every keyword, every message template, the bad value each error carries,
//! the path naming (`spec.list[0]`, `spec.map.key`) and the order in which errors come out.
//! The order follows kube-openapi's validator chain for each node — type, `allOf`/`anyOf`/
//! `oneOf`/`not`, string, format, number, array, enum, object — and, inside an object,
//! `additionalProperties`, then `properties`, then `required`. Where Go iterates a map (and so
//! has no stable order) we go by sorted key.
//!
//! `anyOf` and `oneOf` report the errors of the branch kube-openapi considers "closest", which it
//! picks by a count of the checks that ran and passed (`Result.MatchCount`). The count is
//! reproduced exactly (see [`Walker::value`], in `walker.rs`) because it decides which errors users see.
//!
//! Performance: the walk borrows the value and the schema; paths are a linked list of stack
//! frames rendered only when an error is reported, so a valid object costs no allocation.
//! Patterns are compiled when the schema is lowered, never here.
//!
//! Known deliberate deviations from Go are listed at the functions that carry them
//! (integer `multipleOf` with a factor below one; nothing else observable).

mod go;
mod keywords;
mod node;
mod walker;

use std::collections::HashSet;

use serde_json::Value;

use crate::field::{At, Error, ErrorList, ErrorType, Path};
use crate::structural::{AdditionalProperties, Structural, Type, ValueValidation};
use go::{Kind, Numeric, kind};
use keywords::Keywords;
use walker::Walker;

/// Validates `value` (a whole object, paths from the root) against `schema`.
pub fn validate(schema: &Structural, value: &Value) -> ErrorList {
    validate_at(schema, value, &Path::none())
}

/// Validates `value` found at `path` against `schema`.
///
/// `path` plays the part of the `fldPath` argument of Kubernetes' `ValidateCustomResource`:
/// field errors are reported under it, and errors that kube-openapi does not attach to a field
/// (the `allOf`/`anyOf`/`oneOf`/`not` summaries) are reported *at* it.
pub fn validate_at(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let walker = Walker { keywords: Keywords { root: path } };
    let mut out = Vec::new();
    walker.value(schema, value, &At::ROOT, &mut out);
    dedup(&mut out);
    ErrorList(out)
}

/// The value checks of single structural nodes, for a walk that visits items and properties
/// itself (the write path's single walk, [`crate::walk`]). Paths are from the root. The errors
/// are [`validate`]'s, in its order, when the walk brackets the errors of an array's or
/// object's children between [`NodeChecks::before_children`] and
/// [`NodeChecks::after_children`] (dropping them if the former says so), validates every other
/// value with [`NodeChecks::value`], and finally removes duplicates with [`dedup`].
pub(crate) struct NodeChecks<'p> {
    walker: Walker<'p>,
}

impl<'p> NodeChecks<'p> {
    pub(crate) fn new(root: &'p Path) -> NodeChecks<'p> {
        NodeChecks { walker: Walker { keywords: Keywords { root } } }
    }

    /// Everything about `v` at `at`, children included.
    pub(crate) fn value(&self, node: &Structural, v: &Value, at: &At<'_>, out: &mut Vec<Error>) {
        if !matches!(v, Value::Object(_) | Value::Array(_)) && passes_type(node, v) {
            // A string, number or boolean of the declared type: what is left of kube-openapi's
            // checks are the string or number keywords, unless other keywords apply.
            let Some(vv) = node.vv() else {
                // No keywords: of the number validator only its range check is left.
                if let k @ (Kind::Int(_) | Kind::Float(_)) = kind(v) {
                    self.walker.keywords.check_range(Numeric::of(node), k, at, out);
                }
                return;
            };
            if vv.is_plain() {
                match kind(v) {
                    Kind::Str(s) => self.walker.keywords.check_string(vv, s, at, out),
                    k @ (Kind::Int(_) | Kind::Float(_)) => {
                        self.walker.keywords.check_number(Numeric::of(node), vv, k, at, out)
                    }
                    _ => {}
                }
                return;
            }
            if !vv.has_junctors() && self.scalar_with_format_or_enum(node, vv, v, at, out) {
                return;
            }
        }
        self.walker.value(node, v, at, out);
    }

    /// The checks of a string, number or boolean that passes its type check, when `format` or
    /// `enum` is set but no junctor: the string (and format) or number keywords, then `enum`.
    /// Returns `false`, having checked nothing, for a format on a number or boolean (it changes
    /// the type check; the full path handles it).
    #[inline(never)]
    fn scalar_with_format_or_enum(
        &self,
        node: &Structural,
        vv: &ValueValidation,
        v: &Value,
        at: &At<'_>,
        out: &mut Vec<Error>,
    ) -> bool {
        let format = vv.effective_format();
        match kind(v) {
            Kind::Str(s) => {
                self.walker.keywords.check_string(vv, s, at, out);
                if let Some(f) = vv.format_kind
                    && !f.matches(s)
                {
                    self.walker.keywords.type_error(out, &at.openapi_name(), &vv.format, s);
                }
            }
            k @ (Kind::Int(_) | Kind::Float(_)) if format.is_empty() => {
                self.walker.keywords.check_number(Numeric::of(node), vv, k, at, out)
            }
            Kind::Bool if format.is_empty() => {}
            _ => return false,
        }
        self.walker.keywords.check_enum(vv, v, at, out);
        true
    }

    /// The checks of an array or object that come before its children's errors. Returns
    /// whether the children's errors count (not after a property count violation).
    pub(crate) fn before_children(&self, node: &Structural, v: &Value, at: &At<'_>, out: &mut Vec<Error>) -> bool {
        if passes_type(node, v) && node.vv().is_none_or(ValueValidation::is_plain) {
            // Of the checks before the children, only the object validator's own are left.
            if let Value::Object(map) = v {
                if let Some(vv) = node.vv()
                    && (vv.min_properties.is_some() || vv.max_properties.is_some())
                    && !self.walker.keywords.check_property_count(vv, map, at, out)
                {
                    return false;
                }
                if let Some(AdditionalProperties::Bool(false)) = node.additional_properties {
                    self.walker.keywords.check_forbidden_properties(node, map, at, out);
                }
            }
            return true;
        }
        self.walker.before_children(node, v, kind(v), at, out).1
    }

    /// The checks of an array or object that come after its children's errors; `descended` is
    /// what [`NodeChecks::before_children`] returned.
    pub(crate) fn after_children(
        &self,
        node: &Structural,
        v: &Value,
        descended: bool,
        at: &At<'_>,
        out: &mut Vec<Error>,
    ) {
        let Some(vv) = node.vv() else { return };
        match v {
            // Only `required` follows an object's children.
            Value::Object(map) => {
                if descended {
                    for req in &vv.required {
                        if !map.contains_key(req) {
                            self.walker.keywords.missing(req, at, out);
                        }
                    }
                }
            }
            _ => {
                self.walker.after_children(node, v, kind(v), descended, at, out);
            }
        }
    }
}

/// Whether `v`, not `null`, certainly passes the type check of `node` — the only check left
/// when the node has no value validations (and, for an object, does not forbid other keys):
/// [`Walker::value`] would report nothing. `false` means "run the full checks", not "invalid".
#[inline]
fn passes_type(node: &Structural, v: &Value) -> bool {
    if node.int_or_string {
        return match v {
            Value::String(_) => true,
            Value::Number(n) => n.is_i64(),
            _ => false,
        };
    }
    match (node.type_, v) {
        (_, Value::Null) => false,
        (Type::None, _) => true,
        (Type::Object, Value::Object(_))
        | (Type::Array, Value::Array(_))
        | (Type::String, Value::String(_))
        | (Type::Boolean, Value::Bool(_))
        | (Type::Number, Value::Number(_)) => true,
        (Type::Integer, Value::Number(n)) => n.is_i64(),
        _ => false,
    }
}

/// Whether `err` keeps kube-apiserver from running the CEL rules (`x-kubernetes-validations`):
/// a type, required, enum, length or size violation means the object does not have the shape
/// the rules were written for (customresource `strategy.go`, `hasBlockingErr`).
pub fn is_blocking(err: &Error) -> bool {
    matches!(
        err.type_,
        ErrorType::NotSupported
            | ErrorType::Required
            | ErrorType::TooLong
            | ErrorType::TooMany
            | ErrorType::TypeInvalid
    )
}

/// Whether any error in `errs` is [blocking](is_blocking) for CEL.
pub fn has_blocking_error(errs: &ErrorList) -> bool {
    errs.iter().any(is_blocking)
}

/// The error kube-apiserver appends instead of running CEL rules when a blocking error exists:
/// `<nil>: Invalid value: null: some validation rules were not checked because the object was
/// invalid; correct the existing errors to complete validation`.
pub fn cel_skipped_error() -> Error {
    Error::invalid(
        Path::none(),
        Value::Null,
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

/// Drops repeated errors, keeping the first: kube-openapi's `Result.AddErrors` keeps messages
/// unique, which matters when `allOf` branches report the same failure.
pub(crate) fn dedup(errs: &mut Vec<Error>) {
    if errs.len() < 2 {
        return;
    }
    let mut seen = HashSet::new();
    errs.retain(|e| seen.insert(e.to_string()));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, obj: Value) -> Vec<String> {
        let s = Structural::from_json(&schema).unwrap();
        validate(&s, &obj).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn must_match_examples() {
        let schema = json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "required": ["image"], "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                "level": {"type": "string", "enum": ["low", "medium", "high"]},
                "few": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "image": {"type": "string"},
                "field": {"type": "integer"}
            }}}
        });
        let got = check(
            schema,
            json!({"spec": {"replicas": 15, "cronSpec": "* * * *", "level": "x", "few": ["a", "b", "c"], "field": {}}}),
        );
        assert_eq!(
            got,
            vec![
                r"spec.cronSpec: Invalid value: ″* * * *″: spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"
                    .replace('″', "\""),
                "spec.few: Too many: 3: must have at most 2 items".to_owned(),
                r#"spec.field: Invalid value: "object": spec.field in body must be of type integer: "object""#.to_owned(),
                r#"spec.level: Unsupported value: "x": supported values: "low", "medium", "high""#.to_owned(),
                "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10".to_owned(),
                "spec.image: Required value".to_owned(),
            ]
        );
    }

    #[test]
    fn blocking_errors() {
        let errs = ErrorList(vec![Error::required(Path::new("a"), "")]);
        assert!(has_blocking_error(&errs));
        assert!(!has_blocking_error(&ErrorList(vec![Error::invalid(Path::new("a"), 1i64, "x")])));
        assert_eq!(
            cel_skipped_error().to_string(),
            r#"<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
        );
    }
}
