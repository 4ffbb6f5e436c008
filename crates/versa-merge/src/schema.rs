//! What structured merge needs to know of a schema: for each node, is it a scalar, a list (atomic,
//! set, or map with which keys) or a map (atomic or granular, with which declared fields), and
//! what type its children have.
//!
//! kube-apiserver gets this by converting a definition's OpenAPI schema into a
//! structured-merge-diff schema (kube-openapi's `schemaconv`, after apiextensions' builder has
//! added `apiVersion`, `kind` and the standard `ObjectMeta` to the root and to every embedded
//! resource). [`Ty`] reads the same answers straight off [`Structural`], following those
//! conversion rules:
//!
//! - a list is atomic unless `x-kubernetes-list-type` is `set` or `map`; a map is granular
//!   unless `x-kubernetes-map-type: atomic`;
//! - a node without `type` (int-or-string, or preserve-unknown-fields without a type) may be a
//!   scalar, a list or a map, chosen by the value it holds;
//! - below `x-kubernetes-preserve-unknown-fields`, and in objects with neither properties nor
//!   additionalProperties, undeclared keys have the *deduced* type: scalars, atomic lists,
//!   granular maps of deduced values;
//! - `metadata` is `ObjectMeta`: labels and annotations granular maps, finalizers a set,
//!   ownerReferences a map list keyed by `uid`, managedFields atomic.
//!
//! Hand-written because these rules are Kubernetes' and nothing else encodes them.

use std::sync::LazyLock;

use serde_json::Value;

use crate::path::PathElement;
use crate::value::write_go_quoted;
use versa_schema::structural::{AdditionalProperties, Structural, Type};

/// The type of one node, as structured merge resolves it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty<'s> {
    /// A node of the definition's schema.
    Node(&'s Structural, Ctx),
    /// `__untyped_deduced_`: what unknown fields of preserve-unknown-fields objects have.
    Deduced,
    /// `__untyped_atomic_`: anything, always atomic (items of a list without `items`).
    Untyped,
    /// `ObjectMeta`, as the apiserver's OpenAPI describes it.
    ObjectMeta,
    /// `ownerReferences`: a map list keyed by `uid`.
    OwnerReferences,
    /// `OwnerReference`.
    OwnerReference,
    /// A granular map of strings (labels, annotations).
    StringMap,
    /// A set of strings (finalizers).
    StringSet,
    /// An atomic list (managedFields).
    AtomicList,
    /// A scalar.
    Scalar,
    /// No type: a key a struct does not declare and whose map has no element type.
    None,
}

/// What a schema node inherits from above.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ctx {
    /// `x-kubernetes-preserve-unknown-fields` is set on this node or above it.
    pub preserve: bool,
    /// The node is the root of a resource or an embedded resource, and so also declares
    /// `apiVersion`, `kind` and `metadata`.
    pub resource: bool,
}

impl<'s> Ty<'s> {
    /// The type of the root of an object of a resource with this schema.
    pub fn root(s: &'s Structural) -> Ty<'s> {
        Ty::Node(s, Ctx { preserve: false, resource: true })
    }
}

/// How a list's items are told apart.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ListRel<'s> {
    /// Replaced as a whole.
    Atomic,
    /// Items are scalars, each its own member (`v:`).
    Set,
    /// Items are objects named by these key fields (`k:`).
    Map(&'s [String]),
}

/// A list type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListTy<'s> {
    pub rel: ListRel<'s>,
    pub elem: Ty<'s>,
}

/// A map type (struct or map; structured merge does not distinguish them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapTy<'s> {
    pub atomic: bool,
    of: Ty<'s>,
}

/// The shape a node takes for a given value: structured-merge-diff's `Atom` after deduction.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Atom<'s> {
    Scalar(ScalarKind),
    List(ListTy<'s>),
    Map(MapTy<'s>),
    /// The type allows nothing (an undeclared field).
    None,
}

impl Atom<'_> {
    /// Same kind of atom (what decides whether two sides are walked together).
    pub fn same_kind(&self, other: &Atom<'_>) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

static UID: LazyLock<Vec<String>> = LazyLock::new(|| vec!["uid".to_string()]);

/// What a scalar node accepts (kube-openapi's conversion: `integer` and `number` are numeric,
/// formats are stripped so every `string` is a string, anything else is untyped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarKind {
    Numeric,
    String,
    Boolean,
    Untyped,
}

/// The shapes a type allows.
struct Shapes<'s> {
    scalar: Option<ScalarKind>,
    list: Option<ListTy<'s>>,
    map: Option<MapTy<'s>>,
}

