//! Field paths: how structured merge names one field, list item or set member of an object.
//!
//! A path is a list of elements, each of one of four kinds, exactly those of
//! structured-merge-diff's `fieldpath.PathElement`: a field of a map (`f:name`), an item of an
//! associative list named by its key fields (`k:{"name":"x"}`), a member of a set (`v:"x"`),
//! or an index into an atomic list (`i:0`, which structured merge itself never produces but
//! `managedFields` may carry). Elements are totally ordered as structured-merge-diff orders
//! them — kind first (field < key < value < index), then content — because that order decides
//! how `managedFields` are written and in which order conflicts are listed. Hand-written: the
//! order and the printed form (`.spec.ports[port=80,protocol="TCP"]`) are Kubernetes'.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use crate::value::{compare, write_display};

/// One step of a [`FieldPath`].
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map or struct.
    Field(String),
    /// An item of an associative list (`x-kubernetes-list-type: map`), named by its key
    /// fields sorted by name.
    Key(Vec<(String, Value)>),
    /// A member of a set (`x-kubernetes-list-type: set`).
    Value(Value),
    /// A position in a list.
    Index(usize),
}

impl PathElement {
    fn kind(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// A key element from key fields in any order (they are sorted by name, stably, as
    /// structured-merge-diff sorts them).
    pub fn key(mut fields: Vec<(String, Value)>) -> PathElement {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    /// A field element.
    pub fn field(name: impl Into<String>) -> PathElement {
        PathElement::Field(name.into())
    }
}

fn key_cmp(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.cmp(bn).then_with(|| compare(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => key_cmp(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.kind().cmp(&other.kind()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Printed as structured-merge-diff prints a path element: `.name`, `[k=v,...]`, `[=v]`, `[i]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        match self {
            PathElement::Field(name) => {
                s.push('.');
                s.push_str(name);
            }
            PathElement::Key(fields) => {
                s.push('[');
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(name);
                    s.push('=');
                    write_display(v, &mut s);
                }
                s.push(']');
            }
            PathElement::Value(v) => {
                s.push_str("[=");
                write_display(v, &mut s);
                s.push(']');
            }
            PathElement::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
        f.write_str(&s)
    }
}

/// A path from the root of an object to one of its fields, list items or set members.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldPath(pub Vec<PathElement>);

impl FieldPath {
    /// The path of the given field names (`FieldPath::fields(&["spec", "replicas"])`).
    pub fn fields(names: &[&str]) -> FieldPath {
        FieldPath(names.iter().map(|n| PathElement::field(*n)).collect())
    }

    /// This path with one more element.
    pub fn child(&self, pe: PathElement) -> FieldPath {
        let mut p = self.0.clone();
        p.push(pe);
        FieldPath(p)
    }
}

/// Printed as Kubernetes prints it in conflicts: the elements one after another,
/// `.spec.containers[name="app"].image`.
impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn kinds_order_field_key_value_index() {
        let els = [
            PathElement::field("a"),
            PathElement::field("b"),
            PathElement::key(vec![("name".into(), json!("a"))]),
            PathElement::key(vec![("name".into(), json!("a")), ("port".into(), json!(1))]),
            PathElement::Value(json!(2)),
            PathElement::Value(json!("a")),
            PathElement::Index(2),
            PathElement::Index(10),
        ];
        for w in els.windows(2) {
            assert!(w[0] < w[1], "{} < {}", w[0], w[1]);
        }
    }

    #[test]
    fn printed_as_kubernetes_prints_it() {
        let p = FieldPath(vec![
            PathElement::field("spec"),
            PathElement::field("ports"),
            PathElement::key(vec![("protocol".into(), json!("TCP")), ("port".into(), json!(80))]),
            PathElement::field("name"),
        ]);
        assert_eq!(p.to_string(), r#".spec.ports[port=80,protocol="TCP"].name"#);
        let p = FieldPath(vec![PathElement::field("f"), PathElement::Value(json!("x")), PathElement::Index(3)]);
        assert_eq!(p.to_string(), r#".f[="x"][3]"#);
    }
}
