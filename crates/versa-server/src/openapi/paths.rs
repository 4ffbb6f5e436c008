//! The route tables: every path the builder registers for a version (list, create,
//! deletecollection, read, replace, delete, patch, `/status`, `/scale`), with kube's operation
//! ids, tags, `x-kubernetes-action` and option query parameters.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::names::*;

/// Which definition a body or response refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Schema {
    Kind,
    List,
    Status,
    Scale,
    Patch,
    DeleteOptions,
}

/// The query options an operation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Options {
    Get,
    List,
    Create,
    Update,
    Patch,
    Delete,
}

/// One route of the builder (`generateBuilder`/`buildRoute`).
#[derive(Debug, Clone)]
pub(super) struct Route {
    pub(super) path: String,
    pub(super) method: &'static str,
    /// `x-kubernetes-action`.
    pub(super) action: &'static str,
    pub(super) operation_id: String,
    pub(super) description: String,
    pub(super) response: Schema,
    pub(super) body: Option<(Schema, bool)>,
    pub(super) options: Options,
}

pub(super) fn routes(names: &Names<'_>, version: &str, status: bool, scale: bool) -> Vec<Route> {
    let kind = names.kind;
    let namespaced = if names.namespaced { "Namespaced" } else { "" };
    // The core group is served under `/api` (standalone's core kinds), the others under `/apis`.
    let base =
        if names.group.is_empty() { format!("/api/{version}") } else { format!("/apis/{}/{version}", names.group) };
    let cluster_root = format!("{base}/{}", names.plural);
    let root = if names.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", names.plural)
    } else {
        cluster_root.clone()
    };
    let article = article_for(kind);
    let route = |path: String, method, action, verb: &str, sub: &str, response, body, options| {
        let sub_title = title_case(sub);
        let sub_of = if sub.is_empty() { String::new() } else { format!(" {sub} of") };
        let description = match verb {
            "list" => format!("list{sub_of} objects of kind {kind}"),
            "read" | "replace" => format!("{verb}{sub_of} the specified {kind}"),
            "patch" => format!("partially update{sub_of} the specified {kind}"),
            "create" | "delete" => format!("{verb}{sub_of}{article}{kind}"),
            _ => format!(
                "delete collection of{} {kind}",
                if sub.is_empty() { String::new() } else { format!("{sub_of} a") }
            ),
        };
        let op = format!("{verb}{namespaced}{kind}{sub_title}");
        Route { operation_id: operation_id(&op, &path), path, method, action, description, response, body, options }
    };
    let item = format!("{root}/{{name}}");
    let mut out = Vec::new();
    if names.namespaced {
        let mut all = route(cluster_root, "get", "list", "list", "", Schema::List, None, Options::List);
        all.operation_id = operation_id(&format!("list{kind}ForAllNamespaces"), &all.path);
        out.push(all);
    }
    out.push(route(root.clone(), "get", "list", "list", "", Schema::List, None, Options::List));
    out.push(route(
        root.clone(),
        "post",
        "post",
        "create",
        "",
        Schema::Kind,
        Some((Schema::Kind, true)),
        Options::Create,
    ));
    out.push(route(root, "delete", "deletecollection", "deletecollection", "", Schema::Status, None, Options::List));
    out.push(route(item.clone(), "get", "get", "read", "", Schema::Kind, None, Options::Get));
    out.push(route(
        item.clone(),
        "put",
        "put",
        "replace",
        "",
        Schema::Kind,
        Some((Schema::Kind, true)),
        Options::Update,
    ));
    out.push(route(
        item.clone(),
        "delete",
        "delete",
        "delete",
        "",
        Schema::Status,
        Some((Schema::DeleteOptions, false)),
        Options::Delete,
    ));
    out.push(route(
        item.clone(),
        "patch",
        "patch",
        "patch",
        "",
        Schema::Kind,
        Some((Schema::Patch, true)),
        Options::Patch,
    ));
    for (enabled, sub, schema) in [(status, "status", Schema::Kind), (scale, "scale", Schema::Scale)] {
        if !enabled {
            continue;
        }
        let path = format!("{item}/{sub}");
        out.push(route(path.clone(), "get", "get", "read", sub, schema, None, Options::Get));
        out.push(route(path.clone(), "put", "put", "replace", sub, schema, Some((schema, true)), Options::Update));
        out.push(route(path, "patch", "patch", "patch", sub, schema, Some((Schema::Patch, true)), Options::Patch));
    }
    out
}

