//! Kubernetes' IP and CIDR libraries: `ip(string)`, `isIP`, `ip.isCanonical`, `family`,
//! `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`,
//! `isGlobalUnicast`, `string(ip)`; `cidr(string)`, `isCIDR`, `containsIP` (IP or string),
//! `containsCIDR` (CIDR or string), `ip()`, `masked`, `prefixLength`, `string(cidr)`.
//!
//! Parsing is Go's `netip.ParseAddr`/`ParsePrefix` with Kubernetes' extra refusals: no IPv6
//! zones and no IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`); octets with leading zeros are
//! invalid (std's parser agrees). Addresses print as Go prints them (RFC 5952). Costs are
//! Kubernetes': parsing 0.1 per code point (twice for `isCanonical`), accessors 1, containment
//! the address bytes compared plus the parse of a string argument.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{CIDR_TYPE, IP_TYPE, Opaque, Res, as_opaque, ceil_cost, charged, opaque, str_size, text};
use crate::eval::{EvalError, Interp, no_overload};
use crate::types::Type;
use crate::value::Value;

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

    fn masked(&self, bits: u8) -> Ip {
        let total = self.bits();
        let keep = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits)) >> (128 - u32::from(total)) };
        let v = self.as_u128() & keep;
        Ip(match self.0 {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(v as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
        })
    }

    /// Go's `netip.Addr.IsGlobalUnicast`.
    fn is_global_unicast(&self) -> bool {
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
    fn contains(&self, ip: &Ip) -> bool {
        ip.bits() == self.addr.bits() && ip.masked(self.bits) == self.addr.masked(self.bits)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
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
pub fn parse_ip(s: &str) -> Result<Ip, String> {
    let (addr, zoned) =
        parse_addr(s).map_err(|e| format!("IP Address {s:?} parse error during conversion from string: {e}"))?;
    if zoned {
        return Err(format!("IP address {s:?} with zone value is not allowed"));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {s:?} is not allowed"));
    }
    Ok(Ip(addr))
}

/// Kubernetes' `parseCIDR` (Go's `netip.ParsePrefix` and the same refusals as for IPs).
pub fn parse_cidr(s: &str) -> Result<Cidr, String> {
    // Kubernetes wraps Go's parse error in its conversion message twice (`parseCIDR` and
    // `stringToCIDR` both add it); its own refusals once.
    const PREFIX: &str = "network address parse error during conversion from string: ";
    let fail = |detail: String| format!("{PREFIX}{PREFIX}netip.ParsePrefix({s:?}): {detail}");
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
        return Err(format!("{PREFIX}IPv4-mapped IPv6 address {s:?} is not allowed"));
    }
    Ok(Cidr { addr: ip, bits: bits as u8 })
}

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    use Type::{Bool, Int, String as Str};
    let ip = || Type::Opaque(IP_TYPE);
    let cidr = || Type::Opaque(CIDR_TYPE);
    add("ip", false, vec![Str], ip());
    add("isIP", false, vec![Str], Bool);
    add("ip.isCanonical", false, vec![Str], Bool);
    add("family", true, vec![ip()], Int);
    for f in ["isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"] {
        add(f, true, vec![ip()], Bool);
    }
    add("string", false, vec![ip()], Str);
    add("cidr", false, vec![Str], cidr());
    add("isCIDR", false, vec![Str], Bool);
    add("containsIP", true, vec![cidr(), Str], Bool);
    add("containsIP", true, vec![cidr(), ip()], Bool);
    add("containsCIDR", true, vec![cidr(), Str], Bool);
    add("containsCIDR", true, vec![cidr(), cidr()], Bool);
    add("ip", true, vec![cidr()], ip());
    add("masked", true, vec![cidr()], cidr());
    add("prefixLength", true, vec![cidr()], Int);
    add("string", false, vec![cidr()], Str);
}

