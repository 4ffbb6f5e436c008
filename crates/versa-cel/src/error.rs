//! Compile errors, printed the way cel-go prints its issues and Kubernetes shows them.
//!
//! A single error reads `ERROR: <input>:1:6: found no matching overload for '_==_' applied to
//! '(int, bool)'`, followed (as in cel-go's `Errors.ToDisplayString`) by the source line and a
//! caret under the column: `\n | self == true\n | .....^`. [`display_errors`] joins several
//! errors with newlines, sorted by location, which is what follows `compilation failed: ` in a
//! definition-validation error.

use std::fmt;

use crate::ast::Location;

/// One parse or check error at a location in the expression.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ERROR: <input>:{}:{}: {message}", location.line, location.column + 1)]
pub struct CompileError {
    /// Line (1-based) and column (0-based, in code points).
    pub location: Location,
    /// cel-go's message, e.g. `undefined field 'x'`.
    pub message: String,
}

impl CompileError {
    pub(crate) fn new(location: Location, message: impl Into<String>) -> CompileError {
        CompileError { location, message: message.into() }
    }

    /// The error with the offending source line and a caret under the column, exactly as
    /// cel-go's `Error.ToDisplayString`: tabs become spaces, multi-byte characters before the
    /// column are marked with a full-width dot, and a multi-byte character at the column with a
    /// full-width caret.
    pub fn display_with_source(&self, source: &str) -> String {
        let mut out = self.to_string();
        let line_idx = self.location.line.saturating_sub(1) as usize;
        if let Some(line) = source.split('\n').nth(line_idx) {
            let snippet = line.replace('\t', " ");
            out.push_str("\n | ");
            out.push_str(&snippet);
            out.push_str("\n | ");
            let mut chars = snippet.chars();
            for _ in 0..self.location.column {
                match chars.next() {
                    Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
                    Some(_) => out.push('.'),
                    None => break,
                }
            }
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => out.push('\u{ff3e}'),
                _ => out.push('^'),
            }
        }
        out
    }
}

/// All errors of one expression, sorted by location and each shown with its source line, joined
/// by newlines (cel-go's `Issues.String()`).
pub fn display_errors(errors: &[CompileError], source: &str) -> String {
    let mut sorted: Vec<&CompileError> = errors.iter().collect();
    sorted.sort_by_key(|e| e.location);
    let shown: Vec<String> = sorted.iter().map(|e| e.display_with_source(source)).collect();
    shown.join("\n")
}

/// The errors of one expression together with its source, displayed as [`display_errors`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileErrors {
    pub source: String,
    pub errors: Vec<CompileError>,
}

impl fmt::Display for CompileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&display_errors(&self.errors, &self.source))
    }
}

impl std::error::Error for CompileErrors {}
