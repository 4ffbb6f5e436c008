//! Kubernetes name, label and annotation syntax (apimachinery `util/validation`,
//! `api/validate/content`, `api/validation/path` and `api/validation/objectmeta.go`), returning
//! the very messages Kubernetes prints.
//!
//! Two layers. The `is_*` functions take one string and return the list of problems as plain
//! messages (empty when valid), exactly like the Go `IsDNS1123Subdomain` family; callers wrap
//! each message in a field error of their choosing. The `validate_*` functions take a field path
//! and return an [`ErrorList`] as the metadata validation of the API server does. Name checks
//! that take a "prefix" flag (for `generateName`) are [`NameValidator`]s, so callers such as
//! the definitions crate can pass "DNS subdomain", "DNS label" or "path segment" rules around as
//! values.
//!
//! The character rules are checked by hand instead of with the regular expressions quoted in
//! the messages: the expressions are plain ASCII languages, a hand-written check is faster than
//! any regex engine, and the messages still quote the expressions so users see Kubernetes' text.

use serde_json::{Map, Value};

use crate::field::{Error, ErrorList, Path};

/// Maximum length of a DNS-1123 label and of a DNS-1035 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of a DNS-1035 label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a label value and of the name part of a qualified name.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Maximum length of the name part of a qualified name (label key).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Maximum total size, in bytes, of all annotation keys and values of one object.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The regular expression quoted in DNS-1123 label messages.
pub const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
/// The regular expression quoted in DNS-1123 subdomain messages.
pub const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
/// The regular expression quoted in DNS-1035 label messages.
pub const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
/// The regular expression quoted in qualified-name (label key) messages.
pub const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
/// The regular expression quoted in label-value messages.
pub const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `must be no more than N bytes` (apimachinery `content.MaxLenError`).
///
/// Older Kubernetes releases said "characters"; the current source says "bytes", which is also
/// what is measured (Go's `len`).
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// `<msg> (e.g. 'a' or 'b', regex used for validation is '<re>')` (apimachinery `RegexError`).
pub fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut s = String::with_capacity(msg.len() + re.len() + 64);
    s.push_str(msg);
    s.push_str(" (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(e);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(re);
    s.push_str("')");
    s
}

/// `must be non-empty` (apimachinery `EmptyError`).
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

// --- character-level matchers for the fixed Kubernetes languages

/// Byte classes of the name languages, looked up once per byte.
const LOWER_ALNUM: u8 = 1;
const ALNUM: u8 = 2;
/// `-`, `_` and `.`: allowed inside a qualified name part.
const NAME_PUNCT: u8 = 4;

const BYTE_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            t[b] |= LOWER_ALNUM;
        }
        if c.is_ascii_alphanumeric() {
            t[b] |= ALNUM;
        }
        if matches!(c, b'-' | b'_' | b'.') {
            t[b] |= NAME_PUNCT;
        }
        b += 1;
    }
    t
};

fn is_lower_alnum(b: u8) -> bool {
    BYTE_CLASS[b as usize] & LOWER_ALNUM != 0
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f) && is_lower_alnum(l) && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Labels of [`matches_dns1123_label`] joined by single dots, checked in one pass.
fn matches_dns1123_subdomain(s: &str) -> bool {
    // `at_label_start`: nothing of the current label seen yet; `prev`: the last byte.
    let (mut at_label_start, mut prev) = (true, b'.');
    for &c in s.as_bytes() {
        if c == b'.' {
            if at_label_start || prev == b'-' {
                return false;
            }
            at_label_start = true;
        } else if is_lower_alnum(c) {
            at_label_start = false;
        } else if c != b'-' || at_label_start {
            return false;
        }
        prev = c;
    }
    !at_label_start && prev != b'-'
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|&c| BYTE_CLASS[c as usize] & (ALNUM | NAME_PUNCT) != 0)
        }
        _ => false,
    }
}

