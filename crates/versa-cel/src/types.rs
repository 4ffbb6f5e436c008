//! The CEL type model and the OpenAPI → CEL type mapping.
//!
//! [`Type`] is what the checker reasons with: cel-go's types, printed as cel-go's
//! `FormatCELType` prints them (`list(int)`, `map(string, int)`, `google.protobuf.Timestamp`,
//! `optional_type(string)`, `type(int)`, object types by name). [`DeclType`] is Kubernetes'
//! `DeclType` (k8s.io/apiserver/pkg/cel/types.go): a type derived from a structural schema,
//! carrying what the cost estimator will need — the maximum number of elements (string length
//! in bytes, list items, map properties) and the minimum serialized size — and the list type
//! (`set`/`map`) that changes equality and `+` on lists.
//!
//! [`DeclType::from_structural`] is Kubernetes' `SchemaDeclType` (common/schemas.go) combined
//! with `MaybeAssignTypeName`: objects with properties become object types named after their
//! path from the rule's `self` (`selfType`, `selfType.spec`, `selfType.spec.items.@idx`, ...),
//! objects with `additionalProperties` become `map(string, V)`, int-or-string becomes `dyn`, and
//! schemas with nothing CEL can see (untyped preserve-unknown-fields data) have no type at all.
//! Property names are escaped with [`escape_property_name`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use versa_schema::Structural;
use versa_schema::structural::Type as SchemaType;

/// A CEL type as the checker sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    /// The type of an expression that failed to check; assignable to everything so that one
    /// mistake produces one error.
    Error,
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// A schema object with properties.
    Object(Arc<ObjectType>),
    /// `optional_type(T)`.
    Optional(Box<Type>),
    /// `type(T)`: the type of a type value such as `int` or `type(x)`.
    TypeOf(Box<Type>),
    /// A type parameter of an overload or a type variable of the checker.
    Param(String),
    /// A type of the Kubernetes libraries, by its CEL name: `net.IP`, `net.CIDR` (opaque types)
    /// and `kubernetes.URL`, `kubernetes.Quantity`, `kubernetes.Semver`,
    /// `kubernetes.NamedFormat` (object types without fields).
    Opaque(&'static str),
}

impl Type {
    pub fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    pub fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    pub fn type_of(t: Type) -> Type {
        Type::TypeOf(Box::new(t))
    }

    pub fn param(name: &str) -> Type {
        Type::Param(name.to_owned())
    }

    /// The type's parameters, in order (list element; map key and value; ...).
    pub fn parameters(&self) -> Vec<&Type> {
        match self {
            Type::List(e) | Type::Optional(e) | Type::TypeOf(e) => vec![e],
            Type::Map(k, v) => vec![k, v],
            _ => Vec::new(),
        }
    }

    /// Whether two types are the same type (cel-go `IsExactType`).
    pub fn is_exact(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::Object(a), Type::Object(b)) => a.name == b.name,
            (Type::List(a), Type::List(b))
            | (Type::Optional(a), Type::Optional(b))
            | (Type::TypeOf(a), Type::TypeOf(b)) => a.is_exact(b),
            (Type::Map(ak, av), Type::Map(bk, bv)) => ak.is_exact(bk) && av.is_exact(bv),
            (Type::Param(a), Type::Param(b)) => a == b,
            (Type::Opaque(a), Type::Opaque(b)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null_type"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::Error => f.write_str("*error*"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(o) => f.write_str(&o.name),
            Type::Optional(t) => write!(f, "optional_type({t})"),
            Type::TypeOf(t) => write!(f, "type({t})"),
            Type::Param(p) => f.write_str(p),
            Type::Opaque(name) => f.write_str(name),
        }
    }
}

/// An object type derived from a schema with properties.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectType {
    /// The type name, e.g. `selfType.spec`.
    pub name: String,
    /// Fields by escaped name.
    pub fields: BTreeMap<String, DeclField>,
}

/// A field of an object type.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclField {
    /// The escaped name used in expressions (`x__dash__prop`).
    pub name: String,
    /// The property name in the schema (`x-prop`).
    pub property: String,
    pub ty: DeclType,
    /// Listed in the schema's `required`.
    pub required: bool,
    /// The schema's `enum`, for the cost estimator.
    pub enum_values: Vec<Value>,
    /// The schema's `default`.
    pub default: Option<Value>,
}

/// `x-kubernetes-list-type`, which changes list equality and concatenation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListType {
    #[default]
    Atomic,
    Set,
    Map,
}

