//! Strings for generated samples that their schema accepts: one of a few valid values for
//! each `format` Kubernetes checks ([`for_format`]), and for a `pattern` a string it matches
//! ([`for_pattern`]), built from the pattern's syntax tree as `regex-syntax` parses the
//! expression the schema compiled (Go's syntax already translated, see
//! `versa_schema::pattern`): a literal as written, a class by one of its characters (letters
//! and digits first), a repetition at its minimum (at least once, when it may), one branch of
//! an alternation; anchors and other assertions add nothing. What comes out is checked against
//! the pattern itself; when it does not match (an assertion a built string does not satisfy)
//! there is no string, and the sample that needed one is left to fail validation (the checks
//! then say which versions no sample could be made for).

use regex_syntax::hir::{Class, Hir, HirKind};
use versa_schema::formats::Format;
use versa_schema::pattern::Pattern;

use super::Rng;

/// A valid value of `format`, one of a few (`rng` picks).
pub(super) fn for_format(format: Format, rng: &mut Rng) -> String {
    let n = 1 + rng.below(8);
    match format {
        Format::BsonObjectId => format!("5f0c6d2e8f1a4b7e9c3d000{n}"),
        Format::Uri => format!("https://example.com/pizza/{n}"),
        Format::Email => format!("chef{n}@example.com"),
        Format::Hostname => format!("oven-{n}.example.com"),
        Format::Ipv4 => format!("192.0.2.{n}"),
        Format::Ipv6 => format!("2001:db8::{n}"),
        Format::Cidr => format!("10.{n}.0.0/16"),
        Format::Mac => format!("00:1a:2b:3c:4d:0{n}"),
        Format::Uuid => format!("5f0c6d2e-8f1a-4b7e-9c3d-00000000000{n}"),
        Format::Uuid3 => format!("5f0c6d2e-8f1a-3b7e-9c3d-00000000000{n}"),
        Format::Uuid4 => format!("5f0c6d2e-8f1a-4b7e-9c3d-00000000000{n}"),
        Format::Uuid5 => format!("5f0c6d2e-8f1a-5b7e-9c3d-00000000000{n}"),
        Format::Isbn | Format::Isbn10 => "0306406152".to_owned(),
        Format::Isbn13 => "9780306406157".to_owned(),
        Format::CreditCard => "4111111111111111".to_owned(),
        Format::Ssn => format!("123-45-678{n}"),
        Format::HexColor => format!("#a1b2c{n}"),
        Format::RgbColor => format!("rgb(1, 2, {n})"),
        Format::Byte => ["aGk=", "cGl6emE=", "dG9tYXRv"][rng.below(3) as usize].to_owned(),
        Format::Password => format!("secret-{n}"),
        Format::Date => format!("2024-05-0{n}"),
        Format::Duration => format!("{n}m30s"),
        Format::DateTime => format!("2024-05-06T07:08:0{n}Z"),
        Format::K8sShortName => format!("oven-{n}"),
        Format::K8sLongName => format!("oven-{n}.example.com"),
    }
}

/// A string `pattern` matches, when one can be built (see the module documentation).
pub(super) fn for_pattern(pattern: &Pattern, rng: &mut Rng) -> Option<String> {
    let hir = regex_syntax::Parser::new().parse(pattern.regex()?.as_str()).ok()?;
    // A few tries: alternations and classes are picked at random, and one pick may fail an
    // assertion another satisfies.
    for _ in 0..4 {
        let mut out = String::new();
        if build(&hir, rng, &mut out) && pattern.is_match(&out) {
            return Some(out);
        }
    }
    None
}

/// Appends to `out` a string `hir` matches; false when there is none to build (an empty class,
/// bytes that are not text).
fn build(hir: &Hir, rng: &mut Rng, out: &mut String) -> bool {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => {
                out.push_str(s);
                true
            }
            Err(_) => false,
        },
        HirKind::Class(class) => match pick(class, rng) {
            Some(c) => {
                out.push(c);
                true
            }
            None => false,
        },
        HirKind::Repetition(rep) => {
            // As few as allowed, but once where it may be left out (what an optional part is
            // for); bounded, so that `.{1000}` stays a short string's worth of work.
            let at_least = rep.min.max(1);
            let n = rep.max.map_or(at_least, |max| at_least.min(max)).min(256);
            (0..n).all(|_| build(&rep.sub, rng, out))
        }
        HirKind::Capture(cap) => build(&cap.sub, rng, out),
        HirKind::Concat(parts) => parts.iter().all(|p| build(p, rng, out)),
        HirKind::Alternation(branches) => {
            let first = rng.below(branches.len() as u64) as usize;
            // The picked branch, else the next that can be built.
            (0..branches.len()).any(|i| {
                let mark = out.len();
                let built = build(&branches[(first + i) % branches.len()], rng, out);
                if !built {
                    out.truncate(mark);
                }
                built
            })
        }
    }
}

/// One character of `class`: a lowercase letter, else a digit, else an uppercase letter, else
/// `-`, `_` or `.`, else the first printable one — whichever group the class has first, a
/// random member of it.
fn pick(class: &Class, rng: &mut Rng) -> Option<char> {
    let contains = |c: char| match class {
        Class::Unicode(u) => u.ranges().iter().any(|r| r.start() <= c && c <= r.end()),
        Class::Bytes(b) => c.is_ascii() && b.ranges().iter().any(|r| r.start() <= c as u8 && c as u8 <= r.end()),
    };
    let groups: [&[char]; 4] = [
        &[
            'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u',
            'v', 'w', 'x', 'y', 'z',
        ],
        &['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
        &[
            'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R', 'S', 'T', 'U',
            'V', 'W', 'X', 'Y', 'Z',
        ],
        &['-', '_', '.'],
    ];
    for group in groups {
        let members: Vec<char> = group.iter().copied().filter(|&c| contains(c)).collect();
        if !members.is_empty() {
            return Some(members[rng.below(members.len() as u64) as usize]);
        }
    }
    // Any printable character the class has (not a control character or a space).
    let printable = |c: char| !c.is_control() && !c.is_whitespace();
    match class {
        Class::Unicode(u) => u.ranges().iter().find_map(|r| (r.start()..=r.end()).find(|&c| printable(c))),
        Class::Bytes(b) => b
            .ranges()
            .iter()
            .find_map(|r| (r.start()..=r.end()).map(char::from).find(|&c| c.is_ascii() && printable(c))),
    }
}
