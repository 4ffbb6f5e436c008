//! Watches: one etcd watch stream per [`Watch`], pumped by a task that maps etcd's events to
//! [`WatchEvent`]s, asks for progress notifications, and survives a broken connection.
//!
//! The task remembers the revision of the last event it delivered. When the stream fails (an
//! etcd restart, a lost connection), it opens a new one from the next revision, retrying with
//! backoff for a bounded time, so that the consumer sees every event exactly once and in order;
//! if etcd has compacted that revision meanwhile, the watch ends with `Expired` instead. The
//! task ends, cancelling the etcd watch, as soon as the consumer drops its [`Watch`].

use std::time::Duration;

use bytes::Bytes;
use etcd_client::{EventType, WatchClient, WatchOptions, WatchResponse, WatchStream};
use tokio::time::{Instant, MissedTickBehavior};
use versa_storage::{Error, KeyValue, Result, Watch, WatchEvent, WatchSender, prefix_end};

use crate::rpc::{header_revision, lent_key_value, range_start};

/// The watch settings of an [`crate::EtcdConfig`].
#[derive(Debug, Clone)]
pub(crate) struct WatchSettings {
    pub request_timeout: Duration,
    pub progress_interval: Duration,
    pub reconnect_timeout: Duration,
    pub buffer: usize,
    /// Whether the cluster answers progress requests in order (see `progress.rs`); if not, the
    /// watch neither sends them nor trusts their answers.
    pub ordered_progress: bool,
}

/// The first and the longest pause between attempts to re-establish a broken stream.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(2);

/// The shortest progress interval a watch honours.
const MIN_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Opens a watch of `prefix` for events after `revision` (0: after the current revision) and
/// starts the task that serves it. Fails only if etcd cannot be reached; a compacted `revision`
/// ends the returned watch with `Expired`.
pub(crate) async fn start(client: WatchClient, prefix: &str, revision: i64, settings: WatchSettings) -> Result<Watch> {
    let mut task = WatchTask {
        client,
        prefix: prefix.to_string(),
        range_end: prefix_end(prefix.as_bytes()).unwrap_or_else(|| vec![0]),
        delivered: revision.max(0),
        watch_id: 0,
        settings,
    };
    let (stream, opened) = task.open(if revision > 0 { revision + 1 } else { 0 }).await?;
    if revision <= 0 {
        // etcd watches "from now" from the revision after the one it was created at.
        task.delivered = opened.revision;
    }
    let (sender, watch) = Watch::channel(task.settings.buffer);
    task.watch_id = opened.watch_id;
    tokio::spawn(task.run(stream, sender));
    Ok(watch)
}

/// The revision etcd has compacted to, learnt by watching `key` from `requested` (etcd's range
/// API does not tell, but a watch from a compacted revision is cancelled with it); `None` if
/// etcd does not answer in time or `requested` has not been compacted.
pub(crate) async fn compacted_revision(
    client: &WatchClient,
    key: &str,
    requested: i64,
    timeout: Duration,
) -> Option<i64> {
    let mut client = client.clone();
    let probe = async {
        let options = WatchOptions::new().with_start_revision(requested);
        let mut stream = client.watch(range_start(key.as_bytes().to_vec()), Some(options)).await.ok()?;
        while let Some(response) = stream.message().await.ok()? {
            if response.compact_revision() != 0 {
                return Some(response.compact_revision());
            }
            if response.canceled() || !response.events().is_empty() {
                return None;
            }
        }
        None
    };
    tokio::time::timeout(timeout, probe).await.ok().flatten()
}

/// What [`WatchTask::open`] learnt from etcd's confirmation of a new watch.
struct Opened {
    watch_id: i64,
    /// The store's revision when etcd created the watch.
    revision: i64,
}

/// How one stream's service ended.
enum Ending {
    /// The consumer dropped its [`Watch`].
    ConsumerGone,
    /// The watch cannot go on (history compacted); the error is its last item.
    Failed(Error),
    /// The stream broke; a new one may pick up where it left off.
    Broken(Error),
}

