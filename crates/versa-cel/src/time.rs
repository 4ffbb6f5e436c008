//! Timestamps and durations as CEL (cel-go) sees them: a timestamp is a UTC instant between
//! `0001-01-01T00:00:00Z` and `9999-12-31T23:59:59.999999999Z`, a duration is Go's
//! `time.Duration` (signed nanoseconds in an `i64`).
//!
//! Parsing follows Go: timestamps are RFC 3339 (`time.RFC3339`, fractional seconds allowed),
//! schema `date` values are `YYYY-MM-DD`, durations are `time.ParseDuration` syntax (`1h30m`,
//! `-1.5s`, `300ms`, `0`). Formatting follows cel-go's `string()` conversions: RFC 3339 with
//! trailing zeros of the fraction trimmed (`time.RFC3339Nano`), and durations as seconds with
//! an `s` suffix. Calendar arithmetic uses Howard Hinnant's days-from-civil algorithms, so no
//! time-zone database is needed for UTC and fixed offsets; IANA zone names are not supported.

/// Seconds of `0001-01-01T00:00:00Z` since the Unix epoch.
pub const MIN_UNIX_SECONDS: i64 = -62_135_596_800;
/// Seconds of `9999-12-31T23:59:59Z` since the Unix epoch.
pub const MAX_UNIX_SECONDS: i64 = 253_402_300_799;

use crate::calendar::{civil_from_days, days_from_civil, days_in_month};
pub use crate::zone::ZoneError;

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// A UTC instant: seconds since the Unix epoch and nanoseconds within the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    pub seconds: i64,
    pub nanos: u32,
}

impl Timestamp {
    /// A timestamp, if it lies in CEL's range.
    pub fn new(seconds: i64, nanos: u32) -> Option<Timestamp> {
        (MIN_UNIX_SECONDS..=MAX_UNIX_SECONDS).contains(&seconds).then_some(Timestamp { seconds, nanos })
    }

    /// Nanoseconds since the epoch (always fits: the range is ±2.6e20 ns in an i128).
    pub fn as_nanos(self) -> i128 {
        i128::from(self.seconds) * i128::from(NANOS_PER_SECOND) + i128::from(self.nanos)
    }

    /// The timestamp `nanos` nanoseconds after the epoch, if in range.
    pub fn from_nanos(nanos: i128) -> Option<Timestamp> {
        let secs = nanos.div_euclid(i128::from(NANOS_PER_SECOND));
        let sub = nanos.rem_euclid(i128::from(NANOS_PER_SECOND));
        Timestamp::new(i64::try_from(secs).ok()?, u32::try_from(sub).ok()?)
    }
}

