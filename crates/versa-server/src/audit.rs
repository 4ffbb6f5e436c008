//! The audit log, as kube-apiserver writes it (k8s.io/apiserver `pkg/audit`, the `WithAudit` and
//! `WithFailedAuthenticationAudit` filters, the `log` backend): an `audit.k8s.io/v1` `Policy`
//! decides per request how much to record, and every recorded stage of the request becomes one
//! line of JSON, an `audit.k8s.io/v1` `Event`, in a file rotated as lumberjack rotates it (or on
//! standard output).
//!
//! **Policy.** [`Policy::parse`] reads the file as kube does: `audit.k8s.io/v1` `Policy` only,
//! unknown and duplicate fields a warning (kube's strict decoding falls back to lenient), then
//! kube's validation with its field-error texts, and at least one rule. The first rule that
//! matches a request gives its level (`None`: not audited), the stages to leave out (the rule's
//! and the policy's) and whether `managedFields` are dropped from recorded objects; no rule
//! matching is `None`. Matching is kube's `ruleMatches`: users, user groups, verbs, then either
//! resources (group, `resource`, `resource/subresource`, `*`, `*/subresource`, `resource/*`,
//! resource names) and namespaces (`""` is cluster scope), or non-resource URLs (exact, `*`, or a
//! prefix ending in `*`).
//!
//! **Events.** One [`AuditedRequest`] per audited request holds the event under construction:
//! metadata (user, verb, URI, source IPs, user agent, object reference) when it starts, the
//! authorization decision as annotations, the request body (levels `Request` and up; the object
//! reference takes the name, uid and resourceVersion of a created or updated object at every
//! level, as kube's `LogRequestObject` does), and the answer: its code, the whole `Status` when
//! the answer is one, and the answered object at `RequestResponse`. Stages: `RequestReceived`
//! before any work, `ResponseStarted` only for watches (when the stream starts), then
//! `ResponseComplete` (when a watch's stream ends); `Panic` if serving the request panicked. A
//! request that failed authentication is recorded the way kube records it: one
//! `ResponseStarted` event with an empty user. Lines are written with Go's escaping of `<`, `>`,
//! `&`, U+2028 and U+2029, so the file reads byte for byte as kube's does.
//!
//! **Writing.** Events are serialised on the request's task and handed to one writer thread
//! through a bounded queue ([`QUEUE_EVENTS`] lines); the thread appends them, flushes whenever the
//! queue is empty and rotates by size. kube's log backend is blocking by default
//! (`--audit-log-mode=blocking`: a request waits for its event to be written, and no event is
//! ever dropped); here a request waits only when the queue is full, so a slow disk slows
//! requests down rather than losing events, and a fast one costs them nothing. Rotation is
//! lumberjack's: past `--audit-log-maxsize` MiB the file is renamed to
//! `<name>-<UTC time>.<ext>` and a new one started; backups beyond `--audit-log-maxbackup` and
//! older than `--audit-log-maxage` days are deleted.
//!
//! With no policy there is no [`Auditor`], and a request pays one `Option` check.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt as _;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use versa_schema::{Error as FieldError, ErrorList, Path as FieldPath};

use crate::auth::UserInfo;
use crate::body::{Body, full};
use crate::request_info::RequestInfo;

/// Lines waiting for the writer thread before requests wait for it.
pub const QUEUE_EVENTS: usize = 4096;

/// The `Audit-ID` header (kube's `HeaderAuditID`).
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// Annotation keys kube's authorization filter sets.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// Errors of the policy file and the log.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read the audit policy file {path:?}: {source}")]
    ReadPolicy {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("audit policy file {path:?}: {message}")]
    Policy { path: PathBuf, message: String },
    #[error("cannot open the audit log {path:?}: {source}")]
    OpenLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the audit log writer: {0}")]
    Thread(#[source] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------------------
// Policy

/// How much of a request is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::None, Level::Metadata, Level::Request, Level::RequestResponse];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl Serialize for Level {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A stage of a request at which an event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub const ALL: [Stage; 4] = [Stage::RequestReceived, Stage::ResponseStarted, Stage::ResponseComplete, Stage::Panic];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.as_str() == s)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl Serialize for Stage {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A set of stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stages(u8);

impl Stages {
    pub fn of(stages: &[Stage]) -> Stages {
        Stages(stages.iter().fold(0, |bits, s| bits | s.bit()))
    }

    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn union(self, other: Stages) -> Stages {
        Stages(self.0 | other.0)
    }
}

/// An `audit.k8s.io/v1` `Policy`, validated, with each rule's stages already joined with the
/// policy's (as kube's `NewPolicyRuleEvaluator` does).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub rules: Vec<PolicyRule>,
    pub omit_stages: Stages,
    pub omit_managed_fields: bool,
}

/// One rule; empty lists match anything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyRule {
    pub level: Option<Level>,
    pub users: Vec<String>,
    pub user_groups: Vec<String>,
    pub verbs: Vec<String>,
    pub resources: Vec<GroupResources>,
    pub namespaces: Vec<String>,
    pub non_resource_urls: Vec<String>,
    pub omit_stages: Stages,
    pub omit_managed_fields: Option<bool>,
}

/// Resources of one API group (`""` is the core group, `*` any).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What the policy decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestConfig {
    pub level: Level,
    pub omit_stages: Stages,
    pub omit_managed_fields: bool,
}

