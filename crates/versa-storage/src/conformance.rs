//! The conformance suite every [`Store`] backend runs: one function per behaviour, each given a
//! fresh store, each panicking with a message on the first deviation. A backend's test file is
//! one line, [`conformance_tests!`](crate::conformance_tests), naming a fixture factory.
//!
//! Cases write under `/conformance/<case>/` and never assume absolute revisions, so a backend may
//! share one server between cases — except the cases [`needs_own_store`] names, which compact
//! history (compaction is store-wide).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::{Error, KeyValue, ListOptions, MAX_VALUE_BYTES, Store, Update, Watch, WatchEvent, guaranteed_update};

/// A store under test and whatever keeps it alive (a temp dir, an etcd process).
pub struct Fixture {
    pub store: Arc<dyn Store>,
    pub guard: Box<dyn std::any::Any + Send>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture").field("store", &self.store).finish_non_exhaustive()
    }
}

/// Cases that compact the store and so must not share it with other cases.
pub fn needs_own_store(case: &str) -> bool {
    matches!(case, "compaction_expires_old_revisions")
}

/// Expands to one `#[tokio::test]` per conformance case, each calling `$make(case_name)` (an
/// `async fn(&'static str) -> Fixture`) for its store.
#[macro_export]
macro_rules! conformance_tests {
    ($make:path) => {
        $crate::conformance_tests!(@cases $make;
            create_get_update_delete,
            compare_and_swap,
            revisions_strictly_increase,
            list_is_prefix_scoped,
            pagination_reads_one_revision,
            list_at_revision,
            invalid_continue_token,
            watch_from_revision,
            watch_from_now,
            watch_is_prefix_scoped,
            watch_progress,
            compaction_expires_old_revisions,
            value_size_limit,
            concurrent_writers,
            gets_see_acknowledged_writes,
            get_at_revision,
            guaranteed_update_paths,
            snapshot_holds_every_key_at_one_revision,
            data_format_is_recorded_and_a_newer_one_refused,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $make(stringify!($case)).await;
                $crate::conformance::$case(fixture.store.clone()).await;
                drop(fixture);
            }
        )*
    };
}

/// How long a case waits for a watch event before failing (a hang guard, not a timing claim).
const EVENT_WAIT: Duration = Duration::from_secs(20);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn text(kv: &KeyValue) -> &str {
    std::str::from_utf8(&kv.value).unwrap()
}

fn base(case: &str) -> String {
    format!("/conformance/{case}/")
}

/// The next item that is not a `Progress`, failing the case on error or hang.
async fn next_event(watch: &mut Watch) -> WatchEvent {
    loop {
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Err(_) => panic!("no watch event within {EVENT_WAIT:?}"),
            Ok(None) => panic!("watch ended unexpectedly"),
            Ok(Some(Err(e))) => panic!("watch failed: {e}"),
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
            Ok(Some(Ok(event))) => return event,
        }
    }
}

/// A compact description of an event for comparisons: `ADDED key=value@rev`.
fn describe(event: &WatchEvent) -> String {
    match event {
        WatchEvent::Added(kv) => format!("ADDED {}={}", kv.key, text(kv)),
        WatchEvent::Modified { kv, prev } => {
            format!("MODIFIED {}={} (was {})", kv.key, text(kv), prev.as_ref().map(text).unwrap_or("?"))
        }
        WatchEvent::Deleted { prev, .. } => format!("DELETED {} (was {})", prev.key, text(prev)),
        WatchEvent::Progress { revision } => format!("PROGRESS {revision}"),
    }
}

fn pairs(items: &[KeyValue]) -> Vec<(String, String)> {
    items.iter().map(|kv| (kv.key.clone(), text(kv).to_string())).collect()
}

