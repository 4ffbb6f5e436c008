//! The schema as value validation reads it: a [`Node`] is a structural node or a schema inside
//! `allOf`/`anyOf`/`oneOf`/`not`, with the declared type as kube-apiserver hands it to
//! kube-openapi ([`Types`]) and the names kube-openapi prints for JSON types.

use crate::structural::{
    AdditionalProperties, NestedAdditionalProperties, NestedValueValidation, Structural, Type, ValueValidation,
};

/// What the walk needs from a schema node. Implemented for [`Structural`] and for the schemas
/// inside `allOf`/`anyOf`/`oneOf`/`not` ([`NestedValueValidation`]); in the latter the generic
/// fields are honoured even though a structural schema may not set them, so that plain JSON
/// Schema (the conformance suite) validates as kube-openapi would validate it.
pub(super) trait Node: Sized {
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

pub(super) enum Additional<'s, N> {
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
pub(super) struct Types<'s> {
    name: &'s str,
    type_: Type,
    int_or_string: bool,
}

impl<'s> Types<'s> {
    pub(super) fn of<N: Node>(n: &'s N) -> Types<'s> {
        Types { name: n.type_name(), type_: n.type_(), int_or_string: n.int_or_string() }
    }
    pub(super) fn is_empty(self) -> bool {
        !self.int_or_string && self.name.is_empty()
    }
    /// Whether one of the six JSON Schema types is in the list.
    pub(super) fn contains(self, t: Type) -> bool {
        if self.int_or_string { matches!(t, Type::Integer | Type::String) } else { self.type_ == t }
    }
    /// Whether `null` is in the list (only as a plain `type: "null"`, outside structural schemas).
    pub(super) fn contains_null(self) -> bool {
        !self.int_or_string && self.type_ == Type::Other && self.name == "null"
    }
    /// `strings.Join(types, ",")` as printed in type errors.
    pub(super) fn joined(self) -> &'s str {
        if self.int_or_string { "integer,string" } else { self.name }
    }
}

/// The name of one of the six JSON types, as kube-openapi prints a value's type.
pub(super) fn type_word(t: Type) -> &'static str {
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
