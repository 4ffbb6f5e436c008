//! lumberjack's `Logger`, as kube's log backend configures it: a file appended to line by line
//! and rotated by size — past `--audit-log-maxsize` MiB it is renamed to
//! `<name>-<UTC time>.<ext>` (lumberjack's `2006-01-02T15-04-05.000`) and a new one started —
//! with backups beyond `--audit-log-maxbackup` and older than `--audit-log-maxage` days
//! deleted. Files are created with mode 0600.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// lumberjack's `Logger`: a file rotated when a write would take it past `max_size` bytes (0:
/// never), its backups named `<stem>-<UTC time>.<ext>` and pruned by count and age.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    max_size: u64,
    max_backups: u32,
    max_age_days: u32,
    file: BufWriter<File>,
    size: u64,
}

impl RotatingFile {
    /// Opens `path` for appending, rotating first when it is already full (lumberjack's
    /// `openExistingOrNew`), and prunes old backups.
    pub fn open(
        path: &Path,
        max_size: u64,
        max_backups: u32,
        max_age_days: u32,
        now: SystemTime,
    ) -> std::io::Result<RotatingFile> {
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        let mut rotating = RotatingFile {
            path: path.to_owned(),
            max_size,
            max_backups,
            max_age_days,
            file: BufWriter::new(file),
            size,
        };
        if max_size > 0 && size >= max_size {
            rotating.rotate(now)?;
        } else {
            rotating.prune(now);
        }
        Ok(rotating)
    }

    /// Appends one line, rotating first when it would not fit (a line larger than the limit is
    /// refused, as lumberjack refuses it).
    pub fn write(&mut self, line: &[u8], now: SystemTime) -> std::io::Result<()> {
        let len = line.len() as u64;
        if self.max_size > 0 {
            if len > self.max_size {
                return Err(std::io::Error::other(format!(
                    "write length {len} exceeds maximum file size {}",
                    self.max_size
                )));
            }
            if self.size + len > self.max_size {
                self.rotate(now)?;
            }
        }
        self.file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    /// Renames the file to its backup name, starts a new one and prunes.
    fn rotate(&mut self, now: SystemTime) -> std::io::Result<()> {
        self.file.flush()?;
        let (dir, stem, ext) = self.parts();
        let backup = dir.join(format!("{stem}-{}{ext}", backup_time(now)));
        std::fs::rename(&self.path, &backup)?;
        let mut options = OpenOptions::new();
        options.create(true).write(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        self.file = BufWriter::new(options.open(&self.path)?);
        self.size = 0;
        self.prune(now);
        Ok(())
    }

    /// The directory, the name without its extension, and the extension (with its dot).
    fn parts(&self) -> (PathBuf, String, String) {
        let dir = self.path.parent().map(Path::to_path_buf).unwrap_or_default();
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let ext = self.path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        let stem = name[..name.len() - ext.len()].to_owned();
        (dir, stem, ext)
    }

    /// lumberjack's `millRunOnce`: keep the newest `max_backups`, drop those older than
    /// `max_age_days`.
    fn prune(&self, now: SystemTime) {
        if self.max_backups == 0 && self.max_age_days == 0 {
            return;
        }
        let (dir, stem, ext) = self.parts();
        let listing = if dir.as_os_str().is_empty() { Path::new(".") } else { dir.as_path() };
        let Ok(entries) = std::fs::read_dir(listing) else { return };
        let prefix = format!("{stem}-");
        let mut backups: Vec<(SystemTime, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let time = name.strip_prefix(&prefix)?.strip_suffix(ext.as_str())?;
                Some((parse_backup_time(time)?, e.path()))
            })
            .collect();
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut remove = Vec::new();
        if self.max_backups > 0 && backups.len() > self.max_backups as usize {
            remove.extend(backups.split_off(self.max_backups as usize));
        }
        if self.max_age_days > 0 {
            // lumberjack's days are 24 hours (a duration, not calendar days).
            let max_age = Duration::from_secs(u64::from(self.max_age_days) * 24 * 60 * 60);
            let cutoff = now.checked_sub(max_age).unwrap_or(UNIX_EPOCH);
            let (old, _kept): (Vec<_>, Vec<_>) = backups.into_iter().partition(|(t, _)| *t < cutoff);
            remove.extend(old);
        }
        for (_, path) in remove {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove an old audit log");
            }
        }
    }
}

/// lumberjack's `backupTimeFormat`, `2006-01-02T15-04-05.000`, in jiff's `strftime` terms (the
/// time in UTC: kube leaves lumberjack's `LocalTime` off).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S.%3f";

/// The time in a backup's name.
fn backup_time(t: SystemTime) -> String {
    versa_registry::meta::timestamp(t).strftime(BACKUP_TIME_FORMAT).to_string()
}

