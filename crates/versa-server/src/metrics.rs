//! `/metrics`: Prometheus text exposition with kube-apiserver's metric names where one exists.
//!
//! - `apiserver_request_total{verb,group,version,resource,subresource,scope,code}` — every
//!   request, with kube's verb spelling (`GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`,
//!   `DELETE`, `DELETECOLLECTION`) and scope (`resource`, `namespace`, `cluster`);
//! - `apiserver_request_duration_seconds{verb,group,version,resource,subresource,scope}` —
//!   latency of every request except watches (which last as long as the client wants), with
//!   kube's buckets;
//! - `apiserver_registered_watchers{group,version,kind}` — open watches;
//! - `versa_served_resources` — resources served (definitions established, plus the
//!   definitions API itself);
//! - `versa_conversion_duration_seconds{definition,strategy,outcome}` and
//!   `versa_conversion_failures_total{definition,strategy}` — every conversion call;
//! - `versa_storage_migration_objects_total{definition}` (objects rewritten at a new storage
//!   version) and `versa_storage_migration_failures_total{definition}` (paused passes);
//! - `leader_election_master_status{name}` — 1 while this replica leads (the lock is `name`),
//!   0 while it follows; absent without an election (client-go's metric);
//! - admission, with kube's names: `apiserver_admission_webhook_admission_duration_seconds`
//!   `{name,type,operation,rejected}`, `apiserver_admission_webhook_request_total`
//!   `{name,type,operation,code,rejected}`, `apiserver_admission_webhook_rejection_count`
//!   `{name,type,operation,error_type,rejection_code}` and
//!   `apiserver_admission_webhook_fail_open_count{name,type}` (these two exposed with the
//!   `_total` suffix OpenMetrics gives every counter),
//!   `apiserver_validating_admission_policy_check_total` and
//!   `..._check_duration_seconds{policy,policy_binding,error_type,enforcement_action}`;
//! - `versa_storage_up` (1 when the store answered its last probe) and
//!   `versa_storage_revision` (the store's current revision), probed every 10 seconds;
//! - whatever collectors the binary adds ([`Metrics::with`]): the watch cache's
//!   `apiserver_watch_cache_*` series in etcd mode (`versa-storage-cache`'s `metrics.rs`), and
//!   the allocator's `versa_allocator_{allocated,active,resident,metadata,retained}_bytes`
//!   (`versa/src/allocator.rs`).

use std::sync::atomic::AtomicI64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::request_info::RequestInfo;

pub use prometheus_client::collector::Collector;

type Labels = Vec<(&'static str, String)>;

/// kube-apiserver's request latency buckets (seconds).
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0,
    45.0, 60.0,
];

/// A collector the server shares with the part that feeds it.
#[derive(Debug)]
struct Shared(std::sync::Arc<dyn Collector>);

impl Collector for Shared {
    fn encode(&self, encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    watchers: Family<Labels, Gauge<i64, AtomicI64>>,
    pub served_resources: Gauge<i64, AtomicI64>,
    pub storage_up: Gauge<i64, AtomicI64>,
    pub storage_revision: Gauge<i64, AtomicI64>,
    conversions: Family<Labels, Histogram, fn() -> Histogram>,
    conversion_failures: Family<Labels, Counter>,
    migrated: Family<Labels, Counter>,
    migration_failures: Family<Labels, Counter>,
    leader: Family<Labels, Gauge<i64, AtomicI64>>,
    webhook_durations: Family<Labels, Histogram, fn() -> Histogram>,
    webhook_requests: Family<Labels, Counter>,
    webhook_rejections: Family<Labels, Counter>,
    webhook_fail_open: Family<Labels, Counter>,
    policy_checks: Family<Labels, Counter>,
    policy_durations: Family<Labels, Histogram, fn() -> Histogram>,
    /// The request series already made, found by their labels without building them
    /// ([`Metrics::observe`]).
    request_series: std::sync::RwLock<std::collections::HashMap<u64, Vec<RequestSeries>>>,
    series_hasher: std::hash::RandomState,
}

/// One request series pair: its labels (the request's route, verb and code) and the handles of
/// its duration and count, which share their values with the families' own.
#[derive(Debug)]
struct RequestSeries {
    labels: RouteLabels<'static>,
    code: u16,
    duration: Option<Histogram>,
    count: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn new_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// kube's admission webhook latency buckets (seconds).
fn webhook_histogram() -> Histogram {
    Histogram::new([0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0])
}

/// kube's ValidatingAdmissionPolicy check latency buckets (seconds).
fn policy_histogram() -> Histogram {
    Histogram::new([0.0000005, 0.001, 0.01, 0.1, 1.0])
}

/// Conversions at the storage boundary are counted here.
impl versa_registry::storage::Observer for Metrics {
    fn conversion(&self, definition: &str, strategy: &str, ok: bool, seconds: f64) {
        Metrics::conversion(self, definition, strategy, ok, seconds);
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::with(Vec::new())
    }

