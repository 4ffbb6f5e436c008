//! The OpenAPI → CEL type mapping: types, names and the size facts kept for cost estimation.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use versa_cel::{DeclKind, DeclType, ListType};
use versa_schema::Structural;

fn decl(yaml: &str, root: bool) -> Option<DeclType> {
    let props: JSONSchemaProps = serde_saphyr::from_str(yaml).unwrap();
    DeclType::from_structural(&Structural::lower(&props).unwrap(), root)
}

#[test]
fn cel_types_and_names() {
    let t = decl(
        "type: object
required: [a]
properties:
  a: {type: string, maxLength: 10}
  l: {type: array, maxItems: 5, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}
  m: {type: object, additionalProperties: {type: integer}}
  s: {type: array, x-kubernetes-list-type: set, items: {type: string, format: byte}}
  t: {type: string, format: date-time}
  d: {type: string, format: duration}
  e: {type: string, enum: [ab, abcd]}
  n: {type: number}
  b: {type: boolean}
  ios: {x-kubernetes-int-or-string: true}
  u: {x-kubernetes-preserve-unknown-fields: true}
  ul: {type: array, items: {x-kubernetes-preserve-unknown-fields: true}}",
        false,
    )
    .unwrap();
    assert_eq!(t.cel_type().to_string(), "selfType", "the root object is named selfType");
    let DeclKind::Object(o) = &t.kind else { panic!("object expected") };
    let names: Vec<&str> = o.fields.keys().map(String::as_str).collect();
    // Untyped preserve-unknown data (u, and ul whose items are untyped) is invisible.
    assert_eq!(names, ["a", "b", "d", "e", "ios", "l", "m", "n", "s", "t"]);
    let ty = |f: &str| o.fields[f].ty.cel_type().to_string();
    assert_eq!(ty("a"), "string");
    assert_eq!(ty("l"), "list(selfType.l.@idx)");
    assert_eq!(ty("m"), "map(string, int)");
    assert_eq!(ty("s"), "list(bytes)");
    assert_eq!(ty("t"), "google.protobuf.Timestamp");
    assert_eq!(ty("d"), "google.protobuf.Duration");
    assert_eq!(ty("n"), "double");
    assert_eq!(ty("b"), "bool");
    assert_eq!(ty("ios"), "dyn");
    assert!(o.fields["a"].required);
    // Size facts.
    assert_eq!(o.fields["a"].ty.max_elements, Some(40));
    assert_eq!(o.fields["e"].ty.max_elements, Some(4));
    assert_eq!(o.fields["t"].ty.max_elements, Some(32));
    assert_eq!(o.fields["l"].ty.max_elements, Some(5));
    assert_eq!(o.fields["m"].ty.max_elements, Some((3 * 1024 * 1024 - 2) / 7));
    assert_eq!(o.fields["s"].ty.max_elements, Some((3 * 1024 * 1024 - 2) / 3));
    match &o.fields["l"].ty.kind {
        DeclKind::List { list_type, map_keys, .. } => {
            assert_eq!(*list_type, ListType::Map);
            assert_eq!(map_keys, &["k"]);
        }
        other => panic!("{other:?}"),
    }
    // {} plus the required property "a": len("a") + min size of a string ("") + 4.
    assert_eq!(t.min_serialized_size, 2 + 1 + 2 + 4);
}

#[test]
fn resource_roots_expose_type_and_object_meta() {
    let t = decl("type: object\nproperties:\n  spec: {type: object}", true).unwrap();
    let DeclKind::Object(o) = &t.kind else { panic!("object expected") };
    let names: Vec<&str> = o.fields.keys().map(String::as_str).collect();
    assert_eq!(names, ["apiVersion", "kind", "metadata", "spec"]);
    let DeclKind::Object(meta) = &o.fields["metadata"].ty.kind else { panic!("object expected") };
    let meta_names: Vec<&str> = meta.fields.keys().map(String::as_str).collect();
    assert_eq!(meta_names, ["generateName", "name"]);
    assert_eq!(o.fields["metadata"].ty.cel_type().to_string(), "selfType.metadata");
    // Schemas without a CEL type.
    assert!(decl("x-kubernetes-preserve-unknown-fields: true", false).is_none());
}
