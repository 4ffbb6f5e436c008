//! Value validation of a JSON value against a structural schema, with kube-openapi's messages
//! mapped to field errors as kube-apiserver maps them.
//!
//! kube-apiserver validates a custom resource with kube-openapi's `SchemaValidator` and turns
//! the result into field errors (`kubeOpenAPIResultToFieldErrors`). This module reproduces both
//! steps in one walk: every keyword, every message template, the bad value each error carries,
//! the path naming (`spec.list[0]`, `spec.map.key`) and the order in which errors come out.
//! The order follows kube-openapi's validator chain for each node — type, `allOf`/`anyOf`/
//! `oneOf`/`not`, string, format, number, array, enum, object — and, inside an object,
//! `additionalProperties`, then `properties`, then `required`. Where Go iterates a map (and so
//! has no stable order) we go by sorted key.
//!
//! `anyOf` and `oneOf` report the errors of the branch kube-openapi considers "closest", which it
//! picks by a count of the checks that ran and passed (`Result.MatchCount`). The count is
//! reproduced exactly (see [`Walker::value`]) because it decides which errors users see.
//!
//! Performance: the walk borrows the value and the schema; paths are a linked list of stack
//! frames rendered only when an error is reported, so a valid object costs no allocation.
//! Patterns are compiled when the schema is lowered, never here.
//!
//! Known deliberate deviations from Go are listed at the functions that carry them
//! (integer `multipleOf` with a factor below one; nothing else observable).

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::field::{At, BadValue, Error, ErrorList, ErrorType, Path, go_float, go_json, go_quote};
use crate::structural::{
    AdditionalProperties, NestedAdditionalProperties, NestedValueValidation, Structural, Type, ValueValidation,
    with_props,
};

/// Validates `value` (a whole object, paths from the root) against `schema`.
pub fn validate(schema: &Structural, value: &Value) -> ErrorList {
    validate_at(schema, value, &Path::none())
}

/// Validates `value` found at `path` against `schema`.
///
/// `path` plays the part of the `fldPath` argument of Kubernetes' `ValidateCustomResource`:
/// field errors are reported under it, and errors that kube-openapi does not attach to a field
/// (the `allOf`/`anyOf`/`oneOf`/`not` summaries) are reported *at* it.
pub fn validate_at(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let walker = Walker { root: path };
    let mut out = Vec::new();
    walker.value(schema, value, &At::ROOT, &mut out);
    dedup(&mut out);
    ErrorList(out)
}

/// The value checks of single structural nodes, for a walk that visits items and properties
/// itself (the write path's single walk, [`crate::walk`]). Paths are from the root. The errors
/// are [`validate`]'s, in its order, when the walk brackets the errors of an array's or
/// object's children between [`NodeChecks::before_children`] and
/// [`NodeChecks::after_children`] (dropping them if the former says so), validates every other
/// value with [`NodeChecks::value`], and finally removes duplicates with [`dedup`].
pub(crate) struct NodeChecks<'p> {
    walker: Walker<'p>,
}

