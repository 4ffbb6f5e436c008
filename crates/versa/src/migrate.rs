//! `versa migrate status|run`: storage migration of a running versa, seen and driven from the
//! command line.
//!
//! The server does the migrating (`versa_server::controllers::migration`): after a definition's storage
//! version changes it rewrites every object at the new version and then trims
//! `status.storedVersions` to that version alone — so a definition is migrated exactly when its
//! stored versions are all its storage version. Servers started with `--auto-migrate=false`
//! migrate a definition only when it carries the annotation `versa.dev/migrate`, which `run`
//! sets (with a JSON merge patch, as `kubectl annotate` would) and the server removes when done.
//! Progress is the definition's `StorageMigrating` condition; `status` shows it as a table and
//! `run --wait` follows it.
//!
//! The server is found through a kubeconfig (`kubeconfig.rs`: `--kubeconfig`, `$KUBECONFIG`
//! lists, `--context`, exec plugins, `kubectl proxy`) and reached with kube-rs's client
//! (`versa_server::cluster::kube`), each call bounded by [`REQUEST_TIMEOUT`].
//!
//! Exit status: 0 on success; 1 when `run --wait` timed out; 2 on usage, kubeconfig, connection
//! or server errors (printed as kubectl prints them: `Error from server (NotFound): ...`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use versa_server::cluster::kube::{KubeClient as Client, KubeError};
use versa_server::controllers::migration::REQUEST_ANNOTATION;

use crate::kubeconfig;

/// The definitions collection.
const DEFINITIONS: &str = "/apis/versa.dev/v1/resourcedefinitions";
/// The condition the server reports migrations in.
const CONDITION: &str = "StorageMigrating";
/// How often `run --wait` looks at the definitions.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Definitions per list page.
const PAGE_SIZE: u32 = 500;
/// How long one request may take, answer included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kubeconfig to use (default: the files of $KUBECONFIG, merged, else
    /// ./versa-data/admin.kubeconfig, where `versa serve` writes it).
    #[arg(long, global = true, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, global = true, value_name = "NAME")]
    context: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Show each definition's storage version, stored versions and migration progress.
    Status {
        /// Definitions to show (default: all).
        #[arg(value_name = "NAME")]
        names: Vec<String>,
    },
    /// Ask the server to migrate definitions now (sets the `versa.dev/migrate` annotation; for
    /// servers started with --auto-migrate=false).
    Run {
        /// Definitions to migrate.
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
        /// Wait until every object is stored at the storage version, printing progress.
        #[arg(long)]
        wait: bool,
        /// How long --wait waits (a duration such as 90s, 10m or 1h30m).
        #[arg(long, default_value = "10m", value_parser = parse_duration, requires = "wait")]
        timeout: Duration,
    },
}

/// Runs the command; prints its own errors (kubectl's form for the server's).
pub fn run(args: &Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            warn!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        let client = connect(args).await?;
        match &args.command {
            Command::Status { names } => status(&client, names).await,
            Command::Run { names, wait, timeout } => request(&client, names, wait.then_some(*timeout)).await,
        }
    });
    match result {
        Ok(Ended::Done) => ExitCode::SUCCESS,
        Ok(Ended::TimedOut) => ExitCode::from(1),
        Err(Failure::Reported) => ExitCode::from(2),
        Err(Failure::Message(line)) => {
            warn!("{line}");
            ExitCode::from(2)
        }
    }
}

/// How a command ended, short of an error.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    Done,
    TimedOut,
}

#[derive(Debug)]
enum Failure {
    /// Already printed.
    Reported,
    /// The line to print.
    Message(String),
}

impl From<kubeconfig::Error> for Failure {
    fn from(e: kubeconfig::Error) -> Self {
        Failure::Message(format!("error: {e}"))
    }
}

impl From<KubeError> for Failure {
    /// kubectl's wording: `Error from server (NotFound): <message>` for the server's refusals,
    /// `unable to connect to the server` when it could not be reached.
    fn from(e: KubeError) -> Self {
        Failure::Message(match &e {
            KubeError::Status { code, reason, message, .. } => match (reason.is_empty(), message.is_empty()) {
                (false, _) => format!("Error from server ({reason}): {message}"),
                (true, false) => format!("Error from server: {message}"),
                (true, true) => format!("Error from server: status {code}"),
            },
            KubeError::Transport { url, message, connect: true, .. } => {
                format!("error: unable to connect to the server {}: {message}", authority(url))
            }
            KubeError::Transport { .. } => format!("error: {e}"),
        })
    }
}

