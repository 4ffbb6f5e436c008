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

/// Why a text is not a semantic version (blang/semver's and Kubernetes' messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SemverError {
    /// The text is empty.
    #[error("Version string empty")]
    Empty,
    /// The text has fewer than three dot-separated parts.
    #[error("No Major.Minor.Patch elements found")]
    NoCore,
    /// A core number holds something other than digits.
    #[error("Invalid character(s) found in {part} number {text:?}")]
    NumberCharacters { part: Part, text: String },
    /// A core number starts with a zero.
    #[error("{} number must not contain leading zeroes {text:?}", part.capitalised())]
    NumberLeadingZero { part: Part, text: String },
    /// A core number is empty or does not fit 64 bits.
    #[error("strconv.ParseUint: parsing {text:?}: invalid syntax")]
    NumberSyntax { text: String },
    /// A pre-release identifier is empty.
    #[error("Prerelease is empty")]
    EmptyPrerelease,
    /// A numeric pre-release identifier starts with a zero.
    #[error("Numeric PreRelease version must not contain leading zeroes {text:?}")]
    PrereleaseLeadingZero { text: String },
    /// A numeric pre-release identifier does not fit 64 bits.
    #[error("strconv.ParseUint: parsing {text:?}: value out of range")]
    PrereleaseRange { text: String },
    /// A pre-release identifier holds a character outside `[0-9A-Za-z-]`.
    #[error("Invalid character(s) found in prerelease {text:?}")]
    PrereleaseCharacters { text: String },
    /// A build identifier is empty.
    #[error("Build meta data is empty")]
    EmptyBuild,
    /// A build identifier holds a character outside `[0-9A-Za-z-]`.
    #[error("Invalid character(s) found in build meta data {text:?}")]
    BuildCharacters { text: String },
    /// A version normalized from fewer than three parts has pre-release or build data.
    #[error("short version cannot contain PreRelease/Build meta data")]
    ShortWithMetadata,
}

/// The three numbers of a version's core, named as blang/semver names them in its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The first number.
    Major,
    /// The second number.
    Minor,
    /// The third number.
    Patch,
}

impl Part {
    fn capitalised(self) -> &'static str {
        match self {
            Part::Major => "Major",
            Part::Minor => "Minor",
            Part::Patch => "Patch",
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Major => "major",
            Part::Minor => "minor",
            Part::Patch => "patch",
        })
    }
}

fn numeric(s: &str, part: Part) -> Result<u64, SemverError> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SemverError::NumberCharacters { part, text: s.to_owned() });
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(SemverError::NumberLeadingZero { part, text: s.to_owned() });
    }
    s.parse().map_err(|_| SemverError::NumberSyntax { text: s.to_owned() })
}

fn alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// blang/semver's `Parse`.
pub fn parse(s: &str) -> Result<Semver, SemverError> {
    if s.is_empty() {
        return Err(SemverError::Empty);
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err(SemverError::NoCore);
    };
    let major = numeric(major, Part::Major)?;
    let minor = numeric(minor, Part::Minor)?;
    let (rest, build) = match rest.split_once('+') {
        Some((r, b)) => (r, b.split('.').map(String::from).collect()),
        None => (rest, Vec::new()),
    };
    let (patch, pre_s) = match rest.split_once('-') {
        Some((p, pre)) => (p, Some(pre)),
        None => (rest, None),
    };
    let patch = numeric(patch, Part::Patch)?;
    let mut pre = Vec::new();
    for p in pre_s.map(|p| p.split('.').collect::<Vec<_>>()).unwrap_or_default() {
        if p.is_empty() {
            return Err(SemverError::EmptyPrerelease);
        }
        if p.bytes().all(|b| b.is_ascii_digit()) {
            if p.len() > 1 && p.starts_with('0') {
                return Err(SemverError::PrereleaseLeadingZero { text: p.to_owned() });
            }
            pre.push(Pre::Num(p.parse().map_err(|_| SemverError::PrereleaseRange { text: p.to_owned() })?));
        } else if alphanumeric(p) {
            pre.push(Pre::Alpha(p.to_owned()));
        } else {
            return Err(SemverError::PrereleaseCharacters { text: p.to_owned() });
        }
    }
    for b in &build {
        if b.is_empty() {
            return Err(SemverError::EmptyBuild);
        }
        if !alphanumeric(b) {
            return Err(SemverError::BuildCharacters { text: b.clone() });
        }
    }
    Ok(Semver { major, minor, patch, pre, build })
}

/// Kubernetes' `normalizeAndParse`.
pub fn normalize_and_parse(s: &str) -> Result<Semver, SemverError> {
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
            return Err(SemverError::ShortWithMetadata);
        }
        while parts.len() < 3 {
            parts.push("0".into());
        }
    }
    parse(&parts.join("."))
}
