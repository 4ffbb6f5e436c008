//! The Kubernetes JSONPath dialect of `additionalPrinterColumns[].jsonPath`, evaluated the way
//! kube-apiserver's Table convertor evaluates it.
//!
//! apiextensions-apiserver parses every column as the client-go template `{<jsonPath>}`
//! (`k8s.io/client-go/util/jsonpath`, `parser.go` and `jsonpath.go`) with missing keys allowed,
//! runs it against the object as decoded by the apiserver (integers as `int64`, other numbers as
//! `float64`) and keeps the first result. This module mirrors that parser and evaluator, quirks
//! included, so that a column shows on versa what it shows on a real cluster:
//!
//! - `.a.b`, `.a\.b` (escaped dot), `['a']`, `[0]`, `[-1]`, `[1:3]`, `[::2]`, `[*]`, `.*`, `..a`
//!   (recursive descent), `[0,2]`/`['a','b']` (unions) and filters
//!   `[?(@.type=="Ready")]`, `[?(@.x)]` (existence), `==`, `!=`, `<`, `<=`, `>`, `>=`.
//! - `['a.b']` is **not** a key containing a dot: client-go re-parses the quoted text as the path
//!   `.a.b`. Write `['a\.b']` or `.a\.b` for such keys (labels like `app.kubernetes.io/name`).
//! - Map iteration (`.*`, `..`, filters over objects) is in sorted key order (Go's `fmtsort`).
//! - A field of a non-object, or of `null`, is simply absent; indexing a non-array, an index out
//!   of range or a bad step is an error, and an error makes the whole column `null`.
//! - Filter comparisons are typed as in Go's `text/template`: values of different kinds never
//!   compare, and a number written in the path is a `float64` while an integer in the object is
//!   an `int64`. So `[?(@.replicas==3)]` does **not** match `replicas: 3` on kube-apiserver,
//!   and does not here either; string and boolean comparisons work as expected.
//!
//! Deliberate limits: `range`/`end` and literals outside a filter are rejected at parse time
//! (they make no sense in a column), and so is a `}` that would close the template early.
//! Input safety: nesting (unions, filters) recurses once per bracket, bounded by
//! [`MAX_NESTING`]; evaluation never recurses deeper than the document.

use std::cmp::Ordering;

use serde_json::Value;

/// How deeply brackets may nest inside one path; deeper paths are refused.
pub const MAX_NESTING: usize = 32;

/// A JSONPath expression that does not parse; `Display` is client-go's message
/// (`unterminated array`, `unrecognized character in action: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

/// Why evaluating a path failed; `Display` is client-go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FindError {
    /// A bare identifier other than `true`/`false` (client-go evaluates none).
    #[error("unrecognized identifier {name}")]
    UnrecognizedIdentifier { name: String },
    /// An index or slice bound outside the array.
    #[error("array index out of bounds: index {index}, length {length}")]
    IndexOutOfBounds { index: i64, length: i64 },
    /// A slice whose start comes after its end.
    #[error("starting index {start} is greater than ending index {end}")]
    StartAfterEnd { start: i64, end: i64 },
    /// A slice step of zero or less.
    #[error("step must be > 0")]
    StepNotPositive,
    /// An index or slice of a value that is not an array; `go_type` is Go's name for its type.
    #[error("{go_type} is not array or slice")]
    NotArray { go_type: &'static str },
    /// A filter side that selects more than one value.
    #[error("can only compare one element at a time")]
    CompareMany,
    /// A filter operator client-go does not know.
    #[error("unrecognized filter operator {op}")]
    UnrecognizedOperator { op: String },
}

/// A parsed JSONPath expression (the inside of one `{...}` template action).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    nodes: Vec<Node>,
}

impl JsonPath {
    /// Parses `path` exactly as client-go parses the template `{path}`.
    pub fn parse(path: &str) -> Result<JsonPath, ParseError> {
        let nodes = parse_action(path, 0).map_err(ParseError)?;
        if let Some(lit) = nodes.iter().find(|n| matches!(n, Node::Literal(_))) {
            return Err(ParseError(format!("unsupported literal {lit:?} outside a filter")));
        }
        Ok(JsonPath { nodes })
    }

