//! Strategic merge patch (`application/strategic-merge-patch+json`) applied to an object of a
//! built-in kind, as kube-apiserver's patch handler applies it (`smpPatcher` in
//! `k8s.io/apiserver/pkg/endpoints/handlers/patch.go`, which calls
//! `strategicpatch.StrategicMergeMapPatch` of `k8s.io/apimachinery/pkg/util/strategicpatch`).
//!
//! The rules, by what the patch holds at a key of a map:
//!
//! - a map merges into the original's map recursively; `null` removes the key;
//! - a list replaces the original's list, unless the field has `patchStrategy: merge` in the
//!   Go types ([`Schema`], each kind's table in `versa_registry::kinds`): a list of maps then merges item by
//!   item on the field's `patchMergeKey`, a list of primitives is a union. `+listType=map` alone
//!   does not make a list merge: only the struct tag does, as in kube;
//! - directives: `$patch: replace` (the map, or in a merging list the whole list, is the
//!   patch's), `$patch: delete` (the map becomes empty; in a merging list, the item with that
//!   key goes), `$deleteFromPrimitiveList/<field>` (values removed from a list of primitives),
//!   `$setElementOrder/<field>` (the order of the merged list, as kubectl's client-side apply and
//!   `kubectl edit` send it), `$retainKeys` (keys of the original not listed go; the patch may
//!   only set listed keys);
//! - a new item of a merging list goes *before* the items the patch does not name, unless
//!   `$setElementOrder` places it: kube's `mergeSortedSlice`, which keeps the patch's order and
//!   the live order and, where it cannot compare two items, takes the patch's first (what
//!   kube's documentation shows for `kubectl patch` of a Deployment's containers).
//!
//! Values the patch puts in place without merging (a key the original does not have, a list that
//! replaces, a new item of a merging list, a map under `$patch: replace`) lose their `null`
//! members and directive keys, as kube's result does once it is decoded into the Go type (a
//! `null` becomes an omitted zero value, a `$setElementOrder/...` key is an unknown field of the
//! Go struct). versa keeps unknown fields of the admission kinds, so it removes them here. Where
//! kube runs `removeDirectives` (a key the original does not have, a value of another type), a
//! map holding a `$patch` goes whole; elsewhere it stays, without its `$patch` ([`Settle`]).
//!
//! Keys of a patch map are processed in sorted order (Go iterates a map in random order; only a
//! patch that both adds and deletes the same primitive could tell the difference).
//!
//! Errors are answered as the handler answers them (`interpretStrategicMergePatchError`):
//! a body that is not a JSON object, and the malformed-directive errors of
//! `k8s.io/apimachinery/pkg/util/mergepatch` (`invalid patch format of primitive list`, `... of
//! retainKeys`, `... of setElementOrder list`) are **400 BadRequest** with the error's text; a
//! list of lists is **422**; every other failure of the merge (a missing merge key, an unknown
//! `$patch`, mixed element types, a `$setElementOrder` that contradicts the patch's list) is an
//! error that is not a `metav1.Status`, which kube-apiserver answers **500** with no reason and
//! the error's text, formatted as Go's `%v` formats the values (`map: map[a:1] does not
//! contain declared merge key: name`). A body that is JSON `null` changes nothing, as in kube
//! (it decodes into a nil map).
//!
//! Deliberate differences from kube, each turning a Go panic or a lookup error into a result: a
//! key the kind's table does not list is a plain field (maps merge, lists replace), where kube
//! answers 500 `unable to find api field in struct ...` (it can only meet one in the patch, and
//! versa keeps unknown fields of the admission kinds in the original too); comparing maps or
//! lists as merge-key values or list items (a Go runtime panic, recovered as a 500) compares
//! them as JSON values.
//!
//! Input safety: recursion follows the patch's nesting, which `serde_json` bounds (128); the
//! list operations are quadratic in the length of one list, as kube's.

use serde_json::{Map, Value};

