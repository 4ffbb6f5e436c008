//! The structural model: a `JSONSchemaProps` lowered once into the form every algorithm walks.
//!
//! A schema is split as Kubernetes splits it: the *generic* part (type, nullable, default,
//! description, additionalProperties), the *extensions* (`x-kubernetes-*`), and the *value
//! validations* (everything that only restricts values, including the `allOf`/`anyOf`/`oneOf`/
//! `not` junctors, which may carry nothing but value validations in a structural schema).
//! [`Structural::lower`] builds the model once, when a definition is accepted: patterns are
//! compiled here, never per object. Lowering fails only on constructs that have no place in the
//! model at all (`$ref`, `items` as an array, ...); whether a lowered schema is *structural* is
//! decided separately by [`crate::structural_check`].

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, ValidationRule,
};
use serde_json::Value;

use crate::formats::Format;
use crate::pattern::Pattern;

/// The JSON type a schema node declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Type {
    /// No `type` given (allowed only with int-or-string or preserve-unknown-fields).
    #[default]
    None,
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    /// A `type` that is not one of the six (definition validation reports it).
    Other,
}

impl Type {
    pub fn parse(s: &str) -> Type {
        match s {
            "" => Type::None,
            "object" => Type::Object,
            "array" => Type::Array,
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            _ => Type::Other,
        }
    }
}

/// `additionalProperties`: a schema for every other key, or a bare boolean.
#[derive(Clone, Debug)]
pub enum AdditionalProperties {
    Schema(Box<Structural>),
    Bool(bool),
}

impl AdditionalProperties {
    /// The schema for additional keys, if one is given.
    pub fn schema(&self) -> Option<&Structural> {
        match self {
            AdditionalProperties::Schema(s) => Some(s),
            AdditionalProperties::Bool(_) => None,
        }
    }
}

/// A lowered, structural schema node.
#[derive(Clone, Debug, Default)]
pub struct Structural {
    // --- generic
    /// The `type` as written ("" when absent).
    pub type_name: String,
    /// The parsed `type`.
    pub type_: Type,
    pub description: Option<String>,
    pub title: Option<String>,
    /// `default`, if given (`Some(Value::Null)` for an explicit `default: null`).
    pub default: Option<Value>,
    pub nullable: bool,
    pub additional_properties: Option<AdditionalProperties>,

    // --- structure
    pub properties: Properties,
    pub items: Option<Box<Structural>>,

