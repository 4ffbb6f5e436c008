//! Checks on `default` values at definition time (k8s `defaulting/validation.go`): every
//! default must already be pruned (no unknown fields), must give valid type and object metadata
//! where it covers them, and must validate against the schema of its node.
//!
//! Defaults that cover `apiVersion`, `kind` or `metadata` of a resource or embedded resource are
//! checked by building the surrounding object and coercing it, as Kubernetes does; they are
//! exempt from the pruning check (the request-time pruning handles metadata).

use serde_json::{Map, Value};

use crate::field::{Error, ErrorList, Path};
use crate::objectmeta::{self, Malformed};
use crate::prune;
use crate::structural::Structural;
use crate::validation;

/// Reports every `default` in `schema` (rooted at `path`, e.g.
/// `spec.versions[0].schema.openAPIV3Schema`) that would be pruned or does not validate.
/// `require_pruned` is false only when ratcheting an update of a definition whose old schema
/// already had unpruned defaults.
pub fn validate_defaults(schema: &Structural, path: &Path, require_pruned: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut walk = Walk { require_pruned, errs: &mut errs };
    walk.node(schema, path, true, false, schema, &mut Vec::new());
    errs
}

/// Where a node sits relative to the closest resource root: property keys, or `None` for items.
type Trail = Vec<Option<String>>;

struct Walk<'e> {
    require_pruned: bool,
    errs: &'e mut ErrorList,
}

impl Walk<'_> {
    fn node<'s>(
        &mut self,
        s: &'s Structural,
        path: &Path,
        root: bool,
        mut inside_meta: bool,
        mut resource: &'s Structural,
        trail: &mut Trail,
    ) {
        let embedded = root || s.embedded_resource;
        let saved_trail = if embedded && !root { Some(std::mem::take(trail)) } else { None };
        if embedded {
            inside_meta = false;
            resource = s;
        }

        if let Some(default) = &s.default {
            let dpath = path.child("default");
            if inside_meta {
                self.check_meta_default(default, &dpath, resource, trail, s);
            } else {
                if self.require_pruned {
                    let mut pruned = default.clone();
                    prune::prune_unknown(&mut pruned, s, embedded);
                    if &pruned != default {
                        self.errs.push(Error::invalid(dpath.clone(), default, "must not have unknown fields"));
                    }
                }
                let mut coerced = default.clone();
                let coerce_result =
                    if embedded { objectmeta::coerce(&mut coerced, s, Malformed::Reject).map(|_| ()) } else { Ok(()) };
                match coerce_result {
                    Err(mut e) => {
                        e.field = prefixed(&dpath, &e.field);
                        self.errs.push(e);
                    }
                    Ok(()) => self.errs.extend(validation::validate_at(s, default, &dpath)),
                }
            }
        }

        // additionalProperties is not followed: Kubernetes does not check defaults there.
        if let Some(items) = s.items.as_deref() {
            trail.push(None);
            self.node(items, &path.child("items"), false, inside_meta, resource, trail);
            trail.pop();
        }
        for (k, sub) in &s.properties {
            let sub_meta = inside_meta || (embedded && objectmeta::is_meta_field(k));
            trail.push(Some(k.clone()));
            self.node(sub, &path.child("properties").key(k), false, sub_meta, resource, trail);
            trail.pop();
        }
        if let Some(t) = saved_trail {
            *trail = t;
        }
    }

    /// A default inside `apiVersion`/`kind`/`metadata`: place it in a surrounding object and
    /// check that the result has valid type and object metadata.
    fn check_meta_default(
        &mut self,
        default: &Value,
        dpath: &Path,
        resource: &Structural,
        trail: &Trail,
        s: &Structural,
    ) {
        let mut obj = Value::Object(Map::from_iter([
            ("apiVersion".to_owned(), Value::from("validation/v1")),
            ("kind".to_owned(), Value::from("Validation")),
        ]));
        place(&mut obj, trail, default.clone());
        if let Err(e) = objectmeta::coerce(&mut obj, resource, Malformed::Reject) {
            self.errs.push(Error::invalid(dpath.clone(), default, format!("must result in valid metadata: {e}")));
            return;
        }
        let mut meta_errs = crate::metadata::validate_embedded_resource(&obj, &Path::none());
        meta_errs.extend(crate::metadata::validate_embedded_resources(&obj, resource, &Path::none()));
        if !meta_errs.is_empty() {
            self.errs.push(Error::invalid(
                dpath.clone(),
                default,
                format!("must result in valid metadata: {}", meta_errs.aggregate()),
            ));
            return;
        }
        self.errs.extend(validation::validate_at(s, default, dpath));
    }
}

/// Sets `v` at `trail` inside `obj`, creating objects (and one-item lists) on the way.
fn place(obj: &mut Value, trail: &Trail, v: Value) {
    let mut cur = obj;
    for step in trail {
        cur = match step {
            Some(k) => {
                if !cur.is_object() {
                    *cur = Value::Object(Map::new());
                }
                match cur {
                    Value::Object(m) => m.entry(k.clone()).or_insert(Value::Null),
                    _ => return,
                }
            }
            None => {
                *cur = Value::Array(vec![Value::Null]);
                match cur {
                    Value::Array(a) => &mut a[0],
                    _ => return,
                }
            }
        };
    }
    *cur = v;
}

/// `base` + a path reported relative to the default value.
fn prefixed(base: &Path, rel: &Path) -> Path {
    if rel.is_none() { base.clone() } else { Path::new(format!("{}.{}", base.as_str(), rel.as_str())) }
}