use versa_registry::kinds::patch::{Field, PLAIN, Schema};
use versa_schema::field::go_v;

use super::PatchError;

/// The key of the `$patch` directive in a map or a list item.
const DIRECTIVE: &str = "$patch";
const DELETE: &str = "delete";
const REPLACE: &str = "replace";
const MERGE: &str = "merge";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Go's type names, as `reflect.TypeOf` prints them in `mergepatch.ErrBadArgType`.
const GO_MAP: &str = "map[string]interface {}";
const GO_SLICE: &str = "[]interface {}";

type Result<T, E = PatchError> = std::result::Result<T, E>;

/// The patch metadata of field `name` of `schema`: kube's `LookupPatchMetadataForStruct` /
/// `LookupPatchMetadataForSlice`, which give the field's (or list item's) type, its strategy and
/// merge key.
fn lookup(schema: &Schema, name: &str) -> Meta {
    match schema.field(name) {
        Some(Field::Struct(schema)) => Meta { schema, merge: false, key: None, item_kind: "struct" },
        // A list without a merge key is a list of primitives (`[]string`), one with a key a list
        // of structs; kube names the kind of the items in one of its errors.
        Some(Field::Merge { key, item }) => {
            Meta { schema: item, merge: true, key, item_kind: if key.is_some() { "struct" } else { "string" } }
        }
        None => Meta { schema: &PLAIN, merge: false, key: None, item_kind: "struct" },
    }
}

/// One field's patch metadata.
struct Meta {
    /// The field's type (for a list, its items' type).
    schema: &'static Schema,
    /// `patchStrategy: merge`.
    merge: bool,
    /// `patchMergeKey`.
    key: Option<&'static str>,
    /// The Go kind of a list's items (`schema.Name()` in kube's error texts).
    item_kind: &'static str,
}

/// Applies the strategic merge patch `body` to `original`, an object of the kind `schema`
/// describes, and returns the patched object; `original` is not modified.
pub fn apply(schema: &'static Schema, original: &Value, body: &super::Body) -> Result<Value> {
    let patch = match body.document(PatchError::BadRequest)? {
        // Go decodes `null` into a nil map: a patch that changes nothing.
        Value::Null => return Ok(original.clone()),
        Value::Object(patch) => patch.clone(),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                versa_schema::objectmeta::json_kind(other)
            )));
        }
    };
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    merge_map(original, patch, schema).map(Value::Object)
}

/// Go's element kinds of a decoded JSON value (`reflect.TypeOf`): kube compares these to
/// decide between merging and replacing, and to refuse lists of mixed items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int,
    Float,
    String,
    Map,
    Slice,
}

impl GoType {
    fn of(value: &Value) -> GoType {
        match value {
            Value::Null => GoType::Nil,
            Value::Bool(_) => GoType::Bool,
            // The handler decodes with integers preserved (`int64`), like the original object.
            Value::Number(n) if n.as_i64().is_some() => GoType::Int,
            Value::Number(_) => GoType::Float,
            Value::String(_) => GoType::String,
            Value::Object(_) => GoType::Map,
            Value::Array(_) => GoType::Slice,
        }
    }

    fn name(self) -> &'static str {
        match self {
            GoType::Nil => "<nil>",
            GoType::Bool => "bool",
            GoType::Int => "int64",
            GoType::Float => "float64",
            GoType::String => "string",
            GoType::Map => GO_MAP,
            GoType::Slice => GO_SLICE,
        }
    }
}