struct WatchTask {
    client: WatchClient,
    prefix: String,
    range_end: Vec<u8>,
    /// Every event up to this revision has been delivered (or lies before the watch's start).
    delivered: i64,
    /// etcd's id of the watch on the current stream.
    watch_id: i64,
    settings: WatchSettings,
}

impl WatchTask {
    /// Opens a stream watching from `start_revision` (0: now) and waits for etcd to confirm it.
    async fn open(&self, start_revision: i64) -> Result<(WatchStream, Opened)> {
        let options = WatchOptions::new()
            .with_range(self.range_end.clone())
            .with_start_revision(start_revision)
            .with_prev_key()
            .with_progress_notify();
        let mut client = self.client.clone();
        let timeout = self.settings.request_timeout;
        let what = format!("watch of {:?} from revision {start_revision}", self.prefix);
        let opening = async {
            let mut stream = client
                .watch(range_start(self.prefix.clone().into_bytes()), Some(options))
                .await
                .map_err(|e| unavailable(&what, e))?;
            loop {
                match stream.message().await.map_err(|e| unavailable(&what, e))? {
                    Some(response) if response.created() && !response.canceled() => {
                        let opened =
                            Opened { watch_id: response.watch_id(), revision: header_revision(response.header()) };
                        return Ok((stream, opened));
                    }
                    Some(response) if response.canceled() => {
                        return Err(Error::unavailable_msg(format!(
                            "etcd refused the {what}: {}",
                            response.cancel_reason()
                        )));
                    }
                    Some(_) => continue,
                    None => return Err(Error::unavailable_msg(format!("etcd closed the {what} before confirming it"))),
                }
            }
        };
        match tokio::time::timeout(timeout, opening).await {
            Ok(result) => result,
            Err(_) => Err(Error::unavailable_msg(format!("etcd did not confirm the {what} within {timeout:?}"))),
        }
    }

    /// Serves the watch until the consumer leaves, history runs out or etcd stays unreachable.
    async fn run(mut self, mut stream: WatchStream, sender: WatchSender) {
        loop {
            match self.pump(&mut stream, &sender).await {
                Ending::ConsumerGone => {
                    // Best effort: dropping the stream resets it anyway.
                    let _ = stream.cancel(self.watch_id).await;
                    return;
                }
                Ending::Failed(error) => {
                    let _ = stream.cancel(self.watch_id).await;
                    sender.send(Err(error)).await;
                    return;
                }
                Ending::Broken(cause) => {
                    drop(stream);
                    match self.reopen(&sender, cause).await {
                        Some((new_stream, opened)) => {
                            stream = new_stream;
                            self.watch_id = opened.watch_id;
                        }
                        None => return,
                    }
                }
            }
        }
    }

    /// Reads one stream, passing events on and asking for progress, until it ends.
    async fn pump(&mut self, stream: &mut WatchStream, sender: &WatchSender) -> Ending {
        // tokio's intervals cannot be zero; nor should a watch flood etcd with requests.
        let period = self.settings.progress_interval.max(MIN_PROGRESS_INTERVAL);
        let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // Without ordered answers, requests are left unsent: etcd's periodic notifications
        // answer them instead.
        let ask = self.settings.ordered_progress;
        loop {
            let ask_progress = tokio::select! {
                () = sender.closed() => return Ending::ConsumerGone,
                () = sender.progress_requested(), if ask => true,
                _ = ticker.tick(), if ask => true,
                message = stream.message() => match message {
                    Ok(Some(response)) => match self.deliver(response, sender).await {
                        Some(ending) => return ending,
                        None => false,
                    },
                    Ok(None) => return Ending::Broken(Error::unavailable_msg("etcd ended the watch stream")),
                    Err(e) => return Ending::Broken(unavailable(&format!("watch of {:?}", self.prefix), e)),
                },
            };
            if ask_progress && let Err(e) = stream.request_progress().await {
                return Ending::Broken(unavailable("progress request", e));
            }
        }
    }

