//! The schema texts a served definition keeps: each version's `schema` as compact JSON,
//! deflated, and each distinct text held once in the process.
//!
//! A real definition's schema is mostly descriptions, which compress five- to tenfold, and the
//! text is read only to compile a version on first use and to build OpenAPI documents, so it is
//! kept deflated ([`SchemaTexts`]), and not in the process's memory: in the pack's temporary
//! file ([`crate::pack`]), read back when asked for. Equal texts are common — the versions of one definition
//! often share a schema, and the copies of a provider's definitions installed under several
//! groups share all of theirs — so every text is interned by its SHA-256 digest: a table of weak
//! references ([`INTERNED`]) hands out the one deflated copy while any definition holds it, and
//! forgets it when none does (dead entries are swept as the table grows, so it stays within
//! twice the live texts). Nothing outlives its last user, and texts are compared by digest
//! only, never by content.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use crate::pack::{PACK, Packed};

/// One schema text, deflated, kept in the process's [`PACK`].
type Deflated = Packed;

/// Each version's schema (`CustomResourceValidation`) as compact JSON, by version name,
/// deflated and shared with every equal text in the process. Two are equal when every
/// version's name and text are (compared by digest).
#[derive(Debug, Default, Clone)]
pub struct SchemaTexts {
    /// By version name, sorted.
    texts: Box<[(Box<str>, Arc<Deflated>)]>,
    /// SHA-256 over every version's name and text.
    digest: [u8; 32],
}

impl PartialEq for SchemaTexts {
    fn eq(&self, other: &SchemaTexts) -> bool {
        self.digest == other.digest
    }
}

impl SchemaTexts {
    /// The digest of every version's name and text: equal for equal texts.
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }

    /// Version `version`'s schema text.
    pub fn get(&self, version: &str) -> Option<String> {
        let i = self.texts.binary_search_by(|(name, _)| (**name).cmp(version)).ok()?;
        let mut text = String::new();
        // Only what `intern` deflated is read: it inflates. A read of the pack's file that fails
        // is an I/O error of a temporary file (logged); the version is then without a schema.
        let read = self.texts[i].1.with(|bytes| flate2::read::DeflateDecoder::new(bytes).read_to_string(&mut text));
        match read {
            Ok(Ok(_)) => Some(text),
            Ok(Err(error)) | Err(error) => {
                tracing::error!(%error, version, "reading a kept schema text");
                None
            }
        }
    }

    /// The deflated size of version `version`'s text (for tests and measurements).
    pub fn deflated_len(&self, version: &str) -> Option<usize> {
        self.texts.iter().find(|(name, _)| &**name == version).map(|(_, d)| d.len())
    }

    /// The texts of `(version, text)` pairs, sorted by version and without repeated versions:
    /// digested, then `earlier`'s when it holds the same texts (shared as they are), else each
    /// text interned.
    pub(crate) fn of<'a>(
        texts: &[(String, String)],
        earlier: impl IntoIterator<Item = &'a Arc<SchemaTexts>>,
    ) -> Arc<SchemaTexts> {
        let mut whole = ring::digest::Context::new(&ring::digest::SHA256);
        for (name, text) in texts {
            for part in [name.as_bytes(), text.as_bytes()] {
                whole.update(&(part.len() as u64).to_le_bytes());
                whole.update(part);
            }
        }
        let digest = digest_of(whole);
        if let Some(same) = earlier.into_iter().find(|e| e.digest == digest) {
            return Arc::clone(same);
        }
        let texts = texts.iter().filter_map(|(name, text)| Some((name.as_str().into(), intern(text)?))).collect();
        Arc::new(SchemaTexts { texts, digest })
    }
}

fn digest_of(context: ring::digest::Context) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(context.finish().as_ref());
    out
}

/// Every deflated text some definition holds, by the SHA-256 of its text.
static INTERNED: LazyLock<Mutex<Interned>> = LazyLock::new(Mutex::default);

#[derive(Debug, Default)]
struct Interned {
    texts: HashMap<[u8; 32], Weak<Deflated>>,
    /// The table's size at which dead entries are swept next.
    sweep_at: usize,
}

/// The one deflated copy of `text`: the one held already, or deflated now (`None` only if
/// deflating fails, which writing to memory does not).
fn intern(text: &str) -> Option<Arc<Deflated>> {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(text.as_bytes());
    let digest = digest_of(context);
    if let Some(held) = lock().texts.get(&digest).and_then(Weak::upgrade) {
        return Some(held);
    }
    // Deflated outside the lock; a racing equal text keeps whichever was stored first.
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).ok()?;
    let fresh = Arc::new(PACK.keep(&encoder.finish().ok()?));
    let mut interned = lock();
    if let Some(held) = interned.texts.get(&digest).and_then(Weak::upgrade) {
        return Some(held);
    }
    if interned.texts.len() >= interned.sweep_at {
        interned.texts.retain(|_, weak| weak.strong_count() > 0);
        interned.sweep_at = (interned.texts.len() * 2).max(64);
    }
    interned.texts.insert(digest, Arc::downgrade(&fresh));
    Some(fresh)
}

fn lock() -> std::sync::MutexGuard<'static, Interned> {
    // The table holds no invariant a panic could break halfway.
    INTERNED.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    /// Equal texts are held once, whichever definition or version has them; a text no one
    /// holds is forgotten.
    #[test]
    fn equal_texts_are_held_once() {
        let long = format!("{{\"openAPIV3Schema\":{{\"description\":\"{}\"}}}}", "shared text ".repeat(200));
        let a = SchemaTexts::of(&texts(&[("v1", &long), ("v2", &long)]), []);
        let b = SchemaTexts::of(&texts(&[("v1beta1", &long)]), []);
        assert!(Arc::ptr_eq(&a.texts[0].1, &a.texts[1].1), "two versions, one text");
        assert!(Arc::ptr_eq(&a.texts[0].1, &b.texts[0].1), "two definitions, one text");
        assert!(a != b, "the versions' names are part of the digest");
        assert_eq!(b.get("v1beta1").as_deref(), Some(long.as_str()));
        assert!(a.deflated_len("v1").unwrap() * 5 < long.len(), "deflated");
        assert_eq!(a.get("v3"), None);

        let again = SchemaTexts::of(&texts(&[("v1", &long), ("v2", &long)]), [&a]);
        assert!(Arc::ptr_eq(&again, &a), "an equal earlier state is shared whole");

        let unique = format!("{{\"only\":\"{}\"}}", "once ".repeat(50));
        let weak = Arc::downgrade(&SchemaTexts::of(&texts(&[("v1", &unique)]), []).texts[0].1);
        assert!(weak.upgrade().is_none(), "forgotten with its last holder");
        let c = SchemaTexts::of(&texts(&[("v1", &unique)]), []);
        assert_eq!(c.get("v1").as_deref(), Some(unique.as_str()), "deflated again when asked again");
    }
}
