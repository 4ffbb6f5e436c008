//! Runtime values, and the lazy view of a JSON object through its [`DeclType`].
//!
//! A rule's `self` is a `serde_json::Value` borrowed for the evaluation (`Value<'a>`): lists,
//! maps and objects are views (`&'a` JSON plus the declared type of their contents), and a
//! field, element or map value is converted only when the expression reaches it. Kubernetes'
//! `UnstructuredToVal` (k8s.io/apiserver/pkg/cel/common/values.go) defines the conversion:
//!
//! - object fields are looked up by their escaped CEL name, mapped back to the JSON property;
//!   a field whose value is `null` is absent;
//! - `integer` is `int`, `number` is `double` (JSON integers included), int-or-string is the
//!   `int` or `string` it holds; untyped JSON ([`crate::types::DYN`]) is whatever it holds, its
//!   objects `map(string, dyn)` and its arrays `list(dyn)`;
//! - strings with `format: byte` are base64 `bytes`, `date`/`date-time` are timestamps,
//!   `duration` is a duration in Go syntax;
//! - lists with `x-kubernetes-list-type: set` compare equal regardless of order, `map` lists
//!   compare by key; `+` on them is a union or a keyed merge. The list type travels with the
//!   value, so it is the left operand's that applies, as in Kubernetes.
//!
//! Values built by the expression (literals, `map()`/`filter()` results) are owned and shared
//! behind `Arc`, so that cloning a value (binding it to a comprehension variable) is O(1).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use base64::Engine;
use serde_json::Value as Json;

use crate::opaque::Opaque;
use crate::runtime::EvalError;
use crate::time::{self, Timestamp};
use crate::types::{DeclKind, DeclType, ListType, ObjectType, Type};

/// How deep equality descends into nested values before giving up (JSON input is already
/// bounded by the request decoder; this keeps the recursion bounded whatever the input).
const MAX_EQUALITY_DEPTH: u32 = 256;

/// A string: borrowed from the input or the type names, or owned.
#[derive(Clone, Debug)]
pub enum Str<'a> {
    Borrowed(&'a str),
    Owned(Arc<str>),
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Owned(s) => s,
        }
    }
}

impl From<String> for Str<'_> {
    fn from(s: String) -> Self {
        Str::Owned(s.into())
    }
}

/// A CEL value.
#[derive(Clone, Debug)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(Str<'a>),
    Bytes(Arc<[u8]>),
    Timestamp(Timestamp),
    /// Nanoseconds, as Go's `time.Duration`.
    Duration(i64),
    List(List<'a>),
    Map(Map<'a>),
    /// An object of a schema with properties.
    Object(Object<'a>),
    /// `optional.of(v)` or `optional.none()`.
    Optional(Option<Arc<Value<'a>>>),
    /// A type value (`int`, `type(x)`), by its CEL name.
    Type(Str<'a>),
    /// A value of a Kubernetes library type (IP, CIDR, URL, quantity, semver, named format).
    Opaque(Arc<Opaque>),
}

/// A list: a JSON array seen through its element type, or owned values.
#[derive(Clone, Debug)]
pub struct List<'a> {
    items: Items<'a>,
    /// The list's declared type when it came from the schema (it carries `set`/`map`).
    decl: Option<&'a DeclType>,
}

#[derive(Clone, Debug)]
enum Items<'a> {
    Json(&'a Vec<Json>, &'a DeclType),
    Owned(Arc<Vec<Value<'a>>>),
}

/// A map: a JSON object under `additionalProperties`, or owned entries in insertion order.
#[derive(Clone, Debug)]
pub enum Map<'a> {
    Json(&'a serde_json::Map<String, Json>, &'a DeclType),
    Owned(Arc<Vec<(Value<'a>, Value<'a>)>>),
}

/// A JSON object seen through its object type.
#[derive(Clone, Debug)]
pub struct Object<'a> {
    pub json: &'a serde_json::Map<String, Json>,
    pub ty: &'a ObjectType,
    /// The object's values by field, in the order of `ty.fields`, when the validator looked
    /// them up once for all the rules of a node (see [`Object::with_index`]).
    pub(crate) index: Option<&'a [Option<&'a Json>]>,
}