/// `endpoints.GetArticleForNoun(noun, " ")`.
pub(super) fn article_for(noun: &str) -> &'static str {
    if !noun.ends_with("ss") && noun.ends_with('s') {
        return " ";
    }
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => " an ",
        _ => " a ",
    }
}

pub(super) fn title_case(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `GetOperationIDAndTags`: `list` + `StableExampleCom` + `V1` + `NamespacedCronTab`, tag
/// `stableExampleCom_v1`. The verb is the shortest known verb the operation starts with (so
/// `deletecollection…` becomes `delete…Collection…`, as upstream's trie does).
pub(super) fn operation_id(op: &str, path: &str) -> String {
    const VERBS: [&str; 12] = [
        "get",
        "log",
        "read",
        "replace",
        "patch",
        "delete",
        "watch",
        "connect",
        "proxy",
        "list",
        "create",
        "deletecollection",
    ];
    let Some(verb) = VERBS.iter().filter(|v| op.starts_with(*v)).min_by_key(|v| v.len()) else {
        return op.to_string();
    };
    let rest = &op[verb.len()..];
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut prefix = verb.to_string();
    if parts.len() >= 2 && parts[0] == "apis" {
        let group = parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]);
        prefix.push_str(&valid_operation_id(group, true));
        if let Some(version) = parts.get(2) {
            prefix.push_str(&valid_operation_id(version, true));
        }
    } else if parts.len() >= 2 && parts[0] == "api" {
        // kube's operations of the core group: `listCoreV1NamespacedConfigMap`.
        prefix.push_str("Core");
        prefix.push_str(&valid_operation_id(parts[1], true));
    }
    prefix + &valid_operation_id(rest, true)
}

/// The tag of the operations of a group-version.
pub(super) fn operation_tag(group: &str, version: &str) -> String {
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    format!("{}_{}", valid_operation_id(group, false), valid_operation_id(version, false))
}

/// `ToValidOperationID`: letters, `_` and non-leading digits survive; anything else is dropped
/// and capitalizes the next kept character.
pub(super) fn valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// (name, type, description) of the query parameters of each option kind.
pub(super) fn query_parameters(options: Options) -> &'static [(&'static str, &'static str, &'static str)] {
    const RESOURCE_VERSION: (&str, &str, &str) = (
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    );
    const DRY_RUN: (&str, &str, &str) = (
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
    );
    const FIELD_MANAGER: (&str, &str, &str) = (
        "fieldManager",
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
    );
    const FIELD_VALIDATION: (&str, &str, &str) = (
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default. - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
    );
    match options {
        Options::Get => &[RESOURCE_VERSION],
        Options::List => &[
            (
                "allowWatchBookmarks",
                "boolean",
                "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.",
            ),
            (
                "continue",
                "string",
                "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize.",
            ),
            (
                "fieldSelector",
                "string",
                "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
            ),
            (
                "labelSelector",
                "string",
                "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
            ),
            (
                "limit",
                "integer",
                "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results.",
            ),
            RESOURCE_VERSION,
            (
                "resourceVersionMatch",
                "string",
                "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
            ),
            (
                "sendInitialEvents",
                "boolean",
                "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event will be sent.",
            ),
            (
                "timeoutSeconds",
                "integer",
                "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
            ),
            (
                "watch",
                "boolean",
                "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
            ),
        ],
        Options::Create | Options::Update => &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION],
        Options::Patch => &[
            DRY_RUN,
            FIELD_MANAGER,
            FIELD_VALIDATION,
            (
                "force",
                "boolean",
                "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
            ),
        ],
        Options::Delete => &[
            DRY_RUN,
            (
                "gracePeriodSeconds",
                "integer",
                "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.",
            ),
            (
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                "boolean",
                "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it",
            ),
            (
                "orphanDependents",
                "boolean",
                "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.",
            ),
            (
                "propagationPolicy",
                "string",
                "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
            ),
        ],
    }
}

