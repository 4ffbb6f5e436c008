//! Automatic storage migration: after a definition's storage version changes, every object
//! still stored at an older version is rewritten at the storage version, and then
//! `status.storedVersions` is trimmed to the storage version alone.
//!
//! One task per definition that needs it (its `storedVersions` lists more than the storage
//! version), started by the definitions controller. It walks the objects in pages; an object
//! not at the storage version is read at its stored version (defaults applied), converted by
//! the resource's converter (pruned with the storage schema) and written back with
//! compare-and-swap on the revision it read — a conflict means someone else wrote it since,
//! and every write is at the storage version, so it is skipped. Writes are paced
//! ([`MigrationOptions::rate`]). Nothing is remembered between runs: after a restart the walk
//! starts again and passes quickly over objects already migrated.
//!
//! Progress and trouble are in the definition's status, condition `StorageMigrating`:
//! `True/Migrating` with counts while it runs, `True/MigrationPaused` with the last error when a
//! conversion fails (for instance the webhook is down; it retries with backoff), and
//! `False/MigrationSucceeded` when done. `storedVersions` is trimmed only if the definition's
//! generation is still the one the walk started with.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_storage::{KeyValue, ListOptions};

use crate::definitions::set_condition;
use crate::handler::State;
use crate::meta;
use crate::registry::Resource;

/// How migrations run.
#[derive(Debug, Clone)]
pub struct MigrationOptions {
    /// Migrate automatically when the storage version changes.
    pub automatic: bool,
    /// Objects rewritten per second at most.
    pub rate: u32,
}

impl Default for MigrationOptions {
    fn default() -> Self {
        MigrationOptions { automatic: true, rate: 200 }
    }
}

/// Annotation that asks for a migration of one definition when automatic migration is off
/// (`versa migrate run` sets it); any value works, and the migration clears it when done.
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
async fn load(state: &State, name: &str) -> Result<Option<(KeyValue, ResourceDefinition)>, String> {
    let key = state.keys.object(versa_apiextensions::types::GROUP, "resourcedefinitions", None, name);
    let Some(kv) = state.store.get(&key).await.map_err(|e| e.to_string())? else { return Ok(None) };
    let doc: Value = serde_json::from_slice(&kv.value).map_err(|e| e.to_string())?;
    let def = ResourceDefinition::from_document(&doc).map_err(|e| e.to_string())?;
    Ok(Some((kv, def)))
}

/// One walk over the objects, then the trim.
async fn pass(state: &Arc<State>, name: &str) -> Result<Outcome, String> {
    let Some((_, def)) = load(state, name).await? else { return Ok(Outcome::NotNeeded) };
    if !wanted(&def, &state.migration) {
        return Ok(Outcome::NotNeeded);
    }
    let generation = def.metadata.generation;
    let Some(storage) = def.storage_version().map(str::to_owned) else { return Ok(Outcome::NotNeeded) };
    // The compiled resource of exactly this definition (the registry may lag a moment).
    let snapshot = state.registry.snapshot();
    let res = match snapshot.by_name(name) {
        Some(r) if r.definition.spec == def.spec && r.definition.conversion_cel == def.conversion_cel => r.clone(),
        _ => Arc::new(Resource::build(&def, crate::registry::Compact::of(&def), &state.conversion)),
    };
    let prefix = state.keys.resource(&res.group, &res.plural);
    let pause = Duration::from_secs_f64(1.0 / f64::from(state.migration.rate.max(1)));
    let (mut seen, mut migrated) = (0u64, 0u64);
    let mut token = None;
    loop {
        let options = ListOptions { limit: 500, continue_token: token.take(), revision: 0 };
        let page = state.store.list(&prefix, options).await.map_err(|e| e.to_string())?;
        for kv in &page.items {
            seen += 1;
            if rewrite(state, &res, kv, &storage).await? {
                migrated += 1;
                state.metrics.migration(name, true);
                if migrated.is_multiple_of(100) {
                    let message = format!("migrated {migrated} objects to {storage} ({seen} examined)");
                    let _ = update_status(state, name, |doc| {
                        set_condition(doc, "StorageMigrating", "True", "Migrating", &message, &meta::now());
                    })
                    .await;
                }
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = state.shutdown.cancelled() => return Ok(Outcome::Restart),
                }
            }
        }
        // A fresh list per page: the walk follows the keys, and the latest state is what
        // needs migrating.
        match page.continue_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    // Every object is at the storage version: trim, if the definition is still the one walked.
    let trimmed = update_status_if(state, name, |def_now, doc| {
        if def_now.metadata.generation != generation || def_now.storage_version() != Some(storage.as_str()) {
            return false;
        }
        if let Some(st) = doc.get_mut("status").and_then(Value::as_object_mut) {
            st.insert("storedVersions".into(), json!([storage]));
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

/// Rewrites one object at the storage version if it is not there yet. Returns whether it wrote.
async fn rewrite(state: &State, res: &Resource, kv: &KeyValue, storage: &str) -> Result<bool, String> {
    let mut obj: Value = serde_json::from_slice(&kv.value).map_err(|e| format!("{}: {e}", kv.key))?;
    let at = obj.get("apiVersion").and_then(Value::as_str).and_then(|a| a.split_once('/')).map(|(_, v)| v.to_owned());
    let Some(at) = at else { return Ok(false) };
    if at == storage {
        return Ok(false);
    }
    if let Some(schema) = res.version(&at).and_then(|v| v.schema.as_deref()) {
        versa_schema::pipeline::on_read(&mut obj, schema);
    }
    let converter = res.converter.as_ref().map_err(Clone::clone)?;
    let started = std::time::Instant::now();
    let converted = converter.convert(vec![obj], storage).await;
    let name = res.definition.name();
    state.metrics.conversion(name, converter.strategy(), converted.is_ok(), started.elapsed().as_secs_f64());
    let mut converted = converted.map_err(|e| e.message)?;
    let mut obj = converted.pop().ok_or_else(|| format!("{}: the converter returned no object", kv.key))?;
    if !obj.is_object() {
        return Err(format!("{}: the converter returned a non-object", kv.key));
    }
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    let bytes = Bytes::from(serde_json::to_vec(&obj).map_err(|e| e.to_string())?);
    match state.store.update(&kv.key, bytes, kv.mod_revision).await {
        Ok(_) => Ok(true),
        // Written (at the storage version) or deleted meanwhile: nothing left to do.
        Err(versa_storage::Error::Conflict { .. } | versa_storage::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// Changes the definition's stored document with compare-and-swap (retrying lost races).
async fn update_status(state: &State, name: &str, change: impl Fn(&mut Value)) -> Result<bool, String> {
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
) -> Result<bool, String> {
    for _ in 0..16 {
        let Some((kv, def)) = load(state, name).await? else { return Ok(false) };
        let mut doc: Value = serde_json::from_slice(&kv.value).map_err(|e| e.to_string())?;
        if !change(&def, &mut doc) {
            return Ok(false);
        }
        let bytes = Bytes::from(serde_json::to_vec(&doc).map_err(|e| e.to_string())?);
        match state.store.update(&kv.key, bytes, kv.mod_revision).await {
            Ok(_) => return Ok(true),
            Err(versa_storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!("definition {name} kept changing"))
}
