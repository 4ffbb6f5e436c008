//! `decode` end to end: real bytes (protoc's, against excerpts of upstream's `.proto` files, and
//! kubectl's), and every refusal with its error.

use serde_json::json;

use super::envelope::MAGIC;
use super::*;

// -- real bytes, from protoc and the excerpted upstream schema --------------------------

/// `protoc --encode=<message>` of text-format `text` against `proto/k8s/` (protoc is a
/// build requirement of the workspace: hack/install-deps.sh).
fn protoc(message: &str, text: &str) -> Vec<u8> {
    use std::io::Write as _;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/proto/k8s");
    let mut child = std::process::Command::new("protoc")
        .arg(format!("-I{dir}"))
        .arg(format!("--encode={message}"))
        .args(["core.proto", "meta.proto", "runtime.proto"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("protoc must be installed (hack/install-deps.sh)");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "protoc --encode={message}: {}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

/// A text-format string literal holding `bytes`.
fn text_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:03o}")).collect()
}

/// The body client-go sends: the magic, then the `runtime.Unknown` (encoded by protoc, its
/// empty strings written as client-go writes them) around `raw`.
fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let unknown = protoc(
        "k8s.io.apimachinery.pkg.runtime.Unknown",
        &format!(
            "typeMeta {{ apiVersion: {api_version:?} kind: {kind:?} }} raw: \"{}\" contentEncoding: \"\" contentType: \"\"",
            text_bytes(raw)
        ),
    );
    [MAGIC, &unknown].concat()
}

const CORE: &str = "k8s.io.api.core.v1";
const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// What `kubectl create namespace team` (v1.32) sent, from its `-v=9` log: every field of
/// ObjectMeta up to creationTimestamp written though empty, an empty spec, a status with
/// an empty phase, empty contentEncoding and contentType.
const KUBECTL_CREATE_NAMESPACE: &[u8] = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1c\x0a\x14\x0a\x04team\
    \x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";

