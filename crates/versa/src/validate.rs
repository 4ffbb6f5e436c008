//! `versa validate --definition FILE [--version V] [--old OLD] OBJECT...`: the write pipeline,
//! offline.
//!
//! Runs exactly what the server runs on a create (or, with `--old`, an update) in the object's
//! version — the registry's write strategy (`versa_registry::strategy::Strategy::admit`):
//! default → prune → coerce metadata → validate, then the `x-kubernetes-validations` CEL rules
//! (transition rules with `--old`). Prints the object as it would be
//! stored, with kubectl's `Warning: unknown field "..."` lines for pruned fields on standard
//! error, or the errors in kube-apiserver's words:
//! `CronTab.stable.example.com "name" is invalid: [<field error>, ...]`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use versa_apiextensions::{ResourceDefinition, set_defaults, validate_definition};
use versa_conversion::Options as ConversionOptions;
use versa_registry::strategy::{Part, Strategy};
use versa_registry::{Compact, Resource};
use versa_schema::pipeline;

use crate::Outcome;
use crate::documents;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The definition (a ResourceDefinition or an apiextensions.k8s.io/v1
    /// CustomResourceDefinition document).
    #[arg(long, value_name = "FILE")]
    definition: PathBuf,
    /// Validate in this version instead of the one in each object's apiVersion; objects must
    /// then be written in it, as a request to that version's endpoint must.
    #[arg(long, value_name = "V")]
    version: Option<String>,
    /// The previous state of the object: validates an update (immutable metadata, and the CEL
    /// transition rules that compare `self` with `oldSelf`).
    #[arg(long, value_name = "OLD")]
    old: Option<PathBuf>,
    /// The namespace of namespaced objects that name none, as kubectl's `--namespace`.
    #[arg(short = 'n', long, value_name = "NS", default_value = "default")]
    namespace: String,
    /// Output format of the resulting objects.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    /// Files with one or more objects (`-` reads standard input).
    #[arg(required = true, value_name = "OBJECT")]
    objects: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    Yaml,
    Json,
}

pub fn run(args: &Args) -> Result<Outcome> {
    let def = read_definition(args)?;
    let old = match &args.old {
        Some(p) => {
            let mut docs = documents::read(p)?;
            if docs.len() != 1 {
                bail!("{}: --old must hold exactly one object, found {}", p.display(), docs.len());
            }
            Some(docs.remove(0).value)
        }
        None => None,
    };
    let mut objects = Vec::new();
    for f in &args.objects {
        objects.extend(documents::read(f)?);
    }
    if old.is_some() && objects.len() != 1 {
        bail!("--old needs exactly one object to compare with, found {}", objects.len());
    }

    // The resource as the server compiles it, and its write strategy: the same admission.
    let res = Resource::build(&def, Compact::of(&def), &ConversionOptions::default());
    let group = def.spec.group.as_str();
    let mut outcome = Outcome::AllValid;
    let mut results = Vec::new();
    for doc in objects {
        let mut obj = doc.value;
        let version = match object_version(&obj, group, args.version.as_deref()) {
            Ok(v) => v,
            Err(msg) => {
                say!("{}: {msg}", doc.source);
                outcome = Outcome::SomeInvalid;
                continue;
            }
        };
        let Some(strategy) = Strategy::at(&res, &version).filter(|s| s.ver.schema().is_some()) else {
            say!("{}: version {version:?} is not a version of {}", doc.source, def.name());
            outcome = Outcome::SomeInvalid;
            continue;
        };
        // What the client and the server do before validating a create: the namespace comes
        // from the request, and a generateName becomes a name.
        if res.namespaced {
            set_default_namespace(&mut obj, &args.namespace);
        }
        pipeline::generate_name(&mut obj, &random_suffix());
        // The old object as the server would read it from storage: in the same namespace as
        // the new one when it names none (it was written through the same request path).
        let old_read = old.as_ref().map(|o| {
            let mut o = o.clone();
            if res.namespaced {
                set_default_namespace(&mut o, &args.namespace);
            }
            if let Some(schema) = strategy.ver.schema() {
                pipeline::on_read(&mut o, &schema);
            }
            o
        });
        let mut warnings = Vec::new();
        let admitted = strategy.admit(&mut obj, old_read.as_ref(), Part::Main, &mut warnings);
        for w in &warnings {
            warn!("Warning: {w}");
        }
        match admitted {
            Ok(unknown) => {
                for f in &unknown {
                    warn!("Warning: unknown field {}", versa_schema::field::go_quote(f));
                }
                results.push(obj);
            }
            Err(e) => {
                outcome = Outcome::SomeInvalid;
                say!("{e}");
            }
        }
    }
    print_objects(&results, args.output)?;
    Ok(outcome)
}

