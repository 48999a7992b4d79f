//! The names a plugin project is made of, all derived from the one `NAME` given to `plugin new`: the resource's kind,
//! plural and singular, the API group, and the identifiers each language and the WIT world need.

use apimachinery::validation::{is_dns1035_label, is_dns1123_label, is_dns1123_subdomain};

/// The names of a new plugin project (for `widget`: kind `Widget`, plural `widgets`, group `widget.example.com`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The project's name, as given: a DNS-1123 label such as `widget` or `gadget-box`. The component is
    /// `<name>.wasm`, so it is also the plugin's name in the server.
    pub name: String,
    /// The kind: the name's words capitalised and joined (`gadget-box` → `GadgetBox`).
    pub kind: String,
    /// The plural resource name (`gadget-boxes`).
    pub plural: String,
    /// The singular resource name: the name itself.
    pub singular: String,
    /// The API group (`<name>.example.com` unless given).
    pub group: String,
    /// A WIT identifier for the world: the kind in lower case (`gadgetbox`), a single word starting with a letter.
    pub world: String,
    /// The name with `-` made `_` (`gadget_box`), for Python modules and Rust library files.
    pub snake: String,
}

impl Names {
    /// The names for `name` and an optional group; an error (one line) says why the name or group cannot be used.
    pub fn new(name: &str, group: Option<&str>) -> Result<Names, String> {
        let plural = parse_name(name).map(|name| plural_of(&name))?;
        let group = match group {
            Some(group) => parse_group(group)?,
            None => format!("{name}.example.com"),
        };
        let kind: String = name.split('-').map(capitalised).collect();
        Ok(Names {
            name: name.to_owned(),
            world: kind.to_ascii_lowercase(),
            kind,
            plural,
            singular: name.to_owned(),
            group,
            snake: name.replace('-', "_"),
        })
    }
}

/// Checks a plugin name (`clap` value parser of `NAME`): a DNS-1123 label starting with a letter, whose plural is a
/// DNS-1035 label, as a CustomResourceDefinition's names must be.
pub fn parse_name(name: &str) -> Result<String, String> {
    let problems = is_dns1123_label(name);
    if !problems.is_empty() {
        return Err(format!("{name:?} is not a valid plugin name: {}", problems.join("; ")));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(format!(
            "{name:?} is not a valid plugin name: it must start with a letter, as the kind and plural made from it \
             must (e.g. 'widget')"
        ));
    }
    let plural = plural_of(name);
    let problems = is_dns1035_label(&plural);
    if !problems.is_empty() {
        return Err(format!(
            "{name:?} is not a valid plugin name: its plural {plural:?} {}",
            problems.join("; ")
        ));
    }
    Ok(name.to_owned())
}

/// Checks an API group (`clap` value parser of `--group`): a DNS-1123 subdomain with at least one dot, as a
/// CustomResourceDefinition's group must be.
pub fn parse_group(group: &str) -> Result<String, String> {
    let mut problems = is_dns1123_subdomain(group);
    if problems.is_empty() && !group.contains('.') {
        problems.push("should be a domain with at least one dot, such as 'widgets.example.com'".into());
    }
    if !problems.is_empty() {
        return Err(format!(
            "--group {group:?} is not a valid API group: {}",
            problems.join("; ")
        ));
    }
    Ok(group.to_owned())
}

/// A word with its first letter in upper case.
fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// The English plural of a lower-case name, by the regular rules (`box` → `boxes`, `policy` → `policies`, `widget` →
/// `widgets`); irregular plurals can be edited in the project afterwards.
fn plural_of(name: &str) -> String {
    let ends_with = |suffix: &str| name.ends_with(suffix);
    if ["s", "x", "z", "ch", "sh"].into_iter().any(ends_with) {
        return format!("{name}es");
    }
    if let Some(stem) = name.strip_suffix('y') {
        if stem.ends_with(|c: char| c.is_ascii_lowercase() && !"aeiou".contains(c)) {
            return format!("{stem}ies");
        }
    }
    format!("{name}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_from_the_name() {
        let n = Names::new("widget", None).unwrap();
        assert_eq!(
            (
                n.kind.as_str(),
                n.plural.as_str(),
                n.singular.as_str(),
                n.group.as_str()
            ),
            ("Widget", "widgets", "widget", "widget.example.com")
        );
        assert_eq!((n.world.as_str(), n.snake.as_str()), ("widget", "widget"));
        let n = Names::new("gadget-box", Some("toys.example.org")).unwrap();
        assert_eq!(
            (n.kind.as_str(), n.plural.as_str(), n.group.as_str()),
            ("GadgetBox", "gadget-boxes", "toys.example.org")
        );
        assert_eq!((n.world.as_str(), n.snake.as_str()), ("gadgetbox", "gadget_box"));
        let n = Names::new("sprocket-2", None).unwrap();
        assert_eq!((n.kind.as_str(), n.plural.as_str()), ("Sprocket2", "sprocket-2s"));
    }

    #[test]
    fn plurals_follow_the_regular_rules() {
        for (name, plural) in [
            ("widget", "widgets"),
            ("box", "boxes"),
            ("class", "classes"),
            ("match", "matches"),
            ("policy", "policies"),
            ("key", "keys"),
            ("quiz", "quizes"),
        ] {
            assert_eq!(plural_of(name), plural, "{name}");
        }
    }

    #[test]
    fn invalid_names_and_groups_are_refused_with_the_reason() {
        let (too_long, plural_too_long) = ("w".repeat(64), "w".repeat(63));
        for (name, why) in [
            ("Widget", "a lowercase RFC 1123 label"),
            ("my_widget", "a lowercase RFC 1123 label"),
            ("widget.v2", "must not contain dots"),
            ("", "a lowercase RFC 1123 label"),
            ("-widget", "a lowercase RFC 1123 label"),
            ("2widget", "must start with a letter"),
            (too_long.as_str(), "no more than 63"),
            (plural_too_long.as_str(), "its plural"),
        ] {
            let e = Names::new(name, None).unwrap_err();
            assert!(e.contains(why), "{name}: {e}");
        }
        for group in ["Widgets.example.com", "widgets", "a..b", "-a.b"] {
            let e = Names::new("widget", Some(group)).unwrap_err();
            assert!(e.contains("not a valid API group"), "{group}: {e}");
        }
    }
}
