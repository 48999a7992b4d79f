//! Kubernetes' order of API versions (`k8s.io/apimachinery/pkg/version`'s `CompareKubeAwareVersionStrings`), by
//! which kube-apiserver lists a custom resource group's versions, the preferred first: GA before beta before alpha,
//! a higher major version first within each, then a higher alpha or beta number; versions not of the form
//! `v<major>[alpha|beta<minor>]` come last, in alphabetical order.

use std::cmp::Ordering;

/// A version's stability, GA highest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// `v<major>[alpha|beta<minor>]` taken apart, if the version has that form.
fn parse(version: &str) -> Option<(Stability, u64, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // Like kube's regular expression: a major without leading zeros is not required, but one digit is.
    let major: u64 = rest.get(..digits).filter(|d| !d.is_empty())?.parse().ok()?;
    let rest = &rest[digits..];
    if rest.is_empty() {
        return Some((Stability::Ga, major, 0));
    }
    let (stability, minor) = if let Some(m) = rest.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else {
        (Stability::Beta, rest.strip_prefix("beta")?)
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}

/// How two versions compare in priority: `Less` when `a` comes first (is preferred to `b`).
pub fn by_priority(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse(a), parse(b)) {
        (None, None) => a.cmp(b),
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => y.cmp(&x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_kube_sorts_them() {
        // The order of kube's own test of CompareKubeAwareVersionStrings.
        let expected = [
            "v10",
            "v2",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo1",
            "foo10",
        ];
        let mut shuffled = expected;
        shuffled.reverse();
        shuffled.swap(0, 4);
        shuffled.sort_by(|a, b| by_priority(a, b));
        assert_eq!(shuffled, expected);
        assert_eq!(by_priority("v1", "v1"), Ordering::Equal);
        // Not kube versions: no digits, a bad suffix, no minor.
        for other in ["v", "vbeta1", "v1gamma1", "v1beta", "v1beta1x"] {
            assert_eq!(by_priority("v1alpha1", other), Ordering::Less, "{other}");
        }
    }
}
