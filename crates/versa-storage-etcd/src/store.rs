//! [`EtcdStore`]: each `Store` operation as one etcd request. Preconditions are transaction
//! compares, so a lost race costs no extra round trip and takes no revision; the failure branch
//! reads the key back only to tell `NotFound` from `Conflict`.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, PutOptions, Txn, TxnOp,
    TxnOpResponse, TxnResponse, WatchClient,
};
use versa_storage::{
    BoxFuture, ContinueToken, Deleted, Error, KeyValue, ListOptions, ListPage, Result, Store, Watch, prefix_end,
};

use crate::config::EtcdConfig;
use crate::errors::{CallError, Condition};
use crate::progress;
use crate::rpc::{header_revision, key_value, range_start};
use crate::watch::{self, WatchSettings};

/// The largest response the client decodes. tonic's default (4 MiB) is smaller than a page of
/// a few values at [`versa_storage::MAX_VALUE_BYTES`]; etcd itself sends responses of any size.
const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// HTTP/2 keep-alive pings on open streams, so that a watch on a connection that silently died
/// (a partitioned member) fails and reconnects. etcd refuses pings more often than every 5 s
/// and pings without an open stream, hence the interval and `keep_alive_while_idle(false)`.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// A [`Store`] over an etcd v3 cluster. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct EtcdStore {
    kv: KvClient,
    watch: WatchClient,
    endpoints: Vec<String>,
    request_timeout: Duration,
    watch_settings: WatchSettings,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore").field("endpoints", &self.endpoints).finish_non_exhaustive()
    }
}

