//! String formats (`format:`) with the semantics of kube-apiserver's CRD validation.
//!
//! kube-apiserver keeps only the formats listed in apiextensions-apiserver's `formats.go`
//! (others are stripped from the schema, so they accept everything) and validates them with
//! kube-openapi's `strfmt` default registry, whose checks come from Go's standard library
//! (`net.ParseIP`, `net/url.ParseRequestURI`, `net/mail.ParseAddress`, `time.Parse`,
//! `time.ParseDuration`), from k8s.io/utils (`ParseIPSloppy`, `ParseCIDRSloppy`: Go 1.16
//! parsing that tolerates leading zeros) and from a fork of govalidator. Each check below
//! re-implements the acceptance rule of the Go function it mirrors, quirks included (for
//! example `date-time` only looks at the text between the first and second `T`), because a CR
//! accepted by Kubernetes must be accepted here and vice versa.
//!
//! Format names are normalised as the registry does: dashes are removed, so `date-time`,
//! `datetime` and `k8s-short-name` all work. Names are case-sensitive.
//!
//! Performance: validation runs per value, so nothing is compiled per call. Most checks are
//! hand-written scanners; the three that keep a regular expression (hostname, creditcard,
//! rgbcolor) compile it once in a `LazyLock`.
//!
//! Not supported (stripped, so accepting everything): `quantity`, which newer
//! apiextensions-apiserver sources list but the 1.36 release does not validate, and
//! `k8s-ip-sloppy`, which is registered in kube-openapi but not enabled for CRDs.

use std::sync::LazyLock;

use regex::Regex;

/// A format kube-apiserver validates for CRDs (at compatibility version 1.34 and later).
///
/// Resolve a schema's `format` once with [`Format::parse`] when the schema is lowered, then call
/// [`Format::matches`] per value: no name handling happens on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
    K8sShortName,
    K8sLongName,
}

impl Format {
    /// The format named `name` (dashes ignored, case-sensitive), or `None` for formats
    /// Kubernetes does not validate.
    pub fn parse(name: &str) -> Option<Format> {
        if let Some(f) = Format::parse_normalized(name) {
            return Some(f);
        }
        if name.contains('-') {
            return Format::parse_normalized(&name.replace('-', ""));
        }
        None
    }

    fn parse_normalized(name: &str) -> Option<Format> {
        Some(match name {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "isbn" => Format::Isbn,
            "isbn10" => Format::Isbn10,
            "isbn13" => Format::Isbn13,
            "creditcard" => Format::CreditCard,
            "ssn" => Format::Ssn,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "duration" => Format::Duration,
            // The common spellings are listed so that they resolve without allocating.
            "datetime" | "date-time" => Format::DateTime,
            "k8sshortname" | "k8s-short-name" => Format::K8sShortName,
            "k8slongname" | "k8s-long-name" => Format::K8sLongName,
            _ => return None,
        })
    }

    /// Whether `value` is valid for this format.
    pub fn matches(self, value: &str) -> bool {
        match self {
            Format::BsonObjectId => is_bson_object_id(value),
            Format::Uri => is_request_uri(value),
            Format::Email => is_email(value),
            Format::Hostname => is_hostname(value),
            Format::Ipv4 => is_ipv4(value),
            Format::Ipv6 => is_ipv6(value),
            Format::Cidr => is_cidr(value),
            Format::Mac => is_mac(value),
            Format::Uuid => is_uuid(value, None),
            Format::Uuid3 => is_uuid(value, Some(b'3')),
            Format::Uuid4 => is_uuid(value, Some(b'4')),
            Format::Uuid5 => is_uuid(value, Some(b'5')),
            Format::Isbn => is_isbn10(value) || is_isbn13(value),
            Format::Isbn10 => is_isbn10(value),
            Format::Isbn13 => is_isbn13(value),
            Format::CreditCard => is_credit_card(value),
            Format::Ssn => is_ssn(value),
            Format::HexColor => is_hex_color(value),
            Format::RgbColor => static_match(&RGB_COLOR, value),
            Format::Byte => is_base64(value),
            Format::Password => true,
            Format::Date => is_date(value),
            Format::Duration => is_duration(value),
            Format::DateTime => is_date_time(value),
            Format::K8sShortName => crate::names::is_dns1123_label(value).is_empty(),
            Format::K8sLongName => crate::names::is_dns1123_subdomain(value).is_empty(),
        }
    }
}

