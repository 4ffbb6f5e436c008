//! The names the definitions of each group hold, kept up to date change by change: what the
//! definitions controller checks a definition's requested names against (kube's naming
//! controller reads them from its informer cache and its own writes, `crdMutationCache`).
//!
//! Per group, every member's accepted names (`status.acceptedNames`: plural, singular and short
//! names as resource names; kind and list kind as kind names), counted, so that "does another
//! member hold this name?" is a lookup, not a walk of the group — the walk made a burst of
//! definitions into one group quadratic in its size. What a member holds is what its stored
//! status says, or what the controller has just written there (a write in flight), so that two
//! definitions that want the same name in one batch cannot both get it.
//!
//! A member whose names are all accepted and which is `Established` ("settled") cannot be
//! changed by the others' names: names once accepted stay accepted. Only the unsettled members
//! of a group whose names changed need another look; [`NameIndex::take_dirty`] says which.

use std::collections::{BTreeSet, HashMap};

use versa_apiextensions::ResourceDefinition;
use versa_registry::find_key;

/// What one definition holds (kept for every definition: sorted slices, not B-trees, whose
/// leaves are far larger than the handful of names in them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    resources: Names,
    kinds: Names,
    /// Every requested name accepted, `NamesAccepted` and `Established` true.
    settled: bool,
}

impl Held {
    /// What `def` holds by its status.
    pub fn of(def: &ResourceDefinition) -> Held {
        let accepted = def.status.as_ref().and_then(|s| s.accepted_names.as_ref());
        let (mut resources, mut kinds) = (Vec::new(), Vec::new());
        if let Some(n) = accepted {
            resources.push(n.plural.as_str());
            resources.extend(n.singular.as_deref());
            resources.extend(n.short_names.iter().flatten().map(String::as_str));
            kinds.push(n.kind.as_str());
            kinds.extend(n.list_kind.as_deref());
        }
        let settled = accepted.is_some_and(|n| *n == def.spec.names)
            && def.condition_is_true("NamesAccepted")
            && def.is_established();
        Held { resources: Names::of(resources), kinds: Names::of(kinds), settled }
    }
}

/// A set of names: sorted, without repeats or empty names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Names(Box<[Box<str>]>);

impl Names {
    fn of(mut names: Vec<&str>) -> Names {
        names.retain(|n| !n.is_empty());
        names.sort_unstable();
        names.dedup();
        Names(names.into_iter().map(Box::from).collect())
    }

    fn contains(&self, name: &str) -> bool {
        self.0.binary_search_by(|n| (**n).cmp(name)).is_ok()
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|n| &**n)
    }
}

/// Names other definitions of a definition's group hold: what its requested names are checked
/// against.
pub trait InUse {
    /// Whether another definition holds `name` as a plural, singular or short name.
    fn resource(&self, name: &str) -> bool;
    /// Whether another definition holds `name` as a kind or list kind.
    fn kind(&self, name: &str) -> bool;
}

/// The names a set of definitions hold, gathered from them (the tests' reference).
#[cfg(test)]
#[derive(Debug, Default)]
pub struct Taken {
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

#[cfg(test)]
impl Taken {
    pub fn of<'a>(others: impl IntoIterator<Item = &'a ResourceDefinition>) -> Taken {
        let mut taken = Taken::default();
        for o in others {
            let held = Held::of(o);
            taken.resources.extend(held.resources.iter().map(str::to_owned));
            taken.kinds.extend(held.kinds.iter().map(str::to_owned));
        }
        taken
    }
}

#[cfg(test)]
impl InUse for Taken {
    fn resource(&self, name: &str) -> bool {
        self.resources.contains(name)
    }

    fn kind(&self, name: &str) -> bool {
        self.kinds.contains(name)
    }
}

/// One group's members and the names they hold. Sorted vectors, not maps: most groups have a
/// member or a few, and this is kept for every group (a hash table each cost more than the names
/// in it, docs/memory.md); a group of a thousand shifts a few dozen KiB on a change.
#[derive(Debug, Default)]
struct GroupNames {
    /// By member.
    held: Vec<(Box<str>, Held)>,
    /// How many members hold each name, by name.
    resources: Vec<(Box<str>, u32)>,
    kinds: Vec<(Box<str>, u32)>,
    /// The members that are not settled.
    unsettled: BTreeSet<String>,
}

impl GroupNames {
    fn count(counts: &mut Vec<(Box<str>, u32)>, names: &Names, up: bool) {
        for name in names.iter() {
            match (find_key(counts, name), up) {
                (Ok(at), true) => counts[at].1 += 1,
                (Err(at), true) => counts.insert(at, (name.into(), 1)),
                (Ok(at), false) => {
                    counts[at].1 -= 1;
                    if counts[at].1 == 0 {
                        counts.remove(at);
                    }
                }
                (Err(_), false) => {}
            }
        }
    }

    /// How many members hold `name` in `counts`.
    fn holders(counts: &[(Box<str>, u32)], name: &str) -> u32 {
        find_key(counts, name).map_or(0, |at| counts[at].1)
    }

    fn member(&self, member: &str) -> Option<&Held> {
        find_key(&self.held, member).ok().map(|at| &self.held[at].1)
    }
}

/// Every group's [`GroupNames`], and which groups' names changed since the last
/// [`NameIndex::take_dirty`].
#[derive(Debug, Default)]
pub struct NameIndex {
    groups: HashMap<String, GroupNames>,
    dirty: BTreeSet<String>,
}

