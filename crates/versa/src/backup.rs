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
    /// Where to write the snapshot.
    #[arg(value_name = "FILE")]
    file: PathBuf,
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
    let partial = partial_of(&args.file);
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
    std::fs::rename(&partial, &args.file)
        .with_context(|| format!("renaming {} to {}", partial.display(), args.file.display()))?;
    if let Some(parent) = args.file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing {}", parent.display()))?;
    }
    let bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    say!("backup of revision {revision}: {keys} keys, {bytes} bytes, written to {}", args.file.display());
    Ok(())
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
    let env = std::env::var_os("KUBECONFIG");
    let files = kubeconfig::locate(args.kubeconfig.as_deref(), env.as_deref());
    let config = kubeconfig::load(&files, args.context.as_deref()).await?;
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
