//! Selectors: label and field selector strings parsed, printed and parsed back, matched as kube matches them.

use crate::client_error;
use apimachinery::fields::{default_field_label_conversion, escape_value, unescape_value};
use apimachinery::status::ApiError;
use apimachinery::{FieldSelector, LabelSelector};
use serde_json::Value;
use std::collections::BTreeMap;

/// Label sets to match selectors against: none, and the values each requirement names.
fn label_sets(selector: &LabelSelector) -> Vec<BTreeMap<String, String>> {
    let mut sets = vec![BTreeMap::new()];
    let mut first = BTreeMap::new();
    let mut last = BTreeMap::new();
    for r in selector.requirements() {
        first.insert(r.key().to_string(), r.values().first().cloned().unwrap_or_default());
        last.insert(r.key().to_string(), r.values().last().cloned().unwrap_or_default());
    }
    sets.push(first);
    sets.push(last);
    sets
}

/// `labelSelector` strings; and, when the input is JSON, `metav1.LabelSelector` objects. A parsed selector prints as
/// one that parses back to itself; any selector prints as one that matches the same labels, and whose printed form
/// is printed back unchanged.
pub fn label_selector(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = Some((true, LabelSelector::parse(&text)));
    let json = serde_json::from_slice::<Value>(data)
        .ok()
        .map(|v| (false, LabelSelector::from_json(&v)));
    for (from_text, selector) in [parsed, json].into_iter().flatten() {
        match selector {
            Ok(selector) => {
                let printed = selector.to_string();
                let again = LabelSelector::parse(&printed)
                    .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
                let reprinted = again.to_string();
                assert_eq!(LabelSelector::parse(&reprinted).as_ref(), Ok(&again), "{printed:?}");
                if from_text {
                    assert_eq!(reprinted, printed, "{text:?}");
                    assert_eq!(again, selector, "{text:?} printed as {printed:?}");
                }
                // A selector that matches nothing (a null `metav1.LabelSelector`) prints as the empty selector, as
                // kube's does; and an object's `values` may repeat a value, which the text form cannot. Otherwise
                // the printed selector is the same selector.
                for labels in label_sets(&selector).iter().filter(|_| !selector.matches_nothing()) {
                    assert_eq!(
                        again.matches(labels),
                        selector.matches(labels),
                        "{text:?} / {printed:?} on {labels:?}"
                    );
                }
                if let Some(r) = selector.requirements().first() {
                    let _ = selector.requires_exact_match(r.key());
                }
            }
            Err(e) => client_error(&ApiError::bad_request(e.to_string()), "label selector"),
        }
    }
}

/// `fieldSelector` strings: a selector prints as one that parses back to itself and matches the same objects;
/// escaping a value and unescaping it gives the value back.
pub fn field_selector(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    assert_eq!(
        unescape_value(&escape_value(&text)).as_deref(),
        Ok(&*text),
        "escaped as {:?}",
        escape_value(&text)
    );
    match FieldSelector::parse(&text) {
        Ok(selector) => {
            let printed = selector.to_string();
            let again = FieldSelector::parse(&printed)
                .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
            // The same terms (in the order of their text, which printing may change) ...
            let terms = |s: &FieldSelector| {
                let mut terms: Vec<String> = s.requirements().iter().map(ToString::to_string).collect();
                terms.sort();
                terms
            };
            assert_eq!(terms(&again), terms(&selector), "{text:?} printed as {printed:?}");
            // ... and printed, the same selector.
            assert_eq!(
                FieldSelector::parse(&again.to_string()).as_ref(),
                Ok(&again),
                "{printed:?}"
            );
            let fields: BTreeMap<&str, &str> = selector
                .requirements()
                .iter()
                .map(|r| (r.field.as_str(), r.value.as_str()))
                .collect();
            let get = |f: &str| fields.get(f).copied();
            assert_eq!(again.matches(get), selector.matches(get), "{text:?}");
            assert_eq!(
                again.matches(|_| None::<&str>),
                selector.matches(|_| None::<&str>),
                "{text:?}"
            );
            for r in selector.requirements() {
                if let Some(v) = selector.requires_exact_match(&r.field) {
                    // What a selector pins is what one-term selectors of it match.
                    assert!(FieldSelector::one_term_equal(r.field.clone(), v).matches(|_| Some(v)));
                }
            }
            match selector.transform(default_field_label_conversion) {
                Ok(t) => assert!(t.requirements().iter().all(|r| r.field.starts_with("metadata."))),
                Err(e) => client_error(&ApiError::bad_request(e), "field label conversion"),
            }
        }
        Err(e) => client_error(
            &ApiError::bad_request(format!("invalid field selector: {e}")),
            "field selector",
        ),
    }
}
