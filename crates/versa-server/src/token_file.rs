//! kube-apiserver's static token file (`--token-auth-file`): CSV records
//! `token,user,uid[,"group1,group2"]` read once at start, as kube's `tokenfile.NewCSV` reads
//! them with Go's `encoding/csv` — quoted fields (`""` is a quote, newlines allowed inside),
//! any number of fields per record, blank lines skipped, no comments; a record with fewer than
//! three fields stops the start with kube's message; an empty token is skipped and a repeated
//! token replaces the earlier one (kube warns of both). Requests present the token as
//! `Authorization: Bearer TOKEN`; a bearer token the file does not hold is a failed
//! authentication (401), not an anonymous request.
//!
//! Input safety: the file is the admin's own, read at start; its size is bounded only by memory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::auth::{AuthError, Authenticated, Authenticator, Credentials, MaybeBoxed, UserInfo, now};

/// Errors reading a token file; the texts are kube-apiserver's.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("open {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("token file '{path}' must have at least 3 columns (token, user name, user uid), found {found}")]
    Columns { path: PathBuf, found: usize },
    /// Go's `csv.ParseError` text.
    /// Go's `csv.ParseError` text; `record` is `record on line N; ` when the record began on an
    /// earlier line.
    #[error("{record}parse error on line {line}, column {column}: {what}")]
    Parse { record: String, line: usize, column: usize, what: &'static str },
}

/// The users of a token file, by token (each with `system:authenticated` added, as kube's
/// authenticator chain adds it).
#[derive(Debug, Default)]
pub struct TokenFileAuthenticator {
    tokens: HashMap<String, Arc<UserInfo>>,
}

impl TokenFileAuthenticator {
    /// Reads the token file at `path`.
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| TokenFileError::Open { path: path.to_path_buf(), source })?;
        Self::parse(path, &text)
    }

    /// Parses a token file's text (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, TokenFileError> {
        let mut tokens = HashMap::new();
        for (number, record) in read_csv(text)?.into_iter().enumerate() {
            if record.len() < 3 {
                return Err(TokenFileError::Columns { path: path.to_path_buf(), found: record.len() });
            }
            if record[0].is_empty() {
                tracing::warn!(file = %path.display(), record = number + 1, "empty token in the token file");
                continue;
            }
            let mut user = UserInfo { name: record[1].clone(), uid: record[2].clone(), ..Default::default() };
            if let Some(groups) = record.get(3) {
                user.groups = groups.split(',').map(str::to_string).collect();
            }
            crate::auth::add_authenticated(&mut user.groups);
            if tokens.insert(record[0].clone(), Arc::new(user)).is_some() {
                tracing::warn!(file = %path.display(), record = number + 1, "duplicate token in the token file");
            }
        }
        Ok(TokenFileAuthenticator { tokens })
    }

    /// The user of `token`, with `system:authenticated` added as kube's authenticator chain does.
    pub fn user(&self, token: &str) -> Option<Arc<UserInfo>> {
        self.tokens.get(token).cloned()
    }
}

/// The bearer token of a request, as kube's bearertoken authenticator reads the header: the
/// scheme `Bearer` (any case), one space, a non-empty token up to the next space.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl Authenticator for TokenFileAuthenticator {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> MaybeBoxed<'a, Authenticated> {
        now(match bearer_token(credentials.headers) {
            None => Ok(None),
            Some(token) => self.user(token).map(Some).ok_or_else(|| AuthError("invalid bearer token".into())),
        })
    }
}