pub async fn create_get_update_delete(store: Arc<dyn Store>) {
    let key = format!("{}a", base("crud"));
    assert_eq!(store.get(&key).await.unwrap(), None);

    let created = store.create(&key, b("one")).await.unwrap();
    assert_eq!((created.key.as_str(), text(&created)), (key.as_str(), "one"));
    assert_eq!(created.create_revision, created.mod_revision);
    assert_eq!(store.get(&key).await.unwrap().as_ref(), Some(&created));

    match store.create(&key, b("again")).await {
        Err(Error::AlreadyExists { key: k }) => assert_eq!(k, key),
        other => panic!("second create: expected AlreadyExists, got {other:?}"),
    }

    let updated = store.update(&key, b("two"), created.mod_revision).await.unwrap();
    assert!(updated.mod_revision > created.mod_revision);
    assert_eq!(updated.create_revision, created.create_revision);
    assert_eq!(store.get(&key).await.unwrap().as_ref(), Some(&updated));

    let deleted = store.delete(&key, None).await.unwrap();
    assert_eq!(deleted.prev, updated, "delete returns the last value");
    assert!(deleted.revision > updated.mod_revision);
    assert_eq!(store.get(&key).await.unwrap(), None);

    assert!(matches!(store.delete(&key, None).await, Err(Error::NotFound { .. })));
    assert!(matches!(store.update(&key, b("x"), updated.mod_revision).await, Err(Error::NotFound { .. })));

    // A deleted key can be created again, with a new create revision.
    let again = store.create(&key, b("three")).await.unwrap();
    assert!(again.create_revision > deleted.revision);
}

pub async fn compare_and_swap(store: Arc<dyn Store>) {
    let key = format!("{}k", base("cas"));
    let v1 = store.create(&key, b("1")).await.unwrap();
    let v2 = store.update(&key, b("2"), v1.mod_revision).await.unwrap();

    match store.update(&key, b("stale"), v1.mod_revision).await {
        Err(Error::Conflict { key: k, expected }) => {
            assert_eq!((k.as_str(), expected), (key.as_str(), v1.mod_revision))
        }
        other => panic!("stale update: expected Conflict, got {other:?}"),
    }
    assert!(matches!(store.delete(&key, Some(v1.mod_revision)).await, Err(Error::Conflict { .. })));
    assert_eq!(text(&store.get(&key).await.unwrap().unwrap()), "2", "a failed CAS changes nothing");

    let deleted = store.delete(&key, Some(v2.mod_revision)).await.unwrap();
    assert_eq!(text(&deleted.prev), "2");
}

pub async fn revisions_strictly_increase(store: Arc<dyn Store>) {
    let base = base("revisions");
    let start = store.current_revision().await.unwrap();
    let mut last = start;
    for i in 0..5 {
        let kv = store.create(&format!("{base}{i}"), b("x")).await.unwrap();
        assert!(kv.mod_revision > last, "revision {} after {last}", kv.mod_revision);
        last = kv.mod_revision;
        let kv = store.update(&kv.key, b("y"), kv.mod_revision).await.unwrap();
        assert!(kv.mod_revision > last);
        last = kv.mod_revision;
    }
    let deleted = store.delete(&format!("{base}0"), None).await.unwrap();
    assert!(deleted.revision > last);
    assert!(store.current_revision().await.unwrap() >= deleted.revision);

    // Failed writes take no revision of their own.
    let before = store.current_revision().await.unwrap();
    let _ = store.create(&format!("{base}1"), b("dup")).await.unwrap_err();
    let list = store.list(&base, ListOptions::default()).await.unwrap();
    assert!(list.revision >= before);
}

pub async fn list_is_prefix_scoped(store: Arc<dyn Store>) {
    let base = base("prefix");
    for key in ["foos/a", "foos/b", "foosball/c", "foo", "fo/x"] {
        store.create(&format!("{base}{key}"), b(key)).await.unwrap();
    }
    let page = store.list(&format!("{base}foos/"), ListOptions::default()).await.unwrap();
    assert_eq!(
        pairs(&page.items),
        vec![(format!("{base}foos/a"), "foos/a".into()), (format!("{base}foos/b"), "foos/b".into())]
    );
    assert_eq!(page.continue_token, None);
    assert!(page.revision >= page.items.iter().map(|kv| kv.mod_revision).max().unwrap());
    let all = store.list(&base, ListOptions::default()).await.unwrap();
    let keys: Vec<_> = all.items.iter().map(|kv| kv.key.strip_prefix(&base).unwrap().to_string()).collect();
    assert_eq!(keys, ["fo/x", "foo", "foos/a", "foos/b", "foosball/c"], "key order");
}