/// Whether `format` is one Kubernetes validates (unknown formats are ignored).
pub fn is_supported(format: &str) -> bool {
    Format::parse(format).is_some()
}

/// Whether `value` is valid for `format`. Unknown formats accept everything. Prefer resolving
/// the format once with [`Format::parse`] when validating many values.
pub fn matches(format: &str, value: &str) -> bool {
    Format::parse(format).is_none_or(|f| f.matches(value))
}

// ------------------------------------------------------------------ character classes of Go

/// Go's `\s` in regexps: ASCII `[\t\n\f\r ]` (no vertical tab).
fn is_go_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn hex_val(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

// ------------------------------------------------------------------ regex-backed formats

/// strfmt's hostname rule: either one label, or dot-terminated labels followed by a top-level
/// domain of 2 to 63 letters; symbols and letters of any script count as label characters.
/// Written with the class `[-...]` first because Rust, unlike Go, rejects `9-\p{S}` in a class.
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let ch = r"[a-zA-Z0-9\p{S}\p{L}]";
    let ch_dash = r"[-a-zA-Z0-9\p{S}\p{L}]";
    let src = format!(r"^(?:{ch}(?:-?{ch}{{0,62}})?|(?:{ch}(?:{ch_dash}{{0,61}}{ch})?\.)+[a-zA-Z\p{{L}}]{{2,63}})$");
    build_static(&src)
});

/// govalidator's credit card prefixes and lengths (the 2019 list kube-openapi forked).
static CREDIT_CARD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    build_static(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});

/// govalidator's `rgb(r, g, b)` with components 0-255 and Go's ASCII `\s` around them.
static RGB_COLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let n = r"(?:0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let s = r"[\t\n\x0C\r ]*";
    build_static(&format!(r"^rgb\({s}{n}{s},{s}{n}{s},{s}{n}{s}\)$"))
});

/// Builds one of the fixed expressions above. They are constants checked by the tests, so a
/// failure is a programming error; it makes the format reject everything instead of panicking.
fn build_static(src: &str) -> Option<Regex> {
    Regex::new(src).ok()
}

