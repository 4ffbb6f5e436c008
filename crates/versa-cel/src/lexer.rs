//! The CEL lexer: source text to tokens, following the lexical grammar of the CEL language
//! definition (cel-spec `doc/langdef.md`, "Syntax").
//!
//! String and bytes literals are decoded here, with every escape the language defines
//! (`\a \b \f \n \r \t \v \\ \' \" \` \?`, `\xHH`, `\uHHHH`, `\UHHHHHHHH`, octal `\NNN`), raw
//! (`r'...'`) and triple-quoted (`'''...'''`, `"""..."""`) forms and the `b` prefix. Numbers
//! are kept as text; the parser folds a leading `-` into them and reports out-of-range values.
//! Backtick-quoted identifiers are lexed as cel-go lexes them, for the parser to refuse.

use crate::ast::Location;
use crate::error::CompileError;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    /// A backtick-quoted identifier (`` `a-b` ``, cel-go's `ESC_IDENTIFIER`), with its quotes:
    /// lexed as cel-go lexes it, refused by the parser as Kubernetes' environment refuses it.
    EscIdent(String),
    /// Decimal or hexadecimal digits of an int literal (the `0x` prefix kept).
    Int(String),
    /// Digits of a uint literal, without the `u` suffix.
    Uint(String),
    Double(String),
    Str(String),
    Bytes(Vec<u8>),
    True,
    False,
    Null,
    In,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Bang,
    EqEq,
    NotEq,
    Less,
    LessEq,
    Greater,
    GreaterEq,
    AndAnd,
    OrOr,
    Eof,
}

impl Tok {
    /// The token as cel-go's ANTLR error messages quote it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) | Tok::EscIdent(s) | Tok::Int(s) | Tok::Double(s) => s.clone(),
            Tok::Uint(s) => format!("{s}u"),
            Tok::Str(_) => "<string>".into(),
            Tok::Bytes(_) => "<bytes>".into(),
            Tok::True => "true".into(),
            Tok::False => "false".into(),
            Tok::Null => "null".into(),
            Tok::In => "in".into(),
            Tok::LParen => "(".into(),
            Tok::RParen => ")".into(),
            Tok::LBracket => "[".into(),
            Tok::RBracket => "]".into(),
            Tok::LBrace => "{".into(),
            Tok::RBrace => "}".into(),
            Tok::Dot => ".".into(),
            Tok::Comma => ",".into(),
            Tok::Colon => ":".into(),
            Tok::Question => "?".into(),
            Tok::Plus => "+".into(),
            Tok::Minus => "-".into(),
            Tok::Star => "*".into(),
            Tok::Slash => "/".into(),
            Tok::Percent => "%".into(),
            Tok::Bang => "!".into(),
            Tok::EqEq => "==".into(),
            Tok::NotEq => "!=".into(),
            Tok::Less => "<".into(),
            Tok::LessEq => "<=".into(),
            Tok::Greater => ">".into(),
            Tok::GreaterEq => ">=".into(),
            Tok::AndAnd => "&&".into(),
            Tok::OrOr => "||".into(),
            Tok::Eof => "<EOF>".into(),
        }
    }
}

/// A token and the byte offset where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub offset: usize,
}

/// Splits `src` into tokens, ending with [`Tok::Eof`]. `locate` turns a byte offset into a
/// location for the error.
pub(crate) fn lex(src: &str, locate: &dyn Fn(usize) -> Location) -> Result<Vec<Token>, CompileError> {
    let mut lx = Lexer { src, bytes: src.as_bytes(), pos: 0, out: Vec::new() };
    lx.run().map_err(|(offset, msg)| CompileError::new(locate(offset), format!("Syntax error: {msg}")))?;
    Ok(lx.out)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    out: Vec<Token>,
}

type LexResult<T> = Result<T, (usize, String)>;

