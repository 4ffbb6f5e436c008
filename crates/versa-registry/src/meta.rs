//! Server-owned object metadata: uids, timestamps, generated name suffixes, and the
//! time helpers every write shares. Randomness comes from `ring`'s system generator (already
//! in the tree for TLS), drawn a pool at a time per thread; times are formatted as RFC 3339 in
//! UTC with second precision, as `metav1.Time` serialises.

use std::time::{SystemTime, UNIX_EPOCH};

use ring::rand::{SecureRandom, SystemRandom};

/// A random RFC 4122 version 4 uid (`8-4-4-4-12` lowercase hex).
pub fn new_uid() -> String {
    let mut b = [0u8; 16];
    random(&mut b);
    versa_schema::objectmeta::uuid_v4(b)
}

/// Five random characters for `generateName`, from Kubernetes' alphabet.
pub fn name_suffix() -> String {
    let alphabet = versa_schema::pipeline::NAME_SUFFIX_ALPHABET.as_bytes();
    let mut b = [0u8; 5];
    random(&mut b);
    b.iter().map(|x| alphabet[*x as usize % alphabet.len()] as char).collect()
}

/// Bytes drawn per call of the system generator, kept per thread and handed out in order:
/// every request gets an Audit-ID, and a system call for each of its 16 bytes was a measurable
/// part of a GET (`hack/bench-serve.sh get`). Each byte is handed out once.
const RANDOM_POOL: usize = 512;

thread_local! {
    /// Random bytes not yet handed out: `pool[used..]`.
    static POOL: std::cell::RefCell<([u8; RANDOM_POOL], usize)> = const { std::cell::RefCell::new(([0; RANDOM_POOL], RANDOM_POOL)) };
}

/// Fills `out` with random bytes from this thread's pool, refilled from the system generator
/// (more than a pool's worth at once comes from the generator directly). The generator only
/// fails when the OS has no entropy source at all; the bytes then still differ per call
/// through the clock.
fn random(out: &mut [u8]) {
    let pooled = out.len() <= RANDOM_POOL
        && POOL.with_borrow_mut(|(pool, used)| {
            if RANDOM_POOL - *used < out.len() {
                if SystemRandom::new().fill(pool).is_err() {
                    return false;
                }
                *used = 0;
            }
            out.copy_from_slice(&pool[*used..*used + out.len()]);
            *used += out.len();
            true
        });
    if !pooled && SystemRandom::new().fill(out).is_err() {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
        for (byte, clock) in out.iter_mut().zip(nanos.to_le_bytes().iter().cycle()) {
            *byte = *clock;
        }
    }
}

/// `t` as `2026-11-22T03:04:05Z`: `metav1.Time` as it serialises, RFC 3339 in UTC at second
/// precision (the fraction truncated, as Go's `Format` truncates it).
pub fn rfc3339(t: SystemTime) -> String {
    format!("{:.0}", timestamp(t))
}

/// Now, formatted as [`rfc3339`].
pub fn now() -> String {
    rfc3339(SystemTime::now())
}

/// `t` as a [`jiff::Timestamp`], the one calendar every time of the server is formatted and
/// read with (UTC only: no time zone database). jiff covers the years -9999 to 9999; a clock
/// outside them (none is) is clamped to the nearer end.
pub fn timestamp(t: SystemTime) -> jiff::Timestamp {
    jiff::Timestamp::try_from(t).unwrap_or(if t < UNIX_EPOCH { jiff::Timestamp::MIN } else { jiff::Timestamp::MAX })
}

/// Go's zero `time.Time`, 0001-01-01T00:00:00Z: what an unset `metav1.Time` holds (Kubernetes
/// writes it as `null` and shows it as `<unknown>`).
pub fn go_zero_time() -> jiff::Timestamp {
    const ZERO: jiff::civil::DateTime = jiff::civil::DateTime::constant(1, 1, 1, 0, 0, 0, 0);
    jiff::tz::Offset::UTC.to_timestamp(ZERO).unwrap_or(jiff::Timestamp::MIN)
}