#[test]
fn decodes_what_clients_send() {
    // (case, message, apiVersion, kind, text-format object, expected JSON)
    let cases: &[(&str, &str, &str, &str, &str, Value)] = &[
        (
            "a Secret as helm stores a release (bytes in base64, immutable as sent)",
            "Secret",
            "v1",
            "Secret",
            r#"
            metadata { name: "sh.helm.release.v1.demo.v1" namespace: "default" labels { key: "owner" value: "helm" } }
            data { key: "release" value: "H4sI\000\377" }
            type: "helm.sh/release.v1"
            stringData { key: "note" value: "plain" }
            immutable: false
            "#,
            json!({"kind": "Secret", "apiVersion": "v1",
                   "metadata": {"name": "sh.helm.release.v1.demo.v1", "namespace": "default", "labels": {"owner": "helm"}},
                   "data": {"release": "SDRzSQD/"}, "type": "helm.sh/release.v1",
                   "stringData": {"note": "plain"}, "immutable": false}),
        ),
        (
            "kubectl create namespace",
            "Namespace",
            "v1",
            "Namespace",
            r#"metadata { name: "team" }"#,
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}, "spec": {}, "status": {}}),
        ),
        (
            "namespace with every ObjectMeta field",
            "Namespace",
            "v1",
            "Namespace",
            r#"
            metadata {
              name: "team" generateName: "team-" namespace: "" selfLink: "/api/v1/namespaces/team"
              uid: "6b1a3c3e-0000-4000-8000-000000000001" resourceVersion: "42" generation: 3
              creationTimestamp { seconds: 1700000000 nanos: 999 }
              deletionTimestamp { seconds: 1700000600 }
              deletionGracePeriodSeconds: 0
              labels { key: "team" value: "a" }
              labels { key: "kubernetes.io/metadata.name" value: "team" }
              annotations { key: "note" value: "" }
              ownerReferences { apiVersion: "v1" kind: "ConfigMap" name: "owner" uid: "u-1" controller: true blockOwnerDeletion: false }
              ownerReferences { kind: "Secret" }
              finalizers: "example.com/a" finalizers: "example.com/b"
              managedFields {
                manager: "kubectl-create" operation: "Update" apiVersion: "v1" time { seconds: 1700000000 }
                fieldsType: "FieldsV1" fieldsV1 { Raw: "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:team\":{}}}}" }
              }
              managedFields { manager: "versa" operation: "Apply" subresource: "status" fieldsV1 { } }
            }
            spec { finalizers: "kubernetes" }
            status {
              phase: "Terminating"
              conditions {
                type: "NamespaceDeletionContentFailure" status: "False" lastTransitionTime { seconds: 1700000601 }
                reason: "ContentDeleted" message: "All content successfully deleted"
              }
              conditions { type: "NamespaceFinalizersRemaining" status: "True" }
            }"#,
            json!({
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {
                    "name": "team",
                    "generateName": "team-",
                    "selfLink": "/api/v1/namespaces/team",
                    "uid": "6b1a3c3e-0000-4000-8000-000000000001",
                    "resourceVersion": "42",
                    "generation": 3,
                    "creationTimestamp": "2023-11-14T22:13:20Z",
                    "deletionTimestamp": "2023-11-14T22:23:20Z",
                    "deletionGracePeriodSeconds": 0,
                    "labels": {"team": "a", "kubernetes.io/metadata.name": "team"},
                    "annotations": {"note": ""},
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-1",
                         "controller": true, "blockOwnerDeletion": false},
                        {"apiVersion": "", "kind": "Secret", "name": "", "uid": ""},
                    ],
                    "finalizers": ["example.com/a", "example.com/b"],
                    "managedFields": [
                        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                         "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
                         "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}},
                        {"manager": "versa", "operation": "Apply", "fieldsV1": null, "subresource": "status"},
                    ],
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {
                    "phase": "Terminating",
                    "conditions": [
                        {"type": "NamespaceDeletionContentFailure", "status": "False",
                         "lastTransitionTime": "2023-11-14T22:23:21Z", "reason": "ContentDeleted",
                         "message": "All content successfully deleted"},
                        {"type": "NamespaceFinalizersRemaining", "status": "True", "lastTransitionTime": null},
                    ],
                },
            }),
        ),
        (
            "event with every field",
            "Event",
            "v1",
            "Event",
            r#"
            metadata { name: "web.17a" namespace: "default" }
            involvedObject {
              kind: "Pod" namespace: "default" name: "web" uid: "u-2" apiVersion: "v1"
              resourceVersion: "7" fieldPath: "spec.containers{app}"
            }
            reason: "Pulled" message: "Container image pulled"
            source { component: "kubelet" host: "node-1" }
            firstTimestamp { seconds: 1700000000 } lastTimestamp { seconds: 1700000060 }
            count: 2 type: "Normal"
            eventTime { seconds: 1700000000 nanos: 123456789 }
            series { count: 2 lastObservedTime { seconds: 1700000060 nanos: 5000 } }
            action: "Pulling"
            related { kind: "Node" name: "node-1" apiVersion: "v1" }
            reportingComponent: "kubelet" reportingInstance: "node-1""#,
            json!({
                "kind": "Event",
                "apiVersion": "v1",
                "metadata": {"name": "web.17a", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-2",
                                   "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{app}"},
                "reason": "Pulled",
                "message": "Container image pulled",
                "source": {"component": "kubelet", "host": "node-1"},
                "firstTimestamp": "2023-11-14T22:13:20Z",
                "lastTimestamp": "2023-11-14T22:14:20Z",
                "count": 2,
                "type": "Normal",
                "eventTime": "2023-11-14T22:13:20.123456Z",
                "series": {"count": 2, "lastObservedTime": "2023-11-14T22:14:20.000005Z"},
                "action": "Pulling",
                "related": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
                "reportingComponent": "kubelet",
                "reportingInstance": "node-1",
            }),
        ),
        (
            // What Go writes for an Event whose fields are all zero.
            "empty event",
            "Event",
            "v1",
            "Event",
            "",
            json!({
                "kind": "Event", "apiVersion": "v1", "metadata": {}, "involvedObject": {}, "source": {},
                "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
                "reportingComponent": "", "reportingInstance": "",
            }),
        ),
        (
            "times at their edges",
            "Event",
            "v1",
            "Event",
            r#"
            metadata { creationTimestamp { seconds: 253402300799 } deletionTimestamp { } }
            firstTimestamp { seconds: 0 }
            lastTimestamp { seconds: 951782400 }
            count: -1
            eventTime { seconds: -62135596800 }
            series { count: 0 lastObservedTime { seconds: 10 nanos: -1500 } }"#,
            json!({
                "kind": "Event", "apiVersion": "v1",
                // A present but empty deletionTimestamp is a pointer to the zero time.
                "metadata": {"creationTimestamp": "9999-12-31T23:59:59Z", "deletionTimestamp": null},
                "involvedObject": {}, "source": {},
                "firstTimestamp": "1970-01-01T00:00:00Z",
                "lastTimestamp": "2000-02-29T00:00:00Z",
                "count": -1,
                // Go's zero time.
                "eventTime": null,
                // Negative nanoseconds borrow from the seconds, as Go's time.Unix does.
                "series": {"lastObservedTime": "1970-01-01T00:00:09.999999Z"},
                "reportingComponent": "", "reportingInstance": "",
            }),
        ),
        (
            "delete options",
            "DeleteOptions",
            "v1",
            "DeleteOptions",
            r#"
            gracePeriodSeconds: 0 preconditions { uid: "u-1" resourceVersion: "42" }
            propagationPolicy: "Foreground" dryRun: "All"
            ignoreStoreReadErrorWithClusterBreakingPotential: false"#,
            json!({
                "kind": "DeleteOptions", "apiVersion": "v1",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "u-1", "resourceVersion": "42"},
                "propagationPolicy": "Foreground",
                "dryRun": ["All"],
                "ignoreStoreReadErrorWithClusterBreakingPotential": false,
            }),
        ),
        (
            "delete options in another group version",
            "DeleteOptions",
            "meta.k8s.io/v1",
            "DeleteOptions",
            r#"preconditions { uid: "" } orphanDependents: true gracePeriodSeconds: 30"#,
            json!({
                "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                "gracePeriodSeconds": 30, "preconditions": {"uid": ""}, "orphanDependents": true,
            }),
        ),
        ("empty delete options", "DeleteOptions", "", "DeleteOptions", "", json!({"kind": "DeleteOptions"})),
    ];
    for (case, message, api_version, kind, text, expected) in cases {
        let package = if *message == "DeleteOptions" { META } else { CORE };
        let raw = protoc(&format!("{package}.{message}"), text);
        assert_eq!(decode(&body(api_version, kind, &raw)).as_ref(), Ok(expected), "{case}");
    }
}

