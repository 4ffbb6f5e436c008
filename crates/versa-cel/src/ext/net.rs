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

use std::net::IpAddr;

use super::{Res, as_opaque, ceil_cost, charged, opaque, str_size, text};
use crate::opaque::{
    CIDR_TYPE, IP_TYPE, Opaque,
    net::{Cidr, Ip, parse_cidr, parse_ip},
};
use crate::runtime::{CallContext, EvalError, no_overload};
use crate::types::Type;
use crate::value::Value;

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
    calls: &mut CallContext<'_>,
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
                    "ip" => parse_ip(&s).map(|ip| opaque(Opaque::Ip(ip))).map_err(|e| EvalError::new(e.to_string())),
                    "isIP" => Ok(Value::Bool(parse_ip(&s).is_ok())),
                    "cidr" => {
                        parse_cidr(&s).map(|c| opaque(Opaque::Cidr(c))).map_err(|e| EvalError::new(e.to_string()))
                    }
                    "isCIDR" => Ok(Value::Bool(parse_cidr(&s).is_ok())),
                    _ => parse_ip(&s)
                        .map(|ip| Value::Bool(ip.to_string() == s))
                        .map_err(|e| EvalError::new(e.to_string())),
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
    Some(charged(calls, cost, result))
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
            let o = parse_cidr(s).map_err(|e| EvalError::new(e.to_string()))?;
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
