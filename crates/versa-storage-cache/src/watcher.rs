//! One client watch served from a resource's cache: a task that remembers how far it has
//! delivered (`position`: every event under its prefix up to there is sent) and copies the
//! window's later events to the client, waking whenever the cache changes.
//!
//! The task never loses its place. If the client reads too slowly and the window slides past
//! its position, or the cache's upstream watch ends, the task opens a watch of the inner store
//! from its position and forwards that instead: the client sees every event once and in order,
//! and `Expired` only if etcd itself no longer holds the history (kube closes such watches and
//! lets the client re-list; going on from etcd spares the re-list where etcd still can).

use std::sync::Arc;

use versa_storage::{Store, Watch, WatchEvent, WatchSender};

use crate::resource::{Resource, State};

/// The most events copied out of the window under one lock.
const BATCH: usize = 256;

/// Starts serving a watch of `prefix` (under `resource`'s prefix) for events after `start`.
pub(crate) fn spawn(
    resource: Arc<Resource>,
    inner: Arc<dyn Store>,
    prefix: String,
    start: i64,
    buffer: usize,
) -> Watch {
    let (sender, watch) = Watch::channel(buffer);
    tokio::spawn(serve(resource, inner, prefix, start, sender));
    watch
}

/// What one look at the cache gave a watch.
struct Step {
    batch: Vec<WatchEvent>,
    /// The watch's position after the batch is sent.
    position: i64,
    /// Every event the cache holds was looked at: the watch is as far as the cache.
    caught_up: bool,
    /// The cache cannot serve the watch any further (window slid past it, or cache ended).
    hand_off: bool,
    bookmark: i64,
}

fn step(state: &State, prefix: &str, position: i64) -> Step {
    let mut step = Step { batch: Vec::new(), position, caught_up: false, hand_off: false, bookmark: state.bookmark };
    if position < state.window_start {
        step.hand_off = true;
        return step;
    }
    let mut next = state.events.partition_point(|e| e.revision() <= position);
    while let Some(event) = state.events.get(next) {
        // A revision's events are never split between two batches.
        if step.batch.len() >= BATCH && event.revision() != step.position {
            break;
        }
        step.position = event.revision();
        if event.key().is_some_and(|k| k.starts_with(prefix)) {
            step.batch.push(event.clone());
        }
        next += 1;
    }
    if next == state.events.len() {
        step.caught_up = true;
        step.position = step.position.max(state.revision);
        step.hand_off = state.ended;
    }
    step
}

async fn serve(resource: Arc<Resource>, inner: Arc<dyn Store>, prefix: String, start: i64, sender: WatchSender) {
    let mut position = start;
    let mut changes = resource.subscribe();
    // Upstream progress already known when the watch started is not passed on.
    let mut bookmark = resource.lock().bookmark;
    // A client's progress request: the store's revision when it asked, to vouch for.
    let mut progress_target: Option<i64> = None;
    loop {
        changes.borrow_and_update();
        let step = step(&resource.lock(), &prefix, position);
        for event in step.batch {
            if !sender.send(Ok(event)).await {
                return;
            }
        }
        position = step.position;
        if step.hand_off {
            resource.metrics.handoffs.inc();
            drop(resource);
            return forward(inner, &prefix, position, sender).await;
        }
        if !step.caught_up {
            continue;
        }
        // Everything under the prefix up to `position` is delivered.
        let answered = progress_target.is_some_and(|target| position >= target);
        if (answered || step.bookmark > bookmark) && position >= start {
            if !sender.send(Ok(WatchEvent::Progress { revision: position })).await {
                return;
            }
            bookmark = step.bookmark;
            if answered {
                progress_target = None;
            }
        }
        tokio::select! {
            () = sender.closed() => return,
            changed = changes.changed() => if changed.is_err() { return },
            () = sender.progress_requested() => {
                // Vouch for at least the store's revision now, as the inner store's watch does.
                if let Ok(revision) = inner.current_revision().await {
                    progress_target = Some(revision.max(start));
                    resource.want_progress();
                }
            }
        }
    }
}

/// Goes on from the inner store's own watch from `position`.
async fn forward(inner: Arc<dyn Store>, prefix: &str, position: i64, sender: WatchSender) {
    let mut upstream = match inner.watch(prefix, position).await {
        Ok(watch) => watch,
        Err(e) => {
            sender.send(Err(e)).await;
            return;
        }
    };
    loop {
        tokio::select! {
            () = sender.closed() => return,
            () = sender.progress_requested() => upstream.request_progress(),
            item = upstream.next() => match item {
                None => return,
                Some(item) => {
                    let last = item.is_err();
                    if !sender.send(item).await || last {
                        return;
                    }
                }
            },
        }
    }
}
