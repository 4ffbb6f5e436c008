//! versa-conversion: the conversion broker. It converts objects between the versions of one
//! definition, as kube-apiserver converts custom resources (k8s.io/apiextensions-apiserver
//! `pkg/apiserver/conversion`).
//!
//! A [`Converter`] is built once per definition change ([`Converter::new`]) and shared behind an
//! `Arc`. [`Converter::convert`] takes a batch — a list page, a watch burst, one object — and
//! returns it at the target version in the same order:
//!
//! 1. the target and every object's `apiVersion` must be versions of the definition;
//! 2. objects already at the target are returned as they are;
//! 3. the others are converted by the definition's strategy — `None` sets `apiVersion`;
//!    `Webhook` sends them in **one** `ConversionReview` (objects made of only `apiVersion` and
//!    `kind` are converted locally, as kube does) and checks the answer exactly as kube does;
//!    `CEL` (versa's declarative conversion) runs the definition's rules in process (`cel`),
//!    keeping what a round trip would lose in an annotation and restoring it on the way back
//!    (`lossless`);
//! 4. each converted object is pruned with the target version's schema and its metadata coerced
//!    (kube's `schemaCoercingConverter`). With `None` this is where a field renamed between
//!    versions silently disappears.
//!
//! Errors are [`ConversionError`]s whose message is kube's text; kube-apiserver answers them
//! with status 500. Module map: `gv` (Go's spelling of group-versions), `review` (the review
//! and the checks on the answer), `converted` (the checks on each converted object, the
//! metadata rule), [`client`] (the HTTPS call, also admission webhooks'), `webhook` (the strategy), `cel` and `lossless`
//! (the CEL strategy), [`samples`] (the definition-time checks of CEL rules on generated
//! objects).

mod cel;
mod converted;
mod gv;
mod lossless;
mod parallel;
#[cfg(test)]
mod reference;
mod review;
pub mod samples;
mod webhook;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceValidation;
use serde_json::{Map, Value};
use versa_apiextensions::ResourceDefinition;
use versa_schema::Structural;
use versa_schema::field::go_quote;
use versa_schema::objectmeta::Malformed;

pub use crate::cel::CelRuleError;
use crate::cel::{CelConverter, Hop};
use crate::converted::Finish;
use crate::gv::{GroupVersion, str_field};
use crate::parallel::{PARALLEL_MIN, in_two};
use crate::webhook::WebhookConverter;

pub use crate::converted::InvalidObject;
pub use crate::lossless::ANNOTATION as CONVERSION_DATA_ANNOTATION;
pub use versa_webhook::MIN_RESPONSE_LIMIT;

/// The `Established` condition reason kube sets when the webhook `caBundle` is invalid.
pub const INVALID_CA_BUNDLE_REASON: &str = "InvalidCABundle";
/// The `Established` condition message that goes with [`INVALID_CA_BUNDLE_REASON`].
pub const INVALID_CA_BUNDLE_MESSAGE: &str = "The conversion webhook CABundle is invalid";

/// Options for building converters.
#[derive(Debug, Clone)]
pub struct Options {
    /// The limit on one webhook call, connection and answer included; zero means none. Kube's
    /// is 30 s and cannot be changed.
    pub webhook_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { webhook_timeout: Duration::from_secs(30) }
    }
}

/// Converts objects between the versions of one definition. Built once per definition change;
/// cheap to share (`Send + Sync`, used behind `Arc`); a webhook's connections are pooled in it.
#[derive(Debug)]
pub struct Converter {
    group: String,
    /// Every version of the definition, served or not.
    versions: Vec<String>,
    schemas: HashMap<String, Arc<Structural>>,
    /// Versions whose schemas are identical share a class: a `None` conversion between them
    /// only changes `apiVersion` (see [`Converter::convert`]).
    schema_class: HashMap<String, usize>,
    /// `spec.preserveUnknownFields` is false: converted objects are pruned.
    prune: bool,
    strategy: Strategy,
}

#[derive(Debug)]
enum Strategy {
    None,
    Webhook(Box<WebhookConverter>),
    Cel {
        rules: Box<CelConverter>,
        /// Keep what a round trip would lose (`cel.allowLoss` is false).
        lossless: bool,
    },
}