    /// The server's metrics and `extra`'s, in one exposition.
    pub fn with(extra: Vec<std::sync::Arc<dyn Collector>>) -> Metrics {
        let mut registry = Registry::default();
        for collector in extra {
            registry.register_collector(Box::new(Shared(collector)));
        }
        let requests = Family::<Labels, Counter>::default();
        let durations = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(new_histogram);
        let watchers = Family::<Labels, Gauge<i64, AtomicI64>>::default();
        let served_resources = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, group, version, resource, scope, subresource and HTTP response code.",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version, resource, subresource and scope.",
            durations.clone(),
        );
        registry.register(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resource.",
            watchers.clone(),
        );
        registry.register("versa_served_resources", "Number of resources served.", served_resources.clone());
        let storage_up = Gauge::<i64, AtomicI64>::default();
        let storage_revision = Gauge::<i64, AtomicI64>::default();
        registry.register("versa_storage_up", "1 when the store answered the last probe, else 0.", storage_up.clone());
        registry.register("versa_storage_revision", "The store's current revision.", storage_revision.clone());
        let conversions = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(new_histogram);
        let conversion_failures = Family::<Labels, Counter>::default();
        registry.register(
            "versa_conversion_duration_seconds",
            "Latency of object conversions between versions, by definition, strategy and outcome.",
            conversions.clone(),
        );
        registry.register(
            "versa_conversion_failures",
            "Failed object conversions, by definition and strategy.",
            conversion_failures.clone(),
        );
        let migrated = Family::<Labels, Counter>::default();
        let migration_failures = Family::<Labels, Counter>::default();
        registry.register(
            "versa_storage_migration_objects",
            "Objects rewritten at a new storage version by automatic migration.",
            migrated.clone(),
        );
        registry.register(
            "versa_storage_migration_failures",
            "Storage migration passes paused by an error.",
            migration_failures.clone(),
        );
        let leader = Family::<Labels, Gauge<i64, AtomicI64>>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
            leader.clone(),
        );
        let webhook_durations = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(webhook_histogram);
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            webhook_durations.clone(),
        );
        let webhook_requests = Family::<Labels, Counter>::default();
        registry.register(
            "apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code.",
            webhook_requests.clone(),
        );
        let webhook_rejections = Family::<Labels, Counter>::default();
        registry.register(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type and a rejection code.",
            webhook_rejections.clone(),
        );
        let webhook_fail_open = Family::<Labels, Counter>::default();
        registry.register(
            "apiserver_admission_webhook_fail_open_count",
            "Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating).",
            webhook_fail_open.clone(),
        );
        let policy_checks = Family::<Labels, Counter>::default();
        registry.register(
            "apiserver_validating_admission_policy_check",
            "Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
            policy_checks.clone(),
        );
        let policy_durations = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(policy_histogram);
        registry.register(
            "apiserver_validating_admission_policy_check_duration_seconds",
            "Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
            policy_durations.clone(),
        );
        Metrics {
            webhook_durations,
            webhook_requests,
            webhook_rejections,
            webhook_fail_open,
            policy_checks,
            policy_durations,
            leader,
            migrated,
            migration_failures,
            registry,
            requests,
            durations,
            watchers,
            served_resources,
            storage_up,
            storage_revision,
            conversions,
            conversion_failures,
            request_series: Default::default(),
            series_hasher: Default::default(),
        }
    }

    /// Records a finished request. It runs on every request: a series seen before is found by
    /// one hash of its borrowed labels, where the families would take the labels built as
    /// strings and hashed twice (a few per cent of a GET, `hack/bench-serve.sh get`).
    pub fn observe(&self, info: &RequestInfo, method: &http::Method, code: u16, seconds: f64) {
        let route = route_labels(info, method);
        let hash = std::hash::BuildHasher::hash_one(&self.series_hasher, (&route, code));
        if let Ok(series) = self.request_series.read()
            && let Some(found) = series.get(&hash).and_then(|s| s.iter().find(|s| s.labels == route && s.code == code))
        {
            if let Some(duration) = &found.duration {
                duration.observe(seconds);
            }
            found.count.inc();
            return;
        }
        let mut labels = route.labels();
        let duration = (route.verb != "WATCH").then(|| self.durations.get_or_create(&labels).clone());
        labels.push(("code", code.to_string()));
        let count = self.requests.get_or_create(&labels).clone();
        if let Some(duration) = &duration {
            duration.observe(seconds);
        }
        count.inc();
        if let Ok(mut series) = self.request_series.write() {
            let same = series.entry(hash).or_default();
            if !same.iter().any(|s| s.labels == route && s.code == code) {
                same.push(RequestSeries { labels: route.owned(), code, duration, count });
            }
        }
    }

    /// Records what admission did for one request: each webhook call and policy decision.
    pub fn admission(&self, outcome: &versa_admission::Outcome) {
        for call in &outcome.webhook_calls {
            let operation = call.operation.as_str().to_owned();
            let (name, kind) = (call.name.clone(), call.step.to_owned());
            let rejected = call.rejected.to_string();
            let labels = vec![
                ("name", name.clone()),
                ("type", kind.clone()),
                ("operation", operation.clone()),
                ("rejected", rejected.clone()),
            ];
            self.webhook_durations.get_or_create(&labels).observe(call.elapsed.as_secs_f64());
            let code = call.code.min(600).to_string();
            let request = vec![
                ("name", name.clone()),
                ("type", kind.clone()),
                ("operation", operation.clone()),
                ("code", code.clone()),
                ("rejected", rejected),
            ];
            self.webhook_requests.get_or_create(&request).inc();
            if let Some(error_type) = call.rejection {
                let rejection = vec![
                    ("name", name.clone()),
                    ("type", kind.clone()),
                    ("operation", operation),
                    ("error_type", error_type.to_owned()),
                    ("rejection_code", code),
                ];
                self.webhook_rejections.get_or_create(&rejection).inc();
            }
            if call.failed_open {
                self.webhook_fail_open.get_or_create(&vec![("name", name), ("type", kind)]).inc();
            }
        }
        for check in &outcome.policy_checks {
            let labels = vec![
                ("policy", check.policy.clone()),
                ("policy_binding", check.binding.clone()),
                ("error_type", check.error_type.to_owned()),
                ("enforcement_action", check.enforcement_action.to_owned()),
            ];
            self.policy_checks.get_or_create(&labels).inc();
            self.policy_durations.get_or_create(&labels).observe(check.elapsed.as_secs_f64());
        }
    }

    /// Records one conversion call.
    pub fn conversion(&self, definition: &str, strategy: &str, ok: bool, seconds: f64) {
        let base = vec![("definition", definition.to_owned()), ("strategy", strategy.to_owned())];
        let mut labels = base.clone();
        labels.push(("outcome", if ok { "success" } else { "failure" }.to_owned()));
        self.conversions.get_or_create(&labels).observe(seconds);
        if !ok {
            self.conversion_failures.get_or_create(&base).inc();
        }
    }

    /// One object migrated (`ok`) or one migration pass paused (`!ok`).
    pub fn migration(&self, definition: &str, ok: bool) {
        let labels = vec![("definition", definition.to_owned())];
        if ok {
            self.migrated.get_or_create(&labels).inc();
        } else {
            self.migration_failures.get_or_create(&labels).inc();
        }
    }

    /// Whether this replica leads, under the lock `name`.
    pub fn leading(&self, name: &str, leading: bool) {
        self.leader.get_or_create(&vec![("name", name.to_owned())]).set(i64::from(leading));
    }

    /// A watch opened (`+1`) or closed (`-1`).
    pub fn watchers(&self, group: &str, version: &str, kind: &str, delta: i64) {
        let labels = vec![("group", group.to_owned()), ("version", version.to_owned()), ("kind", kind.to_owned())];
        self.watchers.get_or_create(&labels).inc_by(delta);
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A request's labels but its code, as kube-apiserver spells them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RouteLabels<'a> {
    verb: std::borrow::Cow<'a, str>,
    group: std::borrow::Cow<'a, str>,
    version: std::borrow::Cow<'a, str>,
    resource: std::borrow::Cow<'a, str>,
    subresource: std::borrow::Cow<'a, str>,
    scope: &'static str,
}

impl RouteLabels<'_> {
    fn labels(&self) -> Labels {
        vec![
            ("verb", self.verb.to_string()),
            ("group", self.group.to_string()),
            ("version", self.version.to_string()),
            ("resource", self.resource.to_string()),
            ("subresource", self.subresource.to_string()),
            ("scope", self.scope.to_owned()),
        ]
    }

    fn owned(&self) -> RouteLabels<'static> {
        use std::borrow::Cow;
        RouteLabels {
            verb: Cow::Owned(self.verb.to_string()),
            group: Cow::Owned(self.group.to_string()),
            version: Cow::Owned(self.version.to_string()),
            resource: Cow::Owned(self.resource.to_string()),
            subresource: Cow::Owned(self.subresource.to_string()),
            scope: self.scope,
        }
    }
}

