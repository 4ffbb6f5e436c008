//! Errors a caller can act on. Each maps to one HTTP answer in the server: `NotFound` → 404,
//! `AlreadyExists` → 409, `Conflict` → 409, `Expired` → 410, `TooLarge` → 500
//! `etcdserver: request is too large` (kube-apiserver's answer at etcd's limit), `InvalidContinue` → 400,
//! `FutureRevision` → 504 "Too large resource version", `Unavailable` → 503.

/// A storage error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key does not exist.
    #[error("key {key:?} not found")]
    NotFound { key: String },
    /// A create found the key already present.
    #[error("key {key:?} already exists")]
    AlreadyExists { key: String },
    /// A compare-and-swap found a different modification revision than expected.
    #[error("key {key:?}: expected revision {expected}, but the key has changed since")]
    Conflict { key: String, expected: i64 },
    /// The revision (or the continue token's revision) is older than the kept history.
    #[error("revision {requested} has been compacted (oldest available: {compacted})")]
    Expired { requested: i64, compacted: i64 },
    /// The revision asked for has not been written yet.
    #[error("revision {requested} is newer than the store's current revision {current}")]
    FutureRevision { requested: i64, current: i64 },
    /// The value is over [`crate::MAX_VALUE_BYTES`].
    #[error("value for key {key:?} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { key: String, size: usize, limit: usize },
    /// A continue token that this store did not issue, or that does not fit the request.
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),
    /// A stored value that encryption at rest cannot open (its key is no longer configured, or
    /// the data is damaged): kube's 500 for the same, with its message (a list's names the key:
    /// `unable to transform key "...": ...`; a get's does not).
    #[error("{message}")]
    Untransformable { key: String, message: String },
    /// The backend cannot serve the request now (disk error, etcd down, store closed).
    #[error("storage unavailable: {message}")]
    Unavailable {
        message: String,
        #[source]
        cause: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl Error {
    /// `Unavailable` with a cause.
    pub fn unavailable(message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Unavailable { message: message.into(), cause: Some(Box::new(cause)) }
    }

    /// `Unavailable` without a separate cause.
    pub fn unavailable_msg(message: impl Into<String>) -> Self {
        Error::Unavailable { message: message.into(), cause: None }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
