//! `versa backup` and `versa restore` as an admin runs them (issue 40), with the real binary:
//!
//! - a backup taken from a running server while writers create objects and a watch follows
//!   them restores into a new data directory holding exactly the acknowledged writes up to the
//!   snapshot's revision — every object and the definition equal to what the first server served
//!   — and the restored server answers watches at old resourceVersions with 410 Gone;
//! - a backup of a stopped server's data directory; truncated, corrupted and foreign files are
//!   refused with a clear message and leave no data directory; a restore into a directory that
//!   holds data is refused; a backup or a restore killed with SIGKILL at once leaves either
//!   nothing under its name or a whole, good result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

#[path = "client.rs"]
mod client;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use client::Client;
use serde_json::{Value, json};
use versa_e2e::Versa;

const RD: &str = "/apis/versa.dev/v1/resourcedefinitions";
const WIDGETS: &str = "/apis/backup.example.com/v1/namespaces/default/widgets";

fn versa(args: &[&str]) -> Output {
    Command::new(versa_e2e::versa_bin()).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The revision a successful `versa backup` reports.
fn revision_of(out: &Output) -> i64 {
    let said = text(out);
    assert!(out.status.success(), "{said}");
    said.split("backup of revision ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("{said}"))
}

async fn define_widgets(client: &Client) {
    let definition = json!({
        "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
        "metadata": {"name": "widgets.backup.example.com"},
        "spec": {"group": "backup.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "n": {"type": "integer"}, "blob": {"type": "string"}}}}}}}]},
    });
    assert_eq!(client.post(RD, &definition).await.status, 201);
    for _ in 0..300 {
        if client.get(WIDGETS).await.status == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("widgets are not served");
}

fn widget(name: &str, n: u64) -> Value {
    // Every tenth object large enough to be stored compressed.
    let blob = if n.is_multiple_of(10) { "b".repeat(6000) } else { String::new() };
    json!({"apiVersion": "backup.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"n": n, "blob": blob}})
}

/// Every widget a server serves, by name.
async fn widgets(client: &Client) -> BTreeMap<String, Value> {
    let list = client.get(WIDGETS).await.json();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["metadata"]["name"].as_str().unwrap().to_owned(), o.clone()))
        .collect()
}

fn rv(obj: &Value) -> i64 {
    obj["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_backup_under_load_restores_exactly_the_acknowledged_writes_up_to_its_revision() {
    let dir = tempfile::tempdir().unwrap();
    let (data, restored_data, file) =
        (dir.path().join("data"), dir.path().join("restored"), dir.path().join("backup.snap"));
    let server = Versa::start(&data);
    let client = Arc::new(Client::admin(&data, &server.address));
    define_widgets(&client).await;
    // A watch follows the writes throughout, and two writers record what was acknowledged.
    let mut watch = client.watch(&format!("{WIDGETS}?watch=true"), &[]).await;
    assert_eq!(watch.status, 200);
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2 {
        let (client, stop) = (client.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let name = format!("w{w}-{n:05}");
                let answer = client.post(WIDGETS, &widget(&name, n)).await;
                assert_eq!(answer.status, 201, "{}", answer.text());
                acked.push((name, rv(&answer.json())));
                n += 1;
            }
            acked
        }));
    }
    while widgets(&client).await.len() < 100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let kubeconfig = data.join("admin.kubeconfig");
    let args =
        ["backup".to_owned(), file.display().to_string(), "--kubeconfig".to_owned(), kubeconfig.display().to_string()];
    let backup =
        tokio::task::spawn_blocking(move || Command::new(versa_e2e::versa_bin()).args(&args).output().unwrap())
            .await
            .unwrap();
    let revision = revision_of(&backup);
    // More writes after the snapshot: these are not in it.
    let seen = widgets(&client).await.len();
    while widgets(&client).await.len() < seen + 50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    assert!(
        matches!(watch.next_line(Duration::from_secs(5)).await, client::Next::Line(_)),
        "the watch followed the writes"
    );
    let served = widgets(&client).await;
    let definition = client.get(&format!("{RD}/widgets.backup.example.com")).await.json();
    assert!(server.stop());

    let restore = versa(&["restore", file.to_str().unwrap(), "--data-dir", restored_data.to_str().unwrap()]);
    assert!(restore.status.success(), "{}", text(&restore));
    assert!(text(&restore).contains(&format!("of revision {revision} into")), "{}", text(&restore));
    let server = Versa::start(&restored_data);
    let client = Client::admin(&restored_data, &server.address);
    let restored = widgets(&client).await;
    let expected: Vec<&String> = acked.iter().filter(|(_, r)| *r <= revision).map(|(name, _)| name).collect();
    assert!(
        expected.len() >= 100 && expected.len() < acked.len(),
        "{} of {} before the snapshot",
        expected.len(),
        acked.len()
    );
    assert_eq!(restored.len(), expected.len(), "exactly the acknowledged writes up to revision {revision}");
    for name in expected {
        assert_eq!(restored.get(name), served.get(name), "{name} as the first server served it");
    }
    let again = client.get(&format!("{RD}/widgets.backup.example.com")).await.json();
    assert_eq!((&again["metadata"], &again["spec"]), (&definition["metadata"], &definition["spec"]));
    // Old resourceVersions are gone: a watch from one is told to relist.
    let mut old = client.watch(&format!("{WIDGETS}?watch=true&resourceVersion={revision}"), &[]).await;
    let event = old.event(Duration::from_secs(10), "the ERROR event").await;
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["code"], 410, "{event}");
    // New writes come after every old resourceVersion.
    let created = client.post(WIDGETS, &widget("after", 1)).await;
    assert!(rv(&created.json()) > revision + 1_000_000_000, "{}", created.text());
}

#[tokio::test]
async fn interrupted_and_bad_backups_and_restores_are_never_taken_for_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let data = dir.path().join("data");
    let server = Versa::start(&data);
    let client = Client::admin(&data, &server.address);
    define_widgets(&client).await;
    for n in 0..200 {
        assert_eq!(client.post(WIDGETS, &widget(&format!("x{n:03}"), n)).await.status, 201);
    }
    assert!(server.stop());

    // A stopped server's data directory backs up too.
    let good = path("good.snap");
    let backup = versa(&["backup", &good, "--data-dir", data.to_str().unwrap()]);
    revision_of(&backup);

    // Bad files are refused with what is wrong, and leave no data directory.
    let bytes = std::fs::read(&good).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x01;
    let redb = std::fs::read(data.join("store.redb")).unwrap();
    for (name, content, says) in [
        (
            "truncated.snap",
            &bytes[..bytes.len() * 2 / 3],
            "error: the snapshot is truncated: it ends before its end record",
        ),
        ("flipped.snap", &flipped[..], "error: the snapshot is corrupt"),
        ("foreign.snap", &redb[..], "error: not a versa snapshot (it does not start with \"versa-snapshot\")"),
    ] {
        std::fs::write(path(name), content).unwrap();
        let target = path(&format!("{name}.data"));
        let out = versa(&["restore", &path(name), "--data-dir", &target]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert!(text(&out).starts_with(says), "{name}: {}", text(&out));
        assert!(!Path::new(&target).exists(), "{name}: a data directory was left");
    }
    // A directory with data is never restored over.
    let out = versa(&["restore", &good, "--data-dir", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("already holds data: restore into a new data directory"), "{}", text(&out));

    // Killed at once: either nothing under the name, or a whole result.
    let killed = path("killed.snap");
    let mut child = Command::new(versa_e2e::versa_bin())
        .args(["backup", &killed, "--data-dir", data.to_str().unwrap()])
        .spawn()
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    if Path::new(&killed).exists() {
        let out = versa(&["restore", &killed, "--data-dir", &path("from-killed")]);
        assert!(out.status.success(), "a backup named as done does not restore: {}", text(&out));
    }
    let target = path("killed-restore");
    let mut child =
        Command::new(versa_e2e::versa_bin()).args(["restore", &good, "--data-dir", &target]).spawn().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    if Path::new(&target).exists() {
        let out = versa(&["backup", &path("of-killed.snap"), "--data-dir", &target]);
        assert!(out.status.success(), "a restored directory does not open: {}", text(&out));
    }
    // And the next restore into the same place cleans up whatever the killed one left.
    let _ = std::fs::remove_dir_all(&target);
    let out = versa(&["restore", &good, "--data-dir", &target]);
    assert!(out.status.success(), "{}", text(&out));
    let server = Versa::start(Path::new(&target));
    let client = Client::admin(Path::new(&target), &server.address);
    assert_eq!(widgets(&client).await.len(), 200);
}

/// The data directory of the release before the data format was recorded (versa at 0d373f5:
/// `tests/e2e/data/format-1.store.redb.gz`, made by it with kubectl — a CRD, three CronTabs, a
/// namespace and a Secret — and `format-1.expected.json`, what it served then) opens with this
/// build, which records the format, and serves exactly the same objects.
#[tokio::test]
async fn a_data_directory_of_the_release_before_opens_and_serves_the_same_objects() {
    use std::io::Read as _;
    let data_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e/data");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut redb = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(data_dir.join("format-1.store.redb.gz")).unwrap())
        .read_to_end(&mut redb)
        .unwrap();
    std::fs::write(data.join("store.redb"), redb).unwrap();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(data_dir.join("format-1.expected.json")).unwrap()).unwrap();

    let server = Versa::start(&data);
    let client = Client::admin(&data, &server.address);
    // As kubectl showed them then: without managedFields.
    let shown = |mut obj: Value| {
        obj["metadata"].as_object_mut().unwrap().remove("managedFields");
        obj
    };
    let crontabs = client.get("/apis/stable.example.com/v1/namespaces/default/crontabs").await.json();
    let crontabs: Vec<Value> = crontabs["items"].as_array().unwrap().iter().cloned().map(shown).collect();
    assert_eq!(Value::from(crontabs), expected["crontabs"]);
    let secret = client.get("/api/v1/namespaces/team-a/secrets/creds").await.json();
    assert_eq!(shown(secret), expected["secret"]);
    let crd =
        client.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com").await.json();
    let crd = shown(crd);
    assert_eq!(
        (&crd["metadata"], &crd["spec"]),
        (&expected["definition"]["metadata"], &expected["definition"]["spec"])
    );
    // And it keeps working: a write, and a backup of it.
    assert_eq!(
        client
            .post(
                "/apis/stable.example.com/v1/namespaces/default/crontabs",
                &json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "crontab-4"},
                        "spec": {"cronSpec": "* * * * *", "image": "my-image:4", "replicas": 4}})
            )
            .await
            .status,
        201
    );
    assert!(server.stop());
    let backup =
        versa(&["backup", dir.path().join("old.snap").to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    revision_of(&backup);
}
