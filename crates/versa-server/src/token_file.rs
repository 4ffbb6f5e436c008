//! Static bearer tokens from a file, as kube-apiserver's `--token-auth-file` reads it
//! (`k8s.io/apiserver/pkg/authentication/token/tokenfile`): CSV records `token,user,uid` with an
//! optional fourth column of comma-separated groups (quoted when there is more than one:
//! `"devs,ops"`), Go's `encoding/csv` rules (quotes, `""` escapes, blank lines skipped, records of
//! any length), at least three columns a record. A record with an empty token is skipped; of two
//! records with the same token the later wins (kube logs both cases). The file is read once, at
//! start; a file that does not parse stops the start with kube's message.
//!
//! A request's `Authorization: Bearer <token>` naming a token of the file is that user (with
//! `system:authenticated`); one naming no token of the file is a 401.

use std::collections::HashMap;
use std::path::Path;

use crate::auth::{AuthError, Authenticator, BoxFuture, Credentials, UserInfo, add_authenticated};

/// The users of a token file, by token.
#[derive(Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens themselves.
        f.debug_struct("TokenFile").field("tokens", &self.tokens.len()).finish()
    }
}

impl TokenFile {
    /// Reads the file at `path`.
    pub fn read(path: &Path) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("open {}: {e}", path.display()))?;
        TokenFile::parse(&text, &path.display().to_string())
    }

    /// Parses a token file's text (`path` names it in errors).
    pub fn parse(text: &str, path: &str) -> Result<TokenFile, String> {
        let mut tokens = HashMap::new();
        for record in records(text)? {
            if record.len() < 3 {
                return Err(format!(
                    "token file '{path}' must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                ));
            }
            if record[0].is_empty() {
                continue;
            }
            let mut groups: Vec<String> = match record.get(3) {
                Some(groups) => groups.split(',').map(str::to_owned).collect(),
                None => Vec::new(),
            };
            add_authenticated(&mut groups);
            let user = UserInfo { name: record[1].clone(), uid: record[2].clone(), groups, ..Default::default() };
            tokens.insert(record[0].clone(), user);
        }
        Ok(TokenFile { tokens })
    }

    /// The user of `token`, if the file has it.
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }
}

/// The token of an `Authorization: Bearer <token>` header, as kube's bearer-token
/// authenticator reads it (the scheme in any case; nothing for an empty token).
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl Authenticator for TokenFile {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> BoxFuture<'a, Result<Option<UserInfo>, AuthError>> {
        let answer = match bearer_token(credentials.headers) {
            None => Ok(None),
            Some(token) => match self.user(token) {
                Some(user) => Ok(Some(user.clone())),
                None => Err(AuthError("invalid bearer token".into())),
            },
        };
        Box::pin(async move { answer })
    }
}

