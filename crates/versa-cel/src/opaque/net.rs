//! `net.IP` and `net.CIDR` values (kube's `k8s.io/apiserver/pkg/cel` ip.go and cidr.go): addresses
//! and prefixes parsed as Kubernetes' `netutils` parses them, with its error texts.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP address (no zone, never IPv4-mapped IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

impl Ip {
    pub fn byte_len(&self) -> u64 {
        match self.0 {
            IpAddr::V4(_) => 4,
            IpAddr::V6(_) => 16,
        }
    }

    fn bits(&self) -> u8 {
        match self.0 {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    fn as_u128(&self) -> u128 {
        match self.0 {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        }
    }

    pub fn masked(&self, bits: u8) -> Ip {
        let total = self.bits();
        let keep = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits)) >> (128 - u32::from(total)) };
        let v = self.as_u128() & keep;
        Ip(match self.0 {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(v as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
        })
    }

    /// Go's `netip.Addr.IsGlobalUnicast`.
    pub fn is_global_unicast(&self) -> bool {
        match self.0 {
            IpAddr::V4(a) => {
                a != Ipv4Addr::BROADCAST
                    && !a.is_unspecified()
                    && !a.is_loopback()
                    && !a.is_multicast()
                    && !a.is_link_local()
            }
            IpAddr::V6(a) => {
                !a.is_unspecified() && !a.is_loopback() && !a.is_multicast() && (a.segments()[0] & 0xffc0) != 0xfe80
            }
        }
    }
}

impl fmt::Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A network prefix; the address keeps its host bits (`masked()` clears them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub addr: Ip,
    pub bits: u8,
}

impl Cidr {
    pub fn contains(&self, ip: &Ip) -> bool {
        ip.bits() == self.addr.bits() && ip.masked(self.bits) == self.addr.masked(self.bits)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Why a text is not a `net.IP` (Kubernetes' messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpError {
    /// The text is not an address; `reason` is Go's `netip.ParseAddr` error.
    #[error("IP Address {text:?} parse error during conversion from string: {reason}")]
    Syntax { text: String, reason: String },
    /// The address has an IPv6 zone.
    #[error("IP address {text:?} with zone value is not allowed")]
    Zoned { text: String },
    /// The address is an IPv4-mapped IPv6 address.
    #[error("IPv4-mapped IPv6 address {text:?} is not allowed")]
    Ipv4Mapped { text: String },
}

/// Why a text is not a `net.CIDR` (Kubernetes' messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    /// The text is not a prefix; `reason` is Go's `netip.ParsePrefix` detail. Kubernetes wraps
    /// Go's error in its conversion message twice (`parseCIDR` and `stringToCIDR` both add it).
    #[error(
        "network address parse error during conversion from string: network address parse error during \
         conversion from string: netip.ParsePrefix({text:?}): {reason}"
    )]
    Syntax { text: String, reason: String },
    /// The prefix's address is an IPv4-mapped IPv6 address (Kubernetes' own refusal, wrapped once).
    #[error(
        "network address parse error during conversion from string: IPv4-mapped IPv6 address {text:?} is not allowed"
    )]
    Ipv4Mapped { text: String },
}

/// Go's `netip.ParseAddr` error text for `s`.
fn addr_error(s: &str) -> String {
    let leading_zero = s.contains('.') && !s.contains(':') && s.split('.').any(|o| o.len() > 1 && o.starts_with('0'));
    let dotted = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let detail = match s.split('.').count() {
        _ if leading_zero => "IPv4 field has octet with leading zero",
        n if dotted && n < 4 => "IPv4 address too short",
        n if dotted && n > 4 => "IPv4 address too long",
        _ => "unable to parse IP",
    };
    format!("ParseAddr({s:?}): {detail}")
}

fn parse_addr(s: &str) -> Result<(IpAddr, bool), String> {
    if let Some((addr, _zone)) = s.split_once('%') {
        return match addr.parse::<Ipv6Addr>() {
            Ok(a) => Ok((IpAddr::V6(a), true)),
            Err(_) => Err(addr_error(s)),
        };
    }
    s.parse::<IpAddr>().map(|a| (a, false)).map_err(|_| addr_error(s))
}

fn is_4in6(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Kubernetes' `parseIPAddr`.
pub fn parse_ip(s: &str) -> Result<Ip, IpError> {
    let (addr, zoned) = parse_addr(s).map_err(|reason| IpError::Syntax { text: s.to_owned(), reason })?;
    if zoned {
        return Err(IpError::Zoned { text: s.to_owned() });
    }
    if is_4in6(&addr) {
        return Err(IpError::Ipv4Mapped { text: s.to_owned() });
    }
    Ok(Ip(addr))
}

/// Kubernetes' `parseCIDR` (Go's `netip.ParsePrefix` and the same refusals as for IPs).
pub fn parse_cidr(s: &str) -> Result<Cidr, CidrError> {
    let fail = |reason: String| CidrError::Syntax { text: s.to_owned(), reason };
    let Some((addr_s, bits_s)) = s.rsplit_once('/') else {
        return Err(fail("no '/'".into()));
    };
    let (addr, zoned) = parse_addr(addr_s).map_err(fail)?;
    if zoned {
        return Err(fail("IPv6 zones cannot be present in a prefix".into()));
    }
    let valid_bits = !bits_s.is_empty()
        && bits_s.bytes().all(|b| b.is_ascii_digit())
        && (bits_s.len() == 1 || !bits_s.starts_with('0'));
    let bits: u32 = match bits_s.parse() {
        Ok(b) if valid_bits => b,
        _ => return Err(fail(format!("bad bits after slash: {bits_s:?}"))),
    };
    let ip = Ip(addr);
    if bits > u32::from(ip.bits()) {
        return Err(fail("prefix length out of range".into()));
    }
    if is_4in6(&addr) {
        return Err(CidrError::Ipv4Mapped { text: s.to_owned() });
    }
    Ok(Cidr { addr: ip, bits: bits as u8 })
}
