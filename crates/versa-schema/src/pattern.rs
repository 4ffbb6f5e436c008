//! `pattern` with Go RE2 semantics on top of the `regex` crate.
//!
//! Kubernetes compiles `pattern` with Go's `regexp` (RE2 syntax, Perl flags). The `regex` crate
//! is the same class of engine but reads the same text differently in places: `\d`, `\w`, `\s`
//! and `\b` are Unicode-aware, `[` inside a class opens a nested class, `&&`/`--`/`~~` are
//! class set operations, `\<` is a word boundary, octal escapes and `\Q...\E` are missing,
//! `(?x)` is accepted, repetition counts are unbounded. So a pattern is never handed to `regex`
//! as written: [`translate`] parses it with Go's grammar (the rules of Go's
//! `regexp/syntax/parse.go`) and prints an equivalent expression in `regex` syntax in which
//! every class is spelled out explicitly and every literal punctuation character is escaped.
//! Patterns Go rejects are rejected with Go's message (`error parsing regexp: missing closing ]:
//! `[a``), which definition validation prints after `must be a valid regular expression, but
//! isn't: `.
//!
//! A [`Pattern`] is compiled once, when a schema is lowered; a pattern that cannot be compiled
//! keeps its error so that definition validation can report it. Compiled expressions are
//! shared process-wide by source text ([`shared`]): published definitions repeat the same
//! patterns (Kubernetes quantities, DNS names, durations) many times, and a compiled `regex` is
//! tens of KiB — most of a lowered schema's bytes before this (issue 41's heap profile).
//!
//! Input safety: patterns come from definition authors. Nesting is limited to Go's 1000, counted
//! repetitions to Go's 1000 (also for products of nested counts, as Go checks), and the compiled
//! program to [`SIZE_LIMIT`] bytes; parsing is iterative except for class bodies, which do not
//! nest in Go syntax.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use regex::{Regex, RegexBuilder};

/// Upper bound on the compiled size of one pattern, passed to `RegexBuilder::size_limit`. Go has
/// no such knob but bounds programs through its own limits; this keeps a hostile definition from
/// pinning memory while leaving room for every pattern Go's limits accept in practice.
pub const SIZE_LIMIT: usize = 16 << 20;

/// Go's maximum nesting depth (`expression nests too deeply`).
const MAX_NESTING: usize = 1000;

/// Go's maximum repetition count, also applied to products of nested counts.
const MAX_REPEAT: u64 = 1000;

/// A compiled `pattern` keyword.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    compiled: Result<Arc<Regex>, String>,
    /// The same pattern as a scan, when it is one character class repeated over the whole
    /// string (see [`ClassRun`]).
    run: Option<ClassRun>,
}

impl Pattern {
    /// Compiles `source` with RE2 semantics.
    pub fn new(source: &str) -> Pattern {
        let compiled = shared(source);
        let run = match &compiled {
            Ok(re) => ClassRun::of(re.as_str()),
            Err(_) => None,
        };
        Pattern { source: source.to_owned(), compiled, run }
    }

    /// The pattern as written in the schema.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The compiled expression, or `None` when the pattern is invalid.
    pub fn regex(&self) -> Option<&Regex> {
        self.compiled.as_ref().ok().map(|r| &**r)
    }

    /// Why the pattern does not compile, if it does not.
    pub fn error(&self) -> Option<&str> {
        self.compiled.as_ref().err().map(String::as_str)
    }

    /// Whether `s` matches (unanchored, as in Go's `MatchString`). An invalid pattern matches
    /// nothing; definition validation refuses such schemas before they are served.
    pub fn is_match(&self, s: &str) -> bool {
        match &self.run {
            Some(run) => run.is_match(s),
            None => self.regex().is_some_and(|r| r.is_match(s)),
        }
    }
}

/// A pattern of the shape `^C{min,max}$` (also `^C+$`, `^C*$`, `^C$`, with capture groups
/// around the repetition): the whole string is `min` to `max` characters of the one class `C`
/// — `^[a-z0-9-]+$`, `^\d+$`, `^[A-Za-z0-9_.]{1,63}$`. That is the commonest shape of CRD
/// patterns, and a scan of the string decides it exactly as the regex engine does, at a
/// fraction of the cost of starting a search.
#[derive(Clone, Debug)]
struct ClassRun {
    /// The ASCII members of `C`, one bit each.
    ascii: [u64; 2],
    /// The ranges of `C` beyond ASCII, sorted.
    wide: Vec<(char, char)>,
    min: u32,
    max: Option<u32>,
}

