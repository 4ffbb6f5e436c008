//! `versa backup FILE` and `versa restore FILE --data-dir DIR`: a consistent snapshot of every
//! stored key at one revision (`versa_storage::snapshot`), and a new data directory made from
//! one.
//!
//! A backup comes from a running server (`GET /snapshot` with the kubeconfig's credentials; it
//! keeps serving) or from the data directory of a stopped one (`--data-dir`). It is written to
//! `FILE.partial`, synced, read back and checked whole (its count and SHA-256), and only then
//! renamed to `FILE`: an interrupted backup never leaves a file named `FILE`. A restore is the
//! embedded store's (`versa_storage_embedded::restore`): staged beside the directory, renamed
//! into place once the snapshot checked out, its revision moved on so that clients relist.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use bytes::Bytes;
use futures_util::AsyncReadExt as _;
use versa_storage::Store as _;
use versa_storage::snapshot::Decoder;
use versa_storage_embedded::{Config, DEFAULT_BUMP, EmbeddedStore, OpenError};

use crate::kubeconfig;

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// Where to write the snapshot; a directory (existing, or ending in `/`) gets a file named
    /// by the time, `versa-YYYYMMDDTHHMMSSZ.snap`.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// With FILE a directory: keep only the newest N snapshots there (older `versa-*.snap` files
    /// are removed once the new one is written).
    #[arg(long, value_name = "N")]
    keep: Option<usize>,
    /// Back up the data directory of a stopped server instead of a running one.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The running server's kubeconfig (default: the files of $KUBECONFIG, merged, else
    /// ./versa-data/admin.kubeconfig).
    #[arg(long, value_name = "FILE", conflicts_with = "data_dir")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, value_name = "NAME", conflicts_with = "data_dir")]
    context: Option<String>,
    /// The server's URL, instead of a kubeconfig (as kubectl's --server): e.g. versa's Service.
    #[arg(long, value_name = "URL", conflicts_with_all = ["data_dir", "kubeconfig", "context"])]
    server: Option<String>,
    /// With --server: the CA that signed the server's certificate.
    #[arg(long, value_name = "FILE", requires = "server")]
    certificate_authority: Option<PathBuf>,
    /// With --server: a file holding the bearer token (re-read as it rotates), such as a service
    /// account's projected token.
    #[arg(long, value_name = "FILE", requires = "server")]
    token_file: Option<PathBuf>,
    /// With --server: the name the server's certificate is checked against.
    #[arg(long, value_name = "NAME", requires = "server")]
    tls_server_name: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The snapshot `versa backup` wrote.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The new data directory (absent or empty) to restore into.
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// How far the restored store's revision moves past the snapshot's: every resourceVersion
    /// clients hold from before is then older than the restored history, and their lists and
    /// watches at it answer 410 Gone, so they relist.
    #[arg(long, default_value_t = DEFAULT_BUMP, value_name = "N")]
    bump: i64,
}

pub fn backup(args: &BackupArgs) -> ExitCode {
    report(run_backup(args))
}

pub fn restore(args: &RestoreArgs) -> ExitCode {
    report(run_restore(args))
}

fn report(result: Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            warn!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run_backup(args: &BackupArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let into_directory = args.file.is_dir() || args.file.as_os_str().to_string_lossy().ends_with('/');
    if args.keep.is_some() && !into_directory {
        bail!("--keep needs FILE to be a directory");
    }
    let file = if into_directory {
        std::fs::create_dir_all(&args.file).with_context(|| format!("creating {}", args.file.display()))?;
        args.file
            .join(format!("{SNAPSHOT_PREFIX}{}{SNAPSHOT_SUFFIX}", jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ")))
    } else {
        args.file.clone()
    };
    let partial = partial_of(&file);
    let written = runtime.block_on(async {
        let mut out = std::fs::File::create(&partial).with_context(|| format!("creating {}", partial.display()))?;
        match &args.data_dir {
            Some(dir) => from_directory(dir, &mut out).await,
            None => from_server(args, &mut out).await,
        }?;
        out.sync_all().with_context(|| format!("writing {}", partial.display()))?;
        anyhow::Ok(())
    });
    let checked = written.and_then(|()| check(&partial));
    let (revision, keys) = match checked {
        Ok(found) => found,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, &file)
        .with_context(|| format!("renaming {} to {}", partial.display(), file.display()))?;
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing {}", parent.display()))?;
    }
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    say!("backup of revision {revision}: {keys} keys, {bytes} bytes, written to {}", file.display());
    if let Some(keep) = args.keep {
        for old in prune(&args.file, keep)? {
            say!("removed the older backup {}", old.display());
        }
    }
    Ok(())
}

/// How `versa backup DIR/` names its files: the prefix, a UTC time, the suffix — so that names
/// sort by time.
const SNAPSHOT_PREFIX: &str = "versa-";
const SNAPSHOT_SUFFIX: &str = ".snap";

/// Removes all but the newest `keep` snapshots of `dir`; returns what it removed.
fn prune(dir: &Path, keep: usize) -> Result<Vec<PathBuf>> {
    let mut snapshots: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(SNAPSHOT_PREFIX) && n.ends_with(SNAPSHOT_SUFFIX))
        })
        .collect();
    snapshots.sort();
    let excess = snapshots.len().saturating_sub(keep.max(1));
    let old: Vec<PathBuf> = snapshots.into_iter().take(excess).collect();
    for path in &old {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(old)
}

