//! Stored objects judged by a definition they were not written under: what a definition change
//! does to the objects a server already holds (issue 39). Each object is read at every served
//! version of the new definition — through the storage boundary, so with its conversion, the
//! read-side defaults and pruning — and validated there as a create would be (the whole object,
//! no ratcheting: ratcheting would pass every unchanged object). The walk over storage, its
//! budget and what is made of the [`Report`] (warnings on a dry run, a condition after a real
//! change) are the caller's; this judges pages and keeps counts and a bounded sample.

use versa_storage::KeyValue;

use crate::error::Error;
use crate::resource::Resource;
use crate::storage::{Boundary, Observer};
use crate::strategy::{Part, Strategy};

/// How many failing objects a report names.
pub const SAMPLE: usize = 10;

/// What the stored objects make of a definition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Objects judged.
    pub checked: u64,
    /// Objects that fail validation at one served version or more.
    pub invalid: u64,
    /// Objects that could not be read at a served version (a conversion that failed).
    pub unreadable: u64,
    /// The first [`SAMPLE`] failing objects.
    pub samples: Vec<Sample>,
}

/// One failing object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// `namespace/name`, or `name` when cluster-scoped.
    pub object: String,
    /// The version it fails at.
    pub version: String,
    /// The first error, as kubectl prints it (`spec.replicas: Invalid value: ...`).
    pub error: String,
}

impl Report {
    /// Judges a page of stored objects of `res`.
    pub async fn judge(&mut self, res: &Resource, kvs: &[KeyValue], observer: &dyn Observer) {
        let mut failed = vec![None::<Sample>; kvs.len()];
        let mut unreadable = vec![false; kvs.len()];
        for ver in res.versions.iter().filter(|v| v.served) {
            let boundary = Boundary::new(res, &ver.name, observer);
            let Ok(objects) = boundary.from_storage_batch(kvs).await else {
                // One object the converter refuses fails the batch: read them one by one.
                for (i, kv) in kvs.iter().enumerate() {
                    match boundary.from_storage(kv).await {
                        Ok(obj) => judge_one(res, ver, obj, &mut failed[i]),
                        Err(_) => unreadable[i] = true,
                    }
                }
                continue;
            };
            for (i, obj) in objects.into_iter().enumerate() {
                judge_one(res, ver, obj, &mut failed[i]);
            }
        }
        self.checked += kvs.len() as u64;
        self.unreadable += unreadable.iter().filter(|u| **u).count() as u64;
        for sample in failed.into_iter().flatten() {
            self.invalid += 1;
            if self.samples.len() < SAMPLE {
                self.samples.push(sample);
            }
        }
    }

    /// The failing objects named, `; `-separated: `ns/a (v1): spec.x: Invalid value: ...`.
    pub fn named(&self) -> String {
        self.samples.iter().map(|s| format!("{} ({}): {}", s.object, s.version, s.error)).collect::<Vec<_>>().join("; ")
    }
}

/// Validates `obj` at `ver` as a create would; records the first failure of the object.
fn judge_one(res: &Resource, ver: &crate::resource::Version, mut obj: serde_json::Value, failed: &mut Option<Sample>) {
    if failed.is_some() {
        return;
    }
    let mut warnings = Vec::new();
    let Err(e) = Strategy::new(res, ver).validate(&mut obj, None, Part::Main, &mut warnings) else { return };
    let error = match &e {
        Error::Invalid { errors, .. } => errors.iter().next().map_or_else(|| e.to_string(), ToString::to_string),
        other => other.to_string(),
    };
    let meta =
        |field: &str| obj.pointer(&format!("/metadata/{field}")).and_then(serde_json::Value::as_str).unwrap_or("");
    let object = match meta("namespace") {
        "" => meta("name").to_owned(),
        ns => format!("{ns}/{}", meta("name")),
    };
    *failed = Some(Sample { object, version: ver.name.clone(), error });
}