impl ClassRun {
    /// Recognises the shape in `translated` (the expression handed to `regex`), parsed with
    /// the `regex` crate's default syntax options, as `RegexBuilder` parses it.
    fn of(translated: &str) -> Option<ClassRun> {
        use regex_syntax::hir::{Class, HirKind, Look};
        let hir = regex_syntax::Parser::new().parse(translated).ok()?;
        let HirKind::Concat(parts) = hir.kind() else { return None };
        let [start, body, end] = parts.as_slice() else { return None };
        if !matches!(start.kind(), HirKind::Look(Look::Start)) || !matches!(end.kind(), HirKind::Look(Look::End)) {
            return None;
        }
        let unwrap = |mut h: &regex_syntax::hir::Hir| {
            while let HirKind::Capture(c) = h.kind() {
                h = &c.sub;
            }
            h.clone()
        };
        let body = unwrap(body);
        let (class, min, max) = match body.kind() {
            HirKind::Repetition(r) => (unwrap(&r.sub), r.min, r.max),
            HirKind::Class(_) => (body.clone(), 1, Some(1)),
            _ => return None,
        };
        let HirKind::Class(Class::Unicode(class)) = class.kind() else { return None };
        let mut run = ClassRun { ascii: [0; 2], wide: Vec::new(), min, max };
        for r in class.iter() {
            let (lo, hi) = (r.start(), r.end());
            for c in lo..=hi.min('\x7f') {
                let b = c as u32;
                run.ascii[(b >> 6) as usize] |= 1 << (b & 63);
            }
            if hi > '\x7f' {
                run.wide.push((lo.max('\u{80}'), hi));
            }
        }
        Some(run)
    }

