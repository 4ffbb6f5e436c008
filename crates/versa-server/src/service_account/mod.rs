//! ServiceAccount tokens (standalone), as kube-apiserver issues and checks them: bound,
//! expiring JWTs signed with a key in the data directory.
//!
//! - The key (`service-account.key`, PKCS#8 PEM, mode 0600) is an ECDSA P-256 key, created on
//!   first start and reused afterwards, as the CA of `pki.rs` is; tokens are ES256 (kube signs
//!   with RS256 or ES256 by the key it is given) and carry kube's `kid`, the unpadded base64url
//!   SHA-256 of the public key's PKIX DER.
//! - The claims ([`Claims`]) are kube's: `iss`, `sub` (`system:serviceaccount:NS:NAME`), `aud`,
//!   `exp`, `iat`, `nbf`, `jti`, and `kubernetes.io` with the namespace, the ServiceAccount's
//!   name and uid and the bound Pod, Secret or Node.
//! - Checking ([`Issuer::verify`]) follows kube's JWT authenticator: a token that is no JWT or
//!   names another issuer is not ours (the next authenticator may know it); otherwise the
//!   signature, the audiences and the times (a minute's leeway) must hold. The ServiceAccount
//!   and bound objects are looked up by [`authenticator`].
//!
//! The crate is `jsonwebtoken` (9, no default features): the JWT crate with the most users, its
//! crypto is ring (already versa's), and it takes keys as DER, so nothing but the JWS
//! compact form and the claims' JSON is new code. Its own checks of `exp`/`nbf` are turned off:
//! they read the system clock, and these take the time as an argument so that tests can pass
//! one.

pub mod authenticator;
pub mod token_request;
pub mod token_review;

use std::collections::HashSet;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The key file in the data directory.
pub const KEY_FILE: &str = "service-account.key";

/// The issuer versa names (and accepts), kube's usual `--service-account-issuer`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The API server's audiences (kube's `--api-audiences`, which default to the issuer): a token
/// for none of them is refused.
pub const API_AUDIENCES: &[&str] = &[ISSUER];

/// kube's `jwt.DefaultLeeway`: times are checked a minute generously.
const LEEWAY_SECONDS: i64 = 60;

/// The user-name prefix of ServiceAccounts, and their groups.
pub const USER_PREFIX: &str = "system:serviceaccount:";
pub const ALL_GROUP: &str = "system:serviceaccounts";

/// Errors reading or creating the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not an ECDSA P-256 private key in PKCS#8 PEM: {source}")]
    Key {
        path: std::path::PathBuf,
        #[source]
        source: rcgen::Error,
    },
}

/// Signs and checks ServiceAccount tokens with one key.
pub struct Issuer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

/// A reference in the `kubernetes.io` claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Ref {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The `kubernetes.io` claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct KubernetesClaim {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default)]
    pub serviceaccount: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
}

/// A token's claims, in kube's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Claims {
    #[serde(default)]
    pub aud: Vec<String>,
    #[serde(default)]
    pub exp: i64,
    #[serde(default)]
    pub iat: i64,
    #[serde(default)]
    pub iss: String,
    #[serde(default)]
    pub jti: String,
    #[serde(rename = "kubernetes.io", default)]
    pub kubernetes: KubernetesClaim,
    #[serde(default)]
    pub nbf: i64,
    #[serde(default)]
    pub sub: String,
}

/// The object a token is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundKind {
    Pod,
    Secret,
    Node,
}

impl Claims {
    /// The claims of a token for ServiceAccount `account` (name and uid) in `namespace`, issued at `now`
    /// (Unix seconds) for `expiration_seconds`, for `audiences`, bound to `bound` if given.
    pub fn new(
        namespace: &str,
        account: Ref,
        audiences: Vec<String>,
        now: i64,
        expiration_seconds: i64,
        bound: Option<(BoundKind, Ref)>,
        jti: String,
    ) -> Claims {
        let mut kubernetes =
            KubernetesClaim { namespace: namespace.to_owned(), serviceaccount: account, ..Default::default() };
        let sub = format!("{USER_PREFIX}{namespace}:{}", kubernetes.serviceaccount.name);
        match bound {
            Some((BoundKind::Pod, r)) => kubernetes.pod = Some(r),
            Some((BoundKind::Secret, r)) => kubernetes.secret = Some(r),
            Some((BoundKind::Node, r)) => kubernetes.node = Some(r),
            None => {}
        }
        Claims {
            aud: audiences,
            exp: now.saturating_add(expiration_seconds),
            iat: now,
            iss: ISSUER.to_owned(),
            jti,
            kubernetes,
            nbf: now,
            sub,
        }
    }
}

