//! Removing a set of fields from an object by schema: structured-merge-diff's `RemoveItems`,
//! which apply uses to drop what a manager stopped applying.
//!
//! A member of the set removes that map key, list item or set member with everything below it;
//! a path that only passes through a node removes inside it. Atomic lists and maps reached that
//! way, and maps or lists left with nothing, become `null` where they were — structured-merge-diff
//! does exactly that, and the apply algorithm only reaches such nodes when they are owned as a
//! whole. Hand-written to match it; recursion follows the object's nesting (bounded at 128 by
//! the server's decoder).

use serde_json::{Map, Value};

use crate::path::PathElement;
use crate::schema::{Atom, ListRel, Ty, atom, item_element};
use crate::set::FieldSet;

/// `v` without the fields in `remove`.
pub(crate) fn remove_items(ty: Ty<'_>, v: &Value, remove: &FieldSet) -> Value {
    walk(ty, v, remove).unwrap_or(Value::Null)
}

/// `None` is structured-merge-diff's nil output, which its caller stores as `null`.
fn walk(ty: Ty<'_>, v: &Value, remove: &FieldSet) -> Option<Value> {
    match atom(ty, Some(v)) {
        Atom::Scalar(_) | Atom::None => Some(v.clone()),
        Atom::List(l) => {
            let items = v.as_array()?;
            if items.is_empty() || matches!(l.rel, ListRel::Atomic) {
                return None;
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Ok(pe) = item_element(&l, item) else {
                    // Items that cannot be named were refused when the object was validated.
                    out.push(item.clone());
                    continue;
                };
                if remove.members.contains(&pe) {
                    continue;
                }
                match remove.child(&pe).filter(|s| !s.is_empty()) {
                    Some(sub) => out.push(walk(l.elem, item, sub).unwrap_or(Value::Null)),
                    None => out.push(item.clone()),
                }
            }
            if out.is_empty() { None } else { Some(Value::Array(out)) }
        }
        Atom::Map(m) => {
            let o = v.as_object()?;
            if o.is_empty() || m.atomic {
                return None;
            }
            let mut out = Map::new();
            for (k, item) in o {
                let pe = PathElement::Field(k.clone());
                if remove.members.contains(&pe) {
                    continue;
                }
                match remove.child(&pe).filter(|s| !s.is_empty()) {
                    Some(sub) => {
                        let (t, _) = m.field(k);
                        out.insert(k.clone(), walk(t, item, sub).unwrap_or(Value::Null));
                    }
                    None => {
                        out.insert(k.clone(), item.clone());
                    }
                }
            }
            if out.is_empty() { None } else { Some(Value::Object(out)) }
        }
    }
}
