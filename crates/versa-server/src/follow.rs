//! A prefix of the store followed in memory, as kube's reflectors follow a resource: every page
//! of one list, then one watch from the list's revision; each object parsed once, when it is
//! listed or its event arrives, and kept by key. What to do after each change is the caller's
//! (standalone RBAC's authorizer publishes a policy; the ClusterRole aggregation controller
//! writes the aggregations that went stale).

use std::collections::BTreeMap;

use versa_storage::{ListOptions, Store, Watch, WatchEvent};

/// The parsed objects under a prefix, kept current by a watch.
pub struct Followed<T, P> {
    objects: BTreeMap<String, T>,
    watch: Watch,
    parse: P,
}

impl<T, P> std::fmt::Debug for Followed<T, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Followed").field("objects", &self.objects.len()).finish_non_exhaustive()
    }
}

impl<T, P: Fn(&str, &[u8]) -> Option<T>> Followed<T, P> {
    /// Lists `prefix` whole and opens the watch after it; `parse(key, value)` is the object of
    /// a stored value, `None` for one not kept.
    pub async fn start(store: &dyn Store, prefix: &str, parse: P) -> Result<Self, versa_storage::Error> {
        let mut objects = BTreeMap::new();
        let mut options = ListOptions::default();
        let revision = loop {
            let page = store.list(prefix, options.clone()).await?;
            for kv in page.items {
                objects.extend(parse(&kv.key, &kv.value).map(|o| (kv.key, o)));
            }
            match page.continue_token {
                Some(token) => options.continue_token = Some(token),
                None => break page.revision,
            }
        };
        let watch = store.watch(prefix, revision).await?;
        Ok(Followed { objects, watch, parse })
    }

    /// The objects, by key.
    pub fn objects(&self) -> &BTreeMap<String, T> {
        &self.objects
    }

    /// Waits for the next change and applies it; `false` once the watch has ended (the caller
    /// starts again).
    pub async fn changed(&mut self) -> Result<bool, versa_storage::Error> {
        while let Some(event) = self.watch.next().await {
            match event? {
                WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => match (self.parse)(&kv.key, &kv.value) {
                    Some(object) => self.objects.insert(kv.key, object),
                    None => self.objects.remove(&kv.key),
                },
                WatchEvent::Deleted { prev, .. } => self.objects.remove(&prev.key),
                WatchEvent::Progress { .. } => continue,
            };
            return Ok(true);
        }
        Ok(false)
    }
}
