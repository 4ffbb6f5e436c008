//! Update: the one read–modify–write of an object, for every verb that changes one (update,
//! patch, apply, the scale subresource), on storage's `ReadModifyWrite`. The caller's
//! [`UpdatedObject`] is given the current object at the request version (with its stored
//! form) — or nothing when there is none — and returns the object to write, or refuses
//! (preconditions, a patch that does not apply, "not found") — an apply whose merge needs a
//! webhook's conversions is given them between its runs (`Conversions::settle`, `versions.rs`),
//! and only its last run counts; then the update rules run on it,
//! in kube's order: the object decoded; `managedFields`; namespace lifecycle and mutating
//! admission; the subresource rules and server-owned fields; validation; `generation`;
//! validating admission (the create rules when there was nothing: an apply that creates). It is
//! stored with compare-and-swap; a lost race reads again and makes again. An update that
//! removes a marked object's last finalizer deletes it; one that changes nothing writes nothing
//! (the resourceVersion stays, as kube's `GuaranteedUpdate`); a dry run stores nothing. An
//! update or non-apply patch too large for storage with its `managedFields` is made once more
//! without them ([`super::Fields::Dropped`]), as kube's handlers do; an apply is not.

use serde_json::Value;
use versa_admission::Operation;
use versa_storage::{Committed, KeyValue, ReadModifyWrite, Update};

use super::{Admission, Decided, Fields, Store, Write};
use crate::error::Error;

/// kube's `rest.UpdatedObjectInfo`: the object an update writes, made from the current one
/// (`None` when there is none) inside the retry loop; warnings go to the `Vec`.
pub trait UpdatedObject<E>: FnMut(Option<(&KeyValue, &Value)>, &mut Vec<String>) -> Result<Value, E> {}

impl<E, F> UpdatedObject<E> for F where F: FnMut(Option<(&KeyValue, &Value)>, &mut Vec<String>) -> Result<Value, E> {}

/// What an update wrote.
#[derive(Debug)]
pub struct Updated {
    /// The object as stored (on a dry run, as it would be).
    pub object: Value,
    /// Whether it was created (an apply of an object that did not exist).
    pub created: bool,
    /// A dry run of a change that the kind wants judged against the objects already stored
    /// ([`crate::strategy::Strategy::judges_stored_objects`]: a definition's schema): the
    /// server walks them and warns.
    pub judge_stored_objects: bool,
}

impl<A: Admission> Store<'_, A> {
    /// Updates object `name` with what `updated` makes of the current one (see the module's
    /// documentation).
    pub async fn update(
        &self,
        name: &str,
        mut write: Write<'_>,
        mut updated: impl UpdatedObject<A::Error>,
        warnings: &mut Vec<String>,
    ) -> Result<Updated, A::Error> {
        let key = self.key(name);
        let mut rmw = ReadModifyWrite::start(self.storage, &key).await.map_err(Error::from)?;
        loop {
            let (update, decided, created, judge_stored_objects) =
                self.decide(name, &write, &mut updated, rmw.current(), warnings).await?;
            let after = match rmw.commit(update).await {
                Ok(Committed::Raced) => continue,
                Ok(Committed::Done(after)) => after,
                // Too large with its `managedFields`: made once more without them, as kube's
                // update and patch (not an apply, whose fields are what it is about).
                Err(versa_storage::Error::TooLarge { .. }) if matches!(write.fields, Fields::Track(_)) => {
                    write.fields = Fields::Dropped;
                    continue;
                }
                Err(e) => return Err(Error::from(e).into()),
            };
            let object = match (decided, after) {
                (Decided::Answer(obj), _) => obj,
                (Decided::Written(obj), Some(kv)) => self.answer_of(obj, &kv).await?,
                (Decided::Written(_), None) => return Err(Error::internal("the write left no object behind").into()),
            };
            return Ok(Updated { object, created, judge_stored_objects });
        }
    }

    /// One attempt of [`Store::update`]: the object made from `stored`, the rules, and the
    /// store operation.
    async fn decide(
        &self,
        name: &str,
        write: &Write<'_>,
        updated: &mut impl UpdatedObject<A::Error>,
        stored: Option<&KeyValue>,
        warnings: &mut Vec<String>,
    ) -> Result<(Update, Decided, bool, bool), A::Error> {
        let dry_run = self.options.dry_run;
        let Some(kv) = stored else {
            let mut obj = self.updated_object(updated, None, write, warnings).await?;
            self.create_rules(&mut obj, name, write, warnings).await?;
            if dry_run {
                return Ok((Update::Keep, Decided::Answer(obj), true, false));
            }
            let bytes = self.boundary().to_storage(&obj).await?;
            return Ok((Update::Set(bytes), Decided::Written(obj), true, false));
        };
        let old = self.boundary().from_storage(kv).await?;
        let mut new = self.updated_object(updated, Some((kv, &old)), write, warnings).await?;
        self.update_rules(&mut new, &old, name, write, warnings).await?;
        let judge = dry_run && self.strategy().judges_stored_objects(&new, &old);
        if self.strategy().deleted_by_update(&new, &old) {
            // The last finalizer is gone: the object goes.
            let update = if dry_run { Update::Keep } else { Update::Delete };
            return Ok((update, Decided::Answer(new), false, judge));
        }
        let bytes = self.boundary().to_storage(&new).await?;
        // Nothing changed, and nothing to rewrite (a value sealed with a key that no longer
        // writes is rewritten, as kube does: key rotation).
        if bytes == kv.value && !self.storage.stale(kv) {
            return Ok((Update::Keep, Decided::Answer(old), false, judge));
        }
        if dry_run {
            return Ok((Update::Keep, Decided::Answer(new), false, judge));
        }
        Ok((Update::Set(bytes), Decided::Written(new), false, judge))
    }

    /// What `updated` makes of `current`. An apply's merge may need a webhook's conversions
    /// (`managedFields` at other versions): `updated` is run until it has them all
    /// ([`crate::versions::Conversions::settle`]), and only the last run's warnings count.
    async fn updated_object(
        &self,
        updated: &mut impl UpdatedObject<A::Error>,
        current: Option<(&KeyValue, &Value)>,
        write: &Write<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Value, A::Error> {
        if let (Fields::Applied, Some((_, old))) = (write.fields, current) {
            let api_version = self.res.api_version(&self.ver.name);
            self.conversions.foresee(self.res, &api_version, &[old], &[old]);
        }
        let run = || {
            let mut said = Vec::new();
            (updated(current, &mut said), said)
        };
        let (made, mut said) = self.conversions.settle(self.res, self.observer, run).await?;
        warnings.append(&mut said);
        made
    }

    /// The update rules on the object a write makes from the current one (`old`), in kube's
    /// order (see the module's documentation).
    async fn update_rules(
        &self,
        new: &mut Value,
        old: &Value,
        name: &str,
        write: &Write<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        let strategy = self.strategy();
        if !write.decoded {
            self.decode(new, write, warnings)?;
        }
        self.track(write, name, Some(old), new).await;
        self.mutating_admission(write, name, Operation::Update, new, Some(old), warnings).await?;
        strategy.prepare_update(new, old, write.part);
        strategy.validate(new, Some(old), write.part, warnings)?;
        strategy.set_generation(new, old, write.part);
        self.validating_admission(write, name, Operation::Update, Some(new), Some(old), warnings).await
    }
}
