//! Automatic storage migration: after a definition's storage version changes, every object
//! still stored at an older version is rewritten at the storage version, and then
//! `status.storedVersions` is trimmed to the storage version alone.
//!
//! One task per definition that needs it (its `storedVersions` lists more than the storage
//! version), started by the definitions controller. It walks the objects in pages; an object
//! not at the storage version is read at its stored version (defaults applied), converted by
//! the resource's converter (pruned with the storage schema) and written back with
//! compare-and-swap on the revision it read — a conflict means someone else wrote it since,
//! and every write is at the storage version, so it is skipped. Objects are rewritten in
//! groups of [`WRITES_IN_FLIGHT`] at once, and the writes are paced
//! ([`MigrationOptions::rate`](crate::state::MigrationOptions::rate)) on average.
//!
//! Only the leader migrates (`leader.rs`; the definitions controller starts this task in the
//! leader's term and it is cancelled when the term ends), and the walk leaves a checkpoint in
//! the definition's status every [`CHECKPOINT_EVERY`] objects — versa's own field
//! `status.storageMigration` (`storageVersion`, `generation`, `resumeAfter`: the last key
//! examined, relative to the resource's prefix, the counts so far, and `definitionRevision`,
//! which the replicas followed before the walk began) — so that a new leader,
//! or this one after a restart, resumes after that key instead of walking everything again.
//! A checkpoint for another storage version or generation is ignored, and the trim removes it.
//! Even two walks at once (a leader that has not yet noticed it lost) would write each object at
//! most once: every write is compare-and-swap on the revision read, and an object already at
//! the storage version is never written.
//!
//! No walk starts while a replica may still write at an older storage version (issue 22): a
//! pass over a definition stored at revision R first waits until every live replica's record
//! says its writes follow the definitions up to R (`replicas.rs`: each replica publishes, in a
//! record bound to its own lease, the revision its writes follow, once no write of an older
//! one is in flight) — kube's storage version migrator waits for the StorageVersion API in the
//! same way. There is no deadline after which it walks anyway: a live replica that lags would
//! write behind the walk; a dead one's record expires with its lease. And before the trim it
//! reads the records again: a replica that joined during the walk with writes that may have
//! followed an older definition means the walk starts again from the first key. Embedded
//! storage is one process, with nothing to wait for.
//!
//! Progress and trouble are in the definition's status, condition `StorageMigrating`:
//! `True/WaitingForReplicas` naming the replicas that do not follow the definition yet
//! (`True/ReplicasNotFollowing` once that has lasted [`NOT_FOLLOWING_AFTER`]), `True/Migrating`
//! with counts while it runs, `True/MigrationPaused` with the last error when a conversion fails
//! (for instance the webhook is down; it retries with backoff), and `False/MigrationSucceeded`
//! when done. `storedVersions` is trimmed only if the definition's generation is still the one
//! the walk started with.
//!
//! The checkpoint is versa's own status field; updates of the definition through the API carry
//! it over (`versa_registry::definitions`), so a client that writes the definition back in its
//! typed form does not make the walk start again.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_registry::Resource;
use versa_registry::definitions::set_condition;
use versa_registry::meta;
use versa_registry::storage::Boundary;
use versa_registry::{Error, Result};
use versa_storage::{KeyValue, ListOptions, Update, guaranteed_update};

use crate::replicas::{Followers, NOT_FOLLOWING_AFTER};
use crate::state::{MigrationOptions, State};

/// How many objects the walk examines between two checkpoints in the definition's status.
pub const CHECKPOINT_EVERY: u64 = 100;

/// Objects of a page rewritten at once: their conversions run concurrently and the embedded
/// store commits their writes together (one fsync for the group; etcd pipelines them). One by
/// one, each write waited for its own fsync — a few hundred objects a second however fast the
/// pacing, over an hour for a million.
const WRITES_IN_FLIGHT: usize = 50;

/// The status field holding the checkpoint.
pub const CHECKPOINT_FIELD: &str = versa_registry::definitions::MIGRATION_CHECKPOINT_FIELD;

/// How often the records are read while waiting for replicas to follow a definition.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Annotation that asks for a migration of one definition when automatic migration is off
/// (`versa migrate run` sets it); any value works, and the migration clears it when done. It is
/// under `versa.dev/`: of the annotations, compact definitions (what this reads) keep only those.
pub const REQUEST_ANNOTATION: &str = "versa.dev/migrate";