impl NameIndex {
    /// Records what `member` of `group` holds (`None`: it is gone). A change of the names held
    /// marks the group dirty.
    pub fn hold(&mut self, group: &str, member: &str, held: Option<Held>) {
        let names = self.groups.entry(group.to_owned()).or_default();
        let old = find_key(&names.held, member).ok().map(|at| names.held.remove(at).1);
        let moved = old.as_ref().map(|h| (&h.resources, &h.kinds)) != held.as_ref().map(|h| (&h.resources, &h.kinds));
        if let Some(old) = &old {
            GroupNames::count(&mut names.resources, &old.resources, false);
            GroupNames::count(&mut names.kinds, &old.kinds, false);
        }
        names.unsettled.remove(member);
        if let Some(held) = held {
            GroupNames::count(&mut names.resources, &held.resources, true);
            GroupNames::count(&mut names.kinds, &held.kinds, true);
            if !held.settled {
                names.unsettled.insert(member.to_owned());
            }
            if let Err(at) = find_key(&names.held, member) {
                names.held.insert(at, (member.into(), held));
            }
        }
        names.held.shrink_to_fit();
        names.resources.shrink_to_fit();
        names.kinds.shrink_to_fit();
        if names.held.is_empty() {
            self.groups.remove(group);
        }
        if moved {
            self.dirty.insert(group.to_owned());
        }
    }

    /// The names the other members of `group` hold, for `member`.
    pub fn in_use<'a>(&'a self, group: &str, member: &str) -> OthersOf<'a> {
        let names = self.groups.get(group);
        OthersOf { names, own: names.and_then(|n| n.member(member)) }
    }

    /// The groups whose names changed since the last call, each with its unsettled members.
    pub fn take_dirty(&mut self) -> Vec<(String, Vec<String>)> {
        std::mem::take(&mut self.dirty)
            .into_iter()
            .map(|group| {
                let unsettled =
                    self.groups.get(&group).map(|n| n.unsettled.iter().cloned().collect()).unwrap_or_default();
                (group, unsettled)
            })
            .collect()
    }

    /// Forgets which groups changed.
    pub fn clear_dirty(&mut self) {
        self.dirty.clear();
    }
}

/// The names held in a group by every member but one.
#[derive(Debug, Clone, Copy)]
pub struct OthersOf<'a> {
    names: Option<&'a GroupNames>,
    own: Option<&'a Held>,
}

impl InUse for OthersOf<'_> {
    fn resource(&self, name: &str) -> bool {
        let held = self.names.map_or(0, |n| GroupNames::holders(&n.resources, name));
        held > u32::from(self.own.is_some_and(|own| own.resources.contains(name)))
    }

    fn kind(&self, name: &str) -> bool {
        let held = self.names.map_or(0, |n| GroupNames::holders(&n.kinds, name));
        held > u32::from(self.own.is_some_and(|own| own.kinds.contains(name)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    fn definition(plural: &str, kind: &str, accepted: Option<(&str, &str)>) -> ResourceDefinition {
        let mut doc = json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                     "versions": [{"name": "v1", "served": true, "storage": true}]},
        });
        if let Some((plural, kind)) = accepted {
            doc["status"] = json!({
                "acceptedNames": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
                "conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}],
            });
        }
        ResourceDefinition::from_document(&doc).unwrap()
    }

    /// The counted index answers as gathering the others' names would, as members come, change
    /// and go — and only a change of names marks the group.
    #[test]
    fn counts_agree_with_the_others_names() {
        let defs = [
            ("widgets", definition("widgets", "Widget", Some(("widgets", "Widget")))),
            ("gadgets", definition("gadgets", "Gadget", Some(("gadgets", "Gadget")))),
            // Wants names another holds: holds nothing yet, unsettled.
            ("others", definition("others", "Widget", None)),
            // Holds older names than it asks for: unsettled.
            ("renamed", definition("renamed", "Renamed", Some(("renamedold", "Renamed")))),
        ];
        let mut index = NameIndex::default();
        for (member, def) in &defs {
            index.hold("example.com", member, Some(Held::of(def)));
        }
        let probes = ["widgets", "widget", "gadgets", "renamedold", "renamed", "others", "nothing"];
        let kinds = ["Widget", "WidgetList", "Gadget", "Renamed", "RenamedList", "Nothing"];
        let check = |index: &NameIndex, present: &[&str]| {
            for (member, _) in defs.iter().filter(|(m, _)| present.contains(m)) {
                let others = Taken::of(defs.iter().filter(|(m, _)| m != member && present.contains(m)).map(|(_, d)| d));
                let counted = index.in_use("example.com", member);
                for p in probes {
                    assert_eq!(counted.resource(p), others.resource(p), "{member}: {p}");
                }
                for k in kinds {
                    assert_eq!(counted.kind(k), others.kind(k), "{member}: {k}");
                }
            }
        };
        check(&index, &["widgets", "gadgets", "others", "renamed"]);
        assert_eq!(
            index.take_dirty(),
            vec![("example.com".to_owned(), vec!["others".to_owned(), "renamed".to_owned()])]
        );

        // The same names again: nothing to look at.
        index.hold("example.com", "gadgets", Some(Held::of(&defs[1].1)));
        assert!(index.take_dirty().is_empty());

        // A member goes: its names are free, the group is marked.
        index.hold("example.com", "widgets", None);
        check(&index, &["gadgets", "others", "renamed"]);
        assert_eq!(index.take_dirty().len(), 1);
        assert!(!index.in_use("example.com", "others").kind("Widget"));

        // The last ones go: the group is forgotten.
        for member in ["gadgets", "others", "renamed"] {
            index.hold("example.com", member, None);
        }
        assert!(index.groups.is_empty());
    }
}