/// The policy file as written (levels and stages still text: kube validates them after
/// decoding, with field errors).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyDoc {
    #[serde(default)]
    rules: Vec<RuleDoc>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleDoc {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

const POLICY_FIELDS: &[&str] = &["apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields"];
const RULE_FIELDS: &[&str] = &[
    "level",
    "users",
    "userGroups",
    "verbs",
    "resources",
    "namespaces",
    "nonResourceURLs",
    "omitStages",
    "omitManagedFields",
];
const GROUP_RESOURCES_FIELDS: &[&str] = &["group", "resources", "resourceNames"];

impl Policy {
    /// Reads and validates a policy file; the warnings are kube's lenient-decoding ones
    /// (unknown or duplicate fields), for the caller to log.
    pub fn load(path: &Path) -> Result<(Policy, Vec<String>)> {
        let text = std::fs::read(path).map_err(|source| Error::ReadPolicy { path: path.to_owned(), source })?;
        Policy::parse(&text).map_err(|message| Error::Policy { path: path.to_owned(), message })
    }

    /// Parses and validates a policy (YAML or JSON); the error is the whole message.
    pub fn parse(text: &[u8]) -> std::result::Result<(Policy, Vec<String>), String> {
        let decoded = crate::codec::decode(text, crate::codec::Format::Yaml)
            .map_err(|s| format!("failed decoding: {}", s.message))?;
        let mut warnings: Vec<String> = decoded.duplicates.iter().map(|d| format!("duplicate field {d:?}")).collect();
        let mut doc = decoded.value;
        let Some(map) = doc.as_object() else {
            return Err("failed decoding: the policy is not an object".into());
        };
        let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version != "audit.k8s.io/v1" || kind != "Policy" {
            return Err(format!(
                "failed decoding: apiVersion {api_version:?}, kind {kind:?}: an audit policy must be apiVersion audit.k8s.io/v1, kind Policy"
            ));
        }
        unknown_fields(&doc, &mut warnings);
        drop_nulls(&mut doc);
        let doc: PolicyDoc = serde_json::from_value(doc).map_err(|e| format!("failed decoding: {e}"))?;
        let errs = validate(&doc);
        if !errs.is_empty() {
            return Err(errs.aggregate());
        }
        if doc.rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        let stages = |names: &[String]| Stages::of(&names.iter().filter_map(|s| Stage::parse(s)).collect::<Vec<_>>());
        let omit_stages = stages(&doc.omit_stages);
        let rules = doc
            .rules
            .into_iter()
            .map(|r| PolicyRule {
                level: Level::parse(&r.level),
                omit_stages: stages(&r.omit_stages).union(omit_stages),
                users: r.users,
                user_groups: r.user_groups,
                verbs: r.verbs,
                resources: r.resources,
                namespaces: r.namespaces,
                non_resource_urls: r.non_resource_urls,
                omit_managed_fields: r.omit_managed_fields,
            })
            .collect();
        Ok((Policy { rules, omit_stages, omit_managed_fields: doc.omit_managed_fields }, warnings))
    }

    /// The level, stages to leave out and `managedFields` choice for a request of `user`
    /// (`None`: authentication failed) described by `info`.
    pub fn evaluate(&self, user: Option<&UserInfo>, info: &RequestInfo) -> RequestConfig {
        for rule in &self.rules {
            if rule.matches(user, info) {
                return RequestConfig {
                    level: rule.level.unwrap_or(Level::None),
                    omit_stages: rule.omit_stages,
                    omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
                };
            }
        }
        RequestConfig {
            level: Level::None,
            omit_stages: self.omit_stages,
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

impl PolicyRule {
    fn matches(&self, user: Option<&UserInfo>, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| self.users.contains(&u.name)) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.is_some_and(|u| u.groups.iter().any(|g| self.user_groups.contains(g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.contains(&info.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(info);
        }
        if !self.non_resource_urls.is_empty() {
            return !info.is_resource_request
                && self.non_resource_urls.iter().any(|spec| path_matches(&info.path, spec));
        }
        true
    }

    fn matches_resource(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return false;
        }
        // Cluster-scoped requests have the namespace "".
        if !self.namespaces.is_empty() && !self.namespaces.contains(&info.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let (resource, subresource) = (info.resource.as_str(), info.subresource.as_str());
        let combined = if subresource.is_empty() { resource.to_owned() } else { format!("{resource}/{subresource}") };
        self.resources.iter().filter(|gr| gr.group == info.api_group || gr.group == "*").any(|gr| {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !gr.resource_names.contains(&info.name) {
                return false;
            }
            gr.resources.iter().any(|r| {
                r == &combined
                    || r == "*"
                    || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
                    || r.strip_suffix("/*") == Some(resource)
            })
        })
    }
}

/// kube's `pathMatches`: `*`, the exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

/// kube's `ValidatePolicy`, with its paths and texts (including its `resources.group` path,
/// which names no index).
fn validate(doc: &PolicyDoc) -> ErrorList {
    let mut errs = ErrorList::new();
    validate_stages(&doc.omit_stages, &FieldPath::new("omitStages"), &mut errs);
    for (i, rule) in doc.rules.iter().enumerate() {
        let path = FieldPath::new("rules").index(i);
        match rule.level.as_str() {
            "" => errs.push(FieldError::required(path.child("level"), "")),
            level if Level::parse(level).is_none() => {
                let valid: Vec<&str> = Level::ALL.iter().map(|l| l.as_str()).collect();
                errs.push(FieldError::not_supported(path.child("level"), level, &valid));
            }
            _ => {}
        }
        let urls = path.child("nonResourceURLs");
        for (j, url) in rule.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                errs.push(FieldError::invalid(
                    urls.index(j),
                    url.as_str(),
                    "non-resource URL rules must begin with a '/' character",
                ));
            }
            if url.len() > 1 && url[..url.len() - 1].contains('*') {
                errs.push(FieldError::invalid(
                    urls.index(j),
                    url.as_str(),
                    "non-resource URL wildcards '*' must be the final character of the rule",
                ));
            }
        }
        let resources = path.child("resources");
        for gr in &rule.resources {
            if !gr.group.is_empty() && gr.group != "*" {
                let msgs = versa_schema::names::is_dns1123_subdomain(&gr.group);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(resources.child("group"), gr.group.as_str(), msgs.join(",")));
                }
            }
            if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                errs.push(FieldError::invalid(
                    resources.child("resourceNames"),
                    json!(gr.resource_names),
                    "using resourceNames requires at least one resource",
                ));
            }
        }
        validate_stages(&rule.omit_stages, &path.child("omitStages"), &mut errs);
        if !rule.non_resource_urls.is_empty() && (!rule.resources.is_empty() || !rule.namespaces.is_empty()) {
            errs.push(FieldError::invalid(
                urls,
                json!(rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
    }
    errs
}

fn validate_stages(stages: &[String], path: &FieldPath, errs: &mut ErrorList) {
    let allowed: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
    for (i, stage) in stages.iter().enumerate() {
        if Stage::parse(stage).is_none() {
            errs.push(FieldError::invalid(
                path.index(i),
                stage.as_str(),
                format!("allowed stages are {}", allowed.join(",")),
            ));
        }
    }
}

/// Fields the policy types do not have (kube's strict decoder names them, then decodes
/// leniently and logs a warning).
fn unknown_fields(doc: &Value, warnings: &mut Vec<String>) {
    let mut check = |value: &Value, known: &[&str], at: &str| {
        if let Some(map) = value.as_object() {
            for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
                let path = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                warnings.push(format!("unknown field {path:?}"));
            }
        }
    };
    check(doc, POLICY_FIELDS, "");
    for (i, rule) in doc.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        check(rule, RULE_FIELDS, &format!("rules[{i}]"));
        for (j, gr) in rule.get("resources").and_then(Value::as_array).into_iter().flatten().enumerate() {
            check(gr, GROUP_RESOURCES_FIELDS, &format!("rules[{i}].resources[{j}]"));
        }
    }
}

/// `null` decodes to Go's zero value: drop such keys so serde's defaults apply.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Events

/// An `audit.k8s.io/v1` `Event`, fields in kube's order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    kind: &'static str,
    api_version: &'static str,
    level: Level,
    #[serde(rename = "auditID")]
    audit_id: String,
    stage: Stage,
    #[serde(rename = "requestURI")]
    request_uri: String,
    verb: String,
    user: User,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<Value>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
}

/// `authentication.k8s.io/v1` `UserInfo`.
#[derive(Debug, Clone, Default, Serialize)]
struct User {
    #[serde(skip_serializing_if = "String::is_empty")]
    username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extra: BTreeMap<String, Vec<String>>,
}

/// `audit.k8s.io/v1` `ObjectReference`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    subresource: String,
}

/// The bounded copy of a `metav1.Status` kube keeps (`metadata` always written, as Go writes an
/// empty `ListMeta`).
#[derive(Debug, Clone, Default, Serialize)]
struct ResponseStatus {
    metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Value>,
    #[serde(skip_serializing_if = "is_zero")]
    code: u16,
}

fn is_zero(code: &u16) -> bool {
    *code == 0
}

impl ResponseStatus {
    fn code(code: u16) -> ResponseStatus {
        ResponseStatus { code, ..Default::default() }
    }

    /// The fields kube copies from a `Status` answer.
    fn of(status: &Value, code: u16) -> ResponseStatus {
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
    let micros = t.duration_since(UNIX_EPOCH).unwrap_or_default().subsec_micros();
    let seconds = versa_registry::meta::rfc3339(t);
    format!("{}.{micros:06}Z", seconds.trim_end_matches('Z'))
}

/// One JSON line as Go's encoder writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped. Those
/// characters only ever occur inside strings, so escaping them anywhere in the text is right.
fn go_json_line(event: &Event) -> Option<Vec<u8>> {
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

fn user_agent(headers: &HeaderMap) -> String {
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
fn drop_managed_fields(value: &mut Value) {
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

// ---------------------------------------------------------------------------------------------
// Recording a request

/// The request as it arrived, for the event's metadata.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    pub audit_id: &'a str,
    pub received: SystemTime,
    pub uri: &'a http::Uri,
    pub headers: &'a HeaderMap,
    pub peer: Option<IpAddr>,
}

/// Auditing as configured at start: the policy and the writer.
#[derive(Debug)]
pub struct Auditor {
    policy: Policy,
    sink: Sink,
}

/// What `versa serve`'s audit flags chose.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    pub policy: Policy,
    pub log: LogConfig,
}

/// `--audit-log-path` and the rotation flags (kube's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// The file events are appended to; `-` is standard output.
    pub path: PathBuf,
    /// Days to keep rotated files (0: no limit).
    pub max_age_days: u32,
    /// Rotated files to keep (0: no limit).
    pub max_backups: u32,
    /// MiB a file may reach before it is rotated (0: never rotated).
    pub max_size_mb: u32,
}

impl LogConfig {
    /// `path` with kube's defaults: rotation at 100 MiB, 100 backups, 366 days.
    pub fn new(path: impl Into<PathBuf>) -> LogConfig {
        LogConfig { path: path.into(), max_age_days: 366, max_backups: 100, max_size_mb: 100 }
    }
}

impl Auditor {
    /// Opens (creates) the log and starts its writer thread.
    pub fn start(config: AuditConfig) -> Result<Auditor> {
        let output = Output::open(&config.log)?;
        let (tx, rx) = mpsc::channel(QUEUE_EVENTS);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_events(rx, output))
            .map_err(Error::Thread)?;
        Ok(Auditor { policy: config.policy, sink: Sink { tx } })
    }

    /// Starts recording a request of an authenticated `user`; `None` when the policy says
    /// `None`. `long_running`: a watch (it gets a `ResponseStarted` stage).
    pub fn begin(
        &self,
        arrival: Arrival<'_>,
        user: &UserInfo,
        info: &RequestInfo,
        long_running: bool,
    ) -> Option<AuditedRequest> {
        self.start_event(arrival, Some(user), info, long_running, false)
    }

    /// Records a request that failed before it had a user (authentication failed, or kube's
    /// request-deadline filter refused its `timeout`): kube writes one `ResponseStarted` event
    /// with an empty user when the answer is written.
    pub async fn failed(&self, arrival: Arrival<'_>, info: &RequestInfo, response: Response<Body>) -> Response<Body> {
        match self.start_event(arrival, None, info, false, true) {
            Some(audit) => audit.respond(response).await,
            None => response,
        }
    }

    fn start_event(
        &self,
        arrival: Arrival<'_>,
        user: Option<&UserInfo>,
        info: &RequestInfo,
        long_running: bool,
        failed: bool,
    ) -> Option<AuditedRequest> {
        let config = self.policy.evaluate(user, info);
        if config.level == Level::None {
            return None;
        }
        let received = micro_time(arrival.received);
        let user = user
            .map(|u| User {
                username: u.name.clone(),
                uid: u.uid.clone(),
                groups: u.groups.clone(),
                extra: u.extra.clone(),
            })
            .unwrap_or_default();
        let object_ref = info.is_resource_request.then(|| ObjectRef {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone(),
            ..Default::default()
        });
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: config.level,
            audit_id: arrival.audit_id.to_owned(),
            stage: Stage::RequestReceived,
            request_uri: arrival.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
            verb: info.verb.clone(),
            user,
            source_ips: source_ips(arrival.headers, arrival.peer),
            user_agent: user_agent(arrival.headers),
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            stage_timestamp: received.clone(),
            request_received_timestamp: received,
            annotations: BTreeMap::new(),
        };
        let record = Record(Arc::new(RecordInner {
            config,
            sink: self.sink.clone(),
            long_running,
            failed,
            delete: info.verb == "delete",
            text: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            event: Mutex::new(event),
        }));
        Some(AuditedRequest { record, open: true })
    }

    /// Waits until every event handed over so far is written (at shutdown).
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.sink.tx.send(Message::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// One audited request from its start to its answer. Dropped before the answer (the client went
/// away, or serving panicked), it still writes the request's last stage.
#[derive(Debug)]
pub struct AuditedRequest {
    record: Record,
    open: bool,
}

impl AuditedRequest {
    /// The shared record, for the layers that add to it (the request body in `rest/`).
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// The `RequestReceived` stage, before any work.
    pub async fn received(&self) {
        if let Some(line) = self.record.line(Stage::RequestReceived) {
            self.record.0.sink.send(line).await;
        }
    }

    /// Records the answer and writes the stage it ends (`ResponseComplete`; a watch's
    /// `ResponseStarted`, its `ResponseComplete` following when the stream ends; a failed
    /// authentication's only `ResponseStarted`). A `Status` answer is recorded whole (unless
    /// [`Record::text_answer`] said kube writes it as text), the answered object at
    /// `RequestResponse`. Returns the answer (its body re-made when it had to be read).
    pub async fn respond(mut self, response: Response<Body>) -> Response<Body> {
        self.open = false;
        let record = self.record.clone();
        let inner = &record.0;
        let code = response.status().as_u16();
        let success = (200..300).contains(&code);
        let want_object = inner.config.level >= Level::RequestResponse && !inner.long_running;
        let want_status = !inner.text.load(Ordering::Relaxed) && (!success || inner.delete);
        let (parts, mut body) = response.into_parts();
        let mut status = ResponseStatus::code(code);
        if want_object || want_status {
            let bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(never) => match never {},
            };
            if let Some(mut value) = parse_answer(&parts.headers, &bytes) {
                if want_status && is_status(&value) {
                    status = ResponseStatus::of(&value, code);
                }
                if want_object {
                    if inner.config.omit_managed_fields {
                        drop_managed_fields(&mut value);
                    }
                    inner.lock().response_object = Some(value);
                }
            }
            body = full(bytes);
        }
        inner.lock().response_status = Some(status);
        if inner.long_running || inner.failed {
            if let Some(line) = record.line(Stage::ResponseStarted) {
                inner.sink.send(line).await;
            }
            if inner.failed {
                return Response::from_parts(parts, body);
            }
            let body = CompletingBody { inner: body, record: Some(record) };
            return Response::from_parts(parts, body.boxed());
        }
        if let Some(line) = record.line(Stage::ResponseComplete) {
            inner.sink.send(line).await;
        }
        Response::from_parts(parts, body)
    }
}

impl Drop for AuditedRequest {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let inner = &self.record.0;
        let stage = if inner.panicked.load(Ordering::Relaxed) || std::thread::panicking() {
            inner.lock().response_status.get_or_insert_with(|| panic_status("unknown"));
            Stage::Panic
        } else {
            // No answer was written (the client went away first): kube's words for a handler
            // that wrote nothing.
            inner.lock().response_status.get_or_insert_with(|| ResponseStatus {
                status: "Success".into(),
                message: "Connection closed early".into(),
                code: 200,
                ..Default::default()
            });
            Stage::ResponseComplete
        };
        if let Some(line) = self.record.line(stage) {
            inner.sink.send_now(line);
        }
    }
}

