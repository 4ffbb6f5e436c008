//! What admission knows about one request: kube-apiserver's `admission.Attributes`.
//!
//! The server fills an [`Attributes`] once per object it admits (a create, an update, a
//! patch once applied, each object of a delete or deletecollection, a status or scale write)
//! with the request's kind, resource and subresource, the user, the object(s) and the
//! options. Names follow `k8s.io/api/admission/v1`: the review's `requestKind`,
//! `requestResource` and `requestSubResource` are these; its `kind`, `resource` and
//! `subResource` are the ones a configuration matched (the same unless it matched an
//! equivalent resource, `matchPolicy: Equivalent`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// The admission operation (`admissionregistration.k8s.io/v1` `OperationType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The operation named `s` (exact, as in a rule).
    pub fn parse(s: &str) -> Option<Operation> {
        Some(match s {
            "CREATE" => Operation::Create,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            "CONNECT" => Operation::Connect,
            _ => return None,
        })
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A group, version and kind (`metav1.GroupVersionKind`, as JSON `{group, version, kind}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(group: &str, version: &str, kind: &str) -> GroupVersionKind {
        GroupVersionKind { group: group.to_owned(), version: version.to_owned(), kind: kind.to_owned() }
    }

    /// `group/version` (`version` for the core group), as `apiVersion` spells it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Whether all three parts are empty (Go's `GroupVersionKind.Empty`).
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.version.is_empty() && self.kind.is_empty()
    }
}

/// Go's `schema.GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A group, version and resource (`metav1.GroupVersionResource`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl GroupVersionResource {
    pub fn new(group: &str, version: &str, resource: &str) -> GroupVersionResource {
        GroupVersionResource { group: group.to_owned(), version: version.to_owned(), resource: resource.to_owned() }
    }

    /// Go's `GroupResource.String()`: `crontabs.stable.example.com`, `pods` for the core group.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() { self.resource.clone() } else { format!("{}.{}", self.resource, self.group) }
    }
}

/// Go's `schema.GroupVersionResource.String()`: `stable.example.com/v1, Resource=crontabs`.
impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Resource={}", self.group, self.version, self.resource)
    }
}

/// The requesting user (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// One object's admission request.
#[derive(Clone, Debug, PartialEq)]
pub struct Attributes {
    pub operation: Operation,
    /// The kind of the object at the request's version (for a subresource: the subresource's
    /// kind, e.g. `autoscaling/v1` `Scale`).
    pub kind: GroupVersionKind,
    /// The resource requested, at the request's version.
    pub resource: GroupVersionResource,
    /// `status`, `scale`, or empty.
    pub subresource: String,
    /// The object's name; empty on a create with `generateName` (as in kube, where the name is
    /// generated after admission).
    pub name: String,
    /// The namespace; empty for cluster-scoped resources. For a request on a Namespace itself,
    /// the Namespace's name (as kube's request info sets it).
    pub namespace: String,
    pub user: UserInfo,
    /// The object as written (create, update): at the request's version, after the server's own
    /// defaulting. `None` for delete and connect.
    pub object: Option<Value>,
    /// The stored object (update, delete), at the request's version.
    pub old_object: Option<Value>,
    pub dry_run: bool,
    /// The operation's options, as JSON with `apiVersion` and `kind` (`meta.k8s.io/v1`
    /// `CreateOptions`, `UpdateOptions`, `PatchOptions` or `DeleteOptions`).
    pub options: Option<Value>,
    /// Whether the resource is namespaced (informational: matching goes by `namespace`, as
    /// kube's does).
    pub namespaced: bool,
}

impl Attributes {
    /// Whether this is a request on a `v1` Namespace (kube gives such requests no
    /// `namespaceObject`, and takes a Namespace's labels from the object being written).
    pub fn is_namespace_kind(&self) -> bool {
        self.kind.group.is_empty() && self.kind.version == "v1" && self.kind.kind == "Namespace"
    }

    /// The name kube's admission errors give the object (`extractResourceName`): the request's
    /// name, else the object's `metadata.name`, else its `generateName`, else `Unknown`.
    pub fn name_for_errors(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        let meta = self.object.as_ref().and_then(|o| o.get("metadata"));
        let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).filter(|s| !s.is_empty());
        field("name").or_else(|| field("generateName")).unwrap_or("Unknown").to_owned()
    }
}

/// The labels of a JSON object (`metadata.labels`), for selectors.
pub(crate) fn labels_of(object: &Value) -> impl Iterator<Item = (&str, &str)> + Clone {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn go_spellings() {
        assert_eq!(GroupVersionKind::new("apps", "v1", "Deployment").to_string(), "apps/v1, Kind=Deployment");
        assert_eq!(GroupVersionKind::new("", "v1", "Pod").to_string(), "/v1, Kind=Pod");
        assert_eq!(GroupVersionResource::new("", "v1", "pods").group_resource(), "pods");
        assert_eq!(
            GroupVersionResource::new("stable.example.com", "v1", "crontabs").group_resource(),
            "crontabs.stable.example.com"
        );
    }
}
