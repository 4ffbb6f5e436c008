//! The `ConversionReview` exchange: the request versa sends and the checks on the answer.
//!
//! kube-apiserver sends the review in the first of the definition's `conversionReviewVersions`
//! it speaks (`v1`, `v1beta1`) and decodes the answer into a review of that same version
//! (`webhook_converter.go`: `createConversionReviewObjects`, `getConvertedObjectsFromResponse`).
//! For `v1` the answer must be an `apiextensions.k8s.io/v1` `ConversionReview` carrying the
//! request's uid; `v1beta1` answers were never checked for either, and still are not. Then
//! `response.result.status` must be `Success`; otherwise the webhook's `result.message` is the
//! error. Every message here is kube's; where kube's text comes from Go's JSON decoder, the
//! decoder's wording is kept with our parser's detail.
//!
//! Everything here is pure: bytes and values in, values or messages out.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value;
use serde_json::value::RawValue;
use versa_schema::field::go_quote;

use crate::gv::{GroupVersion, gvk_string, json_kind};
use crate::parallel::{PARALLEL_MIN, in_two};

/// The group of `ConversionReview`.
pub(crate) const REVIEW_GROUP: &str = "apiextensions.k8s.io";
/// The kind of the review.
pub(crate) const REVIEW_KIND: &str = "ConversionReview";

/// A `ConversionReview` version versa speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReviewVersion {
    V1,
    V1beta1,
}

impl ReviewVersion {
    /// The first entry of `conversionReviewVersions` that versa speaks, as kube picks it.
    pub(crate) fn first_supported(versions: &[String]) -> Option<ReviewVersion> {
        versions.iter().find_map(|v| match v.as_str() {
            "v1" => Some(ReviewVersion::V1),
            "v1beta1" => Some(ReviewVersion::V1beta1),
            _ => None,
        })
    }

    /// `v1` or `v1beta1`.
    pub(crate) fn version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => "v1",
            ReviewVersion::V1beta1 => "v1beta1",
        }
    }

    /// `apiextensions.k8s.io/<version>`.
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1 => "apiextensions.k8s.io/v1",
            ReviewVersion::V1beta1 => "apiextensions.k8s.io/v1beta1",
        }
    }
}

/// The body of the request: a review asking for `objects` at `desired_api_version`; and where
/// in it each object's `metadata` value is written (an empty range for an object without one),
/// which a converted object's metadata is compared with ([`crate::converted`]).
pub(crate) fn request_body(
    version: ReviewVersion,
    uid: &str,
    desired_api_version: &str,
    objects: &[&Value],
) -> (Vec<u8>, Vec<Range<usize>>) {
    // Serialised from borrowed parts: the objects are written once, never copied into a tree.
    #[derive(serde::Serialize)]
    struct Request<'a> {
        uid: &'a str,
        #[serde(rename = "desiredAPIVersion")]
        desired_api_version: &'a str,
        objects: &'a [&'a Value],
    }
    #[derive(serde::Serialize)]
    struct Review<'a> {
        #[serde(rename = "apiVersion")]
        api_version: &'a str,
        kind: &'a str,
        request: Request<'a>,
    }
    let review = |objects| Review {
        api_version: version.api_version(),
        kind: REVIEW_KIND,
        request: Request { uid, desired_api_version, objects },
    };
    // The review without objects ends `"objects":[]}}`; the objects go between the brackets.
    let envelope = serde_json::to_vec(&review(&[])).unwrap_or_default();
    let Some(head) = envelope.strip_suffix(b"]}}") else {
        let body = serde_json::to_vec(&review(objects)).unwrap_or_default();
        return (body, vec![0..0; objects.len()]);
    };
    let mut body = Vec::with_capacity(head.len() + objects.len() * 512);
    body.extend_from_slice(head);
    let mut spans = Vec::with_capacity(objects.len());
    let mut append = |(written, at): (Vec<u8>, Vec<Range<usize>>), body: &mut Vec<u8>| {
        let offset = body.len();
        body.extend_from_slice(&written);
        spans.extend(at.into_iter().map(|r| if r.is_empty() { r } else { r.start + offset..r.end + offset }));
    };
    if objects.len() < PARALLEL_MIN {
        append(write_objects(objects), &mut body);
    } else {
        // A large batch: written in two halves at once.
        let (first, second) = objects.split_at(objects.len() / 2);
        let (first, second) = match in_two(first, second, write_objects) {
            (first, Some(second)) => (first, second),
            (first, None) => (first, write_objects(second)),
        };
        append(first, &mut body);
        body.push(b',');
        append(second, &mut body);
    }
    body.extend_from_slice(b"]}}");
    (body, spans)
}

