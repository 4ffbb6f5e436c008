//! IANA time zones for the timestamp accessors (`t.getHours('America/New_York')`), found as
//! Go's `time.LoadLocation` finds them for cel-go: TZif files (RFC 8536) under `$ZONEINFO`, or
//! in the system's zone database (`/usr/share/zoneinfo` and Go's other places), with the
//! POSIX TZ rule at the end of the file for instants after its last transition.
//!
//! This is the one place `versa-cel` reads files. A zone is read once and kept (the names that
//! exist are bounded by the database; names that do not are not remembered). The error texts
//! are Go's: `unknown time zone <name>`, `time: invalid location name`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::calendar::{civil_from_days, days_from_civil, days_in_month, is_leap};

/// Where Go looks for the zone database, after `$ZONEINFO`.
const ZONE_DIRS: [&str; 4] =
    ["/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/", "/usr/lib/locale/TZ/", "/etc/zoneinfo/"];

/// The largest TZif file read (real ones are a few KiB).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Why a time zone argument names no zone (Go's `time.LoadLocation` messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// No zone of that name (or a fixed offset that does not parse).
    #[error("unknown time zone {name}")]
    Unknown { name: String },
    /// The name climbs out of the zone database (`..`, a leading slash).
    #[error("time: invalid location name")]
    InvalidName,
}

/// A time zone: its transitions and the rule that extends them.
#[derive(Debug)]
pub(crate) struct Zone {
    /// Transition instants (Unix seconds), ascending, with the UTC offset from each on.
    transitions: Vec<(i64, i32)>,
    /// The offset before the first transition (Go's `lookupFirstZone`).
    first: i32,
    /// The footer's POSIX TZ rule, for instants after the last transition.
    extend: Option<Rule>,
}

/// The UTC offset, in seconds east, of the zone named `name` at `unix_seconds`.
pub(crate) fn offset(name: &str, unix_seconds: i64) -> Result<i64, ZoneError> {
    Ok(i64::from(load(name)?.offset_at(unix_seconds)))
}

fn load(name: &str) -> Result<Arc<Zone>, ZoneError> {
    static ZONES: OnceLock<Mutex<HashMap<String, Arc<Zone>>>> = OnceLock::new();
    let zones = ZONES.get_or_init(Mutex::default);
    if let Some(zone) = zones.lock().ok().and_then(|z| z.get(name).cloned()) {
        return Ok(zone);
    }
    let zone = Arc::new(if name == "Local" { local() } else { read(name)? });
    if let Ok(mut z) = zones.lock() {
        z.insert(name.to_owned(), zone.clone());
    }
    Ok(zone)
}

/// Go's `LoadLocation` for a name other than `UTC`, `""` and `Local`: the zone's file.
fn read(name: &str) -> Result<Zone, ZoneError> {
    let unknown = || ZoneError::Unknown { name: name.to_owned() };
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err(ZoneError::InvalidName);
    }
    let dirs = std::env::var("ZONEINFO").ok().filter(|d| !d.is_empty()).map(|d| format!("{d}/"));
    for dir in dirs.iter().map(String::as_str).chain(ZONE_DIRS) {
        if let Some(bytes) = read_file(&format!("{dir}{name}")) {
            return parse(&bytes).ok_or_else(unknown);
        }
    }
    Err(unknown())
}

/// The process's zone, `Local` (`$TZ` names a zone file, else `/etc/localtime`), UTC when there
/// is none.
fn local() -> Zone {
    let utc = Zone { transitions: Vec::new(), first: 0, extend: None };
    match std::env::var("TZ") {
        Ok(tz) if tz.is_empty() || tz == "UTC" => utc,
        Ok(tz) => read(tz.trim_start_matches(':')).unwrap_or(utc),
        Err(_) => read_file("/etc/localtime").and_then(|b| parse(&b)).unwrap_or(utc),
    }
}

