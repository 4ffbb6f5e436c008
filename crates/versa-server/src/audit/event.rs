//! The record of one stage of a request: an `audit.k8s.io/v1` `Event`, its fields in kube's
//! order — metadata (user, verb, URI, source IPs, user agent, object reference), the request
//! and answered objects, the answer's status, timestamps as `metav1.MicroTime`, annotations —
//! and the helpers that fill them as apimachinery does (`SourceIPs`, the user agent's
//! truncation, `copyWithoutManagedFields`). `go_json_line` writes an event as one line with
//! Go's escaping of `<`, `>`, `&`, U+2028 and U+2029, so the file reads byte for byte as
//! kube's does.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::SystemTime;

use http::HeaderMap;
use serde::Serialize;
use serde_json::Value;

use super::policy::{Level, Stage};

/// An `audit.k8s.io/v1` `Event`, fields in kube's order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Event {
    pub(super) kind: &'static str,
    pub(super) api_version: &'static str,
    pub(super) level: Level,
    #[serde(rename = "auditID")]
    pub(super) audit_id: String,
    pub(super) stage: Stage,
    #[serde(rename = "requestURI")]
    pub(super) request_uri: String,
    pub(super) verb: String,
    pub(super) user: User,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub(super) source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) object_ref: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_object: Option<Value>,
    pub(super) request_received_timestamp: String,
    pub(super) stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) annotations: BTreeMap<String, String>,
}

/// `authentication.k8s.io/v1` `UserInfo`.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct User {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) extra: BTreeMap<String, Vec<String>>,
}

/// `audit.k8s.io/v1` `ObjectReference`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) subresource: String,
}

/// The bounded copy of a `metav1.Status` kube keeps (`metadata` always written, as Go writes an
/// empty `ListMeta`).
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct ResponseStatus {
    pub(super) metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) details: Option<Value>,
    #[serde(skip_serializing_if = "is_zero")]
    pub(super) code: u16,
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

impl ResponseStatus {
    pub(super) fn code(code: u16) -> ResponseStatus {
        ResponseStatus { code, ..Default::default() }
    }

    /// The fields kube copies from a `Status` answer.
    pub(super) fn of(status: &Value, code: u16) -> ResponseStatus {
        let text = |k: &str| status.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        ResponseStatus {
            metadata: BTreeMap::new(),
            status: text("status"),
            message: text("message"),
            reason: text("reason"),
            details: status.get("details").filter(|d| !d.is_null()).cloned(),
            code: status.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).unwrap_or(code),
        }
    }
}

/// `metav1.MicroTime` as it serialises: RFC 3339 in UTC with six fractional digits.
pub fn micro_time(t: SystemTime) -> String {
    // jiff truncates to the precision asked for, as Go's formatting does.
    format!("{:.6}", versa_registry::meta::timestamp(t))
}

/// kube's status for a request whose handler panicked.
pub(super) fn panic_status(message: &str) -> ResponseStatus {
    ResponseStatus {
        status: "Failure".into(),
        message: format!("APIServer panic'd: {message}"),
        reason: "InternalError".into(),
        code: 500,
        ..Default::default()
    }
}

/// One JSON line as Go's encoder writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped. Those
/// characters only ever occur inside strings, so escaping them anywhere in the text is right.
pub(super) fn go_json_line(event: &Event) -> Option<Vec<u8>> {
    let text = serde_json::to_string(event).ok()?;
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('\n');
    Some(out.into_bytes())
}

/// kube's `maxUserAgentLength`: longer agents are cut and marked.
const MAX_USER_AGENT: usize = 1024;

pub(super) fn user_agent(headers: &HeaderMap) -> String {
    let ua = headers.get(http::header::USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes())).unwrap_or_default();
    if ua.len() <= MAX_USER_AGENT {
        return ua.into_owned();
    }
    let mut end = MAX_USER_AGENT;
    while !ua.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...TRUNCATED", &ua[..end])
}

/// apimachinery's `SourceIPs`: the `X-Forwarded-For` chain, `X-Real-Ip` unless already in it,
/// then the peer unless it is the chain's last address.
pub fn source_ips(headers: &HeaderMap, peer: Option<IpAddr>) -> Vec<String> {
    let parse = |s: &str| s.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty());
    let mut ips: Vec<IpAddr> =
        header("x-forwarded-for").map(|v| v.split(',').filter_map(parse).collect()).unwrap_or_default();
    if let Some(real) = header("x-real-ip").and_then(parse)
        && !ips.contains(&real)
    {
        ips.push(real);
    }
    if let Some(peer) = peer.map(|p| p.to_canonical())
        && ips.last() != Some(&peer)
    {
        ips.push(peer);
    }
    ips.iter().map(IpAddr::to_string).collect()
}

