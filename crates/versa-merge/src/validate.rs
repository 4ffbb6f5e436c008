//! Whether an applied configuration can be merged at all: structured-merge-diff's validation of
//! a typed value, which kube-apiserver runs on every apply request before merging.
//!
//! It refuses fields the schema does not declare (`.spec.foo: field not declared in schema`),
//! values of the wrong shape, set and map list items that cannot be named, and items named twice
//! (`duplicate entries for key [name="a"]`; the live object may hold duplicates, an applied
//! configuration may not). It does not repeat the server's value validation (formats, ranges,
//! CEL): the merged object goes through that afterwards. Hand-written to keep kube's messages;
//! recursion follows the object's nesting (bounded at 128 by the server's decoder).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use crate::path::{FieldPath, PathElement};
use crate::schema::{Atom, ListRel, ScalarKind, Ty, atom, item_element};
use crate::value::write_display;

/// One reason a value does not fit its schema, at a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// The path, printed as structured-merge-diff prints it (`.spec.ports[port=80]`).
    pub path: String,
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() { f.write_str(&self.message) } else { write!(f, "{}: {}", self.path, self.message) }
    }
}

/// All the reasons, printed as structured-merge-diff prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                f.write_str("errors:")?;
                for e in many {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
        }
    }
}

/// Validates `v` against `ty`. `allow_duplicates` is kube's option for live objects.
pub(crate) fn validate(ty: Ty<'_>, v: &Value, allow_duplicates: bool) -> Result<(), ValidationErrors> {
    let mut errs = Vec::new();
    walk(ty, v, &mut Vec::new(), allow_duplicates, &mut errs);
    if errs.is_empty() { Ok(()) } else { Err(ValidationErrors(errs)) }
}

fn error(path: &[PathElement], message: String, errs: &mut Vec<ValidationError>) {
    errs.push(ValidationError { path: FieldPath(path.to_vec()).to_string(), message });
}

fn display(v: &Value) -> String {
    let mut s = String::new();
    write_display(v, &mut s);
    s
}

/// The name Go's `%T` gives a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn walk(ty: Ty<'_>, v: &Value, path: &mut Vec<PathElement>, dups: bool, errs: &mut Vec<ValidationError>) {
    match atom(ty, Some(v)) {
        Atom::Scalar(kind) => scalar(kind, v, path, errs),
        Atom::None => error(path, "schema error: invalid atom: inlined".into(), errs),
        Atom::List(l) => {
            let items = match v {
                Value::Null => return,
                Value::Array(items) => items,
                other => return error(path, format!("expected list, got {}", display(other)), errs),
            };
            let mut observed = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = if matches!(l.rel, ListRel::Atomic) {
                    PathElement::Index(i)
                } else {
                    match item_element(&l, item) {
                        Ok(pe) => pe,
                        Err(e) => return error(path, format!("element {i}: {e}"), errs),
                    }
                };
                if !matches!(l.rel, ListRel::Atomic) && !observed.insert(pe.clone()) && !dups {
                    error(path, format!("duplicate entries for key {pe}"), errs);
                }
                path.push(pe);
                walk(l.elem, item, path, dups, errs);
                path.pop();
            }
        }
        Atom::Map(m) => {
            let o = match v {
                Value::Null => return,
                Value::Object(o) => o,
                other => return error(path, format!("expected map, got {}", display(other)), errs),
            };
            for (k, item) in o {
                let (t, declared) = m.field(k);
                path.push(PathElement::Field(k.clone()));
                if !declared && matches!(t, Ty::None) {
                    // structured-merge-diff stops at the first undeclared field of a map.
                    error(path, "field not declared in schema".into(), errs);
                    path.pop();
                    return;
                }
                walk(t, item, path, dups, errs);
                path.pop();
            }
        }
    }
}

fn scalar(kind: ScalarKind, v: &Value, path: &[PathElement], errs: &mut Vec<ValidationError>) {
    let ok = matches!(
        (kind, v),
        (_, Value::Null)
            | (ScalarKind::Numeric, Value::Number(_))
            | (ScalarKind::String, Value::String(_))
            | (ScalarKind::Boolean, Value::Bool(_))
            | (ScalarKind::Untyped, Value::Number(_) | Value::String(_) | Value::Bool(_))
    );
    if ok {
        return;
    }
    let message = match kind {
        ScalarKind::Numeric => format!("expected numeric (int or float), got {}", go_type(v)),
        ScalarKind::String => format!("expected string, got {}", display(v)),
        ScalarKind::Boolean => format!("expected boolean, got {}", display(v)),
        ScalarKind::Untyped => format!("expected any scalar, got {}", display(v)),
    };
    error(path, message, errs);
}
