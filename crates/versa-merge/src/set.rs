//! `FieldSet`: a set of field paths stored as a tree, the unit of ownership in server-side apply.
//!
//! Each node holds the elements that are themselves members of the set and the children that
//! have members below them; an element can be both (an associative-list item that is owned and
//! whose fields are owned too). The operations are structured-merge-diff's, with its exact
//! meaning for parents and children: a plain [`FieldSet::difference`] removes members only
//! (removing `.spec` does not remove `.spec.replicas`), [`FieldSet::recursive_difference`]
//! removes whole subtrees. Elements are kept sorted in [`PathElement`]'s order, which is the
//! order `managedFields` are written in and conflicts are listed in. Hand-written because these
//! set semantics, not a generic trie's, decide who owns what.
//!
//! Recursion follows the depth of the paths, which is that of the objects they come from
//! (bounded at 128 by the server's decoder).

use std::collections::{BTreeMap, BTreeSet};

use crate::path::{FieldPath, PathElement};

/// A set of field paths. The empty path (the whole object) is never a member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub(crate) members: BTreeSet<PathElement>,
    pub(crate) children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a FieldPath>) -> FieldSet {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(&p.0);
        }
        s
    }

    /// Adds a path (its parents are not added). The empty path is ignored: no one owns the
    /// whole object.
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((last, parents)) = path.split_last() else { return };
        let mut node = self;
        for pe in parents {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.members.insert(last.clone());
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, parents)) = path.split_last() else { return false };
        let mut node = self;
        for pe in parents {
            match node.children.get(pe) {
                Some(c) => node = c,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    /// True when no path is a member (children with nothing in them do not count).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// The paths below `pe`, without `pe` (empty if there are none).
    pub fn with_prefix(&self, pe: &PathElement) -> FieldSet {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    /// The subtree below `pe`, if any.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    fn union_in_place(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (pe, c) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_in_place(c),
                None => {
                    self.children.insert(pe.clone(), c.clone());
                }
            }
        }
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            if let Some(o) = other.children.get(pe) {
                let i = c.intersection(o);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Members of `self` that are not members of `other`. Parents and children are distinct
    /// members: removing a parent leaves its children.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            match other.children.get(pe) {
                Some(o) => {
                    let d = c.difference(o);
                    if !d.is_empty() {
                        children.insert(pe.clone(), d);
                    }
                }
                None => {
                    children.insert(pe.clone(), c.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// Like [`FieldSet::difference`], but a member of `other` also removes everything below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            match other.children.get(pe) {
                Some(o) => {
                    let d = c.recursive_difference(o);
                    if !d.is_empty() {
                        children.insert(pe.clone(), d);
                    }
                }
                None => {
                    children.insert(pe.clone(), c.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// Every member, depth first: a node's own members before the paths below its children,
    /// as structured-merge-diff iterates (and so lists conflicts).
    pub fn paths(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<FieldPath>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(FieldPath(p));
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect(prefix, out);
            prefix.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&[&str]]) -> FieldSet {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(&FieldPath::fields(p).0);
        }
        s
    }

    fn strings(s: &FieldSet) -> Vec<String> {
        s.paths().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn difference_keeps_children_recursive_difference_does_not() {
        let a = set(&[&["spec"], &["spec", "replicas"], &["spec", "paused"]]);
        let b = set(&[&["spec"]]);
        assert_eq!(strings(&a.difference(&b)), [".spec.paused", ".spec.replicas"]);
        assert!(a.recursive_difference(&b).is_empty());
        let c = set(&[&["spec", "paused"]]);
        assert_eq!(strings(&a.recursive_difference(&c)), [".spec", ".spec.replicas"]);
    }

    #[test]
    fn union_intersection_membership() {
        let a = set(&[&["a", "x"], &["b"]]);
        let b = set(&[&["a", "y"], &["b"], &["c", "z"]]);
        assert_eq!(strings(&a.union(&b)), [".b", ".a.x", ".a.y", ".c.z"]);
        assert_eq!(strings(&a.intersection(&b)), [".b"]);
        assert!(a.has(&FieldPath::fields(&["a", "x"]).0));
        assert!(!a.has(&FieldPath::fields(&["a"]).0));
        assert!(!a.has(&[]));
        let mut e = FieldSet::new();
        e.insert(&[]);
        assert!(e.is_empty());
    }
}