fn static_match(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

fn is_hostname(s: &str) -> bool {
    static_match(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|label| label.len() <= 63)
}

// ------------------------------------------------------------------ simple formats

fn is_bson_object_id(s: &str) -> bool {
    s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` where `V` is
/// the version digit (any hex digit for plain `uuid`, which also has no variant constraint).
fn is_uuid(s: &str, version: Option<u8>) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    for (n, group) in [8usize, 4, 4, 4, 12].iter().enumerate() {
        if n > 0 && b.get(i) == Some(&b'-') {
            i += 1;
        }
        let Some(chunk) = b.get(i..i + group) else { return false };
        if !chunk.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        if let Some(v) = version {
            if n == 2 && chunk[0] != v {
                return false;
            }
            if n == 3 && v != b'3' && !matches!(chunk[0].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b') {
                return false;
            }
        }
        i += group;
    }
    i == b.len()
}

/// govalidator strips `[\s-]` before checking ISBNs.
fn isbn_digits(s: &str) -> Vec<u8> {
    s.bytes().filter(|&b| !is_go_space(b) && b != b'-').collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 10 || !d[..9].iter().all(u8::is_ascii_digit) || !(d[9].is_ascii_digit() || d[9] == b'X') {
        return false;
    }
    let mut sum: u32 = 0;
    for (i, &c) in d[..9].iter().enumerate() {
        sum += (i as u32 + 1) * u32::from(c - b'0');
    }
    sum += 10 * if d[9] == b'X' { 10 } else { u32::from(d[9] - b'0') };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let mut sum: u32 = 0;
    for (i, &c) in d[..12].iter().enumerate() {
        sum += if i % 2 == 0 { 1 } else { 3 } * u32::from(c - b'0');
    }
    u32::from(d[12] - b'0') == (10 - sum % 10) % 10
}

/// All non-digits (of any script) are dropped, then prefix/length and the Luhn checksum.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !static_match(&CREDIT_CARD, &digits) {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in digits.bytes().rev().enumerate() {
        let mut d = u32::from(c - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d >= 10 {
                d = d % 10 + 1;
            }
        }
        sum += d;
    }
    sum.is_multiple_of(10)
}

/// Exactly 11 bytes of `\d{3}[- ]?\d{2}[- ]?\d{4}`, so both separators are present.
fn is_ssn(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 11
        && b.iter().enumerate().all(|(i, &c)| match i {
            3 | 6 => c == b'-' || c == b' ',
            _ => c.is_ascii_digit(),
        })
}

/// `^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`
fn is_hex_color(s: &str) -> bool {
    let h = s.strip_prefix('#').unwrap_or(s);
    (h.len() == 3 || h.len() == 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// govalidator's base64: padded standard alphabet, at least one quartet (so `""` is invalid).
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return false;
    }
    b[..b.len() - pad].iter().all(|&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
}

// ------------------------------------------------------------------ date, date-time

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
fn is_date(s: &str) -> bool {
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
fn is_date_time(s: &str) -> bool {
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

// ------------------------------------------------------------------ duration

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, or else a Scala-like list of
/// `<digits> <unit>` pairs where at least one unit is known.
fn is_duration(s: &str) -> bool {
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

// ------------------------------------------------------------------ IP addresses, CIDR, MAC

/// `ipv4`: k8s.io/utils `ParseIPSloppy` (Go 1.16 `net.ParseIP`, leading zeros allowed)
/// succeeds and the text contains a dot — so an IPv4-mapped IPv6 address also passes.
fn is_ipv4(s: &str) -> bool {
    parse_ip(s.as_bytes(), true) && s.contains('.')
}

/// `ipv6`: today's `net.ParseIP` (no leading zeros in embedded IPv4, at most four hex digits
/// per group, no zone) succeeds and the text contains a colon.
fn is_ipv6(s: &str) -> bool {
    parse_ip(s.as_bytes(), false) && s.contains(':')
}

/// `cidr`: `ParseCIDRSloppy` (Go 1.16 `net.ParseCIDR`).
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else { return false };
    let bits = if parse_ipv4(addr.as_bytes(), true) {
        32
    } else if parse_ipv6(addr.as_bytes(), true) {
        128
    } else {
        return false;
    };
    let m = mask.as_bytes();
    if m.is_empty() || m.len() > 8 || !m.iter().all(u8::is_ascii_digit) {
        return false;
    }
    m.iter().fold(0u64, |acc, &c| acc * 10 + u64::from(c - b'0')) <= bits
}

/// `net.ParseIP`, dispatching on the first `.` or `:`.
fn parse_ip(s: &[u8], sloppy: bool) -> bool {
    match s.iter().find(|&&c| c == b'.' || c == b':') {
        Some(b'.') => parse_ipv4(s, sloppy),
        Some(_) => parse_ipv6(s, sloppy),
        None => false,
    }
}

/// Four decimal fields ≤ 255. Strict parsing rejects leading zeros; sloppy (Go 1.16) accepts
/// any number of digits as long as the value fits.
fn parse_ipv4(s: &[u8], sloppy: bool) -> bool {
    let mut fields = 0;
    for (i, field) in s.split(|&c| c == b'.').enumerate() {
        if i >= 4 || field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
            return false;
        }
        if !sloppy && field.len() > 1 && field[0] == b'0' {
            return false;
        }
        let digits = field.iter().skip_while(|&&c| c == b'0').count();
        if digits > 3
            || field.iter().fold(0u32, |acc, &c| acc.saturating_mul(10).saturating_add(u32::from(c - b'0'))) > 255
        {
            return false;
        }
        fields = i + 1;
    }
    fields == 4
}

/// RFC 4291 text form with one optional `::` and an optional embedded IPv4 tail. Strict
/// parsing (netip) allows at most four hex digits per group; sloppy (Go 1.16) allows any
/// number as long as the value fits in 16 bits.
fn parse_ipv6(s: &[u8], sloppy: bool) -> bool {
    let mut s = s;
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return true;
        }
    }
    let mut i = 0; // bytes of address filled
    while i < 16 {
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < s.len() {
            let Some(v) = hex_val(s[off]) else { break };
            if !sloppy && off > 3 {
                return false;
            }
            // The value only grows, so stopping past 16 bits also keeps `acc` from overflowing;
            // sloppy parsing therefore accepts any number of leading zeros, as Go 1.16 did.
            acc = (acc << 4) | v;
            if acc > 0xFFFF {
                return false;
            }
            off += 1;
        }
        if off == 0 {
            return false;
        }
        if off < s.len() && s[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return false;
            }
            if i + 4 > 16 {
                return false;
            }
            if !parse_ipv4(s, sloppy) {
                return false;
            }
            s = &[];
            i += 4;
            break;
        }
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return false;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return false;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return false;
    }
    if i < 16 { ellipsis.is_some() } else { ellipsis.is_none() }
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:..`, `xx-xx-..` or `xxxx.xxxx.xxxx`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |p: &[u8]| p.len() >= 2 && p[0].is_ascii_hexdigit() && p[1].is_ascii_hexdigit();
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if !matches!(n, 6 | 8 | 20) {
            return false;
        }
        (0..n).all(|k| {
            let x = k * 3;
            hex2(&b[x..]) && (k == n - 1 || b[x + 2] == b[2])
        })
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if !matches!(n, 6 | 8 | 20) {
            return false;
        }
        (0..n / 2).all(|k| {
            let x = k * 5;
            hex2(&b[x..]) && hex2(&b[x + 2..]) && (k == n / 2 - 1 || b[x + 4] == b'.')
        })
    } else {
        false
    }
}