#[test]
fn decodes_kubectl_bytes() {
    assert_eq!(
        decode(KUBECTL_CREATE_NAMESPACE),
        Ok(json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}, "spec": {}, "status": {}}))
    );
    // protoc writes the same object more tersely; both read alike.
    let terse = body("v1", "Namespace", &protoc(&format!("{CORE}.Namespace"), r#"metadata { name: "team" }"#));
    assert_ne!(terse, KUBECTL_CREATE_NAMESPACE);
    assert_eq!(decode(&terse), decode(KUBECTL_CREATE_NAMESPACE));
}

// -- refusals ------------------------------------------------------------------------

fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
    out
}

/// A length-delimited field.
fn ld(number: u64, payload: &[u8]) -> Vec<u8> {
    [varint(number << 3 | 2), varint(payload.len() as u64), payload.to_vec()].concat()
}

/// A varint field.
fn vi(number: u64, value: u64) -> Vec<u8> {
    [varint(number << 3), varint(value)].concat()
}

/// The envelope as [`body`] builds it, by hand (a test checks the two agree).
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())].concat();
    [MAGIC.to_vec(), ld(1, &type_meta), ld(2, raw), ld(3, b""), ld(4, b"")].concat()
}

fn namespace(metadata: &[u8]) -> Vec<u8> {
    envelope("v1", "Namespace", &ld(1, metadata))
}