/// The kind of a [`DeclType`].
#[derive(Clone, Debug, PartialEq)]
pub enum DeclKind {
    /// A type without structure below it: bool, int, double, string, bytes, timestamp,
    /// duration, dyn.
    Scalar(Type),
    List {
        elem: Box<DeclType>,
        list_type: ListType,
        map_keys: Vec<String>,
    },
    /// `map(string, value)`.
    Map {
        value: Box<DeclType>,
    },
    Object(Arc<ObjectType>),
}

/// A CEL type derived from a schema, with the size facts the cost estimator needs.
#[derive(Clone, Debug, PartialEq)]
pub struct DeclType {
    pub kind: DeclKind,
    /// The most elements a value can have: bytes of a string or bytes value, items of a list,
    /// properties of a map. Derived from `maxLength`/`maxItems`/`maxProperties`, or estimated
    /// from the request size limit when absent. `None` for types without elements.
    pub max_elements: Option<i64>,
    /// The smallest size in bytes of a value of this type serialized as JSON.
    pub min_serialized_size: i64,
    /// The largest value of an `integer` (its `maximum`, less one when exclusive). Kubernetes'
    /// estimator does not use it; versa's estimate for conversion rules bounds `lists.range(n)`
    /// by it ([`crate::cost::estimate_conversion_cost`]).
    pub int_maximum: Option<i64>,
}

/// The declared type of untyped JSON: `dyn`. A JSON object seen through it is a
/// `map(string, dyn)` and an array a `list(dyn)`, element by element: the view cel-go has of the
/// unstructured objects Kubernetes binds to admission expressions (`object`, `oldObject`,
/// `params`, `request.options`).
pub static DYN: DeclType =
    DeclType { kind: DeclKind::Scalar(Type::Dyn), max_elements: None, min_serialized_size: 1, int_maximum: None };

/// The request size limit the estimates assume (`DefaultMaxRequestSizeBytes`, 3 MiB).
pub const MAX_REQUEST_SIZE_BYTES: i64 = 3 * 1024 * 1024;
const MAX_DURATION_SIZE_JSON: i64 = 32;
const MAX_DATETIME_SIZE_JSON: i64 = 32;
const MIN_DURATION_SIZE_JSON: i64 = 3;
const JSON_DATE_SIZE: i64 = 12;
const MIN_DATETIME_SIZE_JSON: i64 = 21;
const MIN_STRING_SIZE: i64 = 2;
const MIN_BOOL_SIZE: i64 = 4;
const MIN_NUMBER_SIZE: i64 = 1;

/// The name Kubernetes gives the type of a rule's `self` when it is an object (apiextensions
/// uses `selfType` plus a nanosecond counter; the suffix only keeps names unique per
/// environment, which versa does per compile).
pub const SELF_TYPE_NAME: &str = "selfType";

impl DeclType {
    fn scalar(t: Type, min_size: i64, max_elements: Option<i64>) -> DeclType {
        DeclType { kind: DeclKind::Scalar(t), max_elements, min_serialized_size: min_size, int_maximum: None }
    }

    /// The CEL type of `self` for a rule on schema node `s`, named [`SELF_TYPE_NAME`].
    /// `is_resource_root` is true for the root of a custom resource and for
    /// `x-kubernetes-embedded-resource` nodes: their `apiVersion`, `kind`, `metadata.name` and
    /// `metadata.generateName` are always visible. `None` when the node has no CEL type.
    pub fn from_structural(s: &Structural, is_resource_root: bool) -> Option<DeclType> {
        DeclType::from_structural_named(s, is_resource_root, SELF_TYPE_NAME)
    }