/// kube's `mergeMap` with `MergeParallelList` and `IgnoreUnmatchedNulls`, the server's options.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &Schema,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.remove(DIRECTIVE) {
        return directive_in_map(directive, patch);
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_order(&mut original, &mut patch, schema)?;

    for (key, patch_value) in patch {
        let delete_list = key.starts_with(DELETE_FROM_PRIMITIVE_LIST);
        let key = match extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)? {
            // `$deleteFromPrimitiveList/` names no field: kube goes on with the whole key.
            Some(field) if !field.is_empty() => field.to_owned(),
            _ => key,
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(current) = original.remove(&key) else {
            // Not in the original: the patch's value, unless it is a deletion list.
            if !delete_list && let Some(value) = settle(patch_value, Settle::RemoveDirectives) {
                original.insert(key, value);
            }
            continue;
        };
        if GoType::of(&current) != GoType::of(&patch_value) {
            let value = if delete_list { Some(current) } else { settle(patch_value, Settle::RemoveDirectives) };
            if let Some(value) = value {
                original.insert(key, value);
            }
            continue;
        }
        let merged = match (current, patch_value) {
            (Value::Object(current), Value::Object(patch)) => {
                Value::Object(merge_map(current, patch, lookup(schema, &key).schema)?)
            }
            (Value::Array(current), Value::Array(patch)) => {
                Value::Array(merge_list_field(current, patch, &lookup(schema, &key), delete_list)?)
            }
            // A scalar replaces.
            (_, patch) => patch,
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// A map with `$patch`: `replace` is the patch's map, `delete` an empty map.
fn directive_in_map(directive: Value, patch: Map<String, Value>) -> Result<Map<String, Value>> {
    match directive.as_str() {
        Some(REPLACE) => Ok(settle_map(patch, Settle::Decode)),
        Some(DELETE) => Ok(Map::new()),
        _ => {
            let mut shown = patch;
            shown.insert(DIRECTIVE.to_owned(), directive.clone());
            Err(internal(format!("unknown patch type: {} in map: {}", go_s(&directive), go_v(&Value::Object(shown)))))
        }
    }
}

/// `$retainKeys` (kube's `applyRetainKeysDirective`): every key the patch sets must be listed;
/// keys of the original that are not listed go.
fn retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<()> {
    let Some(retained) = patch.remove(RETAIN_KEYS) else { return Ok(()) };
    let Value::Array(retained) = retained else { return Err(bad_format_retain_keys()) };
    let listed = |key: &str| retained.iter().any(|k| k.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null() || key.starts_with(DELETE_FROM_PRIMITIVE_LIST) || key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if !listed(key) {
            return Err(bad_format_retain_keys());
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// `$setElementOrder/<field>` (kube's `mergePatchIntoOriginal`): the list is merged here, with
/// its patch, and ordered: the items the directive names in its order, the others where they
/// were in the original.
fn set_element_order(original: &mut Map<String, Value>, patch: &mut Map<String, Value>, schema: &Schema) -> Result<()> {
    let directives: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER)).cloned().collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else { continue };
        let Value::Array(order) = order else { return Err(bad_arg_type(GO_SLICE, &order)) };
        let field = extract_key(&directive, SET_ELEMENT_ORDER)?.unwrap_or_default().to_owned();
        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg_type(GO_SLICE, other)),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg_type(GO_SLICE, other)),
        };
        let meta = lookup(schema, &field);
        validate_order(patch_list.as_deref().unwrap_or_default(), &order, meta.key)?;
        let merged = match (&original_list, patch_list.clone()) {
            (Some(list), None) => list.clone(),
            (None, Some(list)) => settle_list(list, Settle::RemoveDirectives),
            (Some(list), Some(patch)) => merge_list_field(list.clone(), patch, &meta, false)?,
            (None, None) => continue,
        };
        let (named, others) = partition(merged, &order, meta.key)?;
        let original_list = original_list.unwrap_or_default();
        let kind = element_type(&[original_list.as_slice(), patch_list.as_deref().unwrap_or_default()])?;
        let ordered = normalize_order(named, others, &order, &original_list, meta.key, kind)?;
        original.insert(field.clone(), Value::Array(ordered));
        patch.remove(&field);
    }
    Ok(())
}