fn shapes(ty: Ty<'_>) -> Shapes<'_> {
    let none = Shapes { scalar: None, list: None, map: None };
    match ty {
        Ty::Node(s, ctx) => {
            let list = || ListTy { rel: list_rel(s), elem: items(s, ctx) };
            let map = || MapTy { atomic: s.map_type.as_deref() == Some("atomic"), of: ty };
            match s.type_ {
                Type::Object => Shapes { map: Some(map()), ..none },
                Type::Array => Shapes { list: Some(list()), ..none },
                Type::String => Shapes { scalar: Some(ScalarKind::String), ..none },
                Type::Integer | Type::Number => Shapes { scalar: Some(ScalarKind::Numeric), ..none },
                Type::Boolean => Shapes { scalar: Some(ScalarKind::Boolean), ..none },
                Type::Other => Shapes { scalar: Some(ScalarKind::Untyped), ..none },
                Type::None => Shapes { scalar: Some(ScalarKind::Untyped), list: Some(list()), map: Some(map()) },
            }
        }
        Ty::Deduced => Shapes {
            scalar: Some(ScalarKind::Untyped),
            list: Some(ListTy { rel: ListRel::Atomic, elem: Ty::Untyped }),
            map: Some(MapTy { atomic: false, of: Ty::Deduced }),
        },
        Ty::Untyped => Shapes {
            scalar: Some(ScalarKind::Untyped),
            list: Some(ListTy { rel: ListRel::Atomic, elem: Ty::Untyped }),
            map: Some(MapTy { atomic: true, of: Ty::Untyped }),
        },
        Ty::ObjectMeta | Ty::OwnerReference | Ty::StringMap => {
            Shapes { map: Some(MapTy { atomic: false, of: ty }), ..none }
        }
        Ty::OwnerReferences => {
            Shapes { list: Some(ListTy { rel: ListRel::Map(&UID), elem: Ty::OwnerReference }), ..none }
        }
        Ty::StringSet => Shapes { list: Some(ListTy { rel: ListRel::Set, elem: Ty::Scalar }), ..none },
        Ty::AtomicList => Shapes { list: Some(ListTy { rel: ListRel::Atomic, elem: Ty::Untyped }), ..none },
        Ty::Scalar => Shapes { scalar: Some(ScalarKind::Untyped), ..none },
        Ty::None => none,
    }
}

fn list_rel(s: &Structural) -> ListRel<'_> {
    match s.list_type.as_deref() {
        Some("set") => ListRel::Set,
        Some("map") => ListRel::Map(&s.list_map_keys),
        _ => ListRel::Atomic,
    }
}

fn items(s: &Structural, ctx: Ctx) -> Ty<'_> {
    match &s.items {
        Some(i) => Ty::Node(i, child_ctx(i, ctx)),
        None => Ty::Untyped,
    }
}

fn child_ctx(child: &Structural, parent: Ctx) -> Ctx {
    Ctx { preserve: parent.preserve || child.preserve_unknown_fields, resource: child.embedded_resource }
}

/// The atom for a value: the shape matching the value's kind if the type allows it, else the
/// type's first shape in structured-merge-diff's order (map, scalar, list). `None` (an absent
/// side) takes the same fallback.
pub(crate) fn atom<'s>(ty: Ty<'s>, v: Option<&Value>) -> Atom<'s> {
    let sh = shapes(ty);
    match v {
        Some(Value::Number(_) | Value::String(_) | Value::Bool(_)) => {
            if let Some(k) = sh.scalar {
                return Atom::Scalar(k);
            }
        }
        Some(Value::Array(_)) => {
            if let Some(l) = sh.list {
                return Atom::List(l);
            }
        }
        Some(Value::Object(_)) => {
            if let Some(m) = sh.map {
                return Atom::Map(m);
            }
        }
        _ => {}
    }
    if let Some(m) = sh.map {
        Atom::Map(m)
    } else if let Some(k) = sh.scalar {
        Atom::Scalar(k)
    } else if let Some(l) = sh.list {
        Atom::List(l)
    } else {
        Atom::None
    }
}

impl<'s> MapTy<'s> {
    /// The type of `key`'s value and whether the key is a declared field (a struct field)
    /// rather than an entry of the map's element type.
    pub fn field(&self, key: &str) -> (Ty<'s>, bool) {
        match self.declared(key) {
            Some(t) => (t, true),
            None => (self.elem(), false),
        }
    }