/// The records of a CSV text as Go's `encoding/csv` reads them with any number of fields a
/// record: `,` between fields, `"`-quoted fields with `""` for a quote (and commas and line
/// breaks inside), `\r\n` or `\n` line ends, blank lines skipped. Errors in Go's words.
fn records(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    while chars.peek().is_some() {
        // A blank line is no record.
        if matches!(chars.peek(), Some('\n')) {
            chars.next();
            line += 1;
            continue;
        }
        if chars.peek() == Some(&'\r') {
            let mut ahead = chars.clone();
            ahead.next();
            if ahead.peek() == Some(&'\n') {
                chars.next();
                chars.next();
                line += 1;
                continue;
            }
        }
        let record_line = line;
        let mut record = Vec::new();
        let mut field = String::new();
        let mut column = 0usize;
        loop {
            match chars.next() {
                None => {
                    record.push(std::mem::take(&mut field));
                    break;
                }
                Some('\n') => {
                    record.push(std::mem::take(&mut field));
                    line += 1;
                    break;
                }
                Some('\r') if chars.peek() == Some(&'\n') => {}
                Some(',') => {
                    column += 1;
                    record.push(std::mem::take(&mut field));
                }
                Some('"') if field.is_empty() => {
                    column += 1;
                    // A quoted field, to its closing quote.
                    loop {
                        match chars.next() {
                            None => {
                                let at = format!("parse error on line {line}, column {}", column + 1);
                                let at = if line == record_line {
                                    at
                                } else {
                                    format!("record on line {record_line}; {at}")
                                };
                                return Err(format!("{at}: extraneous or missing \" in quoted-field"));
                            }
                            Some('"') if chars.peek() == Some(&'"') => {
                                chars.next();
                                field.push('"');
                            }
                            Some('"') => break,
                            Some(c) => {
                                if c == '\n' {
                                    line += 1;
                                }
                                field.push(c);
                            }
                        }
                    }
                    match chars.peek() {
                        None | Some(',' | '\n' | '\r') => {}
                        Some(_) => {
                            return Err(format!(
                                "parse error on line {line}, column {}: extraneous or missing \" in quoted-field",
                                column + 1
                            ));
                        }
                    }
                }
                Some('"') => {
                    return Err(format!(
                        "parse error on line {line}, column {}: bare \" in non-quoted-field",
                        column + 1
                    ));
                }
                Some(c) => {
                    column += 1;
                    field.push(c);
                }
            }
        }
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, uid: &str, groups: &[&str]) -> UserInfo {
        let mut groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        add_authenticated(&mut groups);
        UserInfo { name: name.into(), uid: uid.into(), groups, ..Default::default() }
    }

    /// `(name, file, token, the user it is)`.
    #[test]
    fn files_and_their_users() {
        let cases: &[(&str, &str, &str, Option<UserInfo>)] = &[
            ("three columns", "t1,bob,1001\n", "t1", Some(user("bob", "1001", &[]))),
            ("one group", "t1,bob,1001,devs\n", "t1", Some(user("bob", "1001", &["devs"]))),
            ("quoted groups", "t1,bob,1001,\"devs,ops\"\n", "t1", Some(user("bob", "1001", &["devs", "ops"]))),
            ("extra columns are ignored", "t1,bob,1001,devs,more\n", "t1", Some(user("bob", "1001", &["devs"]))),
            ("blank lines and CRLF", "\n\r\nt1,bob,1001\r\nt2,alice,1002\r\n", "t2", Some(user("alice", "1002", &[]))),
            ("the later of two wins", "t1,bob,1\nt1,carol,2\n", "t1", Some(user("carol", "2", &[]))),
            ("an empty token is skipped", ",bob,1\n", "", None),
            ("a quote inside a quoted field", "t1,\"o\"\"brien\",1\n", "t1", Some(user("o\"brien", "1", &[]))),
            ("spaces are kept", "t1, bob,1\n", "t1", Some(user(" bob", "1", &[]))),
            ("an unknown token", "t1,bob,1\n", "t2", None),
            ("no final newline", "t1,bob,1", "t1", Some(user("bob", "1", &[]))),
        ];
        for (name, text, token, want) in cases {
            let file = TokenFile::parse(text, "tokens.csv").unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(file.user(token), want.as_ref(), "{name}");
        }
    }

    /// `(name, file, kube's error)`.
    #[test]
    fn files_kube_refuses() {
        let cases = [
            (
                "two columns",
                "t1,bob\n",
                "token file 'tokens.csv' must have at least 3 columns (token, user name, user uid), found 2",
            ),
            ("a bare quote", "t1,b\"ob,1\n", "parse error on line 1, column 5: bare \" in non-quoted-field"),
        ];
        for (name, text, want) in cases {
            let err = TokenFile::parse(text, "tokens.csv").err().unwrap_or_else(|| panic!("{name}: parsed"));
            assert_eq!(err, want, "{name}");
        }
    }

    #[test]
    fn bearer_tokens() {
        let headers = |v: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(http::header::AUTHORIZATION, v.parse().unwrap());
            h
        };
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("Bearer ")), None);
        assert_eq!(bearer_token(&headers("Basic abc")), None);
    }
}
