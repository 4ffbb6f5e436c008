//! `versa diff` over the published CRDs of `../shared/conformance/crd-history`: every CRD of
//! every consecutive pair of a project's releases (the order is the folder's `SOURCE`), diffed
//! without a panic; the findings checked by hand in `tests/data/diff/corpus.yaml` found; and a
//! summary of what the corpus holds printed (docs/versions.md quotes it).

#![allow(clippy::unwrap_used, clippy::panic, reason = "a test runner fails loudly")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use versa_apiextensions::diff::{Class, Finding, diff};
use versa_apiextensions::{ResourceDefinition, set_defaults};

fn history() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/crd-history")
}

/// The release tags of a folder, oldest first: `SOURCE`'s `tags:` list, `<tag> <commit>, …`.
fn tags(folder: &Path) -> Vec<String> {
    let source = std::fs::read_to_string(folder.join("SOURCE")).unwrap();
    let list = source.split("tags:").nth(1).unwrap().split('|').next().unwrap();
    list.split(',').filter_map(|entry| entry.split_whitespace().next().map(str::to_owned)).collect()
}

fn definition(path: &Path) -> ResourceDefinition {
    let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut def = ResourceDefinition::from_document(&doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    set_defaults(&mut def);
    def
}

fn short(f: &Finding) -> String {
    match &f.version {
        Some(v) => format!("{} {v} {} {}", f.class.name(), f.path, f.rule),
        None => format!("{} {} {}", f.class.name(), f.path, f.rule),
    }
}

#[derive(Deserialize)]
struct Checked {
    folder: String,
    from: String,
    to: String,
    file: String,
    finding: String,
}

#[test]
fn every_consecutive_release_pair_diffs() {
    let root = history();
    let mut folders: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    folders.sort();
    let mut findings: BTreeMap<(String, String, String, String), Vec<String>> = BTreeMap::new();
    let (mut pairs, mut by_class, mut by_rule) = (0, BTreeMap::<Class, usize>::new(), BTreeMap::<String, usize>::new());
    for folder in &folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let tags = tags(folder);
        assert!(tags.len() >= 2, "{name}: {tags:?}");
        for step in tags.windows(2) {
            let (from, to) = (&step[0], &step[1]);
            for entry in std::fs::read_dir(folder.join(from)).unwrap() {
                let file = entry.unwrap().file_name().to_string_lossy().into_owned();
                let newer = folder.join(to).join(&file);
                if !newer.exists() {
                    continue;
                }
                pairs += 1;
                let found = diff(&definition(&folder.join(from).join(&file)), &definition(&newer));
                for f in &found {
                    *by_class.entry(f.class).or_default() += 1;
                    *by_rule.entry(format!("{} {}", f.class.name(), f.rule)).or_default() += 1;
                }
                findings.insert((name.clone(), from.clone(), to.clone(), file), found.iter().map(short).collect());
            }
        }
    }
    let checked: Vec<Checked> = serde_saphyr::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/diff/corpus.yaml")).unwrap(),
    )
    .unwrap();
    for c in &checked {
        let key = (c.folder.clone(), c.from.clone(), c.to.clone(), c.file.clone());
        let found = findings.get(&key).unwrap_or_else(|| panic!("no pair {key:?}"));
        assert!(found.contains(&c.finding), "{key:?}: {:?} not among {found:#?}", c.finding);
    }
    let unchanged = findings.values().filter(|f| f.is_empty()).count();
    println!(
        "{pairs} CRD pairs of consecutive releases, {unchanged} without a change; findings by class: {by_class:?}"
    );
    for (rule, n) in &by_rule {
        println!("  {n:5} {rule}");
    }
    assert!(pairs > 250, "only {pairs} pairs: is ../shared/conformance/crd-history complete?");
}
