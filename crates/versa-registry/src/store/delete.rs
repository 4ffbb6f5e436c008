//! Delete and deletecollection, as kube's generic store runs them for resources without
//! graceful deletion: mutating admission once per request (it can only refuse); then, per
//! object, in one read–modify–write: preconditions; validating admission with the object as
//! stored; deletion protection (a definition that still holds objects is refused, with their
//! count); the kind's deletion rule; the finalizers `propagationPolicy` sets (when a garbage
//! collector acts on them); then, while any finalizer remains, the object is only marked
//! (`deletionTimestamp` kept if it was already set, `deletionGracePeriodSeconds: 0`,
//! `generation` moved on the first mark) and answered; otherwise it is deleted and the answer
//! is a `Success` Status. A lost race looks again (preconditions are checked again).

use serde_json::{Value, json};
use versa_admission::Operation;
use versa_storage::{Committed, KeyValue, ReadModifyWrite, Update};

use super::{Admission, Attributes, Decided, Refusal as _, Store};
use crate::error::Error;
use crate::meta::{meta_mut, name_of, set_resource_version};
use crate::strategy::{Deletion, Propagation};

/// The most objects a protected definition's delete counts before saying "at least".
const GUARD_COUNT: u64 = 10_000;

/// kube's `DeleteOptions`, decoded: preconditions, dry run and how dependents are collected.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
    /// How dependents are collected.
    pub propagation: Propagation,
}

