//! The house rules of `docs/architecture.md` that the source text alone can check, so that they
//! stay kept (issue 36): no file under `crates/*/src` is longer than 1,000 lines, no crate's
//! modules import one another in a circle, and no code outside versa-registry's `kinds/` (and
//! `resource.rs`, which builds the core kinds) asks which kind a resource is to decide a rule:
//! the kind's rules answer (`KindRules`).
//!
//! The circles are found from the text: every path that starts at `crate::`, `self::` or
//! `super::` (in `use` items, `use` groups and expressions alike, comments and literals aside)
//! is an arrow from the module that writes it to the module it names. A module's paths into the
//! modules it contains are not arrows: a module owns its children, and a child may use its
//! parent (`super::Ctx`) without making a circle. Items under `#[cfg(test)]` draw no arrows: a
//! module's tests may drive it through the modules above it. Arrows between any other two
//! modules must run one way (`docs/architecture.md` says so of `versa-server`; it holds for
//! every crate).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be.
const MAX_LINES: usize = 1000;

/// Generated tables, which may be longer than [`MAX_LINES`]. There are none today.
const GENERATED: &[&str] = &[];

/// Files over [`MAX_LINES`] that are being split now (issue 36, the house's second pass). This
/// list must only shrink: a file that is split comes off it (the test fails while a listed file
/// is short enough), and no file goes on it. There are none today.
const BEING_SPLIT: &[&str] = &[];

/// Circles of modules that are being broken now (issue 36): a crate, and modules of it named
/// with their submodules (`ext` is `ext` and every `ext::…`). A circle is let pass when every
/// one of its modules is named by one entry. This list must only shrink: an entry that no
/// circle needs any more comes off it (the test fails while one is left), and no entry goes on.
/// There are none today.
const KNOWN_CIRCLES: &[(&str, &[&str])] = &[];

#[test]
fn no_source_file_is_longer_than_the_limit() {
    let root = workspace_root();
    let mut too_long = Vec::new();
    let mut no_longer_too_long = Vec::new();
    for file in source_files(&root) {
        let name = relative(&root, &file);
        let lines = read(&file).lines().count();
        let listed = GENERATED.contains(&name.as_str()) || BEING_SPLIT.contains(&name.as_str());
        if lines > MAX_LINES && !listed {
            too_long.push(format!("{name}: {lines} lines"));
        }
        if lines <= MAX_LINES && BEING_SPLIT.contains(&name.as_str()) {
            no_longer_too_long.push(name);
        }
    }
    for name in BEING_SPLIT {
        if !root.join(name).exists() {
            no_longer_too_long.push((*name).to_owned());
        }
    }
    assert!(
        too_long.is_empty(),
        "files longer than {MAX_LINES} lines; split them along their jobs:\n{}",
        too_long.join("\n")
    );
    assert!(
        no_longer_too_long.is_empty(),
        "take these off BEING_SPLIT, they are split:\n{}",
        no_longer_too_long.join("\n")
    );
}

/// How code asks which kind a resource is (`res.flavor == Flavor::Custom`, `res.is(Builtin::X)`,
/// `res.builtin.is_some()`, a match arm on a core kind, `Some(Builtin::X)`): only the kinds' own files
/// and the resource may. Naming a core kind to look it up (`registry.core(Builtin::Namespace)`)
/// is no question.
const KIND_QUESTIONS: &[&str] = &[
    "Flavor::Custom",
    "Flavor::Definitions",
    ".is(Builtin::",
    ".is(versa_registry::Builtin::",
    ".builtin.is_",
    "builtin == Some(",
    "Some(Builtin::",
];

/// Where a kind may be asked: the kinds' rules and the resource that builds them.
const KIND_FILES: &[&str] = &["crates/versa-registry/src/kinds/", "crates/versa-registry/src/resource.rs"];

