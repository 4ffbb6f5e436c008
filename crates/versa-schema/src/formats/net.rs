//! `ipv4`, `ipv6`, `cidr` and `mac` as Go's `net` package parses them, with the leading zeros
//! k8s.io/utils' sloppy parsers (Go 1.16's rules) tolerate.

use super::chars::hex_val;

/// `ipv4`: k8s.io/utils `ParseIPSloppy` (Go 1.16 `net.ParseIP`, leading zeros allowed)
/// succeeds and the text contains a dot — so an IPv4-mapped IPv6 address also passes.
pub(super) fn is_ipv4(s: &str) -> bool {
    parse_ip(s.as_bytes(), true) && s.contains('.')
}

/// `ipv6`: today's `net.ParseIP` (no leading zeros in embedded IPv4, at most four hex digits
/// per group, no zone) succeeds and the text contains a colon.
pub(super) fn is_ipv6(s: &str) -> bool {
    parse_ip(s.as_bytes(), false) && s.contains(':')
}

/// `cidr`: `ParseCIDRSloppy` (Go 1.16 `net.ParseCIDR`).
pub(super) fn is_cidr(s: &str) -> bool {
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
pub(super) fn is_mac(s: &str) -> bool {
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
