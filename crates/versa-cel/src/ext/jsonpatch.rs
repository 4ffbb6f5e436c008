//! Kubernetes' JSON Patch library: `jsonpatch.escapeKey(string)`, which escapes a map key for
//! a JSON Pointer (`~` → `~0`, `/` → `~1`). Kubernetes declares it only in the environment of
//! MutatingAdmissionPolicy mutations; versa declares it everywhere (CRD rules too). It
//! costs 0.1 per code point, as `url`.

use super::{Res, ceil_cost, charged, str_size, text};
use crate::runtime::CallContext;
use crate::types::Type;
use crate::value::Value;

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    add("jsonpatch.escapeKey", false, vec![Type::String], Type::String);
}

/// `~` → `~0` and `/` → `~1`, left to right (Go's `strings.NewReplacer("/", "~1", "~", "~0")`).
pub fn escape_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    if function != "jsonpatch.escapeKey" || member {
        return None;
    }
    let key = args.first().and_then(text)?;
    let cost = ceil_cost(str_size(&args[0]) as f64 * 0.1);
    Some(charged(calls, cost, || Ok(Value::string(escape_key(key)))))
}

#[cfg(test)]
mod tests {
    use super::escape_key;

    #[test]
    fn keys_escape_as_json_pointers_need() {
        assert_eq!(escape_key("example.com/a~b"), "example.com~1a~0b");
        assert_eq!(escape_key("plain"), "plain");
    }
}
