//! Pruning on JSON text: the bytes `serde_json` would write for a resource after
//! [`crate::pipeline::prune_and_coerce`], produced from the resource's JSON text without building
//! a tree — when pruning would remove nothing, which is the usual case for an object a conversion
//! webhook returns.
//!
//! [`prune_resource_text`] reads the text once along the schema and writes it out as
//! `serde_json` writes the parsed value: without whitespace, object keys sorted, strings and
//! numbers in serde's spelling (a string or number written another way is parsed and written
//! again). It gives up — returns `None`, and the caller takes the tree path — as soon as the tree
//! path would do something the text path does not: remove a field (unknown, or a `null` that is
//! not nullable), clear an object under a boolean `additionalProperties`, coerce an embedded
//! resource, drop a malformed `apiVersion` or `kind`; or when the text has a duplicated key, a
//! key written with escapes, or anything valid JSON allows and `serde_json` does not parse into
//! a value (numbers beyond `f64`, lone surrogates, nesting deeper than its limit). Everything
//! it accepts comes out exactly as the tree path writes it; `tests/pruned_text.rs` compares
//! both on generated schemas and texts.
//!
//! The resource's own `metadata` is not written: the caller supplies it (conversion restores
//! the original object's metadata), at the offset [`ResourceText::metadata_at`].

use serde_json::Value;

use crate::objectmeta::is_meta_field;
use crate::structural::Structural;

/// The deepest nesting of objects and arrays `serde_json` parses (its recursion limit, 128,
/// counts one more): deeper text gives up, as parsing it fails. It also bounds the recursion
/// here.
const MAX_DEPTH: usize = 127;

/// What [`prune_resource_text`] found at the top of the resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceText<'a> {
    /// The `apiVersion` string, if there is one (a non-string gives up).
    pub api_version: Option<&'a str>,
    /// The `kind` string, if there is one (a non-string gives up).
    pub kind: Option<&'a str>,
    /// The text of the `metadata` value, as written (there always is one: without it the walk
    /// gives up). Only its end was found: see [`ResourceText::metadata_parses`].
    pub metadata: &'a str,
    /// The offset in the output where the `metadata` value goes: the output has
    /// `"metadata":` and then, at this offset, the rest of the object.
    pub metadata_at: usize,
}

impl ResourceText<'_> {
    /// Whether the `metadata` text parses into a `serde_json::Value` where it stands: valid
    /// JSON may hold what `serde_json` refuses (numbers beyond `f64`, lone surrogates, nesting
    /// beyond its limit). Text `serde_json` wrote itself needs no asking.
    pub fn metadata_parses(&self) -> bool {
        let mut out = Vec::with_capacity(self.metadata.len());
        // The metadata stands one level down, in the resource.
        let mut w = Writer::new(self.metadata, &mut out, 1);
        let read = w.any().is_some();
        w.ws();
        read && w.at == self.metadata.len()
    }
}

/// Appends to `out` what `serde_json::to_vec` writes for the resource `text` (a JSON object,
/// already known to be valid JSON) after [`crate::pipeline::prune_and_coerce`] with `schema` —
/// leaving out the value of `metadata`, which belongs at [`ResourceText::metadata_at`] — if
/// that pruning and coercion would change nothing but the metadata. `None` otherwise; `out`
/// then holds a partial result, to be discarded.
///
/// The caller vouches for the metadata it puts in: that coercing it changes nothing.
pub fn prune_resource_text<'a>(text: &'a str, schema: &Structural, out: &mut Vec<u8>) -> Option<ResourceText<'a>> {
    let mut w = Writer::new(text, out, 0);
    w.ws();
    let found = w.resource(schema)?;
    w.ws();
    (w.at == text.len()).then_some(found)
}

/// One member of an object as written to the output: its key, and where `"key":value` is.
struct Member<'a> {
    key: &'a str,
    start: usize,
    end: usize,
}

struct Writer<'a, 'o> {
    text: &'a str,
    /// The read position in `text`.
    at: usize,
    /// How many objects and arrays the read position is in.
    depth: usize,
    out: &'o mut Vec<u8>,
    /// The members of the objects being written, innermost last: each object uses the part
    /// above where it started.
    members: Vec<Member<'a>>,
    /// Where an object whose keys are out of order is rearranged.
    scratch: Vec<u8>,
}

