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
    #[error("audit policy file {path:?}: {source}")]
    Policy {
        path: PathBuf,
        #[source]
        source: PolicyError,
    },
    #[error("cannot open the audit log {path:?}: {source}")]
    OpenLog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the audit log writer: {0}")]
    Thread(#[source] std::io::Error),
}

/// Why a policy is refused (`Policy::parse`), worded as kube words it.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The text is not YAML or JSON, not an object, or its fields have the wrong types.
    #[error("failed decoding: {reason}")]
    Decode { reason: String },
    /// The document is not an `audit.k8s.io/v1` `Policy`.
    #[error(
        "failed decoding: apiVersion {api_version:?}, kind {kind:?}: an audit policy must be apiVersion \
         audit.k8s.io/v1, kind Policy"
    )]
    WrongKind { api_version: String, kind: String },
    /// kube's `ValidatePolicy` refuses it; printed as the field errors' aggregate.
    #[error("{}", .0.aggregate())]
    Invalid(versa_schema::ErrorList),
    /// The policy has no rules.
    #[error("loaded illegal policy with 0 rules")]
    NoRules,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