pub(super) const PRETTY_DESCRIPTION: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
pub(super) const NAMESPACE_DESCRIPTION: &str = "object name and auth scope, such as for teams and projects";

pub(super) fn parameter(
    flavor: Flavor,
    name: &str,
    location: &str,
    type_: &str,
    description: &str,
    required: bool,
) -> Value {
    let mut p = Map::new();
    p.insert("name".into(), json!(name));
    p.insert("in".into(), json!(location));
    p.insert("description".into(), json!(description));
    if required {
        p.insert("required".into(), json!(true));
    }
    match flavor {
        Flavor::V2 => {
            p.insert("type".into(), json!(type_));
            p.insert("uniqueItems".into(), json!(true));
        }
        Flavor::V3 => {
            p.insert("schema".into(), json!({"type": type_, "uniqueItems": true}));
        }
    }
    Value::Object(p)
}

/// A parameter every resource shares. In v2 it is a `$ref` into the document's top-level
/// `parameters` (named `<name>-<hash>`, as kube-openapi deduplicates them), which keeps the
/// document — one path item per route of every definition — a fraction of its inline size;
/// v3 documents are per group-version and keep them inline.
pub(super) fn shared_parameter(
    flavor: Flavor,
    name: &str,
    location: &str,
    type_: &str,
    description: &str,
    required: bool,
) -> Value {
    let p = parameter(flavor, name, location, type_, description, required);
    match flavor {
        Flavor::V2 => json!({"$ref": format!("#/parameters/{}", shared_parameter_key(name, &p))}),
        Flavor::V3 => p,
    }
}

pub(super) fn shared_parameter_key(name: &str, p: &Value) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, serialized(p).as_bytes());
    let short = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest.as_ref()[..6]);
    format!("{name}-{short}")
}

/// The v2 document's top-level `parameters`: every shared parameter, serialized.
pub(super) fn shared_v2_parameters() -> &'static BTreeMap<String, Box<str>> {
    static PARAMS: OnceLock<BTreeMap<String, Box<str>>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        let mut all = vec![
            parameter(Flavor::V2, "namespace", "path", "string", NAMESPACE_DESCRIPTION, true),
            parameter(Flavor::V2, "pretty", "query", "string", PRETTY_DESCRIPTION, false),
        ];
        for options in [Options::Get, Options::List, Options::Create, Options::Update, Options::Patch, Options::Delete]
        {
            for (name, type_, desc) in query_parameters(options) {
                all.push(parameter(Flavor::V2, name, "query", type_, desc, false));
            }
        }
        all.into_iter()
            .map(|p| {
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                (shared_parameter_key(&name, &p), serialized(&p))
            })
            .collect()
    })
}

pub(super) fn schema_ref(names: &Names<'_>, version: &str, schema: Schema, flavor: Flavor) -> Value {
    let name = match schema {
        Schema::Kind => definition_name(names.group, version, names.kind),
        Schema::List => definition_name(names.group, version, &names.list_kind),
        Schema::Status => STATUS.to_string(),
        Schema::Scale => SCALE.to_string(),
        Schema::Patch => PATCH.to_string(),
        Schema::DeleteOptions => DELETE_OPTIONS.to_string(),
    };
    json!({"$ref": flavor.reference(&name)})
}

