//! A resource's versions as structured merge reads them: server-side apply and `managedFields`
//! judge an entry written at another version on the objects converted there
//! (`versa_merge::Versions`), with the resource's own conversion, observed like the storage
//! boundary's.
//!
//! The merge is synchronous; a conversion webhook is not. `None` and `CEL` conversions run in
//! process, inside the merge. For a `Webhook` definition the merge is answered from a
//! request's [`Conversions`]: the webhook is called *between* runs of the merge, never inside
//! one. A run that asks for a conversion not made yet is told it cannot have it, and it is
//! noted; [`Conversions::settle`] then makes every noted conversion (one webhook call per
//! target version, the objects batched, as the storage boundary does) and runs the merge again,
//! until a run asks for nothing new, whose result is the merge's. The merge is a function of
//! its inputs and the answers, so each run repeats the last one's conversions and gets one
//! further (only a run's first miss is noted: after it the merge may go on without the answer,
//! and what it then converts is not what it would have). The objects the first conversions
//! need (the live and new objects at the versions of their `managedFields` entries) are asked
//! for ahead ([`Conversions::foresee`]), so that an update needs one round of calls and an
//! apply two (the merged object is the merge's). Pruning an applier at the version of its
//! last apply converts objects made during the merge: each is one more round.
//! A webhook's answers are kept for the one request only.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use serde_json::Value;
use versa_merge::{ConvertError, Versions};
use versa_schema::Structural;

use crate::error::{Error, Result};
use crate::resource::Resource;
use crate::storage::Observer;

/// How many rounds of webhook calls one merge of a resource with `n` versions may take: each
/// round makes the one conversion a run lacked, and pruning an applier across `n` versions
/// converts about `3n + 4` objects one after the other. More is a merge this does not expect.
fn max_rounds(n: usize) -> usize {
    4 * n + 8
}

/// The webhook conversions of one request's merges: made between runs, answered from during
/// them (see the module's documentation). Kept for one request only.
#[derive(Debug, Default)]
pub struct Conversions {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Conversions made: the object, the version it was converted to, the answer.
    made: Vec<(Value, String, Result<Value, ConvertError>)>,
    /// Conversions asked for and not made yet: the object and the version.
    wanted: Vec<(Value, String)>,
}

impl State {
    fn answer(&self, obj: &Value, version: &str) -> Option<&Result<Value, ConvertError>> {
        self.made.iter().find(|(o, v, _)| v == version && o == obj).map(|(_, _, answer)| answer)
    }

    fn want(&mut self, obj: &Value, version: &str) {
        if self.answer(obj, version).is_none() && !self.wanted.iter().any(|(o, v)| v == version && o == obj) {
            self.wanted.push((obj.clone(), version.to_owned()));
        }
    }
}

impl Conversions {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks ahead for what a merge at `api_version` converts first: each of `objects`
    /// (without its `managedFields`) to every other version an entry of `managed`'s
    /// `managedFields` was written at. Only a webhook's conversions are made ahead.
    pub fn foresee(&self, res: &Resource, api_version: &str, objects: &[&Value], managed: &[&Value]) {
        let webhook = res.converter().is_ok_and(|c| !c.is_deterministic());
        if !webhook || res.versions.len() < 2 {
            return;
        }
        let mut versions: Vec<&str> = Vec::new();
        for obj in managed {
            let entries = obj.pointer("/metadata/managedFields").and_then(Value::as_array);
            for entry in entries.into_iter().flatten() {
                let Some(at) = entry.get("apiVersion").and_then(Value::as_str) else { continue };
                if at != api_version
                    && !versions.contains(&at)
                    && version_of(res, at).and_then(|v| res.version(v)).is_some_and(|v| v.schema().is_some())
                {
                    versions.push(at);
                }
            }
        }
        if versions.is_empty() {
            return;
        }
        let mut state = self.state();
        for obj in objects {
            let mut obj = (*obj).clone();
            if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
                meta.remove("managedFields");
            }
            for at in &versions {
                if let Some(version) = version_of(res, at) {
                    state.want(&obj, version);
                }
            }
        }
    }

    /// Runs `merge` until a run asks for no conversion that has not been made, making the
    /// ones asked for between runs; the last run's result. More rounds than [`max_rounds`] is
    /// an internal error (the merge is not what this expects of it).
    pub async fn settle<T>(&self, res: &Resource, observer: &dyn Observer, mut merge: impl FnMut() -> T) -> Result<T> {
        let rounds = max_rounds(res.versions.len());
        for _ in 0..rounds {
            self.make(res, observer).await;
            let result = merge();
            if self.state().wanted.is_empty() {
                return Ok(result);
            }
        }
        Err(Error::internal(format!("the conversions of managedFields did not settle in {rounds} rounds")))
    }

    /// Makes the conversions asked for: one converter call per target version.
    async fn make(&self, res: &Resource, observer: &dyn Observer) {
        let wanted = std::mem::take(&mut self.state().wanted);
        if wanted.is_empty() {
            return;
        }
        let mut versions: Vec<&str> = wanted.iter().map(|(_, v)| v.as_str()).collect();
        versions.sort_unstable();
        versions.dedup();
        for version in versions {
            let objects: Vec<Value> = wanted.iter().filter(|(_, v)| v == version).map(|(o, _)| o.clone()).collect();
            let answers: Vec<Result<Value, ConvertError>> = match res.converter() {
                Err(e) => vec![Err(ConvertError::Failed(e)); objects.len()],
                Ok(converter) => {
                    let started = Instant::now();
                    let converted = converter.convert(objects.clone(), version).await;
                    let seconds = started.elapsed().as_secs_f64();
                    let ok = converted.as_ref().is_ok_and(|all| all.len() == objects.len());
                    observer.conversion(res.definition.name(), converter.strategy(), ok, seconds);
                    match converted {
                        Ok(all) if ok => all.into_iter().map(Ok).collect(),
                        Ok(_) => {
                            let e = ConvertError::Failed("the conversion returned another number of objects".into());
                            vec![Err(e); objects.len()]
                        }
                        Err(e) => vec![Err(ConvertError::Failed(e.to_string())); objects.len()],
                    }
                }
            };
            let mut state = self.state();
            for (obj, answer) in objects.into_iter().zip(answers) {
                state.made.push((obj, version.to_owned(), answer));
            }
        }
    }
}