/// `host:port` of a URL.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

async fn connect(args: &Args) -> Result<Client, Failure> {
    let env = std::env::var_os("KUBECONFIG");
    let files = kubeconfig::locate(args.kubeconfig.as_deref(), env.as_deref());
    let config = kubeconfig::load(&files, args.context.as_deref()).await?;
    let client = Client::new(config).map_err(|e| Failure::Message(format!("error: {e}")))?;
    Ok(client.with_timeout(REQUEST_TIMEOUT))
}

/// `versa migrate status [NAME...]`.
async fn status(client: &Client, names: &[String]) -> Result<Ended, Failure> {
    let mut rows = Vec::new();
    let mut failed = false;
    if names.is_empty() {
        rows = list(client).await?.iter().map(Row::of).collect();
    } else {
        for name in names {
            match get(client, name).await {
                Ok(def) => rows.push(Row::of(&def)),
                Err(Failure::Message(line)) => {
                    warn!("{line}");
                    failed = true;
                }
                Err(Failure::Reported) => failed = true,
            }
        }
    }
    if rows.is_empty() && !failed {
        warn!("No resources found");
    } else if !rows.is_empty() {
        say!("{}", table(&rows).trim_end());
    }
    if failed { Err(Failure::Reported) } else { Ok(Ended::Done) }
}

/// `versa migrate run [--wait [--timeout D]] NAME...`.
async fn request(client: &Client, names: &[String], wait: Option<Duration>) -> Result<Ended, Failure> {
    // Every name is checked before anything is asked of the server.
    for name in names {
        path_of(name)?;
    }
    let mut pending = Vec::new();
    for name in names {
        let row = Row::of(&get(client, name).await?);
        if !row.needs_migration() {
            say!("resourcedefinition.versa.dev/{name} needs no migration (stored versions: {})", row.stored_column());
            continue;
        }
        let patch = json!({"metadata": {"annotations": {REQUEST_ANNOTATION: versa_registry::meta::now()}}});
        client.merge_patch(&path_of(name)?, &patch).await?;
        say!("resourcedefinition.versa.dev/{name} migration requested");
        pending.push(name.clone());
    }
    match wait {
        Some(timeout) => follow(client, pending, timeout).await,
        None => Ok(Ended::Done),
    }
}

/// Polls the definitions until each is migrated, printing each change of its progress.
async fn follow(client: &Client, mut pending: Vec<String>, timeout: Duration) -> Result<Ended, Failure> {
    // No deadline when the timeout is beyond what the clock can represent.
    let deadline = Instant::now().checked_add(timeout);
    let mut shown: HashMap<String, String> = HashMap::new();
    loop {
        let mut still = Vec::new();
        for name in pending {
            let row = Row::of(&get(client, &name).await?);
            let progress = row.migration_column();
            if !row.needs_migration() {
                let detail = row
                    .condition
                    .as_ref()
                    .filter(|c| c.reason == "MigrationSucceeded" && !c.message.is_empty())
                    .map(|c| format!(": {}", c.message))
                    .unwrap_or_default();
                say!("resourcedefinition.versa.dev/{name} migrated to {}{detail}", row.storage_column());
                continue;
            }
            if shown.get(&name) != Some(&progress) {
                say!("resourcedefinition.versa.dev/{name}: {progress}");
                shown.insert(name.clone(), progress);
            }
            still.push(name);
        }
        if still.is_empty() {
            return Ok(Ended::Done);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            for name in &still {
                warn!("error: timed out waiting for the migration of resourcedefinition.versa.dev/{name}");
            }
            return Ok(Ended::TimedOut);
        }
        let left = deadline.map_or(POLL_INTERVAL, |d| d.saturating_duration_since(Instant::now()));
        tokio::time::sleep(POLL_INTERVAL.min(left)).await;
        pending = still;
    }
}