impl<'p> NodeChecks<'p> {
    pub(crate) fn new(root: &'p Path) -> NodeChecks<'p> {
        NodeChecks { walker: Walker { root } }
    }

    /// Everything about `v` at `at`, children included.
    pub(crate) fn value(&self, node: &Structural, v: &Value, at: &At<'_>, out: &mut Vec<Error>) {
        if !matches!(v, Value::Object(_) | Value::Array(_)) && passes_type(node, v) {
            // A string, number or boolean of the declared type: what is left of kube-openapi's
            // checks are the string or number keywords, unless other keywords apply.
            let Some(vv) = node.vv() else {
                // No keywords: of the number validator only its range check is left.
                if let k @ (Kind::Int(_) | Kind::Float(_)) = kind(v) {
                    self.walker.check_range(Numeric::of(node), k, at, out);
                }
                return;
            };
            if vv.is_plain() {
                match kind(v) {
                    Kind::Str(s) => self.walker.check_string(vv, s, at, out),
                    k @ (Kind::Int(_) | Kind::Float(_)) => self.walker.check_number(Numeric::of(node), vv, k, at, out),
                    _ => {}
                }
                return;
            }
            if !vv.has_junctors() && self.scalar_with_format_or_enum(node, vv, v, at, out) {
                return;
            }
        }
        self.walker.value(node, v, at, out);
    }

    /// The checks of a string, number or boolean that passes its type check, when `format` or
    /// `enum` is set but no junctor: the string (and format) or number keywords, then `enum`.
    /// Returns `false`, having checked nothing, for a format on a number or boolean (it changes
    /// the type check; the full path handles it).
    #[inline(never)]
    fn scalar_with_format_or_enum(
        &self,
        node: &Structural,
        vv: &ValueValidation,
        v: &Value,
        at: &At<'_>,
        out: &mut Vec<Error>,
    ) -> bool {
        let format = vv.effective_format();
        match kind(v) {
            Kind::Str(s) => {
                self.walker.check_string(vv, s, at, out);
                if let Some(f) = vv.format_kind
                    && !f.matches(s)
                {
                    self.walker.type_error(out, &at.openapi_name(), &vv.format, s);
                }
            }
            k @ (Kind::Int(_) | Kind::Float(_)) if format.is_empty() => {
                self.walker.check_number(Numeric::of(node), vv, k, at, out)
            }
            Kind::Bool if format.is_empty() => {}
            _ => return false,
        }
        self.walker.check_enum(vv, v, at, out);
        true
    }

    /// The checks of an array or object that come before its children's errors. Returns
    /// whether the children's errors count (not after a property count violation).
    pub(crate) fn before_children(&self, node: &Structural, v: &Value, at: &At<'_>, out: &mut Vec<Error>) -> bool {
        if passes_type(node, v) && node.vv().is_none_or(ValueValidation::is_plain) {
            // Of the checks before the children, only the object validator's own are left.
            if let Value::Object(map) = v {
                if let Some(vv) = node.vv()
                    && (vv.min_properties.is_some() || vv.max_properties.is_some())
                    && !self.walker.check_property_count(vv, map, at, out)
                {
                    return false;
                }
                if let Some(AdditionalProperties::Bool(false)) = node.additional_properties {
                    self.walker.check_forbidden_properties(node, map, at, out);
                }
            }
            return true;
        }
        self.walker.before_children(node, v, kind(v), at, out).1
    }

    /// The checks of an array or object that come after its children's errors; `descended` is
    /// what [`NodeChecks::before_children`] returned.
    pub(crate) fn after_children(
        &self,
        node: &Structural,
        v: &Value,
        descended: bool,
        at: &At<'_>,
        out: &mut Vec<Error>,
    ) {
        let Some(vv) = node.vv() else { return };
        match v {
            // Only `required` follows an object's children.
            Value::Object(map) => {
                if descended {
                    for req in &vv.required {
                        if !map.contains_key(req) {
                            self.walker.missing(req, at, out);
                        }
                    }
                }
            }
            _ => {
                self.walker.after_children(node, v, kind(v), descended, at, out);
            }
        }
    }
}

/// Whether `v`, not `null`, certainly passes the type check of `node` — the only check left
/// when the node has no value validations (and, for an object, does not forbid other keys):
/// [`Walker::value`] would report nothing. `false` means "run the full checks", not "invalid".
#[inline]
fn passes_type(node: &Structural, v: &Value) -> bool {
    if node.int_or_string {
        return match v {
            Value::String(_) => true,
            Value::Number(n) => n.is_i64(),
            _ => false,
        };
    }
    match (node.type_, v) {
        (_, Value::Null) => false,
        (Type::None, _) => true,
        (Type::Object, Value::Object(_))
        | (Type::Array, Value::Array(_))
        | (Type::String, Value::String(_))
        | (Type::Boolean, Value::Bool(_))
        | (Type::Number, Value::Number(_)) => true,
        (Type::Integer, Value::Number(n)) => n.is_i64(),
        _ => false,
    }
}

/// Whether `err` keeps kube-apiserver from running the CEL rules (`x-kubernetes-validations`):
/// a type, required, enum, length or size violation means the object does not have the shape
/// the rules were written for (customresource `strategy.go`, `hasBlockingErr`).
pub fn is_blocking(err: &Error) -> bool {
    matches!(
        err.type_,
        ErrorType::NotSupported
            | ErrorType::Required
            | ErrorType::TooLong
            | ErrorType::TooMany
            | ErrorType::TypeInvalid
    )
}

/// Whether any error in `errs` is [blocking](is_blocking) for CEL.
pub fn has_blocking_error(errs: &ErrorList) -> bool {
    errs.iter().any(is_blocking)
}

/// The error kube-apiserver appends instead of running CEL rules when a blocking error exists:
/// `<nil>: Invalid value: null: some validation rules were not checked because the object was
/// invalid; correct the existing errors to complete validation`.
pub fn cel_skipped_error() -> Error {
    Error::invalid(
        Path::none(),
        Value::Null,
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

// ---------------------------------------------------------------------------------------------
// The schema view shared by structural nodes and junctor branches.

/// What the walk needs from a schema node. Implemented for [`Structural`] and for the schemas
/// inside `allOf`/`anyOf`/`oneOf`/`not` ([`NestedValueValidation`]); in the latter the generic
/// fields are honoured even though a structural schema may not set them, so that plain JSON
/// Schema (the conformance suite) validates as kube-openapi would validate it.
trait Node: Sized {
    fn type_name(&self) -> &str;
    /// The parsed `type_name`.
    fn type_(&self) -> Type;
    fn int_or_string(&self) -> bool;
    fn nullable(&self) -> bool;
    fn vv(&self) -> Option<&ValueValidation>;
    fn properties(&self) -> &crate::structural::Properties<Self>;
    fn items(&self) -> Option<&Self>;
    fn additional(&self) -> Additional<'_, Self>;
}

enum Additional<'s, N> {
    /// Absent or `true`: other keys are allowed and not validated.
    Allowed,
    /// `false`: other keys are reported.
    Forbidden,
    Schema(&'s N),
}

impl Node for Structural {
    fn type_name(&self) -> &str {
        &self.type_name
    }
    fn type_(&self) -> Type {
        self.type_
    }
    fn int_or_string(&self) -> bool {
        self.int_or_string
    }
    fn nullable(&self) -> bool {
        self.nullable
    }
    fn vv(&self) -> Option<&ValueValidation> {
        self.value_validation.as_deref()
    }
    fn properties(&self) -> &crate::structural::Properties<Self> {
        &self.properties
    }
    fn items(&self) -> Option<&Self> {
        self.items.as_deref()
    }
    fn additional(&self) -> Additional<'_, Self> {
        match &self.additional_properties {
            None | Some(AdditionalProperties::Bool(true)) => Additional::Allowed,
            Some(AdditionalProperties::Bool(false)) => Additional::Forbidden,
            Some(AdditionalProperties::Schema(s)) => Additional::Schema(s),
        }
    }
}

impl Node for NestedValueValidation {
    fn type_name(&self) -> &str {
        &self.forbidden.type_name
    }
    fn type_(&self) -> Type {
        self.forbidden.type_
    }
    fn int_or_string(&self) -> bool {
        self.forbidden.int_or_string
    }
    fn nullable(&self) -> bool {
        self.forbidden.nullable
    }
    fn vv(&self) -> Option<&ValueValidation> {
        Some(&self.value_validation)
    }
    fn properties(&self) -> &crate::structural::Properties<Self> {
        &self.properties
    }
    fn items(&self) -> Option<&Self> {
        self.items.as_deref()
    }
    fn additional(&self) -> Additional<'_, Self> {
        match &self.additional_properties {
            None | Some(NestedAdditionalProperties::Bool(true)) => Additional::Allowed,
            Some(NestedAdditionalProperties::Bool(false)) => Additional::Forbidden,
            Some(NestedAdditionalProperties::Schema(s)) => Additional::Schema(s),
        }
    }
}

/// The `type` list kube-apiserver hands kube-openapi: `[type]`, or `[integer, string]` for
/// `x-kubernetes-int-or-string` (which replaces any `type`), or nothing. Membership is decided
/// on the type parsed at lowering, so the walk compares no strings.
#[derive(Clone, Copy)]
struct Types<'s> {
    name: &'s str,
    type_: Type,
    int_or_string: bool,
}

