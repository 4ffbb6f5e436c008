//! Query parameters of a request, percent-decoded as Go's `url.ParseQuery` reads them.

/// Query parameters, percent-decoded (`+` is a space, as Go's `url.ParseQuery` reads it).
#[derive(Debug, Clone, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        let pairs = query
            .unwrap_or("")
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect();
        Query(pairs)
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// `key` as a boolean (`true`/`1`), false when absent.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True"))
    }

    /// Drops every value of the given keys.
    pub fn remove(&mut self, keys: &[&str]) {
        self.0.retain(|(k, _)| !keys.contains(&k.as_str()));
    }

    /// All values of `key` (repeated parameters such as `dryRun`).
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(x) => {
                        out.push(x);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test code")]
mod tests {
    use super::*;

    #[test]
    fn query() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&dryRun=All&watch=1&bad=%zz&end=%4"));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert_eq!(q.get("limit"), Some("5"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("bad"), Some("%zz"));
        assert_eq!(q.get("end"), Some("%4"));
        assert_eq!(q.get("missing"), None);
    }
}
