//! The store: the write verbs — create, update (patch and apply are updates), delete and
//! deletecollection — for every resource, in the shape of kube's `genericregistry.Store`. The
//! order of a write's steps is written here, once:
//!
//! - create ([`Store::create`], `create.rs`): the strategy's decoding, `managedFields`,
//!   namespace lifecycle and mutating admission, then the server-owned fields, validation and
//!   validating admission, then storage (a `generateName` drawn again while the name is taken);
//! - update ([`Store::update`], `update.rs`): one read–modify–write; the caller's
//!   [`UpdatedObject`] makes the new object from the current one inside the retry loop (kube's
//!   `rest.UpdatedObjectInfo`), so an update, a patch and an apply differ only there; the
//!   update rules run on it, and a write that removes a marked object's last finalizer deletes
//!   it;
//! - delete and deletecollection ([`Store::delete`], `delete.rs`): preconditions, validating
//!   admission, the kind's deletion rule, finalizers (those `propagationPolicy` sets, too) and
//!   the deletion mark.
//!
//! Admission is the server's: it comes in as an [`Admission`], and its refusals are the
//! server's error type, which the store hands back untouched (the store's own errors become it
//! through `From<Error>`). Objects cross into storage only through the
//! [`crate::storage::Boundary`]. Dry runs run every step and store nothing.

mod create;
mod delete;
mod update;

use std::future::Future;

use serde_json::Value;
use versa_admission::Operation;
use versa_storage::{KeyValue, Keys};

pub use self::delete::DeleteOptions;
pub use self::update::{Updated, UpdatedObject};
use crate::error::Error;
use crate::fields::Manager;
use crate::meta::set_resource_version;
use crate::resource::{Resource, Version};
use crate::storage::{Boundary, Observer};
use crate::strategy::{Checks, FieldValidation, Part, Strategy};
use crate::versions::Conversions;

/// Who a write's admission is about, besides the resource and the user (the server's to know).
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    /// `status`, `scale`, `finalize`, or empty.
    pub subresource: &'static str,
    pub dry_run: bool,
    /// The request's `fieldManager` (none for deletes).
    pub field_manager: Option<&'a str>,
}

/// The server's admission chain, as the store calls it (kube's `admission.Interface`, mutating
/// and validating). Objects are at the request version; through `/scale`, the `Scale`.
pub trait Admission: Sync {
    /// The server's error; the store's own errors become one.
    type Error: Refusal;

    /// Namespace lifecycle: nothing written in a namespace that does not exist or is going.
    fn lifecycle(
        &self,
        attrs: &Attributes<'_>,
        operation: Operation,
        object: &Value,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Mutating admission of `object`; whether it changed it.
    fn mutate(
        &self,
        attrs: &Attributes<'_>,
        operation: Operation,
        object: &mut Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Mutating admission of a delete (of one object, or of the collection: no name), which it
    /// can only refuse.
    fn mutate_delete(
        &self,
        attrs: &Attributes<'_>,
        warnings: &mut Vec<String>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Validating admission of the object about to be stored (`None`: a delete).
    fn validate(
        &self,
        attrs: &Attributes<'_>,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// What the store asks of an error: the two refusals it acts on.
pub trait Refusal: From<Error> + Send {
    /// The name is taken (a `generateName` create draws another).
    fn is_already_exists(&self) -> bool;
    /// The object is gone (deletecollection passes over it).
    fn is_not_found(&self) -> bool;
}

/// The request's write options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// `dryRun=All`: every step, nothing stored.
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// The request's `fieldManager`, for admission.
    pub field_manager: Option<&'a str>,
    /// Whether a garbage collector acts on the propagation finalizers (cluster mode).
    pub garbage_collection: bool,
}

/// The write verbs of one resource at one version, in one namespace (or none).
pub struct Store<'a, A> {
    pub res: &'a Resource,
    /// The request version.
    pub ver: &'a Version,
    pub storage: &'a dyn versa_storage::Store,
    pub keys: &'a Keys,
    pub observer: &'a dyn Observer,
    /// The request's webhook conversions for `managedFields` (made between runs of the merge:
    /// `versions.rs`); the server's apply answers from the same.
    pub conversions: &'a Conversions,
    pub admission: &'a A,
    pub namespace: Option<&'a str>,
    pub options: Options<'a>,
}

impl<A> Clone for Store<'_, A> {
    fn clone(&self) -> Self {
        Store { ..*self }
    }
}

impl<A> std::fmt::Debug for Store<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("resource", &self.res.plural).field("version", &self.ver.name).finish()
    }
}

/// What happens to `managedFields` on a write.
#[derive(Clone, Copy, Debug)]
pub enum Fields<'a> {
    /// Records the manager's change (create, update, non-apply patch).
    Track(&'a Manager),
    /// Nothing: an apply has computed them already.
    Applied,
    /// None at all: the object was too large to store with them (kube's create, update and
    /// non-apply patch then drop `managedFields` and try once more).
    Dropped,
}

/// What a write is, besides the object: which part of it may change, the duplicate fields its
/// body had (for `fieldValidation`), and what happens to `managedFields`.
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    pub part: Part,
    /// The subresource written through: `status`, `scale`, `finalize`, or empty.
    pub subresource: &'static str,
    pub duplicates: &'a [String],
    pub fields: Fields<'a>,
    /// The object was decoded from the body already (an update's), its fields reported.
    pub decoded: bool,
}