    fn contains(&self, c: char) -> bool {
        let b = c as u32;
        if b < 0x80 {
            self.ascii[(b >> 6) as usize] >> (b & 63) & 1 == 1
        } else {
            self.wide
                .binary_search_by(|&(lo, hi)| {
                    if hi < c {
                        std::cmp::Ordering::Less
                    } else if lo > c {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .is_ok()
        }
    }

    fn is_match(&self, s: &str) -> bool {
        let mut n: u64 = 0;
        for c in s.chars() {
            if !self.contains(c) {
                return false;
            }
            n += 1;
        }
        n >= u64::from(self.min) && self.max.is_none_or(|max| n <= u64::from(max))
    }
}

/// `source` compiled, shared with every other live [`Pattern`] of the same text (a `regex`
/// matches from any number of threads; each keeps its own search cache). Entries of patterns no
/// longer in use are dropped as the table grows, so it holds at most twice what is live.
fn shared(source: &str) -> Result<Arc<Regex>, String> {
    /// The live compiled patterns by text, and the table's size after its last pruning.
    type Table = (HashMap<String, Weak<Regex>>, usize);
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    let table = TABLE.get_or_init(Default::default);
    if let Some(re) = table.lock().ok().and_then(|t| t.0.get(source).and_then(Weak::upgrade)) {
        return Ok(re);
    }
    // Compiled outside the lock: a large pattern takes milliseconds.
    let re = Arc::new(compile(source).map_err(|e| e.to_string())?);
    if let Ok(mut guard) = table.lock() {
        let (map, pruned_at) = &mut *guard;
        map.insert(source.to_owned(), Arc::downgrade(&re));
        if map.len() > 2 * (*pruned_at).max(64) {
            map.retain(|_, weak| weak.strong_count() > 0);
            *pruned_at = map.len();
        }
    }
    Ok(re)
}

/// Why a pattern does not compile.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PatternError {
    /// Go's `regexp.Compile` rejects the pattern.
    #[error(transparent)]
    Syntax(#[from] GoSyntaxError),
    /// The translation exceeds [`SIZE_LIMIT`] (Go's `expression too large`).
    #[error("error parsing regexp: expression too large")]
    TooLarge,
    /// The `regex` crate refuses the translation for another reason.
    #[error("error compiling regexp: {0}")]
    Compile(#[source] regex::Error),
}

/// Compiles a Go RE2 pattern into a `regex::Regex` with the same meaning.
///
/// The error prints Go's `error parsing regexp: <code>: `<expr>`` text when Go would reject the
/// pattern, or `error parsing regexp: expression too large` when the translation exceeds
/// [`SIZE_LIMIT`].
pub fn compile(source: &str) -> Result<Regex, PatternError> {
    let translated = translate(source)?;
    RegexBuilder::new(&translated)
        .size_limit(SIZE_LIMIT)
        // Each Go nesting level becomes at most two levels in the translation.
        .nest_limit(2 * MAX_NESTING as u32 + 10)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => PatternError::TooLarge,
            other => PatternError::Compile(other),
        })
}

/// Why Go's `regexp.Compile` rejects a pattern: one of Go's error codes and the offending text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoSyntaxError {
    /// Go's `ErrorCode` text, e.g. `missing closing ]`.
    pub code: &'static str,
    /// The part of the pattern Go quotes.
    pub expr: String,
}

impl std::fmt::Display for GoSyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

impl std::error::Error for GoSyntaxError {}

const ERR_INVALID_CHAR_RANGE: &str = "invalid character class range";
const ERR_INVALID_ESCAPE: &str = "invalid escape sequence";
const ERR_INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const ERR_INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const ERR_INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const ERR_INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const ERR_MISSING_BRACKET: &str = "missing closing ]";
const ERR_MISSING_PAREN: &str = "missing closing )";
const ERR_MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const ERR_TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const ERR_UNEXPECTED_PAREN: &str = "unexpected )";
const ERR_NESTING_DEPTH: &str = "expression nests too deeply";
const ERR_DUPLICATE_CAPTURE: &str = "duplicate capture group name";

fn err(code: &'static str, expr: &str) -> GoSyntaxError {
    GoSyntaxError { code, expr: expr.to_owned() }
}

/// Go's Unicode general categories (`unicode.Categories`); scripts are checked separately.
const GO_CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl", "No", "P",
    "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// Go's POSIX classes (ASCII only, like the `regex` crate's).
const GO_POSIX: &[&str] = &[
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "word",
    "xdigit",
];

/// The last operand emitted, so a following repetition can be attached to it.
#[derive(Clone, Copy)]
struct Operand {
    start: usize,
    end: usize,
    /// Whether a repetition was already applied (a second one needs a group around it).
    repeated: bool,
    /// Go's repeat budget this operand needs (see `repeat_need`).
    need: u64,
}

struct Frame {
    /// Output offset of the `(`.
    out_start: usize,
    /// Largest repeat need of anything inside the group so far.
    need: u64,
}

/// Translates a Go RE2 pattern into `regex` crate syntax with the same meaning, or returns the
/// error Go's parser reports.
pub fn translate(src: &str) -> Result<String, GoSyntaxError> {
    let mut out = String::with_capacity(src.len() * 2);
    let mut frames: Vec<Frame> = vec![Frame { out_start: 0, need: 0 }];
    let mut names: Vec<&str> = Vec::new();
    let mut last: Option<Operand> = None;
    // Byte offset in `src` where the previous token, if it was a repetition, began.
    let mut last_repeat: Option<usize> = None;
    let mut pos = 0;

    while pos < src.len() {
        let rest = &src[pos..];
        let Some(c) = rest.chars().next() else { break };
        let mut this_repeat: Option<usize> = None;
        match c {
            '(' => {
                if frames.len() > MAX_NESTING {
                    return Err(err(ERR_NESTING_DEPTH, src));
                }
                if rest.starts_with("(?") {
                    let named_begin = if rest.len() > 4 && rest.starts_with("(?P<") {
                        Some(4)
                    } else if rest.len() > 3 && rest.starts_with("(?<") {
                        Some(3)
                    } else {
                        None
                    };
                    if let Some(begin) = named_begin {
                        let Some(end) = rest.find('>') else {
                            return Err(err(ERR_INVALID_NAMED_CAPTURE, rest));
                        };
                        let capture = &rest[..=end];
                        let name = rest.get(begin..end).unwrap_or("");
                        if name.is_empty() || !name.chars().all(|ch| ch == '_' || ch.is_ascii_alphanumeric()) {
                            return Err(err(ERR_INVALID_NAMED_CAPTURE, capture));
                        }
                        if names.contains(&name) {
                            return Err(err(ERR_DUPLICATE_CAPTURE, name));
                        }
                        names.push(name);
                        frames.push(Frame { out_start: out.len(), need: 0 });
                        // Names do not matter for matching and Go's name rules differ from
                        // the `regex` crate's, so the group is emitted unnamed.
                        out.push('(');
                        last = None;
                        pos += end + 1;
                    } else {
                        let (consumed, opens_group, flags) = parse_perl_flags(rest)?;
                        if opens_group {
                            frames.push(Frame { out_start: out.len(), need: 0 });
                            out.push_str("(?");
                            out.push_str(&flags);
                            out.push(':');
                            last = None;
                        } else if !flags.is_empty() {
                            // A flag change is not an operand: a repetition after it still
                            // applies to what came before, as in Go.
                            out.push_str("(?");
                            out.push_str(&flags);
                            out.push(')');
                        }
                        pos += consumed;
                    }
                } else {
                    frames.push(Frame { out_start: out.len(), need: 0 });
                    out.push('(');
                    last = None;
                    pos += 1;
                }
            }
            ')' => {
                if frames.len() == 1 {
                    return Err(err(ERR_UNEXPECTED_PAREN, src));
                }
                let Some(frame) = frames.pop() else { return Err(err(ERR_UNEXPECTED_PAREN, src)) };
                out.push(')');
                last = Some(Operand { start: frame.out_start, end: out.len(), repeated: false, need: frame.need });
                pos += 1;
            }
            '|' => {
                out.push('|');
                last = None;
                pos += 1;
            }
            '^' | '$' | '.' => {
                let start = out.len();
                out.push(c);
                last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
                pos += 1;
            }
            '[' => {
                let start = out.len();
                let used = parse_class(rest, &mut out)?;
                last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
                pos += used;
            }
            '*' | '+' | '?' => {
                let mut len = 1;
                if rest[1..].starts_with('?') {
                    len = 2;
                }
                let op = &rest[..len];
                if let Some(prev) = last_repeat {
                    return Err(err(ERR_INVALID_REPEAT_OP, &src[prev..pos + len]));
                }
                let Some(operand) = last else { return Err(err(ERR_MISSING_REPEAT_ARGUMENT, op)) };
                last = Some(apply_repeat(&mut out, operand, op, operand.need));
                this_repeat = Some(pos);
                pos += len;
            }
            '{' => match parse_repeat(rest) {
                None => {
                    push_literal(&mut out, '{', &mut last);
                    pos += 1;
                }
                Some((min, max, used)) => {
                    let count_text = &rest[..used];
                    if min < 0 || min > MAX_REPEAT as i64 || max > MAX_REPEAT as i64 || (max >= 0 && min > max) {
                        return Err(err(ERR_INVALID_REPEAT_SIZE, count_text));
                    }
                    let mut len = used;
                    if rest[used..].starts_with('?') {
                        len += 1;
                    }
                    if let Some(prev) = last_repeat {
                        return Err(err(ERR_INVALID_REPEAT_OP, &src[prev..pos + len]));
                    }
                    let op = &rest[..len];
                    let Some(operand) = last else { return Err(err(ERR_MISSING_REPEAT_ARGUMENT, op)) };
                    // Go's repeatIsValid: nested counted repetitions may not multiply past 1000.
                    let m = if max >= 0 { max as u64 } else { min as u64 };
                    let need = if m == 0 { 0 } else { m.max(operand.need.saturating_mul(m)) };
                    if (min >= 2 || max >= 2) && need > MAX_REPEAT {
                        return Err(err(ERR_INVALID_REPEAT_SIZE, op));
                    }
                    last = Some(apply_repeat(&mut out, operand, op, need));
                    this_repeat = Some(pos);
                    pos += len;
                }
            },
            '\\' => {
                let used = translate_escape(rest, &mut out, &mut last)?;
                pos += used;
            }
            _ => {
                push_literal(&mut out, c, &mut last);
                pos += c.len_utf8();
            }
        }
        if let (Some(op), Some(frame)) = (last, frames.last_mut()) {
            frame.need = frame.need.max(op.need);
        }
        last_repeat = this_repeat;
    }
    if frames.len() != 1 {
        return Err(err(ERR_MISSING_PAREN, src));
    }
    Ok(out)
}

/// Attaches repetition `op` (Go syntax, which is also `regex` syntax) to `operand`. When
/// something that is not an operand (a flag change) was emitted after it, the repetition is
/// inserted before that; a second repetition on the same operand gets a group, since Go
/// repeats the repetition (`a*(?i)*`).
fn apply_repeat(out: &mut String, operand: Operand, op: &str, need: u64) -> Operand {
    let mut end = operand.end;
    if operand.repeated {
        out.insert(end, ')');
        out.insert_str(operand.start, "(?:");
        end += 4;
    }
    out.insert_str(end, op);
    Operand { start: operand.start, end: end + op.len(), repeated: true, need }
}

/// Go's `parseRepeat`: `{n}`, `{n,}` or `{n,m}` with decimal numbers without leading zeros.
/// Returns (min, max, bytes used) with max -1 for "unbounded" and -1 for a too-large number;
/// `None` when the text is not a repetition (the `{` is then a literal).
fn parse_repeat(s: &str) -> Option<(i64, i64, usize)> {
    let b = s.as_bytes();
    let mut i = 1;
    let min = parse_repeat_int(b, &mut i)?;
    let max;
    match b.get(i) {
        Some(b',') => {
            i += 1;
            if b.get(i) == Some(&b'}') {
                max = -1;
            } else {
                let m = parse_repeat_int(b, &mut i)?;
                max = m;
                if m < 0 {
                    // A number too large to parse makes the whole count invalid.
                    return if b.get(i) == Some(&b'}') { Some((-1, -1, i + 1)) } else { None };
                }
            }
        }
        _ => max = min,
    }
    if b.get(i) != Some(&b'}') {
        return None;
    }
    Some((min, max, i + 1))
}

fn parse_repeat_int(b: &[u8], i: &mut usize) -> Option<i64> {
    let start = *i;
    while *i < b.len() && b[*i].is_ascii_digit() {
        *i += 1;
    }
    let digits = &b[start..*i];
    if digits.is_empty() || (digits.len() >= 2 && digits[0] == b'0') {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if n >= 100_000_000 {
            return Some(-1);
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some(n)
}

/// Go's Perl flag group after `(?`: returns (bytes used, whether a group opens, the flag text
/// to emit in `regex` syntax, canonical so repeated flags do not trip the `regex` parser).
fn parse_perl_flags(s: &str) -> Result<(usize, bool, String), GoSyntaxError> {
    // Net state per flag: Some(true) set, Some(false) cleared, None untouched.
    let mut state: [Option<bool>; 4] = [None; 4];
    const NAMES: [char; 4] = ['i', 'm', 's', 'U'];
    let mut negated = false;
    let mut saw_flag = false;
    let mut pos = 2;
    for c in s[2..].chars() {
        pos += c.len_utf8();
        match c {
            'i' | 'm' | 's' | 'U' => {
                let idx = NAMES.iter().position(|&n| n == c).unwrap_or(0);
                state[idx] = Some(!negated);
                saw_flag = true;
            }
            '-' => {
                if negated {
                    break;
                }
                negated = true;
                saw_flag = false;
            }
            ':' | ')' => {
                if negated && !saw_flag {
                    break;
                }
                let mut on = String::new();
                let mut off = String::new();
                for (idx, st) in state.iter().enumerate() {
                    match st {
                        Some(true) => on.push(NAMES[idx]),
                        Some(false) => off.push(NAMES[idx]),
                        None => {}
                    }
                }
                let mut flags = on;
                if !off.is_empty() {
                    flags.push('-');
                    flags.push_str(&off);
                }
                return Ok((pos, c == ':', flags));
            }
            _ => break,
        }
    }
    Err(err(ERR_INVALID_PERL_OP, &s[..pos.min(s.len())]))
}

/// Pushes a literal character as a new operand.
fn push_literal(out: &mut String, c: char, last: &mut Option<Operand>) {
    let start = out.len();
    push_escaped(out, c);
    *last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
}

/// Writes `c` so that the `regex` crate reads it as that literal character in any context
/// (outside or inside a class, any flags): letters, digits and non-ASCII as themselves,
/// everything else as `\x{..}`.
fn push_escaped(out: &mut String, c: char) {
    if c.is_alphanumeric() || (!c.is_ascii() && !c.is_whitespace() && !c.is_control()) {
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:x}}}", c as u32));
    }
}