/// kube's status for a request whose handler panicked.
fn panic_status(message: &str) -> ResponseStatus {
    ResponseStatus {
        status: "Failure".into(),
        message: format!("APIServer panic'd: {message}"),
        reason: "InternalError".into(),
        code: 500,
        ..Default::default()
    }
}

/// Runs `work`; if it panics, the record takes kube's `Panic` status (written as the `Panic`
/// stage when the request is dropped) and the panic goes on, as kube re-panics.
pub async fn catch_panic<F: std::future::Future>(record: &Record, work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.as_mut().poll(cx))) {
        Ok(polled) => polled,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            record.0.lock().response_status = Some(panic_status(&message));
            record.0.panicked.store(true, Ordering::Relaxed);
            std::panic::resume_unwind(payload)
        }
    })
    .await
}

fn is_status(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("Status")
        && value.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// An answer's body as JSON (kube records objects as JSON whatever the client asked for).
fn parse_answer(headers: &HeaderMap, bytes: &[u8]) -> Option<Value> {
    let content_type = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    match media {
        "application/json" => serde_json::from_slice(bytes).ok(),
        "application/yaml" => crate::codec::decode(bytes, crate::codec::Format::Yaml).ok().map(|d| d.value),
        _ => None,
    }
}

/// The event of one request, shared by the layers that add to it.
#[derive(Debug, Clone)]
pub struct Record(Arc<RecordInner>);

#[derive(Debug)]
struct RecordInner {
    config: RequestConfig,
    sink: Sink,
    long_running: bool,
    /// Failed before authentication finished: one `ResponseStarted` event.
    failed: bool,
    /// A delete: its `Status` answer (a success) is recorded.
    delete: bool,
    /// kube writes this answer as plain text (`http.Error`), not through its object encoder:
    /// only the code is recorded.
    text: AtomicBool,
    /// Serving the request panicked ([`catch_panic`]).
    panicked: AtomicBool,
    event: Mutex<Event>,
}

impl RecordInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Event> {
        self.event.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Record {
    pub fn level(&self) -> Level {
        self.0.config.level
    }

    /// Adds an annotation; a key already set keeps its first value (as kube's
    /// `addAuditAnnotationLocked`).
    pub fn annotate(&self, key: &str, value: &str) {
        self.0.lock().annotations.entry(key.to_owned()).or_insert_with(|| value.to_owned());
    }

    /// The object a create or update decoded (kube's `LogRequestObject`): its namespace, name,
    /// uid and resourceVersion fill the object reference where the URL left them empty (at
    /// every level); from `Request` on it is the event's `requestObject`.
    pub fn request_object(&self, mut object: Value) {
        let meta = |k: &str| object.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or("").to_owned();
        let (namespace, name, uid, rv) = (meta("namespace"), meta("name"), meta("uid"), meta("resourceVersion"));
        let mut event = self.0.lock();
        if let Some(r) = event.object_ref.as_mut() {
            for (field, value) in
                [(&mut r.namespace, namespace), (&mut r.name, name), (&mut r.uid, uid), (&mut r.resource_version, rv)]
            {
                if field.is_empty() {
                    *field = value;
                }
            }
        }
        if self.0.config.level >= Level::Request {
            if self.0.config.omit_managed_fields {
                drop_managed_fields(&mut object);
            }
            event.request_object = Some(object);
        }
    }

    /// The answer is one kube writes as plain text (`http.Error`: the max-in-flight 429, an
    /// authorizer's internal error): only its code is recorded.
    pub fn text_answer(&self) {
        self.0.text.store(true, Ordering::Relaxed);
    }

    /// A body recorded as it is (a patch, `DeleteOptions`), from `Request` on.
    pub fn request_body(&self, body: Value) {
        if self.0.config.level >= Level::Request {
            self.0.lock().request_object = Some(body);
        }
    }

    /// The event at `stage`, as one line; `None` when the stage is left out.
    fn line(&self, stage: Stage) -> Option<Vec<u8>> {
        if self.0.config.omit_stages.contains(stage) {
            return None;
        }
        let mut event = self.0.lock();
        event.stage = stage;
        event.stage_timestamp = if stage == Stage::RequestReceived {
            event.request_received_timestamp.clone()
        } else {
            micro_time(SystemTime::now())
        };
        go_json_line(&event)
    }
}

/// A watch's body: writes `ResponseComplete` when the stream ends or is dropped.
struct CompletingBody {
    inner: Body,
    record: Option<Record>,
}

impl CompletingBody {
    fn complete(&mut self) {
        if let Some(record) = self.record.take()
            && let Some(line) = record.line(Stage::ResponseComplete)
        {
            record.0.sink.send_now(line);
        }
    }
}

impl HttpBody for CompletingBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Infallible>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.complete();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for CompletingBody {
    fn drop(&mut self) {
        self.complete();
    }
}

// ---------------------------------------------------------------------------------------------
// Writing

#[derive(Debug)]
enum Message {
    Line(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

/// The queue to the writer thread.
#[derive(Debug, Clone)]
struct Sink {
    tx: mpsc::Sender<Message>,
}

impl Sink {
    /// Hands a line over, waiting while the queue is full (kube's blocking mode).
    async fn send(&self, line: Vec<u8>) {
        if self.tx.send(Message::Line(line)).await.is_err() {
            tracing::warn!("the audit log writer has stopped: event dropped");
        }
    }

    /// From code that cannot wait (a body's drop): at once when there is room, else from a
    /// task that waits.
    fn send_now(&self, line: Vec<u8>) {
        match self.tx.try_send(Message::Line(line)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let tx = self.tx.clone();
                    runtime.spawn(async move {
                        let _ = tx.send(message).await;
                    });
                }
                Err(_) => tracing::warn!("audit log queue full outside the runtime: event dropped"),
            },
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!("the audit log writer has stopped: event dropped")
            }
        }
    }
}

/// The writer thread: appends lines, flushing whenever nothing more is queued.
fn write_events(mut rx: mpsc::Receiver<Message>, mut output: Output) {
    let mut failing = false;
    let mut handle = |message: Message, output: &mut Output| match message {
        Message::Line(line) => match output.write(&line) {
            Ok(()) => failing = false,
            Err(e) => {
                // Once per run of failures: a full disk would otherwise log every event.
                if !failing {
                    tracing::error!(error = %e, "cannot write the audit log; events are being lost");
                }
                failing = true;
            }
        },
        Message::Flush(ack) => {
            let _ = output.flush();
            let _ = ack.send(());
        }
    };
    while let Some(message) = rx.blocking_recv() {
        handle(message, &mut output);
        while let Ok(message) = rx.try_recv() {
            handle(message, &mut output);
        }
        if let Err(e) = output.flush() {
            tracing::error!(error = %e, "cannot flush the audit log");
        }
    }
    let _ = output.flush();
}

/// Where lines go.
#[derive(Debug)]
enum Output {
    Stdout(std::io::Stdout),
    File(RotatingFile),
}

impl Output {
    fn open(config: &LogConfig) -> Result<Output> {
        if config.path.as_os_str() == "-" {
            return Ok(Output::Stdout(std::io::stdout()));
        }
        let err = |source| Error::OpenLog { path: config.path.clone(), source };
        ensure_log_file(&config.path).map_err(err)?;
        let max_size = u64::from(config.max_size_mb) * 1024 * 1024;
        let file =
            RotatingFile::open(&config.path, max_size, config.max_backups, config.max_age_days, SystemTime::now())
                .map_err(err)?;
        Ok(Output::File(file))
    }

    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout(out) => out.lock().write_all(line),
            Output::File(file) => file.write(line, SystemTime::now()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Stdout(out) => out.lock().flush(),
            Output::File(file) => file.flush(),
        }
    }
}