impl<'a> Value<'a> {
    /// Converts JSON of declared type `decl` (lazily for lists, maps and objects).
    pub fn from_json(json: &'a Json, decl: &'a DeclType) -> Result<Value<'a>, EvalError> {
        let bad = || EvalError::new(format!("invalid value for type {}: {json}", decl.cel_type()));
        Ok(match (&decl.kind, json) {
            (_, Json::Null) => Value::Null,
            (DeclKind::List { .. }, Json::Array(items)) => {
                let DeclKind::List { elem, .. } = &decl.kind else { return Err(bad()) };
                Value::List(List { items: Items::Json(items, elem), decl: Some(decl) })
            }
            (DeclKind::Map { value }, Json::Object(m)) => Value::Map(Map::Json(m, value)),
            (DeclKind::Object(ty), Json::Object(m)) => Value::Object(Object { json: m, ty, index: None }),
            // Untyped JSON (`dyn`): objects are maps and arrays lists of untyped JSON.
            (DeclKind::Scalar(Type::Dyn), Json::Array(items)) => {
                Value::List(List { items: Items::Json(items, &crate::types::DYN), decl: None })
            }
            (DeclKind::Scalar(Type::Dyn), Json::Object(m)) => Value::Map(Map::Json(m, &crate::types::DYN)),
            (DeclKind::Scalar(t), j) => scalar_from_json(t, j).ok_or_else(bad)?,
            _ => return Err(bad()),
        })
    }

    /// An owned list of values.
    pub fn list(items: Vec<Value<'a>>) -> Value<'a> {
        Value::List(List { items: Items::Owned(Arc::new(items)), decl: None })
    }

    pub fn string(s: impl Into<String>) -> Value<'a> {
        Value::String(Str::Owned(s.into().into()))
    }

    /// The CEL type name of the value, as `type(v)` shows it.
    pub fn type_name(&self) -> Str<'a> {
        Str::Borrowed(match self {
            Value::Null => "null_type",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::Timestamp(_) => "google.protobuf.Timestamp",
            Value::Duration(_) => "google.protobuf.Duration",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Object(o) => return Str::Borrowed(o.ty.name.as_str()),
            Value::Optional(_) => "optional_type",
            Value::Type(_) => "type",
            Value::Opaque(o) => o.type_name(),
        })
    }

    /// cel-go's `traits.Sizer` size (code points, bytes, elements), for the cost model; 1 for
    /// values without a size.
    pub fn cost_size(&self) -> u64 {
        match self {
            Value::String(s) => s.chars().count() as u64,
            Value::Bytes(b) => b.len() as u64,
            Value::List(l) => l.len() as u64,
            Value::Map(m) => m.len() as u64,
            Value::Opaque(o) => o.size(),
            _ => 1,
        }
    }

    /// Whether this is the zero value of its type (`optional.ofNonZeroValue`).
    pub fn is_zero(&self) -> bool {
        match self {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Int(i) => *i == 0,
            Value::Uint(u) => *u == 0,
            Value::Double(d) => *d == 0.0,
            Value::String(s) => s.is_empty(),
            Value::Bytes(b) => b.is_empty(),
            Value::Timestamp(t) => t.seconds == 0 && t.nanos == 0,
            Value::Duration(d) => *d == 0,
            Value::List(l) => l.is_empty(),
            Value::Map(m) => m.is_empty(),
            Value::Object(o) => o.ty.fields.values().all(|f| o.json.get(&f.property).is_none_or(Json::is_null)),
            Value::Optional(o) => o.is_none(),
            Value::Type(_) | Value::Opaque(_) => false,
        }
    }
}