#[test]
fn hand_built_envelope_is_protocs() {
    let raw = protoc(&format!("{CORE}.Namespace"), r#"metadata { name: "team" }"#);
    assert_eq!(envelope("v1", "Namespace", &raw), body("v1", "Namespace", &raw));
    assert_eq!(namespace(&ld(1, b"team")), envelope("v1", "Namespace", &raw));
}

#[test]
fn refuses() {
    use ProtobufError as E;
    let name = ld(1, b"team");
    let short = &KUBECTL_CREATE_NAMESPACE[..KUBECTL_CREATE_NAMESPACE.len() - 1];
    let cut_raw = &KUBECTL_CREATE_NAMESPACE[..30];
    let time = |seconds: u64| namespace(&[name.clone(), ld(8, &vi(1, seconds))].concat());
    let fields_v1 = |raw: &[u8]| namespace(&ld(17, &ld(7, &ld(1, raw))));
    let cases: Vec<(&str, Vec<u8>, ProtobufError)> = vec![
        ("JSON", br#"{"kind":"Namespace"}"#.to_vec(), E::Magic),
        ("short magic", b"k8s".to_vec(), E::Magic),
        ("wrong magic", [b"k8s\x01".as_slice(), &KUBECTL_CREATE_NAMESPACE[4..]].concat(), E::Magic),
        ("nothing after the magic", MAGIC.to_vec(), E::Empty),
        ("last byte cut", short.to_vec(), E::Truncated { message: "runtime.Unknown" }),
        ("raw cut", cut_raw.to_vec(), E::Truncated { message: "runtime.Unknown" }),
        (
            "metadata longer than raw",
            envelope("v1", "Namespace", &[0x0a, 0x14, 0x0a, 0x04, b't', b'e']),
            E::Truncated { message: "Namespace" },
        ),
        ("string longer than metadata", namespace(&[0x0a, 0x09, b't']), E::Truncated { message: "ObjectMeta" }),
        (
            "varint past 64 bits",
            namespace(&[vec![0x38], vec![0xff; 9], vec![0x02]].concat()),
            E::Varint { message: "ObjectMeta" },
        ),
        ("field number 0", namespace(&[0x02, 0x00]), E::FieldZero { message: "ObjectMeta" }),
        (
            "removed ObjectMeta field (clusterName)",
            namespace(&[name.clone(), ld(16, b"c1")].concat()),
            E::UnknownField { message: "ObjectMeta", number: 16, wire: 2 },
        ),
        (
            "unknown Namespace field",
            envelope("v1", "Namespace", &vi(4, 1)),
            E::UnknownField { message: "Namespace", number: 4, wire: 0 },
        ),
        (
            "unknown fixed64 field",
            envelope("v1", "Namespace", &[0x49, 0, 0, 0, 0, 0, 0, 0, 0]),
            E::UnknownField { message: "Namespace", number: 9, wire: 1 },
        ),
        (
            "unknown envelope field",
            [KUBECTL_CREATE_NAMESPACE, &ld(5, b"x")].concat(),
            E::UnknownField { message: "runtime.Unknown", number: 5, wire: 2 },
        ),
        ("unknown Time field", namespace(&ld(8, &vi(3, 1))), E::UnknownField { message: "Time", number: 3, wire: 0 }),
        (
            "name as a varint",
            namespace(&vi(1, 7)),
            E::WireType { message: "ObjectMeta", field: "name", wire: 0, expected: 2 },
        ),
        (
            "generation as bytes",
            namespace(&ld(7, b"7")),
            E::WireType { message: "ObjectMeta", field: "generation", wire: 2, expected: 0 },
        ),
        (
            "name twice",
            namespace(&[name.clone(), ld(1, b"other")].concat()),
            E::Duplicate { message: "ObjectMeta", field: "name" },
        ),
        (
            "raw twice",
            [KUBECTL_CREATE_NAMESPACE, &ld(2, b"")].concat(),
            E::Duplicate { message: "runtime.Unknown", field: "raw" },
        ),
        (
            "label key twice",
            namespace(
                &[ld(11, &[ld(1, b"a"), ld(2, b"1")].concat()), ld(11, &[ld(1, b"a"), ld(2, b"2")].concat())].concat(),
            ),
            E::DuplicateKey { message: "ObjectMeta", field: "labels", key: "a".to_owned() },
        ),
        (
            "count beyond int32",
            envelope("v1", "Event", &vi(8, 1 << 40)),
            E::Int32 { message: "Event", field: "count", value: 1 << 40 },
        ),
        ("name not UTF-8", namespace(&ld(1, &[0xff])), E::Utf8 { message: "ObjectMeta", field: "name" }),
        ("year 10000", time(253_402_300_800), E::TimeRange { message: "Time", seconds: 253_402_300_800 }),
        ("year -1", time(-62_167_219_201i64 as u64), E::TimeRange { message: "Time", seconds: -62_167_219_201 }),
        ("fieldsV1 in CBOR", fields_v1(&[0xa1, 0x61, b'a', 0xa0]), E::FieldsV1Cbor),
        (
            "fieldsV1 not JSON",
            fields_v1(b"{\"f:a\""),
            E::FieldsV1Json("EOF while parsing an object at line 1 column 6".to_owned()),
        ),
        (
            "gzip",
            [MAGIC, &ld(1, &ld(2, b"Namespace")), &ld(3, b"gzip")].concat(),
            E::ContentEncoding("gzip".to_owned()),
        ),
        (
            "JSON inside",
            [MAGIC, &ld(1, &ld(2, b"Namespace")), &ld(4, b"application/json")].concat(),
            E::ContentType("application/json".to_owned()),
        ),
        ("no kind", envelope("v1", "", b""), E::NoKind),
        ("Pod", envelope("v1", "Pod", b""), E::Kind { api_version: "v1".to_owned(), kind: "Pod".to_owned() }),
        (
            "Namespace in another version",
            envelope("v2", "Namespace", b""),
            E::Kind { api_version: "v2".to_owned(), kind: "Namespace".to_owned() },
        ),
    ];
    for (case, input, expected) in cases {
        assert_eq!(decode(&input), Err(expected), "{case}");
    }
}

#[test]
fn error_messages_name_what_went_wrong() {
    let pod = decode(&envelope("v1", "Pod", b"")).unwrap_err().to_string();
    assert_eq!(pod, r#"versa does not decode kind "Pod" (apiVersion "v1") from protobuf; send it as JSON"#);
    let unknown = decode(&namespace(&ld(16, b"c1"))).unwrap_err().to_string();
    assert_eq!(
        unknown,
        "ObjectMeta: field number 16 (wire type 2) is not one versa decodes; refusing the object rather than \
         dropping the field"
    );
}