// ------------------------------------------------------------------ uri

/// `net/url.ParseRequestURI` succeeds: an absolute URI or an absolute path, no control
/// characters, valid `%` escapes, a syntactically valid authority when there is one.
fn is_request_uri(raw: &str) -> bool {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) || raw.is_empty() {
        return false;
    }
    if raw == "*" {
        return true;
    }
    let Some((scheme, rest)) = url_scheme(raw) else { return false };
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(before, _)| before)
    };
    if !rest.starts_with('/') {
        // A scheme with a rootless rest is an opaque URI and accepted as is.
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty() && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, p) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        if !url_authority_ok(authority) {
            return false;
        }
        path = p;
    }
    url_unescape_ok(path, UrlMode::Path)
}

/// Go's `getScheme`: `None` for "missing protocol scheme" (a leading colon).
fn url_scheme(raw: &str) -> Option<(&str, &str)> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return None,
            b':' => return Some((&raw[..i], &raw[i + 1..])),
            _ => return Some(("", raw)),
        }
    }
    Some(("", raw))
}

#[derive(Clone, Copy, PartialEq)]
enum UrlMode {
    Path,
    Host,
    Zone,
    UserPassword,
}

/// Go's `shouldEscape` for the host and zone modes: what may appear unescaped in a host.
fn url_host_char_ok(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&c)
}

/// Go's `unescape` used as a validity check.
fn url_unescape_ok(s: &str, mode: UrlMode) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() {
                    return false;
                }
                let (Some(hi), Some(lo)) = (hex_val(b[i + 1]), hex_val(b[i + 2])) else { return false };
                let is_pct25 = &b[i..i + 3] == b"%25";
                if mode == UrlMode::Host && hi < 8 && !is_pct25 {
                    return false;
                }
                if mode == UrlMode::Zone {
                    let v = (hi << 4 | lo) as u8;
                    if !is_pct25 && v != b' ' && v < 0x80 && !url_host_char_ok(v) {
                        return false;
                    }
                }
                i += 3;
            }
            c => {
                if matches!(mode, UrlMode::Host | UrlMode::Zone) && c < 0x80 && !url_host_char_ok(c) {
                    return false;
                }
                i += 1;
            }
        }
    }
    true
}

fn url_authority_ok(authority: &str) -> bool {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    if !url_host_ok(host) {
        return false;
    }
    let Some(userinfo) = userinfo else { return true };
    let valid_chars = userinfo.chars().all(|r| r.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(r));
    if !valid_chars {
        return false;
    }
    match userinfo.split_once(':') {
        None => url_unescape_ok(userinfo, UrlMode::UserPassword),
        Some((user, pass)) => {
            url_unescape_ok(user, UrlMode::UserPassword) && url_unescape_ok(pass, UrlMode::UserPassword)
        }
    }
}

fn url_valid_optional_port(port: &str) -> bool {
    port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()))
}

fn url_host_ok(host: &str) -> bool {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else { return false };
        if !url_valid_optional_port(&host[i + 1..]) {
            return false;
        }
        if let Some(zone) = host[..i].find("%25") {
            return url_unescape_ok(&host[..zone], UrlMode::Host)
                && url_unescape_ok(&host[zone..i], UrlMode::Zone)
                && url_unescape_ok(&host[i..], UrlMode::Host);
        }
    } else if let Some(i) = host.rfind(':')
        && !url_valid_optional_port(&host[i..])
    {
        return false;
    }
    url_unescape_ok(host, UrlMode::Host)
}

// ------------------------------------------------------------------ email