    /// All values the path selects in `v`, in client-go's order; empty when nothing matches or
    /// when evaluation fails (kube-apiserver shows an empty cell in both cases).
    pub fn find<'a>(&self, v: &'a Value) -> Vec<&'a Value> {
        self.find_results(v).unwrap_or_default()
    }

    /// Like [`JsonPath::find`], but says why evaluation failed (`array index out of bounds: ...`,
    /// `... is not array or slice`, ...), with client-go's messages.
    pub fn find_results<'a>(&self, v: &'a Value) -> Result<Vec<&'a Value>, FindError> {
        let (items, err) = eval_list(vec![Item::Ref(v)], &self.nodes);
        match err {
            Some(e) => Err(e),
            None => Ok(items
                .into_iter()
                .filter_map(|i| match i {
                    Item::Ref(r) => Some(r),
                    Item::Lit(_) => None,
                })
                .collect()),
        }
    }
}

/// The text client-go's `PrintResults` writes for one result: strings as they are, other
/// scalars as Go's `fmt.Print` shows them, `null` as `<no value>`, and objects and arrays as
/// Go's `encoding/json` writes them (sorted keys, HTML-escaped).
pub fn print_value(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => versa_schema::field::go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::Array(_) | Value::Object(_) => versa_schema::field::go_json(v),
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Field(String),
    Wildcard,
    Recursive,
    Array([Param; 3]),
    Union(Vec<Vec<Node>>),
    Filter(Box<Filter>),
    Literal(Lit),
    /// An identifier other than `true`/`false`; evaluating it is an error, as upstream.
    Identifier(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Vec<Node>,
    right: Vec<Node>,
    op: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

/// Parses the body of one template action. `depth` counts enclosing brackets.
fn parse_action(text: &str, depth: usize) -> Result<Vec<Node>, String> {
    if depth > MAX_NESTING {
        return Err(format!("jsonpath nests more than {MAX_NESTING} levels"));
    }
    let mut p = Parser { input: text, pos: 0, depth };
    let mut nodes = Vec::new();
    p.parse_inside_action(&mut nodes)?;
    // Kept for the life of a resource (its Table columns): no spare capacity.
    nodes.shrink_to_fit();
    Ok(nodes)
}

struct Parser<'s> {
    input: &'s str,
    pos: usize,
    depth: usize,
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(c, ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            let rest = self.rest();
            if rest.is_empty() {
                return Ok(());
            }
            if rest.starts_with('}') {
                return Err("unsupported: '}' closes the jsonpath template early".to_string());
            }
            if rest.starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(cur)?;
                continue;
            }
            let start = self.pos;
            let Some(c) = self.next() else { return Ok(()) };
            match c {
                '\r' | '\n' => return Err("unclosed action".to_string()),
                ' ' | '@' | '$' => {}
                '[' => self.parse_array(cur)?,
                '"' | '\'' => self.parse_quote(cur, start, c)?,
                '.' => self.parse_field(cur),
                '+' | '-' => {
                    self.pos = start;
                    self.parse_number(cur)?;
                }
                c if c.is_numeric() => {
                    self.pos = start;
                    self.parse_number(cur)?;
                }
                c if is_alphanumeric(c) => {
                    self.pos = start;
                    self.parse_identifier(cur)?;
                }
                c => return Err(format!("unrecognized character in action: {}", go_rune(c))),
            }
        }
    }

    /// After a `.`: everything up to the next unescaped terminator. `\` escapes the next
    /// character and is then dropped (every backslash is, as upstream).
    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        let start = self.pos;
        loop {
            let before = self.pos;
            match self.next() {
                Some('\\') => {
                    self.next();
                }
                c if is_terminator(c) => {
                    self.pos = before;
                    break;
                }
                _ => {}
            }
        }
        let value = &self.input[start..self.pos];
        if value == "*" {
            cur.push(Node::Wildcard);
        } else {
            cur.push(Node::Field(value.replace('\\', "")));
        }
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err("invalid multiple recursive descent".to_string());
        }
        self.pos += 2;
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.parse_field(cur);
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        let start = self.pos;
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        while let Some(c) = self.peek() {
            if c != '.' && !c.is_numeric() {
                break;
            }
            self.next();
        }
        let value = &self.input[start..self.pos];
        if let Ok(i) = value.parse::<i64>() {
            cur.push(Node::Literal(Lit::Int(i)));
        } else if let Some(f) = parse_go_float(value) {
            cur.push(Node::Literal(Lit::Float(f)));
        } else {
            return Err(format!("cannot parse number {value}"));
        }
        Ok(())
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        let start = self.pos;
        loop {
            let before = self.pos;
            if is_terminator(self.next()) {
                self.pos = before;
                break;
            }
        }
        let value = &self.input[start..self.pos];
        match value {
            "true" => cur.push(Node::Literal(Lit::Bool(true))),
            "false" => cur.push(Node::Literal(Lit::Bool(false))),
            "range" | "end" => return Err(format!("unsupported: {value} is not allowed in a column jsonPath")),
            _ => cur.push(Node::Identifier(value.to_string())),
        }
        Ok(())
    }

    /// After `[`: up to the first `]`, then a union, a quoted key or a slice.
    fn parse_array(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        let start = self.pos;
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".to_string()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let mut text = &self.input[start..self.pos - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::with_capacity(parts.len());
            for part in parts {
                union.push(parse_action(&format!("[{}]", part.trim_matches(' ')), self.depth + 1)?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }
        // A single-quoted key is re-parsed as a dotted path: `['a.b']` is `.a.b` upstream.
        if let Some(key) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\''))
            && text.len() >= 2
            && !key.contains('\'')
        {
            cur.extend(parse_action(&format!(".{key}"), self.depth + 1)?);
            return Ok(());
        }
        cur.push(Node::Array(parse_slice(text)?));
        Ok(())
    }

    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        self.pos += 3;
        let start = self.pos;
        let (mut begin, mut end, mut pair) = (false, false, '\0');
        loop {
            let Some(c) = self.next() else { return Err("unterminated filter".to_string()) };
            match c {
                '\n' => return Err("unterminated filter".to_string()),
                '"' | '\'' => {
                    if !begin {
                        begin = true;
                        pair = c;
                        continue;
                    }
                    if self.input.as_bytes().get(self.pos.wrapping_sub(2)) != Some(&b'\\') && c == pair {
                        end = true;
                    }
                }
                ')' if begin == end => break,
                _ => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".to_string());
        }
        let text = &self.input[start..self.pos - 2];
        let filter = match split_comparison(text) {
            None => Filter { left: parse_action(text, self.depth + 1)?, right: Vec::new(), op: "exists".to_string() },
            Some((left, op, right)) => Filter {
                left: parse_action(left, self.depth + 1)?,
                right: parse_action(right, self.depth + 1)?,
                op: op.to_string(),
            },
        };
        cur.push(Node::Filter(Box::new(filter)));
        Ok(())
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, start: usize, quote: char) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".to_string()),
                Some(c) if c == quote && self.input.as_bytes().get(self.pos.wrapping_sub(2)) != Some(&b'\\') => break,
                Some(_) => {}
            }
        }
        let value = &self.input[start..self.pos];
        let s = unquote_extended(value).ok_or_else(|| format!("unquote string {value} error invalid syntax"))?;
        cur.push(Node::Literal(Lit::Str(s)));
        Ok(())
    }
}

