//! The `token` subresource of ServiceAccounts: `POST .../serviceaccounts/NAME/token` with an
//! `authentication.k8s.io/v1` TokenRequest (`kubectl create token`), as kube's `TokenREST`
//! answers it. The request's name and namespace must match the path's; the ServiceAccount must
//! exist (its uid, if the request names one, must match: 409); `spec.audiences` default to the
//! API's, `spec.expirationSeconds` to 3600 and may be no less than 600 nor more than 2^32;
//! `spec.boundObjectRef` names a Pod, Secret or Node (core `v1`) that must exist (with the uid
//! given, if any; a Pod must run as this ServiceAccount). The answer is `201` with the request
//! (name, namespace, uid and creation time filled in) and `status.token` and
//! `status.expirationTimestamp`; nothing is stored.

use http::StatusCode;
use serde_json::{Value, json};
use versa_schema::{Error as FieldError, ErrorList, Path, field::BadValue};

use super::{BoundKind, Claims, Issuer, Ref, unix_now};
use crate::codec;
use crate::status::Status;

/// The group and kind of the request.
pub const GROUP: &str = "authentication.k8s.io";
pub const KIND: &str = "TokenRequest";

/// kube's bounds on `spec.expirationSeconds` (`MinTokenAgeSec`, 2^32), and its default.
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// What the handler reads from the store: an object of the core group by (plural, namespace,
/// name), as JSON (`Ok(None)`: not found).
pub trait Lookup {
    fn get(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> impl std::future::Future<Output = Result<Option<Value>, Status>> + Send;
}

/// The audit annotation kube gives a TokenRequest: the issued token's credential id.
pub const ISSUED_CREDENTIAL_ID: &str = "authentication.kubernetes.io/issued-credential-id";

/// What a TokenRequest answers: the status code, the TokenRequest, and the issued token's
/// credential id (`JTI=<jti>`, for the audit event).
#[derive(Debug)]
pub struct Issued {
    pub code: StatusCode,
    pub answer: Value,
    pub credential_id: String,
}

/// Issues the token the TokenRequest `body` (decoded) asks for ServiceAccount `namespace/name`.
pub async fn create(
    issuer: &Issuer,
    lookup: &impl Lookup,
    namespace: &str,
    name: &str,
    mut request: Value,
) -> Result<Issued, Status> {
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_owned();
    let (req_name, req_namespace, req_uid) =
        (text(&request, "/metadata/name"), text(&request, "/metadata/namespace"), text(&request, "/metadata/uid"));
    if !req_name.is_empty() && req_name != name {
        let errs = invalid(
            Path::new("metadata").child("name"),
            json!(req_name),
            "must match the service account name if specified",
        );
        return Err(Status::invalid(GROUP, KIND, name, &errs));
    }
    if !req_namespace.is_empty() && req_namespace != namespace {
        let errs = invalid(
            Path::new("metadata").child("namespace"),
            json!(req_namespace),
            "must match the service account namespace if specified",
        );
        return Err(Status::invalid(GROUP, KIND, name, &errs));
    }
    let account = lookup.get("serviceaccounts", Some(namespace), name).await?;
    let account = account.ok_or_else(|| Status::not_found("", "serviceaccounts", name))?;
    let uid = text(&account, "/metadata/uid");
    if !req_uid.is_empty() && req_uid != uid {
        return Err(Status::conflict_with(
            GROUP,
            KIND,
            name,
            &format!("the UID in the token request ({req_uid}) does not match the UID of the service account ({uid})"),
        ));
    }
    if !request.get("spec").is_some_and(Value::is_object) {
        request["spec"] = json!({});
    }
    let spec = &mut request["spec"];
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = super::API_AUDIENCES.iter().map(|a| a.to_string()).collect();
    }
    spec["audiences"] = json!(audiences);
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| Status::bad_request("spec.expirationSeconds: not an integer"))?,
    };
    spec["expirationSeconds"] = json!(expiration);
    let seconds = Path::new("spec").child("expirationSeconds");
    let mut errs = ErrorList::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        errs.0.extend(invalid(seconds.clone(), json!(expiration), "may not specify a duration less than 10 minutes").0);
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        errs.0.extend(invalid(seconds, json!(expiration), "may not specify a duration larger than 2^32 seconds").0);
    }
    if !errs.0.is_empty() {
        return Err(Status::invalid(GROUP, KIND, "", &errs));
    }
    let bound = match spec.get("boundObjectRef").filter(|r| r.is_object()) {
        Some(reference) => Some(bind(lookup, namespace, name, reference).await?),
        None => None,
    };
    let now = unix_now();
    let claims = Claims::new(
        namespace,
        Ref { name: name.to_owned(), uid: uid.clone() },
        audiences,
        now,
        expiration,
        bound,
        versa_registry::meta::new_uid(),
    );
    let token = issuer.sign(&claims).map_err(|e| Status::internal(format!("failed to generate token: {e}")))?;
    let at = |seconds: i64| {
        jiff::Timestamp::from_second(seconds).map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()).unwrap_or_default()
    };
    let metadata = request.get_mut("metadata").and_then(Value::as_object_mut);
    let mut meta = metadata.map(std::mem::take).unwrap_or_default();
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(namespace));
    meta.insert("uid".into(), json!(uid));
    meta.insert("creationTimestamp".into(), json!(at(now)));
    request["metadata"] = Value::Object(meta);
    request["kind"] = json!(KIND);
    request["apiVersion"] = json!(format!("{GROUP}/v1"));
    request["status"] = json!({"token": token, "expirationTimestamp": at(now.saturating_add(expiration))});
    Ok(Issued { code: StatusCode::CREATED, answer: request, credential_id: format!("JTI={}", claims.jti) })
}