/// `net/mail.ParseAddress` succeeds: one RFC 5322 address — `local@domain`, optionally with a
/// display name (`Name <local@domain>`), a trailing comment, or as a one-member group
/// (`Team: a@b.c;`). Domain literals (`[1.2.3.4]`) are not supported, as in Go.
fn is_email(s: &str) -> bool {
    let mut p = MailParser { s: s.as_bytes() };
    let Ok(addrs) = p.parse_address(true) else { return false };
    if !p.skip_cfws() || !p.s.is_empty() {
        return false;
    }
    addrs == 1
}

/// One step of UTF-8 decoding over bytes (the parser slices bytes like Go does, so it can land
/// inside a character; such bytes decode as invalid, as Go's `utf8.DecodeRuneInString`).
enum Rune {
    End,
    Invalid,
    Char(char, usize),
}

fn next_rune(b: &[u8]) -> Rune {
    let Some(&first) = b.first() else { return Rune::End };
    let width = match first {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Rune::Invalid,
    };
    match b.get(..width).map(std::str::from_utf8) {
        Some(Ok(s)) => s.chars().next().map_or(Rune::Invalid, |c| Rune::Char(c, width)),
        _ => Rune::Invalid,
    }
}

struct MailParser<'a> {
    s: &'a [u8],
}

type MailResult<T> = Result<T, ()>;

impl MailParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.first().copied()
    }

    fn consume(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.s = &self.s[1..];
            true
        } else {
            false
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.s = &self.s[1..];
        }
    }

    /// Returns how many addresses were parsed (a group may hold several or none).
    fn parse_address(&mut self, handle_group: bool) -> MailResult<usize> {
        self.skip_space();
        if self.s.is_empty() {
            return Err(());
        }
        // A bare addr-spec is tried first; it restores the input when it fails.
        if self.consume_addr_spec().is_ok() {
            self.skip_space();
            if self.peek() == Some(b'(') {
                self.consume_display_name_comment()?;
            }
            return Ok(1);
        }
        if self.peek() != Some(b'<') {
            self.consume_phrase()?;
        }
        self.skip_space();
        if handle_group && self.consume(b':') {
            return self.consume_group_list();
        }
        if !self.consume(b'<') {
            return Err(());
        }
        self.consume_addr_spec()?;
        if !self.consume(b'>') {
            return Err(());
        }
        Ok(1)
    }

    fn consume_group_list(&mut self) -> MailResult<usize> {
        self.skip_space();
        if self.consume(b';') {
            self.skip_cfws();
            return Ok(0);
        }
        let mut n = 0;
        loop {
            self.skip_space();
            n += self.parse_address(false)?;
            if !self.skip_cfws() {
                return Err(());
            }
            if self.consume(b';') {
                self.skip_cfws();
                return Ok(n);
            }
            if !self.consume(b',') {
                return Err(());
            }
        }
    }

    fn consume_addr_spec(&mut self) -> MailResult<()> {
        let orig = self.s;
        let r = self.consume_addr_spec_inner();
        if r.is_err() {
            self.s = orig;
        }
        r
    }

    fn consume_addr_spec_inner(&mut self) -> MailResult<()> {
        self.skip_space();
        if self.s.is_empty() {
            return Err(());
        }
        if self.peek() == Some(b'"') {
            if self.consume_quoted_string()? == 0 {
                return Err(());
            }
        } else {
            self.consume_atom(true, false)?;
        }
        if !self.consume(b'@') {
            return Err(());
        }
        self.skip_space();
        if self.s.is_empty() {
            return Err(());
        }
        self.consume_atom(true, false)
    }

    fn consume_phrase(&mut self) -> MailResult<()> {
        let mut words = 0;
        loop {
            self.skip_space();
            if self.s.is_empty() {
                break;
            }
            let ok = if self.peek() == Some(b'"') {
                self.consume_quoted_string().is_ok()
            } else {
                let start = self.s;
                match self.consume_atom(true, true) {
                    Ok(()) => {
                        let word = &start[..start.len() - self.s.len()];
                        rfc2047_charset_ok(word)
                    }
                    Err(()) => false,
                }
            };
            if !ok {
                break;
            }
            words += 1;
        }
        if words == 0 { Err(()) } else { Ok(()) }
    }

    /// Returns the number of characters of the unquoted string.
    fn consume_quoted_string(&mut self) -> MailResult<usize> {
        let mut i = 1;
        let mut escaped = false;
        let mut len = 0;
        loop {
            let (c, size) = match next_rune(&self.s[i..]) {
                Rune::End | Rune::Invalid => return Err(()),
                Rune::Char(c, size) => (c, size),
            };
            if escaped {
                if !is_vchar(c) && !is_wsp(c) {
                    return Err(());
                }
                len += 1;
                escaped = false;
            } else if (is_vchar(c) && c != '\\' && c != '"') || is_wsp(c) {
                len += 1;
            } else if c == '"' {
                self.s = &self.s[i + 1..];
                return Ok(len);
            } else if c == '\\' {
                escaped = true;
            } else {
                return Err(());
            }
            i += size;
        }
    }

    fn consume_atom(&mut self, dot: bool, permissive: bool) -> MailResult<()> {
        let mut i = 0;
        loop {
            match next_rune(&self.s[i..]) {
                Rune::Invalid => return Err(()),
                Rune::Char(c, size) if is_atext(c, dot, permissive) => i += size,
                _ => break,
            }
        }
        if i == 0 {
            return Err(());
        }
        let atom = &self.s[..i];
        if !permissive && (atom.starts_with(b".") || atom.ends_with(b".") || atom.windows(2).any(|w| w == b"..")) {
            return Err(());
        }
        self.s = &self.s[i..];
        Ok(())
    }

    fn consume_display_name_comment(&mut self) -> MailResult<()> {
        if !self.consume(b'(') {
            return Err(());
        }
        let start = self.s;
        if !self.consume_comment() {
            return Err(());
        }
        let comment = &start[..start.len() - self.s.len()];
        let ok =
            comment.split(|&b| b == b' ' || b == b'\t' || b == b')').filter(|w| !w.is_empty()).all(rfc2047_charset_ok);
        if ok { Ok(()) } else { Err(()) }
    }

    fn skip_cfws(&mut self) -> bool {
        self.skip_space();
        while self.consume(b'(') {
            if !self.consume_comment() {
                return false;
            }
            self.skip_space();
        }
        true
    }

    /// After `(`: nested comments with backslash escapes; false when unterminated.
    fn consume_comment(&mut self) -> bool {
        let mut depth = 1;
        while !self.s.is_empty() && depth != 0 {
            if self.s[0] == b'\\' && self.s.len() > 1 {
                self.s = &self.s[1..];
            } else if self.s[0] == b'(' {
                depth += 1;
            } else if self.s[0] == b')' {
                depth -= 1;
            }
            self.s = &self.s[1..];
        }
        depth == 0
    }
}

