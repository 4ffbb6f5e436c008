//! The values of the Kubernetes library types, below the values that hold them ([`crate::value`])
//! and the library functions that make and use them ([`crate::ext`]), as kube keeps them in
//! `k8s.io/apiserver/pkg/cel` below `pkg/cel/library`: `net.IP` and `net.CIDR` ([`net`]),
//! `kubernetes.URL` ([`url`]), `kubernetes.Quantity` ([`quantity`]), `kubernetes.Semver`
//! ([`semver`]), `kubernetes.NamedFormat` ([`format`](mod@format)) and the authorization library's values
//! ([`authz`]), each with its parser, its comparison and how it prints. [`Opaque`] is any one of
//! them; [`crate::value::Value::Opaque`] holds it.

pub mod authz;
pub mod format;
pub mod net;
pub mod quantity;
pub mod semver;
pub mod url;

use std::fmt;

/// `net.IP`.
pub const IP_TYPE: &str = "net.IP";
/// `net.CIDR`.
pub const CIDR_TYPE: &str = "net.CIDR";
/// `kubernetes.URL`.
pub const URL_TYPE: &str = "kubernetes.URL";
/// `kubernetes.Quantity`.
pub const QUANTITY_TYPE: &str = "kubernetes.Quantity";
/// `kubernetes.Semver`.
pub const SEMVER_TYPE: &str = "kubernetes.Semver";
/// `kubernetes.NamedFormat`.
pub const FORMAT_TYPE: &str = "kubernetes.NamedFormat";

/// A value of a library type.
#[derive(Clone, Debug, PartialEq)]
pub enum Opaque {
    Ip(net::Ip),
    Cidr(net::Cidr),
    Url(url::Url),
    Quantity(quantity::Quantity),
    Semver(semver::Semver),
    Format(&'static format::NamedFormat),
    /// The authorization library's values (admission's `authorizer`).
    Authz(authz::AuthzValue),
}

impl Opaque {
    pub fn type_name(&self) -> &'static str {
        match self {
            Opaque::Ip(_) => IP_TYPE,
            Opaque::Cidr(_) => CIDR_TYPE,
            Opaque::Url(_) => URL_TYPE,
            Opaque::Quantity(_) => QUANTITY_TYPE,
            Opaque::Semver(_) => SEMVER_TYPE,
            Opaque::Format(_) => FORMAT_TYPE,
            Opaque::Authz(a) => a.type_name(),
        }
    }

    /// cel-go's `Sizer` size: IPs and CIDRs are their address length in bytes, the others
    /// have no size (1).
    pub fn size(&self) -> u64 {
        match self {
            Opaque::Ip(ip) => ip.byte_len(),
            Opaque::Cidr(c) => c.addr.byte_len(),
            _ => 1,
        }
    }
}

impl fmt::Display for Opaque {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opaque::Ip(ip) => write!(f, "ip({:?})", ip.to_string()),
            Opaque::Cidr(c) => write!(f, "cidr({:?})", c.to_string()),
            Opaque::Url(u) => write!(f, "url({:?})", u.source),
            Opaque::Quantity(q) => write!(f, "quantity({:?})", q.to_string()),
            Opaque::Semver(s) => write!(f, "semver({:?})", s.to_string()),
            Opaque::Format(n) => write!(f, "format.{}()", n.key),
            Opaque::Authz(a) => f.write_str(a.type_name()),
        }
    }
}
