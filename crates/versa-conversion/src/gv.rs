//! Group/version strings and Go's printing of them, as kube-apiserver's error messages show them.
//!
//! Conversion errors print group-versions and group-version-kinds with Go's `%v`
//! (`schema.GroupVersion.String`, `schema.GroupVersionKind.String`) and JSON values by their Go
//! type (`%T` of an unstructured value). The helpers here reproduce those texts so that the
//! messages versa answers with are the ones users know from Kubernetes.

use serde_json::Value;

/// A parsed `apiVersion` (Kubernetes `schema.GroupVersion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GroupVersion<'a> {
    pub group: &'a str,
    pub version: &'a str,
}

impl<'a> GroupVersion<'a> {
    /// `schema.ParseGroupVersion`, with a parse failure (more than one `/`) giving the empty
    /// group-version, as `GroupVersionKind()` of an unstructured object does.
    pub(crate) fn parse(api_version: &'a str) -> GroupVersion<'a> {
        if api_version.is_empty() || api_version == "/" {
            return GroupVersion::default();
        }
        match api_version.split_once('/') {
            None => GroupVersion { group: "", version: api_version },
            Some((_, rest)) if rest.contains('/') => GroupVersion::default(),
            Some((group, version)) => GroupVersion { group, version },
        }
    }
}

impl std::fmt::Display for GroupVersion<'_> {
    /// `schema.GroupVersion.String`: `group/version`, or the version alone for the core group.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() { f.write_str(self.version) } else { write!(f, "{}/{}", self.group, self.version) }
    }
}

/// `schema.GroupVersionKind.String`: `group/version, Kind=kind` (always with the slash).
pub(crate) fn gvk_string(api_version: &str, kind: &str) -> String {
    let gv = GroupVersion::parse(api_version);
    format!("{}/{}, Kind={kind}", gv.group, gv.version)
}

/// A string field of a JSON object, `""` when absent or not a string (unstructured's
/// `NestedString` as the getters use it).
pub(crate) fn str_field<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A string in an object's `metadata` (given, as `obj.get("metadata")`), `""` when absent or
/// not a string (`GetName`, `GetNamespace`, `GetUID`).
pub(crate) fn meta_str<'a>(metadata: Option<&'a Value>, key: &str) -> &'a str {
    metadata.and_then(|m| m.get(key)).and_then(Value::as_str).unwrap_or("")
}

/// Go's `%T` of a value decoded into `interface{}` by the unstructured decoder, which keeps
/// integers as `int64`.
pub(crate) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The word `encoding/json` uses for a JSON value in `cannot unmarshal <kind> into ...`.
pub(crate) use versa_schema::objectmeta::json_kind;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_and_print_like_go() {
        for (input, group, version, printed) in [
            ("stable.example.com/v1", "stable.example.com", "v1", "stable.example.com/v1"),
            ("v1", "", "v1", "v1"),
            ("", "", "", ""),
            ("a/b/c", "", "", ""),
        ] {
            let gv = GroupVersion::parse(input);
            assert_eq!((gv.group, gv.version), (group, version), "{input}");
            assert_eq!(gv.to_string(), printed, "{input}");
        }
        assert_eq!(
            gvk_string("apiextensions.k8s.io/v1", "ConversionReview"),
            "apiextensions.k8s.io/v1, Kind=ConversionReview"
        );
        assert_eq!(gvk_string("v1", "Status"), "/v1, Kind=Status");
        assert_eq!(gvk_string("", ""), "/, Kind=");
    }

    #[test]
    fn go_types() {
        let cases = [
            (json!(null), "<nil>"),
            (json!(true), "bool"),
            (json!(1), "int64"),
            (json!(1.5), "float64"),
            (json!("x"), "string"),
            (json!([]), "[]interface {}"),
            (json!({}), "map[string]interface {}"),
        ];
        for (v, want) in cases {
            assert_eq!(go_type(&v), want, "{v}");
        }
    }
}