/// A conversion that failed. `Display` is the whole message the API answers with: kube's text,
/// e.g. `conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post "https://...": ...`
/// — naming, as kube does, the group, version and kind of the object being converted (the
/// version it is at), not the target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// The version asked for is not one of the definition's.
    #[error("request to convert CR to an invalid group/version: {0}")]
    InvalidTarget(String),
    /// An object's `apiVersion` is not one of the definition's group-versions.
    #[error("request to convert CR from an invalid group/version: {0}")]
    InvalidSource(String),
    /// The webhook could not be called, or answered an HTTP error.
    #[error("conversion webhook for {gvk} failed: {error}")]
    WebhookCall {
        gvk: String,
        #[source]
        error: versa_webhook::PostError,
    },
    /// The webhook's `ConversionReview` answer was refused (a failed result, a wrong uid, an
    /// answer that does not decode).
    #[error("conversion webhook for {gvk} failed: {reason}")]
    WebhookFailed { gvk: String, reason: String },
    /// The webhook answered another number of objects than it was sent.
    #[error("conversion webhook for {gvk} returned {returned} objects, expected {expected}")]
    WrongCount { gvk: String, returned: usize, expected: usize },
    /// An object the webhook answered was refused.
    #[error(transparent)]
    InvalidObject(#[from] InvalidObject),
    /// The CEL rules failed on an object, or no rules lead between the two versions (the
    /// rules' own text).
    #[error(transparent)]
    Rules(CelRuleError),
    /// A `Webhook` converter was asked to convert without a runtime ([`Converter::convert_sync`]).
    #[error("a Webhook conversion needs its webhook")]
    NeedsWebhook,
    /// The converter's own failure (a helper thread that failed, an object it lost).
    #[error("{0}")]
    Internal(String),
}

/// An object converted for a read ([`Converter::convert_for_reading`]): a value, or — for an
/// object a webhook converted, when nothing in it needed pruning and its metadata is the
/// original's — the JSON text `serde_json` writes for that value, with its `metadata` (the
/// reader's selectors need it). Both forms write the same bytes.
#[derive(Clone, PartialEq)]
pub enum Converted {
    Value(Value),
    Json {
        /// The whole object, as `serde_json::to_vec` writes it.
        json: Vec<u8>,
        /// Its `metadata`.
        metadata: Map<String, Value>,
    },
}

impl std::fmt::Debug for Converted {
    /// The text as text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Converted::Value(v) => f.debug_tuple("Value").field(v).finish(),
            Converted::Json { json, .. } => f.debug_tuple("Json").field(&String::from_utf8_lossy(json)).finish(),
        }
    }
}

impl Converted {
    /// The object as a value (text is parsed).
    pub fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Converted::Value(v) => Ok(v),
            Converted::Json { json, .. } => serde_json::from_slice(&json),
        }
    }

    /// Appends the object's JSON to `out`.
    pub fn write(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            Converted::Value(v) => serde_json::to_writer(out, v),
            Converted::Json { json, .. } => {
                out.extend_from_slice(json);
                Ok(())
            }
        }
    }
}

/// Why a converter cannot be built. kube-apiserver cannot serve a definition's resources then;
/// an invalid `caBundle` also keeps the definition from being `Established`
/// ([`INVALID_CA_BUNDLE_REASON`]).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `spec.conversion.strategy` is neither `None` nor `Webhook`.
    #[error("unknown conversion strategy {} for CRD {definition}", go_quote(.strategy))]
    UnknownStrategy { strategy: String, definition: String },
    /// No entry of `conversionReviewVersions` is `v1` or `v1beta1`. (kube builds the converter
    /// and fails every conversion with this message.)
    #[error("no supported conversion review versions")]
    NoSupportedReviewVersion { versions: Vec<String> },
    /// The webhook's client cannot be built (a `caBundle` without a usable certificate, a URL
    /// that does not parse, TLS that cannot be set up).
    #[error(transparent)]
    Client(#[from] versa_webhook::ClientError),
    /// Neither `clientConfig.url` nor `clientConfig.service` is set.
    #[error("failed calling webhook {}: webhook configuration must have either service or URL", go_quote(.webhook_name))]
    NoEndpoint { webhook_name: String },
    /// `spec.conversion.cel` is missing or its rules do not compile (definition validation
    /// refuses such definitions first).
    #[error("invalid CEL conversion rules: {0}")]
    InvalidCelRules(String),
}

