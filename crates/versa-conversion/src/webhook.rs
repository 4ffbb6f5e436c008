//! The Webhook strategy: one `ConversionReview` call for a batch of objects.
//!
//! The caller hands over only the objects that need the webhook (not already at the target, not
//! empty); this module sends them in one review, checks the answer ([`crate::review`]), checks
//! each converted object and restores its metadata ([`crate::converted`]). Like kube-apiserver,
//! it logs a call that takes longer than 50 ms plus 8 ms per object (the conversion webhook SLO
//! with serialisation overhead).

use std::time::{Duration, Instant};

use bytes::Bytes;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig;
use ring::rand::SystemRandom;
use serde_json::Value;
use versa_webhook::{Endpoint, WebhookClient};

use crate::Converted;
use crate::converted::Finish;
use crate::gv::{GroupVersion, gvk_string, str_field};
use crate::review::{self, ReviewVersion};
use crate::{BuildError, ConversionError, Options};

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
        let client = client_for(def.name(), config, options.webhook_timeout)?;
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
    ) -> Result<Vec<Converted>, ConversionError> {
        let gvk =
            originals.first().map(|o| gvk_string(str_field(o, "apiVersion"), str_field(o, "kind"))).unwrap_or_default();
        let failed = |reason: String| ConversionError::WebhookFailed { gvk: gvk.clone(), reason };
        let uid = review::new_uid(&self.rng).map_err(|_| failed("cannot generate a request uid".into()))?;
        let desired_api_version = desired.to_string();
        let refs: Vec<&Value> = originals.iter().collect();
        let (body, spans) = review::request_body(self.review, &uid, &desired_api_version, &refs);
        drop(refs);
        // Kept (shared, not copied) for the originals' metadata as written.
        let body = Bytes::from(body);
        let started = Instant::now();
        let answer = self.client.post(body.clone()).await;
        self.trace(&uid, &desired_api_version, originals.len(), started.elapsed(), answer.is_ok());
        let answer = answer.map_err(|error| ConversionError::WebhookCall { gvk: gvk.clone(), error })?;
        let converted = review::converted_objects(self.review, &uid, &answer).map_err(failed)?;
        if converted.len() != originals.len() {
            return Err(ConversionError::WrongCount { gvk, returned: converted.len(), expected: originals.len() });
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

/// The client of the webhook of definition `definition` (named in errors the way kube names
/// the webhook: `conversion_webhook_for_<definition>`). A zero `timeout` means none, as in
/// client-go.
fn client_for(definition: &str, config: &WebhookClientConfig, timeout: Duration) -> Result<WebhookClient, BuildError> {
    let webhook_name = format!("conversion_webhook_for_{definition}");
    let endpoint = match (&config.service, &config.url) {
        (Some(svc), _) => {
            Endpoint::Service { namespace: &svc.namespace, name: &svc.name, port: svc.port, path: svc.path.as_deref() }
        }
        (None, Some(url)) => Endpoint::Url(url),
        (None, None) => return Err(BuildError::NoEndpoint { webhook_name }),
    };
    let ca_bundle = config.ca_bundle.as_ref().map(|b| b.0.as_slice());
    Ok(WebhookClient::for_endpoint(&webhook_name, endpoint, ca_bundle, timeout, None)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(v: serde_json::Value) -> WebhookClientConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn endpoints() {
        let t = Duration::from_secs(30);
        let cases = [
            (
                serde_json::json!({"service": {"namespace": "default", "name": "example-conversion-webhook-server", "path": "/crdconvert"}}),
                "https://example-conversion-webhook-server.default.svc:443/crdconvert?timeout=30s",
            ),
            (
                serde_json::json!({"service": {"namespace": "ns", "name": "svc", "port": 1234}}),
                "https://svc.ns.svc:1234/?timeout=30s",
            ),
            (
                serde_json::json!({"url": "https://my-webhook.example.com:9443/my-webhook-path"}),
                "https://my-webhook.example.com:9443/my-webhook-path?timeout=30s",
            ),
        ];
        for (cc, want) in cases {
            let client = client_for("crontabs.example.com", &config(cc), t).unwrap();
            assert_eq!(client.url(), want);
        }
        let none = client_for("x.example.com", &config(serde_json::json!({})), t).unwrap_err();
        assert_eq!(
            none.to_string(),
            r#"failed calling webhook "conversion_webhook_for_x.example.com": webhook configuration must have either service or URL"#
        );
        let untimed = client_for("x", &config(serde_json::json!({"url": "https://h/p"})), Duration::ZERO).unwrap();
        assert_eq!(untimed.url(), "https://h/p");
        assert_eq!(untimed.authority(), "h:443");
    }

    #[test]
    fn ca_bundles() {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        for (bundle, want) in [
            ("not pem", "unable to load root certificates: unable to parse bytes as PEM block"),
            (
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "unable to load root certificates: no valid certificate authority data seen",
            ),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                "unable to load root certificates: failed to parse certificate: x509: malformed certificate",
            ),
        ] {
            let cc = config(serde_json::json!({"url": "https://h/p", "caBundle": b64(bundle)}));
            let err = client_for("x", &cc, Duration::from_secs(1)).unwrap_err();
            assert_eq!(err.to_string(), want, "{bundle}");
            assert!(err.is_invalid_ca_bundle());
        }
        // Whitespace is no bundle: the system roots are used.
        let cc = config(serde_json::json!({"url": "https://h/p", "caBundle": b64(" \n")}));
        assert!(client_for("x", &cc, Duration::from_secs(1)).is_ok());
    }
}