    /// [`DeclType::from_structural`] with an explicit name for the root object type.
    pub fn from_structural_named(s: &Structural, is_resource_root: bool, name: &str) -> Option<DeclType> {
        // An int-or-string is as long as its maxLength allows (in bytes, 4 a code point; honoured
        // since Kubernetes 1.34), else as the largest string a request can hold.
        if s.int_or_string {
            let max_length = s.value_validation.as_deref().and_then(|v| v.max_length);
            let max = max_length.map_or(MAX_REQUEST_SIZE_BYTES - 2, |m| m.max(0).saturating_mul(4));
            return Some(DeclType::scalar(Type::Dyn, 1, Some(max)));
        }
        let with_meta;
        let s = if is_resource_root {
            with_meta = with_type_and_object_meta(s);
            with_meta.as_ref().unwrap_or(s)
        } else {
            s
        };
        let vv = s.value_validation.as_deref();
        match s.type_ {
            SchemaType::Array => {
                let items = s.items.as_deref()?;
                let elem = DeclType::from_structural_named(items, items.embedded_resource, &format!("{name}.@idx"))?;
                let max_items = match vv.and_then(|v| v.max_items) {
                    Some(m) => m.max(0),
                    None => (MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_serialized_size + 1),
                };
                let list_type = match s.list_type.as_deref() {
                    Some("set") => ListType::Set,
                    Some("map") => ListType::Map,
                    _ => ListType::Atomic,
                };
                Some(DeclType {
                    kind: DeclKind::List { elem: Box::new(elem), list_type, map_keys: s.list_map_keys.clone() },
                    max_elements: Some(max_items),
                    min_serialized_size: 2,
                    int_maximum: None,
                })
            }
            SchemaType::Object => {
                if let Some(ap) = s.additional_properties.as_ref().and_then(|ap| ap.schema()) {
                    let value = DeclType::from_structural_named(ap, ap.embedded_resource, &format!("{name}.@elem"))?;
                    let max_props = match vv.and_then(|v| v.max_properties) {
                        Some(m) => m.max(0),
                        None => (MAX_REQUEST_SIZE_BYTES - 2) / (value.min_serialized_size + 6),
                    };
                    return Some(DeclType {
                        kind: DeclKind::Map { value: Box::new(value) },
                        max_elements: Some(max_props),
                        min_serialized_size: 2,
                        int_maximum: None,
                    });
                }
                let required: &[String] = vv.map_or(&[], |v| v.required.as_slice());
                let mut fields = BTreeMap::new();
                let mut min_size = 2;
                for (prop_name, prop) in &s.properties {
                    let Some(escaped) = escape_property_name(prop_name) else {
                        continue;
                    };
                    let Some(ty) =
                        DeclType::from_structural_named(prop, prop.embedded_resource, &format!("{name}.{escaped}"))
                    else {
                        continue;
                    };
                    let is_required = required.iter().any(|r| r == prop_name);
                    if is_required && prop.default.is_none() {
                        min_size += prop_name.len() as i64 + ty.min_serialized_size + 4;
                    }
                    let enum_values = prop.value_validation.as_deref().map(|v| v.enum_.clone()).unwrap_or_default();
                    fields.insert(
                        escaped.clone(),
                        DeclField {
                            name: escaped,
                            property: prop_name.clone(),
                            ty,
                            required: is_required,
                            enum_values,
                            default: prop.default.clone(),
                        },
                    );
                }
                Some(DeclType {
                    kind: DeclKind::Object(Arc::new(ObjectType { name: name.to_owned(), fields })),
                    max_elements: None,
                    min_serialized_size: min_size,
                    int_maximum: None,
                })
            }
            SchemaType::String => {
                let format = vv.map_or("", |v| v.format.as_str());
                let max_length = vv.and_then(|v| v.max_length);
                let estimate = match format {
                    "duration" => MAX_DURATION_SIZE_JSON,
                    "date" => JSON_DATE_SIZE,
                    "date-time" => MAX_DATETIME_SIZE_JSON,
                    _ => MAX_REQUEST_SIZE_BYTES - 2,
                };
                Some(match format {
                    "byte" => {
                        DeclType::scalar(Type::Bytes, MIN_STRING_SIZE, Some(max_length.map_or(estimate, |m| m.max(0))))
                    }
                    "duration" => DeclType::scalar(Type::Duration, MIN_DURATION_SIZE_JSON, Some(estimate)),
                    "date" => DeclType::scalar(Type::Timestamp, JSON_DATE_SIZE, Some(estimate)),
                    "date-time" => DeclType::scalar(Type::Timestamp, MIN_DATETIME_SIZE_JSON, Some(estimate)),
                    _ => {
                        // maxLength counts code points; a code point is at most 4 bytes.
                        let enum_values = vv.map_or(&[][..], |v| v.enum_.as_slice());
                        let max = match max_length {
                            Some(m) => m.max(0) * 4,
                            None if !enum_values.is_empty() => {
                                enum_values.iter().filter_map(Value::as_str).map(|e| e.len() as i64).max().unwrap_or(0)
                            }
                            None => estimate,
                        };
                        DeclType::scalar(Type::String, MIN_STRING_SIZE, Some(max))
                    }
                })
            }
            SchemaType::Boolean => Some(DeclType::scalar(Type::Bool, MIN_BOOL_SIZE, None)),
            SchemaType::Number => Some(DeclType::scalar(Type::Double, MIN_NUMBER_SIZE, None)),
            SchemaType::Integer => {
                let mut t = DeclType::scalar(Type::Int, MIN_NUMBER_SIZE, None);
                t.int_maximum = vv.and_then(|v| {
                    let max = v.maximum?.floor();
                    let max = if v.exclusive_maximum && max == v.maximum? { max - 1.0 } else { max };
                    (max.is_finite() && max.abs() < 9.0e18).then_some(max as i64)
                });
                Some(t)
            }
            SchemaType::None | SchemaType::Other => None,
        }
    }