fn scalar_from_json<'a>(t: &Type, j: &'a Json) -> Option<Value<'a>> {
    Some(match (t, j) {
        (Type::Bool, Json::Bool(b)) => Value::Bool(*b),
        (Type::Int, Json::Number(n)) => Value::Int(json_int(n)?),
        (Type::Double, Json::Number(n)) => Value::Double(n.as_f64()?),
        (Type::String, Json::String(s)) => Value::String(Str::Borrowed(s)),
        (Type::Bytes, Json::String(s)) => {
            Value::Bytes(base64::engine::general_purpose::STANDARD.decode(s).ok()?.into())
        }
        (Type::Timestamp, Json::String(s)) => Value::Timestamp(time::parse_rfc3339(s).or_else(|| time::parse_date(s))?),
        (Type::Duration, Json::String(s)) => Value::Duration(time::parse_duration(s).ok()?),
        // int-or-string (and anything else untyped): whatever the JSON holds.
        (Type::Dyn, Json::String(s)) => Value::String(Str::Borrowed(s)),
        (Type::Dyn, Json::Number(n)) => match json_int(n) {
            Some(i) => Value::Int(i),
            None => Value::Double(n.as_f64()?),
        },
        (Type::Dyn, Json::Bool(b)) => Value::Bool(*b),
        _ => return None,
    })
}

/// A JSON number as an int64 (integral floats included, as Go's unstructured decoding).
pub(crate) fn json_int(n: &serde_json::Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)).then_some(f as i64)
}

