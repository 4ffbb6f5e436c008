//! Several replicas on one etcd (issue 22): a real etcd and two or three real
//! `versa serve --storage etcd` processes, each with its own data directory (its own CA and
//! admin kubeconfig), electing a leader through an etcd lease.
//!
//! - A definition created through one replica is served and discoverable on the others, and
//!   objects written through one reach watches on the others in order, without gaps or
//!   duplicates; `kubectl` against each replica shows the same `status` of the definition.
//! - A storage-version change is migrated exactly once — every object's etcd `version` (its
//!   write count) is 2: created, rewritten once — even when the leader is killed with SIGKILL
//!   midway and another replica takes over from the checkpoint; no acknowledged write is lost.
//! - The migration waits for a replica that has not yet followed the storage-version change
//!   (held back with the definitions controller's test hook, `VERSA_TEST_HOLD_DEFINITIONS`):
//!   the definition's condition names it, it still writes at the old version meanwhile, and once
//!   it follows, the walk migrates everything — its late write included — exactly once.
//! - The watch-cache soak (issue 41): 100 watches over three replicas' caches see every event of
//!   six writers, in order, without gaps or repeats, and end at the state the replicas list.
//!
//! Waits are bounded (a broken run fails) and nothing asserts on time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "client.rs"]
mod client;
#[path = "fake_kube.rs"]
mod fake_kube;

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use client::Client;
use fake_kube::{AuthenticationConfig, FakeKube};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use versa_e2e::{Versa, free_port, spawn_etcd};

const GROUP: &str = "replicas.example.com";
const DEFINITION: &str = "widgets.replicas.example.com";
/// Short election timings, so that a takeover after a kill comes within seconds.
const ELECTION: [&str; 6] = [
    "--leader-elect-lease-duration",
    "3s",
    "--leader-elect-renew-deadline",
    "2s",
    "--leader-elect-retry-period",
    "500ms",
];
/// A bound on waits for events, not a timing claim.
const WAIT: Duration = Duration::from_secs(60);

/// A single-member etcd, killed when dropped.
struct Etcd {
    child: Child,
    port: u16,
}

impl Etcd {
    async fn start(dir: &Path) -> Etcd {
        let port = free_port();
        let child = spawn_etcd(dir, port, free_port());
        let etcd = Etcd { child, port };
        eventually("etcd answering", || async { etcd.range("/").await.map(|_| ()) }).await;
        etcd
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The keys under `prefix` through etcd's JSON gateway (`/v3/kv/range`): what the store
    /// really holds, with each key's `version` (its number of writes since creation).
    async fn range(&self, prefix: &str) -> Option<Vec<Value>> {
        let mut end = prefix.as_bytes().to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let body = json!({"key": STANDARD.encode(prefix), "range_end": STANDARD.encode(&end)}).to_string();
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.ok()?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.ok()?;
        tokio::spawn(connection);
        let request = http::Request::post("/v3/kv/range")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .unwrap();
        let response = sender.send_request(request).await.ok()?;
        let bytes = response.into_body().collect().await.ok()?.to_bytes();
        let answer: Value = serde_json::from_slice(&bytes).ok()?;
        Some(answer["kvs"].as_array().cloned().unwrap_or_default())
    }
}

impl Etcd {
    /// One of etcd's own metrics (`/metrics` on the client port), summed over its series.
    async fn metric(&self, name: &str) -> f64 {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
        tokio::spawn(connection);
        let request = http::Request::get("/metrics")
            .header("host", "127.0.0.1")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let text = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        text.lines()
            .filter(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with([' ', '{'])))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Calls `f` every 100 ms until it returns `Some`, for at most two minutes.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(what: &str, mut f: impl FnMut() -> F) -> T {
    for _ in 0..1200 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not reached within two minutes");
}

/// One replica, with its admin client.
struct Replica {
    versa: Versa,
    client: Client,
}

async fn replica(dir: &Path, etcd: &Etcd, extra: &[&str]) -> Replica {
    replica_with(dir, etcd, &ELECTION, extra, &[]).await
}

/// A replica with its own election timings and environment.
async fn replica_with(
    dir: &Path,
    etcd: &Etcd,
    election: &[&str],
    extra: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> Replica {
    let endpoint = etcd.endpoint();
    let mut flags = vec!["--storage", "etcd", "--etcd-endpoints", endpoint.as_str()];
    flags.extend(election);
    flags.extend(extra);
    let versa = Versa::start_with_env(dir, &flags, env);
    let client = Client::admin(&versa.data_dir, &versa.address);
    let c = client.clone();
    eventually("replica ready", || {
        let c = c.clone();
        async move { (c.get("/readyz").await.status == 200).then_some(()) }
    })
    .await;
    Replica { versa, client }
}

/// Whether this replica leads, from its metrics.
async fn leads(c: &Client) -> bool {
    let text = c.get("/metrics").await.text();
    text.lines().any(|l| l.starts_with("leader_election_master_status{") && l.ends_with(" 1"))
}

fn definition(storage: &str) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": DEFINITION},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": storage == "v1", "schema": schema},
                {"name": "v2", "served": true, "storage": storage == "v2", "schema": schema},
            ],
        },
    })
}