impl<'s> Types<'s> {
    fn of<N: Node>(n: &'s N) -> Types<'s> {
        Types { name: n.type_name(), type_: n.type_(), int_or_string: n.int_or_string() }
    }
    fn is_empty(self) -> bool {
        !self.int_or_string && self.name.is_empty()
    }
    /// Whether one of the six JSON Schema types is in the list.
    fn contains(self, t: Type) -> bool {
        if self.int_or_string { matches!(t, Type::Integer | Type::String) } else { self.type_ == t }
    }
    /// Whether `null` is in the list (only as a plain `type: "null"`, outside structural schemas).
    fn contains_null(self) -> bool {
        !self.int_or_string && self.type_ == Type::Other && self.name == "null"
    }
    /// `strings.Join(types, ",")` as printed in type errors.
    fn joined(self) -> &'s str {
        if self.int_or_string { "integer,string" } else { self.name }
    }
}

/// The name of one of the six JSON types, as kube-openapi prints a value's type.
fn type_word(t: Type) -> &'static str {
    match t {
        Type::Object => "object",
        Type::Array => "array",
        Type::String => "string",
        Type::Integer => "integer",
        Type::Number => "number",
        Type::Boolean => "boolean",
        Type::None | Type::Other => "",
    }
}

// ---------------------------------------------------------------------------------------------
// The walk.

/// A JSON value seen the way Go's unstructured decoding sees it: integral numbers that fit an
/// `int64` are `int64`, every other number is a `float64`.
#[derive(Clone, Copy)]
enum Kind<'v> {
    Null,
    Bool,
    Int(i64),
    Float(f64),
    Str(&'v str),
    Array(&'v [Value]),
    Object(&'v Map<String, Value>),
}

#[inline]
fn kind(v: &Value) -> Kind<'_> {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) => match n.as_i64() {
            Some(i) => Kind::Int(i),
            None => Kind::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Kind::Str(s),
        Value::Array(a) => Kind::Array(a),
        Value::Object(o) => Kind::Object(o),
    }
}

/// The bad value of a numeric error: the number as Go holds it.
fn number_value(k: Kind<'_>) -> BadValue {
    match k {
        Kind::Int(i) => BadValue::Json(Value::from(i)),
        Kind::Float(f) => BadValue::Json(Value::from(f)),
        _ => BadValue::Json(Value::Null),
    }
}

/// The numeric type and format kube-openapi's number validator checks a value's range against:
/// only an unambiguous `integer` (with format `int32` or `int64`) or `number` (with `float` or
/// `double`); any other format counts as none, any other type as no check.
#[derive(Clone, Copy)]
struct Numeric<'s> {
    type_: &'static str,
    format: &'s str,
}

