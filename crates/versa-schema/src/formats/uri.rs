//! `uri` as Go's `net/url.ParseRequestURI` accepts it: scheme, authority, escapes and port.

use super::chars::hex_val;

/// `net/url.ParseRequestURI` succeeds: an absolute URI or an absolute path, no control
/// characters, valid `%` escapes, a syntactically valid authority when there is one.
pub(super) fn is_request_uri(raw: &str) -> bool {
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