impl<A: Admission> Store<'_, A> {
    /// Deletes (or marks) object `name`; answers the object marked, or a `Success` Status.
    pub async fn delete(
        &self,
        name: &str,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Value, A::Error> {
        self.mutate_delete(name, opts, warnings).await?;
        self.delete_one(name, opts, warnings).await
    }

    /// Deletes (or marks) every object `list` gives (awaited after mutating admission of the
    /// collection, as kube lists after it), one by one, passing over those gone meanwhile; answers what was deleted or
    /// marked, as listed, with what else the listing gave (`P`: its revision).
    pub async fn delete_collection<P>(
        &self,
        opts: &DeleteOptions,
        list: impl Future<Output = Result<(Vec<Value>, P), A::Error>>,
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<Value>, P), A::Error> {
        self.mutate_delete("", opts, warnings).await?;
        let (items, listed) = list.await?;
        let mut deleted = Vec::new();
        for obj in items {
            let name = name_of(&obj).to_owned();
            let target = match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
                Some(ns) if self.namespace.is_none() && self.res.namespaced => {
                    Store { namespace: Some(ns), ..self.clone() }.delete_one(&name, opts, warnings).await
                }
                _ => self.delete_one(&name, opts, warnings).await,
            };
            match target {
                Ok(_) => deleted.push(obj),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok((deleted, listed))
    }

    fn delete_attributes<'n>(&self, name: &'n str, opts: &DeleteOptions) -> Attributes<'n>
    where
        Self: 'n,
    {
        Attributes { namespace: self.namespace, name, subresource: "", dry_run: opts.dry_run, field_manager: None }
    }

    /// Mutating admission of a delete of `name` (the collection: empty), once per request.
    async fn mutate_delete(
        &self,
        name: &str,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        self.admission.mutate_delete(&self.delete_attributes(name, opts), warnings).await
    }

    /// Deletes (or marks) one object, in one read–modify–write.
    async fn delete_one(
        &self,
        name: &str,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Value, A::Error> {
        let key = self.key(name);
        let mut rmw = ReadModifyWrite::start(self.storage, &key).await.map_err(Error::from)?;
        loop {
            let (update, decided) = self.decide_delete(name, opts, rmw.current(), warnings).await?;
            let after = match rmw.commit(update).await.map_err(Error::from)? {
                Committed::Raced => continue,
                Committed::Done(after) => after,
            };
            return match (decided, after) {
                (Decided::Answer(obj), _) => Ok(obj),
                (Decided::Written(mut obj), Some(kv)) => {
                    set_resource_version(&mut obj, kv.mod_revision);
                    Ok(obj)
                }
                (Decided::Written(_), None) => Err(Error::internal("the delete left no object behind").into()),
            };
        }
    }

    /// One attempt of [`Store::delete_one`].
    async fn decide_delete(
        &self,
        name: &str,
        opts: &DeleteOptions,
        stored: Option<&KeyValue>,
        warnings: &mut Vec<String>,
    ) -> Result<(Update, Decided), A::Error> {
        let (group, plural) = (&self.res.group, &self.res.plural);
        let current = stored.ok_or_else(|| Error::NotFound {
            group: group.clone(),
            resource: plural.clone(),
            name: name.to_owned(),
        })?;
        let mut obj = self.boundary().from_storage(current).await?;
        let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_owned();
        // kube's rest.BeforeDelete: the conflict names the kind, not the resource.
        let conflict = |why: String| Error::Conflict {
            group: group.clone(),
            resource: self.res.kind.clone(),
            name: name.to_owned(),
            why: Some(why),
        };
        if let Some(want) = &opts.uid
            && *want != uid
        {
            return Err(conflict(format!(
                "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ))
            .into());
        }
        if let Some(want) = &opts.resource_version
            && *want != current.mod_revision.to_string()
        {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({}). The object might have been modified",
                current.mod_revision
            ))
            .into());
        }
        // Validating admission sees the object as stored (kube's DELETE attributes: no object,
        // the old object), after the preconditions, before anything is marked or removed.
        let attrs = self.delete_attributes(name, opts);
        self.admission.validate(&attrs, Operation::Delete, None, Some(&obj), warnings).await?;
        let strategy = self.strategy();
        if let Some((group, plural)) = strategy.deletion_guard(&obj) {
            let (count, at_least) = self.count_objects(&group, &plural).await?;
            if count > 0 {
                let resource = format!("{}.{}", self.res.plural, self.res.group);
                return Err(crate::definitions::protected_refusal(&resource, name, count, at_least).into());
            }
        }
        match strategy.deletion(&obj, name) {
            Deletion::Refuse(e) => return Err(e.into()),
            Deletion::Mark(marked) => return self.mark(opts, marked).await,
            Deletion::Proceed => {}
        }
        let new_finalizers = strategy.finalizers_for_deletion(&obj, &opts.propagation, self.options.garbage_collection);
        if let (Some(finalizers), Some(meta)) = (&new_finalizers, meta_mut(&mut obj)) {
            meta.insert("finalizers".into(), Value::Array(finalizers.clone()));
        }
        if strategy.marked_on_delete(&obj) {
            if obj.pointer("/metadata/deletionTimestamp").is_some() && new_finalizers.is_none() {
                // Marked already, and nothing to change: kube's update is a no-op.
                return Ok((Update::Keep, Decided::Answer(obj)));
            }
            strategy.mark(&mut obj);
            return self.mark(opts, obj).await;
        }
        let success = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": name, "group": group, "kind": plural, "uid": uid},
        });
        let update = if opts.dry_run { Update::Keep } else { Update::Delete };
        Ok((update, Decided::Answer(success)))
    }

    /// How many objects of `group`/`plural` are stored, counting at most [`GUARD_COUNT`] (then
    /// `true`: at least that many).
    async fn count_objects(&self, group: &str, plural: &str) -> Result<(u64, bool), Error> {
        let prefix = self.keys.resource(group, plural);
        let mut options = versa_storage::ListOptions { limit: 1000, ..Default::default() };
        let mut count = 0u64;
        loop {
            let page = self.storage.list(&prefix, options.clone()).await?;
            count += page.items.len() as u64;
            match page.continue_token {
                Some(_) if count >= GUARD_COUNT => return Ok((count, true)),
                Some(token) => options.continue_token = Some(token),
                None => return Ok((count, false)),
            }
        }
    }

    /// A delete's mark: `obj` (marked) is answered as it is on a dry run, else stored.
    async fn mark(&self, opts: &DeleteOptions, obj: Value) -> Result<(Update, Decided), A::Error> {
        if opts.dry_run {
            return Ok((Update::Keep, Decided::Answer(obj)));
        }
        let bytes = self.boundary().to_storage(&obj).await?;
        Ok((Update::Set(bytes), Decided::Written(obj)))
    }
}
