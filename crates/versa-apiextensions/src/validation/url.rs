//! Go's `net/url.Parse` and `ParseRequestURI`, as far as webhook URL validation and the
//! API-approval annotation look at them: scheme, user information, host (with its port and
//! character checks), query and fragment, and Go's error texts (`parse "https://a b": invalid
//! character " " in host name`) for what they refuse.
//!
//! A general URL crate would accept and reject different strings than Go does (it normalises,
//! and follows WHATWG rather than RFC 3986 leniency); the checks that depend on parsing are few,
//! so a small parser with Go's rules and Go's error texts keeps the messages identical.
//! Admission webhooks' configurations use it too; versa-cel's `opaque/url.rs` parses CEL's
//! `url()` values the same way, separately (to be made one).

/// The parts of a URL validation needs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Url {
    /// Lowercased.
    pub scheme: String,
    /// `Userinfo.String()`: the user, then `:password` when one is set (escaped as Go escapes).
    pub user: Option<String>,
    pub host: String,
    pub raw_query: String,
    /// Unescaped.
    pub fragment: String,
}

/// A URL Go's parser refuses (Go's `url.Error`): `Display` is Go's text, `parse "<url>": <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse {}: {reason}", go_quote(.url))]
pub struct UrlError {
    /// The URL as Go names it (without its fragment when the part before it is refused).
    pub url: String,
    /// Go's reason (`invalid character " " in host name`, `missing protocol scheme`, ...).
    pub reason: String,
}

/// Parses `raw` as Go's `url.Parse` does.
pub fn parse(raw: &str) -> Result<Url, UrlError> {
    let (rest, fragment) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_without_fragment(rest, false).map_err(|reason| UrlError { url: rest.to_owned(), reason })?;
    if let Some(f) = fragment {
        url.fragment = unescape(f, Mode::Fragment).map_err(|reason| UrlError { url: raw.to_owned(), reason })?;
    }
    Ok(url)
}

fn go_quote(s: &str) -> String {
    versa_schema::field::go_quote(s)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Host,
    UserPassword,
    Path,
    Fragment,
}

/// Go's `url.ParseRequestURI`: no fragment, and an absolute URL or an absolute path.
pub fn parse_request_uri(raw: &str) -> Result<Url, UrlError> {
    parse_without_fragment(raw, true).map_err(|reason| UrlError { url: raw.to_owned(), reason })
}

/// Go's `parse`; `via_request` as `ParseRequestURI` calls it.
fn parse_without_fragment(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_owned());
    }
    let mut url = Url::default();
    if raw == "*" {
        return Ok(url);
    }
    let (scheme, rest) = scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.raw_query = q.to_owned();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL (`https:host`): no host.
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".to_owned());
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    if (!url.scheme.is_empty() || (!via_request && !rest.starts_with("///"))) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        rest = path;
    }
    unescape(rest, Mode::Path)?;
    Ok(url)
}

/// Go's `getScheme`.
fn scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_owned()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str) -> Result<(Option<String>, String), String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    let Some(userinfo) = userinfo else { return Ok((None, host)) };
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".to_owned());
    }
    let user = match userinfo.split_once(':') {
        None => escape_user(&unescape(userinfo, Mode::UserPassword)?),
        Some((u, p)) => {
            let u = unescape(u, Mode::UserPassword)?;
            let p = unescape(p, Mode::UserPassword)?;
            format!("{}:{}", escape_user(&u), escape_user(&p))
        }
    };
    Ok((Some(user), host))
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else { return Err("missing ']' in host".to_owned()) };
        let port = &host[i + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

/// Go's `unescape`: `%XX` must be valid; in a host, only non-ASCII bytes (and `%25`) may be
/// escaped, and some characters may not appear at all.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let (Some(hi), Some(lo)) = (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c)))
                else {
                    let end = (i + 3).min(b.len());
                    return Err(format!("invalid URL escape {}", go_quote(&String::from_utf8_lossy(&b[i..end]))));
                };
                if mode == Mode::Host && hi < 8 && &b[i..i + 3] != b"%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&String::from_utf8_lossy(&b[i..i + 3]))));
                }
                // Both digits are below 16.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(0));
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && host_char_must_be_escaped(c) {
                    return Err(format!("invalid character {} in host name", go_quote(&(c as char).to_string())));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn host_char_must_be_escaped(c: u8) -> bool {
    !(c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        ))
}

/// Go's `escape(s, encodeUserPassword)`.
fn escape_user(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        let keep = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'_' | b'.' | b'~' | b'&' | b'=' | b'+' | b'$' | b',' | b';');
        if keep {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts() {
        let u = parse("HTTPS://harry.potter:pw@example.com:8443/p?arg=value#bookmark").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.user.as_deref(), Some("harry.potter:pw"));
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.raw_query, "arg=value");
        assert_eq!(u.fragment, "bookmark");
        assert_eq!(parse("https:opaque").unwrap().host, "");
    }

    #[test]
    fn go_errors() {
        assert_eq!(parse("://x").unwrap_err().to_string(), r#"parse "://x": missing protocol scheme"#);
        assert_eq!(
            parse("https://a b/").unwrap_err().to_string(),
            r#"parse "https://a b/": invalid character " " in host name"#
        );
        assert_eq!(
            parse("https://a:b/").unwrap_err().to_string(),
            r#"parse "https://a:b/": invalid port ":b" after host"#
        );
        assert_eq!(
            parse("https://a/%zz").unwrap_err().to_string(),
            r#"parse "https://a/%zz": invalid URL escape "%zz""#
        );
        assert_eq!(parse("a:b/c").map(|u| u.scheme), Ok("a".to_owned()));
        assert_eq!(
            parse("1a:b").unwrap_err().to_string(),
            r#"parse "1a:b": first path segment in URL cannot contain colon"#
        );
    }

    #[test]
    fn parses_like_go() {
        let u = parse("https://user:pw@example.com:8443/path?x=1#frag").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.user.as_deref(), Some("user:pw"));
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.raw_query, "x=1");
        assert_eq!(u.fragment, "frag");
        assert_eq!(parse("example.com/path").unwrap().host, "");
        assert_eq!(parse("HTTPS:opaque").unwrap().scheme, "https");
        assert_eq!(parse(":x").unwrap_err().to_string(), r#"parse ":x": missing protocol scheme"#);
        assert_eq!(parse("https://a%zz").unwrap_err().to_string(), r#"parse "https://a%zz": invalid URL escape "%zz""#);
        assert_eq!(
            parse("https://host:port/").unwrap_err().to_string(),
            r#"parse "https://host:port/": invalid port ":port" after host"#
        );
        assert!(parse("https://h\n").is_err());
    }

    #[test]
    fn parses_request_uris_like_go() {
        let u = parse_request_uri("https://github.com/kubernetes/enhancements/pull/1111").unwrap();
        assert_eq!((u.scheme.as_str(), u.host.as_str()), ("https", "github.com"));
        assert!(parse_request_uri("not a url").is_err());
        assert_eq!(parse_request_uri("/path").unwrap().host, "");
        assert_eq!(parse_request_uri("").unwrap_err().to_string(), r#"parse "": empty url"#);
        assert!(parse_request_uri("https://h/#frag").is_ok_and(|u| u.fragment.is_empty()));
    }
}