impl<'s> Numeric<'s> {
    fn of<N: Node>(node: &'s N) -> Numeric<'s> {
        let format = node.vv().map_or("", |vv| vv.format.as_str());
        match node.type_name() {
            "integer" => {
                Numeric { type_: "integer", format: if matches!(format, "int32" | "int64") { format } else { "" } }
            }
            "number" => {
                Numeric { type_: "number", format: if matches!(format, "float" | "double") { format } else { "" } }
            }
            _ => Numeric { type_: "", format: "" },
        }
    }

    /// kube-openapi's `IsValueValidAgainstRange`: the value (as Go holds it: an `int64`, or a
    /// `float64` printed with all its digits and no exponent) must parse as the type and format
    /// — an `integer` as `int64` (`int32` with that format), a `number` with format `float` as a
    /// finite `float32`. The error text, with `prefix` and the validator's path, otherwise.
    fn range_error(self, k: Kind<'_>, prefix: &str, path: &str) -> Option<String> {
        let text = match k {
            Kind::Int(i) => i.to_string(),
            Kind::Float(f) => format!("{f}"),
            _ => return None,
        };
        let fits = match (self.type_, self.format) {
            ("integer", "int32") => text.parse::<i32>().is_ok(),
            ("integer", _) => text.parse::<i64>().is_ok(),
            (_, "float") => !text.parse::<f32>().is_ok_and(f32::is_infinite),
            _ => true,
        };
        if fits {
            return None;
        }
        let type_ = self.type_;
        Some(if self.format.is_empty() {
            format!("{prefix} value must be of type {type_} (default format) in {path}")
        } else {
            format!("{prefix} value must be of type {type_} with format {} in {path}", self.format)
        })
    }
}

struct Walker<'p> {
    /// The `fldPath` of `ValidateCustomResource`.
    root: &'p Path,
}

