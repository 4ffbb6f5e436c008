//! Merging an applied configuration into a live object by schema: structured-merge-diff's
//! `Merge` with its keep-the-right-hand-side rule.
//!
//! Leaves (scalars, atomic lists and maps, lists and maps empty on both sides) take the applied
//! value. Granular maps merge key by key. Set and map lists merge item by item: live items keep
//! their places, items only in the configuration are inserted where the configuration puts
//! them relative to the items both share, and shared items follow the configuration's order
//! among themselves. A live list with an item named twice keeps the duplicates unless the
//! configuration names that item, which then replaces them with one merged item. Hand-written
//! because this ordering is kube's and clients see it; recursion follows the objects' nesting
//! (bounded at 128 by the server's decoder).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value};

use crate::path::{FieldPath, PathElement};
use crate::schema::{Atom, ListRel, ListTy, MapTy, Ty, atom, item_element};
use crate::validate::{ValidationError, ValidationErrors};

static NULL: Value = Value::Null;

/// Merges `rhs` (the applied configuration) into `lhs` (the live object).
pub(crate) fn merge(ty: Ty<'_>, lhs: &Value, rhs: &Value) -> Result<Value, ValidationErrors> {
    let mut w = Walker { errs: Vec::new(), path: Vec::new() };
    let out = w.node(ty, Some(lhs), Some(rhs));
    if w.errs.is_empty() { Ok(out.unwrap_or(Value::Null)) } else { Err(ValidationErrors(w.errs)) }
}

struct Walker {
    errs: Vec<ValidationError>,
    path: Vec<PathElement>,
}

impl Walker {
    /// The merged value, or `None` when the node disappears (a granular map or list whose
    /// merge is empty).
    fn node(&mut self, ty: Ty<'_>, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
        let al = atom(ty, lhs);
        let ar = atom(ty, rhs);
        match (lhs, rhs) {
            (_, None) => self.atom(al, lhs, rhs),
            (None, _) => self.atom(ar, lhs, rhs),
            _ if al.same_kind(&ar) => self.atom(ar, lhs, rhs),
            _ => {
                // The value changed shape: structured-merge-diff walks the old shape too (only
                // its errors count), then takes the new one.
                let _ = self.atom(al, lhs, rhs);
                self.atom(ar, lhs, rhs)
            }
        }
    }

    fn atom(&mut self, a: Atom<'_>, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
        let leaf = || rhs.or(lhs).cloned();
        match a {
            Atom::Scalar(_) | Atom::None => leaf(),
            Atom::List(l) => {
                let ll = lhs.and_then(Value::as_array);
                let rl = rhs.and_then(Value::as_array);
                let empty = ll.is_none_or(|l| l.is_empty()) && rl.is_none_or(|l| l.is_empty());
                if matches!(l.rel, ListRel::Atomic) || empty {
                    return leaf();
                }
                let out = self.list_items(&l, ll.map_or(&[][..], Vec::as_slice), rl.map_or(&[][..], Vec::as_slice));
                if out.is_empty() { None } else { Some(Value::Array(out)) }
            }
            Atom::Map(m) => {
                let lm = lhs.and_then(Value::as_object);
                let rm = rhs.and_then(Value::as_object);
                let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
                if m.atomic || empty {
                    return leaf();
                }
                if lm.is_none() && rm.is_none() {
                    return None;
                }
                let out = self.map_items(&m, lm, rm);
                if out.is_empty() { None } else { Some(Value::Object(out)) }
            }
        }
    }

    fn map_items(
        &mut self,
        m: &MapTy<'_>,
        lhs: Option<&Map<String, Value>>,
        rhs: Option<&Map<String, Value>>,
    ) -> Map<String, Value> {
        let mut keys: Vec<&String> = lhs.into_iter().chain(rhs).flat_map(|m| m.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut out = Map::new();
        for k in keys {
            let (t, _) = m.field(k);
            self.path.push(PathElement::Field(k.clone()));
            if let Some(v) = self.node(t, lhs.and_then(|m| m.get(k)), rhs.and_then(|m| m.get(k))) {
                out.insert(k.clone(), v);
            }
            self.path.pop();
        }
        out
    }

    /// Names the items of one side. The live side may name an item twice; its value is then
    /// null, so that merging it with the configuration starts from nothing.
    fn index<'v>(
        &mut self,
        l: &ListTy<'_>,
        items: &'v [Value],
        allow_duplicates: bool,
    ) -> (Vec<(PathElement, usize)>, BTreeMap<PathElement, &'v Value>) {
        let mut pes = Vec::with_capacity(items.len());
        let mut observed: BTreeMap<PathElement, &Value> = BTreeMap::new();
        for (i, item) in items.iter().enumerate() {
            let pe = match item_element(l, item) {
                Ok(pe) => pe,
                Err(e) => {
                    self.error(format!("element {i}: {e}"));
                    continue;
                }
            };
            if observed.contains_key(&pe) {
                if !allow_duplicates {
                    self.error(format!("duplicate entries for key {pe}"));
                    continue;
                }
                observed.insert(pe.clone(), &NULL);
            } else {
                observed.insert(pe.clone(), item);
            }
            pes.push((pe, i));
        }
        (pes, observed)
    }

    fn error(&mut self, message: String) {
        self.errs.push(ValidationError { path: FieldPath(self.path.clone()).to_string(), message });
    }

    fn item(
        &mut self,
        l: &ListTy<'_>,
        pe: &PathElement,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        out: &mut Vec<Value>,
    ) {
        self.path.push(pe.clone());
        // structured-merge-diff drops the errors found inside list items (only naming the
        // items can fail a merge); so do we, by walking items with a walker of their own.
        let mut inner = Walker { errs: Vec::new(), path: std::mem::take(&mut self.path) };
        let merged = inner.node(l.elem, lhs, rhs);
        self.path = inner.path;
        self.path.pop();
        if let Some(v) = merged {
            out.push(v);
        }
    }

    fn list_items(&mut self, l: &ListTy<'_>, lhs: &[Value], rhs: &[Value]) -> Vec<Value> {
        let (rpes, robserved) = self.index(l, rhs, false);
        let (lpes, lobserved) = self.index(l, lhs, true);
        if !self.errs.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
        // The items both sides name, in the configuration's order: a live item that is shared
        // waits until it is the next of these.
        let mut shared: VecDeque<&PathElement> =
            rpes.iter().map(|(pe, _)| pe).filter(|pe| lobserved.contains_key(*pe)).collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
        let (mut li, mut ri) = (0, 0);
        while li < lpes.len() || ri < rpes.len() {
            if li < lpes.len() && ri < rpes.len() {
                let pe = &lpes[li].0;
                if *pe == rpes[ri].0 {
                    merged_rhs.insert(pe);
                    self.item(l, pe, lobserved.get(pe).copied(), robserved.get(pe).copied(), &mut out);
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if robserved.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    // A shared item, but not the one whose turn it is.
                    li += 1;
                    continue;
                }
            }
            if li < lpes.len() {
                let (pe, index) = &lpes[li];
                if !robserved.contains_key(pe) {
                    self.item(l, pe, lhs.get(*index), None, &mut out);
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe) {
                    li += 1;
                }
            }
            if ri < rpes.len() {
                let pe = &rpes[ri].0;
                merged_rhs.insert(pe);
                self.item(l, pe, lobserved.get(pe).copied(), robserved.get(pe).copied(), &mut out);
                ri += 1;
                if next_shared.is_some_and(|n| n == pe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        out
    }
}