/// The filter regex `^([^!<>=]+)([!<>=]+)(.+?)$`: a non-empty left side, a run of operator
/// characters, a non-empty right side. `None` means an existence filter.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let op_len = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    let right = &after[op_len..];
    if right.is_empty() {
        return None;
    }
    Some((&text[..op_start], &after[..op_len], right))
}

/// The slice regex `^(-?\d*)(:-?\d*)?(:-?\d*)?$` and upstream's defaulting of its groups.
fn parse_slice(text: &str) -> Result<[Param; 3], String> {
    let groups: Vec<&str> = text.split(':').collect();
    let well_formed = groups.len() <= 3
        && groups.iter().all(|g| {
            let digits = g.strip_prefix('-').unwrap_or(g);
            digits.bytes().all(|b| b.is_ascii_digit())
        });
    if !well_formed {
        return Err(format!("invalid array index {text}"));
    }
    let mut params = [Param::default(); 3];
    for i in 0..3 {
        match groups.get(i) {
            // Group 0 is always present (possibly empty); groups 1 and 2 only after a colon.
            Some(g) if i == 0 && g.is_empty() => {}
            Some(g) if i > 0 && g.is_empty() => params[i].known = false,
            Some(g) => {
                params[i].known = true;
                params[i].value = g.parse::<i64>().map_err(|_| format!("array index {g} is not a number"))?;
            }
            None if i == 1 => {
                params[1] = Param { value: params[0].value.wrapping_add(1), known: true, derived: true };
            }
            None => {}
        }
    }
    Ok(params)
}