/// `None` gives up.
type Step = Option<()>;

impl<'a, 'o> Writer<'a, 'o> {
    /// A writer of `text` into `out`, which starts `depth` objects and arrays down.
    fn new(text: &'a str, out: &'o mut Vec<u8>, depth: usize) -> Self {
        Writer { text, at: 0, out, depth, members: Vec::new(), scratch: Vec::new() }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    /// Consumes `byte` (after whitespace), or gives up.
    fn expect(&mut self, byte: u8) -> Step {
        self.ws();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// The resource at the top: an object whose `apiVersion`, `kind` and `metadata` are left to
    /// coercion instead of pruning (walk.rs `object` with `embedded`).
    fn resource(&mut self, s: &Structural) -> Option<ResourceText<'a>> {
        let ap = s.additional_properties.as_ref().and_then(|ap| ap.schema());
        let keep = s.preserve_unknown_fields;
        let (mut api_version, mut kind, mut metadata) = (None, None, None);
        let level = self.members.len();
        let content = self.open()?;
        while let Some(key) = self.key()? {
            let start = self.begin_member(key);
            if !is_meta_field(key) {
                self.member_value(key, s, keep)?;
            } else if s.properties.get(key).or(ap).is_some_and(|c| c.below.embedded_resources) {
                // Coercion looks inside these only where embedded resources are specified.
                return None;
            } else if key == "metadata" {
                self.ws();
                let from = self.at;
                self.skip()?;
                metadata = Some(self.text.get(from..self.at)?);
            } else {
                // Coercion drops an `apiVersion` or `kind` that is not a string.
                self.ws();
                let value = self.plain_string()?;
                self.out.push(b'"');
                self.out.extend_from_slice(value.as_bytes());
                self.out.push(b'"');
                if key == "kind" { kind = Some(value) } else { api_version = Some(value) }
            }
            self.end_member(key, start);
        }
        let metadata_at = self.close(level, content, Some("metadata"))?;
        Some(ResourceText { api_version, kind, metadata: metadata?, metadata_at: metadata_at? })
    }

    /// Writes `{` after consuming it; returns where the members start in the output.
    fn open(&mut self) -> Option<usize> {
        self.expect(b'{')?;
        self.deeper()?;
        self.out.push(b'{');
        Some(self.out.len())
    }

    /// The next key of an object (after `{` or a member), consuming the `:` after it; `None`
    /// at the closing `}`. A key with escapes gives up.
    fn key(&mut self) -> Option<Option<&'a str>> {
        self.ws();
        match self.peek()? {
            b'}' => {
                self.at += 1;
                return Some(None);
            }
            b',' => {
                self.at += 1;
                self.ws();
            }
            _ => {}
        }
        let key = self.plain_string()?;
        self.expect(b':')?;
        Some(Some(key))
    }

    /// Starts a member in the output: the separator and `"key":`; returns where it starts.
    fn begin_member(&mut self, key: &str) -> usize {
        if self.out.last() != Some(&b'{') {
            self.out.push(b',');
        }
        let start = self.out.len();
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        start
    }

    fn end_member(&mut self, key: &'a str, start: usize) {
        let end = self.out.len();
        self.members.push(Member { key, start, end });
    }

    /// The value of member `key` of an object with schema `s` (walk.rs `object`).
    fn member_value(&mut self, key: &str, s: &Structural, keep: bool) -> Step {
        let child = match s.properties.get(key) {
            Some(p) => Some(p),
            None => match &s.additional_properties {
                Some(ap) => ap.schema(),
                None if keep => return self.any(),
                // An unknown field: pruned.
                None => return None,
            },
        };
        self.field(child)
    }

    /// An object below the top, each member's value written by `value` (given its key).
    fn object(&mut self, mut value: impl FnMut(&mut Self, &'a str) -> Step) -> Step {
        let level = self.members.len();
        let content = self.open()?;
        while let Some(key) = self.key()? {
            let start = self.begin_member(key);
            value(self, key)?;
            self.end_member(key, start);
        }
        self.close(level, content, None).map(drop)
    }

    /// An array, each item written by `item`.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Step) -> Step {
        self.expect(b'[')?;
        self.deeper()?;
        self.out.push(b'[');
        self.ws();
        if self.peek()? == b']' {
            self.at += 1;
            self.out.push(b']');
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            let next = self.peek()?;
            if !matches!(next, b',' | b']') {
                return None;
            }
            self.at += 1;
            self.out.push(next);
            if next == b']' {
                self.depth -= 1;
                return Some(());
            }
        }
    }

