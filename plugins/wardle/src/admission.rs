//! BanFlunder: a mutating admission plugin refusing flunders whose name a fischer disallows (sample-apiserver's
//! `pkg/admission/plugin/banflunder`).

use wasm_apiserver_guest::types::{AdmissionRequest, AdmissionRule, Operation};
use wasm_apiserver_guest::{client, error, Error, ObjectMeta};

use crate::types::v1alpha1::Fischer;
use crate::{FISCHERS, FLUNDERS, GROUP};

/// The reason BanFlunder gives; the host prefixes `flunders.wardle.example.com "<name>" is forbidden: `.
pub const BANNED_REASON: &str = "this name may not be used, please change the resource name";

/// BanFlunder sees the creation of flunders, in any version.
pub fn rules() -> Vec<AdmissionRule> {
    vec![AdmissionRule {
        group: GROUP.to_owned(),
        resources: vec![FLUNDERS.to_owned()],
        operations: vec![Operation::Create],
    }]
}

/// Refuses the creation of a flunder whose name is in a fischer's disallowed flunders; leaves the object unchanged.
pub fn admit(request: &AdmissionRequest) -> Result<Option<String>, Error> {
    if request.group != GROUP || request.resource != FLUNDERS || request.operation != Operation::Create {
        return Ok(None);
    }
    let name = flunder_name(request)?;
    let fischers: Vec<Fischer> = client::list(GROUP, FISCHERS, None, "")?;
    if is_banned(&name, &fischers) {
        // The server's log line of it carries the request's trace id, when the request is traced.
        client::log_info(&format!(
            "BanFlunder refused the flunder {name:?}: a Fischer disallows the name"
        ));
        return Err(error::forbidden(BANNED_REASON));
    }
    Ok(None)
}

/// Whether any fischer disallows the name.
pub fn is_banned(name: &str, fischers: &[Fischer]) -> bool {
    fischers.iter().any(|f| f.disallowed_flunders.iter().any(|d| d == name))
}

/// The name of the object being created, else the name of the request.
fn flunder_name(request: &AdmissionRequest) -> Result<String, Error> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(default)]
        metadata: ObjectMeta,
    }
    let from_object = match request.object.as_deref() {
        Some(json) => wasm_apiserver_guest::decode::<Named>(json)?.metadata.name,
        None => None,
    };
    Ok(from_object.unwrap_or_else(|| request.name.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fischer(disallowed: &[&str]) -> Fischer {
        Fischer {
            disallowed_flunders: disallowed.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn banned_when_any_fischer_disallows_the_name() {
        let fischers = [fischer(&["a", "b"]), fischer(&["c"])];
        assert!(is_banned("c", &fischers));
        assert!(is_banned("a", &fischers));
        assert!(!is_banned("d", &fischers));
        assert!(!is_banned("a", &[]));
    }

    #[test]
    fn rules_cover_flunder_creation() {
        let rules = rules();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].resources, [FLUNDERS]);
        assert_eq!(rules[0].operations, [Operation::Create]);
    }

    #[test]
    fn name_comes_from_the_object() {
        let mut request = AdmissionRequest {
            operation: Operation::Create,
            group: GROUP.to_owned(),
            version: "v1beta1".to_owned(),
            resource: FLUNDERS.to_owned(),
            subresource: String::new(),
            namespace: Some("ns".to_owned()),
            name: "from-request".to_owned(),
            object: Some(r#"{"metadata":{"name":"from-object"}}"#.to_owned()),
            old_object: None,
            dry_run: false,
            user: wasm_apiserver_guest::UserInfo {
                name: "u".to_owned(),
                groups: Vec::new(),
            },
        };
        assert_eq!(flunder_name(&request).expect("name"), "from-object");
        request.object = Some("{}".to_owned());
        assert_eq!(flunder_name(&request).expect("name"), "from-request");
        request.object = Some("[".to_owned());
        assert!(flunder_name(&request).is_err());
    }

    #[test]
    fn other_requests_are_left_alone() {
        let request = AdmissionRequest {
            operation: Operation::Update,
            group: GROUP.to_owned(),
            version: "v1beta1".to_owned(),
            resource: FLUNDERS.to_owned(),
            subresource: String::new(),
            namespace: None,
            name: "x".to_owned(),
            object: None,
            old_object: None,
            dry_run: false,
            user: wasm_apiserver_guest::UserInfo {
                name: "u".to_owned(),
                groups: Vec::new(),
            },
        };
        // An update never reaches the host's `list` import, which does not exist natively.
        assert_eq!(admit(&request).expect("admit"), None);
    }
}
