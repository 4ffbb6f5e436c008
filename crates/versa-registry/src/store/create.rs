//! Create: the create rules in kube's order, then storage. No creates while the definition is
//! terminating; the object decoded (defaults, pruning, `fieldValidation`); `managedFields`;
//! namespace lifecycle and mutating admission; then, for each name tried, the server-owned
//! fields, validation, validating admission and the store (`AlreadyExists` if the name is
//! taken — after admission, as kube answers). An object with `generateName` and no name (after
//! mutating admission) gets its name here, drawn again while the name drawn is taken, up to
//! [`NAME_GENERATION_ATTEMPTS`] names, as kube's store retries its create. An object too large
//! for storage with its `managedFields` is stored without them, as kube's create handler tries
//! once more.

use serde_json::{Value, json};
use versa_admission::Operation;
use versa_schema::pipeline;

use super::{Admission, Fields, Refusal, Store, Write};
use crate::error::{Error, qualified};
use crate::fields::Manager;
use crate::meta::{self, name_of};
use crate::strategy::Part;

/// How many names a create with `generateName` draws before it answers `AlreadyExists` (kube's
/// `maxNameGenerationCreateAttempts`).
const NAME_GENERATION_ATTEMPTS: usize = 8;

impl<A: Admission> Store<'_, A> {
    /// Creates `obj` (decoded, in the request's namespace), recording `manager`'s fields; the
    /// body's `duplicates` are reported as `fieldValidation` says. Answers the object as stored
    /// (on a dry run, as it would be).
    pub async fn create(
        &self,
        mut obj: Value,
        duplicates: &[String],
        manager: &Manager,
        warnings: &mut Vec<String>,
    ) -> Result<Value, A::Error> {
        let write =
            Write { part: Part::Main, subresource: "", duplicates, fields: Fields::Track(manager), decoded: false };
        // A `generateName` becomes a name after mutating admission, which sees the object
        // without one, as kube's does.
        let name = name_of(&obj).to_owned();
        self.create_decode_and_mutate(&mut obj, &name, &write, warnings).await?;
        if !needs_generated_name(&obj) {
            self.create_checks(&mut obj, &name, &write, warnings).await?;
            return self.store_new(obj, &name).await;
        }
        let mut attempt = CreateAttempt { store: self, write: &write, warnings_before: warnings.len() };
        with_generated_names(warnings, &obj, NAME_GENERATION_ATTEMPTS, meta::name_suffix, &mut attempt).await
    }

    /// The create rules of any create (a POST, an apply of an object that does not exist yet):
    /// up to mutating admission, then the checks.
    pub(super) async fn create_rules(
        &self,
        obj: &mut Value,
        name: &str,
        write: &Write<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        self.create_decode_and_mutate(obj, name, write, warnings).await?;
        self.create_checks(obj, name, write, warnings).await
    }

    /// The create rules up to mutating admission (see the module's documentation).
    async fn create_decode_and_mutate(
        &self,
        obj: &mut Value,
        name: &str,
        write: &Write<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        let res = self.res;
        if res.terminating {
            // kube's admission.NewForbidden: `<resource>.<group> "<name>" is forbidden: <why>`.
            let who = qualified(&res.group, &res.plural);
            let subject = if name.is_empty() { who } else { format!("{who} {name:?}") };
            return Err(Error::Forbidden {
                message: format!(
                    "{subject} is forbidden: create not allowed while custom resource definition is terminating"
                ),
                details: Some(json!({"name": name, "group": res.group, "kind": res.plural})),
            }
            .into());
        }
        self.decode(obj, write, warnings)?;
        self.track(write, name, None, obj).await;
        self.mutating_admission(write, name, Operation::Create, obj, None, warnings).await
    }

    /// The create rules after mutating admission: the server-owned fields; validation;
    /// validating admission. Run again for each name a `generateName` retry draws.
    async fn create_checks(
        &self,
        obj: &mut Value,
        name: &str,
        write: &Write<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<(), A::Error> {
        let strategy = self.strategy();
        strategy.prepare_create(obj);
        strategy.validate(obj, None, Part::Main, warnings)?;
        self.validating_admission(write, name, Operation::Create, Some(obj), None, warnings).await
    }

    /// Stores a created object (or, on a dry run, says whether it could be).
    async fn store_new(&self, mut obj: Value, name: &str) -> Result<Value, A::Error> {
        let key = self.key(name);
        let res = self.res;
        let storage_error = |e| Error::storage(e, &res.group, &res.plural, name);
        if self.options.dry_run {
            // A dry run answers what the real create would, including AlreadyExists.
            if self.storage.get(&key).await.map_err(storage_error)?.is_some() {
                return Err(Error::AlreadyExists {
                    group: res.group.clone(),
                    resource: res.plural.clone(),
                    name: name.to_owned(),
                }
                .into());
            }
            return Ok(obj);
        }
        let bytes = self.boundary().to_storage(&obj).await?;
        let kv = match self.storage.create(&key, bytes).await {
            // Too large with its `managedFields`: once more without them, as kube's create.
            Err(versa_storage::Error::TooLarge { .. }) if super::drop_managed_fields(&mut obj) => {
                let bytes = self.boundary().to_storage(&obj).await?;
                self.storage.create(&key, bytes).await
            }
            stored => stored,
        }
        .map_err(storage_error)?;
        self.answer_of(obj, &kv).await
    }
}