/// The object a token is bound to, checked as kube checks it.
async fn bind(
    lookup: &impl Lookup,
    namespace: &str,
    account: &str,
    reference: &Value,
) -> Result<(BoundKind, Ref), Status> {
    let text = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (kind, api_version, name, want_uid) = (text("kind"), text("apiVersion"), text("name"), text("uid"));
    // kube parses the group out of apiVersion (`group/version`, or a version alone).
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let (bound, plural, ns) = match (group, kind.as_str()) {
        ("", "Pod") => (BoundKind::Pod, "pods", Some(namespace)),
        ("", "Secret") => (BoundKind::Secret, "secrets", Some(namespace)),
        ("", "Node") => (BoundKind::Node, "nodes", None),
        _ => {
            let version = api_version.rsplit_once('/').map_or(api_version.as_str(), |(_, v)| v);
            let gvk = if group.is_empty() {
                format!("/{version}, Kind={kind}")
            } else {
                format!("{group}/{version}, Kind={kind}")
            };
            return Err(Status::bad_request(format!("cannot bind token to object of type {gvk}")));
        }
    };
    let object = lookup.get(plural, ns, &name).await?.ok_or_else(|| Status::not_found("", plural, &name))?;
    if bound == BoundKind::Pod
        && object.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("") != account
    {
        return Err(Status::bad_request(format!(
            "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
        )));
    }
    let uid = object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_owned();
    if !want_uid.is_empty() && want_uid != uid {
        return Err(Status::conflict_with(
            group,
            &kind,
            &name,
            &format!(
                "the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok((bound, Ref { name, uid }))
}

fn invalid(path: Path, value: Value, detail: &str) -> ErrorList {
    ErrorList(vec![FieldError::invalid(path, BadValue::Json(value), detail)])
}

/// Decodes a TokenRequest body (JSON, YAML or protobuf).
pub fn decode(headers: &http::HeaderMap, body: &[u8]) -> Result<Value, Status> {
    let format = codec::body_format_builtin(headers)?;
    Ok(codec::decode_object(body, format, KIND)?.value)
}

/// [`Lookup`] in a store.
#[derive(Debug, Clone, Copy)]
pub struct StoreLookup<'a> {
    pub store: &'a dyn versa_storage::Store,
    pub keys: &'a versa_storage::Keys,
}

impl Lookup for StoreLookup<'_> {
    async fn get(&self, plural: &str, namespace: Option<&str>, name: &str) -> Result<Option<Value>, Status> {
        let key = self.keys.object("", plural, namespace, name);
        let kv = self.store.get(&key).await.map_err(Status::from_storage)?;
        Ok(kv.and_then(|kv| serde_json::from_slice(&kv.value).ok()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Objects by (plural, name), in namespace `team` (or none for nodes).
    struct Objects(HashMap<(&'static str, &'static str), Value>);

    impl Lookup for Objects {
        async fn get(&self, plural: &str, _namespace: Option<&str>, name: &str) -> Result<Option<Value>, Status> {
            Ok(self.0.iter().find(|((p, n), _)| *p == plural && *n == name).map(|(_, v)| v.clone()))
        }
    }

    fn objects() -> Objects {
        Objects(HashMap::from([
            (("serviceaccounts", "robot"), json!({"metadata": {"name": "robot", "uid": "sa-uid"}})),
            (("secrets", "key"), json!({"metadata": {"name": "key", "uid": "secret-uid"}})),
            (
                ("pods", "web"),
                json!({"metadata": {"name": "web", "uid": "pod-uid"}, "spec": {"serviceAccountName": "other"}}),
            ),
        ]))
    }

    /// Requests for `team/robot` and kube's answers: the error's status code and message, or
    /// the spec and claims of the token issued.
    #[test]
    fn token_requests() {
        let issuer = Issuer::from_key(&rcgen::KeyPair::generate().unwrap());
        let refused = [
            (
                json!({"metadata": {"name": "other"}}),
                422,
                "TokenRequest.authentication.k8s.io \"robot\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified",
            ),
            (
                json!({"metadata": {"uid": "x"}}),
                409,
                "Operation cannot be fulfilled on TokenRequest.authentication.k8s.io \"robot\": the UID in the token request (x) does not match the UID of the service account (sa-uid)",
            ),
            (
                json!({"spec": {"expirationSeconds": 599}}),
                422,
                "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes",
            ),
            (
                json!({"spec": {"expirationSeconds": 4294967297_i64}}),
                422,
                "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
            ),
            (
                json!({"spec": {"boundObjectRef": {"kind": "Deployment", "apiVersion": "apps/v1", "name": "d"}}}),
                400,
                "cannot bind token to object of type apps/v1, Kind=Deployment",
            ),
            (
                json!({"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "gone"}}}),
                404,
                "secrets \"gone\" not found",
            ),
            (
                json!({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web"}}}),
                400,
                "cannot bind token for serviceaccount \"robot\" to pod running with different serviceaccount name.",
            ),
            (
                json!({"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "key", "uid": "old"}}}),
                409,
                "Operation cannot be fulfilled on Secret \"key\": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated",
            ),
        ];
        let run = |request: Value, account: &'static str| {
            let objects = objects();
            let issuer = &issuer;
            async move { create(issuer, &objects, "team", account, request).await }
        };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for (request, code, message) in refused {
            let status = runtime.block_on(run(request.clone(), "robot")).unwrap_err();
            assert_eq!((status.code.as_u16(), status.message.as_str()), (code, message), "{request}");
        }
        let missing = runtime.block_on(run(json!({}), "nobody")).unwrap_err();
        assert_eq!(missing.message, "serviceaccounts \"nobody\" not found");

        let request = json!({"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "key"}}});
        let issued = runtime.block_on(run(request, "robot")).unwrap();
        assert_eq!(issued.code, StatusCode::CREATED);
        let answer = issued.answer;
        assert_eq!(answer["metadata"]["uid"], "sa-uid");
        assert_eq!(answer["spec"]["expirationSeconds"], 3600);
        assert_eq!(answer["spec"]["audiences"], json!([super::super::ISSUER]));
        let token = answer["status"]["token"].as_str().unwrap();
        let (claims, _) = issuer.verify(token, unix_now(), &[]).unwrap().unwrap();
        assert_eq!(claims.exp - claims.iat, 3600);
        assert_eq!(issued.credential_id, format!("JTI={}", claims.jti));
        assert_eq!(claims.kubernetes.secret, Some(Ref { name: "key".into(), uid: "secret-uid".into() }));
        assert_eq!(claims.sub, "system:serviceaccount:team:robot");
    }
}
