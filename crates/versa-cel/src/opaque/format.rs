//! `kubernetes.NamedFormat` values (kube's `pkg/cel/format.go`): the named formats
//! (`ConstantFormats`) and the check each stands for.

use versa_schema::names;

/// One named format.
#[derive(Debug)]
pub struct NamedFormat {
    /// The name after `format.`.
    pub key: &'static str,
    pub(crate) validate: fn(&str) -> Vec<String>,
    /// Kubernetes' `MaxRegexSize`: the length of the regex the check stands for.
    pub max_regex_size: u64,
}

impl PartialEq for NamedFormat {
    fn eq(&self, other: &NamedFormat) -> bool {
        self.key == other.key
    }
}

fn openapi(format: &str, message: &str, value: &str) -> Vec<String> {
    if versa_schema::formats::matches(format, value) { Vec::new() } else { vec![message.to_owned()] }
}

/// Kubernetes' `ConstantFormats`.
pub static FORMATS: &[NamedFormat] = &[
    NamedFormat { key: "dns1123Label", validate: |s| names::name_is_dns_label(s, false), max_regex_size: 30 },
    NamedFormat { key: "dns1123Subdomain", validate: |s| names::name_is_dns_subdomain(s, false), max_regex_size: 60 },
    NamedFormat { key: "dns1035Label", validate: |s| names::name_is_dns1035_label(s, false), max_regex_size: 30 },
    NamedFormat { key: "qualifiedName", validate: names::is_qualified_name, max_regex_size: 60 },
    NamedFormat { key: "dns1123LabelPrefix", validate: |s| names::name_is_dns_label(s, true), max_regex_size: 30 },
    NamedFormat {
        key: "dns1123SubdomainPrefix",
        validate: |s| names::name_is_dns_subdomain(s, true),
        max_regex_size: 60,
    },
    NamedFormat { key: "dns1035LabelPrefix", validate: |s| names::name_is_dns1035_label(s, true), max_regex_size: 30 },
    NamedFormat { key: "labelValue", validate: names::is_valid_label_value, max_regex_size: 40 },
    NamedFormat {
        key: "uri",
        validate: |s| match super::url::parse(s) {
            Ok(_) => Vec::new(),
            Err(e) => vec![e.to_string()],
        },
        // The length Kubernetes 1.36 gives govalidator's URL regex (`urlLength`).
        max_regex_size: 1103,
    },
    NamedFormat { key: "uuid", validate: |s| openapi("uuid", "does not match the UUID format", s), max_regex_size: 70 },
    NamedFormat { key: "byte", validate: |s| openapi("byte", "invalid base64", s), max_regex_size: 84 },
    NamedFormat { key: "date", validate: |s| openapi("date", "invalid date", s), max_regex_size: 71 },
    NamedFormat { key: "datetime", validate: |s| openapi("datetime", "invalid datetime", s), max_regex_size: 71 },
];

/// Kubernetes' `MaxNameFormatRegexSize`, used by the static estimate of `validate`.
pub const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;

pub(crate) fn named(key: &str) -> Option<&'static NamedFormat> {
    FORMATS.iter().find(|f| f.key == key)
}
