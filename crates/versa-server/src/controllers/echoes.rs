//! The definitions controller's own status writes, recognised when they come back.
//!
//! Every status write the controller makes comes back to it as a watch event, and reading a
//! stored definition again — parsing tens of KiB of JSON into its typed form and compacting its
//! schemas — was half of what the controller spent on a new definition (issue 41: thousands
//! installed at once). The controller knows what it wrote and what that state means to it, so
//! before each write it records here the bytes it writes and its own view of the result; an
//! event whose value is byte for byte what was written takes that view instead of being read
//! again. Anything else — another writer's change, a write that failed — is read as before: an
//! entry is taken out by the first event of its key, whatever it holds, and by a failed write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// The writes in flight, by storage key: the bytes written and what they mean (`T`).
#[derive(Debug)]
pub struct Echoes<T> {
    written: Arc<Mutex<HashMap<String, (Bytes, T)>>>,
}

impl<T> Clone for Echoes<T> {
    fn clone(&self) -> Self {
        Echoes { written: self.written.clone() }
    }
}

impl<T> Default for Echoes<T> {
    fn default() -> Self {
        Echoes { written: Arc::default() }
    }
}

impl<T> Echoes<T> {
    /// Records that `bytes` are about to be written at `key`, meaning `what`.
    pub fn expect(&self, key: &str, bytes: Bytes, what: T) {
        if let Ok(mut written) = self.written.lock() {
            written.insert(key.to_owned(), (bytes, what));
        }
    }

    /// The write of `bytes` at `key` failed: nothing of it will come back.
    pub fn failed(&self, key: &str, bytes: &Bytes) {
        if let Ok(mut written) = self.written.lock()
            && written.get(key).is_some_and(|(b, _)| b == bytes)
        {
            written.remove(key);
        }
    }

    /// An event's value at `key`: what it means when it is exactly what was written there.
    pub fn take(&self, key: &str, value: &[u8]) -> Option<T> {
        let (bytes, what) = self.written.lock().ok()?.remove(key)?;
        (bytes.as_ref() == value).then_some(what)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn only_the_bytes_written_are_recognised_and_only_once() {
        let echoes = Echoes::default();
        echoes.expect("k", Bytes::from_static(b"{\"a\":1}"), 7);
        assert_eq!(echoes.take("k", b"{\"a\":2}"), None, "another value");
        assert_eq!(echoes.take("k", b"{\"a\":1}"), None, "taken out by the first event");
        echoes.expect("k", Bytes::from_static(b"{\"a\":1}"), 8);
        assert_eq!(echoes.take("other", b"{\"a\":1}"), None);
        assert_eq!(echoes.take("k", b"{\"a\":1}"), Some(8));
        echoes.expect("k", Bytes::from_static(b"x"), 9);
        echoes.failed("k", &Bytes::from_static(b"y"));
        echoes.failed("k", &Bytes::from_static(b"x"));
        assert_eq!(echoes.take("k", b"x"), None, "a failed write comes back as nothing");
    }
}
