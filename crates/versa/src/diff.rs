//! `versa diff OLD NEW`: every change between two sets of definitions (files, or directories of
//! files), classified breaking / compatible / informational by
//! `versa_apiextensions::diff`, as text or JSON; the exit status says whether any change is as
//! bad as `--fail-on` (for CI).
//!
//! Definitions are paired by name; both sides are defaulted as kube-apiserver defaults them
//! first, so that a default written out on one side only is no change. A definition only in OLD
//! is removed (breaking: deleting a definition deletes its objects), one only in NEW added.

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
    /// The definitions before: a file of YAML or JSON documents, or a directory of such files.
    #[arg(value_name = "OLD")]
    old: PathBuf,
    /// The definitions after, in the same form.
    #[arg(value_name = "NEW")]
    new: PathBuf,
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
    let old = definitions(&args.old)?;
    let new = definitions(&args.new)?;
    let changed = compare(&old, &new);
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