impl Walker<'_> {
    /// The field path of an error kube-openapi named `name`: `fldPath.Child(name without its
    /// leading ".")`, or `fldPath` itself for an empty name.
    fn field(&self, name: &str) -> Path {
        if name.is_empty() || name == "." {
            self.root.clone()
        } else {
            self.root.child(name.strip_prefix('.').unwrap_or(name))
        }
    }

    /// An error with kube-openapi's generic mapping (`field.Invalid` with its message).
    fn invalid(&self, out: &mut Vec<Error>, name: &str, value: BadValue, msg: String) {
        out.push(Error { type_: ErrorType::Invalid, field: self.field(name), value, detail: msg });
    }

    /// A type error: `<name> in body must be of type <t>: "<got>"`, value `<got>`.
    fn type_error(&self, out: &mut Vec<Error>, name: &str, type_name: &str, got: &str) {
        let detail = format!("{name} in body must be of type {type_name}: {}", go_quote(got));
        out.push(Error { type_: ErrorType::TypeInvalid, field: self.field(name), value: got.into(), detail });
    }

    /// An error kube-openapi does not attach to a field (`allOf` & co.): reported at the root
    /// path with an empty value.
    fn composite(&self, out: &mut Vec<Error>, msg: String) {
        out.push(Error { type_: ErrorType::Invalid, field: self.root.clone(), value: "".into(), detail: msg });
    }

    /// Validates `v` against `node` and returns kube-openapi's `MatchCount` for it.
    ///
    /// The count mirrors `SchemaValidator.Validate`: one per validator that applies, plus what
    /// each returns (the type validator 1 when it passes; the junctor validator 1 plus the
    /// counts of the branches it keeps; the number validator 1; the array validator 1 plus its
    /// items; the object validator the sum of its children unless it stopped at a property
    /// count), plus one at the end. A `null` only meets the type and enum checks.
    fn value<N: Node>(&self, node: &N, v: &Value, frame: &At<'_>, out: &mut Vec<Error>) -> usize {
        let k = kind(v);
        if let Kind::Null = k {
            let types = Types::of(node);
            let mut count = 0;
            if !types.is_empty() && !types.contains_null() && !node.nullable() {
                self.type_error(out, &frame.openapi_name(), types.joined(), "null");
            } else {
                count += 1;
            }
            if let Some(vv) = node.vv() {
                self.check_enum(vv, v, frame, out);
            }
            return count;
        }
        let (mut count, descend) = self.before_children(node, v, k, frame, out);
        if descend {
            count += self.children(node, k, frame, out);
        }
        count + self.after_children(node, v, k, descend, frame, out)
    }

    /// The checks of [`Walker::value`] on a value that is not `null` that come before the errors
    /// of its items or properties: type, junctors, string, format and number, and for an object
    /// `enum` and the object validator's own checks. Returns the count so far and whether the
    /// children are validated at all (not after a property count violation).
    fn before_children<N: Node>(
        &self,
        node: &N,
        v: &Value,
        k: Kind<'_>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> (usize, bool) {
        let types = Types::of(node);
        // Lowering leaves `None` for a node without value validations, so no emptiness check
        // is needed here; an empty set inside a junctor only costs a few no-op tests.
        let vv = node.vv();
        let format = vv.map_or("", ValueValidation::effective_format);
        let mut count = 0;

        // Type (applies when a type or a format is declared).
        if !types.is_empty() || !format.is_empty() {
            count += 1;
            if self.check_type(types, format, k, frame, out) {
                count += 1;
            }
        }

        // allOf/anyOf/oneOf/not (always applies; counts itself once more, and once for the
        // validator's own result).
        count += 1 + match vv {
            Some(vv) if vv.has_junctors() => self.junctors(vv, v, frame, out),
            _ => 1,
        };

        match k {
            Kind::Str(s) => {
                count += 1;
                if let Some(vv) = vv {
                    self.check_string(vv, s, frame, out);
                    if let Some(f) = vv.format_kind {
                        count += 1;
                        if !f.matches(s) {
                            self.type_error(out, &frame.openapi_name(), &vv.format, s);
                        }
                    }
                }
            }
            Kind::Int(_) | Kind::Float(_) => {
                count += 2;
                match vv {
                    Some(vv) => self.check_number(Numeric::of(node), vv, k, frame, out),
                    None => self.check_range(Numeric::of(node), k, frame, out),
                }
            }
            Kind::Array(_) => count += 2,
            Kind::Object(map) => {
                // Enum (always applies), then the object validator.
                count += 2;
                if let Some(vv) = vv {
                    if !vv.enum_.is_empty() {
                        self.check_enum(vv, v, frame, out);
                    }
                    if !self.check_property_count(vv, map, frame, out) {
                        return (count, false);
                    }
                }
                if let Additional::Forbidden = node.additional() {
                    self.check_forbidden_properties(node, map, frame, out);
                }
            }
            Kind::Null | Kind::Bool => {}
        }
        (count, true)
    }

    /// The items of an array, or the properties of an object (those of `additionalProperties`
    /// first, then the declared ones, each in key order); returns the sum of their counts.
    fn children<N: Node>(&self, node: &N, k: Kind<'_>, frame: &At<'_>, out: &mut Vec<Error>) -> usize {
        let mut count = 0;
        match k {
            Kind::Array(items) => {
                if let Some(item_schema) = node.items() {
                    for (i, item) in items.iter().enumerate() {
                        count += self.value(item_schema, item, &frame.index(i), out);
                    }
                }
            }
            Kind::Object(map) => {
                let props = node.properties();
                if let Additional::Schema(ap) = node.additional() {
                    for (key, val, prop) in with_props(props, map.iter()) {
                        if prop.is_none() {
                            count += self.value(ap, val, &frame.extra(key), out);
                        }
                    }
                }
                // Declared properties present in the value, in key order (one merge of two
                // sorted maps).
                if !props.is_empty() {
                    for (name, val, prop) in with_props(props, map.iter()) {
                        if let Some(schema) = prop {
                            count += self.value(schema, val, &frame.prop(name), out);
                        }
                    }
                }
            }
            _ => {}
        }
        count
    }

    /// The checks of [`Walker::value`] that come after the errors of the children: an array's
    /// item counts and uniqueness and its `enum`, an object's `required` (unless the object
    /// validator stopped before the children, `descended` false), a scalar's `enum`. Returns
    /// their count, with the final one.
    fn after_children<N: Node>(
        &self,
        node: &N,
        v: &Value,
        k: Kind<'_>,
        descended: bool,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> usize {
        let vv = node.vv();
        match k {
            Kind::Object(map) => {
                if descended && let Some(vv) = vv {
                    for req in &vv.required {
                        if !map.contains_key(req) {
                            self.missing(req, frame, out);
                        }
                    }
                }
                1
            }
            _ => {
                if let Some(vv) = vv {
                    if let Kind::Array(items) = k {
                        self.check_array(vv, items, frame, out);
                    }
                    if !vv.enum_.is_empty() {
                        self.check_enum(vv, v, frame, out);
                    }
                }
                2
            }
        }
    }

    /// kube-openapi's type validator. Returns whether it passed.
    fn check_type(&self, types: Types<'_>, format: &str, k: Kind<'_>, frame: &At<'_>, out: &mut Vec<Error>) -> bool {
        // The JSON type and Go-derived format kube-openapi infers from the value.
        let (sch_type, val_format) = match k {
            Kind::Bool => (Type::Boolean, ""),
            Kind::Str(_) => (Type::String, ""),
            Kind::Int(_) => (Type::Integer, "int64"),
            Kind::Float(_) => (Type::Number, "float64"),
            Kind::Array(_) => (Type::Array, ""),
            Kind::Object(_) | Kind::Null => (Type::Object, ""),
        };
        // 1.0 is an integer, and an integer is a number.
        let declared = types.contains(sch_type)
            || match k {
                Kind::Float(f) => types.contains(Type::Integer) && is_json_integer(f),
                Kind::Int(_) => types.contains(Type::Number),
                _ => false,
            };
        let str_or_array = matches!(k, Kind::Str(_) | Kind::Array(_));

        if !format.is_empty() {
            if !str_or_array && !declared && val_format != format {
                // A value that is neither string nor array against a declared (string) format
                // is reported against the format, with the value's Go format as the "type".
                self.type_error(out, &frame.openapi_name(), format, val_format);
                return false;
            }
            let numeric = types.contains(Type::Number) || types.contains(Type::Integer);
            if str_or_array && !numeric {
                // kube-openapi lets strings and arrays through once a non-numeric format is set.
                return true;
            }
        }
        if !declared {
            self.type_error(out, &frame.openapi_name(), types.joined(), type_word(sch_type));
            return false;
        }
        true
    }

    /// `allOf`, `anyOf`, `oneOf`, `not` (kube-openapi `schemaPropsValidator`). Returns the
    /// validator's own `MatchCount`.
    fn junctors(&self, vv: &ValueValidation, v: &Value, frame: &At<'_>, out: &mut Vec<Error>) -> usize {
        let mut count = 0;

        if !vv.any_of.is_empty() {
            // The first passing branch wins; otherwise the failing branch with the highest
            // count (the first among equals) explains the failure.
            let mut best: Option<(Vec<Error>, usize)> = None;
            let mut success = None;
            for branch in &vv.any_of {
                let mut errs = Vec::new();
                let c = self.value(branch, v, frame, &mut errs);
                if errs.is_empty() {
                    success = Some(c);
                    break;
                }
                if best.as_ref().is_none_or(|(_, bc)| c > *bc) {
                    best = Some((errs, c));
                }
            }
            match success {
                Some(c) => count += c,
                None => {
                    self.composite(
                        out,
                        format!("{} must validate at least one schema (anyOf)", go_quote(&frame.openapi_name())),
                    );
                    if let Some((errs, c)) = best {
                        out.extend(errs);
                        count += c;
                    }
                }
            }
        }

        if !vv.one_of.is_empty() {
            let mut best: Option<(Vec<Error>, usize)> = None;
            let mut first_success = None;
            let mut validated = 0usize;
            for branch in &vv.one_of {
                let mut errs = Vec::new();
                let c = self.value(branch, v, frame, &mut errs);
                if errs.is_empty() {
                    validated += 1;
                    best = None;
                    first_success.get_or_insert(c);
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|(_, bc)| c > *bc) {
                    best = Some((errs, c));
                }
            }
            if validated == 1 {
                count += first_success.unwrap_or(0);
            } else {
                let extra = if validated == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                self.composite(
                    out,
                    format!(
                        "{} must validate one and only one schema (oneOf). {extra}",
                        go_quote(&frame.openapi_name())
                    ),
                );
                if let Some((errs, c)) = best {
                    out.extend(errs);
                    count += c;
                }
            }
        }

        if !vv.all_of.is_empty() {
            let mut validated = 0;
            for branch in &vv.all_of {
                let before = out.len();
                count += self.value(branch, v, frame, out);
                if out.len() == before {
                    validated += 1;
                }
            }
            if validated != vv.all_of.len() {
                let extra = if validated == 0 { ". None validated" } else { "" };
                self.composite(
                    out,
                    format!("{} must validate all the schemas (allOf){extra}", go_quote(&frame.openapi_name())),
                );
            }
        }

        if let Some(not) = &vv.not {
            let mut errs = Vec::new();
            self.value(not.as_ref(), v, frame, &mut errs);
            if errs.is_empty() {
                self.composite(out, format!("{} must not validate the schema (not)", go_quote(&frame.openapi_name())));
            }
        }

        count + 1
    }

    /// maxLength, minLength, pattern — the first failure only, as kube-openapi's string
    /// validator returns on it. Lengths count Unicode code points.
    fn check_string(&self, vv: &ValueValidation, s: &str, frame: &At<'_>, out: &mut Vec<Error>) {
        if vv.max_length.is_none() && vv.min_length.is_none() && vv.pattern.is_none() {
            return;
        }
        // Byte length bounds the code point count; count only when it can matter.
        let len = || s.chars().count() as i64;
        if let Some(max) = vv.max_length
            && s.len() as i64 > max
            && len() > max
        {
            out.push(Error::too_long(self.field(&frame.openapi_name()), max));
            return;
        }
        if let Some(min) = vv.min_length
            && len() < min
        {
            let name = frame.openapi_name();
            self.invalid(out, &name, s.into(), format!("{name} in body should be at least {min} chars long"));
            return;
        }
        if let Some(p) = &vv.pattern {
            let name;
            let detail = match p.error() {
                Some(err) => {
                    name = frame.openapi_name();
                    format!("{name} in body should match '{}, but pattern is invalid: {err}'", p.source())
                }
                None if p.is_match(s) => return,
                None => {
                    name = frame.openapi_name();
                    format!("{name} in body should match '{}'", p.source())
                }
            };
            self.invalid(out, &name, s.into(), detail);
        }
    }

    /// The number validator's first check: does the value fit the schema's numeric type and
    /// format ([`Numeric::range_error`])?
    fn check_range(&self, num: Numeric<'_>, k: Kind<'_>, frame: &At<'_>, out: &mut Vec<Error>) {
        self.fits_range(num, k, "Checked", &frame.openapi_name(), out);
    }

    /// Whether `k` fits `num`; if not, kube-openapi's error (a plain error, which kube maps to
    /// `<nil>: Invalid value: ""`) is reported with `prefix`.
    fn fits_range(&self, num: Numeric<'_>, k: Kind<'_>, prefix: &str, name: &str, out: &mut Vec<Error>) -> bool {
        let Some(detail) = num.range_error(k, prefix, name) else { return true };
        out.push(Error { type_: ErrorType::Invalid, field: Path::none(), value: "".into(), detail });
        false
    }

    /// The range check, then multipleOf, minimum, maximum — in that order, all reported
    /// (kube-openapi's number validator). A bound that fits the numeric type and format is
    /// compared natively: with an `int64` value, the bound truncated to `int64`, which is what
    /// the message prints. A bound that does not fit is reported (`Maximum boundary value must
    /// be of type integer ...`) and compared as a float.
    fn check_number(&self, num: Numeric<'_>, vv: &ValueValidation, k: Kind<'_>, frame: &At<'_>, out: &mut Vec<Error>) {
        self.check_range(num, k, frame, out);
        let name = frame.openapi_name();
        if let Some(factor) = vv.multiple_of {
            let native = self.fits_range(num, Kind::Float(factor), "MultipleOf", &name, out);
            let msg = match k {
                // Deviation: Go divides by `int64(factor)` and panics when it is 0 (a factor
                // below one); we fall back to the float check instead of failing the request.
                Kind::Int(i) if native && go_f64_to_i64(factor) != 0 => {
                    let fi = go_f64_to_i64(factor);
                    if fi < 0 {
                        Some((true, fi.to_string()))
                    } else if i.wrapping_div(fi).wrapping_mul(fi) != i {
                        Some((false, fi.to_string()))
                    } else {
                        None
                    }
                }
                _ => {
                    let f = as_f64(k);
                    if factor < 0.0 {
                        Some((true, go_float(factor)))
                    } else {
                        let mult = if factor < 1.0 { 1.0 / factor * f } else { f / factor };
                        if is_json_integer(mult) { None } else { Some((false, go_float(factor))) }
                    }
                }
            };
            if let Some((negative, factor_text)) = msg {
                if negative {
                    let value = match k {
                        Kind::Int(_) if native => BadValue::Json(Value::from(go_f64_to_i64(factor))),
                        _ => BadValue::Json(Value::from(factor)),
                    };
                    self.invalid(
                        out,
                        &name,
                        value,
                        format!("factor MultipleOf declared for {name} must be positive: {factor_text}"),
                    );
                } else {
                    self.invalid(
                        out,
                        &name,
                        number_value(k),
                        format!("{name} in body should be a multiple of {factor_text}"),
                    );
                }
            }
        }
        // kube-openapi checks the maximum first but reports the minimum first (neither check
        // depends on the other).
        if let Some(min) = vv.minimum {
            let ex = vv.exclusive_minimum;
            let native = self.fits_range(num, Kind::Float(min), "Minimum boundary", &name, out);
            let bound = match k {
                Kind::Int(i) if native => {
                    let m = go_f64_to_i64(min);
                    ((!ex && i < m) || (ex && i <= m)).then(|| m.to_string())
                }
                _ => {
                    let f = as_f64(k);
                    ((!ex && f < min) || (ex && f <= min)).then(|| go_float(min))
                }
            };
            if let Some(bound) = bound {
                let rel = if ex { "greater than" } else { "greater than or equal to" };
                self.invalid(out, &name, number_value(k), format!("{name} in body should be {rel} {bound}"));
            }
        }
        if let Some(max) = vv.maximum {
            let ex = vv.exclusive_maximum;
            let native = self.fits_range(num, Kind::Float(max), "Maximum boundary", &name, out);
            let bound = match k {
                Kind::Int(i) if native => {
                    let m = go_f64_to_i64(max);
                    ((!ex && i > m) || (ex && i >= m)).then(|| m.to_string())
                }
                _ => {
                    let f = as_f64(k);
                    ((!ex && f > max) || (ex && f >= max)).then(|| go_float(max))
                }
            };
            if let Some(bound) = bound {
                let rel = if ex { "less than" } else { "less than or equal to" };
                self.invalid(out, &name, number_value(k), format!("{name} in body should be {rel} {bound}"));
            }
        }
    }

    /// minItems, maxItems, uniqueItems — after the items, all reported.
    fn check_array(&self, vv: &ValueValidation, items: &[Value], frame: &At<'_>, out: &mut Vec<Error>) {
        let size = items.len() as i64;
        if let Some(min) = vv.min_items
            && size < min
        {
            let name = frame.openapi_name();
            self.invalid(
                out,
                &name,
                BadValue::Json(Value::from(size)),
                format!("{name} in body should have at least {min} items"),
            );
        }
        if let Some(max) = vv.max_items
            && size > max
        {
            out.push(Error::too_many(self.field(&frame.openapi_name()), Some(size), max));
        }
        if vv.unique_items && has_duplicates(items) {
            let name = frame.openapi_name();
            self.invalid(out, &name, "".into(), format!("{name} in body shouldn't contain duplicates"));
        }
    }

    /// `enum`, with Go's reflect conversion rules (see [`enum_matches`]).
    fn check_enum(&self, vv: &ValueValidation, v: &Value, frame: &At<'_>, out: &mut Vec<Error>) {
        if vv.enum_.is_empty() || vv.enum_.iter().any(|e| enum_matches(v, e)) {
            return;
        }
        let values: Vec<String> = vv
            .enum_
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => go_json(other),
            })
            .collect();
        out.push(Error::not_supported(self.field(&frame.openapi_name()), v, &values));
    }

    /// A `required` property `req` that the object at `frame` lacks.
    fn missing(&self, req: &str, frame: &At<'_>, out: &mut Vec<Error>) {
        let name = format!("{}.{req}", frame.openapi_name());
        out.push(Error::required(self.field(&name), ""));
    }

    /// `additionalProperties: false`: every key that is not a declared property is reported.
    fn check_forbidden_properties<N: Node>(
        &self,
        node: &N,
        map: &Map<String, Value>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) {
        for (key, _, prop) in with_props(node.properties(), map.iter()) {
            if prop.is_none() {
                let name = frame.openapi_name();
                self.invalid(out, &name, key.as_str().into(), format!("{name}.{key} in body is a forbidden property"));
            }
        }
    }

    /// minProperties and maxProperties; a violation stops the object validator (nothing below
    /// is checked). Returns whether the count is within bounds.
    fn check_property_count(
        &self,
        vv: &ValueValidation,
        map: &Map<String, Value>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> bool {
        let n = map.len() as i64;
        if let Some(min) = vv.min_properties
            && n < min
        {
            let name = frame.openapi_name();
            self.invalid(
                out,
                &name,
                BadValue::Json(Value::from(n)),
                format!("{name} in body should have at least {min} properties"),
            );
            return false;
        }
        if let Some(max) = vv.max_properties
            && n > max
        {
            out.push(Error::too_many(self.field(&frame.openapi_name()), Some(n), max));
            return false;
        }
        true
    }
}

