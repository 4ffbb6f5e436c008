//! The protobuf form of `/openapi/v2`: gnostic's `openapi.v2.Document` message (the vendored
//! `proto/OpenAPIv2.proto`), which kube-apiserver serves to clients that ask for
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` — kubectl's OpenAPI getter
//! (client-side validation, `kubectl apply`, `explain` on old servers) asks for nothing else.
//! This module owns that form: the content types and the `Accept` negotiation of `/openapi/v2`
//! ([`negotiate`]), and the conversion of the assembled JSON document into the message's bytes
//! ([`document`]), which [`crate::openapi::OpenApiCache`] memoizes (compressed) beside the JSON.
//!
//! The conversion follows gnostic's compiler (`openapiv2/OpenAPIv2.go`, which kube-openapi runs
//! on its JSON before `proto.Marshal`): maps become lists of `Named*` pairs in document order
//! (`definitions`, `properties`, `paths`, `responses`), `x-` keys become `NamedAny` vendor
//! extensions whose value is YAML text, as are `default`, `example` and `enum` values; `$ref` is
//! `_ref`; `type` is a `TypeItem` list; `items` an `ItemsItem`; `additionalProperties` a schema
//! or a boolean (`AdditionalPropertiesItem`); parameters pick their oneof member from `$ref` and
//! `in` (reference, body, or header/formData/query/path), responses from `$ref`. Fields are
//! written in field-number order with proto3's rules (scalars equal to their default are
//! omitted, set messages and oneof members are not), which is how Go's `proto.Marshal` writes
//! them, so `protoc --decode` followed by `--encode` gives back the same bytes (a test checks
//! this). Every field of the messages versa's document uses is encoded; messages it never
//! contains (security definitions, tags, contact, license, `xml`, response headers and
//! examples, file schemas) are not, and keys outside the tables are skipped where gnostic
//! would refuse the document. The YAML of `Any` values has yaml.v3's block layout and, for
//! ordinary strings, its plain style; where quoting is needed it double-quotes (yaml.v3 may
//! single-quote, and writes multi-line strings as literal blocks), and it also quotes strings a
//! YAML 1.1 reader would take for something else (`on`, `1:20`), which yaml.v3 leaves plain. So
//! the text can differ from gnostic's in quoting, never in the value a reader gets from it; for
//! the document of a typical definition the bytes are the same as kube-apiserver's.
//!
//! Hand-written rather than generated: prost-build would compile the 60 messages of the
//! `.proto` (and `google.protobuf.Any`, hence prost-types) into a thousand lines of types, and
//! the JSON → typed-message conversion gnostic does would still have to be written over them.
//! Here the field tables below, checked line by line against the `.proto`, drive one small
//! encoder straight from the JSON value; there is no build script, no generated code and no new
//! dependency. The document is read one top-level entry at a time (a path item, a definition),
//! so converting a large document never holds its whole JSON tree.
//!
//! `messages.rs` holds the field tables, `encode.rs` the encoder that follows them (and reads
//! the document entry by entry), `yaml.rs` the YAML text of `Any` values.

mod encode;
mod messages;
mod yaml;

use serde::de::DeserializeSeed;

use encode::Streamed;
use messages::DOCUMENT;

/// The content type kube-openapi answers protobuf requests with (whichever of the two it was
/// asked for).
pub const PROTOBUF_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The media types `/openapi/v2` is served in, in kube-openapi's order of preference for
/// wildcards: JSON first, then the two spellings of the protobuf type (the `@` one is what
/// client-go sends).
const OFFERS: [(&str, &str, Format); 3] = [
    ("application", "json", Format::Json),
    ("application", "com.github.proto-openapi.spec.v2@v1.0+protobuf", Format::Protobuf),
    ("application", "com.github.proto-openapi.spec.v2.v1.0+protobuf", Format::Protobuf),
];

/// The form of a `/openapi/v2` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Protobuf,
}

/// The form `accept` (an `Accept` header, empty when absent) asks for, or `None` (406): the
/// clauses by falling quality, specific types before wildcards at equal quality, the first one
/// an offer matches wins (kube-openapi's handler with goautoneg). Parameters other than `q` are
/// ignored; unlike goautoneg, a clause with `q=0` is a refusal, as RFC 9110 says.
pub fn negotiate(accept: &str) -> Option<Format> {
    let accept = if accept.trim().is_empty() { "*/*" } else { accept };
    let mut clauses: Vec<(f32, u8, &str, &str)> = Vec::new();
    for clause in accept.split(',') {
        let mut parts = clause.split(';');
        let range = parts.next().unwrap_or("").trim();
        let (kind, sub) = match range.split_once('/') {
            Some((k, s)) => (k.trim(), s.trim()),
            None if range == "*" => ("*", "*"),
            None => continue,
        };
        let mut q = 1.0f32;
        for param in parts {
            if let Some((name, value)) = param.split_once('=')
                && name.trim().eq_ignore_ascii_case("q")
            {
                q = value.trim().parse().unwrap_or(0.0);
            }
        }
        if q > 0.0 {
            let wildcards = u8::from(kind == "*") + u8::from(sub == "*");
            clauses.push((q, wildcards, kind, sub));
        }
    }
    // Stable: equal clauses keep the header's order.
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    clauses.iter().find_map(|&(_, _, kind, sub)| {
        OFFERS.iter().find_map(|&(offer_kind, offer_sub, format)| {
            let kind_ok = kind == "*" || kind.eq_ignore_ascii_case(offer_kind);
            let sub_ok = sub == "*" || sub.eq_ignore_ascii_case(offer_sub);
            (kind_ok && sub_ok).then_some(format)
        })
    })
}

/// The `openapi.v2.Document` bytes of a Swagger 2.0 JSON document.
pub fn document(json: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let bytes = Streamed { message: &DOCUMENT, depth: 1 }.deserialize(&mut de)?;
    de.end()?;
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::Value;

    use super::encode::message;
    use serde_json::json;
    use versa_apiextensions::ResourceDefinition;

    use crate::openapi::OpenApiCache;
    use versa_registry::Compact;

    // -- a protobuf reader, just enough to walk the messages --------------------------------

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Wire<'a> {
        Varint(u64),
        Fixed64(u64),
        Len(&'a [u8]),
    }

    fn read_varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = b.split_first().expect("truncated varint");
            *b = rest;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
        }
        panic!("varint too long")
    }

    /// The fields of a message, in order.
    fn fields(mut b: &[u8]) -> Vec<(u32, Wire<'_>)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = read_varint(&mut b);
            let number = u32::try_from(key >> 3).unwrap();
            let wire = match key & 7 {
                0 => Wire::Varint(read_varint(&mut b)),
                1 => {
                    let (v, rest) = b.split_at(8);
                    b = rest;
                    Wire::Fixed64(u64::from_le_bytes(v.try_into().unwrap()))
                }
                2 => {
                    let len = usize::try_from(read_varint(&mut b)).unwrap();
                    let (v, rest) = b.split_at(len);
                    b = rest;
                    Wire::Len(v)
                }
                w => panic!("wire type {w}"),
            };
            out.push((number, wire));
        }
        out
    }

    fn all(b: &[u8], number: u32) -> Vec<&[u8]> {
        fields(b)
            .into_iter()
            .filter(|(n, _)| *n == number)
            .map(|(_, w)| match w {
                Wire::Len(v) => v,
                other => panic!("field {number}: {other:?}"),
            })
            .collect()
    }

    /// The one length-delimited field `number` (a message or a string).
    fn one(b: &[u8], number: u32) -> &[u8] {
        let found = all(b, number);
        assert_eq!(found.len(), 1, "field {number} in {:?}", fields(b));
        found[0]
    }

    fn has(b: &[u8], number: u32) -> bool {
        fields(b).iter().any(|(n, _)| *n == number)
    }

    fn text(b: &[u8], number: u32) -> &str {
        std::str::from_utf8(one(b, number)).unwrap()
    }

    fn texts(b: &[u8], number: u32) -> Vec<&str> {
        all(b, number).into_iter().map(|v| std::str::from_utf8(v).unwrap()).collect()
    }

    fn scalar(b: &[u8], number: u32) -> Wire<'_> {
        let found: Vec<_> = fields(b).into_iter().filter(|(n, _)| *n == number).collect();
        assert_eq!(found.len(), 1, "field {number}");
        found[0].1
    }

    /// The names of the `Named*` pairs in field `number`.
    fn names(b: &[u8], number: u32) -> Vec<&str> {
        all(b, number).into_iter().map(|pair| text(pair, 1)).collect()
    }

    /// The value of the `Named*` pair `name` in field `number`.
    fn entry<'a>(b: &'a [u8], number: u32, name: &str) -> &'a [u8] {
        let pair = all(b, number).into_iter().find(|pair| text(pair, 1) == name);
        one(pair.unwrap_or_else(|| panic!("no {name:?} in field {number}")), 2)
    }

    /// The YAML text of vendor extension `name` (field `number` of the message).
    fn extension<'a>(b: &'a [u8], number: u32, name: &str) -> &'a str {
        text(entry(b, number, name), 2)
    }

    // Schema fields.
    const REF: u32 = 1;
    const DESCRIPTION: u32 = 4;
    const REQUIRED: u32 = 19;
    const ENUM: u32 = 20;
    const ADDITIONAL: u32 = 21;
    const TYPE: u32 = 22;
    const ITEMS: u32 = 23;
    const PROPERTIES: u32 = 25;
    const SCHEMA_EXT: u32 = 31;

    fn property<'a>(schema: &'a [u8], name: &str) -> &'a [u8] {
        entry(one(schema, PROPERTIES), 1, name)
    }

    fn types(schema: &[u8]) -> Vec<&str> {
        texts(one(schema, TYPE), 1)
    }

    // -- the document of a definition -----------------------------------------------------

    fn crontab() -> ResourceDefinition {
        let spec = json!({"type": "object", "required": ["cronSpec"], "properties": {
            "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?$", "maxLength": 64},
            "image": {"type": "string", "default": "busybox", "enum": ["busybox", "nginx"]},
            "replicas": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10},
            "port": {"x-kubernetes-int-or-string": true},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
        }});
        let schema = json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.spec.replicas <= 10", "message": "at most \"ten\""}],
            "properties": {"spec": spec, "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}},
        });
        ResourceDefinition::from_document(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                    "schema": {"openAPIV3Schema": schema},
                }],
            },
        }))
        .unwrap()
    }

    fn crontab_document() -> (Vec<u8>, Vec<u8>) {
        let mut cache = OpenApiCache::new();
        let def = crontab();
        cache.upsert(Compact::of(&def));
        let doc = cache.v2().unwrap();
        (doc.json().unwrap().to_vec(), doc.protobuf().unwrap().to_vec())
    }

    #[test]
    fn crontab_document_structure() {
        let (_, doc) = crontab_document();
        assert_eq!(text(&doc, 1), "2.0");
        assert_eq!(texts(one(&doc, 2), 1), ["Kubernetes CRD Swagger"]);

        // Definitions: the kind, its list, and the meta types, in the JSON's (sorted) order.
        let definitions = one(&doc, 9);
        let defined = names(definitions, 1);
        assert!(defined.is_sorted());
        for name in [
            "com.example.stable.v1.CronTab",
            "com.example.stable.v1.CronTabList",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "io.k8s.api.autoscaling.v1.Scale",
        ] {
            assert!(defined.contains(&name), "{name}");
        }
        let kind = entry(definitions, 1, "com.example.stable.v1.CronTab");
        assert_eq!(types(kind), ["object"]);
        assert_eq!(
            extension(kind, SCHEMA_EXT, "x-kubernetes-group-version-kind"),
            "- group: stable.example.com\n  kind: CronTab\n  version: v1\n"
        );
        assert_eq!(
            extension(kind, SCHEMA_EXT, "x-kubernetes-validations"),
            "- message: at most \"ten\"\n  rule: self.spec.replicas <= 10\n"
        );
        assert_eq!(names(one(kind, PROPERTIES), 1), ["apiVersion", "kind", "metadata", "spec", "status"]);
        let metadata = property(kind, "metadata");
        assert_eq!(text(metadata, REF), "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        assert!(text(metadata, DESCRIPTION).starts_with("Standard object's metadata."));

        let spec = property(kind, "spec");
        assert_eq!(texts(spec, REQUIRED), ["cronSpec"]);
        let cron = property(spec, "cronSpec");
        assert_eq!(text(cron, 13), "^(\\d+|\\*)(/\\d+)?$");
        assert_eq!(scalar(cron, 11), Wire::Varint(64));
        let image = property(spec, "image");
        assert!(!has(image, 5), "v2 prunes defaults");
        let values: Vec<&str> = all(image, ENUM).into_iter().map(|any| text(any, 2)).collect();
        assert_eq!(values, ["busybox\n", "nginx\n"]);
        let replicas = property(spec, "replicas");
        assert_eq!(text(replicas, 2), "int32");
        assert_eq!(scalar(replicas, 9), Wire::Fixed64(1f64.to_bits()));
        assert_eq!(scalar(replicas, 7), Wire::Fixed64(10f64.to_bits()));
        // int-or-string: no type in v2 (the anyOf is dropped), the extension stays.
        let port = property(spec, "port");
        assert!(!has(port, TYPE));
        assert_eq!(extension(port, SCHEMA_EXT, "x-kubernetes-int-or-string"), "true\n");
        // preserve-unknown-fields: a bare extension.
        let extra = property(spec, "extra");
        assert_eq!(names(extra, SCHEMA_EXT), ["x-kubernetes-preserve-unknown-fields"]);
        assert!(!has(extra, TYPE) && !has(extra, PROPERTIES));
        // A map: additionalProperties as a schema (oneof member 1).
        let labels = property(spec, "labels");
        assert_eq!(types(one(one(labels, ADDITIONAL), 1)), ["string"]);
        // A list-map: items (one schema), list extensions.
        let ports = property(spec, "ports");
        assert_eq!(types(ports), ["array"]);
        let item = all(one(ports, ITEMS), 1);
        assert_eq!(item.len(), 1);
        assert_eq!(texts(item[0], REQUIRED), ["name"]);
        assert_eq!(extension(ports, SCHEMA_EXT, "x-kubernetes-list-type"), "map\n");
        assert_eq!(extension(ports, SCHEMA_EXT, "x-kubernetes-list-map-keys"), "- name\n");

        let list = entry(definitions, 1, "com.example.stable.v1.CronTabList");
        assert_eq!(texts(list, REQUIRED), ["items"]);
        assert_eq!(
            text(one(one(property(list, "items"), ITEMS), 1), REF),
            "#/definitions/com.example.stable.v1.CronTab"
        );

        // Paths.
        let paths = one(&doc, 8);
        assert!(!has(paths, 1), "no extensions on paths");
        assert_eq!(
            names(paths, 2),
            [
                "/apis/stable.example.com/v1/crontabs",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale",
                "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status",
            ]
        );
        let item = entry(paths, 2, "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}");
        // Path-level parameters: `name` inline (Parameter → NonBodyParameter → path sub-schema),
        // then references into the shared parameters.
        let params = all(item, 9);
        assert_eq!(params.len(), 3);
        let name = one(one(one(params[0], 1), 2), 4);
        assert_eq!((text(name, 4), text(name, 2)), ("name", "path"));
        assert_eq!(scalar(name, 1), Wire::Varint(1));
        assert_eq!(text(name, 5), "string");
        assert_eq!(scalar(name, 19), Wire::Varint(1), "uniqueItems");
        let namespace_ref = text(one(params[1], 2), 1);
        assert!(namespace_ref.starts_with("#/parameters/namespace-"), "{namespace_ref}");

        // An operation: ids, media types, parameters (body inline, options by reference),
        // responses, extensions.
        let patch = one(item, 8);
        assert_eq!(texts(patch, 1), ["stableExampleCom_v1"]);
        assert_eq!(text(patch, 5), "patchStableExampleComV1NamespacedCronTab");
        assert_eq!(texts(patch, 7)[0], "application/json-patch+json");
        assert_eq!(texts(patch, 10), ["https"]);
        let op_params = all(patch, 8);
        let body = one(one(op_params[0], 1), 1);
        assert_eq!((text(body, 2), text(body, 3)), ("body", "body"));
        assert_eq!(scalar(body, 4), Wire::Varint(1));
        assert_eq!(text(one(body, 5), REF), "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch");
        let referenced: Vec<&str> = op_params[1..].iter().map(|p| text(one(p, 2), 1)).collect();
        assert!(referenced.iter().any(|r| r.starts_with("#/parameters/fieldValidation-")), "{referenced:?}");
        let responses = one(patch, 9);
        assert_eq!(names(responses, 1), ["200", "401"]);
        let ok = one(entry(responses, 1, "200"), 1);
        assert_eq!(text(ok, 1), "OK");
        assert_eq!(text(one(one(ok, 2), 1), REF), "#/definitions/com.example.stable.v1.CronTab");
        assert_eq!(extension(patch, 13, "x-kubernetes-action"), "patch\n");
        assert_eq!(
            extension(patch, 13, "x-kubernetes-group-version-kind"),
            "group: stable.example.com\nkind: CronTab\nversion: v1\n"
        );

        // Shared parameters: Parameter → NonBodyParameter → query sub-schema (3).
        let shared = one(&doc, 10);
        let name = names(shared, 1).into_iter().find(|n| n.starts_with("fieldValidation-")).unwrap();
        let query = one(one(entry(shared, 1, name), 2), 3);
        assert_eq!((text(query, 4), text(query, 2), text(query, 6)), ("fieldValidation", "query", "string"));
        assert!(!has(query, 1), "required: false is proto3's default");
    }

    /// The protobuf form and the `ETag` are memoized with the JSON (compressed, in a temporary
    /// file) and dropped with it.
    #[test]
    fn memoized_with_the_json() {
        let mut cache = OpenApiCache::new();
        let def = crontab();
        cache.upsert(Compact::of(&def));
        let doc = cache.v2().unwrap();
        let (json, protobuf, tag) = (doc.json().unwrap(), doc.protobuf().unwrap(), doc.etag().to_owned());
        assert_eq!(tag, crate::openapi::etag(&json));
        // Written once, into its own file, and kept with the JSON's.
        let gzip = doc.protobuf_gzip().unwrap();
        assert!(gzip.in_file());
        assert!(std::sync::Arc::ptr_eq(&gzip, &cache.v2().unwrap().protobuf_gzip().unwrap()), "memoized");
        assert_eq!(protobuf, document(&json).unwrap());
        cache.remove("crontabs.stable.example.com");
        let doc = cache.v2().unwrap();
        assert_ne!(doc.etag(), tag);
        let empty = doc.protobuf().unwrap();
        assert!(names(one(&empty, 8), 2).is_empty());
        assert_eq!(empty, document(&doc.json().unwrap()).unwrap());
    }

    /// Reading the document entry by entry gives the bytes of encoding its whole value.
    #[test]
    fn streaming_matches_whole_value() {
        let (json, streamed) = crontab_document();
        let value: Value = serde_json::from_slice(&json).unwrap();
        let mut whole = Vec::new();
        message(&mut whole, value.as_object().unwrap(), &DOCUMENT);
        assert_eq!(streamed, whole);
    }

    #[test]
    fn oneofs_and_defaults() {
        let doc = document(
            json!({
                "swagger": "2.0", "info": {"title": "t", "version": "v"}, "paths": {},
                "definitions": {
                    "Closed": {"type": "object", "additionalProperties": false, "minimum": 0, "maxItems": 0},
                    "Open": {"additionalProperties": true, "type": ["string", "null"], "x-a": {"b": [1, "on", null]}},
                    "Empty": {},
                },
                "x-top": "z",
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        let definitions = one(&doc, 9);
        assert_eq!(names(definitions, 1), ["Closed", "Empty", "Open"]);
        let closed = entry(definitions, 1, "Closed");
        // A oneof member is written even when false; zero scalars are not.
        assert_eq!(scalar(one(closed, ADDITIONAL), 2), Wire::Varint(0));
        assert!(!has(closed, 9) && !has(closed, 14));
        let open = entry(definitions, 1, "Open");
        assert_eq!(scalar(one(open, ADDITIONAL), 2), Wire::Varint(1));
        assert_eq!(types(open), ["string", "null"]);
        assert_eq!(extension(open, SCHEMA_EXT, "x-a"), "b:\n    - 1\n    - \"on\"\n    - null\n");
        // An empty schema is still an entry with a (empty) value.
        assert_eq!(one(all(definitions, 1)[1], 2), b"");
        assert!(one(&doc, 8).is_empty());
        assert_eq!(extension(&doc, 16, "x-top"), "z\n");
    }

    // -- against protoc and the real schema --------------------------------------------------

    /// `protoc --decode` reads the bytes as `openapi.v2.Document` with no unknown field, and
    /// `--encode` of its text gives the same bytes back: every byte is where the schema says.
    /// protoc is a build requirement of the workspace (hack/install-deps.sh).
    #[test]
    fn protoc_reads_the_document() {
        let (_, doc) = crontab_document();
        let dir = tempfile::tempdir().unwrap();
        // The document never sets `google.protobuf.Any` (its `value` field stays empty), so a
        // stand-in of that import keeps the check independent of protoc's include files.
        let well_known = dir.path().join("google/protobuf");
        std::fs::create_dir_all(&well_known).unwrap();
        std::fs::write(
            well_known.join("any.proto"),
            "syntax = \"proto3\";\npackage google.protobuf;\nmessage Any { string type_url = 1; bytes value = 2; }\n",
        )
        .unwrap();
        let proto_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/proto");
        let protoc = |mode: &str, input: &[u8]| -> Vec<u8> {
            use std::io::Write as _;
            let mut child = std::process::Command::new("protoc")
                .arg(format!("-I{}", dir.path().display()))
                .arg(format!("-I{proto_dir}"))
                .arg(format!("--{mode}=openapi.v2.Document"))
                .arg("OpenAPIv2.proto")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("protoc must be installed (hack/install-deps.sh)");
            let mut stdin = child.stdin.take().unwrap();
            let input = input.to_vec();
            let writer = std::thread::spawn(move || stdin.write_all(&input));
            let output = child.wait_with_output().unwrap();
            writer.join().unwrap().unwrap();
            assert!(output.status.success(), "protoc --{mode}: {}", String::from_utf8_lossy(&output.stderr));
            output.stdout
        };
        let decoded = String::from_utf8(protoc("decode", &doc)).unwrap();
        let unknown: Vec<&str> =
            decoded.lines().filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())).collect();
        assert!(unknown.is_empty(), "fields the schema does not know: {unknown:?}");
        for expected in [
            "swagger: \"2.0\"",
            "name: \"com.example.stable.v1.CronTab\"",
            "_ref: \"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\"",
            "yaml: \"- group: stable.example.com\\n  kind: CronTab\\n  version: v1\\n\"",
            "path_parameter_sub_schema {",
            "query_parameter_sub_schema {",
            "body_parameter {",
            "json_reference {",
            "response_code {",
        ] {
            assert!(decoded.contains(expected), "{expected} not in protoc's output");
        }
        assert!(protoc("encode", decoded.as_bytes()) == doc, "protoc re-encodes the text to other bytes");
    }

    // -- Accept --------------------------------------------------------------------------

    #[test]
    fn negotiation() {
        const PB: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        const PB_DOT: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
        let cases = [
            ("", Some(Format::Json)),
            ("*/*", Some(Format::Json)),
            ("application/*", Some(Format::Json)),
            ("application/json", Some(Format::Json)),
            ("application/json;charset=utf-8", Some(Format::Json)),
            (PB, Some(Format::Protobuf)),
            (PB_DOT, Some(Format::Protobuf)),
            (&format!("{PB}, application/json"), Some(Format::Protobuf)),
            (&format!("application/json, {PB}"), Some(Format::Json)),
            (&format!("application/json;q=0.9, {PB}"), Some(Format::Protobuf)),
            (&format!("*/*, {PB}"), Some(Format::Protobuf)),
            (&format!("{PB};q=0.5, */*;q=0.8"), Some(Format::Json)),
            (&format!("{PB};q=0, application/json"), Some(Format::Json)),
            ("application/yaml", None),
            ("application/json;q=0", None),
            ("text/plain, application/yaml;q=0.5", None),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate(accept), want, "{accept}");
        }
    }
}
