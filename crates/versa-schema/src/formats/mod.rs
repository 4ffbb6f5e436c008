//! String formats (`format:`) with the semantics of kube-apiserver's CRD validation.
//!
//! kube-apiserver keeps only the formats listed in apiextensions-apiserver's `formats.go`
//! (others are stripped from the schema, so they accept everything) and validates them with
//! kube-openapi's `strfmt` default registry, whose checks come from Go's standard library
//! (`net.ParseIP`, `net/url.ParseRequestURI`, `net/mail.ParseAddress`, `time.Parse`,
//! `time.ParseDuration`), from k8s.io/utils (`ParseIPSloppy`, `ParseCIDRSloppy`: Go 1.16
//! parsing that tolerates leading zeros) and from a fork of govalidator. Each check below
//! re-implements the acceptance rule of the Go function it mirrors, quirks included (for
//! example `date-time` only looks at the text between the first and second `T`), because a CR
//! accepted by Kubernetes must be accepted here and vice versa.
//!
//! Format names are normalised as the registry does: dashes are removed, so `date-time`,
//! `datetime` and `k8s-short-name` all work. Names are case-sensitive.
//!
//! Performance: validation runs per value, so nothing is compiled per call. Most checks are
//! hand-written scanners; the three that keep a regular expression (hostname, creditcard,
//! rgbcolor, in `govalidator.rs`) compile it once in a `LazyLock`.
//!
//! The checks live by the Go code they mirror: `govalidator.rs` (strfmt's and govalidator's
//! rules: hostname, identifiers, check digits, colours, base64), `time.rs` (`date`,
//! `date-time`, `duration`), `net.rs` (IP addresses, CIDR, MAC), `uri.rs` (`uri`), `mail.rs`
//! (`email`); `chars.rs` holds the character classes they share.
//!
//! Not supported (stripped, so accepting everything): `quantity`, which newer
//! apiextensions-apiserver sources list but the 1.36 release does not validate, and
//! `k8s-ip-sloppy`, which is registered in kube-openapi but not enabled for CRDs.

mod chars;
mod govalidator;
mod mail;
mod net;
mod time;
mod uri;

use govalidator::{
    is_base64, is_bson_object_id, is_credit_card, is_hex_color, is_hostname, is_isbn10, is_isbn13, is_rgb_color,
    is_ssn, is_uuid,
};
use mail::is_email;
use net::{is_cidr, is_ipv4, is_ipv6, is_mac};
use time::{is_date, is_date_time, is_duration};
use uri::is_request_uri;

/// A format kube-apiserver validates for CRDs (at compatibility version 1.34 and later).
///
/// Resolve a schema's `format` once with [`Format::parse`] when the schema is lowered, then call
/// [`Format::matches`] per value: no name handling happens on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
    K8sShortName,
    K8sLongName,
}

impl Format {
    /// The format named `name` (dashes ignored, case-sensitive), or `None` for formats
    /// Kubernetes does not validate.
    pub fn parse(name: &str) -> Option<Format> {
        if let Some(f) = Format::parse_normalized(name) {
            return Some(f);
        }
        if name.contains('-') {
            return Format::parse_normalized(&name.replace('-', ""));
        }
        None
    }

    fn parse_normalized(name: &str) -> Option<Format> {
        Some(match name {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "isbn" => Format::Isbn,
            "isbn10" => Format::Isbn10,
            "isbn13" => Format::Isbn13,
            "creditcard" => Format::CreditCard,
            "ssn" => Format::Ssn,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "duration" => Format::Duration,
            // The common spellings are listed so that they resolve without allocating.
            "datetime" | "date-time" => Format::DateTime,
            "k8sshortname" | "k8s-short-name" => Format::K8sShortName,
            "k8slongname" | "k8s-long-name" => Format::K8sLongName,
            _ => return None,
        })
    }

    /// Whether `value` is valid for this format.
    pub fn matches(self, value: &str) -> bool {
        match self {
            Format::BsonObjectId => is_bson_object_id(value),
            Format::Uri => is_request_uri(value),
            Format::Email => is_email(value),
            Format::Hostname => is_hostname(value),
            Format::Ipv4 => is_ipv4(value),
            Format::Ipv6 => is_ipv6(value),
            Format::Cidr => is_cidr(value),
            Format::Mac => is_mac(value),
            Format::Uuid => is_uuid(value, None),
            Format::Uuid3 => is_uuid(value, Some(b'3')),
            Format::Uuid4 => is_uuid(value, Some(b'4')),
            Format::Uuid5 => is_uuid(value, Some(b'5')),
            Format::Isbn => is_isbn10(value) || is_isbn13(value),
            Format::Isbn10 => is_isbn10(value),
            Format::Isbn13 => is_isbn13(value),
            Format::CreditCard => is_credit_card(value),
            Format::Ssn => is_ssn(value),
            Format::HexColor => is_hex_color(value),
            Format::RgbColor => is_rgb_color(value),
            Format::Byte => is_base64(value),
            Format::Password => true,
            Format::Date => is_date(value),
            Format::Duration => is_duration(value),
            Format::DateTime => is_date_time(value),
            Format::K8sShortName => crate::names::is_dns1123_label(value).is_empty(),
            Format::K8sLongName => crate::names::is_dns1123_subdomain(value).is_empty(),
        }
    }
}

/// Whether `format` is one Kubernetes validates (unknown formats are ignored).
pub fn is_supported(format: &str) -> bool {
    Format::parse(format).is_some()
}

/// Whether `value` is valid for `format`. Unknown formats accept everything. Prefer resolving
/// the format once with [`Format::parse`] when validating many values.
pub fn matches(format: &str, value: &str) -> bool {
    Format::parse(format).is_none_or(|f| f.matches(value))
}
