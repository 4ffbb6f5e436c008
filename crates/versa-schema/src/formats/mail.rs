//! `email` as Go's `net/mail.ParseAddress` accepts it: RFC 5322 addresses with display names,
//! quoted strings, comments, groups and RFC 2047 encoded words.

use super::chars::hex_val;

/// `net/mail.ParseAddress` succeeds: one RFC 5322 address — `local@domain`, optionally with a
/// display name (`Name <local@domain>`), a trailing comment, or as a one-member group
/// (`Team: a@b.c;`). Domain literals (`[1.2.3.4]`) are not supported, as in Go.
pub(super) fn is_email(s: &str) -> bool {
    let mut p = MailParser { s: s.as_bytes() };
    let Ok(addrs) = p.parse_address(true) else { return false };
    if !p.skip_cfws() || !p.s.is_empty() {
        return false;
    }
    addrs == 1
}

/// One step of UTF-8 decoding over bytes (the parser slices bytes like Go does, so it can land
/// inside a character; such bytes decode as invalid, as Go's `utf8.DecodeRuneInString`).
enum Rune {
    End,
    Invalid,
    Char(char, usize),
}

fn next_rune(b: &[u8]) -> Rune {
    let Some(&first) = b.first() else { return Rune::End };
    let width = match first {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Rune::Invalid,
    };
    match b.get(..width).map(std::str::from_utf8) {
        Some(Ok(s)) => s.chars().next().map_or(Rune::Invalid, |c| Rune::Char(c, width)),
        _ => Rune::Invalid,
    }
}

struct MailParser<'a> {
    s: &'a [u8],
}

type MailResult<T> = Result<T, ()>;

impl MailParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.first().copied()
    }

    fn consume(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.s = &self.s[1..];
            true
        } else {
            false
        }
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.s = &self.s[1..];
        }
    }

    /// Returns how many addresses were parsed (a group may hold several or none).
    fn parse_address(&mut self, handle_group: bool) -> MailResult<usize> {
        self.skip_space();
        if self.s.is_empty() {
            return Err(());
        }
        // A bare addr-spec is tried first; it restores the input when it fails.
        if self.consume_addr_spec().is_ok() {
            self.skip_space();
            if self.peek() == Some(b'(') {
                self.consume_display_name_comment()?;
            }
            return Ok(1);
        }
        if self.peek() != Some(b'<') {
            self.consume_phrase()?;
        }
        self.skip_space();
        if handle_group && self.consume(b':') {
            return self.consume_group_list();
        }
        if !self.consume(b'<') {
            return Err(());
        }
        self.consume_addr_spec()?;
        if !self.consume(b'>') {
            return Err(());
        }
        Ok(1)
    }

    fn consume_group_list(&mut self) -> MailResult<usize> {
        self.skip_space();
        if self.consume(b';') {
            self.skip_cfws();
            return Ok(0);
        }
        let mut n = 0;
        loop {
            self.skip_space();
            n += self.parse_address(false)?;
            if !self.skip_cfws() {
                return Err(());
            }
            if self.consume(b';') {
                self.skip_cfws();
                return Ok(n);
            }
            if !self.consume(b',') {
                return Err(());
            }
        }
    }

    fn consume_addr_spec(&mut self) -> MailResult<()> {
        let orig = self.s;
        let r = self.consume_addr_spec_inner();
        if r.is_err() {
            self.s = orig;
        }
        r
    }

    fn consume_addr_spec_inner(&mut self) -> MailResult<()> {
        self.skip_space();
        if self.s.is_empty() {
            return Err(());
        }
        if self.peek() == Some(b'"') {
            if self.consume_quoted_string()? == 0 {
                return Err(());
            }
        } else {
            self.consume_atom(true, false)?;
        }
        if !self.consume(b'@') {
            return Err(());
        }
        self.skip_space();
        if self.s.is_empty() {
            return Err(());
        }
        self.consume_atom(true, false)
    }

    fn consume_phrase(&mut self) -> MailResult<()> {
        let mut words = 0;
        loop {
            self.skip_space();
            if self.s.is_empty() {
                break;
            }
            let ok = if self.peek() == Some(b'"') {
                self.consume_quoted_string().is_ok()
            } else {
                let start = self.s;
                match self.consume_atom(true, true) {
                    Ok(()) => {
                        let word = &start[..start.len() - self.s.len()];
                        rfc2047_charset_ok(word)
                    }
                    Err(()) => false,
                }
            };
            if !ok {
                break;
            }
            words += 1;
        }
        if words == 0 { Err(()) } else { Ok(()) }
    }

    /// Returns the number of characters of the unquoted string.
    fn consume_quoted_string(&mut self) -> MailResult<usize> {
        let mut i = 1;
        let mut escaped = false;
        let mut len = 0;
        loop {
            let (c, size) = match next_rune(&self.s[i..]) {
                Rune::End | Rune::Invalid => return Err(()),
                Rune::Char(c, size) => (c, size),
            };
            if escaped {
                if !is_vchar(c) && !is_wsp(c) {
                    return Err(());
                }
                len += 1;
                escaped = false;
            } else if (is_vchar(c) && c != '\\' && c != '"') || is_wsp(c) {
                len += 1;
            } else if c == '"' {
                self.s = &self.s[i + 1..];
                return Ok(len);
            } else if c == '\\' {
                escaped = true;
            } else {
                return Err(());
            }
            i += size;
        }
    }

    fn consume_atom(&mut self, dot: bool, permissive: bool) -> MailResult<()> {
        let mut i = 0;
        loop {
            match next_rune(&self.s[i..]) {
                Rune::Invalid => return Err(()),
                Rune::Char(c, size) if is_atext(c, dot, permissive) => i += size,
                _ => break,
            }
        }
        if i == 0 {
            return Err(());
        }
        let atom = &self.s[..i];
        if !permissive && (atom.starts_with(b".") || atom.ends_with(b".") || atom.windows(2).any(|w| w == b"..")) {
            return Err(());
        }
        self.s = &self.s[i..];
        Ok(())
    }

    fn consume_display_name_comment(&mut self) -> MailResult<()> {
        if !self.consume(b'(') {
            return Err(());
        }
        let start = self.s;
        if !self.consume_comment() {
            return Err(());
        }
        let comment = &start[..start.len() - self.s.len()];
        let ok =
            comment.split(|&b| b == b' ' || b == b'\t' || b == b')').filter(|w| !w.is_empty()).all(rfc2047_charset_ok);
        if ok { Ok(()) } else { Err(()) }
    }

    fn skip_cfws(&mut self) -> bool {
        self.skip_space();
        while self.consume(b'(') {
            if !self.consume_comment() {
                return false;
            }
            self.skip_space();
        }
        true
    }

    /// After `(`: nested comments with backslash escapes; false when unterminated.
    fn consume_comment(&mut self) -> bool {
        let mut depth = 1;
        while !self.s.is_empty() && depth != 0 {
            if self.s[0] == b'\\' && self.s.len() > 1 {
                self.s = &self.s[1..];
            } else if self.s[0] == b'(' {
                depth += 1;
            } else if self.s[0] == b')' {
                depth -= 1;
            }
            self.s = &self.s[1..];
        }
        depth == 0
    }
}