/// kube's `validatePatchWithSetOrderList`: the patch's items (but deletions and directives) must
/// appear in the `$setElementOrder` list, in its order.
fn validate_order(patch_list: &[Value], order: &[Value], key: Option<&str>) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = match key {
        Some(_) => {
            let mut kept = Vec::new();
            for item in patch_list {
                let Value::Object(map) = item else { return Err(bad_arg_type(GO_MAP, item)) };
                if map.get(DIRECTIVE).and_then(Value::as_str) != Some(DELETE) {
                    kept.push(item);
                }
            }
            kept
        }
        None => patch_list.iter().collect(),
    };
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if kept[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if key_value_equal(kept[p], &order[o], key)? {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() && o >= order.len() {
        return Err(internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_v(&Value::Array(patch_list.to_vec())),
            go_v(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

/// kube's `mergeKeyValueEqual`.
fn key_value_equal(left: &Value, right: &Value, key: Option<&str>) -> Result<bool> {
    let Some(key) = key else { return Ok(left == right) };
    let Value::Object(left) = left else { return Err(bad_arg_type(GO_MAP, left)) };
    let Value::Object(right) = right else { return Err(bad_arg_type(GO_MAP, right)) };
    let l = left.get(key).ok_or_else(|| no_merge_key(left, key))?;
    let r = right.get(key).ok_or_else(|| no_merge_key(right, key))?;
    Ok(l == r)
}

/// kube's `mergeSliceHandler`: a merging list (or a deletion list, whatever the field's
/// strategy) merges; any other list is replaced by the patch's.
fn merge_list_field(original: Vec<Value>, patch: Vec<Value>, meta: &Meta, delete_list: bool) -> Result<Vec<Value>> {
    if meta.merge || delete_list {
        merge_list(original, patch, meta, delete_list)
    } else {
        Ok(settle_list(patch, Settle::Decode))
    }
}

/// kube's `mergeSlice`.
fn merge_list(original: Vec<Value>, patch: Vec<Value>, meta: &Meta, delete_list: bool) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_type(&[original.as_slice(), patch.as_slice()])?;
    if kind != GoType::Map {
        if delete_list {
            return Ok(original.into_iter().filter(|v| !patch.contains(v)).collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for value in original.iter().chain(&patch) {
            if !merged.contains(value) {
                merged.push(value.clone());
            }
        }
        let (named, others) = partition(merged, &patch, None)?;
        return normalize_order(named, others, &patch, &original, None, kind);
    }
    let Some(key) = meta.key else {
        return Err(internal(format!("cannot merge lists without merge key for {}", meta.item_kind)));
    };
    let (original, patch) = special_items(original, patch, key)?;
    let mut merged = original.clone();
    for item in &patch {
        let Value::Object(item_map) = item else { return Err(bad_arg_type(GO_MAP, item)) };
        let value = item_map.get(key).ok_or_else(|| no_merge_key(item_map, key))?;
        match find_by_key(&merged, key, value)? {
            Some(at) => {
                let current = match std::mem::take(&mut merged[at]) {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                merged[at] = Value::Object(merge_map(current, item_map.clone(), meta.schema)?);
            }
            None => {
                if let Some(value) = settle(item.clone(), Settle::Decode) {
                    merged.push(value);
                }
            }
        }
    }
    let (named, others) = partition(merged, &patch, Some(key))?;
    normalize_order(named, others, &patch, &original, Some(key), kind)
}

/// kube's `mergeSliceWithSpecialElements`: items with `$patch` in a merging list of maps —
/// `delete` removes the original's items with that key, `replace` makes the list the patch's
/// other items. Returns the original and the patch's plain items.
fn special_items(mut original: Vec<Value>, patch: Vec<Value>, key: &str) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(map) = &item else { return Err(bad_arg_type(GO_MAP, &item)) };
        match map.get(DIRECTIVE) {
            None => plain.push(item),
            Some(Value::String(d)) if d == DELETE => {
                let value = map.get(key).ok_or_else(|| no_merge_key(map, key))?;
                while let Some(at) = find_by_key(&original, key, value)? {
                    original.remove(at);
                }
            }
            Some(Value::String(d)) if d == REPLACE => replace = true,
            Some(Value::String(d)) if d == MERGE => {
                return Err(internal("merging lists cannot yet be specified in the patch".to_owned()));
            }
            Some(other) => {
                return Err(internal(format!("unknown patch type: {} in map: {}", go_s(other), go_v(&item))));
            }
        }
    }
    if replace {
        return Ok((settle_list(plain, Settle::Decode), Vec::new()));
    }
    Ok((original, plain))
}

/// kube's `findMapInSliceBasedOnKeyValue`: the index of the first map whose `key` is `value`.
fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>> {
    for (i, item) in list.iter().enumerate() {
        let Value::Object(map) = item else { return Err(internal(format!("value for key {i} is not a map"))) };
        if map.get(key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Splits `merged` into the items `by` names (by merge key for maps, by value for primitives)
/// and the others, each keeping its order.
fn partition(merged: Vec<Value>, by: &[Value], key: Option<&str>) -> Result<(Vec<Value>, Vec<Value>)> {
    let (mut named, mut others) = (Vec::new(), Vec::new());
    for item in merged {
        let found = match key {
            None => by.contains(&item),
            Some(key) => {
                let Value::Object(map) = &item else { return Err(bad_arg_type(GO_MAP, &item)) };
                let value = map.get(key).ok_or_else(|| no_merge_key(map, key))?;
                find_by_key(by, key, value)?.is_some()
            }
        };
        if found { named.push(item) } else { others.push(item) }
    }
    Ok((named, others))
}

/// kube's `normalizeElementOrder`: `named` sorted by `order`, `others` by the original's order,
/// then interleaved ([`merge_sorted`]).
fn normalize_order(
    named: Vec<Value>,
    others: Vec<Value>,
    order: &[Value],
    original: &[Value],
    key: Option<&str>,
    kind: GoType,
) -> Result<Vec<Value>> {
    let named = sort_by_order(named, order, key, kind)?;
    let others = sort_by_order(others, original, key, kind)?;
    Ok(merge_sorted(others, named, original, key, kind))
}

/// kube's `normalizeSliceOrder`: a stable sort by position in `order` (items it does not hold
/// last — kube's comparison is not an order then, and no patch reaches that case); `$patch:
/// delete` items go last.
fn sort_by_order(items: Vec<Value>, order: &[Value], key: Option<&str>, kind: GoType) -> Result<Vec<Value>> {
    let mut deletions = Vec::new();
    let mut items = items;
    if kind == GoType::Map {
        let key_name = key.unwrap_or_default();
        for item in items.iter().chain(order) {
            let Value::Object(map) = item else { return Err(bad_arg_type(GO_MAP, item)) };
            if !map.contains_key(key_name) {
                return Err(no_merge_key(map, key_name));
            }
        }
        let (kept, deleted): (Vec<Value>, Vec<Value>) =
            items.into_iter().partition(|item| item.get(DIRECTIVE).and_then(Value::as_str) != Some(DELETE));
        items = kept;
        deletions = deleted;
    }
    items.sort_by_key(|item| index(order, item, key, kind).unwrap_or(usize::MAX));
    items.extend(deletions);
    Ok(items)
}

/// kube's `mergeSortedSlice`: interleaves `left` (the original's items, in the original's
/// order) into `right` (the patch's items, in the patch's order). An item of `left` goes first
/// only when both are in the original and it was before; otherwise the patch's goes first.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    original: &[Value],
    key: Option<&str>,
    kind: GoType,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (index(original, l, key, kind), index(original, r, key, kind)) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// kube's `index`: the position in `list` of the first item with the same merge key value (maps)
/// or the same value (primitives). Like kube, two maps both without the key match.
fn index(list: &[Value], item: &Value, key: Option<&str>, kind: GoType) -> Option<usize> {
    if kind == GoType::Map {
        let key = key.unwrap_or_default();
        let wanted = item.as_object().and_then(|m| m.get(key));
        list.iter().position(|v| v.as_object().and_then(|m| m.get(key)) == wanted)
    } else {
        list.iter().position(|v| v == item)
    }
}

/// kube's `sliceElementType`: the one Go type of the items of all `lists`.
fn element_type(lists: &[&[Value]]) -> Result<GoType> {
    let mut kind = None;
    for value in lists.iter().flat_map(|l| l.iter()) {
        let t = GoType::of(value);
        match kind {
            None if t == GoType::Slice => {
                return Err(PatchError::OperationFailed { detail: "lists of lists are not supported".into() });
            }
            None => kind = Some(t),
            Some(k) if k != t => {
                let shown: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
                return Err(internal(format!("list element types are not identical: {}", go_v(&Value::Array(shown)))));
            }
            Some(_) => {}
        }
    }
    kind.ok_or_else(|| internal("no elements in any of the given slices".to_owned()))
}

/// For a key starting with a directive `prefix`, the name after it (`$setElementOrder/<name>`),
/// kube's `extractKey`; `None` for other keys.
fn extract_key<'k>(key: &'k str, prefix: &str) -> Result<Option<&'k str>> {
    if !key.starts_with(prefix) {
        return Ok(None);
    }
    match key.split_once('/') {
        Some((head, name)) if head == prefix => Ok(Some(name)),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => {
            Err(PatchError::BadRequest("invalid patch format of primitive list".to_owned()))
        }
        _ => Err(PatchError::BadRequest("invalid patch format of setElementOrder list".to_owned())),
    }
}

/// How a value the patch puts in place without merging is cleaned (see the module
/// documentation): both drop `null` members and directive keys, as kube's typed decoding does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settle {
    /// Also drop every map that holds a `$patch`, kube's `removeDirectives` (a key the original
    /// does not have, a value of another type, a list new with its `$setElementOrder`).
    RemoveDirectives,
    /// Keep such maps without their `$patch`, as kube's typed decoding keeps them (a list that
    /// replaces, a new item of a merging list, a map under `$patch: replace`).
    Decode,
}

/// A value the patch puts in place, as it ends up in kube once decoded into the Go type: `None`
/// when [`Settle::RemoveDirectives`] drops it whole.
fn settle(value: Value, how: Settle) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if how == Settle::RemoveDirectives && map.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(settle_map(map, how)))
        }
        Value::Array(items) => Some(Value::Array(settle_list(items, how))),
        other => Some(other),
    }
}

fn settle_map(map: Map<String, Value>, how: Settle) -> Map<String, Value> {
    map.into_iter()
        .filter(|(k, v)| !v.is_null() && !is_directive_key(k))
        .filter_map(|(k, v)| settle(v, how).map(|v| (k, v)))
        .collect()
}

fn settle_list(items: Vec<Value>, how: Settle) -> Vec<Value> {
    items.into_iter().filter_map(|v| settle(v, how)).collect()
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE
        || key == RETAIN_KEYS
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        || key.starts_with(SET_ELEMENT_ORDER)
}

fn bad_format_retain_keys() -> PatchError {
    PatchError::BadRequest("invalid patch format of retainKeys".to_owned())
}

/// An error kube-apiserver answers 500 with its text.
fn internal(message: String) -> PatchError {
    PatchError::Internal(message)
}

/// `mergepatch.ErrBadArgType`.
fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    internal(format!("expected a {expected}, but received a {}", GoType::of(actual).name()))
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(map: &Map<String, Value>, key: &str) -> PatchError {
    internal(format!("map: {} does not contain declared merge key: {key}", go_v(&Value::Object(map.clone()))))
}

/// A value as Go prints it with `%s`: strings as they are, other scalars as
/// `%!s(int64=5)`.
fn go_s(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_owned(),
        Value::Object(map) => {
            let members: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", go_s(v))).collect();
            format!("map[{}]", members.join(" "))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(go_s).collect::<Vec<_>>().join(" ")),
        scalar => format!("%!s({}={})", GoType::of(scalar).name(), go_v(scalar)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::patch::{Body, PatchType, apply_to};

    /// The patch metadata of the built-in kind a case file names: its `kind`,
    /// `Event.events.k8s.io` for the newer Event.
    fn kind_named(kind: &str) -> Option<&'static Schema> {
        let core = versa_registry::kinds::core_kind_named(kind).unwrap_or_else(|| panic!("unknown kind {kind}"));
        core.rules.strategic_merge()
    }

    /// Every `tests/data/strategic/*.yaml` file: a `kind` (whose patch metadata applies) and
    /// `cases`, each an `original` object, the patch (`patch`, a value sent as JSON, or `body`,
    /// the body as it is), and the `result` or the `error` (`code`, `message`). A case may name
    /// its own `kind`.
    #[test]
    fn cases() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/strategic");
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut count = 0;
        for file in files {
            let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let file_kind = doc["kind"].as_str().unwrap_or_else(|| panic!("{}: no kind", file.display()));
            for case in doc["cases"].as_array().unwrap() {
                let name = format!("{}: {}", file.display(), case["name"].as_str().unwrap());
                let kind = kind_named(case.get("kind").and_then(Value::as_str).unwrap_or(file_kind));
                let body = match case.get("body") {
                    Some(Value::String(body)) => body.clone(),
                    _ => serde_json::to_string(&case["patch"]).unwrap(),
                };
                let original = &case["original"];
                let got = apply_to(kind, PatchType::StrategicMerge, original, &Body::parse(body.as_bytes()));
                match (case.get("result"), case.get("error"), got) {
                    (Some(want), None, Ok(got)) => assert_eq!(&got, want, "{name}"),
                    (None, Some(want), Err(got)) => {
                        assert_eq!(u64::from(got.status_code()), want["code"].as_u64().unwrap(), "{name}: {got:?}");
                        assert_eq!(got.message(), want["message"].as_str().unwrap(), "{name}");
                    }
                    (_, _, got) => panic!("{name}: got {got:?}"),
                }
                count += 1;
            }
        }
        assert!(count >= 30, "{count} cases");
    }

    /// Custom resources and definitions have no strategic merge patch: 415, as before.
    #[test]
    fn not_for_custom_resources() {
        let err = apply_to(None, PatchType::StrategicMerge, &json!({}), &Body::parse(b"{}")).unwrap_err();
        assert_eq!(err.status_code(), 415);
    }

    /// Every built-in kind has its metadata, and the ones with merging lists merge them.
    #[test]
    fn every_builtin_kind_has_metadata() {
        let original = json!({"metadata": {"finalizers": ["a"]}});
        for core in versa_registry::kinds::CORE {
            let kind = core.builtin;
            let schema = versa_registry::kinds::of(&versa_registry::Resource::core(kind)).strategic_merge();
            let got = apply_to(
                schema,
                PatchType::StrategicMerge,
                &original,
                &Body::parse(br#"{"metadata":{"finalizers":["b"]}}"#),
            );
            assert_eq!(got.unwrap(), json!({"metadata": {"finalizers": ["b", "a"]}}), "{kind:?}");
        }
    }

    #[test]
    fn go_formatting() {
        let cases = [
            (json!({"b": [1, "x"], "a": null}), "map[a:<nil> b:[1 x]]"),
            (json!(1.5), "1.5"),
            (json!(1_000_000.0), "1e+06"),
            (json!(123_456.0), "123456"),
            (json!(0.00001), "1e-05"),
            (json!(true), "true"),
        ];
        for (value, want) in cases {
            assert_eq!(go_v(&value), want, "{value}");
        }
        assert_eq!(go_s(&json!(5)), "%!s(int64=5)");
        assert_eq!(go_s(&json!("x")), "x");
    }
}
