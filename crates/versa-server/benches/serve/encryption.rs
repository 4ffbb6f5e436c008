//! The encryption scenario (issue 38): what encryption at rest costs a create through the API.
//!
//! Two servers on the embedded store, one with the store wrapped as `--encryption-provider-config`
//! wraps it (aesgcm for Secrets, kube's recommended provider), one plain; Secrets of 1 KiB are
//! created on both in alternating rounds and printed side by side (no target: the issue asks
//! for the two numbers; the storage-level comparison of every provider is
//! `versa-storage-encryption`'s benchmark).

use super::*;

const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys: [{name: k1, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}]\n  - identity: {}\n";

pub(super) fn encryption(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let config = versa_storage_encryption::parse(CONFIG).unwrap();
    let encrypted = Versa::start_on(server_rt, Default::default(), false, |store| {
        Arc::new(versa_storage_encryption::EncryptedStore::new(store, "/registry", &config))
    });
    let plain = Versa::start(server_rt);
    let (on, off) = (Client::new(encrypted.dir.path(), encrypted.addr), Client::new(plain.dir.path(), plain.addr));
    let (conns, timing) = (settings.connections, settings.timing);
    println!();
    println!(
        "## encryption at rest: Secret creates (1 KiB of data), aesgcm against no encryption, {conns} connections"
    );
    let mut rows = Vec::new();
    client_rt.block_on(async {
        for client in [&on, &off] {
            let mut conn = client.connect().await;
            wait_ready(&mut conn).await;
            let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "created"}});
            let (status, body) = conn.send(Method::POST, "/api/v1/namespaces", Some(json_bytes(&namespace))).await;
            assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
        }
        let request = |c: usize, i: usize| {
            let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": format!("s-{c:02}-{i:08}")},
                "data": {"value": base64::engine::general_purpose::STANDARD.encode([b'x'; 1024])}});
            (Method::POST, "/api/v1/namespaces/created/secrets".to_owned(), Some(json_bytes(&secret)))
        };
        let (ours, theirs) = compare(&on, &off, conns, timing, StatusCode::CREATED, request).await;
        rows.push(Row::new("CREATE Secret", ours.rps(), Some(theirs.rps()), "req/s"));
        rows.push(Row::new("CREATE Secret p50", ms(ours.p(0.5)), Some(ms(theirs.p(0.5))), "ms"));
        rows.push(Row::new("CREATE Secret p99", ms(ours.p(0.99)), Some(ms(theirs.p(0.99))), "ms"));
    });
    encrypted.stop(server_rt);
    plain.stop(server_rt);
    print_rows(&rows, "encrypted (aesgcm)", "not encrypted", "encrypted relative to not");
}
