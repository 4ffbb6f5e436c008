//! Writing events: they are serialised on the request's task and handed to one writer thread
//! through a bounded queue ([`QUEUE_EVENTS`] lines); the thread appends them to standard output
//! or a `RotatingFile` and flushes whenever the queue is empty. kube's log backend is blocking
//! by default (`--audit-log-mode=blocking`: a request waits for its event to be written, and no
//! event is ever dropped); here a request waits only when the queue is full, so a slow disk
//! slows requests down rather than losing events, and a fast one costs them nothing.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot};

use super::error::{Error, Result};
use super::rotating_file::{RotatingFile, open_append};

/// Lines waiting for the writer thread before requests wait for it.
pub const QUEUE_EVENTS: usize = 4096;

/// `--audit-log-path` and the rotation flags (kube's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// The file events are appended to; `-` is standard output.
    pub path: PathBuf,
    /// Days to keep rotated files (0: no limit).
    pub max_age_days: u32,
    /// Rotated files to keep (0: no limit).
    pub max_backups: u32,
    /// MiB a file may reach before it is rotated (0: never rotated).
    pub max_size_mb: u32,
}

impl LogConfig {
    /// `path` with kube's defaults: rotation at 100 MiB, 100 backups, 366 days.
    pub fn new(path: impl Into<PathBuf>) -> LogConfig {
        LogConfig { path: path.into(), max_age_days: 366, max_backups: 100, max_size_mb: 100 }
    }
}

/// Opens (creates) the log and starts its writer thread; the queue to it.
pub(super) fn start(config: &LogConfig) -> Result<Sink> {
    let output = Output::open(config)?;
    let (tx, rx) = mpsc::channel(QUEUE_EVENTS);
    std::thread::Builder::new()
        .name("audit-log".into())
        .spawn(move || write_events(rx, output))
        .map_err(Error::Thread)?;
    Ok(Sink { tx })
}

#[derive(Debug)]
enum Message {
    Line(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

/// The queue to the writer thread.
#[derive(Debug, Clone)]
pub(super) struct Sink {
    tx: mpsc::Sender<Message>,
}

impl Sink {
    /// Hands a line over, waiting while the queue is full (kube's blocking mode).
    pub(super) async fn send(&self, line: Vec<u8>) {
        if self.tx.send(Message::Line(line)).await.is_err() {
            tracing::warn!("the audit log writer has stopped: event dropped");
        }
    }

    /// From code that cannot wait (a body's drop): at once when there is room, else from a
    /// task that waits.
    pub(super) fn send_now(&self, line: Vec<u8>) {
        match self.tx.try_send(Message::Line(line)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let tx = self.tx.clone();
                    runtime.spawn(async move {
                        let _ = tx.send(message).await;
                    });
                }
                Err(_) => tracing::warn!("audit log queue full outside the runtime: event dropped"),
            },
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!("the audit log writer has stopped: event dropped")
            }
        }
    }

    /// Waits until every line handed over so far is written.
    pub(super) async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Message::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// The writer thread: appends lines, flushing whenever nothing more is queued.
fn write_events(mut rx: mpsc::Receiver<Message>, mut output: Output) {
    let mut failing = false;
    let mut handle = |message: Message, output: &mut Output| match message {
        Message::Line(line) => match output.write(&line) {
            Ok(()) => failing = false,
            Err(e) => {
                // Once per run of failures: a full disk would otherwise log every event.
                if !failing {
                    tracing::error!(error = %e, "cannot write the audit log; events are being lost");
                }
                failing = true;
            }
        },
        Message::Flush(ack) => {
            let _ = output.flush();
            let _ = ack.send(());
        }
    };
    while let Some(message) = rx.blocking_recv() {
        handle(message, &mut output);
        while let Ok(message) = rx.try_recv() {
            handle(message, &mut output);
        }
        if let Err(e) = output.flush() {
            tracing::error!(error = %e, "cannot flush the audit log");
        }
    }
    let _ = output.flush();
}

/// Where lines go.
#[derive(Debug)]
enum Output {
    Stdout(std::io::Stdout),
    File(RotatingFile),
}

impl Output {
    fn open(config: &LogConfig) -> Result<Output> {
        if config.path.as_os_str() == "-" {
            return Ok(Output::Stdout(std::io::stdout()));
        }
        let err = |source| Error::OpenLog { path: config.path.clone(), source };
        ensure_log_file(&config.path).map_err(err)?;
        let max_size = u64::from(config.max_size_mb) * 1024 * 1024;
        let file =
            RotatingFile::open(&config.path, max_size, config.max_backups, config.max_age_days, SystemTime::now())
                .map_err(err)?;
        Ok(Output::File(file))
    }

    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout(out) => out.lock().write_all(line),
            Output::File(file) => file.write(line, SystemTime::now()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Stdout(out) => out.lock().flush(),
            Output::File(file) => file.flush(),
        }
    }
}

/// kube's `ensureLogFile`: the directory (0700) and the file (0600) exist before serving.
fn ensure_log_file(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    open_append(path).map(drop)
}