/// Go's `strconv.ParseFloat` on the characters `parse_number` collects (sign, digits, dots).
fn parse_go_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || body == "." || body.matches('.').count() > 1 {
        return None;
    }
    s.parse::<f64>().ok()
}

/// client-go's `UnquoteExtend`: `strconv.Unquote` that also accepts single quotes.
fn unquote_extended(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if s.len() < 2 || !s.ends_with(quote) || (quote != '"' && quote != '\'') {
        return None;
    }
    let inner = &s[1..s.len() - 1];
    if !inner.contains('\\') && !inner.contains(quote) {
        return Some(inner.to_string());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            '\'' | '"' if e == quote => out.push(e),
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = (0..n).filter_map(|_| chars.next()).collect();
                if hex.len() != n {
                    return None;
                }
                let code = u32::from_str_radix(&hex, 16).ok()?;
                if e == 'x' {
                    // `\xHH` is a raw byte upstream; only ASCII bytes keep the string valid UTF-8.
                    if code > 0x7f {
                        return None;
                    }
                }
                out.push(char::from_u32(code)?);
            }
            '0'..='7' => {
                let mut code = e.to_digit(8)?;
                for _ in 0..2 {
                    code = code * 8 + chars.next()?.to_digit(8)?;
                }
                if code > 0x7f {
                    return None;
                }
                out.push(char::from_u32(code)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Go's `%#U` rendering of a rune, used in the "unrecognized character" message.
fn go_rune(c: char) -> String {
    format!("U+{:04X} '{c}'", c as u32)
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/// One value flowing through evaluation: a part of the document, or a literal of the path.
#[derive(Debug, Clone)]
enum Item<'a> {
    Ref(&'a Value),
    Lit(Lit),
}

/// Values and, on failure, the error; like Go's `evalList`, a failure still returns the values
/// the failing step produced (filters look at them).
type Eval<'a> = (Vec<Item<'a>>, Option<FindError>);

fn eval_list<'a>(input: Vec<Item<'a>>, nodes: &[Node]) -> Eval<'a> {
    let mut cur = input;
    for node in nodes {
        let (next, err) = walk(cur, node);
        if err.is_some() {
            return (next, err);
        }
        cur = next;
    }
    (cur, None)
}

fn walk<'a>(input: Vec<Item<'a>>, node: &Node) -> Eval<'a> {
    match node {
        Node::Field(name) => (eval_field(&input, name), None),
        Node::Wildcard => (input.iter().flat_map(children).collect(), None),
        Node::Recursive => (eval_recursive(&input), None),
        Node::Array(params) => eval_array(input, params),
        Node::Union(lists) => {
            let mut out = Vec::new();
            for list in lists {
                let (items, err) = eval_list(input.clone(), list);
                if err.is_some() {
                    return (input, err);
                }
                out.extend(items);
            }
            (out, None)
        }
        Node::Filter(filter) => eval_filter(input, filter),
        // A string literal yields itself once, whatever the input; other literals once per input.
        Node::Literal(lit @ Lit::Str(_)) => (vec![Item::Lit(lit.clone())], None),
        Node::Literal(lit) => (input.iter().map(|_| Item::Lit(lit.clone())).collect(), None),
        Node::Identifier(name) => (input, Some(FindError::UnrecognizedIdentifier { name: name.clone() })),
    }
}

fn eval_field<'a>(input: &[Item<'a>], name: &str) -> Vec<Item<'a>> {
    input
        .iter()
        .filter_map(|item| match item {
            Item::Ref(Value::Object(m)) => m.get(name).map(Item::Ref),
            _ => None,
        })
        .collect()
}

/// The members of an array, or the values of an object in sorted key order; nothing else has
/// children (upstream's `iterHelper`).
fn children<'a>(item: &Item<'a>) -> Vec<Item<'a>> {
    match item {
        Item::Ref(Value::Array(a)) => a.iter().map(Item::Ref).collect(),
        Item::Ref(Value::Object(m)) => {
            let mut entries: Vec<(&String, &'a Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            entries.into_iter().map(|(_, v)| Item::Ref(v)).collect()
        }
        _ => Vec::new(),
    }
}

