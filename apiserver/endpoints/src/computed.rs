//! Resources the host computes on each read instead of storing (such as the tenants and their usage): `get` and
//! `list` (with label and field selectors, and as Tables) are answered from a [`Computed`] source, the other verbs
//! are not served. Their scheme, discovery, OpenAPI and table columns are a built-in plugin's, as for any type.
//!
//! Computed objects carry no `resourceVersion` (nothing is stored), and a list is never paginated.

use hyper::{Response, StatusCode};
use serde_json::{json, Value};

use super::response::Body;
use super::scope::Scope;
use apimachinery::object;
use apimachinery::status::ApiError;
use builtin::Computed;

/// `get` of a computed object.
pub fn get(s: &Scope<'_>, source: &dyn Computed) -> Result<Response<Body>, ApiError> {
    let obj = source.get(s.name())?;
    if let Some(t) = s.table()? {
        let row = t.row(&obj, Some(&obj))?;
        return Ok(s.respond(StatusCode::OK, &t.table(vec![row], json!({})), &[]));
    }
    Ok(s.respond(StatusCode::OK, &obj, &[]))
}

/// `list` of computed objects, filtered by the request's selectors.
pub fn list(s: &Scope<'_>, source: &dyn Computed) -> Result<Response<Body>, ApiError> {
    let params = s.list_params()?;
    let items: Vec<Value> = source
        .list()
        .into_iter()
        .filter(|obj| {
            let labels_match = params.labels.as_ref().is_none_or(|ls| ls.matches(&object::labels(obj)));
            let fields_match = params.fields.as_ref().is_none_or(|fs| {
                fs.matches(|field| match field {
                    "metadata.name" => Some(object::name(obj).to_owned()),
                    "metadata.namespace" => Some(String::new()),
                    _ => None,
                })
            });
            labels_match && fields_match
        })
        .collect();
    if let Some(t) = s.table()? {
        let rows = items
            .iter()
            .map(|item| t.row(item, Some(item)))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(s.respond(StatusCode::OK, &t.table(rows, json!({})), &[]));
    }
    let list = json!({
        "apiVersion": s.store.api_version(),
        "kind": format!("{}List", s.store.resource.kind),
        "metadata": {},
        "items": items,
    });
    Ok(s.respond(StatusCode::OK, &list, &[]))
}
