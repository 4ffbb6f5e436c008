//! Version priority: the order Kubernetes gives to version names (apimachinery
//! `CompareKubeAwareVersionStrings`).
//!
//! Names of the form `v<major>[(alpha|beta)<minor>]` are "kube-like" and rank above all others;
//! among them GA beats beta beats alpha, then the larger major, then the larger minor. Other
//! names rank by plain ascending string order, so `foo1` comes before `foo10`. Discovery lists
//! versions in this order and the first served one is the preferred version.

use std::cmp::Ordering;

/// Stability level of a kube-like version; the derived order is the priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// Compares two version names by priority: `Greater` means `a` has the higher priority and is
/// listed first.
pub fn compare_kube_aware_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        // Non-kube-like names: the smaller string has the higher priority.
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(va), Some(vb)) => {
            va.stability.cmp(&vb.stability).then(va.major.cmp(&vb.major)).then(va.minor.cmp(&vb.minor))
        }
    }
}

/// Sorts version names from the highest priority to the lowest.
pub fn sort_by_version_priority<S: AsRef<str>>(versions: &mut [S]) {
    versions.sort_by(|a, b| compare_kube_aware_versions(b.as_ref(), a.as_ref()));
}

/// A parsed kube-like version.
struct KubeVersion {
    major: u64,
    stability: Stability,
    minor: u64,
}

/// Parses `^v(\d+)(?:(alpha|beta)(\d+))?$`. Numbers that do not fit Go's `int` make the name
/// non-kube-like, as `strconv.Atoi` failing does upstream.
fn parse_kube_version(v: &str) -> Option<KubeVersion> {
    let rest = v.strip_prefix('v')?;
    let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (major, rest) = rest.split_at(digits_end);
    let major = parse_int(major)?;
    if rest.is_empty() {
        return Some(KubeVersion { major, stability: Stability::Ga, minor: 0 });
    }
    let (stability, minor) = if let Some(m) = rest.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else if let Some(m) = rest.strip_prefix("beta") {
        (Stability::Beta, m)
    } else {
        return None;
    };
    if !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(KubeVersion { major, stability, minor: parse_int(minor)? })
}

fn parse_int(digits: &str) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.parse::<u64>().ok().filter(|n| i64::try_from(*n).is_ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn sorts_the_documented_list() {
        // The list from "Versions in CustomResourceDefinitions", shuffled.
        let want = ["v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"];
        let mut got =
            vec!["foo10", "v11alpha2", "v1", "v3beta1", "v12alpha1", "v10", "foo1", "v10beta3", "v2", "v11beta2"];
        sort_by_version_priority(&mut got);
        assert_eq!(got, want);
        let mut reversed: Vec<String> = want.iter().rev().map(|s| s.to_string()).collect();
        sort_by_version_priority(&mut reversed);
        assert_eq!(reversed, want);
    }

    #[test]
    fn compares_pairs() {
        use Ordering::*;
        for (a, b, want) in [
            ("v1", "v1", Equal),
            ("v1", "v1beta1", Greater),
            ("v1beta1", "v1alpha9", Greater),
            ("v2alpha1", "v1", Less),
            ("v1", "foo", Greater),
            ("foo1", "foo10", Greater),
            ("v1beta", "v1alpha1", Less), // "v1beta" is not kube-like
            ("v01", "v1", Equal),         // same numbers: equal rank although the names differ, as upstream
            ("v99999999999999999999", "foo", Less),
            ("V1", "v1", Less),
        ] {
            assert_eq!(compare_kube_aware_versions(a, b), want, "{a} vs {b}");
        }
    }
}
