//! The garbage collector's decisions without a socket: every `tests/data/gc/*.yaml` file is a
//! list of owner graphs, run to the end through `versa_registry::gc` and a model of what
//! kube-apiserver does with the collector's requests (a delete marks an object that keeps
//! finalizers, and adds `orphan` / `foregroundDeletion` for those policies; an object whose
//! last finalizer goes while marked is gone).
//!
//! A case gives `objects` — `name` (also the uid unless `uid` is given), `kind` (default
//! `Widget`), `apiVersion` (default `example.com/v1`), `namespace` (default `ns`; `""` for a
//! cluster-scoped object), `finalizers`, `deleting`, `owners` (`name`, `uid` (default the
//! name), `kind`/`apiVersion` (default the named object's, else the defaults),
//! `blockOwnerDeletion`) — and `clusterScoped` kinds (`apiVersion/kind`). It expects `rounds`:
//! each round the collector's actions on the graph as it stands (one line each, in uid order),
//! carried out before the next; and `remains`: the names left, with their finalizers and marks
//! (`name`, `name [deleting]`, `name [deleting; orphan]`, `name -> owner, owner`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use serde_json::Value;
use versa_registry::gc::{Action, Graph, Node, OwnerRef, Policy, describe};

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn graph(case: &Value) -> Graph {
    let mut g = Graph::default();
    for k in case.get("clusterScoped").and_then(Value::as_array).into_iter().flatten() {
        let k = k.as_str().unwrap();
        let (av, kind) = k.rsplit_once('/').unwrap();
        g.cluster_scoped(av, kind);
    }
    let objects = case["objects"].as_array().unwrap();
    let find = |name: &str| objects.iter().find(|o| s(o, "name").as_deref() == Some(name));
    for o in objects {
        let name = s(o, "name").unwrap();
        let owners = o
            .get("owners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| {
                let name = s(r, "name").unwrap();
                let target = find(&name);
                let pick = |key: &str, default: &str| {
                    s(r, key).or_else(|| target.and_then(|t| s(t, key))).unwrap_or_else(|| default.to_owned())
                };
                OwnerRef {
                    api_version: pick("apiVersion", "example.com/v1"),
                    kind: pick("kind", "Widget"),
                    uid: s(r, "uid").or_else(|| target.and_then(|t| s(t, "uid"))).unwrap_or_else(|| name.clone()),
                    name,
                    block_owner_deletion: r.get("blockOwnerDeletion").and_then(Value::as_bool).unwrap_or(false),
                }
            })
            .collect();
        g.upsert(Node {
            uid: s(o, "uid").unwrap_or_else(|| name.clone()),
            api_version: s(o, "apiVersion").unwrap_or_else(|| "example.com/v1".into()),
            kind: s(o, "kind").unwrap_or_else(|| "Widget".into()),
            namespace: s(o, "namespace").unwrap_or_else(|| "ns".into()),
            name,
            owners,
            finalizers: o
                .get("finalizers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect(),
            deleting: o.get("deleting").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    g
}

/// kube-apiserver's answer to the collector's request, on the model graph.
fn apply(g: &mut Graph, action: &Action) {
    let Some(mut node) = action_uid(action).and_then(|u| g.get(u)).cloned() else { return };
    match action {
        Action::Delete { policy, .. } => {
            if node.deleting {
                return;
            }
            node.finalizers.retain(|f| f != "orphan" && f != "foregroundDeletion");
            match policy {
                Policy::Orphan => node.finalizers.push("orphan".into()),
                Policy::Foreground => node.finalizers.push("foregroundDeletion".into()),
                Policy::Background => {}
            }
            if node.finalizers.is_empty() {
                g.remove(&node.uid);
                return;
            }
            node.deleting = true;
        }
        Action::RemoveOwnerRefs { owners, .. } => node.owners.retain(|o| !owners.contains(&o.uid)),
        Action::UnblockOwnerRefs { .. } => node.owners.iter_mut().for_each(|o| o.block_owner_deletion = false),
        Action::RemoveFinalizer { finalizer, .. } => {
            node.finalizers.retain(|f| f != finalizer);
            if node.deleting && node.finalizers.is_empty() {
                g.remove(&node.uid);
                return;
            }
        }
        Action::Event { .. } => return,
    }
    g.upsert(node);
}

fn action_uid(action: &Action) -> Option<&str> {
    match action {
        Action::Delete { uid, .. }
        | Action::RemoveOwnerRefs { uid, .. }
        | Action::UnblockOwnerRefs { uid }
        | Action::RemoveFinalizer { uid, .. }
        | Action::Event { uid, .. } => Some(uid),
    }
}

fn remains(g: &Graph, case: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for o in case["objects"].as_array().unwrap() {
        let uid = s(o, "uid").unwrap_or_else(|| s(o, "name").unwrap());
        let Some(n) = g.get(&uid) else { continue };
        let mut line = n.name.clone();
        if n.deleting || !n.finalizers.is_empty() {
            let mut marks = Vec::new();
            if n.deleting {
                marks.push("deleting".to_owned());
            }
            marks.extend(n.finalizers.iter().cloned());
            line = format!("{line} [{}]", marks.join("; "));
        }
        if !n.owners.is_empty() {
            let owners: Vec<&str> = n.owners.iter().map(|o| o.name.as_str()).collect();
            line = format!("{line} -> {}", owners.join(", "));
        }
        out.push(line);
    }
    out
}

fn run(case: &Value) -> (Vec<Vec<String>>, Vec<String>) {
    let mut g = graph(case);
    let mut rounds = Vec::new();
    let mut seen_events = std::collections::HashSet::new();
    for _ in 0..20 {
        let actions = g.decide_all();
        // Events repeat while the graph stands; a round of events already reported is the end.
        if actions.iter().all(|a| matches!(a, Action::Event { .. }) && seen_events.contains(&describe(&g, a))) {
            break;
        }
        rounds.push(actions.iter().map(|a| describe(&g, a)).collect());
        for a in &actions {
            if matches!(a, Action::Event { .. }) {
                seen_events.insert(describe(&g, a));
            }
            apply(&mut g, a);
        }
    }
    (rounds, remains(&g, case))
}

#[test]
fn gc_cases() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gc");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let cases: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for case in cases.as_array().unwrap() {
            count += 1;
            let name = s(case, "name").unwrap();
            let (rounds, left) = run(case);
            let want_rounds: Vec<Vec<String>> = serde_json::from_value(case["rounds"].clone()).unwrap();
            let want_left: Vec<String> =
                serde_json::from_value(case.get("remains").cloned().unwrap_or(Value::Array(vec![]))).unwrap();
            if rounds != want_rounds || left != want_left {
                failures.push(format!(
                    "{}: {name}\n  rounds: {}\n  remains: {}",
                    file.display(),
                    serde_json::to_string_pretty(&rounds).unwrap(),
                    serde_json::to_string(&left).unwrap()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {count} cases failed:\n{}", failures.len(), failures.join("\n"));
    assert!(count >= 20, "only {count} cases");
}