fn as_f64(k: Kind<'_>) -> f64 {
    match k {
        Kind::Int(i) => i as f64,
        Kind::Float(f) => f,
        _ => 0.0,
    }
}

/// Go's `int64(f)`: truncation toward zero. Go leaves out-of-range results to the platform;
/// Rust's saturation is as good a choice and never panics.
fn go_f64_to_i64(f: f64) -> i64 {
    f as i64
}

/// go-openapi `swag.IsFloat64AJSONInteger` (v0.23, the version Kubernetes vendors): an
/// integer within ±(2^53−1), allowing a relative error of 1e-9 above a positive integer.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f.trunc() == f {
        return true;
    }
    // Go compares with `float64(uint64(f))`: for negative non-integers that is 0 or a huge
    // number, and the comparison fails.
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    if g == 0.0 {
        return false;
    }
    (f - g) / (f + g) < 1e-9
}

/// kube-openapi's enum test: `data` converted to the enum value's Go type, then deep-equal.
/// Numbers convert between `int64` and `float64` (truncating), an `int64` converts to a
/// one-rune string, `null` data never matches, a `null` enum value is skipped.
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(a), Value::Number(b)) => match (kind(data), kind(e)) {
            (Kind::Int(x), Kind::Int(y)) => x == y,
            (Kind::Int(x), Kind::Float(y)) => x as f64 == y,
            (Kind::Float(x), Kind::Int(y)) => go_f64_to_i64(x) == y,
            (Kind::Float(x), Kind::Float(y)) => x == y,
            _ => a == b,
        },
        (Value::Number(n), Value::String(s)) => match n.as_i64() {
            Some(i) => {
                let c = u32::try_from(i).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                s.as_str() == c.encode_utf8(&mut buf)
            }
            None => false,
        },
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => a == b,
        (Value::Object(a), Value::Object(b)) => a == b,
        _ => false,
    }
}

