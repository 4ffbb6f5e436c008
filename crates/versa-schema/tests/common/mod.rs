//! Helpers shared by the data-driven tests: loading YAML case files and expanding `{{x*N}}`.

#![allow(dead_code, reason = "each test binary uses a subset")]
#![allow(clippy::expect_used, clippy::panic, reason = "test code: a malformed case file should fail loudly")]

pub mod generate;

use std::path::PathBuf;

use serde_json::Value;

/// Reads `tests/data/<area>/<file>` as YAML into JSON values.
pub fn load(area: &str, file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(area).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Expands every `{{x*N}}` into N copies of `x`, so long inputs stay readable in the data.
pub fn expand(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else { break };
        let inner = &rest[start + 2..start + end];
        match inner.rsplit_once('*').and_then(|(x, n)| n.parse::<usize>().ok().map(|n| (x, n))) {
            Some((x, n)) => {
                out.push_str(&rest[..start]);
                out.push_str(&x.repeat(n));
            }
            None => out.push_str(&rest[..start + end + 2]),
        }
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Recursively expands `{{x*N}}` in every string (keys included) of a JSON value.
pub fn expand_value(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(expand(s)),
        Value::Array(a) => Value::Array(a.iter().map(expand_value).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (expand(k), expand_value(v))).collect()),
        other => other.clone(),
    }
}

pub fn str_list(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(expand)).collect()).unwrap_or_default()
}
