//! gnostic's `openapi.v2` messages as tables: one row per field, in field-number order, as in
//! the vendored `proto/OpenAPIv2.proto` — the field's number, the JSON key(s) its values come
//! from, and how a value is encoded ([`Kind`]), with the oneof members chosen by the value.

use serde_json::Value;

/// A message: its fields in field-number order.
pub(super) struct Message(pub(super) &'static [Field]);

/// One field: its number, the JSON key(s) it comes from, how the value is encoded.
#[derive(Clone, Copy)]
pub(super) struct Field(pub(super) u32, pub(super) Key, pub(super) Kind);

/// Where a field's values come from in the JSON object.
#[derive(Clone, Copy)]
pub(super) enum Key {
    /// The value of one key.
    Named(&'static str),
    /// Every entry whose key starts with `x-`, each a `NamedAny` (`vendor_extension`).
    Extensions,
    /// Every entry whose key starts with `/`, each a `NamedPathItem`.
    Paths,
    /// Every entry whose key is a three-digit code or `default`, each a `NamedResponseValue`.
    ResponseCodes,
    /// Every entry (a map message's `additional_properties`), each a `Named*` pair.
    All,
}

impl Key {
    pub(super) fn matches(self, key: &str) -> bool {
        match self {
            Key::Named(name) => key == name,
            Key::Extensions => key.starts_with("x-"),
            Key::Paths => key.starts_with('/'),
            Key::ResponseCodes => key == "default" || (key.len() == 3 && key.bytes().all(|b| b.is_ascii_digit())),
            Key::All => true,
        }
    }
}

/// How a JSON value becomes a field.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// `string`: a JSON string (or integer, as its digits, as gnostic takes YAML `!!int`).
    Str,
    /// `bool`.
    Bool,
    /// `double`: any JSON number.
    F64,
    /// `int64`: a JSON integer.
    I64,
    /// `Any`: the value as YAML text (its field 2, `yaml`).
    Any,
    /// A nested message from a JSON object.
    Msg(&'static Message),
    /// A repeated field from a JSON array, one element per item.
    Rep(&'static Kind),
    /// `TypeItem` / `ItemsItem`: a message repeating `Kind` in its field 1, from one value or an
    /// array of them.
    OneOrMany(&'static Kind),
    /// A message holding a oneof: the member (field number and kind) the value calls for.
    Oneof(fn(&Value) -> Option<(u32, Kind)>),
}

pub(super) const fn f(number: u32, key: &'static str, kind: Kind) -> Field {
    Field(number, Key::Named(key), kind)
}

pub(super) const fn ext(number: u32) -> Field {
    Field(number, Key::Extensions, Kind::Any)
}

pub(super) use Kind::{Any, Bool, F64, I64, Msg, OneOrMany, Oneof, Rep, Str};

pub(super) static STRINGS: Kind = Rep(&Str);
pub(super) static ANYS: Kind = Rep(&Any);
pub(super) static SCHEMA_KIND: Kind = Msg(&SCHEMA);
pub(super) static PARAMETERS_ITEMS: Kind = Rep(&Oneof(parameters_item));
pub(super) static OPERATION_KIND: Kind = Msg(&OPERATION);

pub(super) static DOCUMENT: Message = Message(&[
    f(1, "swagger", Str),
    f(2, "info", Msg(&INFO)),
    f(3, "host", Str),
    f(4, "basePath", Str),
    f(5, "schemes", STRINGS),
    f(6, "consumes", STRINGS),
    f(7, "produces", STRINGS),
    f(8, "paths", Msg(&PATHS)),
    f(9, "definitions", Msg(&DEFINITIONS)),
    f(10, "parameters", Msg(&PARAMETER_DEFINITIONS)),
    f(11, "responses", Msg(&RESPONSE_DEFINITIONS)),
    f(15, "externalDocs", Msg(&EXTERNAL_DOCS)),
    ext(16),
]);

pub(super) static INFO: Message =
    Message(&[f(1, "title", Str), f(2, "version", Str), f(3, "description", Str), f(4, "termsOfService", Str), ext(7)]);

pub(super) static EXTERNAL_DOCS: Message = Message(&[f(1, "description", Str), f(2, "url", Str), ext(3)]);

pub(super) static PATHS: Message = Message(&[ext(1), Field(2, Key::Paths, Msg(&PATH_ITEM))]);

pub(super) static DEFINITIONS: Message = Message(&[Field(1, Key::All, SCHEMA_KIND)]);

pub(super) static PARAMETER_DEFINITIONS: Message = Message(&[Field(1, Key::All, Oneof(parameter))]);

pub(super) static RESPONSE_DEFINITIONS: Message = Message(&[Field(1, Key::All, Msg(&RESPONSE))]);

pub(super) static PATH_ITEM: Message = Message(&[
    f(1, "$ref", Str),
    f(2, "get", OPERATION_KIND),
    f(3, "put", OPERATION_KIND),
    f(4, "post", OPERATION_KIND),
    f(5, "delete", OPERATION_KIND),
    f(6, "options", OPERATION_KIND),
    f(7, "head", OPERATION_KIND),
    f(8, "patch", OPERATION_KIND),
    f(9, "parameters", PARAMETERS_ITEMS),
    ext(10),
]);

pub(super) static OPERATION: Message = Message(&[
    f(1, "tags", STRINGS),
    f(2, "summary", Str),
    f(3, "description", Str),
    f(4, "externalDocs", Msg(&EXTERNAL_DOCS)),
    f(5, "operationId", Str),
    f(6, "produces", STRINGS),
    f(7, "consumes", STRINGS),
    f(8, "parameters", PARAMETERS_ITEMS),
    f(9, "responses", Msg(&RESPONSES)),
    f(10, "schemes", STRINGS),
    f(11, "deprecated", Bool),
    ext(13),
]);

pub(super) static RESPONSES: Message = Message(&[Field(1, Key::ResponseCodes, Oneof(response_value)), ext(2)]);

pub(super) static RESPONSE: Message = Message(&[f(1, "description", Str), f(2, "schema", Oneof(schema_item)), ext(5)]);

pub(super) static JSON_REFERENCE: Message = Message(&[f(1, "$ref", Str), f(2, "description", Str)]);

pub(super) static BODY_PARAMETER: Message = Message(&[
    f(1, "description", Str),
    f(2, "name", Str),
    f(3, "in", Str),
    f(4, "required", Bool),
    f(5, "schema", SCHEMA_KIND),
    ext(6),
]);

/// `QueryParameterSubSchema`, and `FormDataParameterSubSchema`, which numbers its fields alike.
pub(super) static QUERY_PARAMETER: Message = Message(&[
    f(1, "required", Bool),
    f(2, "in", Str),
    f(3, "description", Str),
    f(4, "name", Str),
    f(5, "allowEmptyValue", Bool),
    f(6, "type", Str),
    f(7, "format", Str),
    f(8, "items", Msg(&PRIMITIVES_ITEMS)),
    f(9, "collectionFormat", Str),
    f(10, "default", Any),
    f(11, "maximum", F64),
    f(12, "exclusiveMaximum", Bool),
    f(13, "minimum", F64),
    f(14, "exclusiveMinimum", Bool),
    f(15, "maxLength", I64),
    f(16, "minLength", I64),
    f(17, "pattern", Str),
    f(18, "maxItems", I64),
    f(19, "minItems", I64),
    f(20, "uniqueItems", Bool),
    f(21, "enum", ANYS),
    f(22, "multipleOf", F64),
    ext(23),
]);

/// `PathParameterSubSchema`, and `HeaderParameterSubSchema`, which numbers its fields alike.
pub(super) static PATH_PARAMETER: Message = Message(&[
    f(1, "required", Bool),
    f(2, "in", Str),
    f(3, "description", Str),
    f(4, "name", Str),
    f(5, "type", Str),
    f(6, "format", Str),
    f(7, "items", Msg(&PRIMITIVES_ITEMS)),
    f(8, "collectionFormat", Str),
    f(9, "default", Any),
    f(10, "maximum", F64),
    f(11, "exclusiveMaximum", Bool),
    f(12, "minimum", F64),
    f(13, "exclusiveMinimum", Bool),
    f(14, "maxLength", I64),
    f(15, "minLength", I64),
    f(16, "pattern", Str),
    f(17, "maxItems", I64),
    f(18, "minItems", I64),
    f(19, "uniqueItems", Bool),
    f(20, "enum", ANYS),
    f(21, "multipleOf", F64),
    ext(22),
]);

pub(super) static PRIMITIVES_ITEMS: Message = Message(&[
    f(1, "type", Str),
    f(2, "format", Str),
    f(3, "items", Msg(&PRIMITIVES_ITEMS)),
    f(4, "collectionFormat", Str),
    f(5, "default", Any),
    f(6, "maximum", F64),
    f(7, "exclusiveMaximum", Bool),
    f(8, "minimum", F64),
    f(9, "exclusiveMinimum", Bool),
    f(10, "maxLength", I64),
    f(11, "minLength", I64),
    f(12, "pattern", Str),
    f(13, "maxItems", I64),
    f(14, "minItems", I64),
    f(15, "uniqueItems", Bool),
    f(16, "enum", ANYS),
    f(17, "multipleOf", F64),
    ext(18),
]);

/// `Schema` (without `xml`, 28).
pub(super) static SCHEMA: Message = Message(&[
    f(1, "$ref", Str),
    f(2, "format", Str),
    f(3, "title", Str),
    f(4, "description", Str),
    f(5, "default", Any),
    f(6, "multipleOf", F64),
    f(7, "maximum", F64),
    f(8, "exclusiveMaximum", Bool),
    f(9, "minimum", F64),
    f(10, "exclusiveMinimum", Bool),
    f(11, "maxLength", I64),
    f(12, "minLength", I64),
    f(13, "pattern", Str),
    f(14, "maxItems", I64),
    f(15, "minItems", I64),
    f(16, "uniqueItems", Bool),
    f(17, "maxProperties", I64),
    f(18, "minProperties", I64),
    f(19, "required", STRINGS),
    f(20, "enum", ANYS),
    f(21, "additionalProperties", Oneof(additional_properties)),
    f(22, "type", OneOrMany(&Str)),
    f(23, "items", OneOrMany(&SCHEMA_KIND)),
    f(24, "allOf", Rep(&SCHEMA_KIND)),
    f(25, "properties", Msg(&PROPERTIES)),
    f(26, "discriminator", Str),
    f(27, "readOnly", Bool),
    f(29, "externalDocs", Msg(&EXTERNAL_DOCS)),
    f(30, "example", Any),
    ext(31),
]);

pub(super) static PROPERTIES: Message = Message(&[Field(1, Key::All, SCHEMA_KIND)]);

/// `AdditionalPropertiesItem`: `schema` (1) or `boolean` (2).
pub(super) fn additional_properties(v: &Value) -> Option<(u32, Kind)> {
    Some(if v.is_boolean() { (2, Bool) } else { (1, SCHEMA_KIND) })
}

/// `ParametersItem`: `json_reference` (2) when the item is a `$ref`, else `parameter` (1).
pub(super) fn parameters_item(v: &Value) -> Option<(u32, Kind)> {
    Some(if v.get("$ref").is_some() { (2, Msg(&JSON_REFERENCE)) } else { (1, Oneof(parameter)) })
}

/// `Parameter`: `body_parameter` (1) or `non_body_parameter` (2), by `in`.
pub(super) fn parameter(v: &Value) -> Option<(u32, Kind)> {
    Some(if v.get("in").and_then(Value::as_str) == Some("body") {
        (1, Msg(&BODY_PARAMETER))
    } else {
        (2, Oneof(non_body_parameter))
    })
}

/// `NonBodyParameter`: the sub-schema `in` names (header 1, formData 2, query 3, path 4).
pub(super) fn non_body_parameter(v: &Value) -> Option<(u32, Kind)> {
    match v.get("in").and_then(Value::as_str)? {
        "header" => Some((1, Msg(&PATH_PARAMETER))),
        "formData" => Some((2, Msg(&QUERY_PARAMETER))),
        "query" => Some((3, Msg(&QUERY_PARAMETER))),
        "path" => Some((4, Msg(&PATH_PARAMETER))),
        _ => None,
    }
}

/// `ResponseValue`: `json_reference` (2) for a `$ref`, else `response` (1).
pub(super) fn response_value(v: &Value) -> Option<(u32, Kind)> {
    Some(if v.get("$ref").is_some() { (2, Msg(&JSON_REFERENCE)) } else { (1, Msg(&RESPONSE)) })
}

/// `SchemaItem`: always `schema` (1); versa has no `type: file` responses.
pub(super) fn schema_item(_: &Value) -> Option<(u32, Kind)> {
    Some((1, SCHEMA_KIND))
}