/// kube's `ensureLogFile`: the directory (0700) and the file (0600) exist before serving.
fn ensure_log_file(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    open_append(path).map(drop)
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// lumberjack's `Logger`: a file rotated when a write would take it past `max_size` bytes (0:
/// never), its backups named `<stem>-<UTC time>.<ext>` and pruned by count and age.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    max_size: u64,
    max_backups: u32,
    max_age_days: u32,
    file: BufWriter<File>,
    size: u64,
}

/// lumberjack's `backupTimeFormat` (`2006-01-02T15-04-05.000`), UTC.
fn backup_time(t: SystemTime) -> String {
    let millis = t.duration_since(UNIX_EPOCH).unwrap_or_default().subsec_millis();
    let seconds = versa_registry::meta::rfc3339(t).trim_end_matches('Z').replace(':', "-");
    format!("{seconds}.{millis:03}")
}

/// The time in a backup's name (the inverse of [`backup_time`]).
fn parse_backup_time(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 23 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b'-' || b[16] != b'-' || b[19] != b'.'
    {
        return None;
    }
    let num =
        |r: std::ops::Range<usize>| s.get(r).filter(|d| d.bytes().all(|c| c.is_ascii_digit()))?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec;
    let secs = u64::try_from(secs).ok()?;
    let ms = u64::try_from(ms).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms))
}

