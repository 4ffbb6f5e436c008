//! The one walk over an object that the write and read paths make: defaulting, pruning,
//! metadata coercion and, on writes, validation, node by node.
//!
//! Each algorithm has its own module and its own entry point ([`crate::default`],
//! [`crate::prune`], [`crate::objectmeta`], [`crate::validation`], [`crate::metadata`],
//! [`crate::listtype`]); run one after the other they would walk the object six times. This
//! walk takes their steps at each node instead, in an order that gives the same object and the
//! same reports, in the same order, as the separate walks:
//!
//! - At an object, defaulting fills absent properties first; at a resource (the root or an
//!   `x-kubernetes-embedded-resource`), `apiVersion`, `kind` and `metadata` are then defaulted
//!   and coerced, before anything below is touched. Then one pass over the keys, merged with
//!   the schema's sorted properties, replaces `null`s that have a default, marks unknown keys
//!   and non-nullable `null`s for removal, and descends — so every node is pruned and defaulted
//!   before it is validated, as when validation ran after the whole object was normalised.
//! - Validation errors go into three lists (values, embedded resources, list types) that are
//!   concatenated at the end, as the separate walks' lists are. A node's own checks need its
//!   final subtree (`enum`, `allOf`, `required` after pruning), so they run after its children;
//!   those that kube-openapi reports before the children's errors are then moved in front of
//!   them. Errors are rare: on a valid object nothing moves and no path is rendered.
//! - A malformed metadata field stops coercion, as the separate coercion walk stops at the first
//!   one, and is the walk's one error; defaulting and pruning go on.
//!
//! The one case the merged order cannot follow is a node with both `properties` and an
//! `additionalProperties` schema (never structural): kube-openapi and the list-type walk visit
//! its keys in two passes. [`crate::pipeline`] validates such objects in separate walks.

use serde_json::{Map, Value};

use crate::default;
use crate::field::{At, Error, ErrorList, Path};
use crate::listtype;
use crate::metadata;
use crate::objectmeta::{self, Malformed, is_meta_field};
use crate::structural::{Structural, cmp_keys};
use crate::validation::{self, NodeChecks};

/// The steps the walk takes at each node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Steps {
    /// Record the paths of pruned fields.
    pub(crate) track: bool,
    /// Drop non-nullable `null`s without a default (as Kubernetes does right after pruning).
    pub(crate) drop_nulls: bool,
    /// Apply defaults.
    pub(crate) defaults: bool,
    /// Coerce the type and object metadata of resources, treating malformed fields so.
    pub(crate) coerce: Option<Malformed>,
    /// Validate values, embedded resources and list types.
    pub(crate) validate: bool,
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The paths of pruned fields and of unknown metadata fields, sorted.
    pub(crate) unknown: Vec<String>,
    /// The first malformed metadata field (with [`Malformed::Reject`]).
    pub(crate) malformed: Option<Error>,
    /// Value validation errors ([`validation::validate`]'s).
    pub(crate) values: Vec<Error>,
    /// Embedded resource errors ([`metadata::validate_embedded_resources`]').
    pub(crate) embedded: ErrorList,
    /// List type errors ([`listtype::validate_list_set_and_map`]'s).
    pub(crate) list_types: Vec<Error>,
}

/// Walks `obj` — a resource when `root` — with `schema`, taking `steps` at every node.
pub(crate) fn walk(obj: &mut Value, schema: &Structural, root: bool, steps: Steps) -> Walked {
    let base = Path::none();
    let mut w = Walker {
        steps,
        coerce: steps.coerce,
        checks: NodeChecks::new(&base),
        base: &base,
        out: Walked::default(),
        unknown_keys: Vec::new(),
        null_keys: Vec::new(),
        added: Vec::new(),
    };
    w.visit(obj, Some(schema), root, false, &At::ROOT);
    let mut out = w.out;
    out.unknown.sort();
    validation::dedup(&mut out.values);
    out
}

