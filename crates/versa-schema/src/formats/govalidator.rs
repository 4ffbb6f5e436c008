//! The formats whose rules kube-openapi's `strfmt` takes from its fork of govalidator, and its
//! own hostname expression: `hostname`, `bsonobjectid`, the `uuid`s, the `isbn`s with their
//! check digits, `creditcard` (Luhn), `ssn`, `hexcolor`, `rgbcolor` and `byte` (base64).

use std::sync::LazyLock;

use regex::Regex;

use super::chars::is_go_space;

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

pub(super) fn is_rgb_color(s: &str) -> bool {
    static_match(&RGB_COLOR, s)
}

pub(super) fn is_hostname(s: &str) -> bool {
    static_match(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|label| label.len() <= 63)
}

pub(super) fn is_bson_object_id(s: &str) -> bool {
    s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` where `V` is
/// the version digit (any hex digit for plain `uuid`, which also has no variant constraint).
pub(super) fn is_uuid(s: &str, version: Option<u8>) -> bool {
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

pub(super) fn is_isbn10(s: &str) -> bool {
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

pub(super) fn is_isbn13(s: &str) -> bool {
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
pub(super) fn is_credit_card(s: &str) -> bool {
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
pub(super) fn is_ssn(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 11
        && b.iter().enumerate().all(|(i, &c)| match i {
            3 | 6 => c == b'-' || c == b' ',
            _ => c.is_ascii_digit(),
        })
}

/// `^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`
pub(super) fn is_hex_color(s: &str) -> bool {
    let h = s.strip_prefix('#').unwrap_or(s);
    (h.len() == 3 || h.len() == 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// govalidator's base64: padded standard alphabet, at least one quartet (so `""` is invalid).
pub(super) fn is_base64(s: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_expressions_compile() {
        assert!(HOSTNAME.is_some() && CREDIT_CARD.is_some() && RGB_COLOR.is_some());
    }
}