    /// The CEL type the checker uses for values of this declared type.
    pub fn cel_type(&self) -> Type {
        match &self.kind {
            DeclKind::Scalar(t) => t.clone(),
            DeclKind::List { elem, .. } => Type::list(elem.cel_type()),
            DeclKind::Map { value } => Type::map(Type::String, value.cel_type()),
            DeclKind::Object(o) => Type::Object(o.clone()),
        }
    }
}

/// Kubernetes' `WithTypeAndObjectMeta`: unless the schema already declares `kind`,
/// `apiVersion`, `metadata.name` and `metadata.generateName` as strings, a copy declaring
/// them, with `metadata` reduced to exactly `name` and `generateName`.
fn with_type_and_object_meta(s: &Structural) -> Option<Structural> {
    let is_string = |p: Option<&Structural>| p.is_some_and(|p| p.type_ == SchemaType::String);
    let meta = s.properties.get("metadata");
    let complete = is_string(s.properties.get("kind"))
        && is_string(s.properties.get("apiVersion"))
        && meta.is_some_and(|m| {
            m.type_ == SchemaType::Object
                && is_string(m.properties.get("name"))
                && is_string(m.properties.get("generateName"))
        });
    if complete {
        return None;
    }
    let string = Structural { type_name: "string".into(), type_: SchemaType::String, ..Structural::default() };
    let mut out = s.clone();
    out.properties.insert("kind".into(), string.clone());
    out.properties.insert("apiVersion".into(), string.clone());
    let mut metadata = Structural { type_name: "object".into(), type_: SchemaType::Object, ..Structural::default() };
    metadata.properties.insert("name".into(), string.clone());
    metadata.properties.insert("generateName".into(), string);
    out.properties.insert("metadata".into(), metadata);
    Some(out)
}

/// CEL's reserved words: a property named exactly like one is accessed as `__word__`, and no
/// variable may be named like one.
pub const CEL_RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The name under which property `name` is visible in CEL (Kubernetes' `Escape`,
/// k8s.io/apiserver/pkg/cel/escaping.go), or `None` when it is not accessible: empty names,
/// names starting with a digit, and names with characters outside `[a-zA-Z0-9_.-/]`.
///
/// A reserved word becomes `__word__`; otherwise, scanning left to right, `__` becomes
/// `__underscores__`, `.` `__dot__`, `-` `__dash__` and `/` `__slash__`.
pub fn escape_property_name(name: &str) -> Option<String> {
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    if CEL_RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let bytes = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'_' && bytes.get(i + 1) == Some(&b'_') {
            out.push_str("__underscores__");
            i += 2;
            continue;
        }
        match c {
            b'.' => out.push_str("__dot__"),
            b'-' => out.push_str("__dash__"),
            b'/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == b'_' => out.push(c as char),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}

/// The inverse of [`escape_property_name`] (Kubernetes' `Unescape`), for error messages and
/// the evaluator's field lookup.
pub fn unescape_property_name(escaped: &str) -> String {
    if let Some(inner) = escaped.strip_prefix("__").and_then(|s| s.strip_suffix("__"))
        && CEL_RESERVED.contains(&inner)
    {
        return inner.to_owned();
    }
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while !rest.is_empty() {
        let replaced = [("__underscores__", "__"), ("__dot__", "."), ("__dash__", "-"), ("__slash__", "/")]
            .iter()
            .find_map(|(from, to)| rest.strip_prefix(from).map(|r| (r, *to)));
        match replaced {
            Some((r, to)) => {
                out.push_str(to);
                rest = r;
            }
            None => {
                let mut chars = rest.chars();
                if let Some(c) = chars.next() {
                    out.push(c);
                }
                rest = chars.as_str();
            }
        }
    }
    out
}
