//! String format checks, as `k8s.io/apimachinery/pkg/util/validation`, `pkg/api/validate/content`,
//! `pkg/api/validation/path` and the name functions of `pkg/api/validation`.
//!
//! Each `is_*` function returns the list of problems with a value (empty when the value is valid), worded exactly as
//! Kubernetes words them, so they can become the detail of a [`FieldError`](super::FieldError).
//!
//! Kubernetes currently words length limits in two ways: the older checks of `pkg/util/validation` (DNS labels and
//! subdomains, used for object names and namespaces) say "characters", the newer `content` checks (label keys and
//! values, including the DNS prefix of a label key) say "bytes". Both count bytes; we keep both wordings.

/// The maximum length of a DNS (RFC 1123) label, such as a namespace name.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// The maximum length of a DNS (RFC 1123) subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// The maximum length of a DNS (RFC 1035) label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// The maximum length of the name part of a qualified name (label key).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// The maximum length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
     '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
     characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', \
     start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
     with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, \
     '-', '_' or '.', and must start and end with an alphanumeric character";

/// How a length limit is worded (see the module documentation).
#[derive(Clone, Copy)]
enum LengthUnit {
    Characters,
    Bytes,
}

/// Kubernetes' `MaxLenError` of `pkg/util/validation`: `must be no more than N characters`.
pub fn max_len_error(length: usize) -> String {
    max_len_error_in(length, LengthUnit::Characters)
}

fn max_len_error_in(length: usize, unit: LengthUnit) -> String {
    match unit {
        LengthUnit::Characters => format!("must be no more than {length} characters"),
        LengthUnit::Bytes => format!("must be no more than {length} bytes"),
    }
}

/// Kubernetes' `EmptyError`: `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// Kubernetes' `RegexError`: the message, then the examples and the regular expression in parentheses.
pub fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{regex}')");
    }
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(regex);
    out.push_str("')");
    out
}

/// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn matches_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => edge(first) && edge(last) && bytes.iter().all(|&b| edge(b) || b == b'-'),
        _ => false,
    }
}

/// Matches `[a-z]([-a-z0-9]*[a-z0-9])?`.
fn matches_dns1035_label(value: &str) -> bool {
    value.as_bytes().first().is_some_and(u8::is_ascii_lowercase) && matches_dns1123_label(value)
}

/// Matches the DNS-1123 subdomain expression: labels joined by dots.
fn matches_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(matches_dns1123_label)
}

/// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_label_key_name(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Kubernetes' `IsDNS1123Label`: a lowercase RFC 1123 label such as `my-name` (namespace names).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain but not a valid label: the length was checked, so it must be the dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Kubernetes' `IsDNS1123Subdomain`: a lowercase RFC 1123 subdomain such as `example.com` (most object names).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain_errors(value, LengthUnit::Characters)
}

fn dns1123_subdomain_errors(value: &str, unit: LengthUnit) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error_in(DNS1123_SUBDOMAIN_MAX_LENGTH, unit));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Kubernetes' `IsDNS1035Label`: a DNS-1035 label, which must start with a letter (service names).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Kubernetes' `IsConfigMapKey`: the key of a ConfigMap's or Secret's data (alphanumerics, `-`, `_`, `.`; at most
/// 253 characters; not `.`, `..` or starting with `..`).
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let valid = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match value {
        "." => errs.push("must not be '.'".to_owned()),
        ".." => errs.push("must not be '..'".to_owned()),
        _ if value.starts_with("..") => errs.push("must not start with '..'".to_owned()),
        _ => {}
    }
    errs
}

/// Kubernetes' `IsQualifiedName` (`content.IsLabelKey`): an optional DNS subdomain prefix and `/`, then a name of at
/// most 63 characters (label keys, annotation keys, finalizers).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                let prefix_errs = dns1123_subdomain_errors(prefix, LengthUnit::Bytes);
                errs.extend(prefix_errs.into_iter().map(|msg| format!("prefix part {msg}")));
            }
            *name
        }
        _ => {
            let examples = regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"]);
            errs.push(format!(
                "a valid label key {examples} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error_in(QUALIFIED_NAME_MAX_LENGTH, LengthUnit::Bytes)
        ));
    }
    if !matches_label_key_name(name) {
        let detail = regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"]);
        errs.push(format!("name part {detail}"));
    }
    errs
}