    // --- extensions
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    /// `x-kubernetes-list-type` as written.
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type` as written.
    pub map_type: Option<String>,
    /// `x-kubernetes-validations` (CEL rules), kept for the CEL crate.
    pub validations: Vec<ValidationRule>,

    // --- value validations
    pub value_validation: Option<Box<ValueValidation>>,

    /// What this node and everything below it (properties, items, additionalProperties)
    /// contain, computed once by [`Structural::lower`] so that walks skip subtrees with
    /// nothing to do.
    pub below: Below,
}

/// A node's `properties`: sorted by key (bytewise, as `String` orders) in one exactly sized
/// vector, looked up by binary search — the subset of `BTreeMap`'s interface the walks use.
/// Not a `BTreeMap`: its leaves hold eleven nodes inline (~3 KiB) even for an object of one
/// field, and real schemas are mostly small objects, so a map per node was most of a lowered
/// schema's memory (`docs/memory.md`).
#[derive(Clone, Debug)]
pub struct Properties<S = Structural>(Box<[(String, S)]>);

impl<S> Default for Properties<S> {
    fn default() -> Self {
        Properties(Box::default())
    }
}

impl<S> Properties<S> {
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&S> {
        self.position(key).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Adds or replaces `key` (building a schema in code; lowering collects instead).
    pub fn insert(&mut self, key: String, value: S) -> Option<S> {
        match self.position(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                let mut all = std::mem::take(&mut self.0).into_vec();
                all.insert(i, (key, value));
                self.0 = all.into_boxed_slice();
                None
            }
        }
    }

    /// The properties in key order.
    pub fn iter(&self) -> PropertiesIter<'_, S> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &S> + ExactSizeIterator {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The iterator of [`Properties::iter`].
pub type PropertiesIter<'a, S> =
    std::iter::Map<std::slice::Iter<'a, (String, S)>, fn(&'a (String, S)) -> (&'a String, &'a S)>;

impl<S> FromIterator<(String, S)> for Properties<S> {
    /// Sorted by key; of equal keys the last wins, as a map's inserts would.
    fn from_iter<I: IntoIterator<Item = (String, S)>>(iter: I) -> Properties<S> {
        let mut all: Vec<(String, S)> = iter.into_iter().collect();
        all.reverse();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.dedup_by(|later, earlier| later.0 == earlier.0);
        Properties(all.into_boxed_slice())
    }
}

impl<'a, S> IntoIterator for &'a Properties<S> {
    type Item = (&'a String, &'a S);
    type IntoIter = PropertiesIter<'a, S>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<S> std::ops::Index<&str> for Properties<S> {
    type Output = S;

    /// The property `key`, as a map's index: there must be one.
    #[allow(clippy::panic, reason = "Index's contract: a missing key panics, as BTreeMap's does")]
    fn index(&self, key: &str) -> &S {
        match self.get(key) {
            Some(s) => s,
            None => panic!("no property {key:?}"),
        }
    }
}

/// Facts about a schema subtree, for skipping work. A node counts itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Below {
    /// Some node has a `default`.
    pub defaults: bool,
    /// Some node is an `x-kubernetes-embedded-resource`.
    pub embedded_resources: bool,
    /// Some node has `x-kubernetes-list-type` `set` or `map`.
    pub list_types: bool,
    /// Some node has both `properties` and an `additionalProperties` schema (which a
    /// structural schema never has): validation visits its keys in two passes, and the write
    /// path's single walk leaves such objects to the separate walks.
    pub props_and_additional: bool,
    /// A direct child schema of this node — a property, `additionalProperties` or `items` —
    /// has a `default`, so defaulting has work at this node itself. Unlike the other facts,
    /// this one is not inherited from below.
    pub child_defaults: bool,
}

impl Below {
    fn union(self, o: Below) -> Below {
        Below {
            defaults: self.defaults || o.defaults,
            embedded_resources: self.embedded_resources || o.embedded_resources,
            list_types: self.list_types || o.list_types,
            props_and_additional: self.props_and_additional || o.props_and_additional,
            child_defaults: self.child_defaults,
        }
    }
}

/// Value validations: restrictions on values that do not change the shape of the data.
#[derive(Clone, Debug, Default)]
pub struct ValueValidation {
    /// `format` as written ("" when absent).
    pub format: String,
    /// `format` resolved when lowered: `None` when absent or when Kubernetes does not check it
    /// (unsupported formats are stripped before validation and never apply).
    pub format_kind: Option<Format>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    /// `pattern`, compiled with RE2 semantics when the schema was lowered.
    pub pattern: Option<Pattern>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    /// `enum` values (empty when absent).
    pub enum_: Vec<Value>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub all_of: Vec<NestedValueValidation>,
    pub any_of: Vec<NestedValueValidation>,
    pub one_of: Vec<NestedValueValidation>,
    pub not: Option<Box<NestedValueValidation>>,
}

impl ValueValidation {
    /// The `format` that applies: as written when Kubernetes checks it, else "".
    pub fn effective_format(&self) -> &str {
        if self.format_kind.is_some() { &self.format } else { "" }
    }

    /// Whether any of `allOf`, `anyOf`, `oneOf`, `not` is set.
    pub fn has_junctors(&self) -> bool {
        !self.all_of.is_empty() || !self.any_of.is_empty() || !self.one_of.is_empty() || self.not.is_some()
    }

    /// Whether none of the junctors, `enum` and a checked `format` is set: the keywords left
    /// each check one kind of value (strings, numbers, arrays, objects) by itself.
    pub fn is_plain(&self) -> bool {
        !self.has_junctors() && self.enum_.is_empty() && self.format_kind.is_none()
    }

    /// True when no keyword is set, so validators can skip the node.
    pub fn is_empty(&self) -> bool {
        self.format.is_empty()
            && self.maximum.is_none()
            && self.minimum.is_none()
            && !self.exclusive_maximum
            && !self.exclusive_minimum
            && self.max_length.is_none()
            && self.min_length.is_none()
            && self.pattern.is_none()
            && self.max_items.is_none()
            && self.min_items.is_none()
            && !self.unique_items
            && self.multiple_of.is_none()
            && self.enum_.is_empty()
            && self.max_properties.is_none()
            && self.min_properties.is_none()
            && self.required.is_empty()
            && self.all_of.is_empty()
            && self.any_of.is_empty()
            && self.one_of.is_empty()
            && self.not.is_none()
    }
}

/// A schema inside `allOf`/`anyOf`/`oneOf`/`not`. In a structural schema it carries only value
/// validations (and CEL rules); the generic and extension fields are kept so that
/// [`crate::structural_check`] can report them as violations, and so that the value validator
/// can still honour them for non-structural input (the JSON-Schema conformance suite).
#[derive(Clone, Debug, Default)]
pub struct NestedValueValidation {
    pub value_validation: ValueValidation,
    pub validations: Vec<ValidationRule>,
    pub items: Option<Box<NestedValueValidation>>,
    pub properties: Properties<NestedValueValidation>,
    pub additional_properties: Option<NestedAdditionalProperties>,
    /// Must be empty in a structural schema.
    pub forbidden: ForbiddenInNested,
}

/// `additionalProperties` inside a junctor (forbidden in structural schemas).
#[derive(Clone, Debug)]
pub enum NestedAdditionalProperties {
    Schema(Box<NestedValueValidation>),
    Bool(bool),
}

/// The generic and extension fields found inside a junctor; all must be unset to be structural.
#[derive(Clone, Debug, Default)]
pub struct ForbiddenInNested {
    pub type_name: String,
    pub type_: Type,
    pub description: Option<String>,
    pub title: Option<String>,
    pub default: Option<Value>,
    pub nullable: bool,
    pub has_additional_properties: bool,
    pub has_external_docs: bool,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
}

/// Why a schema could not be lowered at all. The message is Kubernetes' (`NewStructural`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LowerError(pub String);

impl Structural {
    /// Lowers a schema into the structural model.
    pub fn lower(s: &JSONSchemaProps) -> Result<Structural, LowerError> {
        check_unsupported(s)?;
        let value_validation = lower_value_validation(s)?;
        let items = match &s.items {
            None => None,
            Some(JSONSchemaPropsOrArray::Schema(item)) => Some(Box::new(Structural::lower(item)?)),
            Some(JSONSchemaPropsOrArray::Schemas(_)) => {
                return Err(LowerError("OpenAPIV3Schema 'items' must be a schema, but is an array".into()));
            }
        };
        let properties = s
            .properties
            .iter()
            .flatten()
            .map(|(k, p)| Ok((k.clone(), Structural::lower(p)?)))
            .collect::<Result<Properties, LowerError>>()?;
        let additional_properties = match &s.additional_properties {
            None => None,
            Some(JSONSchemaPropsOrBool::Schema(ap)) => {
                Some(AdditionalProperties::Schema(Box::new(Structural::lower(ap)?)))
            }
            Some(JSONSchemaPropsOrBool::Bool(b)) => Some(AdditionalProperties::Bool(*b)),
        };
        let type_name = s.type_.clone().unwrap_or_default();
        let mut below = Below {
            defaults: s.default.is_some(),
            embedded_resources: s.x_kubernetes_embedded_resource.unwrap_or(false),
            list_types: matches!(s.x_kubernetes_list_type.as_deref(), Some("set" | "map")),
            props_and_additional: !properties.is_empty()
                && additional_properties.as_ref().is_some_and(|ap| ap.schema().is_some()),
            child_defaults: false,
        };
        for child in
            properties.values().chain(items.as_deref()).chain(additional_properties.as_ref().and_then(|ap| ap.schema()))
        {
            below = below.union(child.below);
            below.child_defaults |= child.default.is_some();
        }
        Ok(Structural {
            below,
            type_: Type::parse(&type_name),
            type_name,
            description: s.description.clone(),
            title: s.title.clone(),
            default: s.default.as_ref().map(|j| j.0.clone()),
            nullable: s.nullable.unwrap_or(false),
            additional_properties,
            properties,
            items,
            preserve_unknown_fields: preserve_unknown_fields(s)?,
            embedded_resource: s.x_kubernetes_embedded_resource.unwrap_or(false),
            int_or_string: s.x_kubernetes_int_or_string.unwrap_or(false),
            list_type: s.x_kubernetes_list_type.clone(),
            list_map_keys: s.x_kubernetes_list_map_keys.clone().unwrap_or_default(),
            map_type: s.x_kubernetes_map_type.clone(),
            validations: s.x_kubernetes_validations.clone().unwrap_or_default(),
            value_validation: if value_validation.is_empty() { None } else { Some(Box::new(value_validation)) },
        })
    }

    /// Lowers a schema for serving: without `description` and `title`, which validation,
    /// defaulting, pruning and CEL never read (OpenAPI is published from the schema's text,
    /// definition validation lowers its own copy) and which are most of a real schema's bytes.
    /// They are dropped from `s` before lowering, so that the lowered nodes can take their
    /// place in memory.
    pub fn lower_for_serving(mut s: JSONSchemaProps) -> Result<Structural, LowerError> {
        fn strip(s: &mut JSONSchemaProps) {
            s.description = None;
            s.title = None;
            let nested = s.properties.iter_mut().flat_map(|p| p.values_mut());
            let items = match &mut s.items {
                Some(JSONSchemaPropsOrArray::Schema(item)) => Some(&mut **item),
                _ => None,
            };
            let additional = match &mut s.additional_properties {
                Some(JSONSchemaPropsOrBool::Schema(ap)) => Some(&mut **ap),
                _ => None,
            };
            let junctors = [&mut s.all_of, &mut s.any_of, &mut s.one_of].into_iter().flatten().flatten();
            for child in nested.chain(items).chain(additional).chain(junctors).chain(s.not.as_deref_mut()) {
                strip(child);
            }
        }
        strip(&mut s);
        Structural::lower(&s)
    }

    /// Parses a schema from JSON and lowers it (convenience for tests and tools).
    pub fn from_json(v: &Value) -> Result<Structural, LowerError> {
        let props: JSONSchemaProps =
            serde_json::from_value(v.clone()).map_err(|e| LowerError(format!("invalid schema: {e}")))?;
        Structural::lower(&props)
    }

    /// The value validations of this node, or an empty set.
    pub fn vv(&self) -> Option<&ValueValidation> {
        self.value_validation.as_deref()
    }

    /// The schema that applies to the value under `key` of an object node, if any.
    pub fn property_or_additional(&self, key: &str) -> Option<&Structural> {
        self.properties.get(key).or_else(|| self.additional_properties.as_ref().and_then(|ap| ap.schema()))
    }
}

/// The order of object keys (`String`'s: bytewise), without a call to `memcmp` for short keys.
#[inline]
pub(crate) fn cmp_keys(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().max(b.len()) > 24 {
        return a.cmp(b);
    }
    // Short keys, the usual ones: a byte loop costs less than a call to `memcmp`.
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// Pairs every entry of a JSON object with the property schema of the same key, if any, in key
/// order. Both maps are sorted by key (serde_json's `Map` is a `BTreeMap` here), so one merge
/// walk replaces a search of the schema's map per key. `entries` is the object's `iter()` or
/// `iter_mut()`.
pub(crate) fn with_props<'s, 'm, S, V, I>(props: &'s Properties<S>, entries: I) -> WithProps<'s, S, I>
where
    I: Iterator<Item = (&'m String, V)>,
{
    WithProps { props: props.iter(), next_prop: None, entries }
}

/// The iterator of [`with_props`].
pub(crate) struct WithProps<'s, S, I> {
    props: PropertiesIter<'s, S>,
    /// A property read ahead of the entries and not consumed yet.
    next_prop: Option<(&'s String, &'s S)>,
    entries: I,
}

impl<'s, 'm, S, V, I> Iterator for WithProps<'s, S, I>
where
    I: Iterator<Item = (&'m String, V)>,
{
    type Item = (&'m String, V, Option<&'s S>);

    fn next(&mut self) -> Option<Self::Item> {
        let (k, v) = self.entries.next()?;
        loop {
            let Some((pk, p)) = self.next_prop.take().or_else(|| self.props.next()) else {
                return Some((k, v, None));
            };
            match cmp_keys(pk, k) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Some((k, v, Some(p))),
                std::cmp::Ordering::Greater => {
                    self.next_prop = Some((pk, p));
                    return Some((k, v, None));
                }
            }
        }
    }
}

fn preserve_unknown_fields(s: &JSONSchemaProps) -> Result<bool, LowerError> {
    match s.x_kubernetes_preserve_unknown_fields {
        Some(false) => {
            Err(LowerError("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined".into()))
        }
        Some(true) => Ok(true),
        None => Ok(false),
    }
}

fn check_unsupported(s: &JSONSchemaProps) -> Result<(), LowerError> {
    let unsupported = |what: &str| Err(LowerError(format!("OpenAPIV3Schema '{what}' is not supported")));
    if s.id.as_deref().is_some_and(|x| !x.is_empty()) {
        return unsupported("id");
    }
    if s.schema.as_deref().is_some_and(|x| !x.is_empty()) {
        return unsupported("schema");
    }
    if s.ref_path.as_deref().is_some_and(|x| !x.is_empty()) {
        return unsupported("$ref");
    }
    if s.pattern_properties.as_ref().is_some_and(|x| !x.is_empty()) {
        return unsupported("patternProperties");
    }
    if s.dependencies.as_ref().is_some_and(|x| !x.is_empty()) {
        return unsupported("dependencies");
    }
    if s.additional_items.is_some() {
        return unsupported("additionalItems");
    }
    if s.definitions.as_ref().is_some_and(|x| !x.is_empty()) {
        return unsupported("definitions");
    }
    Ok(())
}

fn lower_value_validation(s: &JSONSchemaProps) -> Result<ValueValidation, LowerError> {
    let nested_list = |v: &Option<Vec<JSONSchemaProps>>| -> Result<Vec<NestedValueValidation>, LowerError> {
        v.iter().flatten().map(lower_nested).collect()
    };
    Ok(ValueValidation {
        format: s.format.clone().unwrap_or_default(),
        format_kind: s.format.as_deref().and_then(Format::parse),
        maximum: s.maximum,
        exclusive_maximum: s.exclusive_maximum.unwrap_or(false),
        minimum: s.minimum,
        exclusive_minimum: s.exclusive_minimum.unwrap_or(false),
        max_length: s.max_length,
        min_length: s.min_length,
        pattern: s.pattern.as_deref().map(Pattern::new),
        max_items: s.max_items,
        min_items: s.min_items,
        unique_items: s.unique_items.unwrap_or(false),
        multiple_of: s.multiple_of,
        enum_: s.enum_.iter().flatten().map(|j| j.0.clone()).collect(),
        max_properties: s.max_properties,
        min_properties: s.min_properties,
        required: s.required.clone().unwrap_or_default(),
        all_of: nested_list(&s.all_of)?,
        any_of: nested_list(&s.any_of)?,
        one_of: nested_list(&s.one_of)?,
        not: match &s.not {
            Some(n) => Some(Box::new(lower_nested(n)?)),
            None => None,
        },
    })
}

fn lower_nested(s: &JSONSchemaProps) -> Result<NestedValueValidation, LowerError> {
    check_unsupported(s)?;
    let items = match &s.items {
        None => None,
        Some(JSONSchemaPropsOrArray::Schema(item)) => Some(Box::new(lower_nested(item)?)),
        Some(JSONSchemaPropsOrArray::Schemas(_)) => {
            return Err(LowerError("OpenAPIV3Schema 'items' must be a schema, but is an array".into()));
        }
    };
    let properties = s
        .properties
        .iter()
        .flatten()
        .map(|(k, p)| Ok((k.clone(), lower_nested(p)?)))
        .collect::<Result<Properties<_>, LowerError>>()?;
    let additional_properties = match &s.additional_properties {
        None => None,
        Some(JSONSchemaPropsOrBool::Schema(ap)) => {
            Some(NestedAdditionalProperties::Schema(Box::new(lower_nested(ap)?)))
        }
        Some(JSONSchemaPropsOrBool::Bool(b)) => Some(NestedAdditionalProperties::Bool(*b)),
    };
    let type_name = s.type_.clone().unwrap_or_default();
    Ok(NestedValueValidation {
        value_validation: lower_value_validation(s)?,
        validations: s.x_kubernetes_validations.clone().unwrap_or_default(),
        items,
        properties,
        additional_properties,
        forbidden: ForbiddenInNested {
            type_: Type::parse(&type_name),
            type_name,
            description: s.description.clone(),
            title: s.title.clone(),
            default: s.default.as_ref().map(|j| j.0.clone()),
            nullable: s.nullable.unwrap_or(false),
            has_additional_properties: s.additional_properties.is_some(),
            has_external_docs: s.external_docs.is_some(),
            preserve_unknown_fields: preserve_unknown_fields(s)?,
            embedded_resource: s.x_kubernetes_embedded_resource.unwrap_or(false),
            int_or_string: s.x_kubernetes_int_or_string.unwrap_or(false),
            list_type: s.x_kubernetes_list_type.clone(),
            list_map_keys: s.x_kubernetes_list_map_keys.clone().unwrap_or_default(),
            map_type: s.x_kubernetes_map_type.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `Properties` keeps its keys sorted and unique (the last of equal keys wins, as a map's
    /// inserts would), and finds them by binary search.
    #[test]
    fn properties_are_a_sorted_map() {
        let mut props: Properties<u8> =
            [("b", 1), ("a", 2), ("c", 3), ("b", 4)].map(|(k, v)| (k.to_owned(), v)).into_iter().collect();
        assert_eq!(props.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>(), [("a", 2), ("b", 4), ("c", 3)]);
        assert_eq!(props.insert("bb".into(), 5), None);
        assert_eq!(props.insert("a".into(), 6), Some(2));
        assert_eq!(props.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b", "bb", "c"]);
        assert_eq!((props.get("bb"), props.get("z"), props["c"]), (Some(&5), None, 3));
        assert!(props.contains_key("a") && !props.contains_key("") && props.len() == 4);
        assert!(Properties::<u8>::default().is_empty());
    }

    /// The walks merge an object's keys with the schema's properties, which needs serde_json's
    /// `Map` to iterate in key order (it does unless its `preserve_order` feature is on).
    #[test]
    fn objects_iterate_in_key_order_and_pair_with_their_properties() {
        let obj = json!({"zeta": 1, "alpha": 2, "mid": 3, "Upper": 4, "": 5});
        let keys: Vec<&str> = obj.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["", "Upper", "alpha", "mid", "zeta"]);
        let props: Properties<u8> =
            [("zeta", 3), ("alpha", 1), ("beta", 2)].map(|(k, v)| (k.to_owned(), v)).into_iter().collect();
        let paired: Vec<(&str, Option<u8>)> =
            with_props(&props, obj.as_object().unwrap().iter()).map(|(k, _, p)| (k.as_str(), p.copied())).collect();
        assert_eq!(paired, [("", None), ("Upper", None), ("alpha", Some(1)), ("mid", None), ("zeta", Some(3))]);
        for (a, b) in [("a", "b"), ("ab", "a"), ("", "a"), ("same", "same"), ("a".repeat(30).as_str(), "a")] {
            assert_eq!(cmp_keys(a, b), a.cmp(b), "{a} {b}");
        }
    }

    #[test]
    fn lowers_the_crontab_schema() {
        let s = Structural::from_json(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10}
                    }
                }
            }
        }))
        .unwrap();
        let spec = &s.properties["spec"];
        assert_eq!(spec.type_, Type::Object);
        let replicas = spec.properties["replicas"].vv().unwrap();
        assert_eq!(replicas.maximum, Some(10.0));
        assert!(spec.properties["cronSpec"].vv().unwrap().pattern.as_ref().unwrap().regex().is_some());
    }

    #[test]
    fn refuses_what_has_no_place_in_the_model() {
        for (schema, want) in [
            (json!({"$ref": "#/x"}), "OpenAPIV3Schema '$ref' is not supported"),
            (json!({"items": [{"type": "string"}]}), "OpenAPIV3Schema 'items' must be a schema, but is an array"),
            (
                json!({"x-kubernetes-preserve-unknown-fields": false}),
                "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined",
            ),
            (json!({"allOf": [{"definitions": {"a": {}}}]}), "OpenAPIV3Schema 'definitions' is not supported"),
        ] {
            assert_eq!(Structural::from_json(&schema).unwrap_err().0, want);
        }
    }
}
