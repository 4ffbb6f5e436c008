//! versa-merge: server-side apply for custom resources — structured merge and field ownership.
//!
//! Kubernetes' server-side apply lives in two Go libraries: sigs.k8s.io/structured-merge-diff
//! (field sets, merging and comparing objects by their schema, the `Updater` that tracks which
//! manager owns which field) and the field manager of k8s.io/apimachinery (how those owners
//! are written into `metadata.managedFields`, conflict errors, the caps and special managers).
//! No Rust crate implements either, so this crate does, by hand, from their behaviour; its
//! corpus (`tests/data/*.yaml`) includes structured-merge-diff's own scenarios.
//!
//! It is pure: values in, values out, no I/O, no clock (the caller passes the time). The server
//! calls it from one module (`versa_server`'s `rest/fields.rs`): the PATCH handler's
//! `application/apply-patch+yaml` and the `managedFields` bookkeeping of every create, update
//! and patch.
//!
//! The pieces, bottom up:
//!
//! - [`path`], [`set`], [`fieldsv1`] — field paths, [`FieldSet`] and kube's `FieldsV1` text;
//! - `schema` — what a [`versa_schema::Structural`] means to structured merge (list and map
//!   types, deduced types, `ObjectMeta`);
//! - [`field_set()`], `merge`, `compare`, `remove`, [`validate`] — the algorithms over values;
//! - [`versions`] — the resource's other versions ([`Versions`]: schemas and a converter);
//! - `updater` — ownership for one apply or update ([`Conflicts`]);
//! - [`managed`], [`fieldmanager`] — `managedFields` entries and the public [`apply()`] and
//!   [`update()`].
//!
//! Entries written at other apiVersions are judged at their own version when the caller passes
//! the resource's versions ([`Versions`]), as kube's field manager does with its converter;
//! without them, at the request's version. Not yet reproduced: reconciling entries with a
//! schema that changed between atomic and granular.
//!
//! Input safety: every walk recurses along the nesting of a JSON object or of a field set
//! derived from one. Objects reach this crate through the server's decoder, which refuses
//! nesting deeper than 128 levels (`versa_server::codec::MAX_DEPTH`); `fieldsV1` sets live
//! inside those objects, and serde_json refuses deeper `fieldsV1` text. The recursion is
//! therefore bounded without a counter of its own.

mod compare;
pub mod conflict;
mod field_set;
pub mod fieldmanager;
pub mod fieldsv1;
pub mod managed;
mod merge;
pub mod path;
mod remove;
mod schema;
pub mod set;
mod updater;
pub mod validate;
mod value;
pub mod versions;

pub use compare::Comparison;
pub use conflict::{Conflict, ConflictCause, Conflicts};
pub use field_set::field_set;
pub use fieldmanager::{ApplyError, Options, Outcome, UpdateError, apply, update};
pub use fieldsv1::FieldsV1Error;
pub use managed::{ManagedFields, ManagedFieldsEntry, ManagedFieldsError, ManagerId};
pub use path::{FieldPath, PathElement};
pub use set::FieldSet;
pub use validate::{ValidationError, ValidationErrors};
pub use versions::{ConvertError, Versions};