impl<'a> List<'a> {
    pub fn len(&self) -> usize {
        match &self.items {
            Items::Json(items, _) => items.len(),
            Items::Owned(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i`, which must be in bounds.
    pub fn get(&self, i: usize) -> Result<Value<'a>, EvalError> {
        match &self.items {
            Items::Json(items, elem) => match items.get(i) {
                Some(j) => Value::from_json(j, elem),
                None => Err(EvalError::new(format!("index out of bounds: {i}"))),
            },
            Items::Owned(v) => v.get(i).cloned().ok_or_else(|| EvalError::new(format!("index out of bounds: {i}"))),
        }
    }

    /// The JSON array and the declared type of its elements, when the list is a view of one.
    pub(crate) fn json_view(&self) -> Option<(&'a Vec<Json>, &'a DeclType)> {
        match &self.items {
            Items::Json(items, elem) => Some((items, elem)),
            Items::Owned(_) => None,
        }
    }

    /// The `x-kubernetes-list-type` of a list from the schema (atomic for others).
    pub fn list_type(&self) -> ListType {
        match self.decl.map(|d| &d.kind) {
            Some(DeclKind::List { list_type, .. }) => *list_type,
            _ => ListType::Atomic,
        }
    }

    fn map_keys(&self) -> &'a [String] {
        match self.decl.map(|d| &d.kind) {
            Some(DeclKind::List { map_keys, .. }) => map_keys,
            _ => &[],
        }
    }

    /// All elements, converted.
    pub fn to_vec(&self) -> Result<Vec<Value<'a>>, EvalError> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }

    /// Appends `v`, copying only when the list is shared or a JSON view (the comprehension
    /// accumulator of `map()`/`filter()` is unshared, so building it is linear).
    pub fn push(self, v: Value<'a>) -> Result<List<'a>, EvalError> {
        let mut items = match self.items {
            Items::Owned(a) => a,
            Items::Json(..) => Arc::new(self.to_vec()?),
        };
        Arc::make_mut(&mut items).push(v);
        Ok(List { items: Items::Owned(items), decl: self.decl })
    }

    /// `self + other` with the left list's semantics: concatenation, set union, or map-list
    /// merge.
    pub fn concat(&self, other: &List<'a>) -> Result<List<'a>, EvalError> {
        let mut out = self.to_vec()?;
        match self.list_type() {
            ListType::Atomic => {
                out.extend(other.to_vec()?);
                return Ok(List { items: Items::Owned(Arc::new(out)), decl: None });
            }
            ListType::Set => {
                let lhs_len = out.len();
                for i in 0..other.len() {
                    let v = other.get(i)?;
                    let mut found = false;
                    for existing in &out[..lhs_len] {
                        if equals(existing, &v)? {
                            found = true;
                            break;
                        }
                    }
                    if !found {
                        out.push(v);
                    }
                }
            }
            ListType::Map => {
                let keys = self.map_keys();
                let mut out_keys: Vec<Vec<Option<Value<'a>>>> =
                    out.iter().map(|v| map_list_key(v, keys)).collect::<Result<_, _>>()?;
                for i in 0..other.len() {
                    let v = other.get(i)?;
                    let k = map_list_key(&v, keys)?;
                    let mut at = None;
                    for (j, ek) in out_keys.iter().enumerate() {
                        if keys_equal(ek, &k)? {
                            at = Some(j);
                            break;
                        }
                    }
                    match at {
                        Some(j) => out[j] = v,
                        None => {
                            out.push(v);
                            out_keys.push(k);
                        }
                    }
                }
            }
        }
        Ok(List { items: Items::Owned(Arc::new(out)), decl: self.decl })
    }
}

/// The key of a map-list element: the values of its key fields (by property name).
fn map_list_key<'a>(v: &Value<'a>, keys: &[String]) -> Result<Vec<Option<Value<'a>>>, EvalError> {
    keys.iter()
        .map(|k| match v {
            Value::Object(o) => o.property(k),
            Value::Map(m) => m.get(&Value::String(Str::Owned(k.as_str().into()))),
            _ => Ok(None),
        })
        .collect()
}

fn keys_equal(a: &[Option<Value<'_>>], b: &[Option<Value<'_>>]) -> Result<bool, EvalError> {
    for (x, y) in a.iter().zip(b) {
        let same = match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y)?,
            _ => false,
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

impl<'a> Map<'a> {
    pub fn len(&self) -> usize {
        match self {
            Map::Json(m, _) => m.len(),
            Map::Owned(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value under `key`, if present.
    pub fn get(&self, key: &Value<'_>) -> Result<Option<Value<'a>>, EvalError> {
        match self {
            Map::Json(m, decl) => match key {
                Value::String(k) => m.get(&**k).map(|j| Value::from_json(j, decl)).transpose(),
                _ => Ok(None),
            },
            Map::Owned(entries) => {
                for (k, v) in entries.iter() {
                    if equals(k, key)? {
                        return Ok(Some(v.clone()));
                    }
                }
                Ok(None)
            }
        }
    }

    /// The keys, in order.
    pub fn keys(&self) -> Vec<Value<'a>> {
        match self {
            Map::Json(m, _) => m.keys().map(|k| Value::String(Str::Borrowed(k))).collect(),
            Map::Owned(entries) => entries.iter().map(|(k, _)| k.clone()).collect(),
        }
    }
}

/// A map key as cel-go hashes it: bools, strings, and integers by value (`1` and `1u` are the
/// same key). Used to find duplicates in constant time while a map is built.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum MapKey {
    Bool(bool),
    Integer(i128),
    String(String),
}

impl MapKey {
    /// The key `v` stands for, or cel-go's error for a type that cannot be a map key.
    pub(crate) fn of(v: &Value<'_>) -> Result<MapKey, EvalError> {
        Ok(match v {
            Value::Bool(b) => MapKey::Bool(*b),
            Value::Int(i) => MapKey::Integer(i128::from(*i)),
            Value::Uint(u) => MapKey::Integer(i128::from(*u)),
            Value::String(s) => MapKey::String(s.to_string()),
            other => return Err(EvalError::new(format!("unsupported key type: {}", &*other.type_name()))),
        })
    }
}

impl<'a> Map<'a> {
    /// The entries as an owned vector (a JSON view is converted).
    fn into_owned_entries(self) -> Result<Arc<Vec<(Value<'a>, Value<'a>)>>, EvalError> {
        match self {
            Map::Owned(entries) => Ok(entries),
            Map::Json(m, decl) => m
                .iter()
                .map(|(k, v)| Ok((Value::String(Str::Borrowed(k)), Value::from_json(v, decl)?)))
                .collect::<Result<Vec<_>, EvalError>>()
                .map(Arc::new),
        }
    }

    /// cel-go's `InsertMapKeyValue`: the map with `key: value` added, or an error when the key
    /// is already present. `seen` holds the keys of this map when the caller tracks them (the
    /// accumulator of `transformMap`, which is unshared and so grows in place); without it the
    /// keys are compared one by one.
    pub(crate) fn insert(
        self,
        key: Value<'a>,
        value: Value<'a>,
        seen: Option<&mut std::collections::HashSet<MapKey>>,
    ) -> Result<Map<'a>, EvalError> {
        let normalized = MapKey::of(&key)?;
        let duplicate = match seen {
            Some(seen) => !seen.insert(normalized),
            None => self.get(&key)?.is_some(),
        };
        if duplicate {
            return Err(EvalError::new(format!("insert failed: key {} already exists", go_key(&key))));
        }
        let mut entries = self.into_owned_entries()?;
        Arc::make_mut(&mut entries).push((key, value));
        Ok(Map::Owned(entries))
    }

    /// The entries in order, for a two-variable comprehension: the JSON of a view is converted
    /// only when the loop reaches it.
    pub(crate) fn entry_refs(&self) -> MapEntries<'a, '_> {
        match self {
            Map::Json(m, decl) => MapEntries::Json(m.iter().collect(), decl),
            Map::Owned(entries) => MapEntries::Owned(entries),
        }
    }
}

/// The entries of a map, indexable (see [`Map::entry_refs`]).
pub(crate) enum MapEntries<'a, 'm> {
    Json(Vec<(&'a String, &'a Json)>, &'a DeclType),
    Owned(&'m [(Value<'a>, Value<'a>)]),
}

impl<'a> MapEntries<'a, '_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            MapEntries::Json(e, _) => e.len(),
            MapEntries::Owned(e) => e.len(),
        }
    }

    /// Entry `i` as a key and a value.
    pub(crate) fn get(&self, i: usize) -> Result<(Value<'a>, Value<'a>), EvalError> {
        let out_of_bounds = || EvalError::new(format!("index out of bounds: {i}"));
        match self {
            MapEntries::Json(e, decl) => {
                let (k, v) = e.get(i).ok_or_else(out_of_bounds)?;
                Ok((Value::String(Str::Borrowed(k)), Value::from_json(v, decl)?))
            }
            MapEntries::Owned(e) => e.get(i).cloned().ok_or_else(out_of_bounds),
        }
    }
}

/// A map key as Go's `%v` prints it in cel-go's errors (no quotes, no `u` suffix).
fn go_key(v: &Value<'_>) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Uint(u) => u.to_string(),
        other => other.to_string(),
    }
}

/// Looks up the value of every field of `ty` in `json` at once: a merge of the object's entries
/// with `by_property` (the field positions in `ty.fields`, ordered by property name), which
/// costs about as much as two or three separate lookups. `None` when `json` does not iterate
/// in key order.
pub(crate) fn field_index<'j>(
    json: &'j serde_json::Map<String, Json>,
    ty: &ObjectType,
    by_property: &[(String, usize)],
    sorted: bool,
) -> Option<Vec<Option<&'j Json>>> {
    if !sorted {
        return None;
    }
    let mut index = vec![None; ty.fields.len()];
    let mut entries = json.iter().peekable();
    for (property, slot) in by_property {
        while let Some((k, v)) = entries.peek() {
            match k.as_str().cmp(property) {
                Ordering::Less => {
                    entries.next();
                }
                Ordering::Equal => {
                    if let Some(s) = index.get_mut(*slot) {
                        *s = Some(*v);
                    }
                    entries.next();
                    break;
                }
                Ordering::Greater => break,
            }
        }
    }
    Some(index)
}

impl<'a> Object<'a> {
    /// This object with its values by field (from [`field_index`] for `self.ty`).
    pub(crate) fn with_index(self, index: &'a [Option<&'a Json>]) -> Object<'a> {
        Object { index: (index.len() == self.ty.fields.len()).then_some(index), ..self }
    }

    /// The value at position `slot` of `ty.fields`, when the object has an index.
    pub(crate) fn indexed(&self, slot: usize) -> Option<Option<&'a Json>> {
        self.index.and_then(|ix| ix.get(slot).copied())
    }

    /// Field `name` (escaped CEL name); `None` when absent or null.
    pub fn field(&self, name: &str) -> Result<Option<Value<'a>>, EvalError> {
        let Some(f) = self.ty.fields.get(name) else {
            return Ok(None);
        };
        match self.json.get(&f.property) {
            None | Some(Json::Null) => Ok(None),
            Some(j) => Value::from_json(j, &f.ty).map(Some),
        }
    }

    /// Field by JSON property name.
    fn property(&self, property: &str) -> Result<Option<Value<'a>>, EvalError> {
        match self.ty.fields.values().find(|f| f.property == property) {
            Some(f) => self.field(&f.name),
            None => Ok(None),
        }
    }
}

/// CEL equality (cel-go's heterogeneous equality): numbers compare by value across int, uint
/// and double; values of different types are unequal; set and map lists on the left compare
/// without regard to order.
pub fn equals(a: &Value<'_>, b: &Value<'_>) -> Result<bool, EvalError> {
    equals_at(a, b, 0)
}

fn equals_at(a: &Value<'_>, b: &Value<'_>, depth: u32) -> Result<bool, EvalError> {
    if depth > MAX_EQUALITY_DEPTH {
        return Err(EvalError::new("value nesting too deep for equality"));
    }
    Ok(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => **x == **y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Timestamp(x), Value::Timestamp(y)) => x == y,
        (Value::Duration(x), Value::Duration(y)) => x == y,
        (Value::Type(x), Value::Type(y)) => **x == **y,
        (Value::Opaque(x), Value::Opaque(y)) => x == y,
        (Value::Int(_) | Value::Uint(_) | Value::Double(_), _) => compare_numbers(a, b) == Some(Ordering::Equal),
        (Value::List(x), Value::List(y)) => list_equals(x, y, depth)?,
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for k in x.keys() {
                let (Some(xv), Some(yv)) = (x.get(&k)?, y.get(&k)?) else {
                    return Ok(false);
                };
                if !equals_at(&xv, &yv, depth + 1)? {
                    return Ok(false);
                }
            }
            true
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.ty.name != y.ty.name {
                return Ok(false);
            }
            for name in x.ty.fields.keys() {
                match (x.field(name)?, y.field(name)?) {
                    (None, None) => {}
                    (Some(xv), Some(yv)) if equals_at(&xv, &yv, depth + 1)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        (Value::Optional(x), Value::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals_at(x, y, depth + 1)?,
            _ => false,
        },
        _ => false,
    })
}

fn list_equals(x: &List<'_>, y: &List<'_>, depth: u32) -> Result<bool, EvalError> {
    if x.len() != y.len() {
        return Ok(false);
    }
    match x.list_type() {
        ListType::Atomic => {
            for i in 0..x.len() {
                if !equals_at(&x.get(i)?, &y.get(i)?, depth + 1)? {
                    return Ok(false);
                }
            }
        }
        // Kubernetes' unstructuredSetList.Equal: same size and every element of the left in
        // the right.
        ListType::Set => {
            let ys = y.to_vec()?;
            for i in 0..x.len() {
                let xv = x.get(i)?;
                let mut found = false;
                for yv in &ys {
                    if equals_at(&xv, yv, depth + 1)? {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return Ok(false);
                }
            }
        }
        // unstructuredMapList.Equal: every element of the right has an equal element with its
        // key on the left.
        ListType::Map => {
            let keys = x.map_keys();
            let xs = x.to_vec()?;
            let xkeys: Vec<_> = xs.iter().map(|v| map_list_key(v, keys)).collect::<Result<_, _>>()?;
            for j in 0..y.len() {
                let yv = y.get(j)?;
                let yk = map_list_key(&yv, keys)?;
                let mut matched = false;
                for (i, xk) in xkeys.iter().enumerate() {
                    if keys_equal(xk, &yk)? {
                        matched = equals_at(&xs[i], &yv, depth + 1)?;
                        break;
                    }
                }
                if !matched {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Orders two numbers of any numeric types exactly; `None` when either is NaN or a value is
/// not a number.
pub fn compare_numbers(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Uint(x), Value::Uint(y)) => Some(x.cmp(y)),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Int(x), Value::Uint(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Uint(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Int(x), Value::Double(y)) => cmp_int_double(i128::from(*x), *y),
        (Value::Uint(x), Value::Double(y)) => cmp_int_double(i128::from(*x), *y),
        (Value::Double(x), Value::Int(y)) => cmp_int_double(i128::from(*y), *x).map(Ordering::reverse),
        (Value::Double(x), Value::Uint(y)) => cmp_int_double(i128::from(*y), *x).map(Ordering::reverse),
        _ => None,
    }
}

/// cel-go's `compareIntDouble`/`compareUintDouble`: a double beyond the integer type's range
/// orders outside it; otherwise the integer is converted to a double (lossily, as in Go).
fn cmp_int_double(i: i128, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    let (lo, hi) = if i > i128::from(i64::MAX) {
        (0.0, 1.844_674_407_370_955_2e19)
    } else {
        (-9.223_372_036_854_776e18, 9.223_372_036_854_776e18)
    };
    if d < lo {
        return Some(Ordering::Greater);
    }
    if d > hi {
        return Some(Ordering::Less);
    }
    (i as f64).partial_cmp(&d)
}

/// The ordering of two values of comparable types (`<` and friends); `None` when they are
/// not comparable or a NaN is involved.
pub fn compare(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::String(x), Value::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        _ => compare_numbers(a, b),
    }
}

/// Whether two values can be ordered at all (a NaN makes comparisons false, an incomparable
/// pair is a "no such overload" error).
pub fn comparable(a: &Value<'_>, b: &Value<'_>) -> bool {
    let numeric = |v: &Value<'_>| matches!(v, Value::Int(_) | Value::Uint(_) | Value::Double(_));
    let ordered = |v: &Value<'_>| {
        matches!(v, Value::Bool(_) | Value::String(_) | Value::Bytes(_) | Value::Timestamp(_) | Value::Duration(_))
    };
    (numeric(a) && numeric(b)) || (ordered(a) && std::mem::discriminant(a) == std::mem::discriminant(b))
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Uint(u) => write!(f, "{u}u"),
            Value::Double(d) => write!(f, "{d}"),
            Value::String(s) => write!(f, "{:?}", &**s),
            Value::Bytes(b) => write!(f, "b{:?}", String::from_utf8_lossy(b)),
            Value::Timestamp(t) => write!(f, "timestamp({:?})", time::format_rfc3339(*t)),
            Value::Duration(d) => write!(f, "duration({:?})", time::format_duration(*d)),
            Value::List(l) => write!(f, "list(size {})", l.len()),
            Value::Map(m) => write!(f, "map(size {})", m.len()),
            Value::Object(o) => write!(f, "{}{{...}}", o.ty.name),
            Value::Optional(None) => f.write_str("optional.none()"),
            Value::Optional(Some(v)) => write!(f, "optional.of({v})"),
            Value::Type(t) => f.write_str(t),
            Value::Opaque(o) => write!(f, "{o}"),
        }
    }
}