fn eval_recursive<'a>(input: &[Item<'a>]) -> Vec<Item<'a>> {
    let mut out = Vec::new();
    for item in input {
        let kids = children(item);
        if !kids.is_empty() {
            out.push(item.clone());
            out.extend(eval_recursive(&kids));
        }
    }
    out
}

fn eval_array<'a>(input: Vec<Item<'a>>, params: &[Param; 3]) -> Eval<'a> {
    let mut out = Vec::new();
    for item in &input {
        let arr = match item {
            Item::Ref(Value::Null) => continue,
            Item::Ref(Value::Array(a)) => a,
            other => {
                let err = FindError::NotArray { go_type: go_type_name(other) };
                return (input, Some(err));
            }
        };
        let len = i64::try_from(arr.len()).unwrap_or(i64::MAX);
        let [p0, p1, p2] = *params;
        let mut start = if p0.known { p0.value } else { 0 };
        if start < 0 {
            start += len;
        }
        let mut end = if p1.known { p1.value } else { len };
        if end < 0 || (end == 0 && p1.derived) {
            end += len;
        }
        if start == end {
            // Upstream returns at once here, skipping any further inputs.
            return (out, None);
        }
        if start >= len || start < 0 {
            return (input, Some(FindError::IndexOutOfBounds { index: start, length: len }));
        }
        if end > len || end < 0 {
            return (input, Some(FindError::IndexOutOfBounds { index: end - 1, length: len }));
        }
        if start > end {
            return (input, Some(FindError::StartAfterEnd { start, end }));
        }
        let step = if p2.known {
            if p2.value <= 0 {
                return (input, Some(FindError::StepNotPositive));
            }
            usize::try_from(p2.value).unwrap_or(usize::MAX)
        } else {
            1
        };
        let (s, e) = (usize::try_from(start).unwrap_or(0), usize::try_from(end).unwrap_or(0));
        out.extend(arr[s..e].iter().step_by(step).map(Item::Ref));
    }
    (out, None)
}