    /// The declared field `key`, if any.
    pub fn declared(&self, key: &str) -> Option<Ty<'s>> {
        match self.of {
            Ty::Node(s, ctx) => {
                if ctx.resource {
                    match key {
                        "metadata" => return Some(Ty::ObjectMeta),
                        "apiVersion" | "kind" => return Some(Ty::Scalar),
                        _ => {}
                    }
                }
                let eff = Ctx { preserve: ctx.preserve || s.preserve_unknown_fields, resource: ctx.resource };
                s.properties.get(key).map(|p| Ty::Node(p, child_ctx(p, eff)))
            }
            Ty::ObjectMeta => Some(match key {
                "labels" | "annotations" => Ty::StringMap,
                "finalizers" => Ty::StringSet,
                "ownerReferences" => Ty::OwnerReferences,
                "managedFields" => Ty::AtomicList,
                "name"
                | "generateName"
                | "namespace"
                | "selfLink"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds" => Ty::Scalar,
                _ => return None,
            }),
            Ty::OwnerReference => match key {
                "apiVersion" | "kind" | "name" | "uid" | "controller" | "blockOwnerDeletion" => Some(Ty::Scalar),
                _ => None,
            },
            _ => None,
        }
    }

    /// The type of keys that are not declared fields.
    fn elem(&self) -> Ty<'s> {
        match self.of {
            Ty::Node(s, ctx) => {
                let preserve = ctx.preserve || s.preserve_unknown_fields;
                let eff = Ctx { preserve, resource: ctx.resource };
                match &s.additional_properties {
                    Some(AdditionalProperties::Schema(ap)) => Ty::Node(ap, child_ctx(ap, eff)),
                    Some(AdditionalProperties::Bool(true)) => Ty::Deduced,
                    Some(AdditionalProperties::Bool(false)) => Ty::None,
                    None if preserve || (s.properties.is_empty() && !ctx.resource) => Ty::Deduced,
                    None => Ty::None,
                }
            }
            Ty::Deduced => Ty::Deduced,
            Ty::Untyped => Ty::Untyped,
            Ty::StringMap => Ty::Scalar,
            _ => Ty::None,
        }
    }
}

impl<'s> ListTy<'s> {
    /// The default of key field `key` in this list's items, used when an item omits it.
    pub fn key_default(&self, key: &str) -> Option<&'s Value> {
        match self.elem {
            Ty::Node(s, _) => s.properties.get(key).and_then(|p| p.default.as_ref()),
            _ => None,
        }
    }
}

/// The map shape of a type, regardless of any value (what `EnsureNamedFieldsAreMembers` asks).
pub(crate) fn map_shape(ty: Ty<'_>) -> Option<MapTy<'_>> {
    shapes(ty).map
}

/// The list shape of a type, regardless of any value.
pub(crate) fn list_shape(ty: Ty<'_>) -> Option<ListTy<'_>> {
    shapes(ty).list
}

/// Why an item of a list cannot be named, with structured-merge-diff's texts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ItemError {
    /// The list is atomic: its items have no names.
    #[error("invalid indexing of non-associative list")]
    Atomic,
    /// A `null` item of a map list.
    #[error("associative list with keys may not have a null element")]
    NullInMap,
    /// An item of a map list that is not an object.
    #[error("associative list with keys may not have non-map elements")]
    NotMap,
    /// An item of a map list that sets none of the keys, none of which has a default; `keys`
    /// are the key names, Go-quoted and space-separated.
    #[error(
        "associative list with keys has an element that omits all key fields [{keys}] (and doesn't have default \
         values for any key fields)"
    )]
    NoKeys { keys: String },
    /// An object in a set.
    #[error("associative list without keys has an element that's a map type")]
    MapInSet,
    /// A list in a set.
    #[error("not supported: associative list with lists as elements")]
    ListInSet,
    /// A `null` in a set.
    #[error("associative list without keys has an element that's an explicit null")]
    NullInSet,
}

/// The path element naming one item of a set or map list, with structured-merge-diff's
/// errors for items that cannot be named.
pub(crate) fn item_element(list: &ListTy<'_>, item: &Value) -> Result<PathElement, ItemError> {
    match list.rel {
        ListRel::Atomic => Err(ItemError::Atomic),
        ListRel::Map(keys) if !keys.is_empty() => {
            let m = match item {
                Value::Object(m) => m,
                Value::Null => return Err(ItemError::NullInMap),
                _ => return Err(ItemError::NotMap),
            };
            let mut fields = Vec::with_capacity(keys.len());
            for k in keys {
                if let Some(v) = m.get(k) {
                    fields.push((k.clone(), v.clone()));
                } else if let Some(d) = list.key_default(k) {
                    fields.push((k.clone(), d.clone()));
                }
                // A key field that is absent and has no default is left out of the key: the
                // item is then a different item from one that sets it.
            }
            if fields.is_empty() {
                let mut quoted = String::new();
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        quoted.push(' ');
                    }
                    write_go_quoted(k, &mut quoted);
                }
                return Err(ItemError::NoKeys { keys: quoted });
            }
            Ok(PathElement::key(fields))
        }
        _ => match item {
            Value::Object(_) => Err(ItemError::MapInSet),
            Value::Array(_) => Err(ItemError::ListInSet),
            Value::Null => Err(ItemError::NullInSet),
            v => Ok(PathElement::Value(v.clone())),
        },
    }
}
