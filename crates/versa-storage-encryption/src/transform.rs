//! The providers' value formats, byte for byte as kube-apiserver writes them
//! (`k8s.io/apiserver/pkg/storage/value/encrypt`), so that data moves between kube's etcd and
//! versa's: `k8s:enc:<provider>:v1:<key name>:` then
//!
//! - `aesgcm`: a 12-byte random nonce, then AES-GCM of the value with the storage key as
//!   additional authenticated data (a value copied under another key does not decrypt);
//! - `aescbc`: a 16-byte random IV, then AES-CBC of the value padded with PKCS#7;
//! - `secretbox`: a 24-byte random nonce, then NaCl's secretbox (Poly1305 tag, XSalsa20 stream);
//!
//! and `identity`: the value as it is (refusing to read what starts with `k8s:enc:`). Writes use
//! the first provider's first key; reads try every provider and key whose prefix the stored value
//! starts with, in order, and fail with kube's errors when none opens it.

use aes_gcm::aead::{Aead as _, KeyInit as _, Payload};
use cbc::cipher::{BlockDecryptMut as _, BlockEncryptMut as _, KeyIvInit as _, block_padding::Pkcs7};
use ring::rand::{SecureRandom as _, SystemRandom};

use crate::config::Provider;

/// What every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// Why a value could not be transformed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum TransformError {
    /// No provider of the resource's entry has a prefix the value starts with.
    #[error("no matching prefix found")]
    NoMatchingPrefix,
    /// Every provider whose prefix matched failed; the errors joined.
    #[error("{0}")]
    Failed(String),
}

/// One provider key, ready: its prefix and cipher.
#[derive(Clone)]
pub struct Keyed {
    pub prefix: Vec<u8>,
    cipher: Cipher,
}

#[derive(Clone)]
enum Cipher {
    Gcm(Vec<u8>),
    Cbc(Vec<u8>),
    Secretbox(Vec<u8>),
    Identity,
}

impl std::fmt::Debug for Keyed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyed").field("prefix", &String::from_utf8_lossy(&self.prefix)).finish_non_exhaustive()
    }
}

/// The keys of `providers`, in the order reads try them (the first writes).
pub fn keyed(providers: &[Provider]) -> Vec<Keyed> {
    let mut out = Vec::new();
    for provider in providers {
        match provider {
            Provider::AesGcm(keys) => out.extend(keys.iter().map(|(name, secret)| Keyed {
                prefix: format!("k8s:enc:aesgcm:v1:{name}:").into_bytes(),
                cipher: Cipher::Gcm(secret.clone()),
            })),
            Provider::AesCbc(keys) => out.extend(keys.iter().map(|(name, secret)| Keyed {
                prefix: format!("k8s:enc:aescbc:v1:{name}:").into_bytes(),
                cipher: Cipher::Cbc(secret.clone()),
            })),
            Provider::Secretbox(keys) => out.extend(keys.iter().map(|(name, secret)| Keyed {
                prefix: format!("k8s:enc:secretbox:v1:{name}:").into_bytes(),
                cipher: Cipher::Secretbox(secret.clone()),
            })),
            Provider::Identity => out.push(Keyed { prefix: Vec::new(), cipher: Cipher::Identity }),
        }
    }
    out
}

/// `value` as stored by the first key, for the storage key `key`.
pub fn seal(keys: &[Keyed], key: &str, value: &[u8]) -> Result<Vec<u8>, TransformError> {
    let Some(first) = keys.first() else { return Ok(value.to_vec()) };
    let fail = |what: &str| TransformError::Failed(format!("failed to encrypt data: {what}"));
    let mut out = first.prefix.clone();
    match &first.cipher {
        Cipher::Identity => out.extend_from_slice(value),
        Cipher::Gcm(secret) => {
            let mut nonce = [0u8; 12];
            SystemRandom::new().fill(&mut nonce).map_err(|_| fail("no random nonce"))?;
            let payload = Payload { msg: value, aad: key.as_bytes() };
            let sealed = match secret.len() {
                16 => aes_gcm::Aes128Gcm::new_from_slice(secret).map(|c| c.encrypt((&nonce).into(), payload)),
                24 => aes_gcm::AesGcm::<aes::Aes192, aes_gcm::aead::consts::U12>::new_from_slice(secret)
                    .map(|c| c.encrypt((&nonce).into(), payload)),
                _ => aes_gcm::Aes256Gcm::new_from_slice(secret).map(|c| c.encrypt((&nonce).into(), payload)),
            };
            let sealed = sealed.map_err(|_| fail("AES-GCM key"))?.map_err(|_| fail("AES-GCM"))?;
            out.extend_from_slice(&nonce);
            out.extend_from_slice(&sealed);
        }
        Cipher::Cbc(secret) => {
            let mut iv = [0u8; 16];
            SystemRandom::new().fill(&mut iv).map_err(|_| fail("no random IV"))?;
            let sealed = match secret.len() {
                16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(secret, &iv)
                    .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(value)),
                24 => cbc::Encryptor::<aes::Aes192>::new_from_slices(secret, &iv)
                    .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(value)),
                _ => cbc::Encryptor::<aes::Aes256>::new_from_slices(secret, &iv)
                    .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(value)),
            }
            .map_err(|_| fail("AES-CBC key"))?;
            out.extend_from_slice(&iv);
            out.extend_from_slice(&sealed);
        }
        Cipher::Secretbox(secret) => {
            let mut nonce = [0u8; 24];
            SystemRandom::new().fill(&mut nonce).map_err(|_| fail("no random nonce"))?;
            let cipher = <xsalsa20poly1305::XSalsa20Poly1305 as xsalsa20poly1305::KeyInit>::new_from_slice(secret)
                .map_err(|_| fail("secretbox key"))?;
            let sealed = xsalsa20poly1305::aead::Aead::encrypt(&cipher, (&nonce).into(), value)
                .map_err(|_| fail("secretbox"))?;
            out.extend_from_slice(&nonce);
            out.extend_from_slice(&sealed);
        }
    }
    Ok(out)
}

