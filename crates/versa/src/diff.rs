//! `versa diff OLD NEW`: every change between two sets of definitions (files, or directories of
//! files), classified breaking / compatible / informational by
//! `versa_apiextensions::diff`, as text or JSON; the exit status says whether any change is as
//! bad as `--fail-on` (for CI).
//!
//! Definitions are paired by name; both sides are defaulted as kube-apiserver defaults them
//! first, so that a default written out on one side only is no change. A definition only in OLD
//! is removed (breaking: deleting a definition deletes its objects), one only in NEW added.
//!
//! `versa diff --server NEW` takes OLD from a running server (each definition of NEW as it is
//! served) and also asks the server what the change would do to the objects it stores: an
//! update of each changed definition with `dryRun=All`, whose warnings (how many stored objects
//! would fail validation, which, and whether ratcheting keeps them updatable) are printed under
//! the definition as `stored objects` findings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use versa_apiextensions::diff::{self, Class, Finding};
use versa_apiextensions::{ResourceDefinition, set_defaults};

use crate::Outcome;
use crate::documents;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// OLD and NEW: the definitions before and after, each a file of YAML or JSON documents or a
    /// directory of such files; with --server, NEW only.
    #[arg(value_name = "OLD NEW", num_args = 1..=2, required = true)]
    paths: Vec<PathBuf>,
    /// Compare NEW with the definitions a running server serves (--kubeconfig, $KUBECONFIG, or
    /// ./versa-data/admin.kubeconfig), and check the change against the objects it stores.
    #[arg(long)]
    server: bool,
    /// The kubeconfig for --server.
    #[arg(long, value_name = "FILE", requires = "server")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context for --server.
    #[arg(long, value_name = "NAME", requires = "server")]
    context: Option<String>,
    /// `text` or `json`.
    #[arg(short = 'o', long = "output", default_value = "text", value_parser = ["text", "json"])]
    output: String,
    /// The least class of change that makes the exit status 1.
    #[arg(long, default_value = "breaking", value_parser = ["breaking", "compatible", "informational"])]
    fail_on: String,
}

/// One definition's changes.
#[derive(Debug, Serialize)]
struct Changed {
    name: String,
    /// `changed`, `added` or `removed`.
    change: &'static str,
    findings: Vec<Finding>,
}

pub fn run(args: &Args) -> Result<Outcome> {
    let (old, new, stored) = match (args.server, args.paths.as_slice()) {
        (false, [old, new]) => (definitions(old)?, definitions(new)?, BTreeMap::new()),
        (true, [new]) => {
            let new = definitions(new)?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let (old, stored) = runtime.block_on(served(args, &new))?;
            (old, new, stored)
        }
        (false, _) => bail!("give OLD and NEW (or --server NEW)"),
        (true, _) => bail!("with --server, give NEW only: OLD is what the server serves"),
    };
    let mut changed = compare(&old, &new);
    for c in &mut changed {
        for warning in stored.get(&c.name).into_iter().flatten() {
            c.findings.push(Finding {
                class: Class::Breaking,
                rule: "stored-objects-invalid".into(),
                version: None,
                path: "stored objects".into(),
                message: warning.trim_start_matches("stored objects: ").to_owned(),
            });
        }
    }
    let all: Vec<&Finding> = changed.iter().flat_map(|c| &c.findings).collect();
    let count = |class: Class| all.iter().filter(|f| f.class == class).count();
    let (breaking, compatible, informational) =
        (count(Class::Breaking), count(Class::Compatible), count(Class::Informational));
    let changed_definitions = changed.iter().filter(|c| !c.findings.is_empty()).count();
    let total = old.keys().chain(new.keys()).collect::<std::collections::BTreeSet<_>>().len();
    if args.output == "json" {
        let doc = serde_json::json!({
            "definitions": changed.iter().filter(|c| !c.findings.is_empty()).collect::<Vec<_>>(),
            "summary": {"breaking": breaking, "compatible": compatible, "informational": informational,
                        "definitions": total, "changed": changed_definitions},
        });
        say!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        for c in changed.iter().filter(|c| !c.findings.is_empty()) {
            say!("{}:", c.name);
            for f in &c.findings {
                say!("  {f}");
            }
        }
        say!(
            "{breaking} breaking, {compatible} compatible, {informational} informational change(s) in {changed_definitions} of {total} definition(s)"
        );
    }
    let fail_on = Class::parse(&args.fail_on).unwrap_or(Class::Breaking);
    let worst = all.iter().map(|f| f.class).max();
    Ok(if worst.is_some_and(|w| w >= fail_on) { Outcome::SomeInvalid } else { Outcome::AllValid })
}