impl EtcdStore {
    /// Connects to the cluster and checks that it answers; `Unavailable` (with the cause) when
    /// no endpoint does within the connect timeout.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdStore> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_keep_alive(KEEP_ALIVE_INTERVAL, KEEP_ALIVE_TIMEOUT)
            .with_keep_alive_while_idle(false);
        if let Some(tls) = &config.tls {
            options = options.with_tls(tls.client_options()?);
        }
        let endpoints = config.endpoints.join(", ");
        let client = Client::connect(&config.endpoints, Some(options.clone()))
            .await
            .map_err(|e| Error::unavailable(format!("connecting to etcd at {endpoints}"), e))?;
        let mut store = EtcdStore {
            kv: client.kv_client().max_decoding_message_size(MAX_RESPONSE_BYTES),
            watch: client.watch_client().max_decoding_message_size(MAX_RESPONSE_BYTES),
            endpoints: config.endpoints.clone(),
            request_timeout: config.request_timeout,
            watch_settings: WatchSettings {
                request_timeout: config.request_timeout,
                progress_interval: config.progress_interval,
                reconnect_timeout: config.watch_reconnect_timeout,
                buffer: config.watch_buffer,
                ordered_progress: false,
            },
        };
        // The client connects lazily; one read proves that the cluster answers.
        match tokio::time::timeout(config.connect_timeout, store.read_revision()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                let message = format!("etcd at {endpoints} does not answer");
                return Err(Error::Unavailable { message, cause: Some(Box::new(e)) });
            }
            Err(_) => {
                let timeout = config.connect_timeout;
                return Err(Error::unavailable_msg(format!("etcd at {endpoints} did not answer within {timeout:?}")));
            }
        }
        store.watch_settings.ordered_progress =
            progress::cluster_orders_progress(&config.endpoints, &options, config.connect_timeout).await;
        Ok(store)
    }

    /// Whether every member answers a watch's progress request in order with its events (etcd
    /// 3.4.31/3.5.13 and later, see `progress.rs`): a cache in front of this store may then
    /// ask for progress to learn that it is current.
    pub fn orders_progress(&self) -> bool {
        self.watch_settings.ordered_progress
    }

    /// Runs one etcd call under the request timeout.
    async fn call<T>(&self, request: impl Future<Output = Result<T, etcd_client::Error>>) -> Result<T, CallError> {
        match tokio::time::timeout(self.request_timeout, request).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(CallError::Etcd(e)),
            Err(_) => Err(CallError::TimedOut(self.request_timeout)),
        }
    }

    /// Runs a transaction.
    async fn txn(&self, txn: Txn) -> Result<TxnResponse, CallError> {
        let mut kv = self.kv.clone();
        self.call(kv.txn(txn)).await
    }

    /// The store's revision, from the header of the cheapest read there is.
    async fn read_revision(&self) -> Result<i64> {
        let mut kv = self.kv.clone();
        let response = self
            .call(kv.get(vec![0u8], Some(GetOptions::new().with_count_only())))
            .await
            .map_err(|e| e.into_unavailable("read of the current revision"))?;
        Ok(header_revision(response.header()))
    }

    /// The revision etcd has compacted to, for an `Expired` error about `requested`; `requested`
    /// itself when etcd does not say in time.
    async fn compacted_revision(&self, key: &str, requested: i64) -> i64 {
        watch::compacted_revision(&self.watch, key, requested, self.request_timeout).await.unwrap_or(requested)
    }

    /// The current revision for a `FutureRevision` error (0 if even that read fails).
    async fn revision_for_error(&self) -> i64 {
        self.read_revision().await.unwrap_or(0)
    }

    async fn get_impl(&self, key: &str) -> Result<Option<KeyValue>> {
        let mut kv = self.kv.clone();
        let mut response =
            self.call(kv.get(key, None)).await.map_err(|e| e.into_unavailable(format_args!("get of {key:?}")))?;
        Ok(response.take_kvs().into_iter().next().map(key_value))
    }

    async fn list_impl(&self, prefix: &str, options: ListOptions) -> Result<ListPage> {
        let token = options.continue_token.as_deref().map(ContinueToken::decode).transpose()?;
        // A continue token's revision wins, so that every page is read at the first one's.
        // etcd reads the latest revision for anything <= 0.
        let revision = token.as_ref().map_or(options.revision, |t| t.revision).max(0);
        let start = token.as_ref().map_or_else(|| prefix.to_string(), |t| t.start_key(prefix));
        // An empty prefix (or one of 0xff bytes) has no end: `\0` is etcd's "every key after".
        let end = prefix_end(prefix.as_bytes()).unwrap_or_else(|| vec![0]);
        let mut get = GetOptions::new().with_range(end);
        if options.limit > 0 {
            get = get.with_limit(i64::try_from(options.limit).unwrap_or(i64::MAX));
        }
        if revision > 0 {
            get = get.with_revision(revision);
        }

        let mut kv = self.kv.clone();
        let mut response = match self.call(kv.get(range_start(start.into_bytes()), Some(get))).await {
            Ok(response) => response,
            Err(e) => {
                return Err(match e.condition() {
                    Some(Condition::Compacted) => Error::Expired {
                        requested: revision,
                        compacted: self.compacted_revision(prefix, revision).await,
                    },
                    Some(Condition::FutureRevision) => {
                        Error::FutureRevision { requested: revision, current: self.revision_for_error().await }
                    }
                    _ => e.into_unavailable(format_args!("list of {prefix:?}")),
                });
            }
        };
        // etcd's header carries the current revision even for a read in the past.
        let page_revision = if revision > 0 { revision } else { header_revision(response.header()) };
        let more = response.more();
        let items: Vec<KeyValue> = response.take_kvs().into_iter().map(key_value).collect();
        let continue_token = match items.last() {
            Some(last) if more => Some(ContinueToken::after(prefix, &last.key, page_revision).encode()),
            _ => None,
        };
        Ok(ListPage { items, revision: page_revision, continue_token })
    }

    async fn create_impl(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        // Values over the limit are refused before they cost a round trip.
        versa_storage::check_value_size(key, &value)?;
        let put = TxnOp::put(key, value.to_vec(), None);
        let txn = Txn::new().when([Compare::create_revision(key, CompareOp::Equal, 0)]).and_then([put]);
        let response = self.txn(txn).await.map_err(|e| write_error(e, "create", key, &value))?;
        if !response.succeeded() {
            return Err(Error::AlreadyExists { key: key.to_string() });
        }
        let revision = header_revision(response.header());
        Ok(KeyValue { key: key.to_string(), value, create_revision: revision, mod_revision: revision })
    }

    async fn update_impl(&self, key: &str, value: Bytes, expected_revision: i64) -> Result<KeyValue> {
        // Values over the limit are refused before they cost a round trip.
        versa_storage::check_value_size(key, &value)?;
        // `version > 0` keeps an expected revision of 0 from matching an absent key (whose
        // mod_revision etcd compares as 0) and creating it.
        let txn = Txn::new()
            .when([
                Compare::version(key, CompareOp::Greater, 0),
                Compare::mod_revision(key, CompareOp::Equal, expected_revision),
            ])
            .and_then([TxnOp::put(key, value.to_vec(), Some(PutOptions::new().with_prev_key()))])
            .or_else([TxnOp::get(key, Some(GetOptions::new().with_keys_only()))]);
        let response = self.txn(txn).await.map_err(|e| write_error(e, "update", key, &value))?;
        if !response.succeeded() {
            return Err(precondition_failed(&response, key, expected_revision));
        }
        let revision = header_revision(response.header());
        let create_revision = response
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Put(put) => put.prev_key().map(|prev| prev.create_revision()),
                _ => None,
            })
            .ok_or_else(|| {
                Error::unavailable_msg(format!("etcd answered the update of {key:?} without its old value"))
            })?;
        Ok(KeyValue { key: key.to_string(), value, create_revision, mod_revision: revision })
    }

    async fn delete_impl(&self, key: &str, expected_revision: Option<i64>) -> Result<Deleted> {
        let what = || format!("delete of {key:?}");
        let delete = DeleteOptions::new().with_prev_key();
        let Some(expected) = expected_revision else {
            let mut kv = self.kv.clone();
            let mut response = self.call(kv.delete(key, Some(delete))).await.map_err(|e| e.into_unavailable(what()))?;
            let revision = header_revision(response.header());
            let prev = response.take_prev_kvs().into_iter().next().map(key_value);
            return prev.map(|prev| Deleted { revision, prev }).ok_or_else(|| Error::NotFound { key: key.to_string() });
        };
        let txn = Txn::new()
            .when([
                Compare::version(key, CompareOp::Greater, 0),
                Compare::mod_revision(key, CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::delete(key, Some(delete))])
            .or_else([TxnOp::get(key, Some(GetOptions::new().with_keys_only()))]);
        let response = self.txn(txn).await.map_err(|e| e.into_unavailable(what()))?;
        if !response.succeeded() {
            return Err(precondition_failed(&response, key, expected));
        }
        let revision = header_revision(response.header());
        response
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Delete(mut delete) => delete.take_prev_kvs().into_iter().next().map(key_value),
                _ => None,
            })
            .map(|prev| Deleted { revision, prev })
            .ok_or_else(|| Error::unavailable_msg(format!("etcd answered the delete of {key:?} without its old value")))
    }

    async fn compact_impl(&self, revision: i64) -> Result<()> {
        let mut kv = self.kv.clone();
        match self.call(kv.compact(revision, None)).await {
            Ok(_) => Ok(()),
            Err(e) => match e.condition() {
                // Compacting to a revision at or before the last compaction has nothing to do.
                Some(Condition::Compacted) => Ok(()),
                Some(Condition::FutureRevision) => {
                    Err(Error::FutureRevision { requested: revision, current: self.revision_for_error().await })
                }
                _ => Err(e.into_unavailable(format_args!("compaction to revision {revision}"))),
            },
        }
    }
}

