//! What starting the audit log can fail with: reading or validating the policy file, opening
//! the log, starting its writer thread. Once serving, a write that fails is logged, not
//! returned (`writer`).

use std::path::PathBuf;

/// Errors of the policy file and the log.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read the audit policy file {path:?}: {source}")]
    ReadPolicy {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("audit policy file {path:?}: {message}")]
    Policy { path: PathBuf, message: String },
    #[error("cannot open the audit log {path:?}: {source}")]
    OpenLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the audit log writer: {0}")]
    Thread(#[source] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
