//! `versa lint FILE...`: definition validation, offline.
//!
//! Each document is read as a ResourceDefinition or an `apiextensions.k8s.io/v1`
//! CustomResourceDefinition, defaulted as kube-apiserver defaults it, and validated with the
//! same rules and messages. Every error is printed with its field path, not just the first.

use std::path::PathBuf;

use anyhow::Result;
use versa_apiextensions::{DocumentKind, ResourceDefinition, set_defaults, validate_definition};

use crate::Outcome;
use crate::documents;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files with one or more YAML or JSON documents (`-` reads standard input).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

pub fn run(args: &Args) -> Result<Outcome> {
    // Read everything first: an unreadable file is a usage error, reported before any verdict.
    let mut docs = Vec::new();
    for f in &args.files {
        docs.extend(documents::read(f)?);
    }
    let mut outcome = Outcome::AllValid;
    for (i, doc) in docs.iter().enumerate() {
        let (mut def, kind) = match ResourceDefinition::from_document_with_kind(&doc.value) {
            Ok(d) => d,
            Err(e) => {
                say!("{}: document {}: {e}", doc.source, i + 1);
                outcome = Outcome::SomeInvalid;
                continue;
            }
        };
        set_defaults(&mut def);
        let errs = validate_definition(&def);
        let qualified = match kind {
            DocumentKind::ResourceDefinition => "ResourceDefinition.versa.dev",
            DocumentKind::CustomResourceDefinition => "CustomResourceDefinition.apiextensions.k8s.io",
        };
        let name = versa_schema::field::go_quote(def.name());
        if errs.is_empty() {
            say!("{}: {qualified} {name} is valid", doc.source);
        } else {
            outcome = Outcome::SomeInvalid;
            say!("{}: {qualified} {name} is invalid:", doc.source);
            for e in errs.deduplicated() {
                say!("  {e}");
            }
        }
    }
    Ok(outcome)
}
