//! The cache of one resource prefix (`<root>/<group>/<plural>/`): its current objects, a bounded
//! window of its recent events, and the task that keeps both up to date from one upstream watch.
//!
//! The cache starts with a list of the whole prefix at one revision (page by page, every page at
//! the first one's revision) and then watches from that revision, so no event falls between the
//! two. `revision` is how far the cache has seen: every event under the prefix up to it has been
//! applied, which upstream `Progress` items vouch for between events. `window_start` is the
//! oldest revision the window can serve from: every event after it is still held. When the
//! upstream watch ends (etcd compacted past it, or stayed unreachable), the cache is marked
//! ended; client watches drain what it holds and go on from etcd, and the next request starts a
//! new cache.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use versa_storage::{KeyValue, ListOptions, Result, Store, Watch, WatchEvent};

use crate::metrics::ResourceMetrics;

/// The page size of the initial list.
const INITIAL_PAGE: usize = 1000;

/// One resource's cache, shared by the store, the feeding task and every client watch.
#[derive(Debug)]
pub(crate) struct Resource {
    state: Mutex<State>,
    /// The cache's `revision`, published after every change so that waiters wake.
    revision: watch::Sender<i64>,
    /// Asks the feeding task for an upstream progress notification.
    progress_wanted: Arc<Notify>,
    /// This resource's series of the cache's metrics.
    pub metrics: ResourceMetrics,
}

/// What the cache holds.
#[derive(Debug)]
pub(crate) struct State {
    /// The current value of every key under the prefix.
    pub objects: BTreeMap<String, KeyValue>,
    /// Recent events (never `Progress`), in revision order.
    pub events: VecDeque<WatchEvent>,
    /// Every event after this revision is in `events`.
    pub window_start: i64,
    /// Every event up to this revision has been applied.
    pub revision: i64,
    /// The revision of the last upstream `Progress` (client watches pass it on).
    pub bookmark: i64,
    /// The upstream watch has ended: no more events will come.
    pub ended: bool,
    /// How many events `events` holds at most.
    capacity: usize,
}

impl Resource {
    /// Lists `prefix` from `inner` at one revision, watches it from there, and starts the task
    /// that applies the watch's events. `capacity` bounds the event window.
    pub async fn start(
        inner: &Arc<dyn Store>,
        prefix: &str,
        capacity: usize,
        ask_progress: bool,
        metrics: ResourceMetrics,
    ) -> Result<Arc<Self>> {
        let mut objects = BTreeMap::new();
        let mut options = ListOptions { limit: INITIAL_PAGE, ..ListOptions::default() };
        let revision = loop {
            metrics.storage_lists.inc();
            let page = inner.list(prefix, options.clone()).await?;
            objects.extend(page.items.into_iter().map(|kv| (kv.key.clone(), kv)));
            match page.continue_token {
                Some(token) => options.continue_token = Some(token),
                None => break page.revision,
            }
        };
        let upstream = inner.watch(prefix, revision).await?;
        let state = State {
            objects,
            events: VecDeque::new(),
            window_start: revision,
            revision,
            bookmark: revision,
            ended: false,
            capacity: capacity.max(1),
        };
        metrics.initializations.inc();
        metrics.resource_version.set(revision);
        let resource = Arc::new(Resource {
            state: Mutex::new(state),
            revision: watch::Sender::new(revision),
            progress_wanted: Arc::new(Notify::new()),
            metrics,
        });
        tokio::spawn(feed(Arc::downgrade(&resource), resource.progress_wanted.clone(), upstream, ask_progress));
        Ok(resource)
    }

