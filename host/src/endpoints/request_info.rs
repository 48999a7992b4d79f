//! Request info: what a request is about, parsed from its method, path and query (like `k8s.io/apiserver`'s
//! `RequestInfoFactory`).

use std::collections::HashMap;

use hyper::Method;

/// A parsed resource request: `/apis/<group>/<version>/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// The Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: &'static str,
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The namespace in the path, if any.
    pub namespace: Option<String>,
    /// The plural resource.
    pub resource: String,
    /// The object name, if any.
    pub name: Option<String>,
    /// The subresource, if any.
    pub subresource: Option<String>,
}

impl RequestInfo {
    /// What the request is, as kube-apiserver's request metrics label it.
    pub fn metric_kind(&self, method: &Method) -> crate::server::metrics::RequestKind {
        let verb = match self.verb {
            "list" => "LIST",
            "watch" => "WATCH",
            _ => method.as_str(),
        };
        let scope = match (&self.name, &self.namespace) {
            (Some(_), _) => "resource",
            (None, Some(_)) => "namespace",
            (None, None) => "cluster",
        };
        crate::server::metrics::RequestKind {
            verb: verb.to_owned(),
            group: self.group.clone(),
            version: self.version.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone().unwrap_or_default(),
            scope: scope.to_owned(),
        }
    }
}

/// Parses the query string into a map (the last value of a repeated parameter wins).
pub fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

fn is_true(v: Option<&String>) -> bool {
    matches!(v.map(String::as_str), Some("true") | Some("1"))
}

/// Parses a resource request under `/apis/`. `segments` are the path's segments after `apis`. Returns `None` for
/// paths that are not resource requests (discovery paths are handled before).
pub fn parse(method: &Method, segments: &[&str], query: &HashMap<String, String>) -> Option<RequestInfo> {
    let (group, version, rest) = match segments {
        [g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return None,
    };
    let mut rest = rest;
    let mut watch_path = false;
    if rest.first() == Some(&"watch") {
        watch_path = true;
        rest = &rest[1..];
    }
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (resource, name, subresource) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(n.to_string()), None),
        [r, n, s] => (*r, Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    if resource.is_empty() || name.as_deref() == Some("") {
        return None;
    }
    let watch = watch_path || is_true(query.get("watch"));
    let verb = match (method, name.is_some()) {
        (&Method::GET, _) if watch => "watch",
        (&Method::GET, true) => "get",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unknown",
    };
    Some(RequestInfo {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name,
        subresource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: Method, path: &str, query: &str) -> Option<RequestInfo> {
        let segs: Vec<&str> = path.trim_matches('/').split('/').skip(1).collect();
        parse(&method, &segs, &parse_query(Some(query)))
    }

    #[test]
    fn namespaced_item_and_collection() {
        let i = info(
            Method::GET,
            "/apis/wardle.example.com/v1beta1/namespaces/ns1/flunders/a",
            "",
        )
        .unwrap();
        assert_eq!(
            (i.verb, i.namespace.as_deref(), i.resource.as_str(), i.name.as_deref()),
            ("get", Some("ns1"), "flunders", Some("a"))
        );
        let i = info(Method::GET, "/apis/g/v1/namespaces/ns1/flunders", "watch=true").unwrap();
        assert_eq!(i.verb, "watch");
        let i = info(Method::DELETE, "/apis/g/v1/namespaces/ns1/flunders", "").unwrap();
        assert_eq!(i.verb, "deletecollection");
    }

    #[test]
    fn cluster_scoped_and_legacy_watch() {
        let i = info(Method::PUT, "/apis/g/v1/fischers/f", "").unwrap();
        assert_eq!((i.verb, i.namespace, i.name.as_deref()), ("update", None, Some("f")));
        let i = info(Method::GET, "/apis/g/v1/watch/namespaces/n/flunders", "").unwrap();
        assert_eq!((i.verb, i.namespace.as_deref()), ("watch", Some("n")));
        let i = info(Method::GET, "/apis/g/v1/flunders/a/status", "").unwrap();
        assert_eq!(i.subresource.as_deref(), Some("status"));
        assert!(info(Method::GET, "/apis/g/v1/a/b/c/d", "").is_none());
    }
}
