//! The registry: what stands between the engines (schema, CEL, conversion, merge, storage) and
//! HTTP. It knows resources, objects and storage; it knows nothing of requests, sockets or TLS,
//! so the server, the controllers and the offline tools (`versa validate`, `versa convert`)
//! call the same functions — the shape of apiextensions-apiserver's `registry/customresource`
//! (strategy, validator, storage), in versa's terms:
//!
//! - [`resource`] — a served [`Resource`] and its [`Version`]s, compiled once per definition
//!   change (schema, CEL rules, Table convertor, converter); [`compiled`] — what a resource
//!   compiles on first use, dropped when unused (bounded by the working set); [`served`] — the
//!   [`Registry`] of what is served now, swapped whole.
//! - [`strategy`] — the write rules: server-owned fields on create and update, admission of an
//!   object (default → prune → validate → CEL, with ratcheting; definition validation for the
//!   definitions API), `generation`, finalizers and deletion marks; [`fields`] — field
//!   management (`managedFields`, server-side apply's merge). One place, whoever writes.
//! - [`store`] — the write verbs (create, update — patch and apply are updates — delete,
//!   deletecollection) for every resource, kube's `genericregistry.Store`: the order of a
//!   write's steps, admission (the server's, passed in as a [`store::Admission`]), dry run,
//!   `generateName` retries, finalizers and deletion marks, the retry loop.
//! - [`storage`] — the one storage boundary: stored bytes ↔ objects at a version (read-side
//!   schema steps, conversion, `resourceVersion`), for single objects and batches alike; REST,
//!   migration and the controllers all cross it here; [`render`] — the cache of objects
//!   rendered as JSON at a version (never what a webhook converted).
//! - [`versions`] — the resource's versions as server-side apply's structured merge judges
//!   ownership across them (`versa-merge`'s seam, filled with the boundary's converter).
//! - [`gc`] — the garbage collector's decisions on an owner graph (kube's `ownerReferences`
//!   semantics: background, foreground, orphan, dangling and invalid references), pure.
//! - [`error`] — the write path's [`Error`]; `versa-server` turns it into a `metav1.Status` in
//!   one place.
//! - [`definitions`] — the definitions API's own rules (kube's CRD strategy), with [`dropped`]
//!   — the fields of a document its typed form drops (`fieldValidation`); [`kinds`] —
//!   each kind's write rules, and the core kinds standalone serves, one file each with their
//!   registration table (`kinds::CORE`); [`table`] with
//!   [`jsonpath`] — printer columns; [`meta`] — uids, timestamps, `metadata` access.

pub mod compiled;
pub mod definitions;
pub mod dropped;
pub mod error;
pub mod fields;
pub mod gc;
pub mod jsonpath;
pub mod kinds;
pub mod meta;
mod pack;
pub mod render;
pub mod resource;
pub mod revalidate;
pub mod scale;
pub mod schema_texts;
pub mod served;
pub mod storage;
pub mod store;
pub mod strategy;
pub mod table;
pub mod versions;

pub use error::{Error, Result};
pub use resource::{
    ADMISSION_GROUP, AdmissionKind, Builtin, CRD_GROUP, Compact, Face, Flavor, Resource, Rules, Version, meta_str,
    with_schema,
};
pub use schema_texts::SchemaTexts;
pub use served::{Change, DiscoveryCache, Group, Registry, Snapshot, find_key};