/// Removes `metadata.managedFields` from an object, a list's items or a Table's row objects
/// (kube's `copyWithoutManagedFields`).
pub(super) fn drop_managed_fields(value: &mut Value) {
    let strip = |v: &mut Value| {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
    };
    strip(value);
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if value.get("kind").and_then(Value::as_str) == Some("Table")
        && let Some(rows) = value.get_mut("rows").and_then(Value::as_array_mut)
    {
        for row in rows {
            if let Some(object) = row.get_mut("object") {
                strip(object);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;

    #[test]
    fn lines_are_written_as_gos_encoder_writes_them() {
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: Level::Metadata,
            audit_id: "id".into(),
            stage: Stage::ResponseComplete,
            request_uri: "/apis/g/v1/x?limit=1&labelSelector=a<b".into(),
            verb: "list".into(),
            user: User::default(),
            source_ips: vec!["127.0.0.1".into()],
            user_agent: String::new(),
            object_ref: None,
            response_status: Some(ResponseStatus::code(200)),
            request_object: None,
            response_object: None,
            request_received_timestamp: "2026-01-02T03:04:05.000006Z".into(),
            stage_timestamp: "2026-01-02T03:04:05.000007Z".into(),
            annotations: BTreeMap::from([("b".into(), "x > y".into()), ("a".into(), String::new())]),
        };
        let line = String::from_utf8(go_json_line(&event).unwrap()).unwrap();
        assert_eq!(
            line,
            "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"Metadata\",\"auditID\":\"id\",\
             \"stage\":\"ResponseComplete\",\"requestURI\":\"/apis/g/v1/x?limit=1\\u0026labelSelector=a\\u003cb\",\
             \"verb\":\"list\",\"user\":{},\"sourceIPs\":[\"127.0.0.1\"],\"responseStatus\":{\"metadata\":{},\"code\":200},\
             \"requestReceivedTimestamp\":\"2026-01-02T03:04:05.000006Z\",\"stageTimestamp\":\"2026-01-02T03:04:05.000007Z\",\
             \"annotations\":{\"a\":\"\",\"b\":\"x \\u003e y\"}}\n"
        );
    }

    #[test]
    fn micro_times_and_source_ips() {
        let t = UNIX_EPOCH + Duration::from_micros(1_767_323_045_000_042);
        assert_eq!(micro_time(t), "2026-01-02T03:04:05.000042Z");
        let mut headers = HeaderMap::new();
        let peer: IpAddr = "::ffff:10.0.0.9".parse().unwrap();
        assert_eq!(source_ips(&headers, Some(peer)), ["10.0.0.9"]);
        headers.insert("x-forwarded-for", "1.2.3.4, bogus, 10.0.0.9".parse().unwrap());
        headers.insert("x-real-ip", "1.2.3.4".parse().unwrap());
        assert_eq!(
            source_ips(&headers, Some(peer)),
            ["1.2.3.4", "10.0.0.9"],
            "no duplicates of the real IP or the peer"
        );
        headers.insert("x-real-ip", "5.6.7.8".parse().unwrap());
        assert_eq!(source_ips(&headers, Some("::1".parse().unwrap())), ["1.2.3.4", "10.0.0.9", "5.6.7.8", "::1"]);
    }

    #[test]
    fn micro_times_at_calendar_edges() {
        let at = |micros: i64| {
            let d = Duration::from_micros(micros.unsigned_abs());
            if micros < 0 { UNIX_EPOCH - d } else { UNIX_EPOCH + d }
        };
        assert_eq!(micro_time(at(0)), "1970-01-01T00:00:00.000000Z");
        assert_eq!(micro_time(at(951_868_799_999_999)), "2000-02-29T23:59:59.999999Z");
        assert_eq!(micro_time(at(1_735_689_600_000_000)), "2025-01-01T00:00:00.000000Z");
        assert_eq!(micro_time(at(-1)), "1969-12-31T23:59:59.999999Z");
        // Nanoseconds are truncated, not rounded.
        assert_eq!(micro_time(UNIX_EPOCH + Duration::from_nanos(1_999)), "1970-01-01T00:00:00.000001Z");
    }

    #[test]
    fn long_user_agents_are_cut() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::USER_AGENT, "a".repeat(1100).parse().unwrap());
        assert_eq!(user_agent(&headers), format!("{}...TRUNCATED", "a".repeat(1024)));
    }

    #[test]
    fn managed_fields_are_dropped_from_objects_lists_and_tables() {
        let mf = json!([{"manager": "kubectl"}]);
        let mut object = json!({"metadata": {"name": "a", "managedFields": mf}});
        drop_managed_fields(&mut object);
        assert_eq!(object, json!({"metadata": {"name": "a"}}));
        let mut list = json!({"kind": "List", "metadata": {}, "items": [{"metadata": {"managedFields": mf}}]});
        drop_managed_fields(&mut list);
        assert_eq!(list["items"][0], json!({"metadata": {}}));
        let mut table = json!({"kind": "Table", "rows": [{"object": {"metadata": {"managedFields": mf}}}]});
        drop_managed_fields(&mut table);
        assert_eq!(table["rows"][0]["object"], json!({"metadata": {}}));
    }
}