impl Store for EtcdStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(self.get_impl(key))
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListPage>> {
        Box::pin(self.list_impl(prefix, options))
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(self.create_impl(key, value))
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_revision: i64) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(self.update_impl(key, value, expected_revision))
    }

    fn delete<'a>(&'a self, key: &'a str, expected_revision: Option<i64>) -> BoxFuture<'a, Result<Deleted>> {
        Box::pin(self.delete_impl(key, expected_revision))
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<i64>> {
        Box::pin(self.read_revision())
    }

    fn watch<'a>(&'a self, prefix: &'a str, revision: i64) -> BoxFuture<'a, Result<Watch>> {
        Box::pin(watch::start(self.watch.clone(), prefix, revision, self.watch_settings.clone()))
    }

    fn compact(&self, revision: i64) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.compact_impl(revision))
    }
}

/// The error of a failed write: etcd's own size limit (which also counts the key and the
/// request's framing) is `TooLarge` like ours.
fn write_error(error: CallError, what: &str, key: &str, value: &Bytes) -> Error {
    match error.condition() {
        Some(Condition::TooLarge) => versa_storage::too_large(key, value.len()),
        _ => error.into_unavailable(format_args!("{what} of {key:?}")),
    }
}

/// Why a compare-and-swap transaction took its failure branch (which read the key).
fn precondition_failed(response: &TxnResponse, key: &str, expected: i64) -> Error {
    let present =
        response.op_responses().iter().any(|op| matches!(op, TxnOpResponse::Get(get) if !get.kvs().is_empty()));
    if present { Error::Conflict { key: key.to_string(), expected } } else { Error::NotFound { key: key.to_string() } }
}
