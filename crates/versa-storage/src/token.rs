//! Continue tokens for paginated lists. A token records the revision the first page was read at
//! and the next key to read, relative to the listed prefix; later pages are read at that same
//! revision, so a write between pages never shows up half-way through a list. The encoding is
//! the one kube-apiserver uses (unpadded base64url of `{"v":"meta.k8s.io/v1","rv":…,"start":…}`),
//! opaque to clients.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

const VERSION: &str = "meta.k8s.io/v1";

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinueToken {
    /// The revision every page of the list is read at.
    pub revision: i64,
    /// The first key of the next page, relative to the listed prefix.
    pub start: String,
}

#[derive(Serialize, Deserialize)]
struct Wire {
    v: String,
    rv: i64,
    start: String,
}

impl ContinueToken {
    /// The token for the page after `last_key` (a key under `prefix`) at `revision`.
    pub fn after(prefix: &str, last_key: &str, revision: i64) -> Self {
        let rel = last_key.strip_prefix(prefix).unwrap_or(last_key);
        // The next page starts at the smallest key greater than `last_key`.
        ContinueToken { revision, start: format!("{rel}\u{0}") }
    }

    /// The absolute key the next page starts at.
    pub fn start_key(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.start)
    }

    /// The opaque string given to clients.
    pub fn encode(&self) -> String {
        let wire = Wire { v: VERSION.to_string(), rv: self.revision, start: self.start.clone() };
        // Serialising a struct of strings and integers cannot fail.
        let json = serde_json::to_vec(&wire).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(json)
    }

    /// Parses a client's token.
    pub fn decode(token: &str) -> Result<Self> {
        let bytes = URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|e| Error::InvalidContinue(format!("not base64: {e}")))?;
        let wire: Wire =
            serde_json::from_slice(&bytes).map_err(|e| Error::InvalidContinue(format!("malformed: {e}")))?;
        if wire.v != VERSION {
            return Err(Error::InvalidContinue(format!("unsupported version {:?}", wire.v)));
        }
        if wire.rv <= 0 {
            return Err(Error::InvalidContinue(format!("invalid revision {}", wire.rv)));
        }
        if wire.start.is_empty() {
            return Err(Error::InvalidContinue("no start key".to_string()));
        }
        Ok(ContinueToken { revision: wire.rv, start: wire.start })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = ContinueToken::after("/registry/g/p/", "/registry/g/p/ns/a", 42);
        assert_eq!(t.start, "ns/a\u{0}");
        assert_eq!(t.start_key("/registry/g/p/"), "/registry/g/p/ns/a\u{0}");
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["!!!", "e30", &URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)] {
            assert!(matches!(ContinueToken::decode(bad), Err(Error::InvalidContinue(_))), "{bad}");
        }
    }
}
