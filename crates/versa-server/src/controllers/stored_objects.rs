//! What a definition change does to the objects already stored (issue 39): after the spec of an
//! established definition with stored objects changes (a generation past the first), the leader
//! judges every stored object by the new definition (`versa_registry::revalidate`: read at each
//! served version, validated as a create would be) and says so in the definition's condition
//! `StoredObjectsValid` — `True`/`AllValid` with the count, or `False`/`SomeInvalid` naming the
//! first failing objects and their first errors — with the generation judged as the condition's
//! `observedGeneration`. A change the objects were already judged for starts nothing; a newer
//! change meanwhile is judged next (the condition is written only for the generation walked).
//!
//! The walk is one consistent list, page by page ([`PAGE`] objects in memory at a time), and
//! bounded in time ([`check`]'s budget): past it the condition says how many were checked. A
//! dry run of a definition update (`kubectl apply --dry-run=server`) asks [`check`] the same
//! question with a shorter budget and answers with warnings.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use versa_apiextensions::ResourceDefinition;
use versa_registry::definitions::set_condition;
use versa_registry::revalidate::Report;
use versa_registry::{Resource, Result, meta};
use versa_storage::ListOptions;

use crate::controllers::migration::update_status_if;
use crate::state::State;

/// The condition's type.
pub const CONDITION: &str = "StoredObjectsValid";

/// Objects read (and held) at a time.
const PAGE: usize = 500;

/// How long the leader's walk may take before the condition settles for a count.
const CONDITION_BUDGET: Duration = Duration::from_secs(300);

/// What a walk found, and whether it saw every object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub report: Report,
    /// Every stored object was judged (the budget was not exhausted).
    pub complete: bool,
}

impl Checked {
    /// One sentence on the result: counts, and the failing objects named.
    pub fn message(&self) -> String {
        self.sentence("fail")
    }

    /// [`Checked::message`] about a change not made yet: what would fail.
    pub fn would(&self) -> String {
        self.sentence("would fail")
    }

    fn sentence(&self, fail: &str) -> String {
        let r = &self.report;
        let seen = if self.complete {
            format!("{} stored objects", r.checked)
        } else {
            format!("{} stored objects checked in the time allowed (more remain)", r.checked)
        };
        let unreadable = if r.unreadable > 0 {
            format!("; {} could not be converted to every served version", r.unreadable)
        } else {
            String::new()
        };
        if r.invalid == 0 {
            return format!("all {seen} are valid{unreadable}");
        }
        format!(
            "{} of {seen} {fail} validation{unreadable}: {}; they stay updatable while an update leaves their invalid values unchanged (ratcheting)",
            r.invalid,
            r.named()
        )
    }
}

/// Judges every object stored under `res` by `res` (usually a changed definition not yet
/// served), for at most `budget`.
pub async fn check(state: &State, res: &Resource, budget: Duration) -> Result<Checked> {
    let started = Instant::now();
    let prefix = state.keys.resource(&res.group, &res.plural);
    let mut checked = Checked::default();
    let mut continue_token = None;
    loop {
        let page = state.store.list(&prefix, ListOptions { limit: PAGE, continue_token, revision: 0 }).await?;
        checked.report.judge(res, &page.items, &state.metrics).await;
        match page.continue_token {
            Some(token) if started.elapsed() < budget => continue_token = Some(token),
            Some(_) => return Ok(checked),
            None => {
                checked.complete = true;
                return Ok(checked);
            }
        }
    }
}

/// How long a dry run of a definition change may spend judging the stored objects.
const DRY_RUN_BUDGET: Duration = Duration::from_secs(10);

/// What a dry run of a change to the definition `doc` (its stored form) warns about the stored
/// objects: `None` when every one checked is valid and readable.
pub async fn dry_run_warning(state: &State, doc: &Value) -> Option<String> {
    let def = ResourceDefinition::from_document(doc).ok()?;
    if !def.is_established() {
        return None;
    }
    let res = Resource::build(&def, versa_registry::Compact::of(&def), &state.conversion);
    match check(state, &res, DRY_RUN_BUDGET).await {
        Ok(checked) if checked.report.invalid == 0 && checked.report.unreadable == 0 && checked.complete => None,
        Ok(checked) => Some(format!("stored objects: {}", checked.would())),
        Err(e) => Some(format!("stored objects could not be checked against this change: {e}")),
    }
}

/// Whether the leader should judge the stored objects of `def`: an established, live
/// definition whose spec changed after its creation, not judged at this generation yet.
pub fn wanted(def: &ResourceDefinition) -> bool {
    let generation = def.metadata.generation.unwrap_or(1);
    let judged = def
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == CONDITION))
        .and_then(|c| c.observed_generation);
    generation > 1 && judged != Some(generation) && def.is_established() && def.metadata.deletion_timestamp.is_none()
}

/// Judges the stored objects of definition `name` at its current generation and writes the
/// condition; again while the definition changed meanwhile (a write for a generation no longer
/// current is dropped, and would bring no new event).
pub async fn run(state: Arc<State>, name: String) {
    let mut judged = None;
    loop {
        match judge(&state, &name, judged).await {
            Ok(Some(generation)) => judged = Some(generation),
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(definition = %name, error = %e, "cannot judge the stored objects");
                return;
            }
        }
    }
}

/// One judgement, unless the definition needs none or was judged at `judged` already: the
/// generation judged.
async fn judge(state: &State, name: &str, judged: Option<Option<i64>>) -> Result<Option<Option<i64>>> {
    let Some((_, def)) = crate::controllers::migration::load(state, name).await? else { return Ok(None) };
    let generation = def.metadata.generation;
    if !wanted(&def) || judged == Some(generation) {
        return Ok(None);
    }
    let res = Resource::build(&def, versa_registry::Compact::of(&def), &state.conversion);
    let checked = check(state, &res, CONDITION_BUDGET).await?;
    let (status, reason) = if checked.report.invalid == 0 { ("True", "AllValid") } else { ("False", "SomeInvalid") };
    let message = checked.message();
    update_status_if(state, name, |now, doc| {
        if now.metadata.generation != generation {
            return false;
        }
        set_condition(doc, CONDITION, status, reason, &message, &meta::now());
        if let Some(Value::Array(conds)) = doc.pointer_mut("/status/conditions")
            && let Some(c) = conds.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION))
        {
            c["observedGeneration"] = json!(generation);
        }
        true
    })
    .await?;
    Ok(Some(generation))
}
