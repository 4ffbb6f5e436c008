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
    /// `api` or `apis` (empty for a non-resource request).
    pub api_prefix: &'static str,
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
    let mut info = RequestInfo { path: path.to_string(), ..Default::default() };
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    let resource_path = match segments.next() {
        Some("api") => segments.next().map(|version| ("api", "", version)),
        Some("apis") => segments.next().zip(segments.next()).map(|(group, version)| ("apis", group, version)),
        _ => None,
    };
    // What follows the version: `[namespaces/<ns>/]<resource>[/<name>[/<subresource>[/...]]]`,
    // read without collecting the segments (a request's every allocation counts).
    let rest: [Option<&str>; 5] = std::array::from_fn(|_| segments.next());
    // `/api` and `/apis` with a group but no version are discovery, not resources.
    let (Some((prefix, group, version)), Some(_)) = (resource_path, rest[0]) else {
        info.verb = method.as_str().to_lowercase();
        return info;
    };
    info.is_resource_request = true;
    info.api_prefix = prefix;
    info.api_group = group.to_string();
    info.api_version = version.to_string();

    // `namespaces/<ns>/<resource>...` is namespaced; `namespaces` and `namespaces/<ns>` alone
    // are the namespaces resource itself.
    // `namespaces/<ns>/status` and `namespaces/<ns>/finalize` are subresources of the
    // namespace (kube's namespaceSubresources).
    let mut rest = &rest[..];
    if let [Some("namespaces"), Some(namespace), Some(next), ..] = rest
        && !matches!(*next, "status" | "finalize")
    {
        info.namespace = (*namespace).to_string();
        rest = &rest[2..];
    }
    let segment = |i: usize| rest.get(i).copied().flatten().unwrap_or("");
    info.resource = segment(0).to_string();
    info.name = segment(1).to_string();
    info.subresource = segment(2).to_string();
    info.parts = rest.iter().skip(3).filter_map(|s| *s).chain(segments).map(str::to_string).collect();

    let verb = match *method {
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
        // Any other method's verb is the method in lower case, as for non-resource requests.
        _ => "",
    };
    info.verb = if verb.is_empty() { method.as_str().to_lowercase() } else { verb.to_owned() };
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