/// `metadata` as a mutable map, created when absent or not an object; `None` only when `obj`
/// itself is not an object (bodies are checked to be objects before any write step).
pub fn meta_mut(obj: &mut serde_json::Value) -> Option<&mut serde_json::Map<String, serde_json::Value>> {
    let o = obj.as_object_mut()?;
    let meta = o.entry("metadata").or_insert_with(|| serde_json::Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = serde_json::Value::Object(Default::default());
    }
    meta.as_object_mut()
}

/// Sets `apiVersion` and `kind`.
pub fn set_type_meta(obj: &mut serde_json::Value, api_version: &str, kind: &str) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".to_owned(), serde_json::Value::String(api_version.to_owned()));
        o.insert("kind".to_owned(), serde_json::Value::String(kind.to_owned()));
    }
}

/// Sets `metadata.resourceVersion` to the store revision.
pub fn set_resource_version(obj: &mut serde_json::Value, revision: i64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), serde_json::Value::String(revision.to_string()));
    }
}

/// `metadata.name`, empty when absent.
pub fn name_of(obj: &serde_json::Value) -> &str {
    obj.get("metadata").and_then(|m| m.get("name")).and_then(serde_json::Value::as_str).unwrap_or("")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// Formatting is the inverse of the parser the Table output uses.
    #[test]
    fn times_round_trip() {
        use crate::table::parse_rfc3339;
        for s in ["1970-01-01T00:00:00Z", "2000-02-29T12:34:56Z", "2026-11-22T03:04:05Z", "2100-12-31T23:59:59Z"] {
            assert_eq!(rfc3339(parse_rfc3339(s).unwrap()), s);
        }
        assert_eq!(rfc3339(parse_rfc3339("2026-11-22T05:04:05.123+02:00").unwrap()), "2026-11-22T03:04:05Z");
        for bad in ["", "2026-13-01T00:00:00Z", "2026-11-22 03:04:05Z", "2026-11-22T03:04:05"] {
            assert!(parse_rfc3339(bad).is_none(), "{bad}");
        }
    }

    /// Leap days, year and century boundaries, times before 1970 and Go's zero time format as
    /// Go formats them; the fraction is truncated, never rounded.
    #[test]
    fn times_at_calendar_edges() {
        use std::time::Duration;
        let at = |seconds: i64, nanos: u32| {
            let whole = Duration::from_secs(seconds.unsigned_abs());
            let t = if seconds < 0 { UNIX_EPOCH - whole } else { UNIX_EPOCH + whole };
            t + Duration::from_nanos(u64::from(nanos))
        };
        for (seconds, nanos, want) in [
            (0, 0, "1970-01-01T00:00:00Z"),
            (951_782_400, 0, "2000-02-29T00:00:00Z"),
            (1_709_251_199, 999_999_999, "2024-02-29T23:59:59Z"),
            (1_735_689_599, 0, "2024-12-31T23:59:59Z"),
            (1_735_689_600, 0, "2025-01-01T00:00:00Z"),
            (4_107_542_400, 0, "2100-03-01T00:00:00Z"),
            (-1, 0, "1969-12-31T23:59:59Z"),
            (-1, 500_000_000, "1969-12-31T23:59:59Z"),
            (-86_400 * 366, 0, "1968-12-31T00:00:00Z"),
            (-62_135_596_800, 0, "0001-01-01T00:00:00Z"),
        ] {
            assert_eq!(rfc3339(at(seconds, nanos)), want, "{seconds}s {nanos}ns");
        }
        assert_eq!(go_zero_time().as_second(), -62_135_596_800);
        assert_eq!(rfc3339(go_zero_time().into()), "0001-01-01T00:00:00Z");
    }

    #[test]
    fn uids_and_suffixes() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        // Across the pool's refills: every uid differs.
        let many: std::collections::HashSet<String> = (0..1000).map(|_| new_uid()).collect();
        assert_eq!(many.len(), 1000);
        assert!(!many.contains(&u));
        assert_eq!(name_suffix().len(), 5);
    }
}