/// `objects`, comma-separated, as `serde_json` writes them; and where each one's `metadata`
/// value is.
fn write_objects(objects: &[&Value]) -> (Vec<u8>, Vec<Range<usize>>) {
    let mut out = Vec::with_capacity(objects.len() * 512);
    let mut spans = Vec::with_capacity(objects.len());
    for (i, obj) in objects.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        spans.push(write_object(&mut out, obj));
    }
    (out, spans)
}

/// `obj` as `serde_json` writes it (members in the map's order); returns where its `metadata`
/// value is. Writing into a vector cannot fail.
fn write_object(out: &mut Vec<u8>, obj: &Value) -> Range<usize> {
    let Value::Object(map) = obj else {
        let _ = serde_json::to_writer(&mut *out, obj);
        return 0..0;
    };
    let mut metadata = 0..0;
    out.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        let start = out.len();
        let _ = serde_json::to_writer(&mut *out, v);
        if k == "metadata" {
            metadata = start..out.len();
        }
    }
    out.push(b'}');
    metadata
}

/// Decodes and checks a webhook's answer (a 2xx body, not empty) to the review `uid` sent in
/// `version`, and returns the converted objects as the webhook gave them, still unparsed (slices
/// of `body`, whose JSON syntax has been checked whole). The error is the reason kube prints
/// after `conversion webhook for <gvk> failed: `.
pub(crate) fn converted_objects<'a>(
    version: ReviewVersion,
    uid: &str,
    body: &'a [u8],
) -> Result<Vec<&'a RawValue>, String> {
    let review = decode(version, body)?;
    match version {
        ReviewVersion::V1 => {
            // Checked on the review as the webhook wrote it: a missing apiVersion is an error.
            let got = (GroupVersion::parse(&review.api_version), review.kind.as_str());
            if got != (GroupVersion { group: REVIEW_GROUP, version: "v1" }, REVIEW_KIND) {
                return Err(format!(
                    "expected webhook response of {}, got {}",
                    gvk_string(version.api_version(), REVIEW_KIND),
                    gvk_string(&review.api_version, &review.kind)
                ));
            }
        }
        ReviewVersion::V1beta1 => {
            // kube never checked v1beta1 answers. Its decoder fills a missing apiVersion or kind
            // from the review it expects and cannot turn another kind or version into it; the
            // same rule is applied here, with the v1 wording.
            let gv = GroupVersion::parse(&review.api_version);
            let gv = if gv.version.is_empty() { GroupVersion { group: REVIEW_GROUP, version: "v1beta1" } } else { gv };
            let kind = if review.kind.is_empty() { REVIEW_KIND } else { review.kind.as_str() };
            if (gv, kind) != (GroupVersion { group: REVIEW_GROUP, version: "v1beta1" }, REVIEW_KIND) {
                return Err(format!(
                    "expected webhook response of {}, got {}",
                    gvk_string(version.api_version(), REVIEW_KIND),
                    gvk_string(&review.api_version, &review.kind)
                ));
            }
        }
    }
    let Some(response) = review.response else {
        return Err("no response provided".into());
    };
    if version == ReviewVersion::V1 && response.uid != uid {
        return Err(format!("expected response.uid={}, got {}", go_quote(uid), go_quote(&response.uid)));
    }
    if response.status != "Success" {
        if !response.message.is_empty() {
            return Err(response.message);
        }
        return Err(format!("response.result.status was '{}', not 'Success'", response.status));
    }
    Ok(response.converted_objects)
}