fn route_labels<'a>(info: &'a RequestInfo, method: &'a http::Method) -> RouteLabels<'a> {
    use std::borrow::Cow;
    if !info.is_resource_request {
        return RouteLabels {
            verb: Cow::Borrowed(method.as_str()),
            group: Cow::Borrowed(""),
            version: Cow::Borrowed(""),
            resource: Cow::Borrowed(""),
            subresource: Cow::Borrowed(""),
            scope: "",
        };
    }
    let verb = match info.verb.as_str() {
        "get" => "GET",
        "list" => "LIST",
        "watch" => "WATCH",
        "create" => "POST",
        "update" => "PUT",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => method.as_str(),
    };
    let scope = if !info.name.is_empty() {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    };
    RouteLabels {
        verb: Cow::Borrowed(verb),
        group: Cow::Borrowed(&info.api_group),
        version: Cow::Borrowed(&info.api_version),
        resource: Cow::Borrowed(&info.resource),
        subresource: Cow::Borrowed(&info.subresource),
        scope,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn exposition() {
        let m = Metrics::new();
        let info = crate::request_info::parse(&http::Method::GET, "/apis/g.example/v1/namespaces/ns/things", None);
        m.observe(&info, &http::Method::GET, 200, 0.01);
        m.watchers("g.example", "v1", "Thing", 1);
        let text = m.encode();
        assert!(
            text.contains(
                r#"apiserver_request_total{verb="LIST",group="g.example",version="v1",resource="things",subresource="",scope="namespace",code="200"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains("apiserver_request_duration_seconds_bucket{"), "{text}");
        assert!(
            text.contains(r#"apiserver_registered_watchers{group="g.example",version="v1",kind="Thing"} 1"#),
            "{text}"
        );
    }

    /// Series found again by their labels count into the families' own values: a repeat adds
    /// to its series, another code or route makes its own, a watch has no duration.
    #[test]
    fn series_found_again() {
        let m = Metrics::new();
        let parse = crate::request_info::parse;
        let list = parse(&http::Method::GET, "/apis/g.example/v1/namespaces/ns/things", None);
        let get = parse(&http::Method::GET, "/apis/g.example/v1/namespaces/ns/things/a", None);
        let watch = parse(&http::Method::GET, "/apis/g.example/v1/things", Some("watch=true"));
        let version = parse(&http::Method::GET, "/version", None);
        for (info, code) in
            [(&list, 200), (&list, 200), (&list, 404), (&get, 200), (&list, 200), (&watch, 200), (&version, 200)]
        {
            m.observe(info, &http::Method::GET, code, 0.01);
        }
        let text = m.encode();
        for expect in [
            r#"apiserver_request_total{verb="LIST",group="g.example",version="v1",resource="things",subresource="",scope="namespace",code="200"} 3"#,
            r#"apiserver_request_total{verb="LIST",group="g.example",version="v1",resource="things",subresource="",scope="namespace",code="404"} 1"#,
            r#"apiserver_request_total{verb="GET",group="g.example",version="v1",resource="things",subresource="",scope="resource",code="200"} 1"#,
            r#"apiserver_request_total{verb="WATCH",group="g.example",version="v1",resource="things",subresource="",scope="cluster",code="200"} 1"#,
            r#"apiserver_request_total{verb="GET",group="",version="",resource="",subresource="",scope="",code="200"} 1"#,
            r#"apiserver_request_duration_seconds_count{verb="LIST",group="g.example",version="v1",resource="things",subresource="",scope="namespace"} 4"#,
            r#"apiserver_request_duration_seconds_count{verb="GET",group="g.example",version="v1",resource="things",subresource="",scope="resource"} 1"#,
        ] {
            assert!(text.contains(expect), "{expect}\n{text}");
        }
        assert!(!text.contains(r#"apiserver_request_duration_seconds_count{verb="WATCH""#), "{text}");
    }
}
