//! `kubernetes.URL` values (kube's `pkg/cel/url.go`): a URL parsed as Go's `url.Parse` parses it,
//! with its parts and query.

use std::collections::BTreeMap;

/// A parsed URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub source: String,
    pub scheme: String,
    pub host: String,
    /// The path as written (still escaped).
    pub raw_path: String,
    pub raw_query: String,
    pub opaque: String,
}

/// Go's `url.Error` for a URL that does not parse: `parse "<url>": <reason>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("parse {url:?}: {reason}")]
pub struct UrlError {
    /// The text given.
    pub url: String,
    /// Go's reason (`invalid URI for request`, `missing protocol scheme`, ...).
    pub reason: String,
}

fn should_escape_host(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c))
}

fn should_escape_path(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&c))
}

/// Checks the `%XX` escapes of `s`.
fn check_escapes(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)) {
                let end = (i + 3).min(b.len());
                return Err(format!("invalid URL escape {:?}", String::from_utf8_lossy(&b[i..end])));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

fn unescape(s: &str, plus_is_space: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn parse_host(host: &str) -> Result<(), String> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some(close) = rest.find(']') else { return Err("missing ']' in host".into()) };
        let after = &rest[close + 1..];
        if !after.is_empty() && !after.starts_with(':') {
            return Err(format!("invalid port {after:?} after host"));
        }
        (&host[..close + 2], after)
    } else {
        match host.rfind(':') {
            Some(i) => (&host[..i], &host[i..]),
            None => (host, ""),
        }
    };
    if !port.is_empty() && !port[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid port {port:?} after host"));
    }
    check_escapes(name)?;
    if let Some(c) = name.bytes().find(|&c| c < 0x80 && c != b'%' && should_escape_host(c)) {
        return Err(format!("invalid character {:?} in host name", (c as char).to_string()));
    }
    Ok(())
}

/// Go's `url.ParseRequestURI`.
pub fn parse(raw: &str) -> Result<Url, UrlError> {
    let fail = |reason: String| UrlError { url: raw.to_owned(), reason };
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(fail("net/url: invalid control character in URL".into()));
    }
    if raw.is_empty() {
        return Err(fail("empty url".into()));
    }
    let mut url = Url {
        source: raw.to_owned(),
        scheme: String::new(),
        host: String::new(),
        raw_path: String::new(),
        raw_query: String::new(),
        opaque: String::new(),
    };
    if raw == "*" {
        url.raw_path = "*".into();
        return Ok(url);
    }
    let mut rest = raw;
    for (i, c) in raw.bytes().enumerate() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || c == b'+' || c == b'-' || c == b'.' {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == b':' {
            if i == 0 {
                return Err(fail("missing protocol scheme".into()));
            }
            url.scheme = raw[..i].to_ascii_lowercase();
            rest = &raw[i + 1..];
        }
        break;
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_owned();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        return Err(fail("invalid URI for request".into()));
    }
    if !url.scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let host = match authority.rfind('@') {
            Some(i) => &authority[i + 1..],
            None => authority,
        };
        parse_host(host).map_err(fail)?;
        url.host = host.to_owned();
        rest = path;
    }
    check_escapes(rest).map_err(fail)?;
    url.raw_path = rest.to_owned();
    Ok(url)
}

impl Url {
    pub fn hostname(&self) -> &str {
        let h = &self.host;
        if let Some(rest) = h.strip_prefix('[') {
            return rest.find(']').map_or(rest, |i| &rest[..i]);
        }
        h.rfind(':').map_or(h.as_str(), |i| &h[..i])
    }

    pub fn port(&self) -> &str {
        let h = &self.host;
        let after = match h.rfind(']') {
            Some(i) => &h[i + 1..],
            None => h.as_str(),
        };
        after.rfind(':').map_or("", |i| &after[i + 1..])
    }

    /// Go's `EscapedPath`: the path as written when it is a valid encoding, else re-escaped.
    pub fn escaped_path(&self) -> String {
        let valid =
            self.raw_path.bytes().all(|c| c == b'%' || b"!$&'()*+,;=:@[]".contains(&c) || !should_escape_path(c));
        if valid {
            return self.raw_path.clone();
        }
        let decoded = unescape(&self.raw_path, false).unwrap_or_else(|| self.raw_path.clone());
        let mut out = String::new();
        for c in decoded.bytes() {
            if should_escape_path(c) {
                out.push_str(&format!("%{c:02X}"));
            } else {
                out.push(c as char);
            }
        }
        out
    }

    /// Go's `Query()`: `url.ParseQuery` without its error (bad pairs are dropped).
    pub fn query(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Some(k), Some(v)) = (unescape(k, true), unescape(v, true)) {
                out.entry(k).or_default().push(v);
            }
        }
        out
    }
}