/// Kubernetes' `IsValidLabelValue` (`content.IsLabelValue`): empty, or at most 63 characters that are alphanumeric,
/// `-`, `_` or `.` and start and end with an alphanumeric character.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error_in(LABEL_VALUE_MAX_LENGTH, LengthUnit::Bytes));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Kubernetes' `IsValidPathSegmentName`: the name can be used as one segment of a URL path or storage key. Like
/// Kubernetes, this does not check for an empty name and imposes no length limit.
pub fn is_path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    is_path_segment_prefix(name)
}

/// Kubernetes' `IsValidPathSegmentPrefix`: the name can start a path segment (a generateName prefix), so `.` and
/// `..` are allowed, since a suffix will follow.
pub fn is_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .into_iter()
        .filter(|illegal| name.contains(illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

/// Kubernetes' `ValidatePathSegmentName`: [`is_path_segment_prefix`] when `prefix` (the name will get a generated
/// suffix), else [`is_path_segment_name`]. This is the rule the generic API server applies to every object name.
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_path_segment_prefix(name)
    } else {
        is_path_segment_name(name)
    }
}

/// Kubernetes' `maskTrailingDash`, used on generateName prefixes so a trailing `-` passes DNS checks.
///
/// Kubernetes replaces the last *two* bytes of the prefix with `a` (`name[:len(name)-2] + "a"`); we reproduce that
/// so the same prefixes are accepted and rejected.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        // Both cut points are ASCII boundaries unless the byte before the dash is part of a multi-byte character; in
        // that case drop the whole character (such a prefix is invalid either way).
        format!("{}a", &name[..name.floor_char_boundary(cut)])
    } else {
        name.to_string()
    }
}

/// A rule for object names, as Kubernetes' `ValidateNameFunc`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NameRule {
    /// Any name usable as a URL path segment (not `.` or `..`, no `/` or `%`): the generic API server's rule and
    /// sample-apiserver's.
    #[default]
    PathSegment,
    /// A DNS-1123 subdomain (`NameIsDNSSubdomain`), as most built-in resources use.
    Dns1123Subdomain,
    /// A DNS-1123 label (`NameIsDNSLabel`), as namespaces use.
    Dns1123Label,
    /// A DNS-1035 label (`NameIsDNS1035Label`), as services use.
    Dns1035Label,
}

impl NameRule {
    /// Validates a name (`prefix` false) or a generateName prefix (`prefix` true), returning the problems found.
    pub fn validate(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameRule::PathSegment => validate_path_segment_name(name, prefix),
            NameRule::Dns1123Subdomain => is_dns1123_subdomain(&masked(name, prefix)),
            NameRule::Dns1123Label => is_dns1123_label(&masked(name, prefix)),
            NameRule::Dns1035Label => is_dns1035_label(&masked(name, prefix)),
        }
    }
}