    /// Closes an object whose members were recorded from `level` on and written from
    /// `content`: rearranged in key order if they are not, `}` written. Returns where the
    /// value of member `find` (if given and present) now goes. A duplicated key gives up.
    fn close(&mut self, level: usize, content: usize, find: Option<&str>) -> Option<Option<usize>> {
        let members = &mut self.members[level..];
        let mut found = None;
        if members.windows(2).all(|w| w[0].key < w[1].key) {
            found = find.and_then(|f| members.iter().find(|m| m.key == f)).map(|m| m.end);
        } else {
            members.sort_unstable_by(|a, b| a.key.cmp(b.key));
            if members.windows(2).any(|w| w[0].key == w[1].key) {
                return None;
            }
            self.scratch.clear();
            self.scratch.extend_from_slice(self.out.get(content..)?);
            self.out.truncate(content);
            for (i, m) in members.iter().enumerate() {
                if i > 0 {
                    self.out.push(b',');
                }
                self.out.extend_from_slice(self.scratch.get(m.start - content..m.end - content)?);
                if find == Some(m.key) {
                    found = Some(self.out.len());
                }
            }
        }
        self.members.truncate(level);
        self.out.push(b'}');
        self.depth -= 1;
        Some(found)
    }

    /// A value of an object's member, specified by `child` (`None` under a boolean
    /// `additionalProperties`) (walk.rs `field`).
    fn field(&mut self, child: Option<&Structural>) -> Step {
        self.ws();
        match self.peek()? {
            // A `null` that is neither nullable nor defaulted is dropped.
            b'n' if child.is_some_and(|c| !c.nullable && c.default.is_none()) => None,
            b'{' | b'[' => self.visit(child, false),
            _ => self.scalar(),
        }
    }

    /// An object or array with schema `s` (walk.rs `visit`).
    fn visit(&mut self, s: Option<&Structural>, keep_unknown: bool) -> Step {
        let Some(s) = s else {
            // Nothing is specified in here: objects are emptied (so only an empty one stays
            // as it is), arrays looked into.
            return match self.peek()? {
                b'{' => self.object(|_, _| None),
                _ => self.items(None, false),
            };
        };
        let keep = keep_unknown || s.preserve_unknown_fields;
        match self.peek()? {
            b'{' if s.embedded_resource => None,
            b'{' => self.object(|w, key| w.member_value(key, s, keep)),
            _ => {
                let item = s.items.as_deref();
                // Under preserve-unknown-fields, items without a schema are left alone.
                if item.is_none() && keep { self.any() } else { self.items(item, keep) }
            }
        }
    }

    /// An array whose items have schema `item` (walk.rs `items`).
    fn items(&mut self, item: Option<&Structural>, keep: bool) -> Step {
        self.array(|w| match w.peek()? {
            b'{' | b'[' => w.visit(item, keep),
            _ => w.scalar(),
        })
    }

    /// Any value, where nothing is pruned (under preserve-unknown-fields).
    fn any(&mut self) -> Step {
        self.ws();
        match self.peek()? {
            b'{' => self.object(|w, _| w.any()),
            b'[' => self.array(Self::any),
            _ => self.scalar(),
        }
    }

