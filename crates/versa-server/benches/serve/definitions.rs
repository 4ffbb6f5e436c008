//! The definitions scenario (issue 19): what many definitions cost, and how fast the server
//! takes one more.
//!
//! Two cases, each on a fresh server (so that another case's freed memory cannot hide growth):
//!
//! - **Many groups**: `VERSA_BENCH_DEFINITIONS` (1,000) small definitions, [`KINDS_PER_GROUP`]
//!   per group, POSTed in a burst over [`WRITERS`] connections; the time until every one is
//!   listed by its group-version's discovery document (target < 10 s for 10,000), and `VmRSS`
//!   per definition once settled (target ≤ 100 KiB). With them loaded, [`FRESH`] new
//!   definitions one after the other, half in new groups and half as one more kind of an
//!   existing group: the time from the POST until `GET /apis/<group>/<version>` lists it and the
//!   definition says `Established` (the server serves it just before it writes the condition),
//!   both polled in a tight loop; p50, p99 and max (targets p99 < 100 ms, max < 1 s). Then the
//!   discovery and OpenAPI documents over all definitions, the first request (which builds
//!   them) and later ones.
//! - **One group**: `VERSA_BENCH_GROUP_DEFINITIONS` (1,000) definitions all in a single group —
//!   every one's names are checked against the whole group's — in a burst, the time until all
//!   are discoverable; then [`FRESH`]/5 more of that group, timed as above.
//!
//! A burst that is not discoverable after [`PATIENCE`] is reported as such (how many were), and
//! the rest of that case skipped: the quadratic controller took minutes for 1,000 in one group.

use std::collections::BTreeSet;

use super::*;

/// Kinds per group in the many-groups case.
const KINDS_PER_GROUP: usize = 10;
/// Connections the burst is POSTed over.
const WRITERS: usize = 8;
/// New definitions timed with the others loaded.
const FRESH: usize = 100;
/// How long a burst may take to become discoverable before the case gives up.
const PATIENCE: Duration = Duration::from_secs(300);
/// The group of the one-group case.
const ONE_GROUP: &str = "one.bench.example.com";

pub(super) fn definitions(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    many_groups(settings.definitions, server_rt, client_rt);
    one_group(settings.group_definitions, server_rt, client_rt);
}

fn many_groups(n: usize, server_rt: &Runtime, client_rt: &Runtime) {
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    println!();
    println!("## definitions: {n} loaded in a burst ({KINDS_PER_GROUP} kinds per group)");
    client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        let _ = conn.send(Method::GET, "/apis", None).await;
        let rss_before = rss_kib();

        let groups: Vec<(String, Vec<String>)> = (0..n.div_ceil(KINDS_PER_GROUP))
            .map(|g| {
                let kinds = KINDS_PER_GROUP.min(n - g * KINDS_PER_GROUP);
                (many_group(g), (0..kinds).map(|k| format!("widget{k}s")).collect())
            })
            .collect();
        let definitions: Vec<Value> = groups
            .iter()
            .flat_map(|(group, plurals)| {
                plurals.iter().enumerate().map(move |(k, plural)| scale_definition(group, plural, k))
            })
            .collect();
        let Some((created, served)) = burst(&client, &mut conn, definitions, &groups).await else {
            return;
        };
        let rss_loaded = rss_kib();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss_settled = rss_kib();
        println!(
            "create {n} definitions ({WRITERS} connections): {:.2} s; all discoverable after {:.2} s (target < 10 s for 10,000: {})",
            created.as_secs_f64(),
            served.as_secs_f64(),
            met(served < Duration::from_secs(10)),
        );
        match (rss_before, rss_loaded, rss_settled) {
            (Some(before), Some(loaded), Some(settled)) => {
                let per = settled.saturating_sub(before) as f64 / n.max(1) as f64;
                println!(
                    "RSS: {} KiB before, {} KiB loaded, {} KiB 2 s later: {per:.1} KiB per definition (target ≤ 100 KiB: {})",
                    thousands(before as f64),
                    thousands(loaded as f64),
                    thousands(settled as f64),
                    met(per <= 100.0)
                );
            }
            _ => println!("RSS: not available (no /proc/self/status)"),
        }

        // Half in groups of their own, half one more kind of a loaded group (whose names are
        // then checked against its neighbours').
        let fresh: Vec<(String, String)> = (0..FRESH)
            .map(|k| {
                if k % 2 == 0 || groups.is_empty() {
                    (format!("fresh{k}.bench.example.com"), "gadgets".to_owned())
                } else {
                    (groups[(k * 7919) % groups.len()].0.clone(), format!("gadget{k}s"))
                }
            })
            .collect();
        let times = timed_one_by_one(&mut conn, &fresh).await;
        report_fresh(&format!("new definition with {n} loaded"), &times);

        for (what, path, accept) in [
            ("GET /apis (APIGroupList)", "/apis", None),
            ("GET /apis (aggregated discovery)", "/apis", Some(AGGREGATED)),
            ("GET /openapi/v2", "/openapi/v2", None),
            ("GET /openapi/v3 (index)", "/openapi/v3", None),
        ] {
            let first = Instant::now();
            let (status, body) = conn.request(Method::GET, path, accept, None).await;
            let first = first.elapsed();
            assert_eq!(status, StatusCode::OK, "{path}: {}", String::from_utf8_lossy(&body));
            let again = sequential(&mut conn, path, accept, 10).await;
            println!(
                "{what}: {} KiB, first {:.1} ms, then p50 {:.1} ms",
                body.len() / 1024,
                ms(first),
                ms(again.p(0.5))
            );
        }
    });
    versa.stop(server_rt);
}

