//! `date`, `date-time` and `duration` as Go's `time.Parse` and `time.ParseDuration` accept
//! them (with strfmt's layouts), and the Scala-style durations strfmt also takes.

use super::chars::is_go_space;

fn two_digits(b: &[u8]) -> Option<u32> {
    match b {
        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => Some(u32::from(a - b'0') * 10 + u32::from(c - b'0')),
        _ => None,
    }
}

/// `time.Parse("2006-01-02", s)`: four-digit year, two-digit month 1-12, two-digit day valid in
/// that month (leap years included), nothing else. The shape is Go's and checked here (jiff's
/// parser also takes other ISO 8601 forms, such as `20240229` or `+002024-02-29`); whether the
/// day exists is jiff's, whose proleptic Gregorian calendar answers as Go's does for every year
/// 0000-9999.
pub(super) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !b[..4].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let year = b[..4].iter().fold(0i16, |acc, &c| acc * 10 + i16::from(c - b'0'));
    let (Some(month), Some(day)) = (two_digits(&b[5..7]), two_digits(&b[8..10])) else { return false };
    let (Ok(month), Ok(day)) = (i8::try_from(month), i8::try_from(day)) else { return false };
    jiff::civil::Date::new(year, month, day).is_ok()
}

/// strfmt's `IsDateTime`: the (lowercased) text is split at every `t`; the first piece must be
/// a date and the *second* must match `hh:mm:ss(.frac)?(z|±hh:mm)` with hour ≤ 23, minute
/// and second ≤ 59 (compared as strings, so the offset is not range-checked). Pieces after
/// the second are ignored, as in Kubernetes.
pub(super) fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let mut parts = s.split(['t', 'T']);
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    if !is_date(date) {
        return false;
    }
    let b = time.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(h), Some(m), Some(sec)) = (two_digits(&b[0..2]), two_digits(&b[3..5]), two_digits(&b[6..8])) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    let mut rest = &time[8..];
    // `(.[0-9]+)?`: the dot of the pattern is "any character but newline".
    if let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if c != '\n' && digits > 0 {
            let tail = &after[digits..];
            // Backtracking: the fraction is optional, so try the zone both with and without it.
            if is_zone(tail) {
                return true;
            }
        }
    }
    rest = &time[8..];
    is_zone(rest)
}

/// `(z|[+-][0-9]{2}:[0-9]{2})` to the end (`z` either case: the input was lowercased).
fn is_zone(s: &str) -> bool {
    let b = s.as_bytes();
    match b {
        [b'z' | b'Z'] => true,
        [sign, h1, h2, b':', m1, m2] => {
            matches!(sign, b'+' | b'-') && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, or else a Scala-like list of
/// `<digits> <unit>` pairs where at least one unit is known.
pub(super) fn is_duration(s: &str) -> bool {
    go_parse_duration(s) || scala_duration(s)
}

/// `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units ns, us, µs, μs, ms, s,
/// m, h, a special case for `0`, and overflow beyond ±2^63 ns rejected.
fn go_parse_duration(orig: &str) -> bool {
    const LIMIT: u64 = 1 << 63;
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some(&c @ (b'-' | b'+')) = s.first() {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return false;
        }
        // Integer part, with Go's overflow rule.
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if v > LIMIT / 10 {
                return false;
            }
            v = v * 10 + u64::from(s[i] - b'0');
            if v > LIMIT {
                return false;
            }
            i += 1;
        }
        let pre = i > 0;
        s = &s[i..];
        // Fraction: digits beyond what fits are ignored, not an error.
        let mut f: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut post = false;
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let mut j = 0;
            let mut overflow = false;
            while j < s.len() && s[j].is_ascii_digit() {
                if !overflow {
                    if f > (LIMIT - 1) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + u64::from(s[j] - b'0');
                        if y > LIMIT {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                j += 1;
            }
            post = j > 0;
            s = &s[j..];
        }
        if !pre && !post {
            return false;
        }
        let unit_len = s.iter().take_while(|&&c| c != b'.' && !c.is_ascii_digit()).count();
        if unit_len == 0 {
            return false;
        }
        let unit: u64 = match &s[..unit_len] {
            b"ns" => 1,
            // "µs" (micro sign) and "μs" (Greek mu) in UTF-8.
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return false,
        };
        s = &s[unit_len..];
        if v > LIMIT / unit {
            return false;
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return false;
            }
        }
        total += v;
        if total > LIMIT {
            return false;
        }
    }
    neg || total < LIMIT
}

/// The fallback: `^\s*(?:\d+\s*[A-Za-zµ]+\s*)+$`, every number fitting an i64, and at least
/// one unit recognised (exactly, case-insensitively, or by prefix for the long spellings
/// `nano`, `micro`, `milli`, `sec`, `min`, `hour`, `day`, `week`).
fn scala_duration(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let skip_space = |i: &mut usize| {
        while *i < b.len() && is_go_space(b[*i]) {
            *i += 1;
        }
    };
    let mut any_known = false;
    let mut pairs = 0;
    skip_space(&mut i);
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
        // strconv.Atoi fails beyond int64: the whole duration is then rejected.
        if s[start..i].parse::<i64>().is_err() {
            return false;
        }
        skip_space(&mut i);
        let unit_start = i;
        while i < s.len() {
            let Some(c) = s[i..].chars().next() else { break };
            if c.is_ascii_alphabetic() || c == 'µ' {
                i += c.len_utf8();
            } else {
                break;
            }
        }
        if i == unit_start {
            return false;
        }
        any_known |= scala_unit_known(&s[unit_start..i]);
        pairs += 1;
        skip_space(&mut i);
    }
    pairs > 0 && any_known
}

fn scala_unit_known(unit: &str) -> bool {
    const GROUPS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let unit = unit.to_lowercase();
    GROUPS.iter().any(|variants| {
        variants.iter().enumerate().any(|(i, v)| (i == variants.len() - 1 && unit.starts_with(v)) || unit == *v)
    })
}
