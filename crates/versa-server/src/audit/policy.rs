//! The audit policy as it is applied: how much of a request is recorded ([`Level`]), at which
//! stages ([`Stage`], [`Stages`]), and a validated `audit.k8s.io/v1` [`Policy`] with each rule's
//! stages already joined with the policy's (reading and validating the file is
//! `policy_file`'s). The first rule that matches a request gives its level (`None`: not
//! audited), the stages to leave out and whether `managedFields` are dropped from recorded
//! objects; no rule matching is `None`. Matching is kube's `ruleMatches`: users, user groups,
//! verbs, then either resources (group, `resource`, `resource/subresource`, `*`,
//! `*/subresource`, `resource/*`, resource names) and namespaces (`""` is cluster scope), or
//! non-resource URLs (exact, `*`, or a prefix ending in `*`).

use serde::{Deserialize, Serialize, Serializer};

use crate::auth::UserInfo;
use crate::request_info::RequestInfo;

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

    pub(super) fn parse(s: &str) -> Option<Level> {
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

    pub(super) fn parse(s: &str) -> Option<Stage> {
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

    pub(super) fn union(self, other: Stages) -> Stages {
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

impl Policy {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
pub(super) mod tests {
    use super::*;
    use crate::request_info::parse;

    pub(in crate::audit) fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    pub(in crate::audit) fn policy(yaml: &str) -> Policy {
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
}