fn eval_filter<'a>(input: Vec<Item<'a>>, filter: &Filter) -> Eval<'a> {
    let mut out = Vec::new();
    for item in &input {
        // Arrays and objects are filtered member by member; anything else (null included) is
        // tested as a single element.
        let elements = match item {
            Item::Ref(Value::Array(_) | Value::Object(_)) => children(item),
            other => vec![other.clone()],
        };
        for element in elements {
            // Missing keys are allowed, so an error on the left is ignored (its partial values
            // still count), while an error on the right fails the filter.
            let (lefts, _) = eval_list(vec![element.clone()], &filter.left);
            let (rights, rerr) = eval_list(vec![element.clone()], &filter.right);
            if rerr.is_some() {
                return (input, rerr);
            }
            if lefts.is_empty() {
                continue;
            }
            if lefts.len() > 1 {
                return (input, Some(FindError::CompareMany));
            }
            if filter.op == "exists" {
                out.push(element);
                continue;
            }
            if rights.is_empty() {
                continue;
            }
            if rights.len() > 1 {
                return (input, Some(FindError::CompareMany));
            }
            match compare(&filter.op, &lefts[0], &rights[0]) {
                Ok(true) => out.push(element),
                Ok(false) => {}
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

/// A comparable value, typed as Go's `text/template` sees it.
#[derive(Debug, PartialEq)]
enum Scalar<'s> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'s str),
    /// `null`, objects and arrays: "invalid type for comparison".
    Invalid,
}

fn scalar<'s>(item: &'s Item<'_>) -> Scalar<'s> {
    match item {
        Item::Ref(Value::Bool(b)) => Scalar::Bool(*b),
        Item::Ref(Value::Number(n)) => match n.as_i64() {
            Some(i) => Scalar::Int(i),
            None => Scalar::Float(n.as_f64().unwrap_or(0.0)),
        },
        Item::Ref(Value::String(s)) => Scalar::Str(s),
        Item::Ref(_) => Scalar::Invalid,
        // Integers written in the path are Go `int`s, which the evaluator turns into `float64`.
        Item::Lit(Lit::Int(i)) => Scalar::Float(*i as f64),
        Item::Lit(Lit::Float(f)) => Scalar::Float(*f),
        Item::Lit(Lit::Bool(b)) => Scalar::Bool(*b),
        Item::Lit(Lit::Str(s)) => Scalar::Str(s),
    }
}

/// `Some(ordering)` when both sides are of one comparable kind; `None` is Go's "incompatible
/// types" / "invalid type" error, which the evaluator ignores (the element does not match).
fn ordering(l: &Scalar<'_>, r: &Scalar<'_>) -> Option<Ordering> {
    match (l, r) {
        (Scalar::Int(a), Scalar::Int(b)) => Some(a.cmp(b)),
        (Scalar::Float(a), Scalar::Float(b)) => a.partial_cmp(b),
        (Scalar::Str(a), Scalar::Str(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn equal(l: &Scalar<'_>, r: &Scalar<'_>) -> Option<bool> {
    match (l, r) {
        (Scalar::Bool(a), Scalar::Bool(b)) => Some(a == b),
        _ => ordering(l, r).map(|o| o == Ordering::Equal),
    }
}

fn compare(op: &str, l: &Item<'_>, r: &Item<'_>) -> Result<bool, FindError> {
    let (l, r) = (scalar(l), scalar(r));
    let less = || ordering(&l, &r).map(|o| o == Ordering::Less);
    let pass = match op {
        "==" => equal(&l, &r),
        "!=" => equal(&l, &r).map(|e| !e),
        "<" => less(),
        "<=" => match less() {
            Some(true) => Some(true),
            Some(false) => equal(&l, &r),
            None => None,
        },
        ">" => match less() {
            Some(true) => Some(false),
            Some(false) => equal(&l, &r).map(|e| !e),
            None => None,
        },
        ">=" => less().map(|lt| !lt),
        other => return Err(FindError::UnrecognizedOperator { op: other.to_owned() }),
    };
    Ok(pass.unwrap_or(false))
}

/// The Go type name upstream puts in "... is not array or slice".
fn go_type_name(item: &Item<'_>) -> &'static str {
    match item {
        Item::Ref(Value::Object(_)) => "map[string]interface {}",
        Item::Ref(Value::Bool(_)) | Item::Lit(Lit::Bool(_)) => "bool",
        Item::Ref(Value::String(_)) | Item::Lit(Lit::Str(_)) => "string",
        Item::Ref(Value::Number(n)) if n.is_i64() => "int64",
        Item::Ref(_) | Item::Lit(Lit::Float(_)) => "float64",
        Item::Lit(Lit::Int(_)) => "int",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "metadata": {"name": "a", "labels": {"app": "web", "app.kubernetes.io/name": "shop"}},
            "spec": {
                "cronSpec": "* * * * */5",
                "replicas": 3,
                "ratio": 0.5,
                "items": ["x", "y", "z"],
                "a": {"b": "nested"},
                "a.b": "dotted",
                "nothing": null,
                "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
            },
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "ok": true},
                {"type": "Synced", "status": "False", "ok": false},
            ]},
        })
    }

    /// (path, expected results) — results as JSON, `Err(..)` for evaluation errors.
    #[test]
    fn finds_what_client_go_finds() {
        let d = doc();
        let cases: &[(&str, Result<Value, &str>)] = &[
            (".spec.cronSpec", Ok(json!(["* * * * */5"]))),
            (".metadata.labels.app", Ok(json!(["web"]))),
            (".spec.missing", Ok(json!([]))),
            (".spec.cronSpec.deeper", Ok(json!([]))),
            (".spec.nothing", Ok(json!([null]))),
            (".spec.nothing.x", Ok(json!([]))),
            (".spec.items[0]", Ok(json!(["x"]))),
            (".spec.items[-1]", Ok(json!(["z"]))),
            (".spec.items[-2]", Ok(json!(["y"]))),
            (".spec.items[1:]", Ok(json!(["y", "z"]))),
            (".spec.items[:2]", Ok(json!(["x", "y"]))),
            (".spec.items[::2]", Ok(json!(["x", "z"]))),
            (".spec.items[*]", Ok(json!(["x", "y", "z"]))),
            (".spec.items[]", Ok(json!(["x"]))),
            (".spec.items[0,2]", Ok(json!(["x", "z"]))),
            (".spec.items[3]", Err("array index out of bounds: index 3, length 3")),
            (".spec.items[2:1]", Err("starting index 2 is greater than ending index 1")),
            (".spec.items[0:3:0]", Err("step must be > 0")),
            (".spec.a[0]", Err("map[string]interface {} is not array or slice")),
            (".spec.a.*", Ok(json!(["nested"]))),
            (".spec['a.b']", Ok(json!(["nested"]))),
            (".spec['a\\.b']", Ok(json!(["dotted"]))),
            (".spec.a\\.b", Ok(json!(["dotted"]))),
            (".metadata.labels.app\\.kubernetes\\.io/name", Ok(json!(["shop"]))),
            (".spec['cronSpec','replicas']", Ok(json!(["* * * * */5", 3]))),
            (".status.conditions[?(@.type==\"Ready\")].status", Ok(json!(["True"]))),
            (".status.conditions[?(@.type=='Synced')].status", Ok(json!(["False"]))),
            (".status.conditions[?(@.type != \"Ready\")].type", Ok(json!(["Synced"]))),
            (".status.conditions[?(@.ok==true)].type", Ok(json!(["Ready"]))),
            (".status.conditions[?(@.ok)].type", Ok(json!(["Ready", "Synced"]))),
            (".status.conditions[?(@.missing)].type", Ok(json!([]))),
            (".status.conditions[?(@.type<\"S\")].type", Ok(json!(["Ready"]))),
            // A number in the path is a float64, an integer in the object an int64: no match.
            (".spec.ports[?(@.port==80)].name", Ok(json!([]))),
            (".spec.ports[?(@.port>=80)].name", Ok(json!([]))),
            (".spec.ports[?(@.port=='80')].name", Ok(json!([]))),
            ("..port", Ok(json!([80, 443]))),
            (".spec.ports[*].name", Ok(json!(["http", "https"]))),
            (".status.conditions[?(@.type=!\"R\")].type", Err("unrecognized filter operator =!")),
            (".spec.foo bar", Err("unrecognized identifier bar")),
        ];
        for (path, want) in cases {
            let jp = JsonPath::parse(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let got =
                jp.find_results(&d).map(|v| Value::Array(v.into_iter().cloned().collect())).map_err(|e| e.to_string());
            assert_eq!(got, want.clone().map_err(str::to_string), "{path}");
            if want.is_err() {
                assert!(jp.find(&d).is_empty(), "{path}");
            }
        }
    }

    #[test]
    fn float_filters_compare_floats() {
        let d = json!({"xs": [{"v": 0.5, "n": "a"}, {"v": 1.5, "n": "b"}]});
        let jp = JsonPath::parse(".xs[?(@.v>1.0)].n").unwrap();
        assert_eq!(jp.find(&d), vec![&json!("b")]);
    }

    #[test]
    fn rejects_what_client_go_rejects() {
        let cases = [
            (".spec.items[", "unterminated array"),
            (".spec.items[a]", "invalid array index a"),
            (".spec.items[-]", "array index - is not a number"),
            (".spec.items[?(@.a==\"b\"", "unterminated filter"),
            (".spec.items[?(@.a==\"b\")", "unclosed array expect ]"),
            (".spec #", "unrecognized character in action: U+0023 '#'"),
            ("....a", "invalid multiple recursive descent"),
            (".a}{.b", "unsupported: '}' closes the jsonpath template early"),
            (".a \"x", "unterminated quoted string"),
            ("{range .items}", "unrecognized character in action: U+007B '{'"),
            ("range", "unsupported: range is not allowed in a column jsonPath"),
            (".a \"x\"", "unsupported literal Literal(Str(\"x\")) outside a filter"),
        ];
        for (path, want) in cases {
            assert_eq!(JsonPath::parse(path).map(|_| ()).map_err(|e| e.to_string()), Err(want.to_string()), "{path}");
        }
        let deep = format!(".a{}", "[?(@.b".repeat(40));
        assert!(JsonPath::parse(&deep).is_err());
    }

    #[test]
    fn prints_like_go() {
        let cases = [
            (json!("text"), "text"),
            (json!(null), "<no value>"),
            (json!(true), "true"),
            (json!(42), "42"),
            (json!(-7), "-7"),
            (json!(1.5), "1.5"),
            (json!(3.0), "3"),
            (json!(100000.0), "100000"),
            (json!(1000000.0), "1e+06"),
            (json!(123456789.5), "1.234567895e+08"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!({"b": 1, "a": "<x>"}), r#"{"a":"\u003cx\u003e","b":1}"#),
            (json!([1.0, 1e21, 1e-7, "a\"b"]), r#"[1,1e+21,1e-7,"a\"b"]"#),
        ];
        for (v, want) in cases {
            assert_eq!(print_value(&v), want, "{v}");
        }
    }
}