/// Whether `value` is a DNS-1123 label (a namespace name, a version name, ...): up to 63
/// lowercase alphanumerics or `-`, starting and ending alphanumeric. Returns Kubernetes'
/// messages, empty when valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain that is not a label can only be failing because of its dots.
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// Whether `value` is a DNS-1123 subdomain (object names, API groups): up to 253 characters of
/// dot-separated labels. Returns Kubernetes' messages, empty when valid.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// Whether `value` is a DNS-1035 label (resource plurals, kinds lowercased, version names in
/// CRDs): like a DNS-1123 label but starting with a letter. Returns Kubernetes' messages.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// Whether `value`, lowercased, is a DNS-1035 label ([`is_dns1035_label`] finds nothing),
/// without making the lowercased copy. Only for ASCII `value`, whose lowercasing keeps every
/// byte in place.
pub(crate) fn is_dns1035_label_ignoring_case(value: &str) -> bool {
    let b = value.as_bytes();
    value.len() <= DNS1035_LABEL_MAX_LENGTH
        && b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
}

/// Whether `value` is a qualified name (label keys, annotation keys, finalizers):
/// `[prefix/]name`, the prefix a DNS-1123 subdomain, the name up to 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    // Keys are short: plain byte scans find the slashes.
    let parts = match value.bytes().position(|b| b == b'/') {
        None => Some((None, value)),
        Some(i) if !value.as_bytes()[i + 1..].contains(&b'/') => Some((Some(&value[..i]), &value[i + 1..])),
        Some(_) => None,
    };
    let name = match parts {
        Some((None, name)) => name,
        Some((Some(prefix), name)) => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                for msg in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {msg}"));
                }
            }
            name
        }
        None => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// Whether `value` is a valid label value: empty, or up to 63 characters of the qualified-name
/// name part. Returns Kubernetes' messages.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// Whether `name` can be used as one segment of a request path (`may not be '.'`,
/// `may not contain '/'`, ...): the name rule for embedded resources.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// The path-segment rule for a `generateName` prefix: only the forbidden characters are
/// checked, since `.` and `..` become valid once a suffix is appended.
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for illegal in [b'/', b'%'] {
        // A byte scan: names are short, and both characters are ASCII.
        if name.as_bytes().contains(&illegal) {
            errs.push(format!("may not contain '{}'", char::from(illegal)));
        }
    }
    errs
}

/// A name rule: `(name, is_prefix) -> messages`, Kubernetes' `ValidateNameFunc`.
///
/// `is_prefix` is true when checking a `generateName`, which will get a random suffix: a
/// trailing `-` is then acceptable.
pub type NameValidator = fn(&str, bool) -> Vec<String>;

/// [`NameValidator`] for names that must be DNS-1123 subdomains (custom resources).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix { is_dns1123_subdomain(&mask_trailing_dash(name)) } else { is_dns1123_subdomain(name) }
}

/// [`NameValidator`] for names that must be DNS-1123 labels (namespaces).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix { is_dns1123_label(&mask_trailing_dash(name)) } else { is_dns1123_label(name) }
}

/// [`NameValidator`] for names that must be DNS-1035 labels.
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix { is_dns1035_label(&mask_trailing_dash(name)) } else { is_dns1035_label(name) }
}

/// [`NameValidator`] for names that only need to be usable as a path segment (embedded
/// resources).
pub fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    if prefix { is_valid_path_segment_prefix(name) } else { is_valid_path_segment_name(name) }
}

/// Namespace names are DNS-1123 labels.
pub fn validate_namespace_name(name: &str, prefix: bool) -> Vec<String> {
    name_is_dns_label(name, prefix)
}

/// Kubernetes' `maskTrailingDash`: a generateName ending in `-` is checked with its end
/// replaced. Kubernetes drops the last *two* bytes and appends `a` (`name[:len-2] + "a"`), so
/// `abc-` is checked as `aba`; the quirk is kept because it decides which prefixes pass. A lone
/// `-` is left alone (Go would slice out of range there).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        // `name.len() - 2` may fall inside a multi-byte character; Go slices bytes, so do the
        // same on bytes and go back to text lossily (the result is only checked, never stored).
        let bytes = &name.as_bytes()[..name.len() - 2];
        let mut s = String::from_utf8_lossy(bytes).into_owned();
        s.push('a');
        s
    } else {
        name.to_owned()
    }
}

