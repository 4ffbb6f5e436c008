//! The audit log, as kube-apiserver writes it (k8s.io/apiserver `pkg/audit`, the `WithAudit` and
//! `WithFailedAuthenticationAudit` filters, the `log` backend): an `audit.k8s.io/v1` `Policy`
//! decides per request how much to record, and every recorded stage of the request becomes one
//! line of JSON, an `audit.k8s.io/v1` `Event`, in a file rotated as lumberjack rotates it (or on
//! standard output).
//!
//! One module per job, each importing only those listed before it (so there are no cycles, and
//! this file only declares and re-exports):
//!
//! - `error` — [`Error`], what starting the audit log can fail with.
//! - `policy` — [`Level`], [`Stage`], the validated [`Policy`] and kube's rule matching
//!   ([`Policy::evaluate`]); `policy_file` — reading and validating the policy file as kube does
//!   ([`Policy::parse`], [`Policy::load`]).
//! - `event` — the `Event` record and its fields, written as one line with Go's escaping.
//! - `rotating_file` — [`RotatingFile`], lumberjack's rotation; `writer` — the writer thread
//!   behind its bounded queue ([`QUEUE_EVENTS`]), to standard output or a [`RotatingFile`]
//!   ([`LogConfig`]).
//! - `record` — [`Record`], the event of one request under construction, shared by the layers
//!   that add to it; `completing_body` — a watch's body, which writes the last stage when the
//!   stream ends.
//! - `lifecycle` — [`Auditor`] and [`AuditedRequest`]: a request's stages from its arrival to
//!   its answer (or its panic, [`catch_panic`]).
//!
//! With no policy there is no [`Auditor`], and a request pays one `Option` check.

mod completing_body;
mod error;
mod event;
mod lifecycle;
mod policy;
mod policy_file;
mod record;
mod rotating_file;
mod writer;

pub use error::{Error, PolicyError, Result};
pub use event::{micro_time, source_ips};
pub use lifecycle::{Arrival, AuditConfig, AuditedRequest, Auditor, catch_panic};
pub use policy::{GroupResources, Level, Policy, PolicyRule, RequestConfig, Stage, Stages};
pub use record::Record;
pub use rotating_file::RotatingFile;
pub use writer::{LogConfig, QUEUE_EVENTS};

/// The `Audit-ID` header (kube's `HeaderAuditID`).
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// Annotation keys kube's authorization filter sets.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";
