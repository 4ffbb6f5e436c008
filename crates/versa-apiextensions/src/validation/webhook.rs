//! Webhook client configuration: URL, service reference and CA bundle (apiserver
//! `util/webhook`'s validators, shared with admission webhooks upstream).
//!
//! As in kube-apiserver 1.36, the callers pass the service's name where the validator takes
//! the namespace and the reverse, so a missing name is reported at `service.namespace` and a
//! missing namespace at `service.name` (kubernetes/kubernetes#141353): kube's answer, kept.

use base64::Engine as _;
use versa_schema::field::{BadValue, Error, ErrorList, Path};
use versa_schema::names::is_dns1123_subdomain;

use super::{pem, url};

/// Appended to URL errors to show the expected form.
const URL_FORM: &str = "; desired format: https://host[/path]";

/// A webhook URL: parseable, `https` when `force_https`, with a host, and without user
/// information, query or fragment.
pub fn validate_webhook_url(path: &Path, raw: &str, force_https: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let u = match url::parse(raw) {
        Ok(u) => u,
        Err(e) => {
            errs.push(Error::required(path.clone(), format!("url must be a valid URL: {e}{URL_FORM}")));
            return errs;
        }
    };
    if force_https && u.scheme != "https" {
        errs.push(Error::invalid(
            path.clone(),
            u.scheme.as_str(),
            format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if u.host.is_empty() {
        errs.push(Error::invalid(path.clone(), u.host.as_str(), format!("host must be specified{URL_FORM}")));
    }
    if let Some(user) = &u.user {
        errs.push(Error::invalid(path.clone(), user.as_str(), "user information is not permitted in the URL"));
    }
    if !u.fragment.is_empty() {
        errs.push(Error::invalid(path.clone(), u.fragment.as_str(), "fragments are not permitted in the URL"));
    }
    if !u.raw_query.is_empty() {
        errs.push(Error::invalid(path.clone(), u.raw_query.as_str(), "query parameters are not permitted in the URL"));
    }
    errs
}

/// A service reference: name and namespace, a valid port, and a path of DNS-subdomain segments
/// (apiserver's `ValidateWebhookService`, whose parameters are namespace, then name).
pub fn validate_webhook_service(
    path: &Path,
    namespace: &str,
    name: &str,
    url_path: Option<&str>,
    port: i32,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if name.is_empty() {
        errs.push(Error::required(path.child("name"), ""));
    }
    if namespace.is_empty() {
        errs.push(Error::required(path.child("namespace"), ""));
    }
    if !(1..=65535).contains(&port) {
        errs.push(Error::invalid(
            path.child("port"),
            i64::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(p) = url_path else { return errs };
    if p.is_empty() || p == "/" {
        return errs;
    }
    let ppath = path.child("path");
    if p == "//" {
        errs.push(Error::invalid(ppath, p, "segment[0] may not be empty"));
        return errs;
    }
    if !p.starts_with('/') {
        errs.push(Error::invalid(ppath.clone(), p, "must start with a '/'"));
    }
    // Upstream drops the first byte whether or not it is a slash.
    let mut to_check = p.get(1..).unwrap_or_default();
    to_check = to_check.strip_suffix('/').unwrap_or(to_check);
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(Error::invalid(ppath.clone(), p, format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(Error::invalid(ppath.clone(), p, format!("segment[{i}]: {failure}")));
        }
    }
    errs
}

/// A CA bundle must contain a usable certificate. The bad value is shown base64-encoded, as it
/// was written in the definition.
pub fn validate_ca_bundle(path: &Path, bundle: &[u8]) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Err(e) = pem::check_ca_bundle(bundle) {
        let shown = base64::engine::general_purpose::STANDARD.encode(bundle);
        errs.push(Error::invalid(path.clone(), BadValue::from(shown), e.to_string()));
    }
    errs
}