/// Writes a literal code point that may be a surrogate (Go accepts `\x{D800}`, which matches
/// nothing in valid UTF-8 text).
fn push_code_point(out: &mut String, cp: u32, last: &mut Option<Operand>) {
    match char::from_u32(cp) {
        Some(c) => push_literal(out, c, last),
        None => {
            let start = out.len();
            out.push_str(r"[^\x{0}-\x{10ffff}]");
            *last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
        }
    }
}

/// The Perl classes, ASCII as in Go: (class body, whether negated).
fn perl_class(c: char) -> Option<(&'static str, bool)> {
    Some(match c {
        'd' => (r"0-9", false),
        'D' => (r"0-9", true),
        's' => (r"\t\n\x0C\r\x20", false),
        'S' => (r"\t\n\x0C\r\x20", true),
        'w' => (r"0-9A-Za-z_", false),
        'W' => (r"0-9A-Za-z_", true),
        _ => return None,
    })
}

/// A backslash sequence outside a class. Returns the bytes used.
fn translate_escape(s: &str, out: &mut String, last: &mut Option<Operand>) -> Result<usize, GoSyntaxError> {
    let mut chars = s[1..].chars();
    let Some(c) = chars.next() else { return Err(err(ERR_TRAILING_BACKSLASH, "")) };
    let assertion = match c {
        'A' => Some(r"\A"),
        'z' => Some(r"\z"),
        // Go's word boundaries are ASCII-only.
        'b' => Some(r"(?-u:\b)"),
        'B' => Some(r"(?-u:\B)"),
        _ => None,
    };
    if let Some(a) = assertion {
        let start = out.len();
        out.push_str(a);
        *last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
        return Ok(2);
    }
    match c {
        'C' => Err(err(ERR_INVALID_ESCAPE, r"\C")),
        'Q' => {
            let body = &s[2..];
            let (lit, used) = match body.find(r"\E") {
                Some(i) => (&body[..i], 2 + i + 2),
                None => (body, s.len()),
            };
            for ch in lit.chars() {
                push_literal(out, ch, last);
            }
            Ok(used)
        }
        'p' | 'P' => {
            let start = out.len();
            let used = unicode_class(s, out)?;
            *last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
            Ok(used)
        }
        _ => {
            if let Some((body, negated)) = perl_class(c) {
                let start = out.len();
                out.push('[');
                if negated {
                    out.push('^');
                }
                out.push_str(body);
                out.push(']');
                *last = Some(Operand { start, end: out.len(), repeated: false, need: 0 });
                return Ok(2);
            }
            let (cp, used) = parse_escape(s)?;
            push_code_point(out, cp, last);
            Ok(used)
        }
    }
}

