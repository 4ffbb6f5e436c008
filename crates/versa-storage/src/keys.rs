//! Key layout. Every key starts with the installation's prefix (default `/registry`), so several
//! versa installations can share one etcd; below it, `<group>/<plural>/` and then
//! `<namespace>/<name>` or `<name>`. Prefix scans always end in `/` so that `foos` never
//! matches `foosball`.

/// Builds keys under one installation prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Default for Keys {
    fn default() -> Self {
        Keys::new("/registry")
    }
}

impl Keys {
    /// Keys under `prefix` (a trailing `/` is ignored).
    pub fn new(prefix: &str) -> Self {
        Keys { prefix: prefix.trim_end_matches('/').to_string() }
    }

    /// The installation prefix, without a trailing `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The prefix of every object of a resource: `<prefix>/<group>/<plural>/`.
    pub fn resource(&self, group: &str, plural: &str) -> String {
        self.join(&[group, plural, ""])
    }

    /// The prefix of a resource's objects in one namespace: `<prefix>/<group>/<plural>/<ns>/`.
    pub fn namespace(&self, group: &str, plural: &str, namespace: &str) -> String {
        self.join(&[group, plural, namespace, ""])
    }

    /// The key of one object; `namespace` is `None` for cluster-scoped resources.
    pub fn object(&self, group: &str, plural: &str, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) => self.join(&[group, plural, ns, name]),
            None => self.join(&[group, plural, name]),
        }
    }

    /// The prefix and `parts`, each after a `/`, in one allocation (every request makes a key:
    /// `format!` took as long as the store's read of it).
    fn join(&self, parts: &[&str]) -> String {
        let mut key = String::with_capacity(self.prefix.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>());
        key.push_str(&self.prefix);
        for part in parts {
            key.push('/');
            key.push_str(part);
        }
        key
    }
}

/// The smallest key greater than every key that starts with `prefix` (etcd's range end for a
/// prefix), or `None` when no such key exists (the prefix is empty or all `0xff`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let keys = Keys::new("/tenant-a/");
        assert_eq!(keys.resource("stable.example.com", "crontabs"), "/tenant-a/stable.example.com/crontabs/");
        assert_eq!(keys.object("g", "p", Some("ns"), "n"), "/tenant-a/g/p/ns/n");
        assert_eq!(keys.object("g", "p", None, "n"), "/tenant-a/g/p/n");
        assert_eq!(keys.namespace("g", "p", "ns"), "/tenant-a/g/p/ns/");
        assert_eq!(Keys::default().prefix(), "/registry");
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"/a/"), Some(b"/a0".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
