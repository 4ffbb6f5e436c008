//! Label and field selectors, as list and watch take them in `labelSelector=` and
//! `fieldSelector=`: parsing with Kubernetes' syntax and error messages, and matching.
//!
//! [`LabelSelector`] follows apimachinery `labels.Parse` (`pkg/labels/selector.go`): comma-joined
//! requirements `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`,
//! `key>N`, `key<N`, whitespace allowed between tokens, `in`/`notin` usable as keys and values.
//! Keys must be qualified names and values label values; the empty selector selects everything.
//! Parse errors carry Kubernetes' wording, including its quirks: requirement errors print the
//! key's field path as `<nil>` (`unable to parse requirement: <nil>: Invalid value: "-x": ...`),
//! and `>`/`<` take only integers that are also valid label values, so `x>-1` is an error.
//!
//! [`FieldSelector`] follows apimachinery `fields.ParseSelector` (`pkg/fields/selector.go`):
//! comma-joined `field=value`, `field==value` or `field!=value` terms, ANDed; `\,`, `\=` and `\\`
//! escape those characters in values; nothing is trimmed. Like Kubernetes, terms are sorted
//! before parsing (so the first error reported is the first in sorted order), and a term with
//! both sides empty (`=`) is dropped. Which fields a resource supports is the caller's question:
//! [`FieldSelector::fields`] lists them so it can answer `field label not supported: ...`.
//!
//! Either parser's [`SelectorError`] displays as the message kube-apiserver puts in its
//! 400 BadRequest Status.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};
use versa_schema::field::{Error as FieldError, ErrorList, Path};
use versa_schema::names::{is_qualified_name, is_valid_label_value};

/// A selector that does not parse. Displays as kube-apiserver's 400 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// Label selector: a requirement that is malformed or fails validation.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// Label selector: a token where another was expected between requirements.
    #[error("{0}")]
    Syntax(String),
    /// Field selector: a term without `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm { selector: String, term: String },
    /// Field selector: a backslash before anything but `\`, `,` or `=`, or at the end.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    FieldEscape(String),
    /// Field selector: an unescaped `=` (or `,`) in a value. Kubernetes formats the character
    /// with Go's `%v` of a rune, i.e. as its code point in decimal (`=` is `61`).
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    FieldUnescaped(char),
}