fn is_vchar(c: char) -> bool {
    ('!'..='~').contains(&c) || c as u32 >= 0x80
}

fn is_wsp(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_atext(c: char, dot: bool, permissive: bool) -> bool {
    match c {
        '.' => dot,
        '(' | ')' | '[' | ']' | ';' | '@' | '\\' | ',' => permissive,
        '<' | '>' | '"' | ':' => false,
        _ => is_vchar(c),
    }
}

/// Go's mail parser decodes RFC 2047 encoded words (`=?charset?q?text?=`) in display names and
/// fails the whole address when a well-formed word names a charset other than UTF-8,
/// ISO-8859-1 or US-ASCII. Malformed encoded words are kept as plain text.
fn rfc2047_charset_ok(word: &[u8]) -> bool {
    if word.len() < 8
        || !word.starts_with(b"=?")
        || !word.ends_with(b"?=")
        || word.iter().filter(|&&b| b == b'?').count() != 4
    {
        return true;
    }
    let inner = &word[2..word.len() - 2];
    let mut parts = inner.splitn(3, |&b| b == b'?');
    let (Some(charset), Some(encoding), Some(text)) = (parts.next(), parts.next(), parts.next()) else { return true };
    if charset.is_empty() || encoding.len() != 1 {
        return true;
    }
    let decodes = match encoding[0] {
        b'B' | b'b' => base64_std_decodes(text),
        b'Q' | b'q' => q_decodes(text),
        _ => false,
    };
    if !decodes {
        return true;
    }
    ["utf-8", "iso-8859-1", "us-ascii"].iter().any(|k| charset.eq_ignore_ascii_case(k.as_bytes()))
}

fn base64_std_decodes(text: &[u8]) -> bool {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    engine.decode(text).is_ok()
}

fn q_decodes(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'=' => {
                if i + 2 >= text.len() || hex_val(text[i + 1]).is_none() || hex_val(text[i + 2]).is_none() {
                    return false;
                }
                i += 2;
            }
            b'_' | b' '..=b'~' | b'\n' | b'\r' | b'\t' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_expressions_compile() {
        assert!(HOSTNAME.is_some() && CREDIT_CARD.is_some() && RGB_COLOR.is_some());
    }
}