/// The time in a backup's name (the inverse of [`backup_time`]), read as Go's `time.Parse`
/// reads lumberjack's format: every field its exact width in digits (jiff's parser would also
/// take narrower ones), no leap second (which jiff would read as second 59) and a date that
/// exists.
fn parse_backup_time(s: &str) -> Option<SystemTime> {
    const SHAPE: &[u8; 23] = b"0000-00-00T00-00-00.000";
    let exact = s.len() == SHAPE.len()
        && s.bytes().zip(SHAPE).all(|(c, &want)| if want == b'0' { c.is_ascii_digit() } else { c == want });
    if !exact || s.get(17..19) == Some("60") {
        return None;
    }
    let time = jiff::fmt::strtime::parse(BACKUP_TIME_FORMAT, s).and_then(|t| t.to_datetime()).ok()?;
    jiff::tz::Offset::UTC.to_timestamp(time).ok().map(SystemTime::from)
}

/// Opens `path` for appending, created with mode 0600 when missing.
pub(super) fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// Rotation as lumberjack does it: by size, backups named by time, pruned by count and age.
    #[test]
    fn rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let day = Duration::from_secs(86_400);
        let t0 = UNIX_EPOCH + Duration::from_millis(1_767_323_045_123); // 2026-01-02T03:04:05.123Z
        let mut log = RotatingFile::open(&path, 10, 2, 3, t0).unwrap();
        log.write(b"12345\n", t0).unwrap();
        log.write(b"1234\n", t0).unwrap(); // 11 > 10: rotated first
        assert_eq!(files(dir.path()), ["audit-2026-01-02T03-04-05.123.log", "audit.log"]);
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1234\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("audit-2026-01-02T03-04-05.123.log")).unwrap(), "12345\n");
        // A line over the limit is refused and nothing rotates.
        assert!(log.write(&[b'x'; 11], t0).is_err());
        // Two more rotations, a day apart: only the newest two backups are kept.
        log.write(b"abcdefgh\n", t0 + day).unwrap();
        log.write(b"abcdefgh\n", t0 + day * 2).unwrap();
        assert_eq!(
            files(dir.path()),
            ["audit-2026-01-03T03-04-05.123.log", "audit-2026-01-04T03-04-05.123.log", "audit.log"]
        );
        // Files that only look alike are left alone; backups older than max age go.
        std::fs::write(dir.path().join("audit-notatime.log"), "").unwrap();
        std::fs::write(dir.path().join("other-2020-01-01T00-00-00.000.log"), "").unwrap();
        log.write(b"abcdefgh\n", t0 + day * 6).unwrap();
        assert_eq!(
            files(dir.path()),
            [
                "audit-2026-01-08T03-04-05.123.log",
                "audit-notatime.log",
                "audit.log",
                "other-2020-01-01T00-00-00.000.log"
            ],
            "the backups of the 3rd and 4th are older than 3 days at the 8th"
        );
        // Opening a full file rotates it at once; no rotation at all with size 0.
        drop(log);
        let mut log = RotatingFile::open(&path, 9, 0, 0, t0 + day * 7).unwrap();
        assert!(dir.path().join("audit-2026-01-09T03-04-05.123.log").exists());
        log.write(b"x\n", t0).unwrap();
        let none = dir.path().join("plain");
        let mut plain = RotatingFile::open(&none, 0, 1, 1, t0).unwrap();
        for _ in 0..100 {
            plain.write(b"0123456789\n", t0).unwrap();
        }
        plain.flush().unwrap();
        assert_eq!(std::fs::metadata(&none).unwrap().len(), 1100);
        assert_eq!(parse_backup_time(&backup_time(t0)), Some(t0));
    }

    /// Backup names at the calendar's edges, and names that only look like one.
    #[test]
    fn backup_names() {
        let at = |millis: i64| {
            let d = Duration::from_millis(millis.unsigned_abs());
            if millis < 0 { UNIX_EPOCH - d } else { UNIX_EPOCH + d }
        };
        for (millis, name) in [
            (0, "1970-01-01T00-00-00.000"),
            (951_868_799_999, "2000-02-29T23-59-59.999"),
            (1_735_689_599_999, "2024-12-31T23-59-59.999"),
            (1_735_689_600_000, "2025-01-01T00-00-00.000"),
            (-1, "1969-12-31T23-59-59.999"),
            (-31_536_000_000, "1969-01-01T00-00-00.000"),
        ] {
            assert_eq!(backup_time(at(millis)), name);
            assert_eq!(parse_backup_time(name), Some(at(millis)), "{name}");
        }
        for bad in [
            "2026-01-02T03-04-05.12",
            "2026-1-02T03-04-05.123",
            "2026-01-02T03:04:05.123",
            "2026-01-02T03-04-05.1234",
            "2026-01-02T03-04-60.000",
            "2026-02-29T03-04-05.123",
            "2026-13-02T03-04-05.123",
            "2026-01-02T24-04-05.123",
            "2026-01-02T03-04-05.12x",
        ] {
            assert_eq!(parse_backup_time(bad), None, "{bad}");
        }
    }
}
