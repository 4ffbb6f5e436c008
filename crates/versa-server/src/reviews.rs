//! The review kinds standalone versa answers and never stores, each kube's `201` with the
//! review as sent and its `status`:
//!
//! - `authorization.k8s.io/v1` SelfSubjectAccessReview ("may I?", `kubectl auth can-i`),
//!   SubjectAccessReview ("may they?", for any user and groups) and LocalSubjectAccessReview
//!   (the same, in the namespace of the URL): decided by the server's own authorizer — the one
//!   that decides real requests — with kube's validation and `status.allowed` and reason.
//! - SelfSubjectRulesReview ("what may I do in this namespace?", `kubectl auth can-i --list`):
//!   the rules of every binding that applies (kube's `RulesFor`); where versa does not decide
//!   by RBAC, none, marked incomplete.
//! - `authentication.k8s.io/v1` SelfSubjectReview ("who am I?", `kubectl auth whoami`), and
//!   TokenReview ("whose is this token?", `crate::service_account::token_review`).
//!
//! Who may create which is RBAC's to say (kube's `system:basic-user` lets every authenticated
//! user create the self reviews; `system:auth-delegator` the others). Bodies are JSON, YAML
//! or, from client-go's typed client, protobuf.

use http::{Response, StatusCode};
use serde_json::{Map, Value, json};
use versa_schema::field::BadValue;
use versa_schema::{Error as FieldError, ErrorList, Path};

use crate::auth::{Decision, UserInfo};
use crate::body::Body;
use crate::codec;
use crate::request_info::RequestInfo;
use crate::state::State;
use crate::status::Status;

/// The groups of the reviews.
pub const AUTHORIZATION: &str = "authorization.k8s.io";
pub const AUTHENTICATION: &str = "authentication.k8s.io";

/// The review a request creates, when it creates one this module answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    SelfSubjectAccess,
    SubjectAccess,
    LocalSubjectAccess,
    SelfSubjectRules,
    SelfSubject,
    Token,
}

/// The review resources as discovery lists them (kube's: create only, never stored, so no
/// storage version hash), group by group: `(group, plural, kind, namespaced)`.
pub const LISTED: &[(&str, &str, &str, bool)] = &[
    (AUTHENTICATION, "selfsubjectreviews", "SelfSubjectReview", false),
    (AUTHENTICATION, "tokenreviews", "TokenReview", false),
    (AUTHORIZATION, "localsubjectaccessreviews", "LocalSubjectAccessReview", true),
    (AUTHORIZATION, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
    (AUTHORIZATION, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
    (AUTHORIZATION, "subjectaccessreviews", "SubjectAccessReview", false),
];

impl Review {
    /// The review `info` creates, if any.
    pub fn of(info: &RequestInfo) -> Option<Review> {
        if !info.is_resource_request || info.verb != "create" || !info.subresource.is_empty() {
            return None;
        }
        Some(match (info.api_group.as_str(), info.resource.as_str(), info.namespace.is_empty()) {
            (AUTHORIZATION, "selfsubjectaccessreviews", true) => Review::SelfSubjectAccess,
            (AUTHORIZATION, "subjectaccessreviews", true) => Review::SubjectAccess,
            (AUTHORIZATION, "localsubjectaccessreviews", false) => Review::LocalSubjectAccess,
            (AUTHORIZATION, "selfsubjectrulesreviews", true) => Review::SelfSubjectRules,
            (AUTHENTICATION, "selfsubjectreviews", true) => Review::SelfSubject,
            (AUTHENTICATION, "tokenreviews", true) => Review::Token,
            _ => return None,
        })
    }

    fn kind(self) -> &'static str {
        match self {
            Review::SelfSubjectAccess => "SelfSubjectAccessReview",
            Review::SubjectAccess => "SubjectAccessReview",
            Review::LocalSubjectAccess => "LocalSubjectAccessReview",
            Review::SelfSubjectRules => "SelfSubjectRulesReview",
            Review::SelfSubject => "SelfSubjectReview",
            Review::Token => "TokenReview",
        }
    }

    fn group(self) -> &'static str {
        if matches!(self, Review::SelfSubject | Review::Token) { AUTHENTICATION } else { AUTHORIZATION }
    }
}