/// The operator of one label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelOperator {
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key>N`
    GreaterThan,
    /// `key<N`
    LessThan,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    key: String,
    operator: LabelOperator,
    /// Sorted and without duplicates, as Kubernetes keeps them; empty for (Does)Exists, exactly
    /// one (an integer) for `>`/`<`.
    values: Vec<String>,
}

impl LabelRequirement {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> LabelOperator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `value`, the label's value if the label is set, satisfies this requirement.
    fn matches(&self, value: Option<&str>) -> bool {
        let has = |v: &str| self.values.iter().any(|w| w == v);
        match self.operator {
            LabelOperator::Exists => value.is_some(),
            LabelOperator::DoesNotExist => value.is_none(),
            LabelOperator::Equals | LabelOperator::DoubleEquals | LabelOperator::In => value.is_some_and(has),
            LabelOperator::NotEquals | LabelOperator::NotIn => !value.is_some_and(has),
            LabelOperator::GreaterThan | LabelOperator::LessThan => {
                let (Some(Ok(label)), [bound]) = (value.map(str::parse::<i64>), self.values.as_slice()) else {
                    return false;
                };
                let Ok(bound) = bound.parse::<i64>() else { return false };
                if self.operator == LabelOperator::GreaterThan { label > bound } else { label < bound }
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    /// Kubernetes' `Requirement.String()`: `!k`, `k`, `k=v`, `k in (a,b)`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            LabelOperator::Exists => return f.write_str(&self.key),
            LabelOperator::DoesNotExist => return write!(f, "!{}", self.key),
            LabelOperator::Equals => "=",
            LabelOperator::DoubleEquals => "==",
            LabelOperator::NotEquals => "!=",
            LabelOperator::In => " in ",
            LabelOperator::NotIn => " notin ",
            LabelOperator::GreaterThan => ">",
            LabelOperator::LessThan => "<",
        };
        let values = self.values.join(",");
        match self.operator {
            LabelOperator::In | LabelOperator::NotIn => write!(f, "{}{op}({values})", self.key),
            _ => write!(f, "{}{op}{values}", self.key),
        }
    }
}

/// A parsed `labelSelector`: all requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// Sorted by key (stably), as Kubernetes sorts them.
    requirements: Vec<LabelRequirement>,
}

impl LabelSelector {
    /// Parses Kubernetes label selector syntax; the empty string selects everything.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let mut parser = Parser { items: lex(s), position: 0 };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// Whether an object with these labels (`metadata.labels`) is selected. Label values are
    /// strings; a non-string value (which validation never stores) counts as an absent label.
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels.get(&r.key).and_then(Value::as_str)))
    }

    /// Whether this selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical form Kubernetes prints: requirements sorted by key, joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

// --- label selector lexer and parser (the structure of apimachinery's, so errors agree)

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The literals that are tokens by themselves.
fn keyword(literal: &str) -> Option<Token> {
    Some(match literal {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens, ending with [`Token::EndOfString`]. As in Kubernetes (whose
/// lexer reads a NUL byte as "end"), a NUL byte is dropped after an identifier or symbol and
/// ends the input where a token would start.
fn lex(s: &str) -> Vec<(Token, &str)> {
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        let Some(&first) = bytes.get(pos) else { break };
        if first == 0 {
            break;
        }
        let start = pos;
        if is_special(first) {
            // The longest run of symbols that is still a token: `!=` over `!`, `==` over `=`.
            let mut token = None;
            while let Some(&b) = bytes.get(pos) {
                if b == 0 {
                    pos += 1;
                    break;
                }
                if !is_special(b) {
                    break;
                }
                match keyword(&s[start..=pos]) {
                    Some(t) => token = Some((t, &s[start..=pos])),
                    None => break,
                }
                pos += 1;
            }
            // Every single symbol is a token, so one was found.
            items.push(token.unwrap_or((Token::Identifier, &s[start..pos])));
        } else {
            while let Some(&b) = bytes.get(pos) {
                if b == 0 || is_special(b) || is_whitespace(b) {
                    break;
                }
                pos += 1;
            }
            let literal = &s[start..pos];
            if bytes.get(pos) == Some(&0) {
                pos += 1;
            }
            items.push((keyword(literal).unwrap_or(Token::Identifier), literal));
        }
    }
    items.push((Token::EndOfString, ""));
    items
}

/// Where a token is read: in `Values`, the keywords `in` and `notin` are plain identifiers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    items: Vec<(Token, &'a str)>,
    position: usize,
}

type ParseResult<T> = Result<T, String>;

impl<'a> Parser<'a> {
    fn lookahead(&self, context: Context) -> (Token, &'a str) {
        // `items` always ends with EndOfString, which is never consumed past.
        let (token, literal) = self.items.get(self.position).copied().unwrap_or((Token::EndOfString, ""));
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn consume(&mut self, context: Context) -> (Token, &'a str) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement().map_err(SelectorError::Requirement)?);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(SelectorError::Syntax(format!(
                                    "found '{literal}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::Syntax(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::Syntax(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> ParseResult<LabelRequirement> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (LabelOperator::Exists | LabelOperator::DoesNotExist)) = operator {
            return new_requirement(key, op, BTreeSet::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            LabelOperator::In | LabelOperator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values)
    }

    /// The key, and `Exists`/`DoesNotExist` when no operator follows.
    fn parse_key_and_infer_operator(&mut self) -> ParseResult<(&'a str, Option<LabelOperator>)> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(LabelOperator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errs = is_qualified_name(literal);
        if !errs.is_empty() {
            // Kubernetes validates the key here with its nil field path.
            return Err(FieldError::invalid(Path::none(), literal, errs.join("; ")).to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(LabelOperator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> ParseResult<LabelOperator> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => LabelOperator::In,
            Token::Equals => LabelOperator::Equals,
            Token::DoubleEquals => LabelOperator::DoubleEquals,
            Token::GreaterThan => LabelOperator::GreaterThan,
            Token::LessThan => LabelOperator::LessThan,
            Token::NotIn => LabelOperator::NotIn,
            Token::NotEquals => LabelOperator::NotEquals,
            _ => return Err(format!("found '{literal}', expected: in, notin, =, ==, !=, gt, lt")),
        })
    }

    /// `(a,b)`; `()` and empty members stand for the empty value.
    fn parse_values(&mut self) -> ParseResult<BTreeSet<&'a str>> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            // Kubernetes' message has no comma here.
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                // The list only ends in front of `)`.
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([""]))
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> ParseResult<BTreeSet<&'a str>> {
        let mut values = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    match self.lookahead(Context::Values) {
                        (Token::Comma, _) => {}
                        (Token::ClosedPar, _) => return Ok(values),
                        (_, next) => return Err(format!("found '{next}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // `(,a`, `a,,b` and `a,)` all hold the empty value.
                    if values.is_empty() {
                        values.insert("");
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            values.insert("");
                            return Ok(values);
                        }
                        Token::Comma => {
                            values.insert("");
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; nothing is the empty value.
    fn parse_exact_value(&mut self) -> ParseResult<BTreeSet<&'a str>> {
        if matches!(self.lookahead(Context::Values).0, Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([""]));
        }
        match self.consume(Context::Values) {
            (Token::Identifier, literal) => Ok(BTreeSet::from([literal])),
            (_, literal) => Err(format!("found '{literal}', expected: identifier")),
        }
    }
}

/// Kubernetes' `NewRequirement` checks for what the parser can produce: `>`/`<` values are
/// integers, and every value is a label value. All problems are reported together.
fn new_requirement(key: &str, operator: LabelOperator, values: BTreeSet<&str>) -> ParseResult<LabelRequirement> {
    let values: Vec<String> = values.into_iter().map(str::to_owned).collect();
    let values_path = Path::new("values");
    let mut errs = ErrorList::new();
    if matches!(operator, LabelOperator::GreaterThan | LabelOperator::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errs.push(FieldError::invalid(
                    values_path.index(i),
                    v.as_str(),
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let msgs = is_valid_label_value(v);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(values_path.index(i).key(key), v.as_str(), msgs.join("; ")));
        }
    }
    if !errs.is_empty() {
        return Err(errs.aggregate());
    }
    Ok(LabelRequirement { key: key.to_owned(), operator, values })
}

// --- field selectors

/// The operator of a field requirement (`=` and `==` are the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    Equals,
    NotEquals,
}

/// One term of a field selector, with its value unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub op: FieldOperator,
    pub value: String,
}

/// A parsed `fieldSelector`: all requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    /// In the order Kubernetes keeps them: sorted by the term's text.
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses Kubernetes field selector syntax; the empty string selects everything.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = split_terms(s);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, op, raw_value)) = split_term(term) else {
                return Err(SelectorError::FieldTerm { selector: s.to_owned(), term: term.to_owned() });
            };
            let value = unescape_value(raw_value)?;
            // Kubernetes drops a term whose field and value are both empty (`=`).
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement { field: field.to_owned(), op, value });
        }
        Ok(FieldSelector { requirements })
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The field paths this selector uses (possibly repeated), for the caller to check against
    /// the fields its resource supports.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// Whether an object is selected; `get` returns the value of a field path such as
    /// `metadata.name`. A missing field compares as the empty string, as in Kubernetes'
    /// `fields.Set`.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let value = get(&r.field);
            let equal = value.as_deref().unwrap_or_default() == r.value;
            match r.op {
                FieldOperator::Equals => equal,
                FieldOperator::NotEquals => !equal,
            }
        })
    }

    /// Whether this selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

impl fmt::Display for FieldSelector {
    /// Kubernetes' canonical form: `field=value` / `field!=value`, values escaped, joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = match r.op {
                FieldOperator::Equals => "=",
                FieldOperator::NotEquals => "!=",
            };
            write!(f, "{}{op}", r.field)?;
            for c in r.value.chars() {
                if matches!(c, '\\' | ',' | '=') {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Splits on commas that are not escaped; escapes stay in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let (mut start, mut in_slash) = (0, false);
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `(field, operator, raw value)` at the first operator; at one position `!=` wins over `==`,
/// which wins over `=`. Fields cannot be escaped.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    const OPERATORS: [(&str, FieldOperator); 3] =
        [("!=", FieldOperator::NotEquals), ("==", FieldOperator::Equals), ("=", FieldOperator::Equals)];
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        OPERATORS
            .iter()
            .find(|(text, _)| rest.starts_with(text))
            .map(|&(text, op)| (&term[..i], op, &rest[text.len()..]))
    })
}

/// Undoes `\\`, `\,` and `\=`; any other escape, a trailing `\`, or a bare `,`/`=` is an error.
fn unescape_value(raw: &str) -> Result<String, SelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut in_slash = false;
    for c in raw.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::FieldEscape(format!("\\{c}")));
            }
            value.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(SelectorError::FieldUnescaped(c)),
            c => value.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::FieldEscape("\\".to_owned()));
    }
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    /// `(selector, canonical form)`: parses, and prints back the way Kubernetes would.
    const LABEL_PARSES: &[(&str, &str)] = &[
        ("", ""),
        ("  \t ", ""),
        ("x", "x"),
        ("!x", "!x"),
        ("! x", "!x"),
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x=", "x="),
        ("x!=", "x!="),
        (" x = a , y != b ", "x=a,y!=b"),
        ("x\n=\ra", "x=a"),
        ("z,a=b,!m", "a=b,!m,z"),
        ("x in (b,a)", "x in (a,b)"),
        ("x in(a)", "x in (a)"),
        ("x notin (a, b ,c)", "x notin (a,b,c)"),
        ("x in ()", "x in ()"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,)", "x in (,a)"),
        ("x in (a,a)", "x in (a)"),
        ("in in (in,notin)", "in in (in,notin)"),
        ("notin", "notin"),
        ("x>1", "x>1"),
        ("x < 10", "x<10"),
        ("example.com/x=1", "example.com/x=1"),
        ("a.b-c_d=A.b-C_9", "a.b-c_d=A.b-C_9"),
        // NUL bytes, read the way Kubernetes' lexer reads them.
        ("x=\0y", "x=y"),
        ("x\0,y", "x,y"),
        ("x \0y", "x"),
        ("\0x", ""),
    ];

    #[test]
    fn label_selectors_that_parse() {
        for (input, canonical) in LABEL_PARSES {
            let selector = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(selector.to_string(), *canonical, "{input:?}");
            assert_eq!(selector.is_empty(), canonical.is_empty(), "{input:?}");
        }
    }

    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const NAME_REGEX: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn label_selectors_that_fail() {
        let long = "a".repeat(64);
        let cases: Vec<(String, String)> = vec![
            // Between requirements.
            ("x=a b".into(), "found 'b', expected: ',' or 'end of string'".into()),
            ("x=a=b".into(), "found '=', expected: ',' or 'end of string'".into()),
            ("!x=a".into(), "found '=', expected: ',' or 'end of string'".into()),
            (",".into(), "found ',', expected: !, identifier, or 'end of string'".into()),
            ("!=a".into(), "found '!=', expected: !, identifier, or 'end of string'".into()),
            ("(".into(), "found '(', expected: !, identifier, or 'end of string'".into()),
            ("a,".into(), "found '', expected: identifier after ','".into()),
            ("a,,b".into(), "found ',', expected: identifier after ','".into()),
            // Inside a requirement.
            ("a b".into(), "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("x !y".into(), "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("x<=1".into(), "unable to parse requirement: found '=', expected: identifier".into()),
            ("!".into(), "unable to parse requirement: found '', expected: identifier".into()),
            ("!!x".into(), "unable to parse requirement: found '!', expected: identifier".into()),
            ("x in a".into(), "unable to parse requirement: found 'a' expected: '('".into()),
            ("x notin".into(), "unable to parse requirement: found '' expected: '('".into()),
            ("x in (a".into(), "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("x in (a b)".into(), "unable to parse requirement: found 'b', expected: ',' or ')'".into()),
            ("x in (a,".into(), "unable to parse requirement: found '', expected: ',', or identifier".into()),
            ("x in (=)".into(), "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("x=(a)".into(), "unable to parse requirement: found '(', expected: identifier".into()),
            // Keys: the nil field path of Kubernetes.
            ("-x".into(), format!("unable to parse requirement: <nil>: Invalid value: \"-x\": name part {NAME_REGEX}")),
            (
                "app:web".into(),
                format!("unable to parse requirement: <nil>: Invalid value: \"app:web\": name part {NAME_REGEX}"),
            ),
            ("/x".into(), "unable to parse requirement: <nil>: Invalid value: \"/x\": prefix part must be non-empty".into()),
            (
                "Example.com/x".into(),
                "unable to parse requirement: <nil>: Invalid value: \"Example.com/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
            ),
            (
                "a/b/c".into(),
                format!(
                    "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key {NAME_REGEX} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
            ),
            (
                long.clone(),
                format!("unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 bytes"),
            ),
            // Values: path `values[i][key]`; `>`/`<` also `values[i]`.
            (
                format!("x={long}"),
                format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes"),
            ),
            ("x=-a".into(), format!("unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE_REGEX}")),
            // The index is into the sorted values: `-b` sorts before `a`.
            (
                "x in (a,-b)".into(),
                format!("unable to parse requirement: values[0][x]: Invalid value: \"-b\": {VALUE_REGEX}"),
            ),
            (
                "x in (a,b-)".into(),
                format!("unable to parse requirement: values[1][x]: Invalid value: \"b-\": {VALUE_REGEX}"),
            ),
            (
                "x>a".into(),
                "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
            ),
            (
                "x<".into(),
                "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
            ),
            (
                "x>99999999999999999999".into(),
                "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer".into(),
            ),
            // Negative bounds are integers but not label values.
            ("x>-1".into(), format!("unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_REGEX}")),
            ("x>+1".into(), format!("unable to parse requirement: values[0][x]: Invalid value: \"+1\": {VALUE_REGEX}")),
            (
                "x>-a".into(),
                format!(
                    "unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_REGEX}]"
                ),
            ),
            // The first bad requirement in input order is reported.
            ("b=-1,a=-1".into(), format!("unable to parse requirement: values[0][b]: Invalid value: \"-1\": {VALUE_REGEX}")),
        ];
        for (input, message) in cases {
            let err = LabelSelector::parse(&input).expect_err(&input);
            assert_eq!(err.to_string(), message, "{input:?}");
        }
    }

    #[test]
    fn label_selector_matching() {
        let labels = json!({"app": "web", "tier": "front", "n": "5", "empty": "", "bad": 1});
        let labels = labels.as_object().unwrap();
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("app", true),
            ("!app", false),
            ("missing", false),
            ("!missing", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=web", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("missing=x", false),
            ("app in (web,db)", true),
            ("app in (db)", false),
            ("app notin (web)", false),
            ("app notin (db)", true),
            ("missing in (x)", false),
            ("missing notin (x)", true),
            ("n>4", true),
            ("n>5", false),
            ("n<6", true),
            ("n<5", false),
            ("app>1", false),
            ("missing<1", false),
            ("empty", true),
            ("empty=", true),
            ("empty in ()", true),
            ("missing=", false),
            ("app=web,tier=front", true),
            ("app=web,tier=back", false),
            // A non-string label value counts as absent.
            ("bad", false),
            ("!bad", true),
        ];
        for (input, want) in cases {
            let selector = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(selector.matches(labels), *want, "{input:?}");
        }
        assert!(LabelSelector::parse("!x").unwrap().matches(&Map::new()));
    }

    #[test]
    fn label_requirements_are_exposed() {
        let selector = LabelSelector::parse("y in (b,a),x").unwrap();
        let reqs: Vec<(&str, LabelOperator, &[String])> =
            selector.requirements().iter().map(|r| (r.key(), r.operator(), r.values())).collect();
        assert_eq!(
            reqs,
            vec![
                ("x", LabelOperator::Exists, &[][..]),
                ("y", LabelOperator::In, &["a".to_owned(), "b".to_owned()][..])
            ]
        );
    }

    /// `(selector, [(field, op, value)])` in Kubernetes' order (terms sorted as text).
    type FieldParse = (&'static str, &'static [(&'static str, FieldOperator, &'static str)]);

    #[test]
    fn field_selectors_that_parse() {
        use FieldOperator::{Equals as Eq, NotEquals as Ne};
        let cases: &[FieldParse] = &[
            ("", &[]),
            ("metadata.name=foo", &[("metadata.name", Eq, "foo")]),
            ("metadata.name==foo", &[("metadata.name", Eq, "foo")]),
            ("metadata.name!=foo", &[("metadata.name", Ne, "foo")]),
            ("b=1,a=2,a!=3", &[("a", Ne, "3"), ("a", Eq, "2"), ("b", Eq, "1")]),
            (r"a=x\,y", &[("a", Eq, "x,y")]),
            (r"a=x\=y", &[("a", Eq, "x=y")]),
            (r"a=x\\y", &[("a", Eq, r"x\y")]),
            (r"a=x\\,b=y", &[("a", Eq, r"x\"), ("b", Eq, "y")]),
            ("a=", &[("a", Eq, "")]),
            ("a==", &[("a", Eq, "")]),
            ("a!=", &[("a", Ne, "")]),
            ("=b", &[("", Eq, "b")]),
            // Both sides empty: dropped.
            ("=", &[]),
            ("!=,==,a=b", &[("a", Eq, "b")]),
            (",a=b,", &[("a", Eq, "b")]),
            // Nothing is trimmed.
            (" a = b ", &[(" a ", Eq, " b ")]),
            ("a=!b", &[("a", Eq, "!b")]),
            ("spec.ünï=çødé", &[("spec.ünï", Eq, "çødé")]),
        ];
        for (input, want) in cases {
            let selector = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            let got: Vec<(&str, FieldOperator, &str)> =
                selector.requirements().iter().map(|r| (r.field.as_str(), r.op, r.value.as_str())).collect();
            assert_eq!(got, want.to_vec(), "{input:?}");
            assert_eq!(selector.is_empty(), want.is_empty(), "{input:?}");
            // Printing and parsing again gives the same requirements.
            assert_eq!(FieldSelector::parse(&selector.to_string()).unwrap(), selector, "{input:?}");
        }
        assert_eq!(FieldSelector::parse(r"b=x\,y,a!=1").unwrap().to_string(), r"a!=1,b=x\,y");
    }

    #[test]
    fn field_selectors_that_fail() {
        let cases: &[(&str, &str)] = &[
            ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
            ("a=b,foo", "invalid selector: 'a=b,foo'; can't understand 'foo'"),
            // Terms are sorted before parsing: `a` is reported, not `z`.
            ("z,a", "invalid selector: 'z,a'; can't understand 'a'"),
            ("a=b=c", "invalid field selector: unescaped character in value: 61"),
            ("a===b", "invalid field selector: unescaped character in value: 61"),
            ("a!==b", "invalid field selector: unescaped character in value: 61"),
            (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
            (r"a=b\", r"invalid field selector: invalid escape sequence: \"),
        ];
        for (input, message) in cases {
            let err = FieldSelector::parse(input).expect_err(input);
            assert_eq!(err.to_string(), *message, "{input:?}");
        }
    }

    #[test]
    fn field_selector_matching() {
        let object = json!({"metadata": {"name": "foo", "namespace": "ns"}, "spec": {"n": "3"}});
        let get = |path: &str| -> Option<String> {
            let pointer = format!("/{}", path.replace('.', "/"));
            object.pointer(&pointer).and_then(Value::as_str).map(str::to_owned)
        };
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("metadata.name=foo", true),
            ("metadata.name==foo", true),
            ("metadata.name=bar", false),
            ("metadata.name!=bar", true),
            ("metadata.name!=foo", false),
            ("metadata.name=foo,metadata.namespace=ns", true),
            ("metadata.name=foo,metadata.namespace=other", false),
            // A missing field is the empty string.
            ("status.phase=", true),
            ("status.phase!=", false),
            ("status.phase=Running", false),
            ("status.phase!=Running", true),
        ];
        for (input, want) in cases {
            let selector = FieldSelector::parse(input).unwrap();
            assert_eq!(selector.matches(get), *want, "{input:?}");
        }
    }

    #[test]
    fn field_selector_fields() {
        let selector = FieldSelector::parse("spec.x=1,metadata.name=a,spec.x!=2").unwrap();
        assert_eq!(selector.fields().collect::<Vec<_>>(), ["metadata.name", "spec.x", "spec.x"]);
    }
}