/// `FILE.partial`: where a backup is written until it checks out.
fn partial_of(file: &Path) -> PathBuf {
    let mut name = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    file.with_file_name(name)
}

/// Reads a written snapshot back whole: its revision and key count.
fn check(path: &Path) -> Result<(i64, u64)> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut decoder =
        Decoder::open(std::io::BufReader::new(file)).with_context(|| format!("checking {}", path.display()))?;
    let mut keys = 0;
    while decoder.next_key().with_context(|| format!("checking {}", path.display()))?.is_some() {
        keys += 1;
    }
    Ok((decoder.header().revision, keys))
}

/// A stopped server's data directory, opened (and so locked against a server starting meanwhile).
async fn from_directory(dir: &Path, out: &mut std::fs::File) -> Result<()> {
    if !dir.join(versa_storage_embedded::DB_FILE).exists() {
        bail!("{} holds no versa data", dir.display());
    }
    let store = match EmbeddedStore::open(dir, Config::default()) {
        Ok(store) => store,
        Err(e @ OpenError::InUse { .. }) => {
            bail!(
                "{e}\nto back up a running server, leave out --data-dir: `versa backup FILE` asks it over HTTPS (--kubeconfig)"
            )
        }
        Err(e) => return Err(e.into()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let snapshot = store.snapshot(tx);
    let write = async {
        while let Some(chunk) = rx.recv().await {
            out.write_all(&chunk)?;
        }
        std::io::Result::Ok(())
    };
    let (snapshot, written) = tokio::join!(snapshot, write);
    written.context("writing the backup")?;
    snapshot.context("reading the data directory")?;
    Ok(())
}

/// A running server's `GET /snapshot`.
async fn from_server(args: &BackupArgs, out: &mut std::fs::File) -> Result<()> {
    let config = match &args.server {
        Some(server) => {
            kubeconfig::explicit(
                server,
                args.certificate_authority.as_deref(),
                args.token_file.as_deref(),
                args.tls_server_name.as_deref(),
            )
            .await?
        }
        None => {
            let env = std::env::var_os("KUBECONFIG");
            let files = kubeconfig::locate(args.kubeconfig.as_deref(), env.as_deref());
            kubeconfig::load(&files, args.context.as_deref()).await?
        }
    };
    let client = kube::Client::try_from(config).context("building the client")?;
    let request = http::Request::get("/snapshot").body(Vec::new())?;
    let mut body = client.request_stream(request).await.map_err(|e| anyhow::anyhow!("{}", describe(&e)))?;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = body.read(&mut buf).await.context("reading the snapshot from the server")?;
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n]).context("writing the backup")?;
    }
}

/// kubectl's wording for a refused or unreachable request.
fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("Error from server ({}): {}", status.reason, status.message),
        other => format!("unable to reach the server: {other}"),
    }
}

fn run_restore(args: &RestoreArgs) -> Result<()> {
    let file = std::fs::File::open(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let restored = versa_storage_embedded::restore(std::io::BufReader::new(file), &args.data_dir, args.bump)?;
    say!(
        "restored {} keys of revision {} into {}; its revision is now {}: clients relist (lists and watches at older resourceVersions answer 410 Gone). `versa serve --data-dir {}` makes a new CA and admin kubeconfig unless given --tls-cert-file and friends.",
        restored.keys,
        restored.header.revision,
        args.data_dir.display(),
        restored.revision,
        args.data_dir.display()
    );
    Ok(())
}