/// Each definition of `old` and `new` by name, paired: changed, removed, added.
fn compare(old: &BTreeMap<String, ResourceDefinition>, new: &BTreeMap<String, ResourceDefinition>) -> Vec<Changed> {
    let mut out = Vec::new();
    for (name, o) in old {
        let (change, findings) = match new.get(name) {
            Some(n) => ("changed", diff::diff(o, n)),
            None => (
                "removed",
                vec![Finding {
                    class: Class::Breaking,
                    rule: "definition-removed".into(),
                    version: None,
                    path: "metadata.name".into(),
                    message: "the definition is removed: deleting it deletes every object of it".into(),
                }],
            ),
        };
        out.push(Changed { name: name.clone(), change, findings });
    }
    for name in new.keys().filter(|n| !old.contains_key(*n)) {
        out.push(Changed {
            name: name.clone(),
            change: "added",
            findings: vec![Finding {
                class: Class::Compatible,
                rule: "definition-added".into(),
                version: None,
                path: "metadata.name".into(),
                message: "the definition is added".into(),
            }],
        });
    }
    out
}

/// The served definitions named in `new` (as OLD), and for each changed one, what the server
/// warns a dry-run update of it with.
async fn served(
    args: &Args,
    new: &BTreeMap<String, ResourceDefinition>,
) -> Result<(BTreeMap<String, ResourceDefinition>, BTreeMap<String, Vec<String>>)> {
    let env = std::env::var_os("KUBECONFIG");
    let files = crate::kubeconfig::locate(args.kubeconfig.as_deref(), env.as_deref());
    let config = crate::kubeconfig::load(&files, args.context.as_deref()).await?;
    let client = kube::Client::try_from(config).context("building the client")?;
    let (mut old, mut warnings) = (BTreeMap::new(), BTreeMap::new());
    for (name, def) in new {
        let path = format!("{DEFINITIONS}/{name}");
        let (status, _, body) = send(&client, http::Method::GET, &path, Vec::new()).await?;
        if status == http::StatusCode::NOT_FOUND {
            continue;
        }
        if !status.is_success() {
            bail!("reading {name} from the server: {}", String::from_utf8_lossy(&body));
        }
        let doc: serde_json::Value = serde_json::from_slice(&body).context("reading the served definition")?;
        let mut served = ResourceDefinition::from_document(&doc).context("reading the served definition")?;
        set_defaults(&mut served);
        if served.spec != def.spec {
            // The change as an update at the served revision, not made: what it would meet.
            let mut change = def.to_document();
            change["metadata"] = doc["metadata"].clone();
            change["status"] = doc["status"].clone();
            let body = serde_json::to_vec(&change)?;
            let (status, said, answer) = send(&client, http::Method::PUT, &format!("{path}?dryRun=All"), body).await?;
            if !status.is_success() {
                bail!("the server refuses the change of {name}: {}", String::from_utf8_lossy(&answer));
            }
            warnings.insert(name.clone(), said);
        }
        old.insert(name.clone(), served);
    }
    Ok((old, warnings))
}

/// Where the server serves definitions.
const DEFINITIONS: &str = "/apis/versa.dev/v1/resourcedefinitions";

/// One request: the status, the `Warning` headers' texts, the body.
async fn send(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    body: Vec<u8>,
) -> Result<(http::StatusCode, Vec<String>, Vec<u8>)> {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(kube::client::Body::from(body))?;
    let response = client.send(request).await.map_err(|e| anyhow::anyhow!("unable to reach the server: {e}"))?;
    let status = response.status();
    let warnings = response
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(warning_text)
        .collect();
    let body = response.into_body().collect_bytes().await.map_err(|e| anyhow::anyhow!("reading the answer: {e}"))?;
    Ok((status, warnings, body.to_vec()))
}

/// The text of a `Warning: 299 - "text"` header.
fn warning_text(header: &str) -> String {
    let quoted = header.splitn(3, ' ').nth(2).unwrap_or(header);
    quoted.trim_matches('"').replace("\\\"", "\"")
}

/// The definitions of a file, or of every `.yaml`, `.yml` and `.json` file of a directory, by
/// name, defaulted.
fn definitions(path: &Path) -> Result<BTreeMap<String, ResourceDefinition>> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml" || x == "json"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_owned()]
    };
    let mut out = BTreeMap::new();
    for file in files {
        for (i, doc) in documents::read(&file)?.into_iter().enumerate() {
            let mut def = ResourceDefinition::from_document(&doc.value)
                .with_context(|| format!("{}: document {}", doc.source, i + 1))?;
            set_defaults(&mut def);
            let name = def.name().to_owned();
            if out.insert(name.clone(), def).is_some() {
                bail!("{}: the definition {name:?} is given twice", path.display());
            }
        }
    }
    Ok(out)
}
