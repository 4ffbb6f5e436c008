//! The keys and sizes of ConfigMap and Secret data, as kube checks them
//! (`IsConfigMapKey` in apimachinery's `util/validation`, `MaxSecretSize` in `core`): shared
//! by [`super::configmap`] and [`super::secret`].

use versa_schema::names::regex_error;
use versa_schema::{Error as FieldError, ErrorList, Path};

/// The most data a ConfigMap or Secret holds, in bytes (kube's `MaxSecretSize`, 1 MiB).
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// The longest key (a DNS-1123 subdomain's length).
const MAX_KEY_LEN: usize = 253;

/// kube's `IsConfigMapKey` on the key `key` of the map at `path`: at most 253 characters of
/// `[-._a-zA-Z0-9]`, neither `.` nor `..` nor starting with `..`; one error per failed rule.
pub fn validate_key(key: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut invalid = |msg: String| errs.push(FieldError::invalid(path.key(key), key, msg));
    if key.len() > MAX_KEY_LEN {
        invalid(format!("must be no more than {MAX_KEY_LEN} characters"));
    }
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')) {
        invalid(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match key {
        "." => invalid("must not be '.'".into()),
        ".." => invalid("must not be '..'".into()),
        _ if key.starts_with("..") => invalid("must not start with '..'".into()),
        _ => {}
    }
    errs
}

/// The length of the bytes a base64 value (`[]byte` in JSON) holds, without decoding it.
pub fn decoded_len(text: &str) -> usize {
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3).saturating_sub(padding.min(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_lengths() {
        for (text, len) in [("", 0), ("YQ==", 1), ("YWI=", 2), ("YWJj", 3), ("YWJjZA==", 4)] {
            assert_eq!(decoded_len(text), len, "{text}");
        }
    }
}