impl BuildError {
    /// Whether this is an invalid `caBundle`, which kube reports on the definition as
    /// `Established=False`, reason [`INVALID_CA_BUNDLE_REASON`], message
    /// [`INVALID_CA_BUNDLE_MESSAGE`].
    pub fn is_invalid_ca_bundle(&self) -> bool {
        matches!(self, BuildError::Client(versa_webhook::ClientError::InvalidCaBundle { .. }))
    }
}

impl Converter {
    /// Builds the converter of `def`. `schemas`: the lowered structural schema of each version
    /// that has one; converted objects are pruned with the target version's (kube's
    /// `schemaCoercingConverter`).
    pub fn new(
        def: &ResourceDefinition,
        schemas: HashMap<String, Arc<Structural>>,
        options: &Options,
    ) -> Result<Converter, BuildError> {
        let spec = &def.spec;
        let strategy = match spec.conversion.as_ref().map_or("None", |c| c.strategy.as_str()) {
            "None" => Strategy::None,
            "Webhook" => Strategy::Webhook(Box::new(WebhookConverter::new(def, options)?)),
            "CEL" => {
                let cel = def
                    .conversion_cel
                    .as_ref()
                    .ok_or_else(|| BuildError::InvalidCelRules("spec.conversion.cel: Required value".to_owned()))?;
                let versions: Vec<String> = spec.versions.iter().map(|v| v.name.clone()).collect();
                let path = versa_schema::Path::new("spec").child("conversion").child("cel");
                let (rules, errs) = versa_apiextensions::cel_conversion::compile(cel, &versions, &schemas, &path);
                if !errs.is_empty() {
                    return Err(BuildError::InvalidCelRules(errs.aggregate()));
                }
                let storage = def.storage_version().unwrap_or_default().to_owned();
                let rules = CelConverter::new(rules, storage, &spec.group, &versions);
                Strategy::Cel { rules: Box::new(rules), lossless: !cel.allow_loss }
            }
            other => {
                return Err(BuildError::UnknownStrategy {
                    strategy: other.to_owned(),
                    definition: def.name().to_owned(),
                });
            }
        };
        // Versions with the same schema, by the schema as written (equal schemas lower to equal
        // structural schemas).
        let mut classes: Vec<&CustomResourceValidation> = Vec::new();
        let mut schema_class = HashMap::new();
        for v in &spec.versions {
            let Some(schema) = v.schema.as_ref() else { continue };
            let class = classes.iter().position(|c| *c == schema).unwrap_or_else(|| {
                classes.push(schema);
                classes.len() - 1
            });
            schema_class.insert(v.name.clone(), class);
        }
        Ok(Converter {
            group: spec.group.clone(),
            versions: spec.versions.iter().map(|v| v.name.clone()).collect(),
            schemas,
            schema_class,
            prune: !spec.preserve_unknown_fields.unwrap_or(false),
            strategy,
        })
    }