fn read_file(path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Reads a TZif file (version 1, or the 64-bit data of versions 2 and later, and the footer).
fn parse(bytes: &[u8]) -> Option<Zone> {
    let mut r = Reader { bytes, at: 0 };
    let header = r.header()?;
    let (header, time_size) = if header.version >= b'2' {
        r.skip(header.data_len(4))?;
        (r.header()?, 8)
    } else {
        (header, 4)
    };
    let mut times = Vec::with_capacity(header.timecnt);
    for _ in 0..header.timecnt {
        times.push(if time_size == 8 { r.i64()? } else { i64::from(r.i32()?) });
    }
    let indices = r.take(header.timecnt)?.to_vec();
    let mut types = Vec::with_capacity(header.typecnt);
    for _ in 0..header.typecnt {
        let offset = r.i32()?;
        let is_dst = r.take(1)?[0] != 0;
        r.skip(1)?; // the abbreviation's index
        types.push((offset, is_dst));
    }
    r.skip(header.charcnt + header.leapcnt * (time_size + 4) + header.isstdcnt + header.isutcnt)?;
    let extend = if header.version >= b'2' {
        let rest = r.bytes.get(r.at..)?;
        let text = std::str::from_utf8(rest).ok()?;
        let footer = text.strip_prefix('\n')?.split('\n').next()?;
        if footer.is_empty() { None } else { Some(Rule::parse(footer)?) }
    } else {
        None
    };
    let mut transitions = Vec::with_capacity(times.len());
    for (t, i) in times.iter().zip(&indices) {
        transitions.push((*t, types.get(usize::from(*i))?.0));
    }
    let first = types.get(first_type(&types, &indices))?.0;
    Some(Zone { transitions, first, extend })
}

/// Go's `lookupFirstZone`: the type in force before the first transition.
fn first_type(types: &[(i32, bool)], indices: &[u8]) -> usize {
    let used = |t: usize| indices.iter().any(|i| usize::from(*i) == t);
    if !used(0) {
        return 0;
    }
    if let Some(&first) = indices.first()
        && types.get(usize::from(first)).is_some_and(|t| t.1)
    {
        for t in (0..usize::from(first)).rev() {
            if types.get(t).is_some_and(|t| !t.1) {
                return t;
            }
        }
    }
    types.iter().position(|t| !t.1).unwrap_or(0)
}

impl Zone {
    fn offset_at(&self, sec: i64) -> i32 {
        let (Some(&(first_tx, _)), Some(&(_, last_offset))) = (self.transitions.first(), self.transitions.last())
        else {
            return self.extend.as_ref().map_or(self.first, |r| r.offset_at(sec));
        };
        if sec < first_tx {
            return self.first;
        }
        let i = self.transitions.partition_point(|(t, _)| *t <= sec);
        if i == self.transitions.len() {
            return self.extend.as_ref().map_or(last_offset, |r| r.offset_at(sec));
        }
        self.transitions[i - 1].1
    }
}

/// A POSIX TZ rule (`EST5EDT,M3.2.0,M11.1.0`), as Go's `tzset` reads and applies it.
#[derive(Debug)]
struct Rule {
    /// Offsets east of UTC.
    std: i32,
    dst: Option<Dst>,
}

#[derive(Debug)]
struct Dst {
    offset: i32,
    start: When,
    end: When,
}

/// When in a year a change happens: a day and the local time of day (seconds, which may be
/// negative or past midnight).
#[derive(Debug)]
struct When {
    day: Day,
    time: i64,
}

#[derive(Debug)]
enum Day {
    /// `Jn`: 1-365, February 29 never counted.
    Julian(i64),
    /// `n`: 0-365, February 29 counted.
    Ordinal(i64),
    /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (5 = the last) of month `m`.
    Weekday(i64, i64, i64),
}

impl Rule {
    fn parse(s: &str) -> Option<Rule> {
        let mut p = Parser { s };
        p.name()?;
        // POSIX offsets are west of UTC.
        let std = -p.offset()?;
        if p.s.is_empty() {
            return Some(Rule { std: i32::try_from(std).ok()?, dst: None });
        }
        p.name()?;
        let dst_offset = if p.s.is_empty() || p.s.starts_with(',') { std + 3600 } else { -p.offset()? };
        // Go's default when the rules are missing: the US rules.
        let (start, end) = if p.s.is_empty() {
            (When { day: Day::Weekday(3, 2, 0), time: 7200 }, When { day: Day::Weekday(11, 1, 0), time: 7200 })
        } else {
            p.s = p.s.strip_prefix(',')?;
            let start = p.when()?;
            p.s = p.s.strip_prefix(',')?;
            let end = p.when()?;
            if !p.s.is_empty() {
                return None;
            }
            (start, end)
        };
        Some(Rule {
            std: i32::try_from(std).ok()?,
            dst: Some(Dst { offset: i32::try_from(dst_offset).ok()?, start, end }),
        })
    }

    fn offset_at(&self, sec: i64) -> i32 {
        let Some(dst) = &self.dst else { return self.std };
        // The year (of UTC), and the seconds since it began, as Go computes them.
        let days = sec.div_euclid(86_400);
        let year = civil_from_days(days).0;
        let year_start = days_from_civil(year, 1, 1) * 86_400;
        let ysec = sec - year_start;
        // Changes happen at local time: the start in standard time, the end in daylight time.
        let start = dst.start.seconds_into(year) - i64::from(self.std);
        let end = dst.end.seconds_into(year) - i64::from(dst.offset);
        let in_dst = if start < end { ysec >= start && ysec < end } else { !(ysec >= end && ysec < start) };
        if in_dst { dst.offset } else { self.std }
    }
}

impl When {
    /// Seconds from the start of `year` to this change, in the zone's local time.
    fn seconds_into(&self, year: i64) -> i64 {
        let day = match self.day {
            Day::Julian(n) => {
                let mut d = n - 1;
                if is_leap(year) && n >= 60 {
                    d += 1;
                }
                d
            }
            Day::Ordinal(n) => n,
            Day::Weekday(m, w, d) => {
                let month_start = days_from_civil(year, m as u32, 1);
                // 1970-01-01 was a Thursday.
                let weekday = (month_start + 4).rem_euclid(7);
                let mut day = (d - weekday).rem_euclid(7);
                for _ in 1..w {
                    if day + 7 >= i64::from(days_in_month(year, m as u32)) {
                        break;
                    }
                    day += 7;
                }
                month_start - days_from_civil(year, 1, 1) + day
            }
        };
        day * 86_400 + self.time
    }
}

struct Parser<'s> {
    s: &'s str,
}