impl Lexer<'_> {
    fn peek(&self, n: usize) -> Option<u8> {
        self.bytes.get(self.pos + n).copied()
    }

    fn push(&mut self, tok: Tok, offset: usize) {
        self.out.push(Token { tok, offset });
    }

    fn recognition_error(&self, start: usize) -> (usize, String) {
        let end = self.src[start..].chars().next().map_or(start, |c| start + c.len_utf8());
        let text = self.src.get(start..end.max(self.pos.min(self.src.len()))).unwrap_or("");
        (start, format!("token recognition error at: '{text}'"))
    }

    fn run(&mut self) -> LexResult<()> {
        while let Some(c) = self.peek(0) {
            let start = self.pos;
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.pos += 1,
                b'/' if self.peek(1) == Some(b'/') => {
                    while let Some(c) = self.peek(0) {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                b'0'..=b'9' => self.number()?,
                b'.' if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => self.number()?,
                b'\'' | b'"' => self.string(start, false, false)?,
                b'`' => self.escaped_ident(start)?,
                c if c == b'_' || c.is_ascii_alphabetic() => {
                    while self.peek(0).is_some_and(|c| c == b'_' || c.is_ascii_alphanumeric()) {
                        self.pos += 1;
                    }
                    let word = &self.src[start..self.pos];
                    let quote_follows = matches!(self.peek(0), Some(b'\'' | b'"'));
                    let lower = word.to_ascii_lowercase();
                    if quote_follows && matches!(lower.as_str(), "r" | "b" | "rb" | "br") {
                        self.string(start, lower.contains('r'), lower.contains('b'))?;
                        continue;
                    }
                    let tok = match word {
                        "true" => Tok::True,
                        "false" => Tok::False,
                        "null" => Tok::Null,
                        "in" => Tok::In,
                        _ => Tok::Ident(word.to_owned()),
                    };
                    self.push(tok, start);
                }
                _ => {
                    let two = (c, self.peek(1));
                    let (tok, len) = match two {
                        (b'=', Some(b'=')) => (Tok::EqEq, 2),
                        (b'!', Some(b'=')) => (Tok::NotEq, 2),
                        (b'<', Some(b'=')) => (Tok::LessEq, 2),
                        (b'>', Some(b'=')) => (Tok::GreaterEq, 2),
                        (b'&', Some(b'&')) => (Tok::AndAnd, 2),
                        (b'|', Some(b'|')) => (Tok::OrOr, 2),
                        (b'<', _) => (Tok::Less, 1),
                        (b'>', _) => (Tok::Greater, 1),
                        (b'!', _) => (Tok::Bang, 1),
                        (b'(', _) => (Tok::LParen, 1),
                        (b')', _) => (Tok::RParen, 1),
                        (b'[', _) => (Tok::LBracket, 1),
                        (b']', _) => (Tok::RBracket, 1),
                        (b'{', _) => (Tok::LBrace, 1),
                        (b'}', _) => (Tok::RBrace, 1),
                        (b'.', _) => (Tok::Dot, 1),
                        (b',', _) => (Tok::Comma, 1),
                        (b':', _) => (Tok::Colon, 1),
                        (b'?', _) => (Tok::Question, 1),
                        (b'+', _) => (Tok::Plus, 1),
                        (b'-', _) => (Tok::Minus, 1),
                        (b'*', _) => (Tok::Star, 1),
                        (b'/', _) => (Tok::Slash, 1),
                        (b'%', _) => (Tok::Percent, 1),
                        _ => return Err(self.recognition_error(start)),
                    };
                    self.pos += len;
                    self.push(tok, start);
                }
            }
        }
        self.push(Tok::Eof, self.src.len());
        Ok(())
    }

    /// `` '`' (LETTER | DIGIT | '_' | '.' | '-' | '/' | ' ')+ '`' ``. What does not match is a
    /// recognition error quoting the text up to and including the first character that fails.
    fn escaped_ident(&mut self, start: usize) -> LexResult<()> {
        self.pos += 1;
        while self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric() || b"_.-/ ".contains(&c)) {
            self.pos += 1;
        }
        if self.peek(0) == Some(b'`') && self.pos > start + 1 {
            self.pos += 1;
            self.push(Tok::EscIdent(self.src[start..self.pos].to_owned()), start);
            return Ok(());
        }
        let end = self.src[self.pos..].chars().next().map_or(self.pos, |c| self.pos + c.len_utf8());
        Err((start, format!("token recognition error at: '{}'", &self.src[start..end])))
    }

    /// `DIGIT+ ('.' DIGIT+)? EXPONENT? | '.' DIGIT+ EXPONENT? | DIGIT+ EXPONENT` for doubles,
    /// `DIGIT+ | 0x HEX+` with an optional `u`/`U` for ints.
    fn number(&mut self) -> LexResult<()> {
        let start = self.pos;
        if self.peek(0) == Some(b'0') && matches!(self.peek(1), Some(b'x' | b'X')) {
            self.pos += 2;
            let digits_start = self.pos;
            while self.peek(0).is_some_and(|c| c.is_ascii_hexdigit()) {
                self.pos += 1;
            }
            if self.pos == digits_start {
                return Err(self.recognition_error(start));
            }
            let text = self.src[start..self.pos].to_owned();
            if matches!(self.peek(0), Some(b'u' | b'U')) {
                self.pos += 1;
                self.push(Tok::Uint(text), start);
            } else {
                self.push(Tok::Int(text), start);
            }
            return Ok(());
        }
        let mut is_double = false;
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.peek(0) == Some(b'.') && self.peek(1).is_some_and(|c| c.is_ascii_digit()) {
            is_double = true;
            self.pos += 1;
            while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        if matches!(self.peek(0), Some(b'e' | b'E')) {
            let mut n = 1;
            if matches!(self.peek(1), Some(b'+' | b'-')) {
                n = 2;
            }
            if self.peek(n).is_some_and(|c| c.is_ascii_digit()) {
                is_double = true;
                self.pos += n;
                while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
            }
        }
        let text = self.src[start..self.pos].to_owned();
        if is_double {
            self.push(Tok::Double(text), start);
        } else if matches!(self.peek(0), Some(b'u' | b'U')) {
            self.pos += 1;
            self.push(Tok::Uint(text), start);
        } else {
            self.push(Tok::Int(text), start);
        }
        Ok(())
    }

    /// A quoted literal starting at `self.pos` (the quote); `start` includes any prefix.
    fn string(&mut self, start: usize, raw: bool, bytes: bool) -> LexResult<()> {
        let q = self.bytes[self.pos];
        let triple = self.peek(1) == Some(q) && self.peek(2) == Some(q);
        self.pos += if triple { 3 } else { 1 };
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek(0) else {
                return Err(self.recognition_error(start));
            };
            if c == q && (!triple || (self.peek(1) == Some(q) && self.peek(2) == Some(q))) {
                self.pos += if triple { 3 } else { 1 };
                break;
            }
            if !triple && (c == b'\n' || c == b'\r') {
                return Err(self.recognition_error(start));
            }
            if c == b'\\' && !raw {
                self.escape(start, bytes, &mut out)?;
                continue;
            }
            if c == b'\\' && raw {
                // A raw string keeps the backslash, but `\'` still does not end it.
                out.push(c);
                self.pos += 1;
                if let Some(n) = self.peek(0)
                    && (n == q || n == b'\\')
                {
                    out.push(n);
                    self.pos += 1;
                }
                continue;
            }
            out.push(c);
            self.pos += 1;
        }
        if bytes {
            self.push(Tok::Bytes(out), start);
        } else {
            // Only escapes could have produced invalid UTF-8, and string escapes are decoded to
            // chars, so this never fails on a `&str` source; report it as a lexical error anyway.
            match String::from_utf8(out) {
                Ok(s) => self.push(Tok::Str(s), start),
                Err(_) => return Err(self.recognition_error(start)),
            }
        }
        Ok(())
    }

    fn hex(&mut self, start: usize, n: usize) -> LexResult<u32> {
        let mut v: u32 = 0;
        for _ in 0..n {
            let d = self.peek(0).and_then(|c| (c as char).to_digit(16)).ok_or_else(|| self.recognition_error(start))?;
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    fn escape(&mut self, start: usize, bytes: bool, out: &mut Vec<u8>) -> LexResult<()> {
        self.pos += 1; // the backslash
        let Some(c) = self.peek(0) else {
            return Err(self.recognition_error(start));
        };
        let simple = match c {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' | b'\'' | b'"' | b'`' | b'?' => Some(c),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            self.pos += 1;
            return Ok(());
        }
        let code: u32 = match c {
            b'x' | b'X' => {
                self.pos += 1;
                self.hex(start, 2)?
            }
            b'u' | b'U' if bytes => return Err(self.recognition_error(start)),
            b'u' => {
                self.pos += 1;
                self.hex(start, 4)?
            }
            b'U' => {
                self.pos += 1;
                self.hex(start, 8)?
            }
            b'0'..=b'3' => {
                let mut v = 0u32;
                for _ in 0..3 {
                    match self.peek(0) {
                        Some(d @ b'0'..=b'7') => v = v * 8 + u32::from(d - b'0'),
                        _ => return Err(self.recognition_error(start)),
                    }
                    self.pos += 1;
                }
                v
            }
            _ => return Err(self.recognition_error(start)),
        };
        if bytes {
            // `\x` and octal escapes in bytes literals are single bytes (both are <= 0xff).
            out.push((code & 0xff) as u8);
        } else {
            let ch = char::from_u32(code).ok_or_else(|| self.recognition_error(start))?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        Ok(())
    }
}