/// The fields of a review kube's typed decoding keeps.
struct Review<'a> {
    api_version: String,
    kind: String,
    response: Option<Response<'a>>,
}

struct Response<'a> {
    uid: String,
    status: String,
    message: String,
    converted_objects: Vec<&'a RawValue>,
}

/// An object's members, their values left unparsed (duplicate keys: the last wins, as in Go).
type Members<'a> = BTreeMap<String, &'a RawValue>;

/// A small member parsed (type and status fields; never the objects).
fn parse_member(raw: Option<&&RawValue>) -> Result<Option<Value>, String> {
    raw.map(|r| serde_json::from_str::<Value>(r.get()).map_err(|e| e.to_string())).transpose()
}

/// `raw` as members, when it is an object; otherwise the parsed value, for the error.
fn members<'a>(raw: &'a str) -> Result<Members<'a>, Value> {
    serde_json::from_str::<Members<'a>>(raw).map_err(|_| serde_json::from_str::<Value>(raw).unwrap_or(Value::Null))
}

/// Decodes the review with the strictness of kube's typed decoding: `null` leaves a field at its
/// zero value, a value of another JSON type is an error naming the Go field. The converted
/// objects are located, not parsed.
///
/// A well-formed answer is read in one pass ([`decode_fast`]); anything unusual (a field of the
/// wrong type, a duplicate key, a `Status` instead of a review) goes through the member-by-member
/// reading below, which words every error as kube does.
fn decode(version: ReviewVersion, body: &[u8]) -> Result<Review<'_>, String> {
    if let Some(review) = decode_fast(body) {
        return Ok(review);
    }
    decode_exact(version, body)
}

/// The usual answer, typed in one pass over the bytes; `None` when it is not one.
fn decode_fast(body: &[u8]) -> Option<Review<'_>> {
    #[derive(serde::Deserialize)]
    struct Wire<'a> {
        #[serde(rename = "apiVersion", default)]
        api_version: Option<String>,
        #[serde(default)]
        kind: Option<String>,
        #[serde(default, borrow)]
        response: Option<MapOnly<WireResponse<'a>>>,
    }
    #[derive(serde::Deserialize)]
    struct WireResponse<'a> {
        #[serde(default)]
        uid: Option<String>,
        #[serde(default)]
        result: Option<MapOnly<WireResult>>,
        #[serde(rename = "convertedObjects", default, borrow)]
        converted_objects: Option<Vec<&'a RawValue>>,
    }
    #[derive(serde::Deserialize)]
    struct WireResult {
        #[serde(default)]
        status: Option<String>,
        #[serde(default)]
        message: Option<String>,
    }
    let MapOnly(wire) = serde_json::from_slice::<MapOnly<Wire<'_>>>(body).ok()?;
    let kind = wire.kind.unwrap_or_default();
    if kind == "Status" {
        return None;
    }
    let response = wire.response.map(|MapOnly(r)| {
        let result = r.result.map_or(WireResult { status: None, message: None }, |MapOnly(r)| r);
        Response {
            uid: r.uid.unwrap_or_default(),
            status: result.status.unwrap_or_default(),
            message: result.message.unwrap_or_default(),
            converted_objects: r.converted_objects.unwrap_or_default(),
        }
    });
    Some(Review { api_version: wire.api_version.unwrap_or_default(), kind, response })
}

/// `T` from a JSON object only (a derived struct would also take an array, as Go does not).
struct MapOnly<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Objects<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Objects<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Objects(std::marker::PhantomData)).map(MapOnly)
    }
}

