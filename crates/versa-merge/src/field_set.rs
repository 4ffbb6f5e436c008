//! The field set of an object: which paths an applied configuration (or any object) sets,
//! structured-merge-diff's `ToFieldSet`.
//!
//! Scalars are members. Atomic lists and maps are members as a whole, with nothing below them.
//! Items of set and map lists are members (with their key fields, which are themselves
//! fields of the item) and so are entries of a map's element type; declared struct fields are
//! members only when they are leaves, null, or empty maps. An empty granular list owns nothing.
//! Items that occur twice in a list are members once, with nothing below (kube allows
//! duplicates in stored objects and owns them as a whole).
//!
//! [`ensure_named_fields_are_members`] adds the struct fields that only have children, which is
//! what apply needs when it decides which parents to remove. Recursion follows the object's
//! nesting (bounded at 128 by the server's decoder).

use serde_json::Value;
use versa_schema::structural::Structural;

use crate::path::PathElement;
use crate::schema::{Atom, ListRel, ListTy, MapTy, Ty, atom, item_element, list_shape, map_shape};
use crate::set::FieldSet;

/// The fields `obj`, an object of a resource with schema `schema`, sets.
pub fn field_set(obj: &Value, schema: &Structural) -> FieldSet {
    to_field_set(Ty::root(schema), obj)
}

pub(crate) fn to_field_set(ty: Ty<'_>, v: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    let mut path = Vec::new();
    walk(ty, v, &mut path, &mut set);
    set
}

fn walk(ty: Ty<'_>, v: &Value, path: &mut Vec<PathElement>, set: &mut FieldSet) {
    match atom(ty, Some(v)) {
        Atom::Scalar(_) | Atom::None => set.insert(path),
        Atom::List(l) => match (l.rel, v) {
            (ListRel::Atomic, _) => set.insert(path),
            (_, Value::Array(items)) => list_items(&l, items, path, set),
            _ => {}
        },
        Atom::Map(m) => {
            if m.atomic {
                set.insert(path);
            } else if let Value::Object(o) = v {
                map_items(&m, o, path, set);
            }
        }
    }
}

fn list_items(l: &ListTy<'_>, items: &[Value], path: &mut Vec<PathElement>, set: &mut FieldSet) {
    let pes: Vec<Option<PathElement>> = items.iter().map(|i| item_element(l, i).ok()).collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut duplicates = std::collections::BTreeSet::new();
    for pe in pes.iter().flatten() {
        if !seen.insert(pe) && duplicates.insert(pe) {
            path.push(pe.clone());
            set.insert(path);
            path.pop();
        }
    }
    for (pe, item) in pes.iter().zip(items) {
        // Items that cannot be named were rejected when the object was validated; here they
        // own nothing.
        let Some(pe) = pe else { continue };
        if duplicates.contains(pe) {
            continue;
        }
        path.push(pe.clone());
        walk(l.elem, item, path, set);
        set.insert(path);
        path.pop();
    }
}

fn map_items(m: &MapTy<'_>, o: &serde_json::Map<String, Value>, path: &mut Vec<PathElement>, set: &mut FieldSet) {
    for (k, v) in o {
        let (t, declared) = m.field(k);
        path.push(PathElement::Field(k.clone()));
        walk(t, v, path, set);
        let empty_map = matches!(v, Value::Object(o) if o.is_empty());
        if v.is_null() || empty_map || !declared {
            set.insert(path);
        }
        path.pop();
    }
}

/// `s` with every declared struct field that has members below it made a member too (not map
/// entries, which are members already when owned): structured-merge-diff's
/// `EnsureNamedFieldsAreMembers`.
pub(crate) fn ensure_named_fields_are_members(s: &FieldSet, ty: Ty<'_>) -> FieldSet {
    let map = map_shape(ty);
    let list = list_shape(ty);
    let mut out = FieldSet { members: s.members.clone(), children: Default::default() };
    for (pe, child) in &s.children {
        let child_ty = match pe {
            PathElement::Field(name) => match map {
                Some(m) => {
                    if m.declared(name).is_some() {
                        out.members.insert(pe.clone());
                    }
                    m.field(name).0
                }
                None => Ty::None,
            },
            PathElement::Key(_) => list.map_or(Ty::None, |l| l.elem),
            PathElement::Value(_) | PathElement::Index(_) => Ty::None,
        };
        out.children.insert(pe.clone(), ensure_named_fields_are_members(child, child_ty));
    }
    out
}