    /// `"None"`, `"Webhook"` or `"CEL"`.
    pub fn strategy(&self) -> &'static str {
        match self.strategy {
            Strategy::None => "None",
            Strategy::Webhook(_) => "Webhook",
            Strategy::Cel { .. } => "CEL",
        }
    }

    /// Whether a conversion's result depends only on the object and the definition, so that it
    /// may be kept across requests: `None` and `CEL` (rules compiled from the definition, no
    /// clock, no randomness). A webhook's answers may change at any time (another build rolled
    /// out under the same URL), so they are never kept.
    pub fn is_deterministic(&self) -> bool {
        match self.strategy {
            Strategy::None | Strategy::Cel { .. } => true,
            Strategy::Webhook(_) => false,
        }
    }

    /// Converts `objects` (each at the version its `apiVersion` names) to `to_version`, keeping
    /// their order. With a webhook, one call for the whole batch: only the objects not already at
    /// `to_version` are sent, and not those made of only `apiVersion` and `kind` (kube's
    /// `isEmptyUnstructuredObject`). Objects already at the target are returned as they are.
    ///
    /// The objects must already be pruned and coerced with the schema of the version they are at
    /// (what the server does when it reads or admits them): a `None` conversion between versions
    /// with identical schemas relies on it and only changes `apiVersion`, and a converted
    /// object's metadata, which is the original's, is not coerced again.
    pub async fn convert(&self, objects: Vec<Value>, to_version: &str) -> Result<Vec<Value>, ConversionError> {
        let converted = self.run(objects, to_version, false).await?;
        // Without text asked for, every object is a value.
        converted.into_iter().map(|c| c.into_value().map_err(|e| ConversionError::Internal(e.to_string()))).collect()
    }

    /// [`Converter::convert`] for a read that answers with JSON: an object a webhook converted
    /// may come back as its text ([`Converted::Json`]), which spares parsing it into a value
    /// and writing it out again — most of what checking a large webhook answer costs.
    pub async fn convert_for_reading(
        &self,
        objects: Vec<Value>,
        to_version: &str,
    ) -> Result<Vec<Converted>, ConversionError> {
        self.run(objects, to_version, true).await
    }

    /// [`Converter::convert`] of one object without a runtime, for the strategies that run in
    /// process (`None`, `CEL`): the definition-time sample checks and `versa convert`. A
    /// `Webhook` converter answers with an error.
    pub fn convert_sync(&self, obj: Value, to_version: &str) -> Result<Value, ConversionError> {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        if matches!(self.strategy, Strategy::Webhook(_)) {
            return Err(ConversionError::NeedsWebhook);
        }
        // Nothing awaits without a webhook: the first poll finishes it.
        let run = std::pin::pin!(self.convert(vec![obj], to_version));
        match run.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => {
                result?.pop().ok_or_else(|| ConversionError::Internal("the converter returned no object".into()))
            }
            Poll::Pending => Err(ConversionError::Internal("the conversion did not finish".into())),
        }
    }

    async fn run(
        &self,
        mut objects: Vec<Value>,
        to_version: &str,
        text: bool,
    ) -> Result<Vec<Converted>, ConversionError> {
        let target = GroupVersion { group: &self.group, version: to_version };
        if !self.has_version(to_version) {
            return Err(ConversionError::InvalidTarget(target.to_string()));
        }
        // kube-apiserver converts stored and request objects one at a time, so its users see the
        // single-object message (not `request to convert CR list failed, list index ...`).
        for obj in &objects {
            let gv = GroupVersion::parse(str_field(obj, "apiVersion"));
            if gv.group != self.group || !self.has_version(gv.version) {
                return Err(ConversionError::InvalidSource(gv.to_string()));
            }
        }
        let desired = target.to_string();
        let pending: Vec<usize> =
            (0..objects.len()).filter(|&i| str_field(&objects[i], "apiVersion") != desired).collect();
        let webhook = match &self.strategy {
            Strategy::None => {
                for i in pending {
                    // Objects arrive pruned and coerced with the schema of the version they are
                    // at (read: `on_read` at the stored version; write: admission at the request
                    // version). Pruning and coercing again with an identical schema changes
                    // nothing, so between versions of one schema only `apiVersion` changes.
                    let from = GroupVersion::parse(str_field(&objects[i], "apiVersion")).version;
                    let same = matches!(
                        (self.schema_class.get(from), self.schema_class.get(to_version)),
                        (Some(a), Some(b)) if a == b
                    );
                    if same {
                        set_api_version(&mut objects[i], &desired);
                    } else {
                        self.set_version_and_coerce(&mut objects[i], &desired, to_version);
                    }
                }
                return Ok(objects.into_iter().map(Converted::Value).collect());
            }
            Strategy::Webhook(webhook) => webhook,
            Strategy::Cel { rules, lossless } => {
                let desired = desired.as_str();
                let work = |part: Vec<Value>| -> Result<Vec<Value>, ConversionError> {
                    part.into_iter()
                        .map(|mut obj| {
                            if str_field(&obj, "apiVersion") == desired {
                                return Ok(obj);
                            }
                            if is_empty_object(&obj) {
                                self.set_version_and_coerce(&mut obj, desired, to_version);
                                return Ok(obj);
                            }
                            let from = GroupVersion::parse(str_field(&obj, "apiVersion")).version.to_owned();
                            self.convert_cel(rules, *lossless, obj, &from, to_version)
                        })
                        .collect()
                };
                // A LIST page in two halves at once, as a webhook's answer is checked.
                let converted = if objects.len() >= PARALLEL_MIN {
                    let second = objects.split_off(objects.len() / 2);
                    let (first, second) = in_two(objects, second, work);
                    let mut all = first?;
                    all.extend(
                        second
                            .ok_or_else(|| ConversionError::Internal("conversion: a helper thread failed".into()))??,
                    );
                    all
                } else {
                    work(objects)?
                };
                return Ok(converted.into_iter().map(Converted::Value).collect());
            }
        };
        let (empty, send): (Vec<usize>, Vec<usize>) = pending.into_iter().partition(|&i| is_empty_object(&objects[i]));
        for i in empty {
            self.set_version_and_coerce(&mut objects[i], &desired, to_version);
        }
        // Moved out, not copied: their metadata goes into the converted objects.
        let sent: Vec<Value> = send.iter().map(|&i| std::mem::take(&mut objects[i])).collect();
        let mut out: Vec<Converted> = objects.into_iter().map(Converted::Value).collect();
        if !sent.is_empty() {
            let tree = |obj: &mut Value| self.coerce(obj, to_version);
            // Only pruning (and coercion) may be done on the text; and the original metadata is
            // put back as it is, which needs it coerced already (by its version's schema).
            let coerced = || {
                sent.iter().all(|o| self.schemas.contains_key(GroupVersion::parse(str_field(o, "apiVersion")).version))
            };
            let schema =
                self.schemas.get(to_version).map(Arc::as_ref).filter(|_| text && self.prune).filter(|_| coerced());
            let finish = Finish { tree: &tree, text: schema };
            let converted = webhook.convert(sent, target, finish).await?;
            for (i, obj) in send.into_iter().zip(converted) {
                out[i] = obj;
            }
        }
        Ok(out)
    }

    /// One object by the CEL strategy (`cel`, `lossless`): converted from `from` to `to`, what
    /// the annotation kept restored, and what the way back would lose kept (unless `lossless`
    /// is false).
    fn convert_cel(
        &self,
        rules: &CelConverter,
        lossless: bool,
        mut obj: Value,
        from: &str,
        to: &str,
    ) -> Result<Value, ConversionError> {
        // Never carried over: it belongs to the conversion it was written for.
        let kept = lossless::take(&mut obj);
        if !lossless {
            return self.cel_hops(rules, obj, from, to);
        }
        // Objects arrive as the read path sees them at their version (see `convert`). Only the
        // fields the round trip compares are copied (`lossless::body`).
        let source = lossless::body(&obj);
        let mut converted = self.cel_hops(rules, obj, from, to)?;
        if let Some(data) = kept {
            lossless::restore(&data, &source, &mut converted, from, to);
        }
        let back = self.way_back(rules, &converted, to, from);
        // The converted object as the read path sees it: defaulted too, when the schema has
        // defaults — only needed when something was lost.
        let seen = || match self.schemas.get(to).filter(|s| s.below.defaults) {
            Some(schema) => {
                let mut c = converted.clone();
                versa_schema::pipeline::on_read(&mut c, schema);
                Cow::Owned(c)
            }
            None => Cow::Borrowed(&converted),
        };
        if let Some(text) = lossless::record(&source, &back, seen, from, to) {
            lossless::annotate(&mut converted, text);
        }
        Ok(converted)
    }

    /// The round trip's way back: `converted` (at `to`) converted to `from` and normalised
    /// there as the read path would — only the fields the round trip compares
    /// (`lossless::body`). When the way back fails, an empty object: every field is then kept
    /// (the definition-time sample checks report such rules).
    ///
    /// In one hop (the rules from `to` to `from`, or none), the rules read `converted` itself
    /// and write into a copy of its body (without the fields they replace), which alone is
    /// pruned and normalised: rules read `self.metadata` but never write it, and pruning,
    /// coercing and defaulting treat the other top-level fields each on its own, so the body
    /// comes out as that of the whole object converted back — without copying and walking
    /// metadata (most of an object, with its `managedFields`) for a comparison that skips it.
    /// Through two hops, the whole object goes, since the second hop's rules read the first's
    /// result. (`reference.rs` checks all this against the conversion as first written.)
    fn way_back(&self, rules: &CelConverter, converted: &Value, to: &str, from: &str) -> Value {
        let failed = || Value::Object(Map::new());
        let route = match rules.route(to, from) {
            Ok(route) => route,
            Err(_) => return failed(),
        };
        let mut back = match route.single() {
            Ok(step) => {
                let mut body = match step.hop {
                    Hop::Rules(pair) => match rules.evaluate(pair, converted) {
                        Ok(results) => {
                            // Not copying what the rules are about to replace.
                            let mut body = cel::body_to_write(converted, pair);
                            cel::write(&mut body, results, step.api_version);
                            body
                        }
                        Err(_) => return failed(),
                    },
                    Hop::None => {
                        let mut body = lossless::body(converted);
                        set_api_version(&mut body, step.api_version);
                        body
                    }
                };
                self.coerce(&mut body, step.version);
                body
            }
            Err(_) => match self.cel_hops(rules, converted.clone(), to, from) {
                Ok(back) => back,
                Err(_) => return failed(),
            },
        };
        self.normalise(&mut back, from);
        back
    }

    /// The rules' conversion from `from` to `to`, hop by hop ([`CelConverter::route`]), each
    /// hop's result pruned and coerced with its version's schema.
    fn cel_hops(&self, rules: &CelConverter, mut obj: Value, from: &str, to: &str) -> Result<Value, ConversionError> {
        for step in rules.route(from, to).map_err(ConversionError::Rules)?.steps() {
            match step.hop {
                Hop::Rules(pair) => rules.apply(pair, &mut obj, step.api_version).map_err(ConversionError::Rules)?,
                Hop::None => set_api_version(&mut obj, step.api_version),
            }
            self.coerce(&mut obj, step.version);
        }
        Ok(obj)
    }

    /// An object converted to `version` (so pruned and coerced) as the read path sees it
    /// there: defaulted too, when the schema has defaults.
    fn normalise(&self, obj: &mut Value, version: &str) {
        if let Some(schema) = self.schemas.get(version).filter(|s| s.below.defaults) {
            versa_schema::pipeline::on_read(obj, schema);
        }
    }

    fn has_version(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// The `None` conversion of one object (kube's `nopConverter`), then the coercion.
    fn set_version_and_coerce(&self, obj: &mut Value, desired: &str, to_version: &str) {
        set_api_version(obj, desired);
        self.coerce(obj, to_version);
    }

    /// What kube's `schemaCoercingConverter` does to a converted object: prune it with the
    /// target version's schema (unless unknown fields are preserved) and coerce its metadata
    /// and that of embedded resources, dropping malformed fields.
    fn coerce(&self, obj: &mut Value, to_version: &str) {
        let Some(schema) = self.schemas.get(to_version) else { return };
        if self.prune {
            // Pruning and metadata coercion in one walk.
            versa_schema::pipeline::prune_and_coerce(obj, schema);
            return;
        }
        // With `Drop`, coercion removes what is malformed instead of failing.
        let _unknown = versa_schema::objectmeta::coerce(obj, schema, Malformed::Drop);
    }
}