    /// The cache's state, locked (held only while copying out of it, never across an await).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the upstream watch has ended (a new cache must be started).
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    /// A receiver that wakes whenever the cache changes.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.revision.subscribe()
    }

    /// Asks the upstream watch for a progress notification (coalesced with other askers).
    pub fn want_progress(&self) {
        self.progress_wanted.notify_one();
    }

    /// Waits until the cache has seen `revision`, at most `wait`; `false` if it has not by then
    /// (or the cache ended): the caller then reads upstream.
    pub async fn wait_fresh(&self, revision: i64, wait: Duration) -> bool {
        if revision <= 0 {
            return true;
        }
        let started = std::time::Instant::now();
        let fresh = self.wait_fresh_unobserved(revision, wait).await;
        self.metrics.read_wait.observe(started.elapsed().as_secs_f64());
        fresh
    }

    async fn wait_fresh_unobserved(&self, revision: i64, wait: Duration) -> bool {
        // Subscribed before looking, so that a change after the look wakes the wait.
        let mut changes = self.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            {
                let state = self.lock();
                if state.revision >= revision {
                    return true;
                }
                if state.ended || wait.is_zero() {
                    return false;
                }
            }
            self.want_progress();
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => continue,
                _ => return false,
            }
        }
    }

    fn publish(&self) {
        let revision = self.lock().revision;
        self.metrics.resource_version.set(revision);
        self.revision.send_replace(revision);
    }
}

impl State {
    /// Applies one upstream item.
    fn apply(&mut self, event: WatchEvent) {
        let revision = event.revision();
        match &event {
            WatchEvent::Progress { .. } => {
                self.revision = self.revision.max(revision);
                self.bookmark = self.bookmark.max(revision);
                return;
            }
            WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => {
                self.objects.insert(kv.key.clone(), kv.clone());
            }
            WatchEvent::Deleted { prev, .. } => {
                self.objects.remove(&prev.key);
            }
        }
        self.revision = self.revision.max(revision);
        self.events.push_back(event);
        while self.events.len() > self.capacity {
            if let Some(oldest) = self.events.pop_front() {
                self.window_start = self.window_start.max(oldest.revision());
            }
        }
    }

    /// Whether an event under `prefix` happened after `revision` (so the current objects are
    /// not the objects at `revision`).
    pub fn changed_since(&self, prefix: &str, revision: i64) -> bool {
        let first = self.events.partition_point(|e| e.revision() <= revision);
        self.events.range(first..).any(|e| e.key().is_some_and(|k| k.starts_with(prefix)))
    }
}

/// Applies the upstream watch's items to the cache until the watch ends or the cache is dropped
/// (the store and every client watch let go of it).
async fn feed(resource: Weak<Resource>, progress_wanted: Arc<Notify>, mut upstream: Watch, ask_progress: bool) {
    loop {
        let item = tokio::select! {
            item = upstream.next() => item,
            () = progress_wanted.notified() => {
                if ask_progress {
                    upstream.request_progress();
                }
                continue;
            }
        };
        let Some(resource) = resource.upgrade() else { return };
        match item {
            Some(Ok(event)) => {
                if !matches!(event, WatchEvent::Progress { .. }) {
                    resource.metrics.events_received.inc();
                }
                resource.lock().apply(event);
                resource.publish();
            }
            // The error reaches no one here: client watches go on from etcd, which reports it
            // to them if it still holds (such as `Expired`).
            Some(Err(_)) | None => {
                resource.lock().ended = true;
                resource.publish();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn kv(key: &str, rev: i64) -> KeyValue {
        KeyValue { key: key.into(), value: Bytes::from_static(b"v"), create_revision: rev, mod_revision: rev }
    }

    #[test]
    fn window_is_bounded_and_remembers_where_it_starts() {
        let mut state = State {
            objects: BTreeMap::new(),
            events: VecDeque::new(),
            window_start: 10,
            revision: 10,
            bookmark: 10,
            ended: false,
            capacity: 2,
        };
        state.apply(WatchEvent::Added(kv("/r/a", 11)));
        state.apply(WatchEvent::Progress { revision: 15 });
        state.apply(WatchEvent::Added(kv("/r/b", 16)));
        assert_eq!((state.window_start, state.revision, state.bookmark), (10, 16, 15));
        state.apply(WatchEvent::Deleted { revision: 17, prev: kv("/r/a", 11) });
        assert_eq!((state.window_start, state.events.len()), (11, 2));
        assert_eq!(state.objects.keys().collect::<Vec<_>>(), ["/r/b"]);
        assert!(state.changed_since("/r/", 16));
        assert!(!state.changed_since("/r/", 17));
        assert!(!state.changed_since("/r/b", 16), "the delete was of another key");
    }
}