/// Records of CSV text as Go's `encoding/csv` reads them (comma-separated, no comment
/// character, lazy quotes off, `\r\n` read as `\n`).
fn read_csv(text: &str) -> Result<Vec<Vec<String>>, TokenFileError> {
    let text = text.replace("\r\n", "\n");
    let mut records = Vec::new();
    let mut lines = text.split_inclusive('\n').enumerate().peekable();
    while let Some((index, line)) = lines.next() {
        let mut line_number = index + 1;
        let start = line_number;
        let parse_error = |line: usize, column: usize, what: &'static str| TokenFileError::Parse {
            record: if line == start { String::new() } else { format!("record on line {start}; ") },
            line,
            column,
            what,
        };
        if line == "\n" {
            continue;
        }
        let mut line = line.to_string();
        let mut fields = Vec::new();
        let mut pos = 0; // byte offset in `line`
        loop {
            let rest = &line[pos..];
            if !rest.starts_with('"') {
                // An unquoted field runs to the next comma or the end of the line.
                let end = rest.find([',', '\n']).unwrap_or(rest.len());
                let field = &rest[..end];
                if let Some(quote) = field.find('"') {
                    let column = line[..pos + quote].chars().count() + 1;
                    return Err(parse_error(line_number, column, "bare \" in non-quoted-field"));
                }
                fields.push(field.to_string());
                pos += end;
                if line[pos..].starts_with(',') {
                    pos += 1;
                    continue;
                }
                break;
            }
            // A quoted field: `""` is a quote; it may continue on the following lines.
            let mut field = String::new();
            pos += 1;
            loop {
                let rest = &line[pos..];
                match rest.find('"') {
                    Some(q) => {
                        field.push_str(&rest[..q]);
                        pos += q + 1;
                        let after = &line[pos..];
                        if after.starts_with('"') {
                            field.push('"');
                            pos += 1;
                        } else if after.starts_with(',') || after.starts_with('\n') || after.is_empty() {
                            break;
                        } else {
                            // Go names the closing quote's column.
                            let column = line[..pos].chars().count();
                            return Err(parse_error(line_number, column, "extraneous or missing \" in quoted-field"));
                        }
                    }
                    None => {
                        field.push_str(rest);
                        match lines.next() {
                            Some((next_index, next)) => {
                                line_number = next_index + 1;
                                line = next.to_string();
                                pos = 0;
                            }
                            None => {
                                let column = line.chars().count() + 1;
                                return Err(parse_error(
                                    line_number,
                                    column,
                                    "extraneous or missing \" in quoted-field",
                                ));
                            }
                        }
                    }
                }
            }
            fields.push(field);
            if line[pos..].starts_with(',') {
                pos += 1;
                continue;
            }
            break;
        }
        records.push(fields);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases in `tests/data/token_file.yaml`: a file's text and the users it gives by token, or
    /// the start-up error.
    #[test]
    fn token_file_cases() {
        #[derive(serde::Deserialize)]
        struct Case {
            name: String,
            file: String,
            #[serde(default)]
            users: std::collections::BTreeMap<String, Option<User>>,
            #[serde(default)]
            error: Option<String>,
        }
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct User {
            name: String,
            uid: String,
            groups: Vec<String>,
        }
        let text = include_str!("../tests/data/token_file.yaml");
        let cases: Vec<Case> = serde_saphyr::from_str(text).unwrap();
        for case in cases {
            let parsed = TokenFileAuthenticator::parse(Path::new("tokens.csv"), &case.file);
            match (parsed, &case.error) {
                (Err(e), Some(want)) => assert_eq!(&e.to_string(), want, "{}", case.name),
                (Err(e), None) => panic!("{}: {e}", case.name),
                (Ok(_), Some(want)) => panic!("{}: wanted {want}", case.name),
                (Ok(auth), None) => {
                    for (token, want) in &case.users {
                        let got = auth.user(token).map(|u| User {
                            name: u.name.clone(),
                            uid: u.uid.clone(),
                            groups: u.groups.clone(),
                        });
                        assert_eq!(&got, want, "{}: token {token}", case.name);
                    }
                }
            }
        }
    }

    #[test]
    fn bearer_tokens() {
        let cases = [
            ("Bearer abc", Some("abc")),
            ("bearer abc def", Some("abc")),
            ("Bearer  abc", None),
            ("Basic abc", None),
            ("Bearer", None),
        ];
        for (header, want) in cases {
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::AUTHORIZATION, header.parse().unwrap());
            assert_eq!(bearer_token(&headers), want, "{header}");
        }
    }
}