/// Validates a label map at `path` (`metadata.labels`): keys are qualified names, values label
/// values. Errors carry `path` itself, not `path[key]`, as in Kubernetes.
pub fn validate_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    label_errors(labels, &|| path.clone(), &mut errs);
    errs
}

/// [`validate_labels`] with `path` rendered only for an error.
pub(crate) fn label_errors<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    path: &dyn Fn() -> Path,
    errs: &mut ErrorList,
) {
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            errs.push(Error::invalid(path(), k, msg));
        }
        for msg in is_valid_label_value(v) {
            errs.push(Error::invalid(path(), v, msg));
        }
    }
}

/// Validates an annotation map at `path`: keys are qualified names compared in lowercase, and
/// keys plus values may not exceed [`TOTAL_ANNOTATION_SIZE_LIMIT`] bytes in total.
pub fn validate_annotations<'a>(annotations: impl IntoIterator<Item = (&'a str, &'a str)>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    annotation_errors(annotations, &|| path.clone(), &mut errs);
    errs
}

/// [`validate_annotations`] with `path` rendered only for an error.
pub(crate) fn annotation_errors<'a>(
    annotations: impl IntoIterator<Item = (&'a str, &'a str)>,
    path: &dyn Fn() -> Path,
    errs: &mut ErrorList,
) {
    let mut total: usize = 0;
    for (k, v) in annotations {
        // Case does not matter in annotation keys, so Kubernetes checks the lowercased key.
        let lowered;
        let has_upper =
            if k.is_ascii() { k.bytes().any(|c| c.is_ascii_uppercase()) } else { k.chars().any(char::is_uppercase) };
        let key = if has_upper {
            lowered = k.to_lowercase();
            lowered.as_str()
        } else {
            k
        };
        for msg in is_qualified_name(key) {
            errs.push(Error::invalid(path(), k, msg));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(Error::too_long(path(), TOTAL_ANNOTATION_SIZE_LIMIT as i64));
    }
}

/// The finalizer that orphans dependents on deletion.
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// The finalizer that deletes dependents in the foreground.
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

/// Validates finalizers at `path`: each a qualified name, and not both `orphan` and
/// `foregroundDeletion`.
pub fn validate_finalizers(finalizers: &[&str], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for f in finalizers {
        for msg in is_qualified_name(f) {
            errs.push(Error::invalid(path.clone(), *f, msg));
        }
    }
    if finalizers.contains(&FINALIZER_ORPHAN_DEPENDENTS) && finalizers.contains(&FINALIZER_DELETE_DEPENDENTS) {
        let list = Value::Array(finalizers.iter().map(|f| Value::String((*f).to_owned())).collect());
        errs.push(Error::invalid(
            path.clone(),
            list,
            format!("finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"),
        ));
    }
    errs
}

/// Warnings (not errors) Kubernetes returns for finalizers without a domain:
/// `metadata.finalizers: "x": prefer a domain-qualified finalizer name to avoid accidental
/// conflicts with other finalizer writers`. The built-in finalizers are exempt.
pub fn finalizer_warnings(finalizers: &[&str], path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for f in finalizers {
        let standard = matches!(*f, "kubernetes" | FINALIZER_ORPHAN_DEPENDENTS | FINALIZER_DELETE_DEPENDENTS);
        if !f.contains('/') && !standard {
            out.push(format!(
                "{path}: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                crate::field::go_quote(f)
            ));
        }
    }
    out
}

/// String entries of a JSON object, for callers holding a decoded `labels`/`annotations` map.
/// Non-string values are skipped; metadata validation reports them separately.
pub fn string_entries(map: &Map<String, Value>) -> impl Iterator<Item = (&str, &str)> {
    map.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
}