fn masked(name: &str, prefix: bool) -> String {
    if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBDOMAIN_REGEX_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
        characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex \
        used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn dns1123_subdomain() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "a.a",
            "1.2.3",
            "a-1.b-2",
            "0.a",
        ] {
            assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
        }
        let max = format!("{}.{}", "a".repeat(126), "b".repeat(126));
        assert!(is_dns1123_subdomain(&max).is_empty());
        for bad in [
            "", "A", "ABC", "aBc", "a_b", "a.", ".a", "a..b", "-a", "a-", "a.-b", "a b", "a@b", "ä",
        ] {
            assert_eq!(
                is_dns1123_subdomain(bad),
                vec![SUBDOMAIN_REGEX_MSG.to_string()],
                "{bad}"
            );
        }
        let too_long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&too_long),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    #[test]
    fn dns1123_label() {
        for good in ["a", "ab", "a-1", "1", "a--b", &"a".repeat(63)] {
            assert!(is_dns1123_label(good).is_empty(), "{good}");
        }
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            is_dns1123_label("Bad_Name"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
                  start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
                  validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(is_dns1123_label("").len(), 1);
    }

    #[test]
    fn dns1035_label() {
        assert!(is_dns1035_label("a-1").is_empty());
        assert_eq!(is_dns1035_label("1a").len(), 1);
        assert!(is_dns1035_label("1a")[0].starts_with("a DNS-1035 label must consist"));
    }

    #[test]
    fn qualified_names() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/b", "a".repeat(253)),
        ] {
            assert!(
                is_qualified_name(good).is_empty(),
                "{good}: {:?}",
                is_qualified_name(good)
            );
        }
        let name_regex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and \
                          end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
                          used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        for bad in [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
        ] {
            assert!(!is_qualified_name(bad).is_empty(), "{bad}");
        }
        assert_eq!(is_qualified_name("a_"), vec![name_regex.to_string()]);
        assert_eq!(
            is_qualified_name(""),
            vec!["name part must be non-empty".to_string(), name_regex.to_string()]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 bytes"]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_string()],
            "an empty prefix is reported"
        );
        assert_eq!(
            is_qualified_name("Example.com/abc"),
            vec![format!("prefix part {SUBDOMAIN_REGEX_MSG}")]
        );
        assert_eq!(
            is_qualified_name(&format!("{}/b", "a".repeat(254))),
            vec!["prefix part must be no more than 253 bytes"]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec![
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and \
                  end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                  validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix \
                  and '/' (e.g. 'example.com/MyName')"
            ]
        );
    }

    #[test]
    fn label_values() {
        for good in [
            "",
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "A.B_c-9",
            &"a".repeat(63),
        ] {
            assert!(is_valid_label_value(good).is_empty(), "{good}");
        }
        let regex = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
                     and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
                     '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        for bad in ["nospecialchars%^=@", "Tama-nui-te-rā", "-starts", "ends-", "a b", "a/b"] {
            assert_eq!(is_valid_label_value(bad), vec![regex.to_string()], "{bad}");
        }
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
        assert_eq!(is_valid_label_value(&format!("{}-", "a".repeat(64))).len(), 2);
    }

    #[test]
    fn path_segments() {
        assert!(validate_path_segment_name("foo", false).is_empty());
        assert!(validate_path_segment_name("Bad_Name.x", false).is_empty());
        assert!(validate_path_segment_name("...", false).is_empty());
        assert_eq!(validate_path_segment_name(".", false), vec!["may not be '.'"]);
        assert_eq!(validate_path_segment_name("..", false), vec!["may not be '..'"]);
        assert!(
            validate_path_segment_name("..", true).is_empty(),
            "prefixes may be . or .."
        );
        assert_eq!(
            validate_path_segment_name("a/b%c", false),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert_eq!(validate_path_segment_name("a/", true), vec!["may not contain '/'"]);
    }

    #[test]
    fn name_rules_mask_trailing_dashes_for_prefixes() {
        assert!(NameRule::Dns1123Subdomain.validate("foo-", true).is_empty());
        assert_eq!(NameRule::Dns1123Subdomain.validate("foo-", false).len(), 1);
        assert!(NameRule::Dns1123Label.validate("web-", true).is_empty());
        assert!(NameRule::Dns1035Label.validate("web-", true).is_empty());
        assert_eq!(
            NameRule::Dns1123Label.validate("-", true).len(),
            1,
            "a lone dash is not masked"
        );
        // Kubernetes drops the character before the dash too: "a.-" becomes "aa".
        assert_eq!(mask_trailing_dash("a.-"), "aa");
        assert_eq!(mask_trailing_dash("é-"), "a");
        assert!(NameRule::PathSegment.validate("foo-", true).is_empty());
        assert_eq!(NameRule::default(), NameRule::PathSegment);
    }

    #[test]
    fn regex_error_formats_like_kubernetes() {
        assert_eq!(regex_error("m", "r", &[]), "m (regex used for validation is 'r')");
        assert_eq!(
            regex_error("m", "r", &["a"]),
            "m (e.g. 'a', regex used for validation is 'r')"
        );
    }
}