    /// Passes one response on; `Some` when the stream's service ends with it.
    async fn deliver(&mut self, response: WatchResponse, sender: &WatchSender) -> Option<Ending> {
        if response.compact_revision() != 0 {
            return Some(Ending::Failed(Error::Expired {
                requested: self.delivered + 1,
                compacted: response.compact_revision(),
            }));
        }
        if response.canceled() {
            let reason = response.cancel_reason();
            return Some(Ending::Broken(Error::unavailable_msg(format!("etcd cancelled the watch: {reason}"))));
        }
        if response.events().is_empty() {
            if response.created() {
                return None;
            }
            // A progress notification: nothing under the prefix up to this revision was missed.
            // etcd's periodic ones carry the watch's id and travel with its events; answers to
            // progress requests carry -1 and are in order only on servers that say so.
            let ordered = response.watch_id() == self.watch_id || self.settings.ordered_progress;
            let revision = header_revision(response.header());
            if !ordered || revision < self.delivered {
                return None;
            }
            if !sender.send(Ok(WatchEvent::Progress { revision })).await {
                return Some(Ending::ConsumerGone);
            }
            self.delivered = revision;
            return None;
        }
        // etcd never splits one revision's events over two responses (without the `fragment`
        // option), so a whole revision is either before `floor` or not yet delivered.
        let floor = self.delivered;
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            let revision = kv.mod_revision();
            if revision <= floor {
                // Already delivered: a stream re-opened from `delivered + 1` never sends these,
                // but a duplicate must not reach the consumer if one ever does.
                continue;
            }
            let item = match event.event_type() {
                EventType::Put if kv.create_revision() == revision => WatchEvent::Added(lent_key_value(kv)),
                EventType::Put => {
                    WatchEvent::Modified { kv: lent_key_value(kv), prev: event.prev_kv().map(lent_key_value) }
                }
                EventType::Delete => WatchEvent::Deleted {
                    revision,
                    // etcd omits the previous value only if it was compacted away meanwhile;
                    // the key is all that is left to report.
                    prev: event.prev_kv().map(lent_key_value).unwrap_or_else(|| KeyValue {
                        key: String::from_utf8_lossy(kv.key()).into_owned(),
                        value: Bytes::new(),
                        create_revision: 0,
                        mod_revision: 0,
                    }),
                },
            };
            if !sender.send(Ok(item)).await {
                return Some(Ending::ConsumerGone);
            }
            self.delivered = self.delivered.max(revision);
        }
        None
    }

    /// Re-establishes a broken stream from the revision after the last delivered one, retrying
    /// with backoff; `None` when the consumer left or the time ran out (the consumer then got
    /// `Unavailable` as the last item).
    async fn reopen(&self, sender: &WatchSender, cause: Error) -> Option<(WatchStream, Opened)> {
        let deadline = Instant::now() + self.settings.reconnect_timeout;
        let mut delay = FIRST_RETRY_DELAY;
        let mut last_error = cause;
        loop {
            if Instant::now() + delay > deadline {
                let message = format!(
                    "watch of {:?} could not be re-established within {:?}",
                    self.prefix, self.settings.reconnect_timeout
                );
                sender.send(Err(Error::Unavailable { message, cause: Some(Box::new(last_error)) })).await;
                return None;
            }
            tokio::select! {
                () = sender.closed() => return None,
                () = tokio::time::sleep(delay) => {}
            }
            match self.open(self.delivered + 1).await {
                Ok(opened) => return Some(opened),
                Err(e) => last_error = e,
            }
            delay = (delay * 2).min(MAX_RETRY_DELAY);
        }
    }
}

fn unavailable(what: &str, error: etcd_client::Error) -> Error {
    Error::unavailable(format!("etcd {what} failed"), error)
}
