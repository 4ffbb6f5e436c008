//! Encryption at rest, as kube-apiserver does it with `--encryption-provider-config`: the
//! [`config`] file (kube's `EncryptionConfiguration`, checked with kube's rules and messages),
//! the providers' on-disk formats ([`transform`]: `aesgcm`, `aescbc`, `secretbox`, `identity`,
//! byte for byte kube's, so data written by one reads in the other), and [`EncryptedStore`], a
//! [`versa_storage::Store`] in front of the real one (embedded or etcd) that encrypts the named
//! resources' values on the way down and opens them on the way up.
//!
//! Key rotation is kube's: put the new key first (it writes), keep the old one after it (it
//! still reads), rewrite every object (`kubectl get secrets -A -o json | kubectl replace -f -`),
//! then drop the old key. A value whose key was dropped too early fails to read with kube's
//! error (`unable to transform key ...: no matching prefix found`) and nothing else is
//! affected.

pub mod config;
mod store;
pub mod transform;

pub use config::{Checked, ConfigError, parse};
pub use store::EncryptedStore;
pub use transform::TransformError;
