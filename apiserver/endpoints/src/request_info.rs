//! Request info: what a request is about, resolved once per request from its method, path and query (like
//! `k8s.io/apiserver`'s `RequestInfoFactory`). The filters (authorization, audit, metrics) and the handlers read it;
//! nothing parses the path again.

use std::collections::HashMap;

use hyper::Method;

/// What a request is about. Every request has one; resource requests
/// (`/api/<version>/...` and `/apis/<group>/<version>/...` with at least a resource) name what they act on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// The tenant a `/tenants/<tenant>/...` path is for (then `path` and the rest are within the tenant); `None` for
    /// the default tenant at the root.
    pub tenant: Option<String>,
    /// Whether the path names a resource (else it is a non-resource path: discovery, `/healthz`, `/version`...).
    pub resource_request: bool,
    /// The request path, within the tenant for a tenant's path (`/tenants/t/apis` → `/apis`).
    pub path: String,
    /// The Kubernetes verb: for resource requests get, list, watch, create, update, patch, delete,
    /// deletecollection (or `unknown` for other methods); for other paths the lower-case HTTP method.
    pub verb: &'static str,
    /// `api` or `apis` for resource requests, else empty.
    pub api_prefix: String,
    /// The API group (`""` for the core group under `/api`).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The namespace in the path, if any (for a namespace itself, `/api/v1/namespaces/<name>`, its name).
    pub namespace: Option<String>,
    /// The plural resource.
    pub resource: String,
    /// The object name in the path, if any.
    pub name: Option<String>,
    /// The subresource, if any.
    pub subresource: Option<String>,
    /// The path segments from the resource on (`resource/name/subresource/...`); more than three is no served path.
    pub parts: Vec<String>,
    /// A list or watch whose field selector asks for one name (`metadata.name=x`): that name, which authorization
    /// checks against resourceNames as kube does. The handlers still list.
    pub selected_name: Option<String>,
}

/// Subresources of a namespace: `/api/v1/namespaces/<name>/status` is the namespace's status, not a resource
/// `status` in the namespace.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// Resolves what a request is about, for any path.
    pub fn resolve(method: &Method, path: &str, query: &HashMap<String, String>) -> RequestInfo {
        let mut info = RequestInfo {
            path: path.to_owned(),
            verb: non_resource_verb(method),
            ..RequestInfo::default()
        };
        let mut segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
        if let ["tenants", tenant, ..] = segments.as_slice() {
            info.tenant = Some((*tenant).to_owned());
            segments.drain(..2);
            info.path = format!("/{}", segments.join("/"));
            if path.ends_with('/') && !segments.is_empty() {
                info.path.push('/');
            }
        }
        let rest = match segments.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => {
                info.api_prefix = "api".into();
                info.version = (*version).to_owned();
                rest
            }
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                info.api_prefix = "apis".into();
                info.group = (*group).to_owned();
                info.version = (*version).to_owned();
                rest
            }
            _ => return info,
        };
        info.resource_request = true;
        let mut rest = rest;
        let mut watch_path = false;
        if rest.first() == Some(&"watch") && rest.len() > 1 {
            watch_path = true;
            rest = &rest[1..];
        }
        if let ["namespaces", namespace, after @ ..] = rest {
            info.namespace = Some((*namespace).to_owned());
            if !after.is_empty() && !NAMESPACE_SUBRESOURCES.contains(&after[0]) {
                rest = after;
            }
        }
        info.parts = rest.iter().map(|s| (*s).to_owned()).collect();
        info.resource = rest.first().map(|s| (*s).to_owned()).unwrap_or_default();
        info.name = rest.get(1).map(|s| (*s).to_owned());
        info.subresource = rest.get(2).map(|s| (*s).to_owned());
        let watch = watch_path || is_true(query.get("watch"));
        info.verb = match (method, info.name.is_some()) {
            (&Method::GET | &Method::HEAD, _) if watch => "watch",
            (&Method::GET | &Method::HEAD, true) => "get",
            (&Method::GET | &Method::HEAD, false) => "list",
            (&Method::POST, _) => "create",
            (&Method::PUT, _) => "update",
            (&Method::PATCH, _) => "patch",
            (&Method::DELETE, true) => "delete",
            (&Method::DELETE, false) => "deletecollection",
            _ => "unknown",
        };
        if info.name.is_none() && matches!(info.verb, "list" | "watch") {
            info.selected_name = query
                .get("fieldSelector")
                .and_then(|s| single_name_selected(s))
                .filter(|name| apimachinery::validation::is_path_segment_name(name).is_empty());
        }
        info
    }

    /// The object name authorization checks: the path's, or the one a list's field selector asks for.
    pub fn authorized_name(&self) -> Option<&str> {
        self.name.as_deref().or(self.selected_name.as_deref())
    }

    /// What the request is, as kube-apiserver's request metrics label it.
    pub fn metric_kind(&self, method: &Method) -> component_base::metrics::RequestKind {
        let verb = match self.verb {
            "list" => "LIST",
            "watch" => "WATCH",
            _ => component_base::metrics::method_label(method),
        };
        let scope = match (&self.name, &self.namespace) {
            (Some(_), _) => "resource",
            (None, Some(_)) => "namespace",
            (None, None) => "cluster",
        };
        component_base::metrics::RequestKind {
            verb,
            group: self.group.clone(),
            version: self.version.clone(),
            resource: self.resource.clone(),
            subresource: self.subresource.clone().unwrap_or_default(),
            scope,
        }
    }

    /// Whether this is a long-running request (a watch), which the in-flight limit and the request timeout exempt.
    pub fn long_running(&self) -> bool {
        self.resource_request && self.verb == "watch"
    }
}