impl Parser<'_> {
    /// A zone abbreviation: letters, or anything between `<` and `>`.
    fn name(&mut self) -> Option<()> {
        if let Some(rest) = self.s.strip_prefix('<') {
            let end = rest.find('>')?;
            self.s = &rest[end + 1..];
            return Some(());
        }
        let end = self.s.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(self.s.len());
        (end >= 3).then(|| self.s = &self.s[end..])
    }

    /// `[+-]hh[:mm[:ss]]`, in seconds.
    fn offset(&mut self) -> Option<i64> {
        let sign = match self.s.as_bytes().first()? {
            b'-' => -1,
            b'+' => 1,
            _ => 0,
        };
        if sign != 0 {
            self.s = &self.s[1..];
        }
        Some(if sign < 0 { -self.clock()? } else { self.clock()? })
    }

    /// `hh[:mm[:ss]]` (hours up to 167), in seconds.
    fn clock(&mut self) -> Option<i64> {
        let mut total = 0;
        for (i, unit) in [3600, 60, 1].into_iter().enumerate() {
            if i > 0 {
                let Some(rest) = self.s.strip_prefix(':') else { break };
                self.s = rest;
            }
            let n = self.number()?;
            if (i == 0 && n > 167) || (i > 0 && n > 59) {
                return None;
            }
            total += n * unit;
        }
        Some(total)
    }

    fn number(&mut self) -> Option<i64> {
        let end = self.s.find(|c: char| !c.is_ascii_digit()).unwrap_or(self.s.len());
        let n = self.s[..end].parse().ok()?;
        self.s = &self.s[end..];
        Some(n)
    }

    /// A change: `Jn`, `n` or `Mm.w.d`, and an optional `/time` (02:00 by default).
    fn when(&mut self) -> Option<When> {
        let day = if let Some(rest) = self.s.strip_prefix('J') {
            self.s = rest;
            let n = self.number()?;
            (1..=365).contains(&n).then_some(Day::Julian(n))?
        } else if let Some(rest) = self.s.strip_prefix('M') {
            self.s = rest;
            let m = self.number()?;
            self.s = self.s.strip_prefix('.')?;
            let w = self.number()?;
            self.s = self.s.strip_prefix('.')?;
            let d = self.number()?;
            ((1..=12).contains(&m) && (1..=5).contains(&w) && (0..=6).contains(&d)).then_some(Day::Weekday(m, w, d))?
        } else {
            let n = self.number()?;
            (0..=365).contains(&n).then_some(Day::Ordinal(n))?
        };
        let time = match self.s.strip_prefix('/') {
            Some(rest) => {
                self.s = rest;
                self.offset()?
            }
            None => 7200,
        };
        Some(When { day, time })
    }
}