async fn get(client: &Client, name: &str) -> Result<Value, Failure> {
    Ok(client.get(&path_of(name)?).await?)
}

/// Every definition, page by page.
async fn list(client: &Client) -> Result<Vec<Value>, Failure> {
    let mut items = Vec::new();
    let mut token = String::new();
    loop {
        let mut path = format!("{DEFINITIONS}?limit={PAGE_SIZE}");
        if !token.is_empty() {
            path.push_str(&format!("&continue={}", query_escape(&token)));
        }
        let mut page = client.get(&path).await?;
        if let Some(Value::Array(more)) = page.get_mut("items").map(Value::take) {
            items.extend(more);
        }
        token = page.pointer("/metadata/continue").and_then(Value::as_str).unwrap_or_default().to_owned();
        if token.is_empty() {
            return Ok(items);
        }
    }
}

/// The definition's URL path; names are DNS subdomains, so anything else is refused here
/// rather than sent.
fn path_of(name: &str) -> Result<String, Failure> {
    let valid = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !valid {
        warn!("error: {name:?} is not a valid definition name (expected <plural>.<group>)");
        return Err(Failure::Reported);
    }
    Ok(format!("{DEFINITIONS}/{name}"))
}

/// Percent-encodes a query value (continue tokens are base64, which has `+`, `/` and `=`).
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What `status` shows of one definition.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    name: String,
    /// The version with `storage: true`.
    storage: Option<String>,
    /// `status.storedVersions`.
    stored: Vec<String>,
    /// The `StorageMigrating` condition.
    condition: Option<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Condition {
    status: String,
    reason: String,
    message: String,
}

impl Row {
    /// Reads a definition document as the server returns it (tolerant: missing parts are
    /// empty).
    fn of(def: &Value) -> Row {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let array = |pointer: &str| def.pointer(pointer).and_then(Value::as_array).cloned().unwrap_or_default();
        let storage = array("/spec/versions")
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .map(|v| text(v, "name"));
        let stored = array("/status/storedVersions").iter().filter_map(Value::as_str).map(str::to_owned).collect();
        let condition = array("/status/conditions")
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION))
            .map(|c| Condition { status: text(c, "status"), reason: text(c, "reason"), message: text(c, "message") });
        Row {
            name: def.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned(),
            storage,
            stored,
            condition,
        }
    }

    /// Whether some objects may still be stored at a version other than the storage version
    /// (the server's own test: a stored version that is not the storage version).
    fn needs_migration(&self) -> bool {
        self.storage.as_ref().is_some_and(|s| self.stored.iter().any(|v| v != s))
    }

    fn storage_column(&self) -> String {
        self.storage.clone().unwrap_or_else(|| "-".into())
    }

    fn stored_column(&self) -> String {
        if self.stored.is_empty() { "-".into() } else { self.stored.join(",") }
    }

    /// `<reason>: <message>` of the condition; `Pending` when a migration is needed and none
    /// is running (no condition yet, or only the False one left by an earlier migration);
    /// `-` when there is nothing to say.
    fn migration_column(&self) -> String {
        match &self.condition {
            Some(c) if c.status == "True" || !self.needs_migration() => {
                if c.message.is_empty() {
                    c.reason.clone()
                } else {
                    format!("{}: {}", c.reason, c.message)
                }
            }
            _ if self.needs_migration() => "Pending".into(),
            _ => "-".into(),
        }
    }
}

