//! The key layout of stored objects: `/registry/<group>/<resource>/[<namespace>/]<name>`, the core group (`""`)
//! stored as `core`, like kube-apiserver's etcd keys. A scope of its own (a tenant's, laid out by the `tenants` crate)
//! keeps the same keys under a prefix of two segments, `/<scopes>/<name>` (see [`super::prefixed`]).

/// The storage key prefix of a resource: `/registry/<group>/<resource>/`, plus `<namespace>/` when given. The core
/// group (`""`) is stored as `core`.
pub fn key_prefix(group: &str, resource: &str, namespace: Option<&str>) -> String {
    let group = if group.is_empty() { "core" } else { group };
    match namespace {
        Some(ns) => format!("/registry/{group}/{resource}/{ns}/"),
        None => format!("/registry/{group}/{resource}/"),
    }
}

/// The group (as stored: `core` for the core group) and resource of a storage key or prefix,
/// `[/<scopes>/<name>]/registry/<group>/<resource>/...`: the scope is left out, so that metrics labelled by it do not
/// grow with the scopes. `None` for other keys.
pub fn group_resource_of_key(key: &str) -> Option<(&str, &str)> {
    let registry = if key.starts_with("/registry/") {
        key
    } else {
        // Past a scope's prefix: its two segments.
        let mut at = key.match_indices('/').map(|(i, _)| i).skip(2);
        &key[at.next()?..]
    };
    let mut parts = registry.strip_prefix("/registry/")?.split('/');
    match (parts.next(), parts.next()) {
        (Some(group), Some(resource)) if !group.is_empty() && !resource.is_empty() => Some((group, resource)),
        _ => None,
    }
}

/// The resource a storage key belongs to, as `<resource>.<group>` ([`group_resource_of_key`]); empty for other keys.
pub fn resource_of_key(key: &str) -> String {
    group_resource_of_key(key).map_or_else(String::new, |(group, resource)| format!("{resource}.{group}"))
}

/// The storage key of an object.
pub fn object_key(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{}{name}", key_prefix(group, resource, namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_resource() {
        assert_eq!(
            resource_of_key("/registry/wardle.example.com/flunders/default/a"),
            "flunders.wardle.example.com"
        );
        assert_eq!(
            resource_of_key("/registry/wardle.example.com/fischers/"),
            "fischers.wardle.example.com"
        );
        assert_eq!(
            resource_of_key("/tenants/t1/registry/wardle.example.com/flunders/default/a"),
            "flunders.wardle.example.com"
        );
        for other in [
            "/registry/",
            "/registry/g",
            "/registry/g/",
            "/other/g/r/x",
            "",
            "/tenants/t1",
            "/tenants/",
            "/tenants/t1/other/g/r",
        ] {
            assert_eq!(resource_of_key(other), "", "{other:?}");
        }
    }
}