    /// A string, number, `true`, `false` or `null`, as serde writes it.
    fn scalar(&mut self) -> Step {
        self.ws();
        match self.peek()? {
            b'"' => self.string(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &str) -> Step {
        self.text.get(self.at..)?.starts_with(word).then_some(())?;
        self.at += word.len();
        self.out.extend_from_slice(word.as_bytes());
        Some(())
    }

    /// The contents of a string without escapes, consumed; `None` for anything else.
    fn plain_string(&mut self) -> Option<&'a str> {
        let rest = self.text.get(self.at..)?;
        let body = rest.strip_prefix('"')?;
        let end = body.find(['"', '\\'])?;
        (body.as_bytes()[end] == b'"').then_some(())?;
        self.at += end + 2;
        body.get(..end)
    }

    /// A string, written as serde writes it: as it is when its escapes are serde's, parsed
    /// and written again otherwise.
    fn string(&mut self) -> Step {
        let start = self.at;
        let bytes = self.text.as_bytes();
        (bytes.get(start) == Some(&b'"')).then_some(())?;
        let mut i = start + 1;
        let mut canonical = true;
        loop {
            match bytes.get(i)? {
                b'"' => break,
                b'\\' => {
                    let escape = bytes.get(i + 1)?;
                    if *escape == b'u' {
                        canonical &= serde_writes_this_escape(bytes.get(i + 2..i + 6)?);
                        i += 6;
                    } else {
                        canonical &= matches!(escape, b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't');
                        i += 2;
                    }
                }
                _ => i += 1,
            }
        }
        let token = self.text.get(start..=i)?;
        self.at = i + 1;
        if canonical {
            self.out.extend_from_slice(token.as_bytes());
        } else {
            let s: String = serde_json::from_str(token).ok()?;
            serde_json::to_writer(&mut *self.out, &s).ok()?;
        }
        Some(())
    }

    /// A number, written as serde writes it: an integer as it is when serde keeps it as an
    /// integer, anything else parsed and written again.
    fn number(&mut self) -> Step {
        let rest = self.text.get(self.at..)?;
        let len = rest.find(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E')).unwrap_or(rest.len());
        let token = rest.get(..len)?;
        if len == 0 {
            return None;
        }
        self.at += len;
        let integer = match token.strip_prefix('-') {
            // `-0` is a float to serde.
            Some(_) => token.parse::<i64>().is_ok_and(|n| n < 0),
            None => token.parse::<u64>().is_ok(),
        };
        if integer && !token.starts_with('+') {
            self.out.extend_from_slice(token.as_bytes());
        } else {
            let n: serde_json::Number = serde_json::from_str(token).ok()?;
            serde_json::to_writer(&mut *self.out, &Value::Number(n)).ok()?;
        }
        Some(())
    }

    /// Skips a value without writing it or checking it (the text is valid JSON: brackets are
    /// only counted).
    fn skip(&mut self) -> Step {
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        loop {
            let b = *bytes.get(self.at)?;
            self.at += 1;
            match b {
                b'"' => loop {
                    let rest = bytes.get(self.at..)?;
                    let i = rest.iter().position(|c| matches!(c, b'"' | b'\\'))?;
                    self.at += i + 1;
                    if rest[i] == b'"' {
                        break;
                    }
                    // The escaped byte.
                    self.at += 1;
                },
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth = depth.checked_sub(1)?,
                // A number or word at the top: read to its end.
                _ if depth == 0 => {
                    while bytes
                        .get(self.at)
                        .is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                    {
                        self.at += 1;
                    }
                }
                _ => {}
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    /// One level deeper, within the nesting `serde_json` parses.
    fn deeper(&mut self) -> Step {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }
}

/// Whether the four hex digits of a `\u` escape are what serde writes for that character: it
/// escapes only control characters, as `\u00XX` with lowercase digits, except those with a
/// short form.
fn serde_writes_this_escape(hex: &[u8]) -> bool {
    let [b'0', b'0', hi @ (b'0' | b'1'), lo @ (b'0'..=b'9' | b'a'..=b'f')] = *hex else { return false };
    let lo = if lo <= b'9' { lo - b'0' } else { lo - b'a' + 10 };
    let c = (hi - b'0') * 16 + lo;
    !matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        Structural::from_json(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "name": {"type": "string"},
                "n": {"type": "integer", "nullable": true},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "map": {"type": "object", "additionalProperties": {"type": "string"}},
                "any": {"type": "object", "additionalProperties": true},
            }},
        }}))
        .unwrap()
    }

    /// The output with `META` where the metadata goes, or `None` (also when the metadata
    /// does not parse).
    fn run(text: &str) -> Option<String> {
        let mut out = Vec::new();
        let found = prune_resource_text(text, &schema(), &mut out)?;
        found.metadata_parses().then_some(())?;
        out.splice(found.metadata_at..found.metadata_at, b"META".iter().copied());
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn written_as_serde_writes_the_pruned_value() {
        let cases = [
            (
                r#"{"apiVersion":"g/v2","kind":"K","metadata":{"name":"a"},"spec":{"name":"x"}}"#,
                r#"{"apiVersion":"g/v2","kind":"K","metadata":META,"spec":{"name":"x"}}"#,
            ),
            // Whitespace dropped, keys sorted at every level.
            (
                "{ \"spec\" : { \"n\" : 1 , \"name\" : \"x\" } ,\n \"kind\": \"K\", \"metadata\": {}, \"apiVersion\": \"g/v2\" }",
                r#"{"apiVersion":"g/v2","kind":"K","metadata":META,"spec":{"n":1,"name":"x"}}"#,
            ),
            // Escapes and numbers in serde's spelling.
            (
                r#"{"metadata":{},"spec":{"name":"a\/b\u0041\u00e9\n\u001f","n":1.0,"free":{"z":1e2,"a":-0,"m":[true,null]}}}"#,
                r#"{"metadata":META,"spec":{"free":{"a":-0.0,"m":[true,null],"z":100.0},"n":1.0,"name":"a/bAé\n\u001f"}}"#,
            ),
            // A nullable null stays; maps and lists are looked into.
            (
                r#"{"metadata":{},"spec":{"n":null,"map":{"b":"1","a":"2"},"list":[{"a":"x"},{}],"any":{"k":{}}}}"#,
                r#"{"metadata":META,"spec":{"any":{"k":{}},"list":[{"a":"x"},{}],"map":{"a":"2","b":"1"},"n":null}}"#,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).as_deref(), Some(want), "{text}");
        }
    }

    #[test]
    fn gives_up_where_the_tree_path_would_change_something() {
        for text in [
            // An unknown field, at the root and below.
            r#"{"metadata":{},"extra":1}"#,
            r#"{"metadata":{},"spec":{"extra":1}}"#,
            r#"{"metadata":{},"spec":{"list":[{"b":1}]}}"#,
            // A null that is not nullable.
            r#"{"metadata":{},"spec":{"name":null}}"#,
            // A non-empty object under `additionalProperties: true`.
            r#"{"metadata":{},"spec":{"any":{"k":{"x":1}}}}"#,
            // Malformed type meta.
            r#"{"metadata":{},"kind":7}"#,
            // A duplicated key, a key with an escape, no metadata, trailing bytes.
            r#"{"metadata":{},"spec":{"name":"a","name":"b"}}"#,
            r#"{"metadata":{},"sp\u0065c":{}}"#,
            r#"{"spec":{}}"#,
            r#"{"metadata":{}} x"#,
        ] {
            assert_eq!(run(text), None, "{text}");
        }
    }

    #[test]
    fn gives_up_where_parsing_the_text_fails() {
        for text in [
            r#"{"metadata":{"x":1e400}}"#,
            r#"{"metadata":{"x":"\ud800"}}"#,
            r#"{"metadata":{},"spec":{"free":{"x":1e400}}}"#,
            r#"{"metadata":{},"spec":{"free":{"x":"\udc00"}}}"#,
        ] {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            assert_eq!(run(text), None, "{text}");
        }
        // Nesting: up to serde's limit, and not beyond, both in the metadata and below.
        for n in 120..130 {
            let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
            for text in [
                format!(r#"{{"metadata":{{"x":{deep}}}}}"#),
                format!(r#"{{"metadata":{{}},"spec":{{"free":{{"x":{deep}}}}}}}"#),
            ] {
                let parses = serde_json::from_str::<Value>(&text).is_ok();
                assert_eq!(run(&text).is_some(), parses, "{n} deep: {text}");
            }
        }
    }

    #[test]
    fn escapes_serde_writes() {
        for (hex, serde_writes) in [
            ("001f", true),
            ("0000", true),
            ("0009", false),
            ("000a", false),
            ("001F", false),
            ("0041", false),
            ("007f", false),
            ("00e9", false),
        ] {
            assert_eq!(serde_writes_this_escape(hex.as_bytes()), serde_writes, "{hex}");
        }
    }
}
