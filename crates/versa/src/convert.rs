//! `versa convert --definition FILE --to VERSION OBJECT...`: conversion, offline.
//!
//! What definition authors use to check their conversion rules, and what `kubectl convert` is
//! not for custom resources. Each object is read at the version its `apiVersion` names, pruned
//! and defaulted with that version's schema (as the server reads a stored object), and
//! converted by the server's own converter (`versa-conversion`) with the definition's strategy:
//! `None`, versa's `CEL` rules (with the annotation that keeps what a round trip would lose),
//! or — only with `--webhook-url`, since an offline tool cannot reach an in-cluster Service —
//! the definition's webhook at that URL, in one ConversionReview for all objects. The results
//! are printed as YAML (or JSON with `-o json`); an object that cannot be converted is reported
//! with the converter's message (the text the API would answer with), the others still printed.

use std::path::PathBuf;

use anyhow::{Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{WebhookClientConfig, WebhookConversion};
use serde_json::Value;
use versa_apiextensions::ResourceDefinition;
use versa_conversion::Options;
use versa_registry::storage::Boundary;
use versa_registry::{Compact, Resource};

use crate::Outcome;
use crate::documents;
use crate::validate::{Format, print_objects, read_definition_file};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The definition (a ResourceDefinition or an apiextensions.k8s.io/v1
    /// CustomResourceDefinition document).
    #[arg(long, value_name = "FILE")]
    definition: PathBuf,
    /// The version to convert to.
    #[arg(long, value_name = "VERSION")]
    to: String,
    /// For a definition with strategy Webhook: call the webhook at this https URL (its
    /// certificate checked against the definition's caBundle, else the system roots).
    #[arg(long, value_name = "URL")]
    webhook_url: Option<String>,
    /// Output format of the converted objects.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Yaml)]
    output: Format,
    /// Files with one or more objects (`-` reads standard input).
    #[arg(required = true, value_name = "OBJECT")]
    objects: Vec<PathBuf>,
}

pub fn run(args: &Args) -> Result<Outcome> {
    let mut def = read_definition_file(&args.definition)?;
    if !def.spec.versions.iter().any(|v| v.name == args.to) {
        bail!("--to {:?} is not a version of {}", args.to, def.name());
    }
    let strategy = def.spec.conversion.as_ref().map_or("None", |c| c.strategy.as_str()).to_owned();
    match (strategy.as_str(), &args.webhook_url) {
        ("Webhook", None) => bail!(
            "{} converts with a webhook: give --webhook-url to call it (versa convert cannot reach an in-cluster Service)",
            def.name()
        ),
        ("Webhook", Some(url)) => point_webhook_at(&mut def, url),
        (other, Some(_)) => bail!("--webhook-url is for definitions with strategy Webhook; {} has {other}", def.name()),
        _ => {}
    }
    let mut objects = Vec::new();
    for f in &args.objects {
        objects.extend(documents::read(f)?);
    }
    // The resource as the server compiles it; objects cross its storage boundary as a read of
    // them, stored as they are, would.
    let res = Resource::build(&def, Compact::of(&def), &Options::default());
    if let Err(message) = res.converter() {
        bail!("building the converter of {}: {message}", def.name());
    }
    let boundary = Boundary::new(&res, &args.to, &());

    let mut outcome = Outcome::AllValid;
    let mut ready = Vec::new();
    for doc in objects {
        if let Err(msg) = object_version(&doc.value, &def) {
            say!("{}: {msg}", doc.source);
            outcome = Outcome::SomeInvalid;
            continue;
        }
        ready.push((doc.source, doc.value));
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let results: Vec<(String, Result<Value, String>)> = if strategy == "Webhook" {
        // One review for all, as the server sends a LIST page.
        let (sources, objs): (Vec<String>, Vec<Value>) = ready.into_iter().unzip();
        match runtime.block_on(boundary.read_objects(objs)) {
            Ok(converted) => sources.into_iter().zip(converted.into_iter().map(Ok)).collect(),
            Err(e) => sources.into_iter().map(|s| (s, Err(e.to_string()))).collect(),
        }
    } else {
        // One at a time, so that each object's error is its own.
        ready
            .into_iter()
            .map(|(source, obj)| {
                let converted = runtime.block_on(boundary.read_objects(vec![obj]));
                let converted = converted
                    .map_err(|e| e.to_string())
                    .and_then(|mut all| all.pop().ok_or_else(|| "the converter returned no object".to_owned()));
                (source, converted)
            })
            .collect()
    };
    let mut converted = Vec::new();
    for (source, result) in results {
        match result {
            Ok(obj) => converted.push(obj),
            Err(message) => {
                say!("{source}: {message}");
                outcome = Outcome::SomeInvalid;
            }
        }
    }
    print_objects(&converted, args.output)?;
    Ok(outcome)
}

/// The version of the definition that `obj`'s `apiVersion` names.
fn object_version(obj: &Value, def: &ResourceDefinition) -> Result<String, String> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match api_version.split_once('/') {
        Some((g, v)) if g == def.spec.group && def.spec.versions.iter().any(|x| x.name == v) => Ok(v.to_owned()),
        _ => Err(format!("apiVersion {api_version:?} is not a version of {}", def.name())),
    }
}

/// The definition's webhook, called at `url` instead of its own client configuration.
fn point_webhook_at(def: &mut ResourceDefinition, url: &str) {
    let Some(conversion) = def.spec.conversion.as_mut() else { return };
    let webhook = conversion.webhook.get_or_insert_with(WebhookConversion::default);
    let ca_bundle = webhook.client_config.as_ref().and_then(|c| c.ca_bundle.clone());
    webhook.client_config = Some(WebhookClientConfig { url: Some(url.to_owned()), ca_bundle, service: None });
}
