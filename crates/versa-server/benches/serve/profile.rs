//! The profile scenario, only when named: what a GET (and a LIST of 1,000) costs versa in
//! instructions and allocations, which — unlike the throughput figures — do not move with the
//! machine's load, so changes to the hot path can be judged on a shared machine.
//!
//! A fixed number of requests, one after the other on one connection, first to versa, then to
//! the bare server: `VERSA_BENCH_REQUESTS` (1,000) GETs of one object, then
//! `VERSA_BENCH_LIST_REQUESTS` (20) LISTs of 1,000 objects (0: no LIST, and the 1,000 objects
//! are not created). Each run, after as many requests again as warm-up, goes between a call of
//! [`profile_start`] and one of [`profile_stop`], for callgrind to count just that run:
//!
//! ```text
//! valgrind --tool=callgrind --dump-before='*profile_start*' --dump-after='*profile_stop*' \
//!     $CARGO_TARGET_DIR/release/deps/serve-* --bench profile
//! ```
//!
//! writes two `callgrind.out.<pid>.<n>` per run (callgrind's `--zero-before` did not zero here):
//! what came before it, then the run, `2k` for the `k`th run printed. The run's total of
//! instructions (`Ir`) and its calls of the global allocator (`__rust_alloc*`, `__rust_realloc`)
//! (`callgrind_annotate --inclusive=yes`), divided by the requests, are the figures per
//! request; versa's minus the bare server's are versa's own (the client, TLS and HTTP costs
//! are in both). `hack/profile-get.sh` runs this and prints them.

use super::*;

pub(super) fn profile(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let (requests, list_requests) = (settings.profile_gets, settings.profile_lists);
    let versa = Versa::start(server_rt);
    let list_body = Arc::new(OnceLock::new());
    let bare_addr = server_rt.block_on(start_bare(versa.dir.path(), list_body.clone()));
    let versa_client = Client::new(versa.dir.path(), versa.addr);
    let bare_client = Client::new(versa.dir.path(), bare_addr);
    println!();
    println!("## profile: {requests} GETs, {list_requests} LISTs of {LIST_OBJECTS}, sequential on one connection");
    client_rt.block_on(async {
        let mut conn = versa_client.connect().await;
        define_get_target(&mut conn).await;
        if list_requests > 0 {
            fill(&versa_client, 4, LIST_PATH, LIST_OBJECTS, Arc::new(|i| crontab(&format!("l-{i:04}")))).await;
            let (status, body) = conn.send(Method::GET, LIST_PATH, None).await;
            assert_eq!(status, StatusCode::OK);
            list_body.set(body).unwrap();
        }
        let mut bare_conn = bare_client.connect().await;
        let mut run = 0;
        let mut runs = vec![("GET", GET_PATH, requests)];
        if list_requests > 0 {
            runs.push(("LIST", LIST_PATH, list_requests));
        }
        for (what, path, n) in runs {
            for (server, conn) in [("versa", &mut conn), ("bare", &mut bare_conn)] {
                sequential(conn, path, None, n).await;
                run += 1;
                println!("run {run}: {n} × {what} of {server}");
                profile_start(run);
                sequential(conn, path, None, n).await;
                profile_stop(run);
            }
        }
    });
    versa.stop(server_rt);
}

/// Where a profiled run starts (callgrind writes what came before on entering it).
#[inline(never)]
fn profile_start(run: usize) {
    // Not the same code as `profile_stop`'s, which the linker would fold into one function.
    std::hint::black_box(("start", run));
}

/// Where a profiled run ends (callgrind writes its counters on leaving it).
#[inline(never)]
fn profile_stop(run: usize) {
    std::hint::black_box(("stop", run));
}
