//! The authenticator of ServiceAccount tokens (standalone): a bearer token of versa's issuer is
//! checked ([`Issuer::verify`]), then, as kube's validator does on every request, the
//! ServiceAccount it names is read from the store — gone, recreated with another uid, or deleted
//! more than a minute ago, the token is revoked — and so is a bound Secret, Pod or Node. The
//! user is kube's: `system:serviceaccount:NS:NAME`, uid the ServiceAccount's, groups
//! `system:serviceaccounts` and `system:serviceaccounts:NS` (and `system:authenticated`), and
//! the extra `authentication.kubernetes.io/credential-id` `JTI=<jti>` (with the pod's name and
//! uid for a pod-bound token). kube keeps a cache of ServiceAccounts; a GET of the store is
//! cheap here (the embedded store reads inline).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use versa_storage::{Keys, Store};

use super::{ALL_GROUP, Claims, Issuer, LEEWAY_SECONDS, TokenError, USER_PREFIX, unix_now};
use crate::auth::{
    AuthError, Authenticated, Authenticator, CREDENTIAL_ID_KEY, Credentials, MaybeBoxed, UserInfo, add_authenticated,
    later, now,
};
use crate::token_file::bearer_token;

/// The user-extra keys of a pod-bound token (kube's `PodNameKey`, `PodUIDKey`).
const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";

/// Authenticates ServiceAccount tokens (see the module's documentation).
#[derive(Debug, Clone)]
pub struct ServiceAccountAuthenticator {
    issuer: Arc<Issuer>,
    store: Arc<dyn Store>,
    keys: Keys,
}

impl ServiceAccountAuthenticator {
    pub fn new(issuer: Arc<Issuer>, store: Arc<dyn Store>, keys: Keys) -> Self {
        ServiceAccountAuthenticator { issuer, store, keys }
    }

    /// The issuer whose tokens this checks (the `token` subresource signs with it).
    pub fn issuer(&self) -> &Issuer {
        &self.issuer
    }

    /// The user of `token` for `audiences` (the API's when empty) and the audiences it is good
    /// for; `Ok(None)` when the token is not one of versa's.
    pub async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<(UserInfo, Vec<String>)>, TokenError> {
        let now = unix_now();
        let Some((claims, audiences)) = self.issuer.verify(token, now, audiences)? else { return Ok(None) };
        self.check_objects(&claims, now).await?;
        Ok(Some((user(&claims), audiences)))
    }

    /// kube's validator: the ServiceAccount and any bound object still exist with the uids the
    /// token names, and were not deleted more than a minute ago.
    async fn check_objects(&self, claims: &Claims, now: i64) -> Result<(), TokenError> {
        let k = &claims.kubernetes;
        let (namespace, sa) = (&k.namespace, &k.serviceaccount);
        let found = self.get("serviceaccounts", Some(namespace), &sa.name).await?;
        let Some(account) = found else {
            return Err(TokenError::Revoked(format!("serviceaccounts \"{}\" not found", sa.name)));
        };
        let uid = account.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
        if uid != sa.uid {
            return Err(TokenError::Revoked(format!("service account UID ({uid}) does not match claim ({})", sa.uid)));
        }
        if deleted_before(&account, now - LEEWAY_SECONDS) {
            return Err(TokenError::Revoked(format!("service account {namespace}/{} has been deleted", sa.name)));
        }
        let bound =
            [("secrets", Some(namespace.as_str()), &k.secret, "secret"), ("pods", Some(namespace), &k.pod, "pod")];
        for (plural, ns, reference, what) in bound {
            let Some(reference) = reference else { continue };
            let invalidated = || TokenError::Revoked("service account token has been invalidated".into());
            let object = self.get(plural, ns, &reference.name).await?.ok_or_else(invalidated)?;
            let uid = object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
            if uid != reference.uid {
                return Err(TokenError::Revoked(format!(
                    "{what} UID ({uid}) does not match service account {what} ref claim ({})",
                    reference.uid
                )));
            }
            if deleted_before(&object, now - LEEWAY_SECONDS) {
                return Err(invalidated());
            }
        }
        Ok(())
    }

    /// An object of the core group from the store, as JSON.
    async fn get(&self, plural: &str, namespace: Option<&str>, name: &str) -> Result<Option<Value>, TokenError> {
        let key = self.keys.object("", plural, namespace, name);
        let kv = self.store.get(&key).await.map_err(|e| TokenError::Lookup(e.to_string()))?;
        Ok(kv.and_then(|kv| serde_json::from_slice(&kv.value).ok()))
    }
}

/// Whether `object` has a `deletionTimestamp` before `before` (Unix seconds).
fn deleted_before(object: &Value, before: i64) -> bool {
    let Some(stamp) = object.pointer("/metadata/deletionTimestamp").and_then(Value::as_str) else { return false };
    stamp.parse::<jiff::Timestamp>().is_ok_and(|t| t.as_second() < before)
}

/// The user a token's claims name, as kube's `ServiceAccountInfo.UserInfo`.
pub fn user(claims: &Claims) -> UserInfo {
    let k = &claims.kubernetes;
    let mut extra = BTreeMap::new();
    if let Some(pod) = &k.pod
        && !pod.name.is_empty()
        && !pod.uid.is_empty()
    {
        extra.insert(POD_NAME_KEY.to_owned(), vec![pod.name.clone()]);
        extra.insert(POD_UID_KEY.to_owned(), vec![pod.uid.clone()]);
    }
    if !claims.jti.is_empty() {
        extra.insert(CREDENTIAL_ID_KEY.to_owned(), vec![format!("JTI={}", claims.jti)]);
    }
    let mut groups = vec![ALL_GROUP.to_owned(), format!("{ALL_GROUP}:{}", k.namespace)];
    add_authenticated(&mut groups);
    UserInfo {
        name: format!("{USER_PREFIX}{}:{}", k.namespace, k.serviceaccount.name),
        uid: k.serviceaccount.uid.clone(),
        groups,
        extra,
    }
}

impl Authenticator for ServiceAccountAuthenticator {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> MaybeBoxed<'a, Authenticated> {
        let Some(token) = bearer_token(credentials.headers) else { return now(Ok(None)) };
        later(async move {
            match self.authenticate_token(token, &[]).await {
                Ok(found) => Ok(found.map(|(user, _)| Arc::new(user))),
                Err(e) => Err(AuthError(e.to_string())),
            }
        })
    }
}