struct Walker<'p> {
    steps: Steps,
    /// Coercion as it goes on: off after the first malformed field.
    coerce: Option<Malformed>,
    checks: NodeChecks<'p>,
    /// The path everything is reported under (the nil path: the walk starts at the root).
    base: &'p Path,
    out: Walked,
    /// Keys to remove and entries to add once an object's pass is over: one stack for the
    /// whole walk, each object using the part above where it started.
    unknown_keys: Vec<Unknown>,
    null_keys: Vec<String>,
    added: Vec<(String, Value)>,
}

/// An unknown key to remove once its object's pass is over: a copy of it, or — when pruned
/// fields are reported — the end of its reported path (`out.unknown[path]`, the last `len`
/// bytes), which spares the copy.
enum Unknown {
    Key(String),
    Recorded { path: usize, len: usize },
}

/// How long the error lists were when a node was entered.
#[derive(Clone, Copy)]
struct Marks {
    values: usize,
    embedded: usize,
    list_types: usize,
}

impl Walker<'_> {
    /// Visits `x`, with schema `s` (`None` where nothing is specified). `root` marks a resource
    /// root, which behaves as an embedded resource. `keep_unknown` is Kubernetes' `skipPrune`:
    /// set under `x-kubernetes-preserve-unknown-fields` and inherited by array items, not by
    /// properties.
    fn visit(&mut self, x: &mut Value, s: Option<&Structural>, root: bool, keep_unknown: bool, at: &At<'_>) {
        let Some(s) = s else {
            // Nothing is specified in here (e.g. under `additionalProperties: true`).
            match x {
                Value::Object(map) => {
                    if self.steps.track {
                        for k in map.keys() {
                            self.record(at, k);
                        }
                    }
                    map.clear();
                }
                Value::Array(items) => {
                    for (i, v) in items.iter_mut().enumerate() {
                        if is_container(v) {
                            self.visit(v, None, false, false, &at.index(i));
                        }
                    }
                }
                _ => {}
            }
            return;
        };
        let keep_unknown = keep_unknown || s.preserve_unknown_fields;
        let marks = Marks {
            values: self.out.values.len(),
            embedded: self.out.embedded.len(),
            list_types: self.out.list_types.len(),
        };
        match x {
            Value::Object(map) => self.object(map, s, root || s.embedded_resource, keep_unknown, at),
            Value::Array(items) => {
                let item = s.items.as_deref();
                // Under preserve-unknown-fields, items without a schema are left alone.
                if item.is_some() || !keep_unknown {
                    self.items(items, item, keep_unknown, at);
                }
            }
            _ => {
                if self.steps.validate {
                    self.checks.value(s, x, at, &mut self.out.values);
                }
                return;
            }
        }
        if self.steps.validate {
            self.validate_node(x, s, at, marks);
        }
    }

    /// One pass over an object's keys, merged with the schema's sorted properties, after (at a
    /// resource) defaulting and coercing its type and object metadata: absent properties with
    /// a default get it, `null`s with a default take it, unknown keys (unless `keep_unknown`)
    /// and non-nullable `null`s without a default are removed, specified values are descended
    /// into or validated — each in key order.
    fn object(
        &mut self,
        map: &mut Map<String, Value>,
        s: &Structural,
        embedded: bool,
        keep_unknown: bool,
        at: &At<'_>,
    ) {
        let ap = s.additional_properties.as_ref().and_then(|ap| ap.schema());
        if embedded {
            // Pruning leaves apiVersion, kind and metadata to coercion, but defaulting treats
            // them like any specified field — before they are coerced.
            if self.steps.defaults && s.below.defaults {
                for k in ["apiVersion", "kind", "metadata"] {
                    let prop = s.properties.get(k);
                    if let Some(v) = map.get_mut(k) {
                        if let Some(child) = prop.or(ap) {
                            default::apply_to_item(v, child);
                            default::default(v, child);
                        }
                    } else if let Some(p) = prop
                        && let Some(d) = &p.default
                    {
                        let mut v = d.clone();
                        default::default(&mut v, p);
                        map.insert(k.to_owned(), v);
                    }
                }
            }
            if let Some(malformed) = self.coerce {
                let base = self.base;
                let coerced =
                    objectmeta::coerce_resource(map, || at.field_path(base), malformed, &mut self.out.unknown);
                self.stop_coercing_on(coerced);
            }
        }
        // Decide in one pass (most objects lose nothing, and iterating is much cheaper than
        // `retain`'s extraction), then remove and add.
        let (unknown_from, nulls_from, added_from) = (self.unknown_keys.len(), self.null_keys.len(), self.added.len());
        let mut props = s.properties.iter();
        let mut next_prop = props.next();
        for (k, v) in map.iter_mut() {
            let mut prop = None;
            while let Some((pk, p)) = next_prop {
                match cmp_keys(pk, k) {
                    std::cmp::Ordering::Less => {
                        self.absent(pk, p, embedded, at);
                        next_prop = props.next();
                    }
                    std::cmp::Ordering::Equal => {
                        prop = Some(p);
                        next_prop = props.next();
                        break;
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
            let at_k = if prop.is_some() { at.prop(k) } else { at.extra(k) };
            if embedded && is_meta_field(k) {
                if let Some(child) = prop.or(ap) {
                    self.meta_field(v, child, &at_k);
                }
                continue;
            }
            let child = match prop {
                Some(p) => Some(p),
                None => match &s.additional_properties {
                    Some(ap) => ap.schema(),
                    None if keep_unknown => continue,
                    None => {
                        let unknown = if self.steps.track {
                            self.record(at, k);
                            Unknown::Recorded { path: self.out.unknown.len() - 1, len: k.len() }
                        } else {
                            Unknown::Key(k.clone())
                        };
                        self.unknown_keys.push(unknown);
                        continue;
                    }
                },
            };
            if self.field(v, child, &at_k) {
                self.null_keys.push(k.clone());
            }
        }
        while let Some((pk, p)) = next_prop {
            self.absent(pk, p, embedded, at);
            next_prop = props.next();
        }
        // Most objects have nothing to remove or add.
        if self.null_keys.len() > nulls_from {
            for k in self.null_keys.drain(nulls_from..) {
                map.remove(&k);
            }
        }
        while self.unknown_keys.len() > unknown_from {
            match self.unknown_keys.pop() {
                Some(Unknown::Key(k)) => {
                    map.remove(&k);
                }
                Some(Unknown::Recorded { path, len }) => {
                    if let Some(p) = self.out.unknown.get(path) {
                        map.remove(&p[p.len() - len..]);
                    }
                }
                None => break,
            }
        }
        if self.added.len() > added_from {
            map.extend(self.added.drain(added_from..));
        }
    }

    /// A specified value of an object (`child` is its schema, `None` under a boolean
    /// `additionalProperties`): takes its default if it is a `null` that has one, and is
    /// descended into or validated. Returns whether it is to be removed instead (a
    /// non-nullable `null` without a default).
    #[inline]
    fn field(&mut self, v: &mut Value, child: Option<&Structural>, at: &At<'_>) -> bool {
        if self.steps.defaults
            && let Some(child) = child
            && child.default.is_some()
        {
            default::apply_to_item(v, child);
        }
        match v {
            Value::Null => {
                if self.steps.drop_nulls && child.is_some_and(|c| !c.nullable && c.default.is_none()) {
                    return true;
                }
                self.scalar(v, child, at);
            }
            Value::Object(_) | Value::Array(_) => self.visit(v, child, false, false, at),
            _ => self.scalar(v, child, at),
        }
        false
    }

    /// An absent property `k` of an object: with a default, a copy of it is processed where the
    /// property sorts — as if it had been set before the pass — and added to the object after.
    /// (At a resource, apiVersion, kind and metadata were set before coercion.)
    fn absent(&mut self, k: &str, p: &Structural, embedded: bool, at: &At<'_>) {
        if !self.steps.defaults || (embedded && is_meta_field(k)) {
            return;
        }
        let Some(d) = &p.default else { return };
        let mut v = d.clone();
        // A default is never a `null` to drop: it has a default.
        self.field(&mut v, Some(p), &at.prop(k));
        self.added.push((k.to_owned(), v));
    }

    #[inline]
    fn scalar(&mut self, v: &Value, child: Option<&Structural>, at: &At<'_>) {
        if self.steps.validate
            && let Some(child) = child
        {
            self.checks.value(child, v, at, &mut self.out.values);
        }
    }

    /// The items of an array: `null`s take the items' default, and each is descended into or
    /// validated.
    fn items(&mut self, items: &mut [Value], item: Option<&Structural>, keep_unknown: bool, at: &At<'_>) {
        for (i, v) in items.iter_mut().enumerate() {
            if self.steps.defaults
                && let Some(item) = item
            {
                default::apply_to_item(v, item);
            }
            if is_container(v) {
                self.visit(v, item, false, keep_unknown, &at.index(i));
            } else {
                self.scalar(v, item, &at.index(i));
            }
        }
    }

    /// `apiVersion`, `kind` or `metadata` of a resource, specified by `child`: already
    /// defaulted and coerced, never pruned; but coercion, and validation, look inside it as
    /// into any specified field (they only find something when the schema specifies it).
    fn meta_field(&mut self, v: &mut Value, child: &Structural, at: &At<'_>) {
        if let Some(malformed) = self.coerce
            && child.below.embedded_resources
            && is_container(v)
        {
            let path = at.field_path(self.base);
            let coerced = objectmeta::coerce_node(v, child, false, &path, malformed, &mut self.out.unknown);
            self.stop_coercing_on(coerced);
        }
        if self.steps.validate {
            self.checks.value(child, v, at, &mut self.out.values);
            metadata::walk(v, child, at, self.base, &mut self.out.embedded);
            listtype::walk(child, v, at, self.base, &mut self.out.list_types);
        }
    }

    /// The checks of an array or object `x` itself, once its children are done: those reported
    /// before the children's errors are put in front of them (found at `marks`).
    fn validate_node(&mut self, x: &Value, s: &Structural, at: &At<'_>, marks: Marks) {
        // The checks before the children are made after them, then moved in front.
        let children_end = self.out.values.len();
        let descended = self.checks.before_children(s, x, at, &mut self.out.values);
        if self.out.values.len() > children_end || !descended {
            move_in_front(&mut self.out.values, marks.values, children_end, descended);
        }
        self.checks.after_children(s, x, descended, at, &mut self.out.values);

        if s.embedded_resource && x.is_object() {
            let mut errs = ErrorList::new();
            metadata::embedded_resource_errors(x, &|| at.field_path(self.base), &mut errs);
            insert_at(&mut self.out.embedded.0, marks.embedded, errs.0);
        }
        if let Value::Array(items) = x
            && s.list_type.is_some()
        {
            let mut errs = Vec::new();
            listtype::check_list(s, items, at, self.base, &mut errs);
            insert_at(&mut self.out.list_types, marks.list_types, errs);
        }
    }

    fn stop_coercing_on(&mut self, coerced: Result<(), Error>) {
        if let Err(e) = coerced {
            self.out.malformed = Some(e);
            self.coerce = None;
        }
    }

    /// Reports the pruned key `k` of the object at `at` (`spec.foo`, `spec.list[0].bar`).
    fn record(&mut self, at: &At<'_>, k: &str) {
        if self.steps.track {
            let mut p = String::with_capacity(64 + k.len());
            at.dotted(&mut p);
            if !p.is_empty() {
                p.push('.');
            }
            p.push_str(k);
            self.out.unknown.push(p);
        }
    }
}

/// Puts `errs` at `index` of `list`, in front of what is there. Nearly always there is nothing
/// to put: that test stays inline, the moving does not.
#[inline(always)]
fn insert_at(list: &mut Vec<Error>, index: usize, errs: Vec<Error>) {
    if !errs.is_empty() {
        splice_in(list, index, errs);
    }
}

#[cold]
fn splice_in(list: &mut Vec<Error>, index: usize, errs: Vec<Error>) {
    list.splice(index..index, errs);
}

/// `list[start..children_end]` are a node's children's errors, `list[children_end..]` its own
/// that belong in front of them: moves them there — or, when the children were not to be
/// validated (`keep_children` false, a property count violation), drops the children's.
#[cold]
fn move_in_front(list: &mut Vec<Error>, start: usize, children_end: usize, keep_children: bool) {
    if keep_children {
        let own = list.len() - children_end;
        list[start..].rotate_right(own);
    } else {
        list.drain(start..children_end);
    }
}

/// Only objects and arrays can contain something to prune.
fn is_container(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_))
}