/// The verb of a non-resource request: the lower-case HTTP method.
fn non_resource_verb(method: &Method) -> &'static str {
    match *method {
        Method::GET => "get",
        Method::HEAD => "head",
        Method::POST => "post",
        Method::PUT => "put",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        Method::OPTIONS => "options",
        _ => "unknown",
    }
}

/// The name a field selector requires exactly (`metadata.name=x` or `==`, alone or among other terms), read as kube's
/// RequestInfoFactory reads it: by the field selector parser (a selector that does not parse selects no name, and
/// `\,` in a value is a comma); an empty name is none.
fn single_name_selected(selector: &str) -> Option<String> {
    let selector = apimachinery::FieldSelector::parse(selector).ok()?;
    selector
        .requires_exact_match("metadata.name")
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// Parses the query string into a map (the last value of a repeated parameter wins).
pub fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

/// A boolean query value that reads as true (a value that is no boolean at all is refused by the handler).
fn is_true(v: Option<&String>) -> bool {
    v.and_then(|v| apimachinery::parse_bool(v)) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: Method, path: &str, query: &str) -> RequestInfo {
        RequestInfo::resolve(&method, path, &parse_query(Some(query)))
    }

    #[test]
    fn namespaced_item_and_collection() {
        let i = info(
            Method::GET,
            "/apis/wardle.example.com/v1beta1/namespaces/ns1/flunders/a",
            "",
        );
        assert!(i.resource_request);
        assert_eq!(
            (
                i.verb,
                i.group.as_str(),
                i.namespace.as_deref(),
                i.resource.as_str(),
                i.name.as_deref()
            ),
            ("get", "wardle.example.com", Some("ns1"), "flunders", Some("a"))
        );
        let i = info(Method::GET, "/apis/g/v1/namespaces/ns1/flunders", "watch=true");
        assert_eq!(i.verb, "watch");
        let i = info(Method::DELETE, "/apis/g/v1/namespaces/ns1/flunders", "");
        assert_eq!(i.verb, "deletecollection");
        let i = info(Method::POST, "/apis/g/v1/namespaces/ns1/flunders", "");
        assert_eq!((i.verb, i.name), ("create", None));
    }

    #[test]
    fn cluster_scoped_and_legacy_watch() {
        let i = info(Method::PUT, "/apis/g/v1/fischers/f", "");
        assert_eq!((i.verb, i.namespace, i.name.as_deref()), ("update", None, Some("f")));
        let i = info(Method::GET, "/apis/g/v1/watch/namespaces/n/flunders", "");
        assert_eq!((i.verb, i.namespace.as_deref()), ("watch", Some("n")));
        let i = info(Method::GET, "/apis/g/v1/flunders/a/status", "");
        assert_eq!(i.subresource.as_deref(), Some("status"));
        let i = info(Method::GET, "/apis/g/v1/a/b/c/d", "");
        assert_eq!(
            i.parts.len(),
            4,
            "more parts than a served path has are kept for the router to refuse"
        );
    }

    #[test]
    fn tenant_paths_resolve_within_the_tenant() {
        let i = info(Method::GET, "/tenants/t1/apis/g/v1/namespaces/a/flunders/x", "");
        assert_eq!(i.tenant.as_deref(), Some("t1"));
        assert_eq!(i.path, "/apis/g/v1/namespaces/a/flunders/x");
        assert_eq!(
            (
                i.verb,
                i.group.as_str(),
                i.namespace.as_deref(),
                i.resource.as_str(),
                i.name.as_deref()
            ),
            ("get", "g", Some("a"), "flunders", Some("x"))
        );
        let i = info(Method::GET, "/tenants/t1/healthz", "");
        assert_eq!(
            (i.tenant.as_deref(), i.path.as_str(), i.resource_request),
            (Some("t1"), "/healthz", false)
        );
        let i = info(Method::GET, "/tenants/t1", "");
        assert_eq!((i.tenant.as_deref(), i.path.as_str()), (Some("t1"), "/"));
        let i = info(Method::GET, "/tenants", "");
        assert_eq!((i.tenant, i.path.as_str()), (None, "/tenants"));
        assert_eq!(info(Method::GET, "/apis", "").tenant, None);
    }

    #[test]
    fn core_group_and_namespaces_themselves() {
        let i = info(Method::GET, "/api/v1/namespaces", "");
        assert_eq!(
            (i.verb, i.group.as_str(), i.resource.as_str(), i.namespace),
            ("list", "", "namespaces", None)
        );
        let i = info(Method::DELETE, "/api/v1/namespaces/team-a", "");
        assert_eq!(
            (i.verb, i.resource.as_str(), i.name.as_deref(), i.namespace.as_deref()),
            ("delete", "namespaces", Some("team-a"), Some("team-a"))
        );
        let i = info(Method::PUT, "/api/v1/namespaces/team-a/finalize", "");
        assert_eq!(
            (i.resource.as_str(), i.name.as_deref(), i.subresource.as_deref()),
            ("namespaces", Some("team-a"), Some("finalize"))
        );
    }

    #[test]
    fn non_resource_paths_carry_the_method_as_verb() {
        for (method, path, verb) in [
            (Method::GET, "/healthz", "get"),
            (Method::GET, "/apis", "get"),
            (Method::GET, "/apis/wardle.example.com", "get"),
            (Method::GET, "/apis/wardle.example.com/v1beta1", "get"),
            (Method::GET, "/api/v1", "get"),
            (Method::POST, "/version", "post"),
            (Method::GET, "/openapi/v3/apis/g/v1", "get"),
        ] {
            let i = info(method, path, "");
            assert!(!i.resource_request, "{path}");
            assert_eq!((i.verb, i.path.as_str()), (verb, path));
        }
    }

    #[test]
    fn a_list_selecting_one_name_is_authorized_for_that_name() {
        let i = info(Method::GET, "/apis/g/v1/fischers", "fieldSelector=metadata.name%3Done");
        assert_eq!(
            (i.verb, i.name.as_deref(), i.authorized_name()),
            ("list", None, Some("one"))
        );
        let i = info(
            Method::GET,
            "/apis/g/v1/fischers",
            "watch=1&fieldSelector=metadata.name%3D%3Dtwo,x%3Dy",
        );
        assert_eq!((i.verb, i.authorized_name()), ("watch", Some("two")));
        let i = info(Method::GET, "/apis/g/v1/fischers", "fieldSelector=metadata.name!%3Done");
        assert_eq!(i.authorized_name(), None);
        let i = info(
            Method::GET,
            "/apis/g/v1/fischers",
            "fieldSelector=metadata.name%3Da%2Fb",
        );
        assert_eq!(i.authorized_name(), None, "not a valid path segment name");
        // Found by the request_info fuzz target: an empty name was selected (and audited as `"name": ""`).
        let i = info(Method::GET, "/apis/g/v1/fischers", "fieldSelector=metadata.name%3D");
        assert_eq!(i.authorized_name(), None);
        // As kube parses the selector: an escaped comma is part of the name; a selector that does not parse
        // selects none.
        let i = info(
            Method::GET,
            "/apis/g/v1/fischers",
            "fieldSelector=metadata.name%3Da%5C%2Cb",
        );
        assert_eq!(i.authorized_name(), Some("a,b"));
        let i = info(Method::GET, "/apis/g/v1/fischers", "fieldSelector=metadata.name%3Da,b");
        assert_eq!(i.authorized_name(), None);
    }
}