/// What one attempt of a write decided, besides the store operation.
enum Decided {
    /// The answer, whatever storage does (dry runs, no change, a delete).
    Answer(Value),
    /// This object is written; the answer is it with its new revision.
    Written(Value),
}

impl<'a, A: Admission> Store<'a, A> {
    /// The write rules at the request version.
    pub fn strategy(&self) -> Strategy<'a> {
        Strategy::new(self.res, self.ver)
    }

    /// The storage boundary at the request version.
    pub fn boundary(&self) -> Boundary<'a> {
        Boundary::new(self.res, &self.ver.name, self.observer)
    }

    /// The storage key of object `name`.
    pub fn key(&self, name: &str) -> String {
        let (group, plural) = self.res.stored_as();
        self.keys.object(group, plural, self.namespace, name)
    }

    fn attributes<'n>(&'n self, name: &'n str, subresource: &'static str) -> Attributes<'n> {
        Attributes {
            namespace: self.namespace,
            name,
            subresource,
            dry_run: self.options.dry_run,
            field_manager: self.options.field_manager,
        }
    }

    fn checks<'d>(&self, write: &Write<'d>) -> Checks<'d> {
        Checks { field_validation: self.options.field_validation, duplicates: write.duplicates }
    }

    /// The strategy's decoding of a request's object (defaults, pruning, `fieldValidation`).
    fn decode(&self, obj: &mut Value, write: &Write<'_>, warnings: &mut Vec<String>) -> Result<(), A::Error> {
        Ok(self.strategy().decode(obj, self.checks(write), warnings)?)
    }

    /// `managedFields` of the manager's change from `live` to `new`. A failure of the
    /// bookkeeping (kube's "should not happen") is logged and the object keeps no
    /// `managedFields`, as kube's field manager does on create, update and patch
    /// (`UpdateNoErrors`).
    async fn track(&self, write: &Write<'_>, name: &str, live: Option<&Value>, new: &mut Value) {
        match write.fields {
            Fields::Track(manager) => {
                if let Err(e) = self.strategy().track(manager, live, new, self.conversions, self.observer).await {
                    tracing::error!(resource = %self.res.plural, name, error = %e, "dropping managedFields");
                }
            }
            Fields::Dropped => {
                drop_managed_fields(new);
            }
            Fields::Applied => {}
        }
    }

    /// Mutating admission on the object a write makes. Through the scale subresource admission
    /// sees the `Scale` (the new one and the old), and its mutated `spec.replicas` is taken back
    /// into the object's spec replicas path, as kube's scale subresource applies the admitted
    /// Scale.
    async fn mutating_admission(
        &self,
        write: &Write<'_>,
        name: &str,
        operation: Operation,
        obj: &mut Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        let attrs = self.attributes(name, write.subresource);
        self.admission.lifecycle(&attrs, operation, obj).await?;
        match (write.subresource, &self.ver.scale) {
            ("scale", Some(spec)) => {
                let Some(mut scale) = crate::scale::to_scale(obj, spec) else { return Ok(()) };
                let old_scale = old.and_then(|o| crate::scale::to_scale(o, spec));
                if !self.admission.mutate(&attrs, operation, &mut scale, old_scale.as_ref(), warnings).await? {
                    return Ok(());
                }
                match scale.pointer("/spec/replicas") {
                    Some(Value::Number(n)) if n.is_i64() => {
                        crate::scale::set_path(obj, &spec.spec_replicas_path, Value::Number(n.clone()));
                        Ok(())
                    }
                    other => Err(Error::BadRequest(format!(
                        "spec.replicas: Invalid value: {}: must be an integer",
                        other.unwrap_or(&Value::Null)
                    ))
                    .into()),
                }
            }
            _ => self.admission.mutate(&attrs, operation, obj, old, warnings).await.map(|_| ()),
        }
    }

    /// Validating admission on the object about to be stored (through `/scale`, its `Scale`).
    async fn validating_admission(
        &self,
        write: &Write<'_>,
        name: &str,
        operation: Operation,
        obj: Option<&Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        // Through /scale the objects are Scales made here; otherwise they are passed as they are
        // (not copied: a definition is tens of KiB).
        let scales;
        let (obj, old) = match (write.subresource, &self.ver.scale) {
            ("scale", Some(spec)) => {
                scales = (
                    obj.and_then(|o| crate::scale::to_scale(o, spec)),
                    old.and_then(|o| crate::scale::to_scale(o, spec)),
                );
                (scales.0.as_ref(), scales.1.as_ref())
            }
            _ => (obj, old),
        };
        let attrs = self.attributes(name, write.subresource);
        self.admission.validate(&attrs, operation, obj, old, warnings).await
    }

    /// The answer to a stored write at the request version: the object as admitted with its
    /// new resourceVersion (what reading it back would give, without reading it back), or —
    /// when it is stored at another version — the stored object converted back, as kube
    /// answers.
    async fn answer_of(&self, mut obj: Value, kv: &KeyValue) -> Result<Value, A::Error> {
        let boundary = self.boundary();
        if boundary.stored_elsewhere() {
            return Ok(boundary.from_storage(kv).await?);
        }
        set_resource_version(&mut obj, kv.mod_revision);
        Ok(obj)
    }
}

/// Removes `metadata.managedFields`; whether there were any. A write refused by storage as too
/// large is tried once more without them, as kube's handlers do: they are bookkeeping (often
/// the larger part of a big object), and storing the object matters more.
fn drop_managed_fields(obj: &mut Value) -> bool {
    obj.get_mut("metadata").and_then(Value::as_object_mut).and_then(|meta| meta.remove("managedFields")).is_some()
}
