//! The key layout of stored objects: `/registry/<group>/<resource>/[<namespace>/]<name>`, the core group (`""`)
//! stored as `core`, like kube-apiserver's etcd keys; a tenant's keys are the same under its own prefix
//! (`/tenants/<tenant>`, see [`super::prefixed`]).

/// The storage key prefix of a resource: `/registry/<group>/<resource>/`, plus `<namespace>/` when given. The core
/// group (`""`) is stored as `core`.
pub fn key_prefix(group: &str, resource: &str, namespace: Option<&str>) -> String {
    let group = if group.is_empty() { "core" } else { group };
    match namespace {
        Some(ns) => format!("/registry/{group}/{resource}/{ns}/"),
        None => format!("/registry/{group}/{resource}/"),
    }
}

/// The resource a storage key belongs to, as `<resource>.<group>` (keys and prefixes are
/// `/registry/<group>/<resource>/...`, under `/tenants/<tenant>` for a tenant's: the tenant is left out, so that
/// metrics labelled by it do not grow with the tenants); empty for other keys.
pub fn resource_of_key(key: &str) -> String {
    let key = match key.strip_prefix("/tenants/") {
        Some(rest) => rest.find('/').map_or("", |i| &rest[i..]),
        None => key,
    };
    let mut parts = key.strip_prefix("/registry/").unwrap_or("").split('/');
    match (parts.next(), parts.next()) {
        (Some(group), Some(resource)) if !group.is_empty() && !resource.is_empty() => format!("{resource}.{group}"),
        _ => String::new(),
    }
}

/// The storage key of an object.
pub fn object_key(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{}{name}", key_prefix(group, resource, namespace))
}

/// The storage key prefix of a tenant's objects (under which its keys are laid out as the default tenant's).
pub fn tenant_prefix(tenant: &str) -> String {
    format!("/tenants/{tenant}")
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
        ] {
            assert_eq!(resource_of_key(other), "", "{other:?}");
        }
    }
}