/// Whether `obj` has a `generateName` and no name.
fn needs_generated_name(obj: &Value) -> bool {
    let meta = obj.get("metadata");
    let text = |field: &str| meta.and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("");
    text("name").is_empty() && !text("generateName").is_empty()
}

/// One try of a write with a name drawn for it; `C` is what the tries share (the warnings).
trait Attempt<C, T, E> {
    async fn attempt(&mut self, shared: &mut C, candidate: Value) -> Result<T, E>;
}

/// One attempt of a create with a generated name: the checks after mutating admission, then
/// the store. Warnings of earlier attempts are dropped.
struct CreateAttempt<'s, 'a, 'w, A> {
    store: &'s Store<'a, A>,
    write: &'s Write<'w>,
    warnings_before: usize,
}

impl<A: Admission> Attempt<Vec<String>, Value, A::Error> for CreateAttempt<'_, '_, '_, A> {
    async fn attempt(&mut self, warnings: &mut Vec<String>, mut candidate: Value) -> Result<Value, A::Error> {
        warnings.truncate(self.warnings_before);
        let name = name_of(&candidate).to_owned();
        self.store.create_checks(&mut candidate, &name, self.write, warnings).await?;
        self.store.store_new(candidate, &name).await
    }
}

/// Runs `attempt` on `obj` named from its `generateName` with a suffix from `suffix`, again with
/// a new suffix while it answers `AlreadyExists`, at most `attempts` times.
async fn with_generated_names<C, T, E: Refusal>(
    shared: &mut C,
    obj: &Value,
    attempts: usize,
    mut suffix: impl FnMut() -> String,
    attempt: &mut impl Attempt<C, T, E>,
) -> Result<T, E> {
    let mut result = Err(Error::internal("no name was generated").into());
    for _ in 0..attempts {
        let mut candidate = obj.clone();
        pipeline::generate_name(&mut candidate, &suffix());
        result = attempt.attempt(shared, candidate).await;
        if !matches!(&result, Err(e) if e.is_already_exists()) {
            break;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::{Value, json};

    use super::{Attempt, with_generated_names};
    use crate::error::Error;
    use crate::store::Refusal;

    impl Refusal for Error {
        fn is_already_exists(&self) -> bool {
            matches!(self, Error::AlreadyExists { .. })
        }
        fn is_not_found(&self) -> bool {
            matches!(self, Error::NotFound { .. })
        }
    }

    /// A create that refuses the names it holds (`web-bad` with another error).
    struct Taken<'a>(&'a [&'a str]);

    impl Attempt<Vec<String>, String, Error> for Taken<'_> {
        async fn attempt(&mut self, tried: &mut Vec<String>, candidate: Value) -> Result<String, Error> {
            let name = candidate["metadata"]["name"].as_str().unwrap().to_owned();
            tried.push(name.clone());
            if self.0.contains(&name.as_str()) {
                return Err(Error::AlreadyExists { group: String::new(), resource: "things".into(), name });
            }
            if name == "web-bad" {
                return Err(Error::BadRequest("refused".into()));
            }
            Ok(name)
        }
    }

    /// A create that refuses the names in `taken` (`web-bad` with another error): which names
    /// were tried, and the answer.
    fn create(taken: &[&str], suffixes: &[&str], attempts: usize) -> (Vec<String>, Result<String, &'static str>) {
        let obj = json!({"metadata": {"generateName": "web-"}});
        let mut suffixes = suffixes.iter().map(|s| s.to_string());
        let mut tried: Vec<String> = Vec::new();
        let mut attempt = Taken(taken);
        let run = with_generated_names(&mut tried, &obj, attempts, || suffixes.next().unwrap(), &mut attempt);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let result = runtime.block_on(run).map_err(|e| match e {
            Error::AlreadyExists { .. } => "AlreadyExists",
            Error::BadRequest(_) => "BadRequest",
            _ => "other",
        });
        (tried, result)
    }

    #[test]
    fn a_generated_name_that_is_taken_is_drawn_again() {
        // (taken, suffixes drawn, attempts, names tried, answer)
        type Case<'a> = (&'a [&'a str], &'a [&'a str], usize, &'a [&'a str], Result<&'a str, &'a str>);
        let cases: &[Case] = &[
            (&[], &["aaaaa"], 8, &["web-aaaaa"], Ok("web-aaaaa")),
            (
                &["web-aaaaa", "web-bbbbb"],
                &["aaaaa", "bbbbb", "ccccc"],
                8,
                &["web-aaaaa", "web-bbbbb", "web-ccccc"],
                Ok("web-ccccc"),
            ),
            (&["web-a", "web-b"], &["a", "b", "c"], 2, &["web-a", "web-b"], Err("AlreadyExists")),
            // Any other refusal is the answer at once.
            (&[], &["bad", "ccccc"], 8, &["web-bad"], Err("BadRequest")),
        ];
        for (taken, suffixes, attempts, want_tried, want) in cases {
            let (tried, result) = create(taken, suffixes, *attempts);
            assert_eq!(tried, *want_tried, "taken {taken:?}");
            assert_eq!(result.as_deref().map_err(|e| *e), *want, "taken {taken:?}");
        }
    }
}
