//! Reading the YAML or JSON documents that users hand to the offline tools.
//!
//! A file may hold several YAML documents (`---`), or JSON; `kind: List` documents are
//! flattened into their items, as kubectl does. YAML is read with serde-saphyr (pure Rust,
//! bounded against alias bombs); the tools and the server share the same parser.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// One document and where it came from, for messages.
#[derive(Debug)]
pub struct Document {
    pub source: String,
    pub value: Value,
}

/// Reads every document of `path` (`-` is standard input).
pub fn read(path: &Path) -> Result<Vec<Document>> {
    let (source, text) = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading standard input")?;
        ("<stdin>".to_owned(), s)
    } else {
        let s = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        (path.display().to_string(), s)
    };
    let values = parse(&text).with_context(|| format!("parsing {source}"))?;
    let mut out = Vec::new();
    for v in values {
        flatten(v, &source, &mut out);
    }
    if out.is_empty() {
        bail!("{source}: no documents");
    }
    Ok(out)
}

/// How deeply documents may nest. serde_json refuses more than 128 levels; YAML gets the same
/// bound, so that every later walk over a value (pruning, defaulting, validation — all
/// recursive) runs on bounded depth.
pub const MAX_DEPTH: usize = 128;

/// Parses YAML (a stream of documents) or JSON text into JSON values; empty documents are
/// skipped.
pub fn parse(text: &str) -> Result<Vec<Value>> {
    let mut options = serde_saphyr::Options::default();
    let mut budget = options.budget.unwrap_or_default();
    budget.max_depth = MAX_DEPTH;
    options.budget = Some(budget);
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

fn flatten(v: Value, source: &str, out: &mut Vec<Document>) {
    let is_list = v.get("kind").and_then(Value::as_str).is_some_and(|k| k == "List" || k.ends_with("List"))
        && v.get("items").is_some_and(Value::is_array);
    if is_list {
        if let Value::Object(mut m) = v
            && let Some(Value::Array(items)) = m.remove("items")
        {
            for item in items {
                flatten(item, source, out);
            }
        }
    } else {
        out.push(Document { source: source.to_owned(), value: v });
    }
}