// Howard Hinnant's days-from-civil (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl RotatingFile {
    /// Opens `path` for appending, rotating first when it is already full (lumberjack's
    /// `openExistingOrNew`), and prunes old backups.
    pub fn open(
        path: &Path,
        max_size: u64,
        max_backups: u32,
        max_age_days: u32,
        now: SystemTime,
    ) -> std::io::Result<RotatingFile> {
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        let mut rotating = RotatingFile {
            path: path.to_owned(),
            max_size,
            max_backups,
            max_age_days,
            file: BufWriter::new(file),
            size,
        };
        if max_size > 0 && size >= max_size {
            rotating.rotate(now)?;
        } else {
            rotating.prune(now);
        }
        Ok(rotating)
    }

    /// Appends one line, rotating first when it would not fit (a line larger than the limit is
    /// refused, as lumberjack refuses it).
    pub fn write(&mut self, line: &[u8], now: SystemTime) -> std::io::Result<()> {
        let len = line.len() as u64;
        if self.max_size > 0 {
            if len > self.max_size {
                return Err(std::io::Error::other(format!(
                    "write length {len} exceeds maximum file size {}",
                    self.max_size
                )));
            }
            if self.size + len > self.max_size {
                self.rotate(now)?;
            }
        }
        self.file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    /// Renames the file to its backup name, starts a new one and prunes.
    fn rotate(&mut self, now: SystemTime) -> std::io::Result<()> {
        self.file.flush()?;
        let (dir, stem, ext) = self.parts();
        let backup = dir.join(format!("{stem}-{}{ext}", backup_time(now)));
        std::fs::rename(&self.path, &backup)?;
        let mut options = OpenOptions::new();
        options.create(true).write(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        self.file = BufWriter::new(options.open(&self.path)?);
        self.size = 0;
        self.prune(now);
        Ok(())
    }

    /// The directory, the name without its extension, and the extension (with its dot).
    fn parts(&self) -> (PathBuf, String, String) {
        let dir = self.path.parent().map(Path::to_path_buf).unwrap_or_default();
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let ext = self.path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        let stem = name[..name.len() - ext.len()].to_owned();
        (dir, stem, ext)
    }

    /// lumberjack's `millRunOnce`: keep the newest `max_backups`, drop those older than
    /// `max_age_days`.
    fn prune(&self, now: SystemTime) {
        if self.max_backups == 0 && self.max_age_days == 0 {
            return;
        }
        let (dir, stem, ext) = self.parts();
        let listing = if dir.as_os_str().is_empty() { Path::new(".") } else { dir.as_path() };
        let Ok(entries) = std::fs::read_dir(listing) else { return };
        let prefix = format!("{stem}-");
        let mut backups: Vec<(SystemTime, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let time = name.strip_prefix(&prefix)?.strip_suffix(ext.as_str())?;
                Some((parse_backup_time(time)?, e.path()))
            })
            .collect();
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut remove = Vec::new();
        if self.max_backups > 0 && backups.len() > self.max_backups as usize {
            remove.extend(backups.split_off(self.max_backups as usize));
        }
        if self.max_age_days > 0 {
            let cutoff =
                now.checked_sub(Duration::from_secs(u64::from(self.max_age_days) * 86_400)).unwrap_or(UNIX_EPOCH);
            let (old, _kept): (Vec<_>, Vec<_>) = backups.into_iter().partition(|(t, _)| *t < cutoff);
            remove.extend(old);
        }
        for (_, path) in remove {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove an old audit log");
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;
    use crate::request_info::parse;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    fn policy(yaml: &str) -> Policy {
        let text = format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{yaml}");
        Policy::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{yaml}: {e}")).0
    }

    /// Rule matching as kube's `policy/checker_test.go` exercises it: (rules, user, method,
    /// path) → level and the stages left out.
    #[test]
    fn rules_match_as_kubes_checker() {
        let alice = user("alice", &["team", "system:authenticated"]);
        let bob = user("bob", &["system:authenticated"]);
        let ns_pod = "/api/v1/namespaces/default/pods/p";
        let ns_pod_status = "/api/v1/namespaces/default/pods/p/status";
        let nodes = "/api/v1/nodes/n";
        let crontab = "/apis/stable.example.com/v1/namespaces/default/crontabs/c";
        #[rustfmt::skip]
        let cases: &[(&str, Option<&UserInfo>, &str, &str, Level)] = &[
            // users, groups, verbs
            ("[{level: Metadata, users: [alice]}]", Some(&alice), "GET", ns_pod, Level::Metadata),
            ("[{level: Metadata, users: [alice]}]", Some(&bob), "GET", ns_pod, Level::None),
            ("[{level: Metadata, users: [alice]}]", None, "GET", ns_pod, Level::None),
            ("[{level: Request, userGroups: [team]}]", Some(&alice), "GET", "/version", Level::Request),
            ("[{level: Request, userGroups: [team]}]", Some(&bob), "GET", "/version", Level::None),
            ("[{level: Request, userGroups: [team]}]", None, "GET", "/version", Level::None),
            ("[{level: Request, verbs: [list, watch]}]", Some(&bob), "GET", "/api/v1/pods", Level::Request),
            ("[{level: Request, verbs: [list, watch]}]", Some(&bob), "GET", "/api/v1/pods?watch=1", Level::Request),
            ("[{level: Request, verbs: [list, watch]}]", Some(&bob), "GET", ns_pod, Level::None),
            // the first matching rule wins; no rule is None
            ("[{level: None, users: [bob]}, {level: RequestResponse}]", Some(&bob), "GET", ns_pod, Level::None),
            ("[{level: None, users: [bob]}, {level: RequestResponse}]", Some(&alice), "GET", ns_pod, Level::RequestResponse),
            // resources: group, resource, subresource forms, names
            ("[{level: Metadata, resources: [{group: ''}]}]", Some(&bob), "GET", ns_pod, Level::Metadata),
            ("[{level: Metadata, resources: [{group: ''}]}]", Some(&bob), "GET", crontab, Level::None),
            ("[{level: Metadata, resources: [{group: '*'}]}]", Some(&bob), "GET", crontab, Level::Metadata),
            ("[{level: Metadata, resources: [{group: stable.example.com, resources: [crontabs]}]}]", Some(&bob), "GET", crontab, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: [pods]}]}]", Some(&bob), "GET", ns_pod, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: [pods]}]}]", Some(&bob), "GET", ns_pod_status, Level::None),
            ("[{level: Metadata, resources: [{resources: [pods/status]}]}]", Some(&bob), "GET", ns_pod_status, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: [pods/status]}]}]", Some(&bob), "GET", ns_pod, Level::None),
            ("[{level: Metadata, resources: [{resources: ['*']}]}]", Some(&bob), "GET", ns_pod_status, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: ['*/status']}]}]", Some(&bob), "GET", ns_pod_status, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: ['*/status']}]}]", Some(&bob), "GET", ns_pod, Level::None),
            ("[{level: Metadata, resources: [{resources: ['pods/*']}]}]", Some(&bob), "GET", ns_pod_status, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: ['pods/*']}]}]", Some(&bob), "GET", ns_pod, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: [pods], resourceNames: [p]}]}]", Some(&bob), "GET", ns_pod, Level::Metadata),
            ("[{level: Metadata, resources: [{resources: [pods], resourceNames: [q]}]}]", Some(&bob), "GET", ns_pod, Level::None),
            ("[{level: Metadata, resources: [{resources: [pods], resourceNames: [p]}]}]", Some(&bob), "GET", "/api/v1/namespaces/default/pods", Level::None),
            // namespaces: "" is the cluster scope; resource rules never match non-resource paths
            ("[{level: Metadata, namespaces: [default]}]", Some(&bob), "GET", ns_pod, Level::Metadata),
            ("[{level: Metadata, namespaces: [default]}]", Some(&bob), "GET", nodes, Level::None),
            ("[{level: Metadata, namespaces: ['']}]", Some(&bob), "GET", nodes, Level::Metadata),
            ("[{level: Metadata, namespaces: ['']}]", Some(&bob), "GET", "/version", Level::None),
            ("[{level: Metadata, resources: [{group: '*'}]}]", Some(&bob), "GET", "/version", Level::None),
            // non-resource URLs: exact, *, prefix*
            ("[{level: Metadata, nonResourceURLs: [/version]}]", Some(&bob), "GET", "/version", Level::Metadata),
            ("[{level: Metadata, nonResourceURLs: [/version]}]", Some(&bob), "GET", "/versions", Level::None),
            ("[{level: Metadata, nonResourceURLs: ['*']}]", Some(&bob), "GET", "/healthz", Level::Metadata),
            ("[{level: Metadata, nonResourceURLs: ['*']}]", Some(&bob), "GET", ns_pod, Level::None),
            ("[{level: Metadata, nonResourceURLs: ['/openapi*']}]", Some(&bob), "GET", "/openapi/v2", Level::Metadata),
            ("[{level: Metadata, nonResourceURLs: ['/openapi/*']}]", Some(&bob), "GET", "/openapi", Level::None),
            ("[{level: Metadata, nonResourceURLs: ['/apis*']}]", Some(&bob), "GET", "/apis", Level::Metadata),
        ];
        for (rules, who, method, target, want) in cases {
            let p = policy(&format!("rules: {rules}"));
            let (path, query) = target.split_once('?').map_or((*target, None), |(p, q)| (p, Some(q)));
            let info = parse(&method.parse().unwrap(), path, query);
            assert_eq!(p.evaluate(*who, &info).level, *want, "{rules} / {:?} {method} {target}", who.map(|u| &u.name));
        }
    }

    /// omitStages: the policy's and the rule's together; omitManagedFields: the rule's choice
    /// over the policy's.
    #[test]
    fn stages_and_managed_fields() {
        let p = policy(
            "omitStages: [RequestReceived]\nomitManagedFields: true\nrules:\n\
             - {level: Metadata, users: [a], omitStages: [ResponseStarted], omitManagedFields: false}\n\
             - {level: Request, users: [b]}\n",
        );
        let info = parse(&http::Method::GET, "/version", None);
        let a = p.evaluate(Some(&user("a", &[])), &info);
        assert!(a.omit_stages.contains(Stage::RequestReceived) && a.omit_stages.contains(Stage::ResponseStarted));
        assert!(!a.omit_stages.contains(Stage::ResponseComplete));
        assert!(!a.omit_managed_fields);
        let b = p.evaluate(Some(&user("b", &[])), &info);
        assert_eq!(
            (b.level, b.omit_stages, b.omit_managed_fields),
            (Level::Request, Stages::of(&[Stage::RequestReceived]), true)
        );
        let none = p.evaluate(Some(&user("c", &[])), &info);
        assert_eq!((none.level, none.omit_stages), (Level::None, Stages::of(&[Stage::RequestReceived])));
    }

    /// A bad policy is refused at start with kube's messages.
    #[test]
    fn bad_policies() {
        let cases: &[(&str, &str)] = &[
            ("kind: Policy\nrules: [{level: Metadata}]", "must be apiVersion audit.k8s.io/v1, kind Policy"),
            (
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: Metadata}]",
                "apiVersion \"audit.k8s.io/v1beta1\", kind \"Policy\": an audit policy must be",
            ),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []", "loaded illegal policy with 0 rules"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: {level: Metadata}", "failed decoding"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{}]", "rules[0].level: Required value"),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]",
                "rules[0].level: Unsupported value: \"Everything\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None}]",
                "omitStages[0]: Invalid value: \"Done\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [version, '/a*b']}]",
                "[rules[0].nonResourceURLs[0]: Invalid value: \"version\": non-resource URL rules must begin with a '/' character, rules[0].nonResourceURLs[1]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule]",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], namespaces: [a]}]",
                "rules[0].nonResourceURLs: Invalid value: [\"/x\"]: rules cannot apply to both regular resources and non-resource URLs",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: Bad_Group}]}]",
                "rules[0].resources.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: apps/v1}]}]",
                "rules[0].resources.group: Invalid value: \"apps/v1\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{resourceNames: [x]}]}]",
                "rules[0].resources.resourceNames: Invalid value: [\"x\"]: using resourceNames requires at least one resource",
            ),
        ];
        for (text, want) in cases {
            let err = Policy::parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(want), "{text}\n  got: {err}\n want: {want}");
        }
    }

    #[test]
    fn unknown_fields_warn_and_nulls_are_empty() {
        let text = "apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata: {name: p}\nlevel: Metadata\n\
                    rules:\n- level: Metadata\n  users: ~\n  resource: [pods]\n  resources: [{group: '', resource: [x]}]\n";
        let (p, warnings) = Policy::parse(text.as_bytes()).unwrap();
        assert_eq!(
            warnings,
            [
                "unknown field \"level\"",
                "unknown field \"rules[0].resource\"",
                "unknown field \"rules[0].resources[0].resource\""
            ]
        );
        assert_eq!(p.rules[0].users, Vec::<String>::new());
        // JSON is YAML too.
        let json = r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"RequestResponse"}]}"#;
        assert_eq!(Policy::parse(json.as_bytes()).unwrap().0.rules[0].level, Some(Level::RequestResponse));
    }

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

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// Rotation as lumberjack does it: by size, backups named by time, pruned by count and age.
    #[test]
    fn rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let day = Duration::from_secs(86_400);
        let t0 = UNIX_EPOCH + Duration::from_millis(1_767_323_045_123); // 2026-01-02T03:04:05.123Z
        let mut log = RotatingFile::open(&path, 10, 2, 3, t0).unwrap();
        log.write(b"12345\n", t0).unwrap();
        log.write(b"1234\n", t0).unwrap(); // 11 > 10: rotated first
        assert_eq!(files(dir.path()), ["audit-2026-01-02T03-04-05.123.log", "audit.log"]);
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1234\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("audit-2026-01-02T03-04-05.123.log")).unwrap(), "12345\n");
        // A line over the limit is refused and nothing rotates.
        assert!(log.write(&[b'x'; 11], t0).is_err());
        // Two more rotations, a day apart: only the newest two backups are kept.
        log.write(b"abcdefgh\n", t0 + day).unwrap();
        log.write(b"abcdefgh\n", t0 + day * 2).unwrap();
        assert_eq!(
            files(dir.path()),
            ["audit-2026-01-03T03-04-05.123.log", "audit-2026-01-04T03-04-05.123.log", "audit.log"]
        );
        // Files that only look alike are left alone; backups older than max age go.
        std::fs::write(dir.path().join("audit-notatime.log"), "").unwrap();
        std::fs::write(dir.path().join("other-2020-01-01T00-00-00.000.log"), "").unwrap();
        log.write(b"abcdefgh\n", t0 + day * 6).unwrap();
        assert_eq!(
            files(dir.path()),
            [
                "audit-2026-01-08T03-04-05.123.log",
                "audit-notatime.log",
                "audit.log",
                "other-2020-01-01T00-00-00.000.log"
            ],
            "the backups of the 3rd and 4th are older than 3 days at the 8th"
        );
        // Opening a full file rotates it at once; no rotation at all with size 0.
        drop(log);
        let mut log = RotatingFile::open(&path, 9, 0, 0, t0 + day * 7).unwrap();
        assert!(dir.path().join("audit-2026-01-09T03-04-05.123.log").exists());
        log.write(b"x\n", t0).unwrap();
        let none = dir.path().join("plain");
        let mut plain = RotatingFile::open(&none, 0, 1, 1, t0).unwrap();
        for _ in 0..100 {
            plain.write(b"0123456789\n", t0).unwrap();
        }
        plain.flush().unwrap();
        assert_eq!(std::fs::metadata(&none).unwrap().len(), 1100);
        assert_eq!(parse_backup_time(&backup_time(t0)), Some(t0));
    }

    /// What one request writes, stage by stage, at each level.
    #[tokio::test]
    async fn events_of_a_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("audit.log");
        let policy = policy(
            "rules:\n- {level: None, users: [quiet]}\n- {level: RequestResponse, verbs: [get]}\n- {level: Metadata, omitStages: [RequestReceived]}\n",
        );
        let auditor = Auditor::start(AuditConfig { policy, log: LogConfig::new(&path) }).unwrap();
        let uri: http::Uri = "/apis/g.example.com/v1/namespaces/ns/things/a?x=1&y=2".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(http::header::USER_AGENT, "test/1.0".parse().unwrap());
        let arrival = Arrival {
            audit_id: "abc",
            received: SystemTime::now(),
            uri: &uri,
            headers: &headers,
            peer: Some("127.0.0.1".parse().unwrap()),
        };
        let alice = user("alice", &["system:authenticated"]);
        let get = parse(&http::Method::GET, uri.path(), uri.query());
        assert!(auditor.begin(arrival, &user("quiet", &[]), &get, false).is_none());

        let audit = auditor.begin(arrival, &alice, &get, false).unwrap();
        audit.received().await;
        audit.record().annotate(DECISION_ANNOTATION, "allow");
        audit.record().annotate(REASON_ANNOTATION, "");
        audit.record().annotate(DECISION_ANNOTATION, "forbid");
        let object = json!({"kind": "Thing", "metadata": {"name": "a", "managedFields": []}});
        let response = crate::body::json_response(http::StatusCode::OK, &object);
        let response = audit.respond(response).await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), object, "the answer is untouched");

        let delete = parse(&http::Method::DELETE, uri.path(), None);
        let audit = auditor.begin(arrival, &alice, &delete, false).unwrap();
        audit.received().await;
        audit.record().request_body(json!({"propagationPolicy": "Background"}));
        let gone = crate::status::Status::not_found("g.example.com", "things", "a");
        audit.respond(gone.into_response()).await;

        let list = parse(&http::Method::GET, "/apis/g.example.com/v1/things", None);
        let audit = auditor.begin(arrival, &alice, &list, false).unwrap();
        drop(audit); // the client went away

        // A handler that panics: the Panic stage with kube's status, and the panic goes on.
        let audit = auditor.begin(arrival, &alice, &list, false).unwrap();
        let serving = tokio::spawn(async move {
            let record = audit.record().clone();
            catch_panic(&record, async { panic!("boom") }).await;
            audit.respond(crate::body::json_response(http::StatusCode::OK, &json!({}))).await
        });
        assert!(serving.await.unwrap_err().is_panic());

        auditor.flush().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let ts = |e: &Value, k: &str| e[k].as_str().unwrap().to_owned();
        assert_eq!(events.len(), 5, "{text}");
        let received = ts(&events[0], "requestReceivedTimestamp");
        assert_eq!(received.len(), "2026-01-02T03:04:05.000006Z".len());
        assert_eq!(ts(&events[0], "stageTimestamp"), received);
        let common = json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": "abc",
            "requestURI": "/apis/g.example.com/v1/namespaces/ns/things/a?x=1&y=2",
            "user": {"username": "alice", "groups": ["system:authenticated"]},
            "sourceIPs": ["127.0.0.1"], "userAgent": "test/1.0",
            "objectRef": {"resource": "things", "namespace": "ns", "name": "a", "apiGroup": "g.example.com", "apiVersion": "v1"},
            "requestReceivedTimestamp": received,
        });
        let with = |extra: Value, e: &Value| {
            let mut want = common.clone();
            for (k, v) in extra.as_object().unwrap() {
                want[k] = v.clone();
            }
            want["stageTimestamp"] = e["stageTimestamp"].clone();
            want["requestReceivedTimestamp"] = e["requestReceivedTimestamp"].clone();
            want
        };
        assert_eq!(
            events[0],
            with(json!({"level": "RequestResponse", "stage": "RequestReceived", "verb": "get"}), &events[0])
        );
        assert_eq!(
            events[1],
            with(
                json!({"level": "RequestResponse", "stage": "ResponseComplete", "verb": "get",
                       "responseStatus": {"metadata": {}, "code": 200}, "responseObject": object,
                       "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}}),
                &events[1]
            )
        );
        // Metadata: no RequestReceived (omitted), no body; the delete's Status whole.
        assert_eq!(
            events[2],
            with(
                json!({"level": "Metadata", "stage": "ResponseComplete", "verb": "delete",
                       "responseStatus": {"metadata": {}, "status": "Failure", "message": "things.g.example.com \"a\" not found",
                                          "reason": "NotFound", "details": {"name": "a", "group": "g.example.com", "kind": "things"}, "code": 404}}),
                &events[2]
            )
        );
        assert_eq!(events[3]["stage"], "ResponseComplete");
        assert_eq!(
            events[3]["responseStatus"],
            json!({"metadata": {}, "status": "Success", "message": "Connection closed early", "code": 200})
        );
        assert_eq!(
            events[3]["objectRef"],
            json!({"resource": "things", "apiGroup": "g.example.com", "apiVersion": "v1"})
        );
        assert_eq!(events[4]["stage"], "Panic");
        assert_eq!(
            events[4]["responseStatus"],
            json!({"metadata": {}, "status": "Failure", "message": "APIServer panic'd: boom", "reason": "InternalError", "code": 500})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        }
    }
}