const WIDGETS: &str = "/apis/replicas.example.com/v1/namespaces/default/widgets";

/// Creates the definition through `c` and waits until every replica serves it (discovery and
/// a list) and the leader's namespace controller has made `default`.
async fn define(c: &Client, replicas: &[&Client]) {
    let r = c.post("/apis/versa.dev/v1/resourcedefinitions", &definition("v1")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    for (i, other) in replicas.iter().enumerate() {
        eventually(&format!("replica {i} serves the definition"), || async move {
            let discovery = other.get(&format!("/apis/{GROUP}/v1")).await;
            let listed = discovery.status == 200
                && discovery.json()["resources"].as_array().is_some_and(|rs| rs.iter().any(|r| r["name"] == "widgets"));
            let namespace = other.get("/api/v1/namespaces/default").await.status == 200;
            (listed && namespace && other.get(WIDGETS).await.status == 200).then_some(())
        })
        .await;
    }
}

fn widget(name: &str, n: u64) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": {"name": name}, "spec": {"n": n}})
}

#[tokio::test]
async fn every_replica_serves_and_watches_see_every_write_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&dir.path().join("etcd")).await;
    let mut replicas = Vec::new();
    for i in 0..3 {
        replicas.push(replica(&dir.path().join(format!("versa-{i}")), &etcd, &[]).await);
    }
    let clients: Vec<&Client> = replicas.iter().map(|r| &r.client).collect();
    eventually("one leader", || async {
        let mut leaders = 0;
        for c in &clients {
            leaders += usize::from(leads(c).await);
        }
        (leaders == 1).then_some(())
    })
    .await;
    define(clients[0], &clients).await;

    // Watches on the other two, from the revision each one listed at.
    let mut watches = Vec::new();
    for c in &clients[1..] {
        let rv = c.get(WIDGETS).await.json()["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
        let w = c.watch(&format!("{WIDGETS}?watch=1&resourceVersion={rv}"), &[]).await;
        assert_eq!(w.status, 200);
        watches.push(w);
    }
    // Writes through the first: creates, then updates.
    let mut written = Vec::new();
    for i in 0..30 {
        let r = clients[0].post(WIDGETS, &widget(&format!("w{i:02}"), 0)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        written.push(("ADDED".to_owned(), format!("w{i:02}"), r.json()["metadata"]["resourceVersion"].clone()));
    }
    for i in 0..20 {
        let name = format!("w{i:02}");
        let r = clients[0].merge_patch(&format!("{WIDGETS}/{name}"), &json!({"spec": {"n": 1}})).await;
        assert_eq!(r.status, 200, "{}", r.text());
        written.push(("MODIFIED".to_owned(), name, r.json()["metadata"]["resourceVersion"].clone()));
    }
    for (i, w) in watches.iter_mut().enumerate() {
        let mut seen = Vec::new();
        while seen.len() < written.len() {
            let e = w.event(WAIT, &format!("watch on replica {}", i + 1)).await;
            if e["type"] == "BOOKMARK" {
                continue;
            }
            let o = &e["object"];
            seen.push((
                e["type"].as_str().unwrap().to_owned(),
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["metadata"]["resourceVersion"].clone(),
            ));
        }
        assert_eq!(seen, written, "replica {}: every write, once, in order", i + 1);
    }

    // kubectl against each replica: the same status (conditions, storedVersions).
    let status_of = |r: &Replica| {
        let out = r.versa.kubectl(&["get", "resourcedefinitions", DEFINITION, "-o", "json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["status"].clone()
    };
    let first = status_of(&replicas[0]);
    assert_eq!(first["storedVersions"], json!(["v1"]));
    assert!(
        first["conditions"].as_array().unwrap().iter().any(|c| c["type"] == "Established" && c["status"] == "True")
    );
    for r in &replicas[1..] {
        let mut same = false;
        for _ in 0..100 {
            if status_of(r) == first {
                same = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(same, "kubectl shows the same status on every replica: {first} vs {}", status_of(r));
    }
}

#[tokio::test]
async fn migration_is_done_once_across_a_killed_leader() {
    const OBJECTS: u64 = 300;
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&dir.path().join("etcd")).await;
    // Slow migrations, so that the leader can be killed in the middle of one.
    let rate = ["--migration-rate", "25"];
    let mut replicas = vec![
        replica(&dir.path().join("versa-0"), &etcd, &rate).await,
        replica(&dir.path().join("versa-1"), &etcd, &rate).await,
    ];
    let clients: Vec<&Client> = replicas.iter().map(|r| &r.client).collect();
    define(clients[0], &clients).await;
    for i in 0..OBJECTS {
        let r = clients[i as usize % 2].post(WIDGETS, &widget(&format!("w{i:03}"), i)).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }

    // v2 becomes the storage version.
    let path = format!("/apis/versa.dev/v1/resourcedefinitions/{DEFINITION}");
    let mut def = clients[1].get(&path).await.json();
    def["spec"]["versions"][0]["storage"] = json!(false);
    def["spec"]["versions"][1]["storage"] = json!(true);
    let r = clients[1].put(&path, &def).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Kill the leader once its checkpoint shows it midway.
    let leader = eventually("a leader", || async {
        for (i, c) in clients.iter().enumerate() {
            if leads(c).await {
                return Some(i);
            }
        }
        None
    })
    .await;
    let survivor = 1 - leader;
    let checkpoint = eventually("a checkpoint midway", || async {
        let c = clients[survivor].get(&path).await.json()["status"]["storageMigration"].clone();
        c.is_object().then_some(c)
    })
    .await;
    assert_eq!(checkpoint["storageVersion"], "v2");
    assert!(checkpoint["examined"].as_u64().unwrap() < OBJECTS, "midway: {checkpoint}");
    drop(clients);
    let killed = replicas.remove(leader);
    drop(killed); // SIGKILL (Child::kill), then reaped.
    let survivor = &replicas[0];

    // The survivor takes over and finishes.
    let status = eventually("storedVersions trimmed by the survivor", || async {
        let s = survivor.client.get(&path).await.json()["status"].clone();
        (s["storedVersions"] == json!(["v2"])).then_some(s)
    })
    .await;
    assert!(status.get("storageMigration").is_none(), "the checkpoint goes with the trim: {status}");
    assert!(leads(&survivor.client).await);

    // Every object was written exactly twice (created, migrated once), is stored at v2, and
    // none is lost.
    let kvs = etcd.range(&format!("/registry/{GROUP}/widgets/")).await.unwrap();
    assert_eq!(kvs.len() as u64, OBJECTS, "every acknowledged create is there");
    for kv in &kvs {
        let key = String::from_utf8(STANDARD.decode(kv["key"].as_str().unwrap()).unwrap()).unwrap();
        let value: Value = serde_json::from_slice(&STANDARD.decode(kv["value"].as_str().unwrap()).unwrap()).unwrap();
        assert_eq!(kv["version"], "2", "{key}: written once by the migration");
        assert_eq!(value["apiVersion"], format!("{GROUP}/v2"), "{key}");
    }
    let list = survivor.client.get(WIDGETS).await.json();
    assert_eq!(list["items"].as_array().unwrap().len() as u64, OBJECTS);
}

/// Standalone's garbage collector runs in the leader's term (issue 37): a foreground deletion
/// started through the other replica is carried on by the leader; the leader is killed while
/// the owner waits for a dependent's own finalizer, and the survivor, elected, finishes it.
#[tokio::test]
async fn garbage_collection_is_the_leaders_and_survives_its_death() {
    const DEPENDENTS: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&dir.path().join("etcd")).await;
    let mut replicas = vec![
        replica(&dir.path().join("versa-0"), &etcd, &[]).await,
        replica(&dir.path().join("versa-1"), &etcd, &[]).await,
    ];
    let clients: Vec<&Client> = replicas.iter().map(|r| &r.client).collect();
    define(clients[0], &clients).await;
    let leader = eventually("a leader", || async {
        for (i, c) in clients.iter().enumerate() {
            if leads(c).await {
                return Some(i);
            }
        }
        None
    })
    .await;
    let other = clients[1 - leader];
    let owner = other.post(WIDGETS, &widget("owner", 0)).await.json();
    let reference = json!([{"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "name": "owner",
                            "uid": owner["metadata"]["uid"], "blockOwnerDeletion": true}]);
    for i in 0..=DEPENDENTS {
        let mut w = widget(&format!("dep-{i:03}"), i as u64);
        w["metadata"]["ownerReferences"] = reference.clone();
        if i == DEPENDENTS {
            w["metadata"]["name"] = json!("held");
            w["metadata"]["finalizers"] = json!(["example.com/hold"]);
        }
        let r = other.post(WIDGETS, &w).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = other.delete_with(&format!("{WIDGETS}/owner"), &json!({"propagationPolicy": "Foreground"})).await;
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{}", r.text());
    // The leader's collector deletes the dependents; the held one is only marked.
    eventually("the dependents collected", || async {
        let items = other.get(WIDGETS).await.json()["items"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = items.iter().filter_map(|w| w["metadata"]["name"].as_str()).collect();
        let held_marked =
            items.iter().any(|w| w["metadata"]["name"] == "held" && w["metadata"]["deletionTimestamp"].is_string());
        (names == ["held", "owner"] && held_marked).then_some(())
    })
    .await;
    let owner_now = other.get(&format!("{WIDGETS}/owner")).await.json();
    assert_eq!(owner_now["metadata"]["finalizers"], json!(["foregroundDeletion"]), "the owner waits for held");

    drop(clients);
    drop(replicas.remove(leader)); // SIGKILL
    let survivor = &replicas[0].client;
    eventually("the survivor leads", || async { leads(survivor).await.then_some(()) }).await;
    let r = survivor.merge_patch(&format!("{WIDGETS}/held"), &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    eventually("the owner goes once held has", || async {
        let items = survivor.get(WIDGETS).await.json()["items"].as_array().cloned().unwrap_or_default();
        items.is_empty().then_some(())
    })
    .await;
}

/// Every object under the widgets' prefix as etcd holds it: (name, etcd `version`, apiVersion).
async fn stored_widgets(etcd: &Etcd) -> Vec<(String, String, String)> {
    let kvs = etcd.range(&format!("/registry/{GROUP}/widgets/")).await.unwrap();
    kvs.iter()
        .map(|kv| {
            let key = String::from_utf8(STANDARD.decode(kv["key"].as_str().unwrap()).unwrap()).unwrap();
            let value: Value =
                serde_json::from_slice(&STANDARD.decode(kv["value"].as_str().unwrap()).unwrap()).unwrap();
            let name = key.rsplit('/').next().unwrap().to_owned();
            (name, kv["version"].as_str().unwrap().to_owned(), value["apiVersion"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The records the replicas keep in etcd: (identity, applied revision).
async fn records(etcd: &Etcd) -> Vec<(String, i64)> {
    let kvs = etcd.range("/registry/versa.dev/replicas/").await.unwrap();
    kvs.iter()
        .map(|kv| {
            let value: Value =
                serde_json::from_slice(&STANDARD.decode(kv["value"].as_str().unwrap()).unwrap()).unwrap();
            (value["identity"].as_str().unwrap().to_owned(), value["appliedRevision"].as_i64().unwrap())
        })
        .collect()
}

/// Issue 22: a replica that has not yet seen a storage-version change writes at the old version;
/// the leader's migration does not walk until that replica follows the change, so nothing it
/// writes is left behind the walk.
#[tokio::test]
async fn migration_waits_for_a_replica_that_has_not_followed_the_change() {
    const OBJECTS: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&dir.path().join("etcd")).await;
    // No replica is killed here: a longer lease keeps a busy machine from ending a term or a
    // record by accident.
    let election = [
        "--leader-elect-lease-duration",
        "15s",
        "--leader-elect-renew-deadline",
        "10s",
        "--leader-elect-retry-period",
        "500ms",
    ];
    // The leader first, so that the replica held back below is a follower.
    let leader = replica_with(&dir.path().join("versa-a"), &etcd, &election, &[], &[]).await;
    eventually("the first replica leads", || async { leads(&leader.client).await.then_some(()) }).await;
    let hold = dir.path().join("hold-definitions");
    let env = [("VERSA_TEST_HOLD_DEFINITIONS", hold.as_os_str())];
    let lagging = replica_with(&dir.path().join("versa-b"), &etcd, &election, &[], &env).await;
    assert!(!leads(&lagging.client).await);
    define(&leader.client, &[&leader.client, &lagging.client]).await;
    for i in 0..OBJECTS {
        let c = if i % 2 == 0 { &leader.client } else { &lagging.client };
        let r = c.post(WIDGETS, &widget(&format!("w{i:03}"), i)).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }

    // The second replica takes no definition change from now on; v2 becomes the storage
    // version through the leader.
    std::fs::write(&hold, b"").unwrap();
    let path = format!("/apis/versa.dev/v1/resourcedefinitions/{DEFINITION}");
    let mut def = leader.client.get(&path).await.json();
    def["spec"]["versions"][0]["storage"] = json!(false);
    def["spec"]["versions"][1]["storage"] = json!(true);
    let r = leader.client.put(&path, &def).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let changed_at: i64 = r.json()["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();

    // The leader waits, and says for whom: once it follows the change itself, only the
    // replica whose record is behind it.
    let condition = eventually("the leader waits for the lagging replica alone", || async {
        let status = leader.client.get(&path).await.json()["status"].clone();
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        conditions.into_iter().find(|c| {
            c["type"] == "StorageMigrating"
                && c["reason"] == "WaitingForReplicas"
                && c["message"].as_str().is_some_and(|m| m.contains("waiting for 1 of 2 replicas"))
        })
    })
    .await;
    let behind: Vec<String> =
        records(&etcd).await.into_iter().filter(|(_, applied)| *applied < changed_at).map(|(id, _)| id).collect();
    assert_eq!(behind.len(), 1, "one replica has not followed the change: {behind:?}");
    let message = condition["message"].as_str().unwrap();
    assert!(message.ends_with(&format!("before migrating: {}", behind[0])), "{message}");
    assert_eq!(condition["status"], "True");

    // Meanwhile the lagging replica still writes at v1 — and nothing has been migrated.
    let r = lagging.client.post(WIDGETS, &widget("late", 0)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let stored = stored_widgets(&etcd).await;
    assert_eq!(stored.len() as u64, OBJECTS + 1);
    for (name, version, api_version) in &stored {
        assert_eq!((version.as_str(), api_version.as_str()), ("1", "replicas.example.com/v1"), "{name}");
    }
    let status = leader.client.get(&path).await.json()["status"].clone();
    assert_eq!(status["storedVersions"], json!(["v1", "v2"]), "{status}");

    // It follows the change: the migration walks, and every object — the late one too — is
    // rewritten at v2 exactly once.
    std::fs::remove_file(&hold).unwrap();
    let status = eventually("storedVersions trimmed", || async {
        let s = leader.client.get(&path).await.json()["status"].clone();
        (s["storedVersions"] == json!(["v2"])).then_some(s)
    })
    .await;
    let done = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "StorageMigrating").unwrap();
    assert_eq!(done["reason"], "MigrationSucceeded", "{status}");
    let stored = stored_widgets(&etcd).await;
    assert_eq!(stored.len() as u64, OBJECTS + 1);
    for (name, version, api_version) in &stored {
        assert_eq!((version.as_str(), api_version.as_str()), ("2", "replicas.example.com/v2"), "{name}");
    }
    // And the lagging replica now writes at v2.
    let r = lagging.client.post(WIDGETS, &widget("later", 0)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let later = stored_widgets(&etcd).await.into_iter().find(|(name, ..)| name == "later").unwrap();
    assert_eq!((later.1.as_str(), later.2.as_str()), ("1", "replicas.example.com/v2"));
}

/// Cluster mode elects through a `coordination.k8s.io/v1` Lease in versa's namespace, with kube's
/// lease fields, against the fake kube-apiserver (kube-apiserver cannot run here): the first
/// replica takes the Lease and renews it; when it is killed, the second takes over and the
/// transition is counted.
#[tokio::test]
async fn cluster_mode_elects_through_a_lease() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&dir.path().join("etcd")).await;
    let fake = FakeKube::start();
    let config = dir.path().join("fake.kubeconfig");
    fake.write_kubeconfig(&config);
    let (front_proxy_ca, _) = versa_e2e::serving_tls("front-proxy-ca", "front-proxy", &[]);
    fake.set_authentication_config(AuthenticationConfig::front_proxy(&front_proxy_ca, &["front-proxy"]));
    let endpoint = etcd.endpoint();
    let config = config.to_str().unwrap();
    let start = |name: &str| {
        let mut flags = vec!["--storage", "etcd", "--etcd-endpoints", endpoint.as_str(), "--kubeconfig", config];
        flags.extend(["--service-namespace", "versa-system", "--service-name", "versa"]);
        flags.extend(ELECTION);
        Versa::start_with(&dir.path().join(name), &flags)
    };
    let lease = || fake.leases("versa-system").remove("versa");
    let holder = |l: &Value| l["spec"]["holderIdentity"].as_str().unwrap_or_default().to_owned();

    let first = start("a");
    let taken = eventually("the first replica holds the Lease", || {
        std::future::ready(lease().filter(|l| !holder(l).is_empty()))
    })
    .await;
    let spec = &taken["spec"];
    assert_eq!(spec["leaseDurationSeconds"], 3, "{taken:#}");
    assert!(spec["acquireTime"].is_string() && spec["renewTime"].is_string(), "{taken:#}");
    let renewed = eventually("the holder renews", || {
        std::future::ready(lease().filter(|l| l["spec"]["renewTime"] != spec["renewTime"]))
    })
    .await;
    assert_eq!(holder(&renewed), holder(&taken));

    let _second = start("b");
    let transitions = renewed["spec"]["leaseTransitions"].as_i64().unwrap_or(0);
    drop(first); // SIGKILL: no release; the lease runs out.
    let moved = eventually("the second replica takes over", || {
        std::future::ready(lease().filter(|l| !holder(l).is_empty() && holder(l) != holder(&taken)))
    })
    .await;
    assert_eq!(moved["spec"]["leaseTransitions"].as_i64().unwrap_or(0), transitions + 1, "{moved:#}");
}

/// The soak of issue 41: three replicas with their watch caches (on by default with etcd),
/// 100 client watches spread over them (cluster-wide and namespaced), and six writers creating,
/// updating and deleting through all three while each write is read back, at its
/// `resourceVersion`, from another replica. etcd holds fewer watches than the clients do (one per
/// resource per replica); every watch sees every event of the resource once, in revision order,
/// the same sequence on every replica, ending at the state a LIST of each replica shows; a GET
/// at a revision no replica has reached gets kube's 504.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_watch_caches_of_three_replicas_miss_nothing() {
    const WATCHES: usize = 100;
    const WRITERS: usize = 6;
    const OBJECTS: usize = 20;
    const END: &str = "zz-end";
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(&dir.path().join("etcd")).await;
    let mut replicas = Vec::new();
    for i in 0..3 {
        replicas.push(replica(&dir.path().join(format!("versa-{i}")), &etcd, &[]).await);
    }
    let clients: Vec<Client> = replicas.iter().map(|r| r.client.clone()).collect();
    define(&clients[0], &clients.iter().collect::<Vec<_>>()).await;
    let start = clients[0].get(WIDGETS).await.json()["metadata"]["resourceVersion"].as_str().unwrap().to_owned();

    // Each watch reads on its own task until the end marker, every event it got in hand.
    let mut watchers = Vec::new();
    for i in 0..WATCHES {
        let collection = if i % 2 == 0 { WIDGETS.to_owned() } else { format!("/apis/{GROUP}/v1/widgets") };
        let path = format!("{collection}?watch=1&resourceVersion={start}&allowWatchBookmarks=true");
        let mut w = clients[i % 3].watch(&path, &[]).await;
        assert_eq!(w.status, 200);
        watchers.push(tokio::spawn(async move {
            let mut seen: Vec<(String, String, i64)> = Vec::new();
            loop {
                let e = w.event(WAIT, &format!("watch {i} on replica {}", i % 3)).await;
                if e["type"] == "BOOKMARK" {
                    continue;
                }
                let meta = &e["object"]["metadata"];
                let name = meta["name"].as_str().unwrap().to_owned();
                let rv = meta["resourceVersion"].as_str().unwrap().parse().unwrap();
                seen.push((e["type"].as_str().unwrap().to_owned(), name.clone(), rv));
                if name == END {
                    return seen;
                }
            }
        }));
    }

    // One etcd watch per resource per replica feeds every client watch: far fewer than 100.
    let etcd_watches = etcd.metric("etcd_debugging_mvcc_watcher_total").await;
    assert!(etcd_watches < WATCHES as f64, "etcd holds {etcd_watches} watches for {WATCHES} client watches");

    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (c, other) = (clients[w % 3].clone(), clients[(w + 1) % 3].clone());
        writers.push(tokio::spawn(async move {
            // What this writer did: (type, name, resourceVersion; 0 for a delete's, unknown).
            let mut done: Vec<(String, String, i64)> = Vec::new();
            for j in 0..OBJECTS {
                let name = format!("s{w}-{j:02}");
                let r = c.post(WIDGETS, &widget(&name, 0)).await;
                assert_eq!(r.status, 201, "{}", r.text());
                let created: i64 = r.json()["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                done.push(("ADDED".into(), name.clone(), created));
                let r = c.merge_patch(&format!("{WIDGETS}/{name}"), &json!({"spec": {"n": 1}})).await;
                assert_eq!(r.status, 200, "{}", r.text());
                let updated: i64 = r.json()["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                done.push(("MODIFIED".into(), name.clone(), updated));
                // Read back from another replica's cache, at the write's revision.
                let r = other.get(&format!("{WIDGETS}/{name}?resourceVersion={updated}")).await;
                assert_eq!(r.status, 200, "{}", r.text());
                assert_eq!(r.json()["metadata"]["resourceVersion"], updated.to_string(), "{name} at {updated}");
                if j % 2 == 0 {
                    let r = c.delete(&format!("{WIDGETS}/{name}")).await;
                    assert_eq!(r.status, 200, "{}", r.text());
                    done.push(("DELETED".into(), name, 0));
                }
            }
            done
        }));
    }
    let mut written = Vec::new();
    for writer in writers {
        written.extend(writer.await.unwrap());
    }
    let r = clients[0].post(WIDGETS, &widget(END, 0)).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let end: i64 = r.json()["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    written.push(("ADDED".into(), END.into(), end));
    // Deletes' revisions are not in their answers: compare them by type and name.
    let key = |(t, n, rv): &(String, String, i64)| (t.clone(), n.clone(), if t == "DELETED" { 0 } else { *rv });
    let mut expected: Vec<_> = written.iter().map(key).collect();
    expected.sort();

    let mut first: Option<Vec<(String, String, i64)>> = None;
    for (i, watcher) in watchers.into_iter().enumerate() {
        let seen = watcher.await.unwrap();
        assert!(seen.windows(2).all(|p| p[0].2 < p[1].2), "watch {i}: revisions strictly increase: {seen:?}");
        let mut got: Vec<_> = seen.iter().map(key).collect();
        got.sort();
        assert_eq!(got, expected, "watch {i}: every write once, nothing else");
        match &first {
            None => first = Some(seen),
            Some(first) => assert_eq!(&seen, first, "watch {i}: the same sequence as watch 0"),
        }
    }

    // The events replayed are the state each replica lists at the end marker's revision or later.
    let mut state = std::collections::BTreeMap::new();
    for (t, name, rv) in first.unwrap() {
        match t.as_str() {
            "DELETED" => state.remove(&name),
            _ => state.insert(name, rv),
        };
    }
    for (i, c) in clients.iter().enumerate() {
        let list = c.get(WIDGETS).await.json();
        let listed: std::collections::BTreeMap<String, i64> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let meta = &o["metadata"];
                (meta["name"].as_str().unwrap().to_owned(), meta["resourceVersion"].as_str().unwrap().parse().unwrap())
            })
            .collect();
        assert_eq!(listed, state, "replica {i}: the LIST is the watches' final state");
        let text = c.get("/metrics").await.text();
        let series = format!(r#"apiserver_watch_cache_events_received_total{{group="{GROUP}",resource="widgets"}}"#);
        assert!(text.lines().any(|l| l.starts_with(&series)), "replica {i} reports its watch cache:\n{text}");
    }

    // A GET at a revision not written yet: the cache waits, then kube's answer.
    let future = end + 1_000_000;
    let r = clients[1].get(&format!("{WIDGETS}/{END}?resourceVersion={future}")).await;
    assert_eq!(r.status, 504, "{}", r.text());
    let status = r.json();
    let message = status["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("Timeout: Too large resource version: {future}, current: ")), "{message}");
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["details"],
        json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1})
    );
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
}