pub async fn pagination_reads_one_revision(store: Arc<dyn Store>) {
    let base = base("pages");
    for i in 0..25 {
        store.create(&format!("{base}{i:02}"), b(&format!("v{i}"))).await.unwrap();
    }
    let first = store.list(&base, ListOptions { limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(first.items.len(), 10);
    let token = first.continue_token.clone().expect("a continue token after a full page");

    // Writes between pages must not show up in later pages.
    let k15 = store.get(&format!("{base}15")).await.unwrap().unwrap();
    store.update(&k15.key, b("changed"), k15.mod_revision).await.unwrap();
    store.delete(&format!("{base}20"), None).await.unwrap();
    store.create(&format!("{base}12a"), b("new")).await.unwrap();

    let second =
        store.list(&base, ListOptions { limit: 10, continue_token: Some(token), ..Default::default() }).await.unwrap();
    assert_eq!(second.revision, first.revision, "every page is read at the first page's revision");
    let third = store
        .list(&base, ListOptions { limit: 10, continue_token: second.continue_token.clone(), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(third.revision, first.revision);
    assert_eq!(third.continue_token, None, "the last page has no continue token");

    let seen: Vec<_> = [first.items, second.items, third.items].concat();
    let expected: Vec<_> = (0..25).map(|i| (format!("{base}{i:02}"), format!("v{i}"))).collect();
    assert_eq!(pairs(&seen), expected);

    // A fresh list sees the writes.
    let now = store.list(&base, ListOptions::default()).await.unwrap();
    let now = pairs(&now.items);
    assert!(now.contains(&(format!("{base}15"), "changed".into())));
    assert!(now.contains(&(format!("{base}12a"), "new".into())));
    assert!(!now.iter().any(|(k, _)| k == &format!("{base}20")));

    // A page that ends exactly at the last key carries no token, or one that yields nothing.
    let exact = store.list(&base, ListOptions { limit: now.len(), ..Default::default() }).await.unwrap();
    if let Some(token) = exact.continue_token {
        let rest = store.list(&base, ListOptions { continue_token: Some(token), ..Default::default() }).await.unwrap();
        assert!(rest.items.is_empty());
    }
}

pub async fn list_at_revision(store: Arc<dyn Store>) {
    let base = base("at-revision");
    let a = store.create(&format!("{base}a"), b("a1")).await.unwrap();
    store.create(&format!("{base}b"), b("b1")).await.unwrap();
    let then = store.list(&base, ListOptions::default()).await.unwrap();

    store.update(&a.key, b("a2"), a.mod_revision).await.unwrap();
    store.delete(&format!("{base}b"), None).await.unwrap();
    store.create(&format!("{base}c"), b("c1")).await.unwrap();

    let old = store.list(&base, ListOptions { revision: then.revision, ..Default::default() }).await.unwrap();
    assert_eq!(old.revision, then.revision);
    assert_eq!(old.items, then.items, "the list at an old revision is the list as it was");

    // Paging at an old revision.
    let page =
        store.list(&base, ListOptions { revision: then.revision, limit: 1, ..Default::default() }).await.unwrap();
    assert_eq!(pairs(&page.items), [(format!("{base}a"), "a1".to_string())]);
    let rest =
        store.list(&base, ListOptions { continue_token: page.continue_token, ..Default::default() }).await.unwrap();
    assert_eq!(pairs(&rest.items), [(format!("{base}b"), "b1".to_string())]);

    let now = store.list(&base, ListOptions::default()).await.unwrap();
    assert_eq!(pairs(&now.items), [(format!("{base}a"), "a2".into()), (format!("{base}c"), "c1".into())]);

    let future = now.revision + 1000;
    match store.list(&base, ListOptions { revision: future, ..Default::default() }).await {
        Err(Error::FutureRevision { requested, .. }) => assert_eq!(requested, future),
        other => panic!("list at a future revision: expected FutureRevision, got {other:?}"),
    }
}

pub async fn invalid_continue_token(store: Arc<dyn Store>) {
    let options = ListOptions { continue_token: Some("not-a-token".into()), ..Default::default() };
    assert!(matches!(store.list(&base("bad-token"), options).await, Err(Error::InvalidContinue(_))));
}

pub async fn watch_from_revision(store: Arc<dyn Store>) {
    let base = base("watch-history");
    // A write outside the prefix gives a start revision that is not 0 ("from now").
    let start =
        store.create(&format!("{}marker", self::base("watch-history-marker")), b("m")).await.unwrap().mod_revision;
    let a = store.create(&format!("{base}a"), b("a1")).await.unwrap();
    store.create(&format!("{base}b"), b("b1")).await.unwrap();
    store.update(&a.key, b("a2"), a.mod_revision).await.unwrap();
    let deleted = store.delete(&format!("{base}b"), None).await.unwrap();

    let mut watch = store.watch(&base, start).await.unwrap();
    let mut seen = Vec::new();
    let mut revisions = Vec::new();
    for _ in 0..4 {
        let event = next_event(&mut watch).await;
        revisions.push(event.revision());
        seen.push(describe(&event));
        if let WatchEvent::Deleted { revision, prev } = &event {
            assert_eq!(*revision, deleted.revision);
            assert_eq!(prev.value, deleted.prev.value, "deletes carry the previous value");
        }
    }
    assert_eq!(
        seen,
        [
            format!("ADDED {base}a=a1"),
            format!("ADDED {base}b=b1"),
            format!("MODIFIED {base}a=a2 (was a1)"),
            format!("DELETED {base}b (was b1)"),
        ]
    );
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "revision order: {revisions:?}");

    // Then live events, without a gap or a repeat.
    let c = store.create(&format!("{base}c"), b("c1")).await.unwrap();
    let event = next_event(&mut watch).await;
    assert_eq!(describe(&event), format!("ADDED {base}c=c1"));
    assert_eq!(event.revision(), c.mod_revision);

    // Watching from a later revision skips what came before it.
    let mut later = store.watch(&base, deleted.revision).await.unwrap();
    assert_eq!(describe(&next_event(&mut later).await), format!("ADDED {base}c=c1"));
}

pub async fn watch_from_now(store: Arc<dyn Store>) {
    let base = base("watch-now");
    store.create(&format!("{base}old"), b("old")).await.unwrap();
    let mut watch = store.watch(&base, 0).await.unwrap();
    let new = store.create(&format!("{base}new"), b("new")).await.unwrap();
    let event = next_event(&mut watch).await;
    assert_eq!(describe(&event), format!("ADDED {base}new=new"));
    assert_eq!(event.revision(), new.mod_revision);
}

pub async fn watch_is_prefix_scoped(store: Arc<dyn Store>) {
    let base = base("watch-prefix");
    let mut watch = store.watch(&format!("{base}foos/"), 0).await.unwrap();
    store.create(&format!("{base}foosball/x"), b("no")).await.unwrap();
    store.create(&format!("{base}other/x"), b("no")).await.unwrap();
    store.create(&format!("{base}foos/x"), b("yes")).await.unwrap();
    assert_eq!(describe(&next_event(&mut watch).await), format!("ADDED {base}foos/x=yes"));
}

pub async fn watch_progress(store: Arc<dyn Store>) {
    let base = base("watch-progress");
    let mut watch = store.watch(&base, 0).await.unwrap();
    let written = store.create(&format!("{base}x"), b("x")).await.unwrap();
    // An unrelated write elsewhere in the store moves the revision on too.
    let elsewhere = store.create(&format!("{}elsewhere", self::base("watch-progress-other")), b("y")).await.unwrap();
    assert_eq!(describe(&next_event(&mut watch).await), format!("ADDED {base}x=x"));
    loop {
        watch.request_progress();
        match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => {
                assert!(revision >= written.mod_revision);
                if revision >= elsewhere.mod_revision {
                    break;
                }
            }
            other => panic!("expected a progress notification, got {other:?}"),
        }
    }
}

pub async fn compaction_expires_old_revisions(store: Arc<dyn Store>) {
    let base = base("compaction");
    let mut revisions = Vec::new();
    for i in 0..10 {
        revisions.push(store.create(&format!("{base}{i}"), b("x")).await.unwrap().mod_revision);
    }
    let page = store.list(&base, ListOptions { limit: 3, ..Default::default() }).await.unwrap();
    let token = page.continue_token.clone().unwrap();
    let k = store.get(&format!("{base}0")).await.unwrap().unwrap();
    let latest = store.update(&k.key, b("y"), k.mod_revision).await.unwrap();
    store.compact(latest.mod_revision).await.unwrap();

    let old = revisions[2];
    match store.list(&base, ListOptions { revision: old, ..Default::default() }).await {
        Err(Error::Expired { requested, .. }) => assert_eq!(requested, old),
        other => panic!("list at a compacted revision: expected Expired, got {other:?}"),
    }
    match store.list(&base, ListOptions { continue_token: Some(token), ..Default::default() }).await {
        Err(Error::Expired { .. }) => {}
        other => panic!("continue token from before compaction: expected Expired, got {other:?}"),
    }
    match store.watch(&base, old).await {
        Err(Error::Expired { .. }) => {}
        Err(e) => panic!("watch at a compacted revision: expected Expired, got {e}"),
        Ok(mut watch) => loop {
            match tokio::time::timeout(EVENT_WAIT, watch.next()).await {
                Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
                Ok(Some(Err(Error::Expired { .. }))) => break,
                other => panic!("watch at a compacted revision: expected Expired, got {other:?}"),
            }
        },
    }

    // Current values survive compaction, and watching from the compaction point works.
    assert_eq!(text(&store.get(&k.key).await.unwrap().unwrap()), "y");
    assert_eq!(store.list(&base, ListOptions::default()).await.unwrap().items.len(), 10);
    let mut watch = store.watch(&base, latest.mod_revision).await.unwrap();
    store.create(&format!("{base}after"), b("z")).await.unwrap();
    assert_eq!(describe(&next_event(&mut watch).await), format!("ADDED {base}after=z"));
}

pub async fn value_size_limit(store: Arc<dyn Store>) {
    let key = format!("{}big", base("size"));
    let too_big = Bytes::from(vec![b'x'; MAX_VALUE_BYTES + 1]);
    match store.create(&key, too_big.clone()).await {
        Err(Error::TooLarge { size, limit, .. }) => assert_eq!((size, limit), (MAX_VALUE_BYTES + 1, MAX_VALUE_BYTES)),
        other => panic!("oversized create: expected TooLarge, got {:?}", other.map(|kv| kv.mod_revision)),
    }
    let fits = store.create(&key, Bytes::from(vec![b'y'; 1024 * 1024])).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap().unwrap().value.len(), 1024 * 1024);
    assert!(matches!(store.update(&key, too_big, fits.mod_revision).await, Err(Error::TooLarge { .. })));
}

pub async fn concurrent_writers(store: Arc<dyn Store>) {
    const WRITERS: usize = 32;
    const INCREMENTS: usize = 10;
    let base = base("concurrent");
    let counter = format!("{base}counter");
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        let (base, counter) = (base.clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for i in 0..INCREMENTS {
                let after = guaranteed_update::<Error, _>(&*store, &counter, |current| {
                    let n: usize = current.map(|kv| text(kv).parse().unwrap()).unwrap_or(0);
                    Ok(Update::Set(b(&(n + 1).to_string())))
                })
                .await
                .unwrap();
                mine.push(after.unwrap().mod_revision);
                mine.push(store.create(&format!("{base}w{w}/{i}"), b("x")).await.unwrap().mod_revision);
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        let mine = task.await.unwrap();
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "one writer's revisions increase: {mine:?}");
        all.extend(mine);
    }
    let final_value = store.get(&counter).await.unwrap().unwrap();
    assert_eq!(text(&final_value), (WRITERS * INCREMENTS).to_string(), "no lost updates");
    let unique: BTreeMap<_, _> = all.iter().map(|r| (*r, ())).collect();
    assert_eq!(unique.len(), all.len(), "every acknowledged write has its own revision");
    let list = store.list(&base, ListOptions::default()).await.unwrap();
    assert_eq!(list.items.len(), WRITERS * INCREMENTS + 1);
}

/// A get after an acknowledged write sees that write (or a later one), while other tasks keep
/// reading the same keys in between (a backend may serve gets from a kept snapshot).
pub async fn gets_see_acknowledged_writes(store: Arc<dyn Store>) {
    const WRITERS: usize = 8;
    const WRITES: usize = 40;
    let base = base("read-your-writes");
    let keys: Vec<String> = (0..WRITERS).map(|w| format!("{base}w{w}")).collect();
    for key in &keys {
        store.create(key, b("0")).await.unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (store, keys, stop) = (store.clone(), keys.clone(), stop.clone());
        readers.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for key in &keys {
                    store.get(key).await.unwrap();
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut writers = Vec::new();
    for key in keys {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            let mut revision = store.get(&key).await.unwrap().unwrap().mod_revision;
            for i in 1..=WRITES {
                let written = store.update(&key, b(&i.to_string()), revision).await.unwrap();
                let read = store.get(&key).await.unwrap().unwrap();
                assert_eq!((text(&read), read.mod_revision), (i.to_string().as_str(), written.mod_revision), "{key}");
                revision = written.mod_revision;
            }
            store.delete(&key, None).await.unwrap();
            assert_eq!(store.get(&key).await.unwrap(), None, "{key} after its delete");
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for reader in readers {
        reader.await.unwrap();
    }
}

/// A get no older than a revision (kube's GET with a resourceVersion): at a write's revision
/// it sees that write (a cache waits until it has it), at `0` anything the store has served
/// since, and at a revision not yet written it is `FutureRevision`.
pub async fn get_at_revision(store: Arc<dyn Store>) {
    let key = format!("{}a", base("get-at"));
    assert_eq!(store.get_at(&key, 0).await.unwrap(), None);
    let created = store.create(&key, b("one")).await.unwrap();
    assert_eq!(store.get_at(&key, created.mod_revision).await.unwrap().as_ref(), Some(&created));
    let updated = store.update(&key, b("two"), created.mod_revision).await.unwrap();
    assert_eq!(store.get_at(&key, updated.mod_revision).await.unwrap().as_ref(), Some(&updated));
    let older = store.get_at(&key, created.mod_revision).await.unwrap();
    assert!(older == Some(created.clone()) || older == Some(updated.clone()), "at the create or later: {older:?}");
    let deleted = store.delete(&key, None).await.unwrap();
    assert_eq!(store.get_at(&key, deleted.revision).await.unwrap(), None, "at the delete");
    assert_eq!(store.get_at(&key, 0).await.unwrap(), None, "at 0, after the delete was seen");

    let future = deleted.revision + 1_000_000;
    match store.get_at(&key, future).await {
        Err(Error::FutureRevision { requested, current }) => {
            assert_eq!(requested, future);
            assert!((deleted.revision..future).contains(&current), "current {current}");
        }
        other => panic!("get at a future revision: expected FutureRevision, got {other:?}"),
    }
}

pub async fn guaranteed_update_paths(store: Arc<dyn Store>) {
    let key = format!("{}g", base("guaranteed"));
    let created = guaranteed_update::<Error, _>(&*store, &key, |current| {
        assert!(current.is_none());
        Ok(Update::Set(b("made")))
    })
    .await
    .unwrap()
    .unwrap();
    let kept = guaranteed_update::<Error, _>(&*store, &key, |_| Ok(Update::Keep)).await.unwrap();
    assert_eq!(kept.as_ref(), Some(&created));

    // A write that races the first attempt forces a retry with the new value.
    let mut raced = false;
    let racer = store.clone();
    let result = guaranteed_update::<Error, _>(&*store, &key, |current| {
        let current = current.unwrap();
        if !raced {
            raced = true;
            let (racer, key, rev) = (racer.clone(), current.key.clone(), current.mod_revision);
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(racer.update(&key, b("racer"), rev)).unwrap();
            })
            .join()
            .unwrap();
        }
        Ok(Update::Set(Bytes::from(format!("{}+mine", text(current)))))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(text(&result), "racer+mine");

    assert_eq!(guaranteed_update::<Error, _>(&*store, &key, |_| Ok(Update::Delete)).await.unwrap(), None);
    assert_eq!(store.get(&key).await.unwrap(), None);
}

/// A snapshot taken while another task writes holds every key as it was at the snapshot's
/// revision, and reads back whole (`crate::snapshot`).
pub async fn snapshot_holds_every_key_at_one_revision(store: Arc<dyn Store>) {
    let base = base("snapshot");
    for i in 0..40 {
        store.create(&format!("{base}{i:02}"), b(&format!("v{i}"))).await.unwrap();
    }
    let writer = {
        let store = store.clone();
        let base = base.clone();
        tokio::spawn(async move {
            for i in 0..40 {
                let key = format!("{base}{i:02}");
                let kv = store.get(&key).await.unwrap().unwrap();
                store.update(&key, b("changed"), kv.mod_revision).await.unwrap();
            }
        })
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let snapshot = {
        let store = store.clone();
        tokio::spawn(async move { store.snapshot(tx).await })
    };
    let mut bytes = Vec::new();
    while let Some(chunk) = rx.recv().await {
        bytes.extend_from_slice(&chunk);
    }
    let header = snapshot.await.unwrap().unwrap();
    writer.await.unwrap();
    let mut decoder = crate::snapshot::Decoder::open(bytes.as_slice()).unwrap();
    assert_eq!(decoder.header(), &header);
    let mut ours = Vec::new();
    while let Some(kv) = decoder.next_key().unwrap() {
        assert!(kv.mod_revision <= header.revision, "{kv:?} is newer than the snapshot");
        if kv.key.starts_with(&base) {
            ours.push(kv);
        }
    }
    let then = store.list(&base, ListOptions { revision: header.revision, ..Default::default() }).await.unwrap();
    assert_eq!(ours, then.items, "the snapshot is the store at its revision");
    assert_eq!(ours.len(), 40);
}

/// [`crate::check_data_format`]: recorded once under the prefix, read back, a newer one refused.
pub async fn data_format_is_recorded_and_a_newer_one_refused(store: Arc<dyn Store>) {
    let prefix = base("format");
    let prefix = prefix.trim_end_matches('/');
    assert_eq!(crate::check_data_format(&*store, prefix).await.unwrap(), crate::DATA_FORMAT);
    let key = format!("{prefix}/versa/data-format");
    let kv = store.get(&key).await.unwrap().expect("the format is recorded");
    assert_eq!(text(&kv), crate::DATA_FORMAT.to_string());
    assert_eq!(crate::check_data_format(&*store, prefix).await.unwrap(), crate::DATA_FORMAT);
    store.update(&key, b("2"), kv.mod_revision).await.unwrap();
    let err = crate::check_data_format(&*store, prefix).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the storage under {prefix:?} was written by a newer versa (data format 2); this versa reads data format 1 at most: run the newer versa, or restore into a new data directory a backup this versa can read"
        )
    );
}
