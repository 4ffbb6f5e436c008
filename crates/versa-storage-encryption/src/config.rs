//! kube's `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`, the file of
//! `--encryption-provider-config`): read, then checked with kube-apiserver's rules and messages
//! (`k8s.io/apiserver/pkg/apis/apiserver/validation`), for the providers versa has — `aesgcm`,
//! `aescbc`, `secretbox`, `identity`. `kms` is refused with what to use instead.

use base64::Engine as _;
use serde::Deserialize;

/// The file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub resources: Vec<ResourceConfiguration>,
}

/// One entry of `resources`: which resources, and the providers that write (the first) and read
/// (any) them.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceConfiguration {
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub providers: Vec<ProviderConfiguration>,
}

/// One provider: exactly one field set.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProviderConfiguration {
    pub aesgcm: Option<KeysConfig>,
    pub aescbc: Option<KeysConfig>,
    pub secretbox: Option<KeysConfig>,
    pub identity: Option<serde_json::Value>,
    pub kms: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct KeysConfig {
    #[serde(default)]
    pub keys: Vec<Key>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Key {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub secret: String,
}

/// A provider ready to use.
#[derive(Debug, Clone)]
pub enum Provider {
    /// AES-GCM, keys in order (the first writes).
    AesGcm(Vec<(String, Vec<u8>)>),
    /// AES-CBC with PKCS#7 padding.
    AesCbc(Vec<(String, Vec<u8>)>),
    /// XSalsa20-Poly1305 (NaCl secretbox).
    Secretbox(Vec<(String, Vec<u8>)>),
    /// Stored as given.
    Identity,
}

/// A checked configuration: each entry's group-resources and providers.
#[derive(Debug, Clone)]
pub struct Checked {
    pub entries: Vec<(Vec<GroupResource>, Vec<Provider>)>,
}

/// A resource of the configuration: `secrets`, `widgets.example.com`, `*.example.com`, `*.`
/// (every core resource), `*.*` (everything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupResource {
    /// `*` for any.
    pub group: String,
    /// `*` for any.
    pub resource: String,
}

impl GroupResource {
    fn parse(text: &str) -> GroupResource {
        match text.split_once('.') {
            Some((resource, group)) => GroupResource { group: group.to_owned(), resource: resource.to_owned() },
            None => GroupResource { group: String::new(), resource: text.to_owned() },
        }
    }

    /// Whether this pattern names `group`/`resource`.
    pub fn matches(&self, group: &str, resource: &str) -> bool {
        (self.group == "*" || self.group == group) && (self.resource == "*" || self.resource == resource)
    }
}

/// Why a configuration is refused: kube's field errors, one per line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Reads and checks the file's text.
pub fn parse(text: &str) -> Result<Checked, ConfigError> {
    let config: EncryptionConfiguration =
        serde_saphyr::from_str(text).map_err(|e| ConfigError(format!("error while parsing file: {e}")))?;
    if config.kind != "EncryptionConfiguration" || config.api_version != "apiserver.config.k8s.io/v1" {
        return Err(ConfigError(format!(
            "error while parsing file: no kind \"{}\" is registered for version \"{}\" (want apiserver.config.k8s.io/v1 EncryptionConfiguration)",
            config.kind, config.api_version
        )));
    }
    check(&config)
}