/// [`decode`], member by member.
fn decode_exact(version: ReviewVersion, body: &[u8]) -> Result<Review<'_>, String> {
    let doc = match serde_json::from_slice::<Members<'_>>(body) {
        Ok(doc) => doc,
        Err(_) => {
            let doc: Value = serde_json::from_slice(body)
                .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
            return Err(format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
                json_kind(&doc)
            ));
        }
    };
    let mut type_meta = [String::new(), String::new()];
    for (slot, key) in type_meta.iter_mut().zip(["apiVersion", "kind"]) {
        match parse_member(doc.get(key))? {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => *slot = s,
            Some(other) => {
                return Err(format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{key} of type string",
                    json_kind(&other)
                ));
            }
        }
    }
    let [api_version, kind] = type_meta;
    // A failure Status instead of a review: its message is the error (client-go's `Into`).
    if kind == "Status" && (api_version.is_empty() || api_version == "v1") {
        let status = parse_member(doc.get("status"))?;
        if status.as_ref().and_then(Value::as_str) != Some("Success") {
            let message = parse_member(doc.get("message"))?;
            return Err(message.as_ref().and_then(Value::as_str).unwrap_or("").to_owned());
        }
    }
    let pkg = version.version();
    let response = match doc.get("response").map(|r| r.get()) {
        None | Some("null") => None,
        Some(raw) => match members(raw) {
            Ok(r) => Some(decode_response(&r)?),
            Err(other) => {
                return Err(unmarshal_error(
                    &other,
                    "ConversionReview",
                    "response",
                    &format!("{pkg}.ConversionResponse"),
                ));
            }
        },
    };
    Ok(Review { api_version, kind, response })
}

fn decode_response<'a>(r: &Members<'a>) -> Result<Response<'a>, String> {
    let uid = string_field(parse_member(r.get("uid"))?.as_ref(), "ConversionResponse", "response.uid", "types.UID")?;
    let (status, message) = match r.get("result").map(|raw| raw.get()) {
        None | Some("null") => (String::new(), String::new()),
        Some(raw) => match members(raw) {
            Ok(result) => (
                string_field(
                    parse_member(result.get("status"))?.as_ref(),
                    "Status",
                    "response.result.status",
                    "string",
                )?,
                string_field(
                    parse_member(result.get("message"))?.as_ref(),
                    "Status",
                    "response.result.message",
                    "string",
                )?,
            ),
            Err(other) => return Err(unmarshal_error(&other, "ConversionResponse", "response.result", "v1.Status")),
        },
    };
    let converted_objects = match r.get("convertedObjects").map(|raw| raw.get()) {
        None | Some("null") => Vec::new(),
        Some(raw) => serde_json::from_str::<Vec<&RawValue>>(raw).map_err(|_| {
            let other = serde_json::from_str::<Value>(raw).unwrap_or(Value::Null);
            unmarshal_error(&other, "ConversionResponse", "response.convertedObjects", "[]runtime.RawExtension")
        })?,
    };
    Ok(Response { uid, status, message, converted_objects })
}

fn string_field(v: Option<&Value>, owner: &str, field: &str, go_type: &str) -> Result<String, String> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(unmarshal_error(other, owner, field, go_type)),
    }
}

/// `encoding/json`'s `UnmarshalTypeError` text for a struct field.
fn unmarshal_error(v: &Value, owner: &str, field: &str, go_type: &str) -> String {
    format!("json: cannot unmarshal {} into Go struct field {owner}.{field} of type {go_type}", json_kind(v))
}