/// The path items of a version's routes, in one flavor.
pub(super) fn render_paths(
    names: &Names<'_>,
    version: &str,
    routes: &[Route],
    flavor: Flavor,
) -> BTreeMap<String, Value> {
    let tag = operation_tag(names.group, version);
    let mut items: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for route in routes {
        let item = items.entry(route.path.clone()).or_default();
        if !item.contains_key("parameters") {
            let mut common = Vec::new();
            if route.path.contains("{name}") {
                let desc = format!("name of the {}", names.kind);
                common.push(parameter(flavor, "name", "path", "string", &desc, true));
            }
            if route.path.contains("{namespace}") {
                common.push(shared_parameter(flavor, "namespace", "path", "string", NAMESPACE_DESCRIPTION, true));
            }
            common.push(shared_parameter(flavor, "pretty", "query", "string", PRETTY_DESCRIPTION, false));
            item.insert("parameters".into(), Value::Array(common));
        }
        item.insert(route.method.into(), operation(names, version, route, &tag, flavor));
    }
    items.into_iter().map(|(path, item)| (path, Value::Object(item))).collect()
}

pub(super) fn operation(names: &Names<'_>, version: &str, route: &Route, tag: &str, flavor: Flavor) -> Value {
    let mut params: Vec<(String, Value)> = query_parameters(route.options)
        .iter()
        .map(|(name, type_, desc)| (name.to_string(), shared_parameter(flavor, name, "query", type_, desc, false)))
        .collect();
    let mut op = Map::new();
    op.insert("description".into(), json!(route.description));
    op.insert("tags".into(), json!([tag]));
    op.insert("operationId".into(), json!(route.operation_id));
    let consumes: &[&str] = if route.method == "patch" {
        &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
    } else {
        &["application/json", "application/yaml"]
    };
    let produces = ["application/json", "application/yaml"];
    if let Some((schema, required)) = route.body {
        let body_schema = schema_ref(names, version, schema, flavor);
        match flavor {
            Flavor::V2 => {
                let mut body = json!({"name": "body", "in": "body", "schema": body_schema});
                if required {
                    body["required"] = json!(true);
                }
                params.push(("body".into(), body));
            }
            Flavor::V3 => {
                // builder3 offers every request body as `*/*`.
                let mut body = json!({"content": {"*/*": {"schema": body_schema}}});
                if required {
                    body["required"] = json!(true);
                }
                op.insert("requestBody".into(), body);
            }
        }
    }
    params.sort_by(|a, b| a.0.cmp(&b.0));
    op.insert("parameters".into(), Value::Array(params.into_iter().map(|(_, p)| p).collect()));
    let response_schema = schema_ref(names, version, route.response, flavor);
    let mut codes = vec![("200", "OK")];
    match route.action {
        "post" => codes.extend([("201", "Created"), ("202", "Accepted")]),
        "put" => codes.push(("201", "Created")),
        "delete" => codes.push(("202", "Accepted")),
        _ => {}
    }
    let mut responses = Map::new();
    for (code, text) in codes {
        let response = match flavor {
            Flavor::V2 => json!({"description": text, "schema": response_schema}),
            Flavor::V3 => {
                let content: Map<String, Value> =
                    produces.iter().map(|c| (c.to_string(), json!({"schema": response_schema}))).collect();
                json!({"description": text, "content": content})
            }
        };
        responses.insert(code.into(), response);
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    op.insert("responses".into(), Value::Object(responses));
    if flavor == Flavor::V2 {
        op.insert("consumes".into(), json!(consumes));
        op.insert("produces".into(), json!(produces));
        op.insert("schemes".into(), json!(["https"]));
    }
    op.insert("x-kubernetes-action".into(), json!(route.action));
    op.insert("x-kubernetes-group-version-kind".into(), gvk(names.group, version, names.kind));
    Value::Object(op)
}

// ---------------------------------------------------------------------------------------------
// Referenced built-in types
// ---------------------------------------------------------------------------------------------