/// Reads, defaults and validates the definition; an invalid definition is a usage error.
fn read_definition(args: &Args) -> Result<ResourceDefinition> {
    read_definition_file(&args.definition)
}

/// Reads, defaults and validates the definition in `path` (`--definition` of the offline
/// tools); an invalid definition is a usage error.
pub(crate) fn read_definition_file(path: &std::path::Path) -> Result<ResourceDefinition> {
    let mut docs = documents::read(path)?;
    if docs.len() != 1 {
        bail!("{}: --definition must hold exactly one definition, found {} documents", path.display(), docs.len());
    }
    let doc = docs.remove(0);
    let mut def = ResourceDefinition::from_document(&doc.value).with_context(|| doc.source.clone())?;
    set_defaults(&mut def);
    let errs = validate_definition(&def);
    if !errs.is_empty() {
        let lines: Vec<String> = errs.deduplicated().iter().map(|e| format!("  {e}")).collect();
        bail!("{}: the definition {:?} is invalid (see `versa lint`):\n{}", doc.source, def.name(), lines.join("\n"));
    }
    Ok(def)
}

/// The version to validate in: `--version`, which the object's apiVersion must then match (as a
/// request body must match its endpoint), or the version of the object's apiVersion.
fn object_version(obj: &Value, group: &str, flag: Option<&str>) -> Result<String, String> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match flag {
        Some(v) => {
            let want = format!("{group}/{v}");
            if api_version != want {
                return Err(format!(
                    "the API version in the data ({api_version}) does not match the expected API version ({want})"
                ));
            }
            Ok(v.to_owned())
        }
        None => match api_version.split_once('/') {
            Some((g, v)) if g == group => Ok(v.to_owned()),
            _ => Err(format!(
                "apiVersion {api_version:?} is not in group {group:?} of this definition (set --version to choose a version)"
            )),
        },
    }
}

fn set_default_namespace(obj: &mut Value, namespace: &str) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let has = meta.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        if !has {
            meta.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
        }
    }
}

/// Five characters from Kubernetes' suffix alphabet. Offline names need not be unpredictable,
/// only distinct, so the clock and the process id are enough entropy.
fn random_suffix() -> String {
    let alphabet: Vec<char> = pipeline::NAME_SUFFIX_ALPHABET.chars().collect();
    let mut seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
            ^ u64::from(std::process::id()).rotate_left(32);
    (0..5)
        .map(|_| {
            // xorshift64
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            alphabet[(seed % alphabet.len() as u64) as usize]
        })
        .collect()
}

pub(crate) fn print_objects(objects: &[Value], format: Format) -> Result<()> {
    match format {
        Format::Json => {
            let out = if objects.len() == 1 {
                serde_json::to_string_pretty(&objects[0])?
            } else {
                serde_json::to_string_pretty(
                    &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects}),
                )?
            };
            if !objects.is_empty() {
                say!("{out}");
            }
        }
        Format::Yaml => {
            for (i, o) in objects.iter().enumerate() {
                if i > 0 {
                    say!("---");
                }
                let yaml = serde_saphyr::to_string(o).map_err(|e| anyhow::anyhow!("{e}"))?;
                say!("{}", yaml.trim_end_matches('\n'));
            }
        }
    }
    Ok(())
}