/// Whether a definition needs (and is allowed) a migration now.
pub fn wanted(def: &ResourceDefinition, options: &MigrationOptions) -> bool {
    let Some(storage) = def.storage_version() else { return false };
    let stale = def.stored_versions().iter().any(|v| v != storage);
    let requested = def.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(REQUEST_ANNOTATION));
    stale && def.is_established() && def.metadata.deletion_timestamp.is_none() && (options.automatic || requested)
}

/// Runs one definition's migration to the end (or until shutdown).
pub async fn run(state: Arc<State>, name: String) {
    let mut backoff = Duration::from_millis(500);
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        match pass(&state, &name).await {
            Ok(Outcome::Done | Outcome::NotNeeded) => return,
            Ok(Outcome::Restart) => continue,
            Err(message) => {
                tracing::warn!(definition = %name, error = %message, "storage migration paused");
                state.metrics.migration(&name, false);
                let _ = update_status(&state, &name, |doc| {
                    set_condition(
                        doc,
                        "StorageMigrating",
                        "True",
                        "MigrationPaused",
                        &format!("storage migration is paused and will retry: {message}"),
                        &meta::now(),
                    );
                })
                .await;
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = state.shutdown.cancelled() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

enum Outcome {
    Done,
    NotNeeded,
    /// The definition changed under the walk: start again.
    Restart,
}

/// The definition as stored, with its revision.
pub(crate) async fn load(state: &State, name: &str) -> Result<Option<(KeyValue, ResourceDefinition)>> {
    let key = state.keys.object(versa_apiextensions::types::GROUP, "resourcedefinitions", None, name);
    let Some(kv) = state.store.get(&key).await? else { return Ok(None) };
    let doc: Value = serde_json::from_slice(&kv.value).map_err(|e| Error::internal(e.to_string()))?;
    let def = ResourceDefinition::from_document(&doc).map_err(|e| Error::internal(e.to_string()))?;
    Ok(Some((kv, def)))
}

/// Where an interrupted walk stopped (`status.storageMigration`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// The storage version the walk migrates to.
    pub storage_version: String,
    /// The definition's generation the walk started at.
    pub generation: i64,
    /// The last key examined, relative to the resource's key prefix.
    pub resume_after: String,
    /// Objects examined and rewritten so far.
    pub examined: u64,
    pub migrated: u64,
    /// The revision of the stored definitions every replica's writes followed before the walk
    /// began: what a resumed walk waits for (not the definition's latest revision, which every
    /// checkpoint moves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_revision: Option<i64>,
}

impl Checkpoint {
    /// The checkpoint in a stored definition, if it belongs to this walk.
    fn of(kv: &KeyValue, storage: &str, generation: i64) -> Option<Checkpoint> {
        let doc: Value = serde_json::from_slice(&kv.value).ok()?;
        let checkpoint: Checkpoint = serde_json::from_value(doc.pointer("/status/storageMigration")?.clone()).ok()?;
        (checkpoint.storage_version == storage && checkpoint.generation == generation).then_some(checkpoint)
    }
}

/// One walk over the objects (from the checkpoint, if there is one), then the trim.
async fn pass(state: &Arc<State>, name: &str) -> Result<Outcome> {
    let Some((kv, def)) = load(state, name).await? else { return Ok(Outcome::NotNeeded) };
    if !wanted(&def, &state.migration) {
        return Ok(Outcome::NotNeeded);
    }
    let generation = def.metadata.generation;
    let Some(storage) = def.storage_version().map(str::to_owned) else { return Ok(Outcome::NotNeeded) };
    // The compiled resource of exactly this definition (the registry may lag a moment).
    let snapshot = state.registry.snapshot();
    let res = match snapshot.by_name(name) {
        Some(r) if r.definition.spec == def.spec && r.definition.conversion_cel == def.conversion_cel => r.clone(),
        _ => Arc::new(Resource::build(&def, versa_registry::Compact::of(&def), &state.conversion)),
    };
    let resumed = Checkpoint::of(&kv, &storage, generation.unwrap_or_default());
    // No walk while a replica may still write at the old storage version.
    let revision = resumed.as_ref().and_then(|c| c.definition_revision).unwrap_or(kv.mod_revision);
    let Some(followers) = wait_for_replicas(state, name, revision, &storage, generation).await? else {
        return Ok(Outcome::Restart);
    };
    let prefix = state.keys.resource(&res.group, &res.plural);
    let pause = Duration::from_secs_f64(1.0 / f64::from(state.migration.rate.max(1)));
    let (mut seen, mut migrated) = resumed.as_ref().map_or((0, 0), |c| (c.examined, c.migrated));
    // The last key examined: the walk goes on after it.
    let mut after = resumed.as_ref().map(|checkpoint| {
        tracing::info!(definition = %name, after = %checkpoint.resume_after, seen, migrated, "storage migration resumes");
        format!("{prefix}{}", checkpoint.resume_after)
    });
    loop {
        // A fresh list per page, at the latest revision: the walk follows the keys, and the
        // latest state is what needs migrating. (The store's own token would read every page
        // at the first page's revision, which the walk's writes push out of the history
        // window: a million objects paused with 410 after every 100,000 or so.)
        let continue_token = match &after {
            Some(last) => {
                let now = state.store.current_revision().await?;
                Some(versa_storage::ContinueToken::after(&prefix, last, now).encode())
            }
            None => None,
        };
        let options = ListOptions { limit: 500, continue_token, revision: 0 };
        let page = state.store.list(&prefix, options).await?;
        for chunk in page.items.chunks(WRITES_IN_FLIGHT) {
            let before = seen;
            let written = futures_util::future::join_all(chunk.iter().map(|kv| rewrite(state, &res, kv))).await;
            let mut rewritten: u32 = 0;
            for w in written {
                seen += 1;
                if w? {
                    rewritten += 1;
                    state.metrics.migration(name, true);
                }
            }
            migrated += u64::from(rewritten);
            if rewritten > 0 {
                tokio::select! {
                    () = tokio::time::sleep(pause * rewritten) => {}
                    () = state.shutdown.cancelled() => return Ok(Outcome::Restart),
                }
            }
            let Some(kv) = chunk.last() else { continue };
            if seen / CHECKPOINT_EVERY > before / CHECKPOINT_EVERY {
                let checkpoint = Checkpoint {
                    storage_version: storage.clone(),
                    generation: generation.unwrap_or_default(),
                    resume_after: kv.key.strip_prefix(&prefix).unwrap_or(&kv.key).to_owned(),
                    examined: seen,
                    migrated,
                    definition_revision: Some(revision),
                };
                let message = format!("migrated {migrated} objects to {storage} ({seen} examined)");
                let _ = update_status_if(state, name, |def_now, doc| {
                    if def_now.metadata.generation != generation {
                        return false;
                    }
                    set_condition(doc, "StorageMigrating", "True", "Migrating", &message, &meta::now());
                    if let (Some(st), Ok(c)) =
                        (doc.get_mut("status").and_then(Value::as_object_mut), serde_json::to_value(&checkpoint))
                    {
                        st.insert(CHECKPOINT_FIELD.into(), c);
                    }
                    true
                })
                .await;
            }
        }
        match (page.continue_token, page.items.last()) {
            (Some(_), Some(last)) => after = Some(last.key.clone()),
            _ => break,
        }
    }
    // A replica that joined during the walk may have written behind it at an older version:
    // wait for it, and walk everything again.
    let late = state.replicas.joined_behind(&followers.members, revision).await.map_err(records_error)?;
    if !late.is_empty() {
        tracing::warn!(definition = %name, replicas = ?late, "replicas joined during the walk following an older definition: walking again");
        update_status_if(state, name, |_, doc| {
            doc.get_mut("status").and_then(Value::as_object_mut).and_then(|st| st.remove(CHECKPOINT_FIELD)).is_some()
        })
        .await?;
        return Ok(Outcome::Restart);
    }
    // Every object is at the storage version: trim, if the definition is still the one walked.
    let trimmed = update_status_if(state, name, |def_now, doc| {
        if def_now.metadata.generation != generation || def_now.storage_version() != Some(storage.as_str()) {
            return false;
        }
        if let Some(st) = doc.get_mut("status").and_then(Value::as_object_mut) {
            st.insert("storedVersions".into(), json!([storage]));
            st.remove(CHECKPOINT_FIELD);
        }
        if let Some(a) = doc.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
            a.remove(REQUEST_ANNOTATION);
        }
        let message = format!("all {seen} objects are stored at {storage} ({migrated} rewritten)");
        set_condition(doc, "StorageMigrating", "False", "MigrationSucceeded", &message, &meta::now());
        true
    })
    .await?;
    if trimmed {
        tracing::info!(definition = %name, seen, migrated, "storage migration done");
        Ok(Outcome::Done)
    } else {
        Ok(Outcome::Restart)
    }
}

/// Waits until every live replica's writes follow the definitions up to `revision`, saying in
/// the definition's condition whom it waits for. `None`: the server is shutting down.
async fn wait_for_replicas(
    state: &State,
    name: &str,
    revision: i64,
    storage: &str,
    generation: Option<i64>,
) -> Result<Option<Followers>> {
    let started = tokio::time::Instant::now();
    let mut said: Option<(Vec<String>, bool)> = None;
    loop {
        let followers = state.replicas.followers(revision).await.map_err(records_error)?;
        if followers.behind.is_empty() {
            if said.is_some() {
                tracing::info!(definition = %name, revision, "every replica follows the definition: migrating");
            }
            return Ok(Some(followers));
        }
        let stuck = started.elapsed() >= NOT_FOLLOWING_AFTER;
        let now = (followers.behind.clone(), stuck);
        if said.as_ref() != Some(&now) {
            let (behind, total) = (followers.behind.len(), followers.members.len());
            let list = followers.behind.join(", ");
            let (reason, message) = if stuck {
                let ttl = state.replicas.record_ttl().unwrap_or_default().as_secs();
                tracing::warn!(definition = %name, revision, replicas = %list, "replicas do not follow the definition: the storage migration waits");
                (
                    "ReplicasNotFollowing",
                    format!(
                        "{behind} of {total} replicas have not followed the definition (storage version {storage}) for over {}s and may still write at an older version; the migration waits for them: {list} (see their logs; a replica that stops renews nothing, and its record expires after {ttl}s)",
                        NOT_FOLLOWING_AFTER.as_secs()
                    ),
                )
            } else {
                tracing::info!(definition = %name, revision, replicas = %list, "waiting for replicas to follow the definition before migrating");
                (
                    "WaitingForReplicas",
                    format!(
                        "waiting for {behind} of {total} replicas to follow the definition (storage version {storage}) before migrating: {list}"
                    ),
                )
            };
            let _ = update_status_if(state, name, |def_now, doc| {
                if def_now.metadata.generation != generation {
                    return false;
                }
                set_condition(doc, "StorageMigrating", "True", reason, &message, &meta::now());
                true
            })
            .await;
            said = Some(now);
        }
        tokio::select! {
            () = tokio::time::sleep(FOLLOW_POLL) => {}
            () = state.shutdown.cancelled() => return Ok(None),
        }
    }
}

fn records_error(e: versa_storage::lock::LockError) -> Error {
    Error::internal(format!("reading the replicas' records: {e}"))
}

/// Rewrites one object at the storage version if it is not there yet (the storage boundary's
/// [`Boundary::restored`]). Returns whether it wrote.
async fn rewrite(state: &State, res: &Resource, kv: &KeyValue) -> Result<bool> {
    let boundary = Boundary::new(res, &res.storage_version, &state.metrics);
    let Some(bytes) = boundary.restored(kv).await? else { return Ok(false) };
    match state.store.update(&kv.key, bytes, kv.mod_revision).await {
        Ok(_) => Ok(true),
        // Written (at the storage version) or deleted meanwhile: nothing left to do.
        Err(versa_storage::Error::Conflict { .. } | versa_storage::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Changes the definition's stored document with compare-and-swap (retrying lost races).
async fn update_status(state: &State, name: &str, change: impl Fn(&mut Value)) -> Result<bool> {
    update_status_if(state, name, |_, doc| {
        change(doc);
        true
    })
    .await
}

/// Like [`update_status`], but `change` may decline (returns false) after seeing the
/// definition as it is now.
pub(crate) async fn update_status_if(
    state: &State,
    name: &str,
    change: impl Fn(&ResourceDefinition, &mut Value) -> bool,
) -> Result<bool> {
    let key = state.keys.object(versa_apiextensions::types::GROUP, "resourcedefinitions", None, name);
    let mut changed = false;
    guaranteed_update::<Error, _>(&*state.store, &key, |current| {
        changed = false;
        let Some(kv) = current else { return Ok(Update::Keep) };
        let internal = |e: serde_json::Error| Error::internal(e.to_string());
        let mut doc: Value = serde_json::from_slice(&kv.value).map_err(internal)?;
        let def = ResourceDefinition::from_document(&doc).map_err(|e| Error::internal(e.to_string()))?;
        if !change(&def, &mut doc) {
            return Ok(Update::Keep);
        }
        changed = true;
        serde_json::to_vec(&doc).map(|v| Update::Set(Bytes::from(v))).map_err(internal)
    })
    .await?;
    Ok(changed)
}
