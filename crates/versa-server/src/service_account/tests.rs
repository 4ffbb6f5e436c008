//! Claims, signing and checking of ServiceAccount tokens, at fixed times.

use super::*;

const NOW: i64 = 1_800_000_000;

fn issuer() -> Issuer {
    Issuer::from_key(&rcgen::KeyPair::generate().unwrap())
}

fn robot() -> Ref {
    Ref { name: "robot".into(), uid: "uid-1".into() }
}

fn claims(expiration: i64) -> Claims {
    Claims::new("team", robot(), vec![ISSUER.into()], NOW, expiration, None, "jti-1".into())
}

/// The claims' JSON is kube's (the names, `kubernetes.io` nested, no empty bound objects).
#[test]
fn claims_are_kubes() {
    let bound = Some((BoundKind::Secret, Ref { name: "s".into(), uid: "uid-2".into() }));
    let c = Claims::new("team", robot(), vec!["api".into()], NOW, 3600, bound, "jti-1".into());
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        serde_json::json!({
            "aud": ["api"], "exp": NOW + 3600, "iat": NOW, "iss": ISSUER, "jti": "jti-1", "nbf": NOW,
            "sub": "system:serviceaccount:team:robot",
            "kubernetes.io": {"namespace": "team", "serviceaccount": {"name": "robot", "uid": "uid-1"},
                              "secret": {"name": "s", "uid": "uid-2"}},
        })
    );
}

/// A token read back at times around its life, for audiences, and with another key.
#[test]
fn tokens_are_checked_as_kube_checks_them() {
    let issuer = issuer();
    let token = issuer.sign(&claims(600)).unwrap();
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256");
    assert_eq!(header["kid"], serde_json::json!(issuer.key_id));
    let (read, audiences) = issuer.verify(&token, NOW, &[]).unwrap().unwrap();
    assert_eq!(read, claims(600));
    assert_eq!(audiences, vec![ISSUER.to_owned()]);
    // A minute's leeway either side.
    let cases: &[(i64, &[&str], Result<(), TokenError>)] = &[
        (NOW + 600 + 60, &[], Ok(())),
        (NOW + 600 + 61, &[], Err(TokenError::Expired)),
        (NOW - 60, &[], Ok(())),
        (NOW - 61, &[], Err(TokenError::NotValidYet)),
        (NOW, &["other"], Err(TokenError::Audience { token: vec![ISSUER.into()], target: vec!["other".into()] })),
        (NOW, &["other", ISSUER], Ok(())),
    ];
    for (at, audiences, want) in cases {
        let audiences: Vec<String> = audiences.iter().map(|a| a.to_string()).collect();
        let got = issuer.verify(&token, *at, &audiences).map(|_| ());
        assert_eq!(&got, want, "at {} for {audiences:?}", at - NOW);
    }
    let other = self::issuer();
    assert_eq!(other.verify(&token, NOW, &[]), Err(TokenError::Signature));
    // Tokens of other issuers, or no JWTs at all, are someone else's.
    let mut foreign = claims(600);
    foreign.iss = "https://elsewhere".into();
    assert_eq!(issuer.verify(&issuer.sign(&foreign).unwrap(), NOW, &[]), Ok(None));
    assert_eq!(issuer.verify("static-token", NOW, &[]), Ok(None));
    // A tampered payload fails the signature.
    let parts: Vec<&str> = token.split('.').collect();
    let mut changed = claims(600);
    changed.kubernetes.serviceaccount.name = "admin".into();
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&changed).unwrap());
    let tampered = format!("{}.{payload}.{}", parts[0], parts[2]);
    assert_eq!(issuer.verify(&tampered, NOW, &[]), Err(TokenError::Signature));
}

/// The user of a token, as kube's `ServiceAccountInfo.UserInfo`.
#[test]
fn the_user_of_a_token() {
    let bound = Some((BoundKind::Pod, Ref { name: "p".into(), uid: "uid-3".into() }));
    let c = Claims::new("team", robot(), vec![], NOW, 600, bound, "jti-1".into());
    let user = authenticator::user(&c);
    assert_eq!(user.name, "system:serviceaccount:team:robot");
    assert_eq!(user.uid, "uid-1");
    assert_eq!(user.groups, ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]);
    let extra: Vec<(&str, &str)> = user.extra.iter().map(|(k, v)| (k.as_str(), v[0].as_str())).collect();
    assert_eq!(
        extra,
        [
            ("authentication.kubernetes.io/credential-id", "JTI=jti-1"),
            ("authentication.kubernetes.io/pod-name", "p"),
            ("authentication.kubernetes.io/pod-uid", "uid-3"),
        ]
    );
}

/// The key is created once, private, and read back the same.
#[test]
fn the_key_is_kept_in_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let first = Issuer::load_or_create(dir.path()).unwrap();
    let token = first.sign(&claims(600)).unwrap();
    let again = Issuer::load_or_create(dir.path()).unwrap();
    assert!(again.verify(&token, NOW, &[]).unwrap().is_some());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