/// Big-endian fields of a TZif file.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

struct Header {
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    /// The size of the data block that follows, with times of `time_size` bytes.
    fn data_len(&self, time_size: usize) -> usize {
        self.timecnt * (time_size + 1)
            + self.typecnt * 6
            + self.charcnt
            + self.leapcnt * (time_size + 4)
            + self.isstdcnt
            + self.isutcnt
    }
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        let out = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(out)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.i32()?).ok()
    }

    fn header(&mut self) -> Option<Header> {
        if self.take(4)? != b"TZif" {
            return None;
        }
        let version = self.take(1)?[0];
        self.skip(15)?;
        Some(Header {
            version,
            isutcnt: self.count()?,
            isstdcnt: self.count()?,
            leapcnt: self.count()?,
            timecnt: self.count()?,
            typecnt: self.count()?,
            charcnt: self.count()?,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Unix seconds of a UTC date and time.
    fn at(y: i64, m: u32, d: u32, h: i64) -> i64 {
        days_from_civil(y, m, d) * 86_400 + h * 3600
    }

    #[test]
    fn posix_rules_as_go_applies_them() {
        let us = Rule::parse("EST5EDT,M3.2.0,M11.1.0").unwrap();
        // 2026: DST from March 8 02:00 EST (07:00 UTC) to November 1 02:00 EDT (06:00 UTC).
        for (sec, want) in [
            (at(2026, 3, 8, 6), -5),
            (at(2026, 3, 8, 7), -4),
            (at(2026, 7, 1, 12), -4),
            (at(2026, 11, 1, 5), -4),
            (at(2026, 11, 1, 6), -5),
            (at(2100, 7, 1, 0), -4),
        ] {
            assert_eq!(us.offset_at(sec), want * 3600, "{sec}");
        }
        // Southern hemisphere: daylight time across the new year.
        let au = Rule::parse("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(au.offset_at(at(2026, 1, 15, 0)), 11 * 3600);
        assert_eq!(au.offset_at(at(2026, 6, 15, 0)), 10 * 3600);
        // Named offsets, half hours, no daylight time.
        assert_eq!(Rule::parse("<+0530>-5:30").unwrap().offset_at(0), 5 * 3600 + 1800);
        assert_eq!(Rule::parse("IST-5:30").unwrap().offset_at(at(2026, 7, 1, 0)), 5 * 3600 + 1800);
        for bad in ["", "E5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.2.0"] {
            assert!(Rule::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn zone_names_as_go_refuses_them() {
        assert_eq!(offset("../etc/passwd", 0).unwrap_err().to_string(), "time: invalid location name");
        assert_eq!(offset("/etc/localtime", 0).unwrap_err().to_string(), "time: invalid location name");
        assert_eq!(offset("Mars/Olympus_Mons", 0).unwrap_err().to_string(), "unknown time zone Mars/Olympus_Mons");
    }

    /// With the system's zone database (installed by `hack/install-deps.sh`; the test says so
    /// and passes when there is none).
    #[test]
    fn system_zones() {
        if read_file("/usr/share/zoneinfo/America/New_York").is_none() {
            eprintln!("no zone database in /usr/share/zoneinfo: skipped");
            return;
        }
        for (name, sec, want) in [
            ("America/New_York", at(2026, 1, 15, 12), -5 * 3600),
            ("America/New_York", at(2026, 7, 15, 12), -4 * 3600),
            ("America/New_York", at(2150, 7, 15, 12), -4 * 3600),
            ("America/New_York", at(1800, 1, 1, 0), -(4 * 3600 + 56 * 60 + 2)),
            ("Europe/Berlin", at(2026, 7, 15, 12), 2 * 3600),
            ("Asia/Kolkata", at(2026, 7, 15, 12), 5 * 3600 + 1800),
            ("Australia/Sydney", at(2026, 1, 15, 12), 11 * 3600),
            ("UTC", at(2026, 1, 15, 12), 0),
        ] {
            assert_eq!(offset(name, sec).unwrap(), want, "{name} at {sec}");
        }
    }
}