#[test]
fn rules_are_asked_of_the_kind_not_decided_by_it() {
    let root = workspace_root();
    let mut found = Vec::new();
    for file in source_files(&root) {
        let name = relative(&root, &file);
        if KIND_FILES.iter().any(|k| name.starts_with(k)) {
            continue;
        }
        for (n, line) in read(&file).lines().enumerate() {
            if KIND_QUESTIONS.iter().any(|q| line.contains(q)) {
                found.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a rule decided by asking which kind a resource is; give the kind a KindRules hook instead \
         (versa-registry's kinds/):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_crate_has_a_module_circle() {
    let root = workspace_root();
    let mut unknown = Vec::new();
    let mut used = BTreeSet::new();
    for krate in crates(&root) {
        let name = krate.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        for circle in circles(&module_arrows(&krate.join("src"))) {
            let allowed = KNOWN_CIRCLES.iter().position(|(k, modules)| {
                *k == name && circle.iter().all(|m| modules.iter().any(|p| m == p || m.starts_with(&format!("{p}::"))))
            });
            match allowed {
                Some(i) => {
                    used.insert(i);
                }
                None => unknown.push(format!("{name}: {}", circle.join(" ↔ "))),
            }
        }
    }
    assert!(unknown.is_empty(), "module circles; move what both need to a module below them:\n{}", unknown.join("\n"));
    let stale: Vec<_> = (0..KNOWN_CIRCLES.len()).filter(|i| !used.contains(i)).map(|i| KNOWN_CIRCLES[i]).collect();
    assert!(stale.is_empty(), "take these off KNOWN_CIRCLES, they are broken: {stale:?}");
}

#[test]
fn the_circle_finder_sees_paths_groups_and_parents() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let file = src.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    write("lib.rs", "mod a; mod b; mod c; mod d; mod e; pub use a::A;");
    // `a` ↔ `b` through a `use` group and an expression path; comments and strings are no arrows.
    write("a/mod.rs", "mod inner; use crate::{b::{self, B}, A as _};\npub struct A;\n// crate::c::C\n");
    write("a/inner.rs", "use super::A; fn f() { let _ = \"crate::d\"; }");
    write("b.rs", "pub struct B; fn f() { crate::a::inner::g(); }");
    // `c` → `d` only: `d` uses its own child and its parent (the crate root).
    write("c.rs", "pub(in crate::c) fn f() { super::d::g() }");
    write("d.rs", "mod e { fn h() { super::g() } } pub fn g() { self::e::h(); crate::A; }");
    // Tests may drive a module through the ones above it.
    write("e.rs", "#[cfg(test)]\n#[allow(unused)]\nmod tests { use crate::c::f; }\n#[cfg(test)] use crate::a::A;");
    let arrows = module_arrows(src);
    assert_eq!(circles(&arrows), vec![vec!["a".to_owned(), "a::inner".to_owned(), "b".to_owned()]]);
    assert!(arrows["c"].contains("d") && !arrows["a"].contains("c"));
    assert!(arrows["a::inner"].contains("a") && arrows["e"].is_empty());
    // The crate root is everyone's parent: an arrow to it can close no circle.
    assert_eq!(arrows["d"], BTreeSet::from([String::new()]));
}

/// The repository's root (this package lives in `tests/`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn crates(root: &Path) -> Vec<PathBuf> {
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("src").is_dir())
        .collect();
    crates.sort();
    crates
}

/// Every `.rs` file under `crates/*/src`.
fn source_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for krate in crates(root) {
        rust_files(&krate.join("src"), &mut files);
    }
    files
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/")
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()))
}

/// A file's module path under `src`: `lib.rs` and `main.rs` are the root (`""`), `a/mod.rs`
/// and `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod"))
        || (parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main"))
    {
        parts.pop();
    }
    parts.join("::")
}

/// The arrows between the modules of the crate whose sources are in `src`, by module path.
fn module_arrows(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut arrows: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in &files {
        let from = module_of(src, file);
        for (inline, path) in paths(&tokens(&read(file))) {
            let mut here: Vec<&str> = from.split("::").filter(|s| !s.is_empty()).collect();
            here.extend(inline.iter().map(String::as_str));
            let Some(target) = resolve(&here, &path, &modules) else { continue };
            let owned = from.is_empty() || target == from || target.starts_with(&format!("{from}::"));
            if !owned {
                arrows.entry(from.clone()).or_default().insert(target);
            }
        }
    }
    arrows
}