/// Why a token of ours is refused; the texts are kube's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// kube's JWT library's text (go-jose), which kube passes on (TokenReview's `status.error`).
    #[error("go-jose/go-jose: error in cryptographic primitive")]
    Signature,
    #[error("token audiences {token:?} is invalid for the target audiences {target:?}")]
    Audience { token: Vec<String>, target: Vec<String> },
    #[error("service account token has expired")]
    Expired,
    #[error("service account token is not valid yet")]
    NotValidYet,
    #[error("service account token is issued in the future")]
    IssuedInTheFuture,
    /// The ServiceAccount or a bound object is gone, changed or being deleted.
    #[error("{0}")]
    Revoked(String),
    /// The store could not be read.
    #[error("{0}")]
    Lookup(String),
}

impl Issuer {
    /// Reads the key in `dir`, creating it on first use.
    pub fn load_or_create(dir: &Path) -> Result<Issuer, KeyError> {
        let path = dir.join(KEY_FILE);
        let io = |source| KeyError::Io { path: path.clone(), source };
        if !path.exists() {
            let key = rcgen::KeyPair::generate().map_err(|source| KeyError::Key { path: path.clone(), source })?;
            write_private(&path, &key.serialize_pem()).map_err(io)?;
        }
        let pem = std::fs::read_to_string(&path).map_err(io)?;
        let key = rcgen::KeyPair::from_pem(&pem).map_err(|source| KeyError::Key { path: path.clone(), source })?;
        if !key.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256) {
            return Err(KeyError::Key { path, source: rcgen::Error::KeyGenerationUnavailable });
        }
        Ok(Issuer::from_key(&key))
    }

    /// An issuer with `key` (an ECDSA P-256 key pair).
    fn from_key(key: &rcgen::KeyPair) -> Issuer {
        let digest = ring::digest::digest(&ring::digest::SHA256, &rcgen::PublicKeyData::subject_public_key_info(key));
        Issuer {
            encoding: EncodingKey::from_ec_der(&key.serialize_der()),
            decoding: DecodingKey::from_ec_der(rcgen::PublicKeyData::der_bytes(key)),
            key_id: URL_SAFE_NO_PAD.encode(digest.as_ref()),
        }
    }

    /// A signed token with `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
    }

    /// Checks `token` at `now` (Unix seconds) for `audiences` (the API's when empty): `Ok(None)`
    /// when it is not a token of this issuer, else its claims and the audiences it is good for,
    /// or why it is refused. The ServiceAccount itself is not looked up here.
    pub fn verify(
        &self,
        token: &str,
        now: i64,
        audiences: &[String],
    ) -> Result<Option<(Claims, Vec<String>)>, TokenError> {
        if !has_our_issuer(token) {
            return Ok(None);
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims = HashSet::new();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let claims = match jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation) {
            Ok(data) => data.claims,
            Err(e) => {
                use jsonwebtoken::errors::ErrorKind;
                return match e.kind() {
                    ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm | ErrorKind::InvalidEcdsaKey => {
                        Err(TokenError::Signature)
                    }
                    // Not a JWT kube could parse: not ours.
                    _ => Ok(None),
                };
            }
        };
        let target: Vec<String> = if audiences.is_empty() {
            API_AUDIENCES.iter().map(|a| a.to_string()).collect()
        } else {
            audiences.to_vec()
        };
        let token_audiences = if claims.aud.is_empty() {
            API_AUDIENCES.iter().map(|a| a.to_string()).collect()
        } else {
            claims.aud.clone()
        };
        let good: Vec<String> = token_audiences.iter().filter(|a| target.contains(a)).cloned().collect();
        if good.is_empty() {
            return Err(TokenError::Audience { token: token_audiences, target });
        }
        if claims.exp != 0 && now - LEEWAY_SECONDS > claims.exp {
            return Err(TokenError::Expired);
        }
        if claims.nbf != 0 && now + LEEWAY_SECONDS < claims.nbf {
            return Err(TokenError::NotValidYet);
        }
        if claims.iat != 0 && now + LEEWAY_SECONDS < claims.iat {
            return Err(TokenError::IssuedInTheFuture);
        }
        Ok(Some((claims, good)))
    }
}

/// Whether `token` looks like a JWT whose (unverified) issuer is [`ISSUER`], as kube's
/// `hasCorrectIssuer` decides before anything else.
fn has_our_issuer(token: &str) -> bool {
    if token.trim_start().starts_with('{') {
        return false;
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return false;
    }
    let Ok(payload) = URL_SAFE_NO_PAD.decode(parts[1].trim_end_matches('=')) else { return false };
    #[derive(Deserialize)]
    struct Iss {
        #[serde(default)]
        iss: String,
    }
    serde_json::from_slice::<Iss>(&payload).is_ok_and(|c| c.iss == ISSUER)
}

/// Writes a private file (mode 0600).
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    std::io::Write::write_all(&mut file, contents.as_bytes())?;
    file.sync_all()
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests;