/// `version` of `group/version`, for `res`'s group.
fn version_of<'v>(res: &Resource, api_version: &'v str) -> Option<&'v str> {
    match res.group.as_str() {
        "" => Some(api_version),
        group => api_version.strip_prefix(group)?.strip_prefix('/'),
    }
}

/// [`Versions`] of one resource, for one merge of a request.
pub struct MergeVersions<'a> {
    res: &'a Resource,
    conversions: &'a Conversions,
    observer: &'a dyn Observer,
    /// Each version's schema, held for the merge (the resource may drop its compiled state
    /// meanwhile, `crate::compiled`), by the version's index.
    schemas: Box<[OnceLock<Option<Arc<Structural>>>]>,
}

impl std::fmt::Debug for MergeVersions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeVersions").field("resource", &self.res.plural).finish()
    }
}

impl<'a> MergeVersions<'a> {
    /// A webhook's conversions come from `conversions`, which the merge must be run through
    /// ([`Conversions::settle`]).
    pub fn new(res: &'a Resource, conversions: &'a Conversions, observer: &'a dyn Observer) -> MergeVersions<'a> {
        let schemas = res.versions.iter().map(|_| OnceLock::new()).collect();
        MergeVersions { res, conversions, observer, schemas }
    }

    /// Whether there is more than one version to judge entries at (and a converter to do it).
    pub fn offered(&self) -> bool {
        self.res.versions.len() > 1 && self.res.converter().is_ok()
    }
}

impl Versions for MergeVersions<'_> {
    fn schema(&self, api_version: &str) -> Option<&Structural> {
        let version = version_of(self.res, api_version)?;
        let index = self.res.versions.iter().position(|v| v.name == version)?;
        let schema = self.schemas.get(index)?.get_or_init(|| self.res.versions[index].schema());
        schema.as_deref()
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, ConvertError> {
        let version =
            version_of(self.res, api_version).ok_or_else(|| ConvertError::NotAVersion(api_version.to_owned()))?;
        let converter = self.res.converter().map_err(ConvertError::Failed)?;
        if !converter.is_deterministic() {
            // Made between runs: this run is repeated once it is.
            let mut state = self.conversions.state();
            if let Some(answer) = state.answer(obj, version) {
                return answer.clone();
            }
            // Only a run's first miss is noted: what the run does after it (the merge may carry
            // on without the conversion) is not the merge's, and its objects are not the
            // webhook's to see.
            if state.wanted.is_empty() {
                state.want(obj, version);
            }
            return Err(ConvertError::Pending(api_version.to_owned()));
        }
        let started = Instant::now();
        let converted = converter.convert_sync(obj.clone(), version).map_err(|e| ConvertError::Failed(e.to_string()));
        let seconds = started.elapsed().as_secs_f64();
        self.observer.conversion(self.res.definition.name(), converter.strategy(), converted.is_ok(), seconds);
        converted
    }
}