fn one_group(n: usize, server_rt: &Runtime, client_rt: &Runtime) {
    let versa = Versa::start(server_rt);
    let client = Client::new(versa.dir.path(), versa.addr);
    println!();
    println!("## definitions: {n} loaded in a burst into one group");
    client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        let plurals: Vec<String> = (0..n).map(|k| format!("widget{k}s")).collect();
        let definitions: Vec<Value> =
            plurals.iter().enumerate().map(|(k, plural)| scale_definition(ONE_GROUP, plural, k)).collect();
        let groups = vec![(ONE_GROUP.to_owned(), plurals)];
        let Some((created, served)) = burst(&client, &mut conn, definitions, &groups).await else {
            return;
        };
        println!(
            "create {n} definitions of one group ({WRITERS} connections): {:.2} s; all discoverable after {:.2} s",
            created.as_secs_f64(),
            served.as_secs_f64(),
        );
        let fresh: Vec<(String, String)> =
            (0..FRESH / 5).map(|k| (ONE_GROUP.to_owned(), format!("gadget{k}s"))).collect();
        let times = timed_one_by_one(&mut conn, &fresh).await;
        report_fresh(&format!("new definition in the group of {n}"), &times);
    });
    versa.stop(server_rt);
}

/// POSTs `definitions` over [`WRITERS`] connections, then waits until each group's discovery
/// document lists all its plurals. The time the POSTs took and the time until all were
/// discoverable, or `None` (said) when that took longer than [`PATIENCE`].
async fn burst(
    client: &Client,
    conn: &mut Conn,
    definitions: Vec<Value>,
    groups: &[(String, Vec<String>)],
) -> Option<(Duration, Duration)> {
    let definitions = Arc::new(definitions);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (client, definitions) = (client.clone(), definitions.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = client.connect().await;
            for def in definitions.iter().skip(w).step_by(WRITERS) {
                let (status, body) = conn.send(Method::POST, DEFINITIONS_PATH, Some(json_bytes(def))).await;
                assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let created = started.elapsed();
    let total: usize = groups.iter().map(|(_, plurals)| plurals.len()).sum();
    let mut done = 0;
    for (group, plurals) in groups {
        loop {
            let listed = listed(conn, group, "v1").await;
            if plurals.iter().all(|p| listed.contains(p)) {
                break;
            }
            if started.elapsed() > PATIENCE {
                let seen = done + plurals.iter().filter(|p| listed.contains(*p)).count();
                println!(
                    "created {total} definitions in {:.2} s; after {:.0} s not all discoverable ({seen} of {total} checked so far): giving up",
                    created.as_secs_f64(),
                    PATIENCE.as_secs_f64()
                );
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        done += plurals.len();
    }
    Some((created, started.elapsed()))
}

/// The plurals `/apis/<group>/<version>` lists (none when it is not found).
async fn listed(conn: &mut Conn, group: &str, version: &str) -> BTreeSet<String> {
    let (status, body) = conn.send(Method::GET, &format!("/apis/{group}/{version}"), None).await;
    if status != StatusCode::OK {
        return BTreeSet::new();
    }
    let doc: Value = serde_json::from_slice(&body).unwrap();
    doc["resources"]
        .as_array()
        .map(|rs| rs.iter().filter_map(|r| r["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Creates each `(group, plural)` in turn and times it until discoverable and `Established`.
async fn timed_one_by_one(conn: &mut Conn, fresh: &[(String, String)]) -> Vec<Duration> {
    let mut times = Vec::new();
    for (k, (group, plural)) in fresh.iter().enumerate() {
        let def = scale_definition(group, plural, 100 + k);
        let started = Instant::now();
        let (status, answer) = conn.send(Method::POST, DEFINITIONS_PATH, Some(json_bytes(&def))).await;
        assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&answer));
        while !discoverable(conn, group, "v1", plural).await {}
        loop {
            let (_, doc) = conn.send(Method::GET, &format!("{DEFINITIONS_PATH}/{plural}.{group}"), None).await;
            let doc: Value = serde_json::from_slice(&doc).unwrap();
            let established = doc["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
            if established {
                break;
            }
        }
        times.push(started.elapsed());
    }
    times.sort();
    times
}

fn report_fresh(what: &str, times: &[Duration]) {
    let (p50, p99) = (ms(percentile(times, 0.5)), ms(percentile(times, 0.99)));
    let max = times.last().map_or(0.0, |d| ms(*d));
    println!(
        "{what}, POST → Established and discoverable, {}×: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms (target p99 < 100 ms: {}, max < 1 s: {})",
        times.len(),
        met(p99 < 100.0),
        met(max < 1000.0),
    );
}

/// The `g`th group of the many-groups case.
fn many_group(g: usize) -> String {
    format!("g{g:04}.bench.example.com")
}

/// A small definition: a few typed properties, one printer column, the status subresource.
fn scale_definition(group: &str, plural: &str, kind: usize) -> Value {
    let singular = plural.trim_end_matches('s');
    let kind = format!("{}{kind}", if singular.starts_with("widget") { "Widget" } else { "Gadget" });
    json!({
        "apiVersion": "versa.dev/v1",
        "kind": "ResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "string", "enum": ["small", "medium", "large"]},
                        "count": {"type": "integer", "minimum": 0, "maximum": 100},
                        "enabled": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
                    }},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                }}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "string", "jsonPath": ".spec.size"}],
            }],
        },
    })
}