/// kubectl's table layout: upper-case headers, columns left-aligned and three spaces apart.
fn table(rows: &[Row]) -> String {
    let mut lines = vec![["NAME", "STORAGE", "STORED VERSIONS", "MIGRATION"].map(str::to_owned)];
    lines.extend(rows.iter().map(|r| [r.name.clone(), r.storage_column(), r.stored_column(), r.migration_column()]));
    let mut widths = [0; 4];
    for line in &lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (i, cell) in line.iter().enumerate() {
            if i + 1 == line.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// Go-style durations as kubectl's `--timeout` takes them: `90s`, `10m`, `1h30m`, `500ms`, `0`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let invalid = || format!("invalid duration {s:?} (expected for example 90s, 10m or 1h30m)");
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let number: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(|b| !b.is_ascii_digit()).count();
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        let part = u32::try_from(number).ok().and_then(|n| unit.checked_mul(n)).ok_or_else(invalid)?;
        total = total.checked_add(part).ok_or_else(invalid)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

    use super::*;

    fn definition(name: &str, storage: &str, stored: &[&str], condition: Option<(&str, &str, &str)>) -> Value {
        let mut conditions = vec![json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted"})];
        if let Some((status, reason, message)) = condition {
            conditions.push(json!({"type": CONDITION, "status": status, "reason": reason, "message": message}));
        }
        json!({
            "apiVersion": "versa.dev/v1",
            "kind": "ResourceDefinition",
            "metadata": {"name": name},
            "spec": {"versions": [
                {"name": "v1alpha1", "served": true, "storage": storage == "v1alpha1"},
                {"name": "v1beta1", "served": true, "storage": storage == "v1beta1"},
            ]},
            "status": {"storedVersions": stored, "conditions": conditions},
        })
    }

    /// Definitions in, the table `status` prints out.
    #[test]
    fn status_table() {
        let defs = [
            definition("done.example.com", "v1alpha1", &["v1alpha1"], None),
            definition("pending.example.com", "v1beta1", &["v1alpha1", "v1beta1"], None),
            definition(
                "running.example.com",
                "v1beta1",
                &["v1alpha1", "v1beta1"],
                Some(("True", "Migrating", "migrated 100 objects to v1beta1 (250 examined)")),
            ),
            definition(
                "paused.example.com",
                "v1beta1",
                &["v1alpha1", "v1beta1"],
                Some(("True", "MigrationPaused", "storage migration is paused and will retry: webhook down")),
            ),
            definition(
                "migrated.example.com",
                "v1beta1",
                &["v1beta1"],
                Some(("False", "MigrationSucceeded", "all 3 objects are stored at v1beta1 (3 rewritten)")),
            ),
            // An earlier migration's result, and the storage version changed again since.
            definition(
                "again.example.com",
                "v1alpha1",
                &["v1beta1", "v1alpha1"],
                Some(("False", "MigrationSucceeded", "all 3 objects are stored at v1beta1 (3 rewritten)")),
            ),
            json!({"metadata": {"name": "new.example.com"}}),
        ];
        let rows: Vec<Row> = defs.iter().map(Row::of).collect();
        let expected = "\
NAME                   STORAGE    STORED VERSIONS    MIGRATION
done.example.com       v1alpha1   v1alpha1           -
pending.example.com    v1beta1    v1alpha1,v1beta1   Pending
running.example.com    v1beta1    v1alpha1,v1beta1   Migrating: migrated 100 objects to v1beta1 (250 examined)
paused.example.com     v1beta1    v1alpha1,v1beta1   MigrationPaused: storage migration is paused and will retry: webhook down
migrated.example.com   v1beta1    v1beta1            MigrationSucceeded: all 3 objects are stored at v1beta1 (3 rewritten)
again.example.com      v1alpha1   v1beta1,v1alpha1   Pending
new.example.com        -          -                  -
";
        assert_eq!(table(&rows), expected);
        let needs: Vec<bool> = rows.iter().map(Row::needs_migration).collect();
        assert_eq!(needs, [false, true, true, true, false, true, false]);
    }

    #[test]
    fn durations() {
        let cases = [
            ("10m", Ok(600_000)),
            ("90s", Ok(90_000)),
            ("1h30m", Ok(5_400_000)),
            ("500ms", Ok(500)),
            ("0", Ok(0)),
            ("10", Err(())),
            ("", Err(())),
            ("m", Err(())),
            ("5d", Err(())),
            ("-1s", Err(())),
        ];
        for (input, expected) in cases {
            let got = parse_duration(input).map(|d| d.as_millis() as u64).map_err(|_| ());
            assert_eq!(got, expected, "{input:?}");
        }
    }

    #[test]
    fn continue_tokens_are_escaped() {
        assert_eq!(query_escape("eyJ2Ijo+/=="), "eyJ2Ijo%2B%2F%3D%3D");
    }
}