fn set_api_version(obj: &mut Value, desired: &str) {
    if let Some(map) = obj.as_object_mut() {
        match map.get_mut("apiVersion") {
            // The old text's buffer is reused.
            Some(Value::String(s)) => desired.clone_into(s),
            _ => {
                map.insert("apiVersion".to_owned(), Value::String(desired.to_owned()));
            }
        }
    }
}

/// An object with nothing but `apiVersion` and `kind` (kube's `isEmptyUnstructuredObject`).
fn is_empty_object(obj: &Value) -> bool {
    obj.as_object().is_some_and(|m| m.len() == 2 && m.contains_key("apiVersion") && m.contains_key("kind"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn converter_is_shareable() {
        assert_send_sync::<Converter>();
        assert_send_sync::<ConversionError>();
    }

    #[test]
    fn default_timeout_is_kubes() {
        assert_eq!(Options::default().webhook_timeout, Duration::from_secs(30));
    }

    #[test]
    fn empty_objects() {
        use serde_json::json;
        assert!(is_empty_object(&json!({"apiVersion": "g/v1", "kind": "K"})));
        assert!(!is_empty_object(&json!({"apiVersion": "g/v1", "kind": "K", "metadata": {}})));
        assert!(!is_empty_object(&json!({"apiVersion": "g/v1", "spec": {}})));
    }
}