pub(crate) fn call<'a>(
    interp: &mut Interp<'a, '_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    let first = args.first()?;
    let parse_cost = |v: &Value<'_>| ceil_cost(str_size(v) as f64 * 0.1);
    let (cost, result): (u64, Box<dyn FnOnce() -> Res<'a>>) = match (function, member, as_opaque(first)) {
        ("ip" | "isIP" | "cidr" | "isCIDR" | "ip.isCanonical", false, None) => {
            let s = text(first)?.to_owned();
            let factor = if function == "ip.isCanonical" { 2.0 } else { 1.0 };
            let f = function.to_owned();
            (
                ceil_cost(str_size(first) as f64 * factor * 0.1),
                Box::new(move || match f.as_str() {
                    "ip" => parse_ip(&s).map(|ip| opaque(Opaque::Ip(ip))).map_err(EvalError::new),
                    "isIP" => Ok(Value::Bool(parse_ip(&s).is_ok())),
                    "cidr" => parse_cidr(&s).map(|c| opaque(Opaque::Cidr(c))).map_err(EvalError::new),
                    "isCIDR" => Ok(Value::Bool(parse_cidr(&s).is_ok())),
                    _ => parse_ip(&s).map(|ip| Value::Bool(ip.to_string() == s)).map_err(EvalError::new),
                }),
            )
        }
        ("string", false, Some(Opaque::Ip(ip))) => {
            let ip = *ip;
            (1, Box::new(move || Ok(Value::string(ip.to_string()))))
        }
        ("string", false, Some(Opaque::Cidr(c))) => {
            let c = *c;
            (1, Box::new(move || Ok(Value::string(c.to_string()))))
        }
        (
            "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast",
            true,
            Some(Opaque::Ip(ip)),
        ) => {
            let ip = *ip;
            let f = function.to_owned();
            (1, Box::new(move || Ok(ip_accessor(&f, ip))))
        }
        ("ip" | "masked" | "prefixLength", true, Some(Opaque::Cidr(c))) => {
            let c = *c;
            let f = function.to_owned();
            (
                1,
                Box::new(move || {
                    Ok(match f.as_str() {
                        "ip" => opaque(Opaque::Ip(c.addr)),
                        "masked" => opaque(Opaque::Cidr(Cidr { addr: c.addr.masked(c.bits), bits: c.bits })),
                        _ => Value::Int(i64::from(c.bits)),
                    })
                }),
            )
        }
        ("containsIP" | "containsCIDR", true, Some(Opaque::Cidr(c))) => {
            let c = *c;
            let other = args.get(1)?.clone();
            let cidr_size = c.addr.byte_len();
            let mut cost = ceil_cost((cidr_size + cidr_size) as f64 * 0.1);
            if function == "containsCIDR" {
                cost += ceil_cost(cidr_size as f64 * 0.1) + 1;
            }
            if matches!(other, Value::String(_)) {
                cost += parse_cost(&other);
            }
            let f = function.to_owned();
            (cost, Box::new(move || contains(&f, c, &other)))
        }
        _ => return None,
    };
    Some(charged(interp, cost, result))
}

fn ip_accessor<'a>(function: &str, ip: Ip) -> Value<'a> {
    let b = match (function, ip.0) {
        ("family", IpAddr::V4(_)) => return Value::Int(4),
        ("family", IpAddr::V6(_)) => return Value::Int(6),
        ("isUnspecified", a) => a.is_unspecified(),
        ("isLoopback", a) => a.is_loopback(),
        ("isLinkLocalMulticast", IpAddr::V4(a)) => a.octets()[..3] == [224, 0, 0],
        ("isLinkLocalMulticast", IpAddr::V6(a)) => a.segments()[0] & 0xff0f == 0xff02,
        ("isLinkLocalUnicast", IpAddr::V4(a)) => a.is_link_local(),
        ("isLinkLocalUnicast", IpAddr::V6(a)) => a.segments()[0] & 0xffc0 == 0xfe80,
        _ => ip.is_global_unicast(),
    };
    Value::Bool(b)
}

fn contains<'a>(function: &str, c: Cidr, other: &Value<'a>) -> Res<'a> {
    match (function, other) {
        // Kubernetes passes the parse error on as a value that is no IP, which fails the call
        // as an argument of no overload would.
        ("containsIP", Value::String(s)) => match parse_ip(s) {
            Ok(ip) => Ok(Value::Bool(c.contains(&ip))),
            Err(_) => Err(no_overload(function)),
        },
        ("containsCIDR", Value::String(s)) => {
            let o = parse_cidr(s).map_err(EvalError::new)?;
            Ok(Value::Bool(c.bits <= o.bits && c.contains(&o.addr)))
        }
        ("containsIP", Value::Opaque(o)) => match &**o {
            Opaque::Ip(ip) => Ok(Value::Bool(c.contains(ip))),
            _ => Err(no_overload(function)),
        },
        ("containsCIDR", Value::Opaque(o)) => match &**o {
            Opaque::Cidr(o) => Ok(Value::Bool(c.bits <= o.bits && c.contains(&o.addr))),
            _ => Err(no_overload(function)),
        },
        _ => Err(no_overload(function)),
    }
}
