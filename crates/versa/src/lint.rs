//! `versa lint FILE...`: definition validation, offline.
//!
//! Each document is read as a ResourceDefinition or an `apiextensions.k8s.io/v1`
//! CustomResourceDefinition, defaulted as kube-apiserver defaults it, and validated with the
//! same rules and messages. Every error is printed with its field path, not just the first.
//!
//! A definition with versa's declarative conversion (`spec.conversion.strategy: CEL`, the one
//! field outside a CRD's shape) also has its rules run on generated objects, as the server
//! does when it is written (`versa_conversion::samples`), and gets a note saying what the field
//! is — kube-apiserver would refuse it as a CustomResourceDefinition. A valid definition's
//! warnings are those kube-apiserver answers its create with (an unrecognized `format`).

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
        let mut errs = validate_definition(&def);
        let mut notes = Vec::new();
        if errs.is_empty() {
            (errs, notes) = versa_conversion::samples::check_with_notes(&def);
        }
        let qualified = match kind {
            DocumentKind::ResourceDefinition => "ResourceDefinition.versa.dev",
            DocumentKind::CustomResourceDefinition => "CustomResourceDefinition.apiextensions.k8s.io",
        };
        let name = versa_schema::field::go_quote(def.name());
        if errs.is_empty() {
            say!("{}: {qualified} {name} is valid", doc.source);
            if let Some(cel) = &def.conversion_cel {
                say!("{}", cel_note(cel));
            }
            for note in &notes {
                say!("  note: {note}");
            }
            // What kube-apiserver answers a create with, beside its acceptance.
            for warning in versa_apiextensions::warnings_on_create(&def) {
                say!("  warning: {warning}");
            }
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

/// What `spec.conversion.cel` is, for a definition that uses it.
fn cel_note(cel: &versa_apiextensions::cel_conversion::CelConversion) -> String {
    let rules: usize = cel.conversions.iter().map(|c| c.fields.len()).sum();
    let pairs: Vec<String> = cel.conversions.iter().map(|c| format!("{} -> {}", c.from, c.to)).collect();
    let loss = if cel.allow_loss {
        "cel.allowLoss is true: what a round trip loses is lost"
    } else {
        "what a round trip would lose is kept in the versa.dev/conversion-data annotation and restored"
    };
    format!(
        "  note: spec.conversion.strategy CEL and spec.conversion.cel are versa's declarative conversion (docs/versions.md), \
         not part of a CustomResourceDefinition: kube-apiserver would refuse them. {rules} rule(s) for {}; each sets one \
         field of the destination from a CEL expression over the source object (self), fields no rule names are carried \
         over, versions without rules convert through the storage version; {loss}. All rules ran on generated objects \
         without failing.",
        pairs.join(", ")
    )
}
