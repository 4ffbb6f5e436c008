//! Which fields changed between two versions of an object: structured-merge-diff's `Compare`,
//! the basis of ownership (what an update takes, what conflicts with an apply, what is released
//! when removed).
//!
//! Leaves (scalars, atomic lists and maps, and lists or maps empty on both sides) are added,
//! removed or modified as wholes; a granular node that appears or disappears is itself added or
//! removed along with everything below it. List items are matched by key or value, not by
//! position; items duplicated in a list are compared as one atomic group. Hand-written to
//! follow kube's rules exactly; recursion follows the objects' nesting (bounded at 128 by the
//! server's decoder).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::path::PathElement;
use crate::schema::{Atom, ListTy, MapTy, Ty, atom, item_element};
use crate::set::FieldSet;
use crate::validate::{ValidationError, ValidationErrors};
use crate::value::equals;

/// The fields that differ between two objects. No field is in more than one set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Fields present before, absent after.
    pub removed: FieldSet,
    /// Fields present on both sides with different values.
    pub modified: FieldSet,
    /// Fields absent before, present after.
    pub added: FieldSet,
}

impl Comparison {
    /// Drops `fields` and everything below them from all three sets (kube's reset fields).
    pub fn exclude(&mut self, fields: &FieldSet) {
        self.removed = self.removed.recursive_difference(fields);
        self.modified = self.modified.recursive_difference(fields);
        self.added = self.added.recursive_difference(fields);
    }
}

/// Compares `lhs` (before) with `rhs` (after).
pub(crate) fn compare(ty: Ty<'_>, lhs: &Value, rhs: &Value) -> Result<Comparison, ValidationErrors> {
    let mut w = Walker { cmp: Comparison::default(), errs: Vec::new(), path: Vec::new() };
    w.node(ty, Some(lhs), Some(rhs));
    if w.errs.is_empty() { Ok(w.cmp) } else { Err(ValidationErrors(w.errs)) }
}

struct Walker {
    cmp: Comparison,
    errs: Vec<ValidationError>,
    path: Vec<PathElement>,
}

impl Walker {
    fn node(&mut self, ty: Ty<'_>, lhs: Option<&Value>, rhs: Option<&Value>) {
        let al = atom(ty, lhs);
        let ar = atom(ty, rhs);
        let leaf = match (lhs, rhs) {
            (_, None) => self.atom(al, lhs, rhs),
            (None, _) => self.atom(ar, lhs, rhs),
            _ if al.same_kind(&ar) => self.atom(ar, lhs, rhs),
            _ => {
                // The value changed shape (an untyped field went from a map to a scalar, say):
                // walk the old shape, then the new one, as structured-merge-diff does.
                self.atom(al, lhs, rhs);
                self.atom(ar, lhs, rhs)
            }
        };
        if !leaf {
            if lhs.is_none() {
                self.cmp.added.insert(&self.path);
            } else if rhs.is_none() {
                self.cmp.removed.insert(&self.path);
            }
        }
    }

    /// Walks one shape; true when the node was treated as a leaf.
    fn atom(&mut self, a: Atom<'_>, lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
        match a {
            Atom::Scalar(_) | Atom::None => self.leaf(lhs, rhs),
            Atom::List(l) => {
                let ll = lhs.and_then(Value::as_array);
                let rl = rhs.and_then(Value::as_array);
                let empty = ll.is_none_or(|l| l.is_empty()) && rl.is_none_or(|l| l.is_empty());
                if matches!(l.rel, crate::schema::ListRel::Atomic) || empty {
                    return self.leaf(lhs, rhs);
                }
                self.list_items(&l, ll.map_or(&[][..], Vec::as_slice), rl.map_or(&[][..], Vec::as_slice));
                false
            }
            Atom::Map(m) => {
                let lm = lhs.and_then(Value::as_object);
                let rm = rhs.and_then(Value::as_object);
                let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
                if m.atomic || empty {
                    return self.leaf(lhs, rhs);
                }
                self.map_items(&m, lm, rm);
                false
            }
        }
    }

    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
        match (lhs, rhs) {
            (None, _) => self.cmp.added.insert(&self.path),
            (_, None) => self.cmp.removed.insert(&self.path),
            (Some(l), Some(r)) => {
                if !equals(l, r) {
                    self.cmp.modified.insert(&self.path);
                }
            }
        }
        true
    }

    fn map_items(&mut self, m: &MapTy<'_>, lhs: Option<&Map<String, Value>>, rhs: Option<&Map<String, Value>>) {
        let mut keys: Vec<&String> = lhs.into_iter().chain(rhs).flat_map(|m| m.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let (t, _) = m.field(k);
            self.path.push(PathElement::Field(k.clone()));
            self.node(t, lhs.and_then(|m| m.get(k)), rhs.and_then(|m| m.get(k)));
            self.path.pop();
        }
    }

    fn index<'v>(
        &mut self,
        l: &ListTy<'_>,
        items: &'v [Value],
        order: &mut Vec<PathElement>,
    ) -> BTreeMap<PathElement, Vec<&'v Value>> {
        let mut by_pe: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            match item_element(l, item) {
                Ok(pe) => match by_pe.get_mut(&pe) {
                    Some(v) => v.push(item),
                    None => {
                        order.push(pe.clone());
                        by_pe.insert(pe, vec![item]);
                    }
                },
                Err(e) => self.errs.push(ValidationError {
                    path: crate::path::FieldPath(self.path.clone()).to_string(),
                    message: format!("element {i}: {e}"),
                }),
            }
        }
        by_pe
    }

    fn list_items(&mut self, l: &ListTy<'_>, lhs: &[Value], rhs: &[Value]) {
        let mut order = Vec::new();
        let lv = self.index(l, lhs, &mut order);
        let mut rorder = Vec::new();
        let rv = self.index(l, rhs, &mut rorder);
        order.extend(rorder.into_iter().filter(|pe| !lv.contains_key(pe)));
        for pe in order {
            let ls = lv.get(&pe).map_or(&[][..], Vec::as_slice);
            let rs = rv.get(&pe).map_or(&[][..], Vec::as_slice);
            self.path.push(pe);
            match (ls.len(), rs.len()) {
                (0..=1, 0..=1) => self.node(l.elem, ls.first().copied(), rs.first().copied()),
                (2.., 2..) => {
                    if ls.len() != rs.len() || ls.iter().zip(rs).any(|(a, b)| !equals(a, b)) {
                        self.cmp.modified.insert(&self.path);
                    }
                }
                (2.., _) => {
                    if let Some(r) = rs.first() {
                        self.node(l.elem, None, Some(r));
                    }
                    self.cmp.removed.insert(&self.path);
                }
                (_, _) => {
                    if let Some(l0) = ls.first() {
                        self.node(l.elem, Some(l0), None);
                    }
                    self.cmp.added.insert(&self.path);
                }
            }
            self.path.pop();
        }
    }
}
