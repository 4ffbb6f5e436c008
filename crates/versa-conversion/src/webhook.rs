//! The Webhook strategy: one `ConversionReview` call for a batch of objects.
//!
//! The caller hands over only the objects that need the webhook (not already at the target, not
//! empty); this module sends them in one review, checks the answer ([`crate::review`]), checks
//! each converted object and restores its metadata ([`crate::converted`]). Like kube-apiserver,
//! it logs a call that takes longer than 50 ms plus 8 ms per object (the conversion webhook SLO
//! with serialisation overhead).

use std::time::{Duration, Instant};

use bytes::Bytes;
use ring::rand::SystemRandom;
use serde_json::Value;

use crate::Converted;
use crate::client::WebhookClient;
use crate::converted::Finish;
use crate::gv::{GroupVersion, gvk_string, str_field};
use crate::review::{self, ReviewVersion};
use crate::{BuildError, Options};

/// A definition's conversion webhook, ready to call.
#[derive(Debug)]
pub(crate) struct WebhookConverter {
    client: WebhookClient,
    review: ReviewVersion,
    rng: SystemRandom,
    definition: String,
}

impl WebhookConverter {
    /// Reads `spec.conversion.webhook` of `def`.
    pub(crate) fn new(def: &versa_apiextensions::ResourceDefinition, options: &Options) -> Result<Self, BuildError> {
        let webhook_name = || format!("conversion_webhook_for_{}", def.name());
        let webhook = def
            .spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .ok_or_else(|| BuildError::NoEndpoint { webhook_name: webhook_name() })?;
        let review = ReviewVersion::first_supported(&webhook.conversion_review_versions).ok_or_else(|| {
            BuildError::NoSupportedReviewVersion { versions: webhook.conversion_review_versions.clone() }
        })?;
        let config =
            webhook.client_config.as_ref().ok_or_else(|| BuildError::NoEndpoint { webhook_name: webhook_name() })?;
        let client = WebhookClient::new(def.name(), config, options.webhook_timeout)?;
        Ok(WebhookConverter { client, review, rng: SystemRandom::new(), definition: def.name().to_owned() })
    }

    /// Converts `originals` (at least one) to `desired` in one call, each finished as `finish`
    /// says. The result has the originals' order and metadata (but the webhook's labels and
    /// annotations).
    ///
    /// A failed call is reported as kube reports it for the object it converts alone: naming the
    /// group, version and kind that object is at — here the first object sent.
    pub(crate) async fn convert(
        &self,
        originals: Vec<Value>,
        desired: GroupVersion<'_>,
        finish: Finish<'_>,
    ) -> Result<Vec<Converted>, String> {
        let gvk =
            originals.first().map(|o| gvk_string(str_field(o, "apiVersion"), str_field(o, "kind"))).unwrap_or_default();
        let uid = review::new_uid(&self.rng)
            .map_err(|_| format!("conversion webhook for {gvk} failed: cannot generate a request uid"))?;
        let desired_api_version = desired.to_string();
        let refs: Vec<&Value> = originals.iter().collect();
        let (body, spans) = review::request_body(self.review, &uid, &desired_api_version, &refs);
        drop(refs);
        // Kept (shared, not copied) for the originals' metadata as written.
        let body = Bytes::from(body);
        let started = Instant::now();
        let answer = self.client.post(body.clone()).await;
        self.trace(&uid, &desired_api_version, originals.len(), started.elapsed(), answer.is_ok());
        let answer = answer.map_err(|reason| format!("conversion webhook for {gvk} failed: {reason}"))?;
        let converted = review::converted_objects(self.review, &uid, &answer)
            .map_err(|reason| format!("conversion webhook for {gvk} failed: {reason}"))?;
        if converted.len() != originals.len() {
            return Err(format!(
                "conversion webhook for {gvk} returned {} objects, expected {}",
                converted.len(),
                originals.len()
            ));
        }
        let written: Vec<&[u8]> = spans.into_iter().map(|r| body.get(r).unwrap_or_default()).collect();
        crate::converted::check(desired, originals, &written, &converted, finish)
    }

    fn trace(&self, uid: &str, desired: &str, objects: usize, took: Duration, ok: bool) {
        let slow = Duration::from_millis(50 + 8 * objects as u64);
        if took > slow {
            tracing::info!(
                definition = %self.definition, desired_api_version = desired, objects, uid, ok,
                took_ms = took.as_millis() as u64, url = self.client.url(),
                "Call conversion webhook (slow)"
            );
        } else {
            tracing::debug!(
                definition = %self.definition, desired_api_version = desired, objects, uid, ok,
                took_ms = took.as_millis() as u64, "Call conversion webhook"
            );
        }
    }
}
