//! Paths into a schema such as `.spec.ports['http'].name`: the `fieldPath` of
//! `x-kubernetes-validations` rules and the `jsonPath` of `selectableFields`
//! (apiextensions-apiserver `cel.ValidFieldPath`).
//!
//! Only field accessors (`.name`) and quoted map keys (`['key']`) are allowed — never list
//! indexes — and every step must exist in the schema, so a path is known to be valid when the
//! definition is accepted. Definition validation checks paths with it, and the rule validator
//! resolves a rule's `fieldPath` with it into the path its errors are reported at.

use versa_schema::Structural;
use versa_schema::field::Path;

/// Where a valid path leads.
#[derive(Debug)]
pub struct FieldPathTarget<'a> {
    /// The path as a field path (`spec.ports[http].name`).
    pub path: Path,
    /// The first step (`spec`), to recognise paths into `metadata`.
    pub root: String,
    /// The schema at the end of the path; `None` when the path ends in a map whose values have no
    /// schema (`additionalProperties: true`).
    pub schema: Option<&'a Structural>,
}

/// Why a path is not valid (apiextensions-apiserver's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    /// A `['key']` step where array notation is not allowed.
    #[error("array notation is not allowed")]
    ArrayNotation,
    /// The path stops in the middle of a step.
    #[error("unexpected end of JSON path")]
    UnexpectedEnd,
    /// A `[` not followed by a single-quoted string.
    #[error("expected single quoted string but got {found}")]
    ExpectedQuoted { found: String },
    /// The quoted key has an escape CEL does not know.
    #[error("invalid string literal: invalid escape char \\{escape}")]
    InvalidEscape { escape: char },
    /// A quoted key not followed by `]`.
    #[error("expected ] but got {found}")]
    ExpectedClose { found: String },
    /// A step that starts with neither `[` nor `.`.
    #[error("expected [ or . but got: {found}")]
    ExpectedStep { found: String },
    /// A step names no field of the schema.
    #[error("does not refer to a valid field")]
    NoSuchField,
}

/// Resolves `json_path` against `schema`. `allow_array_notation` permits `['key']` steps. The
/// error text is upstream's (`does not refer to a valid field`, …).
pub fn valid_field_path<'a>(
    json_path: &str,
    schema: &'a Structural,
    allow_array_notation: bool,
) -> Result<FieldPathTarget<'a>, FieldPathError> {
    let tokens = tokenize(json_path);
    let mut tokens = tokens.iter().map(String::as_str);
    let mut path = Path::none();
    let mut root: Option<String> = None;
    let mut current: Option<&'a Structural> = Some(schema);

    while let Some(tok) = tokens.next() {
        let name = match tok {
            "[" => {
                if !allow_array_notation {
                    return Err(FieldPathError::ArrayNotation);
                }
                let quoted = tokens.next().ok_or(FieldPathError::UnexpectedEnd)?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(FieldPathError::ExpectedQuoted { found: quoted.to_owned() });
                }
                let name = unescape_single_quote(&quoted[1..quoted.len() - 1])?;
                let step = step(current, &name, &mut path)?;
                current = step;
                match tokens.next() {
                    None => return Err(FieldPathError::UnexpectedEnd),
                    Some("]") => {}
                    Some(other) => return Err(FieldPathError::ExpectedClose { found: other.to_owned() }),
                }
                name
            }
            "." => {
                let name = tokens.next().ok_or(FieldPathError::UnexpectedEnd)?.to_owned();
                current = step(current, &name, &mut path)?;
                name
            }
            other => return Err(FieldPathError::ExpectedStep { found: other.to_owned() }),
        };
        if root.is_none() {
            root = Some(name);
        }
    }
    Ok(FieldPathTarget { path, root: root.unwrap_or_default(), schema: current })
}

/// One step from `schema` to `name`: a property when the node has properties, else a map value.
fn step<'a>(
    schema: Option<&'a Structural>,
    name: &str,
    path: &mut Path,
) -> Result<Option<&'a Structural>, FieldPathError> {
    let invalid = || FieldPathError::NoSuchField;
    let schema = schema.ok_or_else(invalid)?;
    if !schema.properties.is_empty() {
        *path = path.child(name);
        schema.properties.get(name).map(Some).ok_or_else(invalid)
    } else if let Some(ap) = &schema.additional_properties {
        *path = path.key(name);
        Ok(ap.schema())
    } else {
        Err(invalid())
    }
}

/// Splits on `.`, `[` and `]` (each its own token); a token starting with `'` runs to the next
/// unescaped `'`, delimiters included.
fn tokenize(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let rest = &bytes[start..];
        let len = if rest[0] == b'\'' {
            (1..rest.len()).find(|&i| rest[i] == b'\'' && rest[i - 1] != b'\\').map_or(rest.len(), |i| i + 1)
        } else if matches!(rest[0], b'.' | b'[' | b']') {
            1
        } else {
            rest.iter().position(|b| matches!(b, b'.' | b'[' | b']')).unwrap_or(rest.len())
        };
        out.push(String::from_utf8_lossy(&rest[..len]).into_owned());
        start += len;
    }
    out
}

/// Resolves the escapes allowed in a single-quoted CEL string.
fn unescape_single_quote(s: &str) -> Result<String, FieldPathError> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        // A trailing backslash, or one before a newline, is not an escape sequence upstream.
        let Some(d) = chars.next() else {
            out.push('\\');
            break;
        };
        if d == '\n' {
            out.push_str("\\\n");
            continue;
        }
        out.push(match d {
            'a' => '\u{07}',
            'b' => '\u{08}',
            'f' => '\u{0c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{0b}',
            '\'' => '\'',
            '\\' => '\\',
            other => return Err(FieldPathError::InvalidEscape { escape: other }),
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        Structural::from_json(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "any": {"type": "object", "additionalProperties": true},
                    "list": {"type": "array", "items": {"type": "string"}}
                }}
            }
        }))
        .unwrap()
    }

    #[test]
    fn resolves_fields_and_keys() {
        let s = schema();
        let t = valid_field_path(".spec.name", &s, true).unwrap();
        assert_eq!(t.path.to_string(), "spec.name");
        assert_eq!(t.root, "spec");
        assert_eq!(t.schema.unwrap().type_name, "string");
        let t = valid_field_path(".spec.labels['a.b/c']", &s, true).unwrap();
        assert_eq!(t.path.to_string(), "spec.labels[a.b/c]");
        let t = valid_field_path(".spec['name']", &s, true).unwrap();
        assert_eq!(t.path.to_string(), "spec.name");
        assert!(valid_field_path(".spec.any.x", &s, true).unwrap().schema.is_none());
    }

    #[test]
    fn reports_upstream_errors() {
        let s = schema();
        for (p, want) in [
            (".spec.nope", "does not refer to a valid field"),
            (".spec.list.x", "does not refer to a valid field"),
            (".spec.labels['a'", "unexpected end of JSON path"),
            (".spec.labels[a]", "expected single quoted string but got a"),
            ("spec", "expected [ or . but got: spec"),
            (".spec.", "unexpected end of JSON path"),
            (".spec.labels['\\q']", "invalid string literal: invalid escape char \\q"),
            (".spec.any.x.y", "does not refer to a valid field"),
        ] {
            assert_eq!(valid_field_path(p, &s, true).unwrap_err().to_string(), want, "{p}");
        }
        assert_eq!(
            valid_field_path(".spec['name']", &s, false).unwrap_err().to_string(),
            "array notation is not allowed"
        );
    }
}