/// Parses exactly `n` ASCII digits.
fn digits(s: &[u8], n: usize) -> Option<u32> {
    let part = s.get(..n)?;
    part.iter().try_fold(0u32, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
}

fn parse_ymd(b: &[u8]) -> Option<(i64, u32, u32)> {
    let (y, m, d) = (digits(b, 4)?, digits(b.get(5..)?, 2)?, digits(b.get(8..)?, 2)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let y = i64::from(y);
    ((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m)).then_some((y, m, d))
}

/// Parses a schema `date` value (`2006-01-02`) as midnight UTC.
pub fn parse_date(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() != 10 {
        return None;
    }
    let (y, m, d) = parse_ymd(b)?;
    Timestamp::new(days_from_civil(y, m, d) * 86_400, 0)
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, s)` does.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    let (y, mo, d) = parse_ymd(b)?;
    if b.get(10) != Some(&b'T') || b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    let (h, mi, sec) = (digits(b.get(11..)?, 2)?, digits(b.get(14..)?, 2)?, digits(b.get(17..)?, 2)?);
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    // Go accepts a comma before the fraction too.
    if matches!(b.get(i), Some(b'.' | b',')) {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return None;
        }
        for _ in n..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(i..)? {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            let (oh, om) = (digits(rest, 2)?, digits(&rest[3..], 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = i64::from(oh * 3600 + om * 60);
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60 + sec) - offset;
    Timestamp::new(secs, nanos)
}

/// Formats a timestamp as Go's `time.RFC3339Nano` in UTC.
pub fn format_rfc3339(t: Timestamp) -> String {
    let days = t.seconds.div_euclid(86_400);
    let rem = t.seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut out = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    if t.nanos != 0 {
        let frac = format!("{:09}", t.nanos);
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Why a duration does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    Invalid,
    Overflow,
}

/// Parses Go's `time.ParseDuration` syntax into nanoseconds.
pub fn parse_duration(s: &str) -> Result<i64, DurationError> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(DurationError::Invalid);
    }
    let limit: i128 = if neg { 1 << 63 } else { (1 << 63) - 1 };
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after) = rest.split_at(int_len);
        let (frac_part, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(DurationError::Invalid);
        }
        let unit_len = after.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(DurationError::Invalid),
        };
        let mut v: i128 = 0;
        for c in int_part.bytes() {
            v = v * 10 + i128::from(c - b'0');
            if v > limit {
                return Err(DurationError::Overflow);
            }
        }
        v *= scale;
        // The fraction, to nanosecond precision, as Go does it (truncating).
        let mut f: i128 = 0;
        let mut denom: i128 = 1;
        for c in frac_part.bytes().take(30) {
            f = f * 10 + i128::from(c - b'0');
            denom *= 10;
        }
        v += f * scale / denom;
        total += v;
        if total > limit {
            return Err(DurationError::Overflow);
        }
        rest = after;
    }
    let total = if neg { -total } else { total };
    i64::try_from(total).map_err(|_| DurationError::Overflow)
}

/// Formats a duration as cel-go's `string(duration)`: seconds with an `s` suffix.
pub fn format_duration(nanos: i64) -> String {
    let secs = nanos / NANOS_PER_SECOND;
    let frac = (nanos % NANOS_PER_SECOND).unsigned_abs();
    let sign = if nanos < 0 && secs == 0 { "-" } else { "" };
    if frac == 0 {
        return format!("{secs}s");
    }
    let f = format!("{frac:09}");
    format!("{sign}{secs}.{}s", f.trim_end_matches('0'))
}

/// The UTC offset (seconds east) at `t` of a time zone argument of the timestamp accessors, as
/// cel-go reads it: with a `:`, a fixed offset (`+hh:mm`, `-hh:mm`); otherwise a zone name for
/// Go's `time.LoadLocation` (`UTC`, `America/New_York`, `Local`; see `zone.rs`). The error is
/// the message cel-go returns.
pub fn zone_offset(tz: &str, t: Timestamp) -> Result<i64, ZoneError> {
    if tz.contains(':') || tz.is_empty() || tz == "UTC" {
        return parse_time_zone(tz).ok_or_else(|| ZoneError::Unknown { name: tz.to_owned() });
    }
    crate::zone::offset(tz, t.seconds)
}

/// A fixed time zone argument: `UTC`, or an offset `+hh:mm`, `-hh:mm`.
pub fn parse_time_zone(tz: &str) -> Option<i64> {
    if tz == "UTC" || tz.is_empty() {
        return Some(0);
    }
    let (sign, rest) = match tz.as_bytes().first()? {
        b'+' => (1, &tz[1..]),
        b'-' => (-1, &tz[1..]),
        _ => (1, tz),
    };
    let (h, m) = rest.split_once(':')?;
    let h: i64 = h.parse().ok()?;
    let m: i64 = m.parse().ok()?;
    (h.abs() < 24 && (0..60).contains(&m)).then_some(sign * (h * 3600 + m * 60))
}

/// The calendar fields of a timestamp shifted by `offset` seconds.
#[derive(Clone, Copy, Debug)]
pub struct Civil {
    pub year: i64,
    /// 1-based.
    pub month: u32,
    /// 1-based.
    pub day: u32,
    /// 0-based day of the year.
    pub day_of_year: u32,
    /// 0 = Sunday.
    pub day_of_week: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

/// The calendar fields of `t` at UTC offset `offset` (seconds).
pub fn civil(t: Timestamp, offset: i64) -> Civil {
    let s = t.seconds + offset;
    let days = s.div_euclid(86_400);
    let rem = s.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let day_of_year = (days - days_from_civil(year, 1, 1)) as u32;
    // 1970-01-01 was a Thursday (4).
    let day_of_week = (days + 4).rem_euclid(7) as u32;
    Civil {
        year,
        month,
        day,
        day_of_year,
        day_of_week,
        hour: (rem / 3600) as u32,
        minute: (rem % 3600 / 60) as u32,
        second: (rem % 60) as u32,
        millis: t.nanos / 1_000_000,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn round_trips() {
        let t = parse_rfc3339("2009-02-13T23:31:30.120Z").unwrap();
        assert_eq!(t.seconds, 1_234_567_890);
        assert_eq!(format_rfc3339(t), "2009-02-13T23:31:30.12Z");
        assert_eq!(parse_rfc3339("2009-02-13T23:31:30+01:00").unwrap().seconds, 1_234_567_890 - 3600);
        assert_eq!(parse_rfc3339("0001-01-01T00:00:00Z").unwrap().seconds, MIN_UNIX_SECONDS);
        assert!(parse_rfc3339("2009-02-30T00:00:00Z").is_none());
        assert_eq!(parse_date("1970-01-02").unwrap().seconds, 86_400);
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration("-1.5s").unwrap(), -1_500_000_000);
        assert_eq!(parse_duration("1.000000001s").unwrap(), 1_000_000_001);
        assert_eq!(parse_duration("1"), Err(DurationError::Invalid));
        assert_eq!(parse_duration("9999999999h"), Err(DurationError::Overflow));
        assert_eq!(format_duration(-1_500_000_000), "-1.5s");
        assert_eq!(format_duration(-500_000_000), "-0.5s");
        assert_eq!(format_duration(3_600_000_000_000), "3600s");
        let c = civil(parse_rfc3339("2024-03-01T12:00:00Z").unwrap(), 0);
        assert_eq!((c.year, c.month, c.day, c.day_of_year, c.day_of_week), (2024, 3, 1, 60, 5));
    }
}
