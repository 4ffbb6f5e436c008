//! The cache's metrics, with kube-apiserver's names (its `storage/cacher/metrics` and
//! `storage/etcd3/metrics`) where kube has the same measure, per resource (`group`, `resource`
//! from the resource prefix `<root>/<group>/<plural>/`):
//!
//! - `apiserver_watch_cache_initializations_total`: caches started (the initial list and the
//!   etcd watch; again after a cache's etcd watch ended);
//! - `apiserver_watch_cache_events_received_total`: events the etcd watch brought;
//! - `apiserver_watch_cache_resource_version`: how far the cache has seen;
//! - `watch_cache_capacity`: the events the window keeps (kube's name has no `apiserver_`);
//! - `apiserver_watch_cache_read_wait_seconds`: how long reads at a revision (consistent lists,
//!   gets with a resourceVersion) waited for the cache, with kube's buckets;
//! - `apiserver_watch_cache_consistent_read_total{success,fallback}`: lists at the latest
//!   revision, answered from memory (`fallback="false"`) or by etcd when the cache did not catch
//!   up in time (`fallback="true"`);
//! - `apiserver_cache_list_total{index}`, `apiserver_cache_list_fetched_objects_total{index}`
//!   and `apiserver_cache_list_returned_objects_total`: lists answered from memory (the cache has
//!   no indexes: `index=""`);
//! - `apiserver_storage_list_total`: lists of cached resources that went to etcd (the caches'
//!   own initial lists among them);
//! - `versa_watch_cache_handoffs_total`: client watches that went on from etcd's own watch (they
//!   fell behind the window, or the cache's etcd watch ended), where kube would close them
//!   (`apiserver_terminated_watchers_total`).
//!
//! [`CacheMetrics`] is a [`Collector`]: the server registers it beside its own metrics.

use std::sync::atomic::AtomicI64;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

type Labels = Vec<(&'static str, String)>;

/// kube's `apiserver_watch_cache_read_wait_seconds` buckets.
const READ_WAIT_BUCKETS: [f64; 13] = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0];

fn read_wait_histogram() -> Histogram {
    Histogram::new(READ_WAIT_BUCKETS)
}

/// Every resource's series, one family per metric.
#[derive(Debug)]
pub struct CacheMetrics {
    initializations: Family<Labels, Counter>,
    events_received: Family<Labels, Counter>,
    resource_version: Family<Labels, Gauge<i64, AtomicI64>>,
    capacity: Family<Labels, Gauge<i64, AtomicI64>>,
    read_wait: Family<Labels, Histogram, fn() -> Histogram>,
    consistent_reads: Family<Labels, Counter>,
    cache_lists: Family<Labels, Counter>,
    cache_list_fetched: Family<Labels, Counter>,
    cache_list_returned: Family<Labels, Counter>,
    storage_lists: Family<Labels, Counter>,
    handoffs: Family<Labels, Counter>,
}

impl Default for CacheMetrics {
    fn default() -> Self {
        CacheMetrics {
            initializations: Family::default(),
            events_received: Family::default(),
            resource_version: Family::default(),
            capacity: Family::default(),
            read_wait: Family::new_with_constructor(read_wait_histogram),
            consistent_reads: Family::default(),
            cache_lists: Family::default(),
            cache_list_fetched: Family::default(),
            cache_list_returned: Family::default(),
            storage_lists: Family::default(),
            handoffs: Family::default(),
        }
    }
}

/// One resource's series, looked up once when its cache starts.
#[derive(Debug, Clone)]
pub(crate) struct ResourceMetrics {
    pub initializations: Counter,
    pub events_received: Counter,
    pub resource_version: Gauge<i64, AtomicI64>,
    pub read_wait: Histogram,
    pub cache_lists: Counter,
    pub cache_list_fetched: Counter,
    pub cache_list_returned: Counter,
    pub storage_lists: Counter,
    pub handoffs: Counter,
    consistent_reads: [Counter; 3],
}