/// The value stored under `key`, opened by whichever key's prefix it starts with.
pub fn open(keys: &[Keyed], key: &str, stored: &[u8]) -> Result<Vec<u8>, TransformError> {
    open_marked(keys, key, stored).map(|(value, _)| value)
}

/// [`open`], and whether the value is stale: opened by a key other than the one that writes.
pub fn open_marked(keys: &[Keyed], key: &str, stored: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
    let mut errors = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let Some(data) = stored.strip_prefix(k.prefix.as_slice()) else { continue };
        let opened = match &k.cipher {
            Cipher::Identity if data.starts_with(ENCRYPTED_PREFIX) => {
                // A later provider may hold the key: identity steps aside (kube's migration
                // away from encryption lists identity first).
                continue;
            }
            Cipher::Identity => Ok(data.to_vec()),
            Cipher::Gcm(cipher) => open_gcm(cipher, key, data),
            Cipher::Cbc(secret) => open_cbc(secret, data),
            Cipher::Secretbox(secret) => open_secretbox(secret, data),
        };
        match opened {
            Ok(value) => return Ok((value, i != 0)),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        // Identity's refusal of encrypted data is not an error of its own (kube's prefix
        // transformers skip it): no key opens the value.
        return Err(TransformError::NoMatchingPrefix);
    }
    Err(TransformError::Failed(errors.join(", ")))
}

fn open_gcm(secret: &[u8], key: &str, data: &[u8]) -> Result<Vec<u8>, String> {
    if data.len() < 12 {
        return Err("the stored data was shorter than the required size".into());
    }
    let (nonce, sealed) = data.split_at(12);
    let payload = Payload { msg: sealed, aad: key.as_bytes() };
    let opened = match secret.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(secret).map(|c| c.decrypt(nonce.into(), payload)),
        24 => aes_gcm::AesGcm::<aes::Aes192, aes_gcm::aead::consts::U12>::new_from_slice(secret)
            .map(|c| c.decrypt(nonce.into(), payload)),
        _ => aes_gcm::Aes256Gcm::new_from_slice(secret).map(|c| c.decrypt(nonce.into(), payload)),
    };
    match opened {
        Ok(Ok(plain)) => Ok(plain),
        Ok(Err(_)) => Err("cipher: message authentication failed".into()),
        Err(_) => Err("bad AES-GCM key".into()),
    }
}

fn open_cbc(secret: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    if data.len() < 16 {
        return Err("the stored data was shorter than the required size".into());
    }
    let (iv, sealed) = data.split_at(16);
    if sealed.len() % 16 != 0 {
        return Err("the stored data is not a multiple of the block size".into());
    }
    let opened = match secret.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(secret, iv)
            .map(|c| c.decrypt_padded_vec_mut::<Pkcs7>(sealed)),
        24 => cbc::Decryptor::<aes::Aes192>::new_from_slices(secret, iv)
            .map(|c| c.decrypt_padded_vec_mut::<Pkcs7>(sealed)),
        _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(secret, iv)
            .map(|c| c.decrypt_padded_vec_mut::<Pkcs7>(sealed)),
    };
    match opened {
        Ok(Ok(plain)) => Ok(plain),
        Ok(Err(_)) => Err("invalid padding on input".into()),
        Err(_) => Err("bad AES-CBC key".into()),
    }
}

fn open_secretbox(secret: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    if data.len() < 24 + 16 {
        return Err("the stored data was shorter than the required size".into());
    }
    let (nonce, sealed) = data.split_at(24);
    let cipher = <xsalsa20poly1305::XSalsa20Poly1305 as xsalsa20poly1305::KeyInit>::new_from_slice(secret)
        .map_err(|_| "bad secretbox key".to_owned())?;
    xsalsa20poly1305::aead::Aead::decrypt(&cipher, nonce.into(), sealed)
        .map_err(|_| "output array was not large enough for encryption".to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_value_sealed_by_an_older_key_opens_after_rotation() {
        let k1 = (String::from("key1"), vec![1u8; 32]);
        let k2 = (String::from("key2"), vec![2u8; 32]);
        let before = keyed(&[Provider::AesCbc(vec![k1.clone()]), Provider::Identity]);
        let after = keyed(&[Provider::AesCbc(vec![k2, k1]), Provider::Identity]);
        let sealed = seal(&before, "/k", b"value").unwrap();
        assert_eq!(open(&after, "/k", &sealed).unwrap(), b"value");
    }
}