/// Go's `parseEscape` for single-character escapes: octal, `\x`, C escapes, escaped
/// punctuation. Returns (code point, bytes used).
fn parse_escape(s: &str) -> Result<(u32, usize), GoSyntaxError> {
    let b = s.as_bytes();
    let Some(c) = s[1..].chars().next() else { return Err(err(ERR_TRAILING_BACKSLASH, "")) };
    let after = 1 + c.len_utf8();
    let is_octal = |i: usize| b.get(i).is_some_and(|d| (b'0'..=b'7').contains(d));
    match c {
        '1'..='7' if !is_octal(after) => Err(err(ERR_INVALID_ESCAPE, &s[..after])),
        '0'..='7' => {
            let mut r = c as u32 - '0' as u32;
            let mut i = after;
            for _ in 0..2 {
                if !is_octal(i) {
                    break;
                }
                r = r * 8 + u32::from(b[i] - b'0');
                i += 1;
            }
            Ok((r, i))
        }
        'x' => {
            let bad = |end: usize| err(ERR_INVALID_ESCAPE, &s[..end.min(s.len())]);
            let mut it = s[after..].char_indices();
            let Some((_, first)) = it.next() else { return Err(bad(after)) };
            if first == '{' {
                let mut r: u32 = 0;
                for (i, ch) in it {
                    let end = after + i + ch.len_utf8();
                    if ch == '}' {
                        // `i` counts from the `{`, so 1 means no digits in between.
                        if i == 1 {
                            return Err(bad(end));
                        }
                        return Ok((r, end));
                    }
                    let Some(v) = ch.to_digit(16) else { return Err(bad(end)) };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return Err(bad(end));
                    }
                }
                return Err(bad(s.len()));
            }
            let Some((i2, second)) = it.next() else { return Err(bad(s.len())) };
            let end = after + i2 + second.len_utf8();
            match (first.to_digit(16), second.to_digit(16)) {
                (Some(x), Some(y)) => Ok((x * 16 + y, end)),
                _ => Err(bad(end)),
            }
        }
        'a' => Ok((0x07, after)),
        'f' => Ok((0x0C, after)),
        'n' => Ok((0x0A, after)),
        'r' => Ok((0x0D, after)),
        't' => Ok((0x09, after)),
        'v' => Ok((0x0B, after)),
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c as u32, after)),
        _ => Err(err(ERR_INVALID_ESCAPE, &s[..after])),
    }
}

