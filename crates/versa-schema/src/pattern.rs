//! `pattern` with Go RE2 semantics on top of the `regex` crate.
//!
//! Kubernetes compiles `pattern` with Go's `regexp` (RE2 syntax). The `regex` crate is the same
//! class of engine but differs in details (Unicode `\d`, nested classes, ...). A [`Pattern`] is
//! compiled once, when a schema is lowered; a pattern that cannot be compiled keeps its error so
//! that definition validation can report it.

use regex::Regex;

/// A compiled `pattern` keyword.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    compiled: Result<Regex, String>,
}

impl Pattern {
    /// Compiles `source` with RE2 semantics.
    pub fn new(source: &str) -> Pattern {
        Pattern { source: source.to_owned(), compiled: compile(source) }
    }

    /// The pattern as written in the schema.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The compiled expression, or `None` when the pattern is invalid.
    pub fn regex(&self) -> Option<&Regex> {
        self.compiled.as_ref().ok()
    }

    /// Why the pattern does not compile, if it does not.
    pub fn error(&self) -> Option<&str> {
        self.compiled.as_ref().err().map(String::as_str)
    }

    /// Whether `s` matches (unanchored, as in Go's `MatchString`). An invalid pattern matches
    /// nothing; definition validation refuses such schemas before they are served.
    pub fn is_match(&self, s: &str) -> bool {
        self.regex().is_some_and(|r| r.is_match(s))
    }
}

/// Compiles a Go RE2 pattern into a `regex::Regex` with the same meaning.
pub fn compile(source: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(source)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| e.to_string())
}