impl ResourceMetrics {
    /// A list at the latest revision: from memory, or by etcd (`fallback`) with `success`.
    pub fn consistent_read(&self, fallback: bool, success: bool) {
        let i = match (fallback, success) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 2,
        };
        self.consistent_reads[i].inc();
    }
}

impl CacheMetrics {
    /// The series of the resource whose prefix is `prefix` (`<root>/<group>/<plural>/`, `root`
    /// without its trailing slash), its window holding `capacity` events.
    pub(crate) fn resource(&self, root: &str, prefix: &str, capacity: usize) -> ResourceMetrics {
        let rest = prefix.strip_prefix(root).unwrap_or(prefix).trim_matches('/');
        let (group, resource) = rest.split_once('/').unwrap_or(("", rest));
        let labels: Labels = vec![("group", group.to_owned()), ("resource", resource.to_owned())];
        let with = |extra: &[(&'static str, &str)]| {
            let mut labels = labels.clone();
            labels.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
            labels
        };
        self.capacity.get_or_create(&labels).set(i64::try_from(capacity).unwrap_or(i64::MAX));
        let consistent = |fallback: &str, success: &str| {
            self.consistent_reads.get_or_create(&with(&[("success", success), ("fallback", fallback)])).clone()
        };
        ResourceMetrics {
            initializations: self.initializations.get_or_create(&labels).clone(),
            events_received: self.events_received.get_or_create(&labels).clone(),
            resource_version: self.resource_version.get_or_create(&labels).clone(),
            read_wait: self.read_wait.get_or_create(&labels).clone(),
            cache_lists: self.cache_lists.get_or_create(&with(&[("index", "")])).clone(),
            cache_list_fetched: self.cache_list_fetched.get_or_create(&with(&[("index", "")])).clone(),
            cache_list_returned: self.cache_list_returned.get_or_create(&labels).clone(),
            storage_lists: self.storage_lists.get_or_create(&labels).clone(),
            handoffs: self.handoffs.get_or_create(&labels).clone(),
            consistent_reads: [consistent("false", "true"), consistent("true", "true"), consistent("true", "false")],
        }
    }
}

impl Collector for CacheMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        fn one(
            encoder: &mut DescriptorEncoder,
            name: &str,
            help: &str,
            metric: &impl EncodeMetric,
        ) -> std::fmt::Result {
            metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
        }
        let e = &mut encoder;
        // Counters are named without `_total`, which the exposition adds.
        one(
            e,
            "apiserver_watch_cache_initializations",
            "Counter of watch cache initializations broken by resource type.",
            &self.initializations,
        )?;
        one(
            e,
            "apiserver_watch_cache_events_received",
            "Counter of events received in watch cache broken by resource type.",
            &self.events_received,
        )?;
        one(
            e,
            "apiserver_watch_cache_resource_version",
            "Current resource version of watch cache broken by resource type.",
            &self.resource_version,
        )?;
        one(e, "watch_cache_capacity", "Total capacity of watch cache broken by resource type.", &self.capacity)?;
        one(
            e,
            "apiserver_watch_cache_read_wait_seconds",
            "Histogram of time spent waiting for a watch cache to become fresh.",
            &self.read_wait,
        )?;
        one(
            e,
            "apiserver_watch_cache_consistent_read",
            "Counter for consistent reads from cache.",
            &self.consistent_reads,
        )?;
        one(e, "apiserver_cache_list", "Number of LIST requests served from watch cache", &self.cache_lists)?;
        one(
            e,
            "apiserver_cache_list_fetched_objects",
            "Number of objects read from watch cache in the course of serving a LIST request",
            &self.cache_list_fetched,
        )?;
        one(
            e,
            "apiserver_cache_list_returned_objects",
            "Number of objects returned for a LIST request from watch cache",
            &self.cache_list_returned,
        )?;
        one(e, "apiserver_storage_list", "Number of LIST requests served from storage", &self.storage_lists)?;
        one(
            e,
            "versa_watch_cache_handoffs",
            "Client watches that went on from the storage's own watch: they fell behind the watch cache's window, or its storage watch ended.",
            &self.handoffs,
        )?;
        Ok(())
    }
}