/// `\pX`, `\p{Name}`, `\PX`, `\p{^Name}`: Go's names only (general categories, scripts,
/// `Any`), written as explicit `gc=`/`sc=` properties so the `regex` crate cannot resolve them
/// to one of its extra properties. Returns the bytes used.
fn unicode_class(s: &str, out: &mut String) -> Result<usize, GoSyntaxError> {
    let mut negated = s.as_bytes().get(1) == Some(&b'P');
    let rest = &s[2..];
    let (seq_len, name) = match rest.chars().next() {
        Some('{') => {
            let Some(end) = s.find('}') else { return Err(err(ERR_INVALID_CHAR_RANGE, s)) };
            (end + 1, s.get(3..end).unwrap_or(""))
        }
        Some(ch) => (2 + ch.len_utf8(), &rest[..ch.len_utf8()]),
        None => (2, ""),
    };
    let seq = &s[..seq_len];
    let mut name = name;
    if let Some(n) = name.strip_prefix('^') {
        negated = !negated;
        name = n;
    }
    let property = if name == "Any" {
        "Any".to_owned()
    } else if GO_CATEGORIES.contains(&name) {
        format!("gc={name}")
    } else if is_go_script_name(name) {
        format!("sc={name}")
    } else {
        return Err(err(ERR_INVALID_CHAR_RANGE, seq));
    };
    out.push_str(if negated { r"\P{" } else { r"\p{" });
    out.push_str(&property);
    out.push('}');
    Ok(seq_len)
}