fn is_vchar(c: char) -> bool {
    ('!'..='~').contains(&c) || c as u32 >= 0x80
}

fn is_wsp(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_atext(c: char, dot: bool, permissive: bool) -> bool {
    match c {
        '.' => dot,
        '(' | ')' | '[' | ']' | ';' | '@' | '\\' | ',' => permissive,
        '<' | '>' | '"' | ':' => false,
        _ => is_vchar(c),
    }
}

/// Go's mail parser decodes RFC 2047 encoded words (`=?charset?q?text?=`) in display names and
/// fails the whole address when a well-formed word names a charset other than UTF-8,
/// ISO-8859-1 or US-ASCII. Malformed encoded words are kept as plain text.
fn rfc2047_charset_ok(word: &[u8]) -> bool {
    if word.len() < 8
        || !word.starts_with(b"=?")
        || !word.ends_with(b"?=")
        || word.iter().filter(|&&b| b == b'?').count() != 4
    {
        return true;
    }
    let inner = &word[2..word.len() - 2];
    let mut parts = inner.splitn(3, |&b| b == b'?');
    let (Some(charset), Some(encoding), Some(text)) = (parts.next(), parts.next(), parts.next()) else { return true };
    if charset.is_empty() || encoding.len() != 1 {
        return true;
    }
    let decodes = match encoding[0] {
        b'B' | b'b' => base64_std_decodes(text),
        b'Q' | b'q' => q_decodes(text),
        _ => false,
    };
    if !decodes {
        return true;
    }
    ["utf-8", "iso-8859-1", "us-ascii"].iter().any(|k| charset.eq_ignore_ascii_case(k.as_bytes()))
}

fn base64_std_decodes(text: &[u8]) -> bool {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    engine.decode(text).is_ok()
}

fn q_decodes(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'=' => {
                if i + 2 >= text.len() || hex_val(text[i + 1]).is_none() || hex_val(text[i + 2]).is_none() {
                    return false;
                }
                i += 2;
            }
            b'_' | b' '..=b'~' | b'\n' | b'\r' | b'\t' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}