/// The file module a path written in module `here` names: the longest run of its segments
/// that is a module with a file of its own. `None` for a path outside the crate.
fn resolve(here: &[&str], path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    let mut segments = path.iter().peekable();
    let mut at: Vec<&str> = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => here[..here.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    while segments.peek().is_some_and(|s| *s == "super") {
        segments.next();
        at.pop();
    }
    let mut found = longest_file_module(&at, modules);
    for segment in segments {
        at.push(segment);
        if modules.contains(&at.join("::")) {
            found = at.join("::");
        }
    }
    Some(found)
}

/// The innermost module of `at` (which may end in inline modules) that has a file.
fn longest_file_module(at: &[&str], modules: &BTreeSet<String>) -> String {
    (0..=at.len()).rev().map(|n| at[..n].join("::")).find(|m| modules.contains(m)).unwrap_or_default()
}

/// Rust source as identifiers and punctuation, without comments, literals and lifetimes;
/// `::` is one token and `$crate` is `crate`.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && next == Some('"')) {
            i += if c == '"' { 1 } else { 2 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if let Some(end) = raw_string_end(&chars, i) {
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): either way no path.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' || (c == '$' && next.is_some_and(|n| n.is_alphabetic())) {
            let start = if c == '$' { i + 1 } else { i };
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && next == Some(':') {
            out.push("::".to_owned());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// Where the raw string (`r"…"`, `r#"…"#`, `br"…"`) that starts at `i` ends, if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') || chars.get(j) == Some(&'c') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') || (i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && chars[j + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

/// Every path that starts at `crate`, `self` or `super`, with `use` groups expanded, each with
/// the inline modules (`mod b { … }`) it is written in. Items under `#[cfg(test)]` are left
/// out: a module's tests may drive it through the modules above it.
fn paths(tokens: &[String]) -> Vec<(Vec<String>, Vec<String>)> {
    const CFG_TEST: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut out = Vec::new();
    // Inline modules open around here, with the brace depth inside each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i..].iter().take(CFG_TEST.len()).eq(CFG_TEST.iter()) {
            i = item_end(tokens, i + CFG_TEST.len());
            continue;
        }
        let t = tokens[i].as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "mod" if tokens.get(i + 2).is_some_and(|t| t == "{") => {
                inline.push((tokens[i + 1].clone(), depth + 1));
            }
            "crate" | "self" | "super" => {
                let starts = i == 0 || !matches!(tokens[i - 1].as_str(), "::" | "in");
                if starts && tokens.get(i + 1).is_some_and(|t| t == "::") {
                    let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
                    let mut found = Vec::new();
                    i = use_tree(tokens, i, Vec::new(), &mut found);
                    out.extend(found.into_iter().map(|p| (names.clone(), p)));
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Where the item that starts at `i` ends: after its first `;` outside braces, or after its
/// outermost `{ … }` block.
fn item_end(tokens: &[String], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            ";" if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Reads the path or `use` tree at `i` below `prefix` into `out`; returns where it ends.
fn use_tree(tokens: &[String], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                while i < tokens.len() && tokens[i] != "}" {
                    i = use_tree(tokens, i, prefix.clone(), out);
                    if tokens.get(i).is_some_and(|t| t == ",") {
                        i += 1;
                    }
                }
                out.push(prefix);
                return i + 1;
            }
            Some("self") if !prefix.is_empty() => i += 1,
            Some(segment) if segment.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                prefix.push(segment.to_owned());
                i += 1;
            }
            _ => {
                out.push(prefix);
                return i;
            }
        }
        if tokens.get(i).is_some_and(|t| t == "::") {
            i += 1;
        } else {
            // `as name` renames the last segment; the path is what it names.
            if tokens.get(i).is_some_and(|t| t == "as") {
                i += 2;
            }
            out.push(prefix);
            return i;
        }
    }
}

/// The circles among `arrows`: each set of two modules or more that all reach one another,
/// sorted.
fn circles(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for next in arrows.get(m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = arrows.keys().map(|m| (m, reach(m))).collect();
    let mut placed = BTreeSet::new();
    let mut circles = Vec::new();
    for (m, from_m) in &reaches {
        if placed.contains(*m) || !from_m.contains(*m) {
            continue;
        }
        let circle: Vec<String> =
            from_m.iter().filter(|n| reaches.get(n).is_some_and(|r| r.contains(*m))).cloned().collect();
        placed.extend(circle.iter().cloned());
        circles.push(circle);
    }
    circles
}