fn check(config: &EncryptionConfiguration) -> Result<Checked, ConfigError> {
    let mut errors = Vec::new();
    if config.resources.is_empty() {
        errors.push("resources: Required value: at least one resources is required".to_owned());
    }
    let mut entries = Vec::new();
    let mut seen: Vec<GroupResource> = Vec::new();
    for (i, entry) in config.resources.iter().enumerate() {
        let at = format!("resources[{i}]");
        if entry.resources.is_empty() {
            errors.push(format!("{at}.resources: Required value: at least one {at}.resources is required"));
        }
        if entry.providers.is_empty() {
            errors.push(format!("{at}.providers: Required value: at least one {at}.providers is required"));
        }
        let mut resources = Vec::new();
        for (j, text) in entry.resources.iter().enumerate() {
            let path = format!("{at}.resources[{j}]");
            let gr = GroupResource::parse(text);
            let invalid = |message: &str| format!("{path}: Invalid value: {}: {message}", go_quote(text));
            if text.chars().any(|c| c.is_ascii_uppercase()) {
                errors.push(invalid("resource name should not contain capital letters"));
            } else if text == "*" {
                errors.push(invalid(
                    "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources",
                ));
            } else if gr.group == "events.k8s.io" {
                errors.push(invalid("'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"));
            } else if gr.group == "extensions" {
                errors.push(invalid("'extensions' group has been removed and cannot be used for encryption"));
            } else if gr.group == "*" && gr.resource != "*" {
                errors.push(invalid("encrypting the same resource across groups is not supported"));
            } else if seen.contains(&gr) || resources.contains(&gr) {
                errors.push(invalid("the same resource cannot be specified multiple times"));
            } else {
                resources.push(gr);
            }
        }
        // Overlap inside one list: a wildcard with something it covers.
        for (a, b) in resources.iter().flat_map(|a| resources.iter().map(move |b| (a, b))) {
            if a != b && a.resource == "*" && (a.group == "*" || a.group == b.group) {
                errors.push(format!(
                    "{at}.resources: Invalid value: {}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
                    go_quote(&entry.resources.join(","))
                ));
                break;
            }
        }
        seen.extend(resources.iter().cloned());
        let mut providers = Vec::new();
        for (j, p) in entry.providers.iter().enumerate() {
            let path = format!("{at}.providers[{j}]");
            match provider(p, &path, &mut errors) {
                Some(provider) => providers.push(provider),
                None => continue,
            }
        }
        entries.push((resources, providers));
    }
    if errors.is_empty() { Ok(Checked { entries }) } else { Err(ConfigError(errors.join("\n"))) }
}

/// One provider, or its errors.
fn provider(p: &ProviderConfiguration, path: &str, errors: &mut Vec<String>) -> Option<Provider> {
    let set = [p.aesgcm.is_some(), p.aescbc.is_some(), p.secretbox.is_some(), p.identity.is_some(), p.kms.is_some()];
    match set.iter().filter(|s| **s).count() {
        0 => {
            errors.push(format!(
                "{path}: Invalid value: {{}}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
            ));
            return None;
        }
        1 => {}
        _ => {
            errors.push(format!(
                "{path}: Invalid value: {{}}: more than one provider specified in a single element, should split into different list elements"
            ));
            return None;
        }
    }
    let keys = |config: &KeysConfig, kind: &str, lengths: &[usize], errors: &mut Vec<String>| {
        let at = format!("{path}.{kind}.keys");
        if config.keys.is_empty() {
            errors.push(format!("{at}: Required value: at least one keys is required"));
        }
        let mut out = Vec::new();
        for (k, key) in config.keys.iter().enumerate() {
            let here = format!("{at}[{k}]");
            if key.name.is_empty() {
                errors.push(format!("{here}.name: Required value: name is a mandatory field for a key"));
            }
            if key.secret.is_empty() {
                errors.push(format!("{here}.secret: Required value: secret is a mandatory field for a key"));
                continue;
            }
            let Ok(secret) = base64::engine::general_purpose::STANDARD.decode(&key.secret) else {
                errors.push(format!("{here}.secret: Invalid value: \"REDACTED\": secrets must be base64 encoded"));
                continue;
            };
            if !lengths.contains(&secret.len()) {
                errors.push(format!(
                    "{here}.secret: Invalid value: \"REDACTED\": secret is not of the expected length, got {}, expected one of [{}]",
                    secret.len(),
                    lengths.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
                ));
                continue;
            }
            out.push((key.name.clone(), secret));
        }
        out
    };
    if let Some(c) = &p.aesgcm {
        return Some(Provider::AesGcm(keys(c, "aesgcm", &[16, 24, 32], errors)));
    }
    if let Some(c) = &p.aescbc {
        return Some(Provider::AesCbc(keys(c, "aescbc", &[16, 24, 32], errors)));
    }
    if let Some(c) = &p.secretbox {
        return Some(Provider::Secretbox(keys(c, "secretbox", &[32], errors)));
    }
    if p.identity.is_some() {
        return Some(Provider::Identity);
    }
    errors.push(format!(
        "{path}.kms: Forbidden: KMS providers are not supported by versa: use aesgcm, aescbc or secretbox"
    ));
    None
}

/// Go's `%q` of a string, as field errors print values.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}
