//! Kubernetes' URL library: `url(string)`, `isURL(string)` and the accessors `getScheme`,
//! `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`.
//!
//! Parsing is Go's `url.ParseRequestURI`: an absolute URI or an absolute path, no fragment
//! handling (a `#` stays in the path), the scheme lower-cased, `user@` and `host:port`
//! authority with Go's host-character and port checks, percent escapes validated. Error
//! texts are Go's (`parse "x": invalid URI for request`). `url()` costs 0.1 per code point,
//! `isURL` and the accessors 1 (Kubernetes' cost estimator has no rule for `isURL`).

use super::{Res, as_opaque, charged, list_of_strings, parse_string, text};
use crate::opaque::{Opaque, URL_TYPE, url::parse};
use crate::runtime::CallContext;
use crate::types::Type;
use crate::value::{Map, Value};

pub(crate) fn declare(add: &mut dyn FnMut(&'static str, bool, Vec<Type>, Type)) {
    let u = || Type::Opaque(URL_TYPE);
    add("url", false, vec![Type::String], u());
    add("isURL", false, vec![Type::String], Type::Bool);
    for f in ["getScheme", "getHost", "getHostname", "getPort", "getEscapedPath"] {
        add(f, true, vec![u()], Type::String);
    }
    add("getQuery", true, vec![u()], Type::map(Type::String, Type::list(Type::String)));
}

pub(crate) fn call<'a>(
    calls: &mut CallContext<'_>,
    function: &str,
    member: bool,
    args: &[Value<'a>],
) -> Option<Res<'a>> {
    match (function, member) {
        ("url", false) => {
            let s = args.first().and_then(text)?;
            let parsed = || parse(s).map_err(|e| format!("URL parse error during conversion from string: {e}"));
            Some(parse_string(calls, &args[0], false, parsed, Opaque::Url))
        }
        // Kubernetes' cost estimator has no rule for `isURL`: cel-go's default, 1.
        ("isURL", false) => {
            let s = args.first().and_then(text)?;
            Some(charged(calls, 1, || Ok(Value::Bool(parse(s).is_ok()))))
        }
        ("getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" | "getQuery", true) => {
            let Some(Opaque::Url(u)) = args.first().and_then(as_opaque) else { return None };
            Some(charged(calls, 1, || {
                Ok(match function {
                    "getScheme" => Value::string(u.scheme.clone()),
                    "getHost" => Value::string(u.host.clone()),
                    "getHostname" => Value::string(u.hostname()),
                    "getPort" => Value::string(u.port()),
                    "getEscapedPath" => Value::string(u.escaped_path()),
                    _ => {
                        let entries = u
                            .query()
                            .into_iter()
                            .map(|(k, v)| (Value::string(k), list_of_strings(v)))
                            .collect::<Vec<_>>();
                        Value::Map(Map::Owned(std::sync::Arc::new(entries)))
                    }
                })
            }))
        }
        _ => None,
    }
}
