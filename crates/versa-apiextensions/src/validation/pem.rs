//! CA bundles: does a `caBundle` hold at least one certificate a TLS client could trust?
//!
//! kube-apiserver builds a client TLS config from the bundle and reports why that fails. We decode
//! the PEM blocks with Go's `encoding/pem` rules and check each CERTIFICATE block's DER envelope
//! (`SEQUENCE { tbsCertificate SEQUENCE, signatureAlgorithm SEQUENCE, signature BIT STRING }`).
//! That is not full X.509 parsing — a certificate with a well-formed envelope but a broken inside
//! is accepted here and would fail later, at conversion time, with the webhook's TLS error.

use base64::Engine as _;

/// Why a bundle has no usable certificate; the texts are client-go's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaBundleError {
    /// Text that is not a PEM block before any usable certificate.
    #[error("unable to parse bytes as PEM block")]
    NotPem,
    /// A CERTIFICATE block whose DER is not a certificate.
    #[error("failed to parse certificate: x509: malformed certificate")]
    MalformedCertificate,
    /// PEM blocks, but no certificate among them.
    #[error("no valid certificate authority data seen")]
    NoCertificate,
}

/// Checks that `data` holds a certificate a TLS client could trust (or only whitespace).
pub(super) fn check_ca_bundle(data: &[u8]) -> Result<(), CaBundleError> {
    // A bundle of whitespace means "use the system roots".
    if data.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let mut rest = data;
    while let Some((block, after)) = decode(rest) {
        if block.type_ == "CERTIFICATE" && !block.has_headers && der_certificate_envelope_ok(&block.bytes) {
            return Ok(());
        }
        rest = after;
    }
    // Nothing usable: explain the first problem, walking the blocks again as client-go does.
    let mut rest = data;
    while !rest.is_empty() {
        let Some((block, after)) = decode(rest) else {
            return Err(CaBundleError::NotPem);
        };
        rest = after;
        if block.type_ != "CERTIFICATE" || block.has_headers {
            continue;
        }
        if !der_certificate_envelope_ok(&block.bytes) {
            return Err(CaBundleError::MalformedCertificate);
        }
    }
    Err(CaBundleError::NoCertificate)
}

struct Block {
    type_: String,
    has_headers: bool,
    bytes: Vec<u8>,
}

/// Go's `pem.Decode`: the first well-formed block and the rest after it, skipping garbage and
/// malformed blocks.
fn decode(mut data: &[u8]) -> Option<(Block, &[u8])> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    const DASHES: &[u8] = b"-----";
    loop {
        let start = if data.starts_with(BEGIN) { 0 } else { find(data, b"\n-----BEGIN ")? + 1 };
        let after_begin = &data[start + BEGIN.len()..];
        let (type_line, after_type) = split_line(after_begin);
        let Some(type_) = type_line.strip_suffix(DASHES) else {
            data = after_begin;
            continue;
        };
        let type_ = String::from_utf8_lossy(type_).into_owned();
        let end_marker = [b"\n-----END ".as_slice(), type_.as_bytes(), DASHES].concat();
        let (body, end) = match after_type.starts_with(&end_marker[1..]) {
            true => (&after_type[..0], 0),
            false => match find(after_type, &end_marker) {
                Some(i) => (&after_type[..i], i + 1),
                None => {
                    data = after_begin;
                    continue;
                }
            },
        };
        let tail_start = end + end_marker.len() - 1;
        let (end_rest_line, rest) = split_line(&after_type[tail_start..]);
        if !end_rest_line.iter().all(|b| *b == b' ' || *b == b'\t') {
            data = after_begin;
            continue;
        }
        let has_headers = body.split(|b| *b == b'\n').take_while(|l| !trim(l).is_empty()).any(|l| l.contains(&b':'));
        let payload: Vec<u8> = if has_headers {
            let blank = find(body, b"\n\n").or_else(|| find(body, b"\r\n\r\n")).map_or(body.len(), |i| i);
            body[blank..].iter().copied().filter(|b| !b.is_ascii_whitespace()).collect()
        } else {
            body.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect()
        };
        match base64::engine::general_purpose::STANDARD.decode(&payload) {
            Ok(bytes) => return Some((Block { type_, has_headers, bytes }, rest)),
            Err(_) => {
                data = after_begin;
                continue;
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The line (without `\r\n`/`\n`) and what follows it.
fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(i) => {
            let line = &data[..i];
            (line.strip_suffix(b"\r").unwrap_or(line), &data[i + 1..])
        }
        None => (data, &data[data.len()..]),
    }
}

fn trim(l: &[u8]) -> &[u8] {
    let start = l.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(l.len());
    let end = l.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |i| i + 1);
    &l[start..end]
}

/// Checks the outer DER structure of an X.509 certificate.
fn der_certificate_envelope_ok(der: &[u8]) -> bool {
    let Some((0x30, cert, rest)) = read_tlv(der) else { return false };
    if !rest.is_empty() {
        return false;
    }
    let Some((0x30, _tbs, cert)) = read_tlv(cert) else { return false };
    let Some((0x30, _alg, cert)) = read_tlv(cert) else { return false };
    let Some((0x03, _sig, cert)) = read_tlv(cert) else { return false };
    cert.is_empty()
}

/// One DER tag-length-value: (tag, value, rest). Definite lengths only, as DER requires.
fn read_tlv(data: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, data) = data.split_first()?;
    let (&first, mut data) = data.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || data.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &b in &data[..n] {
            len = (len << 8) | usize::from(b);
        }
        data = &data[n..];
        len
    };
    if data.len() < len {
        return None;
    }
    Some((tag, &data[..len], &data[len..]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// A real self-signed certificate (openssl, EC P-256).
    const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUViEphKnGKp1+/gb3sCFDmNwpkjcwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKdmVyc2EtdGVzdDAeFw0yNjExMjIwMDIxMjJaFw0zNjExMTkw
MDIxMjJaMBUxEzARBgNVBAMMCnZlcnNhLXRlc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQdkvNwHuSSf+8UxQWFa4ICZOuq4E6S2+7xYgVnIWrx1C9RviBKjdkQ
dBxV9aqLUVhbR7B2nt2Cm7IJtB8PkCY7o1MwUTAdBgNVHQ4EFgQU4Mg78wncVlh4
d3re9IEggYkxpxcwHwYDVR0jBBgwFoAU4Mg78wncVlh4d3re9IEggYkxpxcwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiBiK9Arw670rrCcYmf4cngy
Zuhu8cb3C5TJ8Ww6+iyhIQIhALKnM/beWm0iCiEZcZYTkOoLaXvXxvva2Usq0biq
w9Zf
-----END CERTIFICATE-----
";

    #[test]
    fn accepts_certificates() {
        assert_eq!(check_ca_bundle(CERT.as_bytes()), Ok(()));
        assert_eq!(check_ca_bundle(format!("junk\n{CERT}\n").as_bytes()), Ok(()));
        assert_eq!(check_ca_bundle(b"  \n"), Ok(()));
    }

    #[test]
    fn explains_bad_bundles() {
        assert_eq!(check_ca_bundle(b"not pem").unwrap_err().to_string(), "unable to parse bytes as PEM block");
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(
            check_ca_bundle(key.as_bytes()).unwrap_err().to_string(),
            "no valid certificate authority data seen"
        );
        let bad = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----";
        assert_eq!(
            check_ca_bundle(bad.as_bytes()).unwrap_err().to_string(),
            "failed to parse certificate: x509: malformed certificate"
        );
    }
}
