//! Just enough of Go's `net/url` parsing to judge webhook URLs and API-approval annotations the
//! way kube-apiserver does.
//!
//! A general URL crate would accept and reject different strings than Go does (it normalises,
//! and follows WHATWG rather than RFC 3986 leniency); the checks that depend on parsing are
//! few, so a small parser with Go's rules and Go's error texts keeps the messages identical.

/// The parts of a URL the validators look at.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Url {
    pub scheme: String,
    /// Raw user information (`user:pass`), if an `@` was present in the authority.
    pub user: Option<String>,
    /// Host including the port.
    pub host: String,
    pub raw_query: String,
    pub fragment: String,
}

/// Go's `url.Parse`. The error is Go's full text (`parse "…": …`).
pub(super) fn parse(raw: &str) -> Result<Url, String> {
    parse_impl(raw, false).map_err(|e| format!("parse {}: {e}", versa_schema::field::go_quote(raw)))
}

/// Go's `url.ParseRequestURI`: no fragment, and an absolute URL or an absolute path.
pub(super) fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse_impl(raw, true).map_err(|e| format!("parse {}: {e}", versa_schema::field::go_quote(raw)))
}

fn parse_impl(raw: &str, via_request: bool) -> Result<Url, String> {
    let mut url = Url::default();
    let mut rest = raw;
    if !via_request && let Some((before, frag)) = raw.split_once('#') {
        url.fragment = unescape(frag)?;
        rest = before;
    }
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if rest.is_empty() && via_request {
        return Err("empty url".into());
    }
    if rest == "*" {
        return Ok(url);
    }
    let (scheme, after) = split_scheme(rest)?;
    url.scheme = scheme.to_ascii_lowercase();
    rest = after;

    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_owned();
        rest = before;
    }

    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL such as `https:host`: no authority at all.
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let first_segment = rest.split('/').next().unwrap_or_default();
        if first_segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }

    let has_authority =
        (!url.scheme.is_empty() || (!via_request && !rest.starts_with("///"))) && rest.starts_with("//");
    if has_authority {
        let authority_and_path = &rest[2..];
        let end = authority_and_path.find('/').unwrap_or(authority_and_path.len());
        let authority = &authority_and_path[..end];
        match authority.rfind('@') {
            Some(at) => {
                let user = &authority[..at];
                if !user.bytes().all(valid_userinfo_byte) {
                    return Err("net/url: invalid userinfo".into());
                }
                url.user = Some(user.to_owned());
                url.host = parse_host(&authority[at + 1..])?;
            }
            None => url.host = parse_host(authority)?,
        }
        rest = &authority_and_path[end..];
    }
    unescape(rest)?;
    Ok(url)
}

/// Splits `scheme:` off; a string with no scheme yields an empty one.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".into()),
            ':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Validates the port of `host[:port]` as Go does and returns the host unescaped.
fn parse_host(host: &str) -> Result<String, String> {
    let port = if host.starts_with('[') {
        let close = host.rfind(']').ok_or("missing ']' in host")?;
        let after = &host[close + 1..];
        if !after.is_empty() && !after.starts_with(':') {
            return Err(format!("invalid port {} after host", versa_schema::field::go_quote(after)));
        }
        after
    } else {
        host.rfind(':').map_or("", |i| &host[i..])
    };
    if let Some(digits) = port.strip_prefix(':')
        && !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!("invalid port {} after host", versa_schema::field::go_quote(port)));
    }
    unescape(host)
}

fn valid_userinfo_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b)
}

/// Percent-decoding with Go's error for a malformed escape.
fn unescape(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            let Some(hex) = hex else {
                let end = (i + 3).min(bytes.len());
                let bad = String::from_utf8_lossy(&bytes[i..end]);
                return Err(format!("invalid URL escape {}", versa_schema::field::go_quote(&bad)));
            };
            let text = std::str::from_utf8(hex).unwrap_or("00");
            out.push(u8::from_str_radix(text, 16).unwrap_or(0));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

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
        assert_eq!(parse(":x").unwrap_err(), r#"parse ":x": missing protocol scheme"#);
        assert_eq!(parse("https://a b%zz").unwrap_err(), r#"parse "https://a b%zz": invalid URL escape "%zz""#);
        assert_eq!(
            parse("https://host:port/").unwrap_err(),
            r#"parse "https://host:port/": invalid port ":port" after host"#
        );
        assert_eq!(parse("a:b").unwrap().scheme, "a");
        assert_eq!(parse("1a:b").unwrap_err(), r#"parse "1a:b": first path segment in URL cannot contain colon"#);
        assert!(parse("https://h\n").is_err());
    }

    #[test]
    fn parses_request_uris_like_go() {
        let u = parse_request_uri("https://github.com/kubernetes/enhancements/pull/1111").unwrap();
        assert_eq!((u.scheme.as_str(), u.host.as_str()), ("https", "github.com"));
        assert!(parse_request_uri("not a url").is_err());
        assert_eq!(parse_request_uri("/path").unwrap().host, "");
    }
}