/// Answers the create of `review` whose body is `body`, by `user`, at `info`.
pub async fn answer(
    state: &State,
    review: Review,
    user: &UserInfo,
    info: &RequestInfo,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<Response<Body>, Status> {
    if review == Review::Token {
        return crate::service_account::token_review::token_review(state, headers, body).await;
    }
    let format = codec::body_format_builtin(headers)?;
    let sent = codec::decode_object(body, format, review.kind())?.value;
    let spec = sent.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut metadata = json!({"creationTimestamp": null});
    let status = match review {
        Review::SelfSubjectAccess | Review::SubjectAccess | Review::LocalSubjectAccess => {
            let mut errs = attributes_errors(&spec);
            let subject = match review {
                Review::SelfSubjectAccess => user.clone(),
                _ => {
                    let (name, groups) = (text(&spec, "user"), strings(&spec, "groups"));
                    if name.is_empty() && groups.is_empty() {
                        errs.push(FieldError::invalid(
                            Path::new("spec").child("user"),
                            BadValue::Json(json!(name)),
                            "at least one of user or group must be specified",
                        ));
                    }
                    UserInfo { name, groups, uid: text(&spec, "uid"), extra: extra(&spec) }
                }
            };
            if review == Review::LocalSubjectAccess {
                let namespace = sent.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
                let asked = spec.pointer("/resourceAttributes/namespace").and_then(Value::as_str);
                if let Some(asked) = asked.filter(|a| *a != namespace) {
                    errs.push(FieldError::invalid(
                        Path::new("spec.resourceAttributes.namespace"),
                        BadValue::Json(json!(asked)),
                        "must match metadata.namespace",
                    ));
                }
                if spec.get("nonResourceAttributes").is_some_and(Value::is_object) {
                    errs.push(FieldError::invalid(
                        Path::new("spec.nonResourceAttributes"),
                        BadValue::Json(spec["nonResourceAttributes"].clone()),
                        "disallowed on this kind of request",
                    ));
                }
                if !errs.is_empty() {
                    return Err(Status::invalid(AUTHORIZATION, review.kind(), "", &ErrorList(errs)));
                }
                if namespace != info.namespace {
                    return Err(Status::bad_request(format!(
                        "spec.resourceAttributes.namespace must match namespace: {}",
                        info.namespace
                    )));
                }
                metadata["namespace"] = json!(namespace);
            }
            if !errs.is_empty() {
                return Err(Status::invalid(AUTHORIZATION, review.kind(), "", &ErrorList(errs)));
            }
            access(state, &subject, &spec).await
        }
        Review::SelfSubjectRules => {
            let namespace = text(&spec, "namespace");
            if namespace.is_empty() {
                return Err(Status::bad_request("no namespace on request"));
            }
            rules(state, user, &namespace).await
        }
        // Answered above.
        Review::Token => return Err(Status::internal("a TokenReview is answered by its own module")),
        Review::SelfSubject => {
            let mut info = json!({"username": user.name});
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            if !user.groups.is_empty() {
                info["groups"] = json!(user.groups);
            }
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            json!({"userInfo": info})
        }
    };
    let mut answer = Map::new();
    answer.insert("kind".into(), json!(review.kind()));
    answer.insert("apiVersion".into(), json!(format!("{}/v1", review.group())));
    answer.insert("metadata".into(), metadata);
    if review != Review::SelfSubject {
        // kube answers a rules review with an empty spec, the others with the one sent.
        let spec = if review == Review::SelfSubjectRules { json!({}) } else { spec };
        answer.insert("spec".into(), spec);
    }
    answer.insert("status".into(), status);
    let mut response = Response::new(crate::body::full(Value::Object(answer).to_string()));
    *response.status_mut() = StatusCode::CREATED;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    Ok(response)
}

fn text(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

fn extra(spec: &Value) -> std::collections::BTreeMap<String, Vec<String>> {
    let Some(extra) = spec.get("extra").filter(|e| e.is_object()) else { return Default::default() };
    extra.as_object().into_iter().flatten().map(|(k, _)| (k.clone(), strings(extra, k))).collect()
}

/// kube's checks of the attributes every access review has.
fn attributes_errors(spec: &Value) -> Vec<FieldError> {
    let present = |k: &str| spec.get(k).is_some_and(Value::is_object);
    let mut errs = Vec::new();
    if present("resourceAttributes") && present("nonResourceAttributes") {
        errs.push(FieldError::invalid(
            Path::new("spec").child("nonResourceAttributes"),
            BadValue::Json(spec["nonResourceAttributes"].clone()),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !present("resourceAttributes") && !present("nonResourceAttributes") {
        // kube prints the absent nonResourceAttributes it was handed: a nil pointer.
        errs.push(FieldError::invalid(
            Path::new("spec").child("resourceAttributes"),
            BadValue::Raw("\"null\"".into()),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    errs
}

/// The status of an access review of `spec` for `subject`.
async fn access(state: &State, subject: &UserInfo, spec: &Value) -> Value {
    let info = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), _) if r.is_object() => RequestInfo {
            is_resource_request: true,
            verb: text(r, "verb"),
            api_group: text(r, "group"),
            api_version: text(r, "version"),
            namespace: text(r, "namespace"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            name: text(r, "name"),
            ..RequestInfo::default()
        },
        (_, Some(n)) => RequestInfo {
            is_resource_request: false,
            verb: text(n, "verb"),
            path: text(n, "path"),
            ..RequestInfo::default()
        },
        (_, None) => RequestInfo::default(),
    };
    let mut status = match state.auth.authorizer.authorize(subject, &info).await {
        Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
        Decision::Deny(reason) => json!({"allowed": false, "reason": reason}),
        Decision::Error(e) => json!({"allowed": false, "evaluationError": e}),
    };
    if let Some(map) = status.as_object_mut() {
        map.retain(|_, v| v.as_str() != Some(""));
    }
    status
}

/// The status of a rules review of `namespace` for `user`.
async fn rules(state: &State, user: &UserInfo, namespace: &str) -> Value {
    let Some(policy) = state.auth.authorizer.policy().await else {
        return json!({"resourceRules": [], "nonResourceRules": [], "incomplete": true});
    };
    let (rules, errors) = policy.rules_for(&user.name, &user.groups, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules {
        if rule.resources.as_ref().is_some_and(|r| !r.is_empty()) {
            let mut r = json!({"verbs": rule.verbs, "apiGroups": rule.api_groups.unwrap_or_default(),
                "resources": rule.resources});
            if let Some(names) = rule.resource_names.filter(|n| !n.is_empty()) {
                r["resourceNames"] = json!(names);
            }
            resource_rules.push(r);
        }
        if let Some(urls) = rule.non_resource_urls.filter(|u| !u.is_empty()) {
            non_resource_rules.push(json!({"verbs": rule.verbs, "nonResourceURLs": urls}));
        }
    }
    let mut status =
        json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
    if !errors.is_empty() {
        status["evaluationError"] =
            json!(if errors.len() == 1 { errors[0].clone() } else { format!("[{}]", errors.join(", ")) });
    }
    status
}