/// Go spells scripts `Greek`, `Old_Italic`, `SignWriting`: exact case, words joined by `_`.
/// The `regex` crate matches names loosely, so the spelling is checked here and the existence
/// of the script asked of `regex-syntax`.
fn is_go_script_name(name: &str) -> bool {
    let shape_ok = name == "SignWriting"
        || (!name.is_empty()
            && name.split('_').all(|w| {
                let mut cs = w.chars();
                cs.next().is_some_and(|f| f.is_ascii_uppercase()) && cs.all(|c| c.is_ascii_lowercase())
            }));
    shape_ok && regex_syntax::Parser::new().parse(&format!(r"\p{{sc={name}}}")).is_ok()
}

/// Go's `parseClass` on `s` (starting at `[`), writing an explicit `regex` class. Returns the
/// bytes used.
fn parse_class(s: &str, out: &mut String) -> Result<usize, GoSyntaxError> {
    let missing = || err(ERR_MISSING_BRACKET, s);
    let mut pos = 1;
    out.push('[');
    if s[pos..].starts_with('^') {
        out.push('^');
        pos += 1;
    }
    // Go's `]` and `-` are literal when first; the `regex` crate gets them escaped anyway.
    let mut first = true;
    loop {
        let rest = &s[pos..];
        if rest.starts_with(']') && !first {
            pos += 1;
            break;
        }
        first = false;
        // POSIX class: `[:name:]` up to the first `:]`, wherever it is.
        if let Some(after_open) = rest.strip_prefix("[:")
            && let Some(i) = after_open.find(":]")
        {
            let whole = &rest[..i + 4];
            let name = &after_open[..i];
            let bare = name.strip_prefix('^').unwrap_or(name);
            if !GO_POSIX.contains(&bare) {
                return Err(err(ERR_INVALID_CHAR_RANGE, whole));
            }
            out.push_str(whole);
            pos += whole.len();
            continue;
        }
        if rest.starts_with(r"\p") || rest.starts_with(r"\P") {
            pos += unicode_class(rest, out)?;
            continue;
        }
        if let Some(escaped) = rest.strip_prefix('\\')
            && let Some((body, negated)) = escaped.chars().next().and_then(perl_class)
        {
            if negated {
                // A nested negated class, which the `regex` crate unions into the outer one.
                out.push_str("[^");
                out.push_str(body);
                out.push(']');
            } else {
                out.push_str(body);
            }
            pos += 2;
            continue;
        }
        let range_start = pos;
        let (lo, used) = class_char(&s[pos..]).map_err(|e| e.unwrap_or_else(missing))?;
        pos += used;
        let mut hi = lo;
        let rest = &s[pos..];
        if rest.len() >= 2 && rest.starts_with('-') && !rest[1..].starts_with(']') {
            pos += 1;
            let (h, used) = class_char(&s[pos..]).map_err(|e| e.unwrap_or_else(missing))?;
            pos += used;
            if h < lo {
                return Err(err(ERR_INVALID_CHAR_RANGE, &s[range_start..pos]));
            }
            hi = h;
        }
        push_class_range(out, lo, hi);
    }
    out.push(']');
    Ok(pos)
}