/// A random (version 4) UUID, as kube's `uuid.NewUUID` gives every review.
pub(crate) fn new_uid(rng: &dyn ring::rand::SecureRandom) -> Result<String, ring::error::Unspecified> {
    let mut b = [0u8; 16];
    rng.fill(&mut b)?;
    Ok(versa_schema::objectmeta::uuid_v4(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UID: &str = "705ab4f5-6393-11e8-b7cc-42010a800002";

    /// One answer and what kube makes of it.
    fn check(version: ReviewVersion, body: &str, want: Result<Value, &str>) {
        let got = converted_objects(version, UID, body.as_bytes())
            .map(|objects| Value::Array(objects.iter().map(|o| serde_json::from_str(o.get()).unwrap()).collect()));
        assert_eq!(got, want.map_err(str::to_owned), "body: {body}");
    }

    #[test]
    fn v1_answers() {
        use ReviewVersion::V1;
        let ok = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","result":{"status":"Success"},"convertedObjects":[{"kind":"CronTab"}]}}"#;
        check(V1, ok, Ok(json!([{"kind": "CronTab"}])));
        let cases: &[(&str, &str)] = &[
            (
                r#"{"kind":"ConversionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","result":{"status":"Success"}}}"#,
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /, Kind=ConversionReview",
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","response":{"uid":"x"}}"#,
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview",
            ),
            (r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#, "no response provided"),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"result":{"status":"Success"}}}"#,
                r#"expected response.uid="705ab4f5-6393-11e8-b7cc-42010a800002", got """#,
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","result":{"status":"Failed","message":"hostPort could not be parsed into a separate host and port"}}}"#,
                "hostPort could not be parsed into a separate host and port",
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","result":{"status":"Failed"}}}"#,
                "response.result.status was 'Failed', not 'Success'",
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002"}}"#,
                "response.result.status was '', not 'Success'",
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":7}}"#,
                "json: cannot unmarshal number into Go struct field ConversionResponse.response.uid of type types.UID",
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":[]}"#,
                "json: cannot unmarshal array into Go struct field ConversionReview.response of type v1.ConversionResponse",
            ),
            (
                r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","result":{"status":"Success"},"convertedObjects":{}}}"#,
                "json: cannot unmarshal object into Go struct field ConversionResponse.response.convertedObjects of type []runtime.RawExtension",
            ),
            (
                r#"{"apiVersion":1,"kind":"ConversionReview"}"#,
                "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string",
            ),
            (
                "[1]",
                r#"couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#,
            ),
            ("{not json", "couldn't get version/kind; json parse error: key must be a string at line 1 column 2"),
            (r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"denied"}"#, "denied"),
        ];
        for (body, want) in cases {
            check(V1, body, Err(want));
        }
    }

    #[test]
    fn v1beta1_answers_are_not_checked_for_uid_or_type() {
        use ReviewVersion::V1beta1;
        let no_uid = r#"{"response":{"result":{"status":"Success"},"convertedObjects":[]}}"#;
        check(V1beta1, no_uid, Ok(json!([])));
        let typed = r#"{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","response":{"uid":"other","result":{"status":"Success"}}}"#;
        check(V1beta1, typed, Ok(json!([])));
        check(
            V1beta1,
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{}}"#,
            Err(
                "expected webhook response of apiextensions.k8s.io/v1beta1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=ConversionReview",
            ),
        );
        check(V1beta1, r#"{"apiVersion":"apiextensions.k8s.io/v1beta1"}"#, Err("no response provided"));
    }

    #[test]
    fn first_supported_review_version() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(ReviewVersion::first_supported(&list(&["v2", "v1beta1", "v1"])), Some(ReviewVersion::V1beta1));
        assert_eq!(ReviewVersion::first_supported(&list(&["v1", "v1beta1"])), Some(ReviewVersion::V1));
        assert_eq!(ReviewVersion::first_supported(&list(&["v2"])), None);
    }

    #[test]
    fn one_pass_and_member_by_member_readings_agree() {
        let bodies = [
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","result":{"status":"Success"},"convertedObjects":[{"kind":"K"},null,1]}}"#,
            r#"{"apiVersion":null,"kind":"ConversionReview","response":{"uid":"u","result":{"status":"Failed","message":"no"}}}"#,
            r#"{"kind":"ConversionReview","response":null,"extra":[1,2]}"#,
            r#"{"response":{"result":null,"convertedObjects":null}}"#,
            r#"{}"#,
        ];
        for body in bodies {
            let fast = decode_fast(body.as_bytes()).expect(body);
            let exact = decode_exact(ReviewVersion::V1, body.as_bytes()).unwrap();
            let parts = |r: &Review<'_>| {
                let response = r.response.as_ref().map(|r| {
                    let objects: Vec<&str> = r.converted_objects.iter().map(|o| o.get()).collect();
                    (r.uid.clone(), r.status.clone(), r.message.clone(), objects.join("|"))
                });
                (r.api_version.clone(), r.kind.clone(), response)
            };
            assert_eq!(parts(&fast), parts(&exact), "{body}");
        }
        // What the one pass leaves to the exact reading: wrong types, arrays for objects,
        // duplicate keys, a Status.
        for body in [
            r#"{"response":[]}"#,
            r#"{"response":{"result":[]}}"#,
            r#"{"response":{"uid":5}}"#,
            r#"{"kind":"A","kind":"B"}"#,
            r#"{"kind":"Status","status":"Failure","message":"m"}"#,
            r#"[]"#,
        ] {
            assert!(decode_fast(body.as_bytes()).is_none(), "{body}");
        }
    }

    #[test]
    fn request_shape() {
        let obj = json!({"apiVersion": "example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "a"}});
        let (body, spans) = request_body(ReviewVersion::V1beta1, UID, "example.com/v1", &[&obj]);
        assert_eq!(&body[spans[0].clone()], br#"{"name":"a"}"#);
        let got: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            got,
            json!({
                "apiVersion": "apiextensions.k8s.io/v1beta1",
                "kind": "ConversionReview",
                "request": {"uid": UID, "desiredAPIVersion": "example.com/v1", "objects": [obj]},
            })
        );
    }

    #[test]
    fn objects_are_written_as_serde_writes_them() {
        for obj in
            [json!({"b": 1, "a": {"x": [1, "\u{1}"]}, "metadata": {"name": "a"}, "é": null}), json!([1]), json!("s")]
        {
            let mut out = Vec::new();
            let span = write_object(&mut out, &obj);
            assert_eq!(out, serde_json::to_vec(&obj).unwrap(), "{obj}");
            let want = obj.get("metadata").map(|m| serde_json::to_vec(m).unwrap()).unwrap_or_default();
            assert_eq!(out[span].to_vec(), want, "{obj}");
        }
    }

    #[test]
    fn a_large_batch_is_written_in_two_halves_as_it_would_be_whole() {
        for n in [PARALLEL_MIN, PARALLEL_MIN + 1] {
            let objects: Vec<Value> = (0..n)
                .map(|i| json!({"apiVersion": "example.com/v1beta1", "kind": "CronTab", "metadata": {"name": format!("o{i}")}}))
                .collect();
            let refs: Vec<&Value> = objects.iter().collect();
            let (body, spans) = request_body(ReviewVersion::V1, UID, "example.com/v1", &refs);
            for (obj, span) in objects.iter().zip(spans) {
                assert_eq!(body[span].to_vec(), serde_json::to_vec(&obj["metadata"]).unwrap());
            }
            let got: Value = serde_json::from_slice(&body).unwrap();
            let whole = json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "request": {"uid": UID, "desiredAPIVersion": "example.com/v1", "objects": objects},
            });
            assert_eq!(got, whole, "{n} objects");
        }
    }

    #[test]
    fn uids_are_version_4() {
        let rng = ring::rand::SystemRandom::new();
        let a = new_uid(&rng).unwrap();
        let b = new_uid(&rng).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        let groups: Vec<&str> = a.split('-').collect();
        assert_eq!(groups.iter().map(|g| g.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        assert!(groups[2].starts_with('4'), "{a}");
        assert!(matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'), "{a}");
    }
}
