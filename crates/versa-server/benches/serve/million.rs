//! The million scenario (issue 19): one definition with a million objects in embedded storage.
//!
//! On a fresh server, `VERSA_BENCH_OBJECTS` (default 1,000,000) Widgets are created in one
//! namespace through the API (durable creates over `VERSA_BENCH_CONNECTIONS` connections), and
//! at each tenth the process's RSS is printed — it must not grow with the number of stored
//! objects beyond the store's page cache (64 MiB) and the render cache (64 MiB). Then:
//!
//! - a watch from now: the time from a create's answer to its event on a watch opened at the
//!   current resourceVersion, after the first tenth and again with every object stored
//!   (target: unaffected);
//! - a paginated LIST (`limit=500`) through every page, each page timed (target: p99 < 50 ms
//!   at any page);
//! - a LIST with `limit=0` (kube reads it as no limit: the whole collection, issue 41's bad
//!   input at scale): read as it arrives and thrown away, the RSS sampled every 50 ms while it
//!   is answered — what it grows by against the answer's size (target: < 10 %; streamed, the
//!   answer is never held whole);
//! - a storage migration: the storage version moves from v1 to v2 and every object is
//!   rewritten (pacing raised to [`MIGRATION_RATE`] objects a second so that the bench ends);
//!   the definition's `StorageMigrating` condition is read every second and the RSS sampled —
//!   the condition's counts must move and memory stay bounded.
//!
//! Everything runs in this process (client and server), so RSS includes the client, which does
//! not grow with the object count either. Not a test: minutes at a million.

use super::*;

/// The definition's group, the namespace its objects live in.
const GROUP: &str = "million.bench.example.com";
const NAMESPACE: &str = "created";
/// Objects per page of the paginated LIST.
const PAGE: usize = 500;
/// Migration pacing for the bench (the server's default is 200 a second).
const MIGRATION_RATE: u32 = 100_000;
/// Creates timed through a watch, each time.
const WATCHED: usize = 200;

pub(super) fn million(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let n = settings.objects;
    let migration = versa_server::state::MigrationOptions { automatic: true, rate: MIGRATION_RATE };
    let versa = Versa::start_with(server_rt, migration);
    let client = Client::new(versa.dir.path(), versa.addr);
    let conns = settings.connections;
    let collection = format!("/apis/{GROUP}/v1/namespaces/{NAMESPACE}/widgets");
    println!();
    println!("## million: {n} objects of one definition in embedded storage, created over {conns} connections");
    client_rt.block_on(async {
        let mut conn = client.connect().await;
        wait_ready(&mut conn).await;
        define(&mut conn, &widget_definition(GROUP, json!({"strategy": "None"})), GROUP, "v1", "widgets").await;
        let rss_empty = rss_kib().unwrap_or(0);
        println!("| objects stored | RSS | seconds to create this tenth |");
        println!("|---:|---:|---:|");
        println!("| 0 | {} MiB | |", rss_empty / 1024);
        let tenth = n.div_ceil(10).max(1);
        let mut watch_first = None;
        let mut created = 0;
        while created < n {
            let upto = (created + tenth).min(n);
            let started = Instant::now();
            let from = created;
            let object = Arc::new(move |i: usize| widget(GROUP, &format!("w-{:07}", from + i)));
            fill(&client, conns, &collection, upto - from, object).await;
            created = upto;
            println!(
                "| {created} | {} MiB | {:.1} |",
                rss_kib().unwrap_or(0) / 1024,
                started.elapsed().as_secs_f64()
            );
            if watch_first.is_none() {
                watch_first = Some(watched_creates(&client, &collection, "first").await);
            }
        }
        let watch_last = watched_creates(&client, &collection, "last").await;

        let pages = paginate(&mut conn, &collection).await;
        let p99 = ms(pages.p(0.99));
        println!();
        let watch_first = watch_first.expect("a watch after the first tenth");
        let mut rows = vec![
            format!(
                "| create → event on a watch from now, p50 / p99 | after {tenth}: {:.2} / {:.2} ms | with {n}: {:.2} / {:.2} ms | unaffected |",
                ms(watch_first.p(0.5)),
                ms(watch_first.p(0.99)),
                ms(watch_last.p(0.5)),
                ms(watch_last.p(0.99)),
            ),
            format!(
                "| LIST limit={PAGE}, every page ({} pages), p50 / p99 / max | {:.2} / {p99:.2} / {:.2} ms | | p99 < 50 ms: {} |",
                pages.requests,
                ms(pages.p(0.5)),
                ms(pages.p(1.0)),
                met(p99 < 50.0)
            ),
        ];
        rows.push(whole_list(&client, &collection).await);
        rows.push(migrate(&mut conn, n).await);
        println!("| measure | | | target |");
        println!("|---|---|---|---|");
        for r in rows {
            println!("{r}");
        }
    });
    versa.stop(server_rt);
}