/// One class member character (Go's `parseClassChar`): `Err(None)` for "end of pattern".
fn class_char(s: &str) -> Result<(u32, usize), Option<GoSyntaxError>> {
    match s.chars().next() {
        None => Err(None),
        Some('\\') => parse_escape(s).map_err(Some),
        Some(c) => Ok((c as u32, c.len_utf8())),
    }
}

/// Writes `lo-hi` (code points, possibly surrogates from `\x{..}`) as `regex` class items.
fn push_class_range(out: &mut String, lo: u32, hi: u32) {
    // Surrogates never occur in text; drop them from the range.
    let (lo, hi) = (
        if (0xD800..=0xDFFF).contains(&lo) { 0xE000 } else { lo },
        if (0xD800..=0xDFFF).contains(&hi) { 0xD7FF } else { hi },
    );
    if lo > hi {
        return;
    }
    let (Some(l), Some(h)) = (char::from_u32(lo), char::from_u32(hi)) else { return };
    push_escaped(out, l);
    if h != l {
        out.push('-');
        push_escaped(out, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translation_shapes() {
        for (go, rust) in [
            (r"^\d+$", r"^[0-9]+$"),
            (r"[a-z[]", r"[a-z\x{5b}]"),
            (r"a{2}?", r"a{2}?"),
            (r"\Qa.b\E", r"a\x{2e}b"),
            (r"(?i)ab", r"(?i)ab"),
            (r"(?P<n>a)", r"(a)"),
            (r"a(?i)*", r"a*(?i)"),
        ] {
            assert_eq!(translate(go).as_deref(), Ok(rust), "{go}");
        }
    }

    /// The scan of a one-class pattern decides exactly what the regex engine decides.
    #[test]
    fn class_runs_match_as_the_regex_does() {
        let patterns = [
            r"^[a-z]+$",
            r"^[a-z0-9-]*$",
            r"^\d+$",
            r"^[A-Za-z0-9_.]{1,3}$",
            r"(?i)^[a-f]+$",
            r"^.*$",
            r"^\w+$",
            r"^([a-z]+)$",
            r"^[^a-z]{2,}$",
            r"^\pL+$",
            r"^[é-ü]?$",
        ];
        let inputs =
            ["", "a", "abc", "ABC", "a-b", "0", "a.b_c", "abcd", "é", "ü", "héllo", "a\n", "\n", "日本", "a b", "-"];
        for p in patterns {
            let pattern = Pattern::new(p);
            assert!(pattern.run.is_some(), "{p} is a class run");
            let re = pattern.regex().cloned();
            for s in inputs {
                assert_eq!(pattern.is_match(s), re.as_ref().is_some_and(|r| r.is_match(s)), "{p} on {s:?}");
            }
        }
        for p in [r"^[a-z]+", r"[a-z]+$", r"^a[a-z]+$", r"^(ab)+$", r"^[a-z]+\b$"] {
            assert!(Pattern::new(p).run.is_none(), "{p} is not a class run");
        }
    }
}
