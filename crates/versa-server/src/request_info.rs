//! What a request is about, read off its method, path and query the way kube-apiserver's
//! `RequestInfoFactory` does: a resource request (`/api/v1/...`, `/apis/<group>/<version>/...`)
//! with verb, namespace, resource, subresource and name — or a non-resource request (`/healthz`,
//! `/version`, discovery roots) with a path. Authorization and routing both work from this.

use std::borrow::Cow;

use http::Method;

/// The parsed request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    pub is_resource_request: bool,
    pub path: String,
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection (and
    /// the lower-case HTTP method for non-resource requests).
    pub verb: String,
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The path segments after the resource part (beyond `name/subresource`), if any.
    pub parts: Vec<String>,
    /// The `fieldSelector` and `labelSelector` of a list, watch or deletecollection, as sent
    /// (kube's `AuthorizeWithSelectors`, on by default since 1.34): what authorizers may judge by.
    pub field_selector: String,
    pub label_selector: String,
}

impl RequestInfo {
    /// The name authorizers and audit see: the path's, or — for a list or watch without one —
    /// the name its field selector requires exactly (`metadata.name=foo`, what `kubectl get
    /// thing foo --watch` sends), when it is a valid path segment, as kube's request info
    /// reads it. Routing keeps using [`RequestInfo::name`].
    pub fn authorization_name(&self) -> Cow<'_, str> {
        if !self.name.is_empty() || !matches!(self.verb.as_str(), "list" | "watch") {
            return Cow::Borrowed(&self.name);
        }
        let Ok(selector) = crate::selector::FieldSelector::parse(&self.field_selector) else {
            return Cow::Borrowed("");
        };
        let exact = selector
            .requirements()
            .iter()
            .find(|r| r.field == "metadata.name" && r.op == crate::selector::FieldOperator::Equals);
        match exact {
            Some(r) if versa_schema::names::is_valid_path_segment_name(&r.value).is_empty() => {
                Cow::Owned(r.value.clone())
            }
            _ => Cow::Borrowed(""),
        }
    }
}

fn is_watch(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            k == "watch" && (v == "true" || v == "1")
        })
    })
}

/// Parses a request.
pub fn parse(method: &Method, path: &str, query: Option<&str>) -> RequestInfo {
    let mut info = RequestInfo { path: path.to_string(), verb: method.as_str().to_lowercase(), ..Default::default() };
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (prefix, rest) = match segments.as_slice() {
        ["api", rest @ ..] => ("api", rest),
        ["apis", rest @ ..] => ("apis", rest),
        _ => return info,
    };
    // `/api` and `/apis` with a group but no version are discovery, not resources.
    let (group, version, rest) = match (prefix, rest) {
        ("api", [version, rest @ ..]) => ("", *version, rest),
        ("apis", [group, version, rest @ ..]) => (*group, *version, rest),
        _ => return info,
    };
    if rest.is_empty() {
        return info;
    }
    info.is_resource_request = true;
    info.api_prefix = prefix.to_string();
    info.api_group = group.to_string();
    info.api_version = version.to_string();

    let mut rest: &[&str] = rest;
    // `namespaces/<ns>/<resource>...` is namespaced; `namespaces` and `namespaces/<ns>` alone
    // are the namespaces resource itself.
    // `namespaces/<ns>/status` and `namespaces/<ns>/finalize` are subresources of the
    // namespace (kube's namespaceSubresources).
    if rest[0] == "namespaces" && rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
        info.namespace = rest[1].to_string();
        rest = &rest[2..];
    }
    info.resource = rest[0].to_string();
    if let Some(name) = rest.get(1) {
        info.name = (*name).to_string();
    }
    if let Some(sub) = rest.get(2) {
        info.subresource = (*sub).to_string();
    }
    info.parts = rest.iter().skip(3).map(|s| (*s).to_string()).collect();

    info.verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => {
            if is_watch(query) {
                "watch"
            } else if info.name.is_empty() {
                "list"
            } else {
                "get"
            }
        }
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => {
            if info.name.is_empty() {
                "deletecollection"
            } else {
                "delete"
            }
        }
        _ => info.verb.as_str(),
    }
    .to_string();
    if matches!(info.verb.as_str(), "list" | "watch" | "deletecollection") {
        let query = crate::query::Query::parse(query);
        info.field_selector = query.get("fieldSelector").unwrap_or("").to_owned();
        info.label_selector = query.get("labelSelector").unwrap_or("").to_owned();
    }
    // `namespaces/<ns>` as the object of the request.
    if info.resource == "namespaces" && info.namespace.is_empty() && !info.name.is_empty() {
        info.namespace = info.name.clone();
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (method, path, query) → "verb group/version ns resource/name/sub" or "nonresource verb".
    #[test]
    fn table() {
        let cases = [
            ("GET", "/healthz", None, "nonresource get /healthz"),
            ("GET", "/apis", None, "nonresource get /apis"),
            ("GET", "/apis/stable.example.com", None, "nonresource get /apis/stable.example.com"),
            ("GET", "/apis/stable.example.com/v1", None, "nonresource get /apis/stable.example.com/v1"),
            ("GET", "/apis/stable.example.com/v1/crontabs", None, "list stable.example.com/v1 - crontabs//"),
            (
                "GET",
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                None,
                "list stable.example.com/v1 default crontabs//",
            ),
            (
                "GET",
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                Some("watch=true"),
                "watch stable.example.com/v1 default crontabs//",
            ),
            (
                "GET",
                "/apis/stable.example.com/v1/namespaces/default/crontabs/x",
                None,
                "get stable.example.com/v1 default crontabs/x/",
            ),
            (
                "PUT",
                "/apis/stable.example.com/v1/namespaces/default/crontabs/x/status",
                None,
                "update stable.example.com/v1 default crontabs/x/status",
            ),
            (
                "PATCH",
                "/apis/stable.example.com/v1/namespaces/default/crontabs/x/scale",
                None,
                "patch stable.example.com/v1 default crontabs/x/scale",
            ),
            (
                "POST",
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                None,
                "create stable.example.com/v1 default crontabs//",
            ),
            (
                "DELETE",
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                None,
                "deletecollection stable.example.com/v1 default crontabs//",
            ),
            (
                "DELETE",
                "/apis/versa.dev/v1/resourcedefinitions/crontabs.stable.example.com",
                None,
                "delete versa.dev/v1 - resourcedefinitions/crontabs.stable.example.com/",
            ),
            ("GET", "/api/v1/namespaces/kube-system", None, "get /v1 kube-system namespaces/kube-system/"),
            ("PUT", "/api/v1/namespaces/team/finalize", None, "update /v1 team namespaces/team/finalize"),
            ("GET", "/api/v1/namespaces/team/status", None, "get /v1 team namespaces/team/status"),
            ("POST", "/api/v1/namespaces/team/events", None, "create /v1 team events//"),
        ];
        for (method, path, query, want) in cases {
            let info = parse(&method.parse().unwrap(), path, query);
            let got = if info.is_resource_request {
                format!(
                    "{} {}/{} {} {}/{}/{}",
                    info.verb,
                    info.api_group,
                    info.api_version,
                    if info.namespace.is_empty() { "-" } else { &info.namespace },
                    info.resource,
                    info.name,
                    info.subresource
                )
            } else {
                format!("nonresource {} {}", info.verb, info.path)
            };
            assert_eq!(got, want, "{method} {path}");
        }
    }
}