/// [`WATCHED`] creates one after the other, each timed from its answer to its event on a watch
/// opened from now.
async fn watched_creates(client: &Client, collection: &str, tag: &str) -> Load {
    let mut conn = client.connect().await;
    let (_, body) = conn.send(Method::GET, &format!("{collection}?limit=1"), None).await;
    let rv =
        serde_json::from_slice::<Value>(&body).unwrap()["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watcher = client.connect().await;
    let mut events = watcher.stream(&format!("{collection}?watch=true&resourceVersion={rv}")).await;
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(WATCHED);
    let mut pending = Vec::new();
    for i in 0..WATCHED {
        let name = format!("watched-{tag}-{i:04}");
        let (status, body) = conn.send(Method::POST, collection, Some(widget(GROUP, &name))).await;
        assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
        let answered = Instant::now();
        loop {
            if let Some(at) = pending.iter().position(|p: &Vec<u8>| contains(p, name.as_bytes())) {
                pending.remove(at);
                break;
            }
            let frame = events.frame().await.unwrap().unwrap();
            if let Ok(chunk) = frame.into_data() {
                pending.push(chunk.to_vec());
            }
        }
        latencies.push(answered.elapsed());
        // Events arrive whole or split; what was read is kept only until it matched.
        pending.clear();
    }
    latencies.sort();
    Load { requests: WATCHED, run: started.elapsed(), latencies }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every page of the collection, `limit=500` after `continue`, each timed.
async fn paginate(conn: &mut Conn, collection: &str) -> Load {
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut token: Option<String> = None;
    let mut objects = 0;
    loop {
        let path = match &token {
            None => format!("{collection}?limit={PAGE}"),
            Some(t) => format!("{collection}?limit={PAGE}&continue={t}"),
        };
        let t = Instant::now();
        let (status, body) = conn.send(Method::GET, &path, None).await;
        latencies.push(t.elapsed());
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let page: Value = serde_json::from_slice(&body).unwrap();
        objects += page["items"].as_array().map_or(0, Vec::len);
        match page["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => token = Some(c.to_owned()),
            _ => break,
        }
    }
    println!("(paginated LIST: {objects} objects in {:.1} s)", started.elapsed().as_secs_f64());
    latencies.sort();
    Load { requests: latencies.len(), run: started.elapsed(), latencies }
}

/// A LIST with `limit=0` of the whole collection, read as it arrives (nothing kept but a count of
/// bytes and of items), the RSS sampled meanwhile: the row for the results table.
async fn whole_list(client: &Client, collection: &str) -> String {
    let mut conn = client.connect().await;
    let before = rss_kib().unwrap_or(0);
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(before));
    let sampling = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kib().unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let started = Instant::now();
    let mut body = conn.stream(&format!("{collection}?limit=0")).await;
    // Items counted by their `"kind":"Widget"`, which may be split between two frames: the last
    // bytes of each frame are kept to be searched with the next.
    let marker = br#""kind":"Widget""#;
    let (mut bytes, mut items, mut tail) = (0_u64, 0_usize, Vec::<u8>::new());
    let mut last = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(chunk) = frame.unwrap().into_data() else { continue };
        bytes += chunk.len() as u64;
        tail.extend_from_slice(&chunk);
        items += tail.windows(marker.len()).filter(|w| w == marker).count();
        let keep = tail.len().min(marker.len() - 1);
        tail.drain(..tail.len() - keep);
        last = chunk[chunk.len().saturating_sub(64)..].to_vec();
    }
    let took = started.elapsed();
    sampling.abort();
    let grew = peak.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(before) * 1024;
    let share = grew as f64 / bytes.max(1) as f64 * 100.0;
    println!(
        "(LIST limit=0: {items} items, {:.1} MiB in {:.1} s, ends {:?})",
        bytes as f64 / 1048576.0,
        took.as_secs_f64(),
        String::from_utf8_lossy(&last[last.len().saturating_sub(24)..])
    );
    format!(
        "| LIST limit=0 (the whole collection): items, size; RSS growth while answering | {items}, {:.1} MiB in {:.1} s | {:.1} MiB, {share:.1} % of the answer | < 10 %: {} |",
        bytes as f64 / 1048576.0,
        took.as_secs_f64(),
        grew as f64 / 1048576.0,
        met(share < 10.0)
    )
}

/// Moves the storage version to v2 and follows the migration to its end: the row for the
/// results table.
async fn migrate(conn: &mut Conn, n: usize) -> String {
    let path = format!("{DEFINITIONS_PATH}/widgets.{GROUP}");
    let (_, body) = conn.send(Method::GET, &path, None).await;
    let mut def: Value = serde_json::from_slice(&body).unwrap();
    def["spec"]["versions"][0]["storage"] = json!(false);
    def["spec"]["versions"][1]["storage"] = json!(true);
    let rss_before = rss_kib().unwrap_or(0);
    let started = Instant::now();
    let (status, body) = conn.send(Method::PUT, &path, Some(json_bytes(&def))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (mut rss_max, mut messages, mut last) = (rss_before, 0, String::new());
    println!();
    println!("migration of {n} objects, v1 → v2 (pacing {MIGRATION_RATE}/s): the condition, sampled every second");
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss_max = rss_max.max(rss_kib().unwrap_or(0));
        let (_, body) = conn.send(Method::GET, &path, None).await;
        let def: Value = serde_json::from_slice(&body).unwrap();
        let condition = def["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "StorageMigrating"))
            .cloned()
            .unwrap_or(Value::Null);
        let message = format!("{}/{}: {}", condition["status"], condition["reason"], condition["message"]);
        if message != last {
            messages += 1;
            println!(
                "  {:>6.1} s  RSS {} MiB  {message}",
                started.elapsed().as_secs_f64(),
                rss_kib().unwrap_or(0) / 1024
            );
            last = message;
        }
        if condition["reason"] == "MigrationSucceeded" {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    format!(
        "| storage migration of {n} objects | {seconds:.0} s ({} objects/s); the condition moved {messages} times | RSS {} → at most {} MiB | bounded memory, progress that moves |",
        thousands(n as f64 / seconds),
        rss_before / 1024,
        rss_max / 1024
    )
}