/// uniqueItems: any two items deep-equal (Go `reflect.DeepEqual`, so `1` and `1.0` differ).
fn has_duplicates(items: &[Value]) -> bool {
    for (i, a) in items.iter().enumerate() {
        if items[..i].iter().any(|b| a == b) {
            return true;
        }
    }
    false
}

/// Drops repeated errors, keeping the first: kube-openapi's `Result.AddErrors` keeps messages
/// unique, which matters when `allOf` branches report the same failure.
pub(crate) fn dedup(errs: &mut Vec<Error>) {
    if errs.len() < 2 {
        return;
    }
    let mut seen = HashSet::new();
    errs.retain(|e| seen.insert(e.to_string()));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, obj: Value) -> Vec<String> {
        let s = Structural::from_json(&schema).unwrap();
        validate(&s, &obj).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn must_match_examples() {
        let schema = json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "required": ["image"], "properties": {
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                "level": {"type": "string", "enum": ["low", "medium", "high"]},
                "few": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "image": {"type": "string"},
                "field": {"type": "integer"}
            }}}
        });
        let got = check(
            schema,
            json!({"spec": {"replicas": 15, "cronSpec": "* * * *", "level": "x", "few": ["a", "b", "c"], "field": {}}}),
        );
        assert_eq!(
            got,
            vec![
                r"spec.cronSpec: Invalid value: ″* * * *″: spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"
                    .replace('″', "\""),
                "spec.few: Too many: 3: must have at most 2 items".to_owned(),
                r#"spec.field: Invalid value: "object": spec.field in body must be of type integer: "object""#.to_owned(),
                r#"spec.level: Unsupported value: "x": supported values: "low", "medium", "high""#.to_owned(),
                "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10".to_owned(),
                "spec.image: Required value".to_owned(),
            ]
        );
    }

    #[test]
    fn json_integers_and_floats() {
        assert!(is_json_integer(1.0));
        assert!(is_json_integer(3.0000000000000004));
        assert!(!is_json_integer(2.9999999999999996));
        assert!(!is_json_integer(-1.5));
        assert!(!is_json_integer(0.5));
        assert_eq!(go_json(&json!([1.0, 1e21, 1e-7, 0.000001])), "[1,1e+21,1e-7,0.000001]");
        assert_eq!(go_json(&json!({"b": [1.0, "<"], "a": null})), r#"{"a":null,"b":[1,"\u003c"]}"#);
    }

    #[test]
    fn enum_conversions_follow_go() {
        assert!(enum_matches(&json!(1.0), &json!(1)));
        assert!(enum_matches(&json!(1.5), &json!(1)));
        assert!(!enum_matches(&json!(1), &json!(1.5)));
        assert!(enum_matches(&json!(65), &json!("A")));
        assert!(!enum_matches(&json!("1"), &json!(1)));
        assert!(!enum_matches(&Value::Null, &Value::Null));
    }

    #[test]
    fn blocking_errors() {
        let errs = ErrorList(vec![Error::required(Path::new("a"), "")]);
        assert!(has_blocking_error(&errs));
        assert!(!has_blocking_error(&ErrorList(vec![Error::invalid(Path::new("a"), 1i64, "x")])));
        assert_eq!(
            cel_skipped_error().to_string(),
            r#"<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
        );
    }
}
