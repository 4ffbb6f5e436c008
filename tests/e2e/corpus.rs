//! The CRD corpora of the benchmarks: published CustomResourceDefinitions read from a directory
//! of projects (`<dir>/<project>/<file>.yaml`), and copies of them in groups of their own —
//! optionally with schemas of their own, so that thousands of definitions are distinct (issue
//! 41: nothing shared by text or digest).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The published CRDs beside the project: `../shared/conformance/crds/`.
pub fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/crds")
}

/// Every CRD of the corpus in `dir`, sorted by file path (so that copies are the same each run).
pub fn read(dir: &Path) -> Vec<(String, Value)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(entry.path()).into_iter().flatten().flatten() {
            if file.path().extension().is_some_and(|e| e == "yaml") {
                files.push(file.path());
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let crd: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.strip_prefix(dir).unwrap().display().to_string(), crd)
        })
        .collect()
}

/// Marks every object schema under `schema` (properties, items, additionalProperties) as copy `i`.
fn perturb(schema: &mut Value, i: usize) {
    let Some(map) = schema.as_object_mut() else { return };
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(|p| perturb(p, i));
        let described = map.get("description").and_then(Value::as_str).unwrap_or("").to_owned();
        map.insert("description".into(), Value::String(format!("{described} [copy {i}]")));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = map.get_mut(key) {
            perturb(sub, i);
        }
    }
}

/// Copy `i` of a CRD: its group prefixed with `g{i:04}.`, its name following; with `distinct`,
/// each object schema's description also says which copy it is, so no two copies share a schema.
pub fn replica(crd: &Value, i: usize, distinct: bool) -> Value {
    let mut crd = crd.clone();
    if distinct {
        for version in crd["spec"]["versions"].as_array_mut().into_iter().flatten() {
            perturb(&mut version["schema"]["openAPIV3Schema"], i);
        }
    }
    let group = format!("g{i:04}.{}", crd["spec"]["group"].as_str().unwrap());
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap().to_owned();
    crd["spec"]["group"] = Value::String(group.clone());
    let annotations = crd["metadata"]["annotations"].take();
    crd["metadata"] = serde_json::json!({"name": format!("{plural}.{group}")});
    if !annotations.is_null() {
        crd["metadata"]["annotations"] = annotations;
    }
    crd.as_object_mut().unwrap().remove("status");
    crd
}
