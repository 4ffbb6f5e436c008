//! `kubernetes.Semver` values (kube's `pkg/cel/semver.go`): semantic versions parsed strictly or
//! normalized, compared ignoring build metadata.

use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Alpha(String),
}

/// A semantic version.
#[derive(Clone, Debug)]
pub struct Semver {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pre: Vec<Pre>,
    build: Vec<String>,
}

impl PartialEq for Semver {
    fn eq(&self, other: &Semver) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Semver {
    pub fn compare(&self, o: &Semver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let c = match (a, b) {
                (Pre::Num(x), Pre::Num(y)) => x.cmp(y),
                (Pre::Num(_), Pre::Alpha(_)) => Ordering::Less,
                (Pre::Alpha(_), Pre::Num(_)) => Ordering::Greater,
                (Pre::Alpha(x), Pre::Alpha(y)) => x.cmp(y),
            };
            if c != Ordering::Equal {
                return c;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

impl fmt::Display for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, p) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            match p {
                Pre::Num(n) => write!(f, "{n}")?,
                Pre::Alpha(s) => f.write_str(s)?,
            }
        }
        for (i, b) in self.build.iter().enumerate() {
            write!(f, "{}{b}", if i == 0 { "+" } else { "." })?;
        }
        Ok(())
    }
}

fn numeric(s: &str, what: &str) -> Result<u64, String> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("Invalid character(s) found in {what} number {s:?}"));
    }
    if s.len() > 1 && s.starts_with('0') {
        let cap = format!("{}{}", what[..1].to_uppercase(), &what[1..]);
        return Err(format!("{cap} number must not contain leading zeroes {s:?}"));
    }
    s.parse().map_err(|_| format!("strconv.ParseUint: parsing {s:?}: invalid syntax"))
}

fn alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// blang/semver's `Parse`.
pub fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".into());
    };
    let major = numeric(major, "major")?;
    let minor = numeric(minor, "minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((r, b)) => (r, b.split('.').map(String::from).collect()),
        None => (rest, Vec::new()),
    };
    let (patch, pre_s) = match rest.split_once('-') {
        Some((p, pre)) => (p, Some(pre)),
        None => (rest, None),
    };
    let patch = numeric(patch, "patch")?;
    let mut pre = Vec::new();
    for p in pre_s.map(|p| p.split('.').collect::<Vec<_>>()).unwrap_or_default() {
        if p.is_empty() {
            return Err("Prerelease is empty".into());
        }
        if p.bytes().all(|b| b.is_ascii_digit()) {
            if p.len() > 1 && p.starts_with('0') {
                return Err(format!("Numeric PreRelease version must not contain leading zeroes {p:?}"));
            }
            pre.push(Pre::Num(p.parse().map_err(|_| format!("strconv.ParseUint: parsing {p:?}: value out of range"))?));
        } else if alphanumeric(p) {
            pre.push(Pre::Alpha(p.to_owned()));
        } else {
            return Err(format!("Invalid character(s) found in prerelease {p:?}"));
        }
    }
    for b in &build {
        if b.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !alphanumeric(b) {
            return Err(format!("Invalid character(s) found in build meta data {b:?}"));
        }
    }
    Ok(Semver { major, minor, patch, pre, build })
}

/// Kubernetes' `normalizeAndParse`.
pub fn normalize_and_parse(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(String::from).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.is_empty() || !trimmed.as_bytes()[0].is_ascii_digit() {
                format!("0{trimmed}")
            } else {
                trimmed.to_owned()
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    parse(&parts.join("."))
}
