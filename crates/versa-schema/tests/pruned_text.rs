//! Pruning on text (`text.rs`) against the tree path it stands in for: for generated schemas
//! and objects, each written as a webhook might write it — keys in any order, whitespace,
//! escapes and numbers spelt otherwise than serde spells them, now and then a duplicated key —
//! `prune_resource_text` must either give up or write exactly the bytes that parsing the text,
//! replacing its metadata, `prune_and_coerce` and `serde_json::to_vec` give.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use common::generate::{Rng, as_resource, root_object, root_schema, vary};
use serde_json::{Value, json};
use versa_schema::Structural;
use versa_schema::pipeline::{self, ResourceKind};
use versa_schema::text::prune_resource_text;

/// The metadata put into every object: already coerced, as the caller vouches.
fn metadata() -> Value {
    json!({"name": "n", "namespace": "default", "uid": "u-1", "resourceVersion": "7", "labels": {"a": "b"}})
}

/// How far [`write_styled`] strays from serde's way of writing: it always shuffles keys,
/// adds whitespace and spells numbers otherwise; these it does only for some objects, as each
/// makes the text path give up where it meets them in a key, `apiVersion` or `kind`.
#[derive(Clone, Copy)]
struct Style {
    /// Escape characters that serde writes as they are.
    escapes: bool,
    /// Write some keys twice.
    duplicates: bool,
}

/// `v` as JSON text in a random style that parses to `v` (or, with a duplicated key, to `v`
/// as the last occurrence wins).
fn write_styled(r: &mut Rng, v: &Value, style: Style, out: &mut String) {
    let ws = |r: &mut Rng, out: &mut String| {
        if r.one_in(4) {
            out.push_str([" ", "\n  ", "\t", "\r\n"][r.below(4)]);
        }
    };
    ws(r, out);
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            if r.one_in(2) {
                for i in (1..entries.len()).rev() {
                    entries.swap(i, r.below(i + 1));
                }
            }
            out.push('{');
            let mut first = true;
            for (k, v) in entries {
                let dup = style.duplicates && r.one_in(12);
                for value in [dup.then(|| json!("earlier")), Some(v.clone())].into_iter().flatten() {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    write_string(r, k, false, style, out);
                    ws(r, out);
                    out.push(':');
                    write_styled(r, &value, style, out);
                }
            }
            ws(r, out);
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_styled(r, item, style, out);
            }
            ws(r, out);
            out.push(']');
        }
        Value::String(s) => write_string(r, s, true, style, out),
        Value::Number(n) => match (n.as_i64(), r.below(4)) {
            (Some(i), 0) => out.push_str(&format!("{i}.0")),
            (Some(i), 1) => out.push_str(&format!("{i}e0")),
            (Some(0), 2) => out.push_str("-0"),
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
    ws(r, out);
}

/// A string with some characters escaped that serde writes as they are; a value sometimes
/// with characters serde escapes, or does not, appended.
fn write_string(r: &mut Rng, s: &str, value: bool, style: Style, out: &mut String) {
    let mut s = s.to_owned();
    if value && r.one_in(8) {
        s.push_str("a/b \"quoted\" tab\t é \u{1} \u{7f} ☃");
    }
    let escape_one_in = if value { 10 } else { 40 };
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' | '\u{0}'..='\u{1f}' => {
                let escaped = serde_json::to_string(&c.to_string()).unwrap();
                out.push_str(&escaped[1..escaped.len() - 1]);
            }
            '/' if style.escapes && r.one_in(2) => out.push_str("\\/"),
            c if style.escapes && r.one_in(escape_one_in) && (c as u32) < 0x10000 => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The tree path: parse, put `metadata` in, prune and coerce, write.
fn tree(text: &str, schema: &Structural) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    v.as_object_mut()?.insert("metadata".into(), metadata());
    pipeline::prune_and_coerce(&mut v, schema);
    Some(serde_json::to_vec(&v).unwrap())
}

/// The text path, with `metadata` put where it says.
fn text_path(text: &str, schema: &Structural) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let found = prune_resource_text(text, schema, &mut out)?;
    found.metadata_parses().then_some(())?;
    let meta = serde_json::to_vec(&metadata()).unwrap();
    out.splice(found.metadata_at..found.metadata_at, meta);
    Some(out)
}

#[test]
fn pruned_text_is_the_pruned_tree_written() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let kind = ResourceKind {
        group: "example.com",
        version: "v1",
        kind: "Thing",
        namespaced: true,
        name_rule: versa_schema::names::name_is_dns_subdomain,
    };
    let (mut ran, mut fast) = (0, 0);
    let mut failures = Vec::new();
    for i in 0..600 {
        let root = root_schema(&mut r, &["spec", "status", "a", "b", "c"]);
        let schema = Structural::from_json(&root).unwrap();
        for j in 0..10 {
            let mut object = root_object(&mut r, &root);
            if j % 3 == 1 {
                vary(&mut r, &mut object, 4);
            }
            as_resource(&mut r, &mut object, &kind);
            if j % 2 == 0 {
                // Already pruned, as a webhook's answer usually is: the text path's own case.
                object.as_object_mut().unwrap().insert("metadata".into(), metadata());
                pipeline::prune_and_coerce(&mut object, &schema);
            }
            let mut text = String::new();
            let style = Style { escapes: r.one_in(3), duplicates: r.one_in(4) };
            write_styled(&mut r, &object, style, &mut text);
            ran += 1;
            let Some(got) = text_path(&text, &schema) else { continue };
            fast += 1;
            let want = tree(&text, &schema);
            if want.as_deref() != Some(&got[..]) {
                failures.push(format!(
                    "schema {i}, object {j}\n  text {text}\n  got  {}\n  want {}",
                    String::from_utf8_lossy(&got),
                    want.map(|w| String::from_utf8_lossy(&w).into_owned()).unwrap_or_default()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {fast} differ:\n{}", failures.len(), failures.join("\n"));
    // The objects are made to be pruned often; enough of them are not for this to test much.
    assert!(fast * 4 > ran, "only {fast} of {ran} objects took the text path");
}
