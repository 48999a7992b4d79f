//! The REST handlers of resource requests: one function per verb, sharing a [`Scope`] ([`super::scope`]).

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Method, Response, StatusCode};
use serde_json::{json, Value};

use super::negotiate::{decode_object, negotiate, Encoding, Output};
use super::response::{self, add_warnings, Body};
use super::scope::{not_supported, Scope};
use super::watch;
use crate::RestStorage;
use apimachinery::status::{ApiError, Cause};
use apimachinery::FieldError as HostFieldError;
use registry::gc::Propagation;
use registry::read::ReadAt;
use registry::store::{ResourceStore, Subresource};

/// Serves a resource request to `api` made in `ctx` (its request info, query and user). `body` is the
/// (size-limited) request body. Reads of the resources the API computes (its tenants) are answered without storage.
pub async fn serve(
    api: &super::Api,
    ctx: &crate::context::RequestContext,
    accept: Option<&str>,
    content_type: Option<&str>,
    method: &Method,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let registry = &api.registry;
    let (info, query, user) = (&ctx.info, &ctx.query, &ctx.user);
    let apis = registry.apis();
    let installed = apis
        .store(&info.group, &info.resource)
        .cloned()
        .ok_or_else(ApiError::path_not_found)?;
    let resource = &installed.resource;
    let version = resource
        .served_version(&info.version)
        .ok_or_else(ApiError::path_not_found)?;
    let subresource = match info.subresource.as_deref() {
        None => Subresource::None,
        Some("status") if version.subresources.status => Subresource::Status,
        Some("scale") if version.subresources.scale.is_some() => Subresource::Scale,
        Some("finalize") if version.subresources.finalize => Subresource::Finalize,
        Some("token") if version.subresources.token => Subresource::Token,
        Some(_) => return Err(ApiError::path_not_found()),
    };
    let mut info = std::borrow::Cow::Borrowed(info);
    if info.group.is_empty() && info.resource == "namespaces" && info.namespace.is_some() {
        // A namespace's own path names it as the namespace too (kube's request info): it is cluster-scoped.
        info.to_mut().namespace = None;
    }
    if info.namespace.is_some() && !resource.namespaced {
        return Err(ApiError::path_not_found());
    }
    let cross_namespace_ok = matches!(info.verb, "list" | "watch");
    if resource.namespaced && info.namespace.is_none() && !cross_namespace_ok {
        return Err(ApiError::path_not_found());
    }
    let verb_served = match subresource {
        Subresource::None => resource.has_verb(info.verb),
        Subresource::Finalize => crate::discovery::FINALIZE_VERBS.contains(&info.verb),
        Subresource::Token => crate::discovery::CREATE_VERBS.contains(&info.verb),
        _ => apimachinery::scheme::SUBRESOURCE_VERBS.contains(&info.verb),
    };
    if info.verb == "unknown" || !verb_served {
        return Err(ApiError::method_not_allowed(
            method.as_str(),
            &info.group,
            &info.resource,
        ));
    }
    let allow_table = matches!(info.verb, "get" | "list" | "watch") && subresource != Subresource::Scale;
    let output = negotiate(accept, allow_table)?;
    let mut warnings = Vec::new();
    if version.deprecated {
        warnings.push(
            version
                .deprecation_warning
                .clone()
                .unwrap_or_else(|| format!("{}/{} {} is deprecated", info.group, info.version, resource.kind)),
        );
    }
    let cache = registry.cache(&info.group, &resource.plural);
    let store = Arc::new(ResourceStore {
        installed: installed.clone(),
        apis,
        cache,
        version: info.version.clone(),
        user: user.clone(),
        subresource,
        field_manager: field_manager(query.get("fieldManager").map(String::as_str), &ctx.user_agent),
    });
    let pretty = query.get("pretty").and_then(|v| apimachinery::parse_bool(v)) == Some(true);
    let scope = Scope {
        info,
        store,
        query,
        output,
        pretty,
        warnings,
    };
    let storage = api.rest_storage(&scope.info.group, &scope.info.resource);
    let scale = subresource == Subresource::Scale;
    let mut resp = match (storage, scope.info.verb) {
        (_, "get") if scale => get_scale(&scope).await,
        (_, "update") if scale => update_scale(&scope, content_type, &body).await,
        (_, "patch") if scale => patch_scale(&scope, content_type, &body).await,
        (_, "create") if subresource == Subresource::Token => {
            super::token::request(&scope, api.service_accounts.as_ref(), content_type, &body).await
        }
        // POST names no object: an item path has no POST (kube answers 405; the body's name is not created).
        (_, "create") if scope.info.name.is_some() => Err(ApiError::method_not_allowed(
            method.as_str(),
            &scope.info.group,
            &scope.info.resource,
        )),
        (RestStorage::Computed(c), "get") => super::computed::get(&scope, c),
        (RestStorage::Computed(c), "list") => super::computed::list(&scope, c),
        // Computed objects have no other verb (a tenant's view of itself has no watch, its root's stored one has).
        (RestStorage::Computed(_), _) => Err(ApiError::method_not_allowed(
            method.as_str(),
            &scope.info.group,
            &scope.info.resource,
        )),
        (RestStorage::Reviews(_), "create") if scope.info.resource == "tokenreviews" => {
            let tenant = api.service_accounts.as_ref().and_then(|t| t.tenant.as_deref());
            super::token::review(&scope, api.authenticator.as_deref(), tenant, content_type, &body).await
        }
        (RestStorage::Reviews(access), "create") => review(&scope, access, content_type, &body).await,
        (_, "get") => get(&scope).await,
        (_, "list") => list(&scope).await,
        (_, "watch") => watch::serve(&scope).await,
        (_, "create") => create(&scope, content_type, &body).await,
        (_, "update") => update(&scope, content_type, &body).await,
        (_, "patch") => patch(&scope, content_type, &body).await,
        (_, "delete") => delete(&scope, &body).await,
        (_, "deletecollection") => delete_collection(&scope, &body).await,
        _ => Err(ApiError::method_not_allowed(
            method.as_str(),
            &scope.info.group,
            &scope.info.resource,
        )),
    }
    .map_err(|e| (e, scope.output))
    .unwrap_or_else(|(e, output)| response::error(&e, Some(output)));
    add_warnings(&mut resp, &scope.warnings);
    Ok(resp)
}

/// The field manager of a request's writes: its `fieldManager`, else its user agent up to the first `/` (as kube
/// names them).
fn field_manager(param: Option<&str>, user_agent: &str) -> String {
    match param.filter(|m| !m.is_empty()) {
        Some(m) => m.to_owned(),
        None => user_agent.split('/').next().unwrap_or("").to_owned(),
    }
}

async fn get(s: &Scope<'_>) -> Result<Response<Body>, ApiError> {
    let at = ReadAt::for_get(s.q("resourceVersion"))?;
    // Plain JSON is written from the stored bytes, as lists are, when the request needs no parsed object.
    if s.output == Output::JSON && !s.pretty {
        if let Some(item) = s.store.get_wire(s.ns(), s.name(), at).await? {
            return Ok(super::wire_list::object_response(item));
        }
    }
    let obj = s.store.get(s.ns(), s.name(), at).await?;
    if let Some(t) = s.table()? {
        let rv = obj
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .cloned()
            .unwrap_or(json!(""));
        let row = t.row(&s.stored_form(&obj)?, Some(&obj))?;
        return Ok(s.respond(StatusCode::OK, &t.table(vec![row], json!({"resourceVersion": rv})), &[]));
    }
    Ok(s.respond(StatusCode::OK, &obj, &[]))
}

async fn list(s: &Scope<'_>) -> Result<Response<Body>, ApiError> {
    let params = s.list_params()?;
    // Plain JSON is written from the stored bytes when the request needs no parsed object (no selector, no
    // defaults on read).
    if s.output == Output::JSON && !s.pretty {
        if let Some(out) = s.store.list_wire(s.ns(), &params).await? {
            let kind = format!("{}List", s.store.resource.kind);
            return Ok(super::wire_list::response(&s.store.api_version(), &kind, out));
        }
    }
    // A Table in JSON is written from the stored bytes and the remembered cells likewise.
    if let Some(t) = s.table()?.filter(|_| s.output.encoding == Encoding::Json && !s.pretty) {
        if let Some(page) = s.store.list_shared(s.ns(), &params).await? {
            let (body, _) = t.wire_table(&s.store, &page)?;
            let mut resp = Response::new(response::full(body));
            if let Ok(ct) = hyper::header::HeaderValue::from_str(&s.output.content_type()) {
                resp.headers_mut().insert(hyper::header::CONTENT_TYPE, ct);
            }
            return Ok(resp);
        }
    }
    let out = s.store.list(s.ns(), &params).await?;
    let mut meta = json!({"resourceVersion": out.resource_version.to_string()});
    if let Some(c) = &out.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(r) = out.remaining {
        meta["remainingItemCount"] = json!(r);
    }
    if let Some(t) = s.table()? {
        let mut rows = Vec::with_capacity(out.items.len());
        for item in &out.items {
            rows.push(t.row(&s.stored_form(item)?, Some(item))?);
        }
        return Ok(s.respond(StatusCode::OK, &t.table(rows, meta), &[]));
    }
    let list = json!({
        "apiVersion": s.store.api_version(),
        "kind": format!("{}List", s.store.resource.kind),
        "metadata": meta,
        "items": out.items,
    });
    Ok(s.respond(StatusCode::OK, &list, &[]))
}

async fn create(s: &Scope<'_>, content_type: Option<&str>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let opts = s.write_options("CreateOptions")?;
    let obj = decode_object(content_type, body)?;
    let w = s.store.create(s.ns(), obj, opts).await?;
    Ok(s.respond(StatusCode::CREATED, &w.object, &w.warnings))
}

/// A review, answered by the authorizer it consults and not stored.
async fn review(
    s: &Scope<'_>,
    access: Option<&authz::reviews::Access>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    s.write_options("CreateOptions")?;
    let obj = decode_object(content_type, body)?;
    let access = access.ok_or_else(|| ApiError::internal("access reviews are not available"))?;
    let out = authz::reviews::create(access, &s.info.group, &s.info.resource, s.ns(), &s.store.user, obj).await?;
    Ok(s.respond(StatusCode::CREATED, &out, &[]))
}

async fn update(s: &Scope<'_>, content_type: Option<&str>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let opts = s.write_options("UpdateOptions")?;
    let obj = decode_object(content_type, body)?;
    let w = s.store.update(s.ns(), s.name(), obj, opts).await?;
    let code = if w.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(s.respond(code, &w.object, &w.warnings))
}

/// A patch, applied to the current object.
pub(super) type ApplyPatch = dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync;

async fn patch(s: &Scope<'_>, content_type: Option<&str>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let opts = s.write_options("PatchOptions")?;
    let is_apply = essence(content_type) == "application/apply-patch+yaml";
    let force = s.bool_param("force")?;
    if is_apply {
        if s.q("fieldManager").is_none_or(str::is_empty) {
            let cause = HostFieldError::required("fieldManager", "is required for apply patch").into();
            return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", vec![cause]));
        }
        let config: Value = super::negotiate::decode_yaml(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        let w = s
            .store
            .apply(s.ns(), s.name(), config, force.unwrap_or(false), opts)
            .await?;
        let code = if w.created { StatusCode::CREATED } else { StatusCode::OK };
        return Ok(s.respond(code, &w.object, &w.warnings));
    }
    if force.is_some() {
        let cause = HostFieldError::forbidden("force", "may not be specified for non-apply patch").into();
        return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", vec![cause]));
    }
    // kube takes strategic merge patches for its compiled-in types only (not for custom resources): here, the
    // built-in groups.
    let apply = parse_patch(content_type, body, s.store.plugin.is_builtin())?;
    let w = s.store.patch(s.ns(), s.name(), apply, opts).await?;
    Ok(s.respond(StatusCode::OK, &w.object, &w.warnings))
}

async fn get_scale(s: &Scope<'_>) -> Result<Response<Body>, ApiError> {
    let at = ReadAt::for_get(s.q("resourceVersion"))?;
    let scale = s.store.get_scale(s.ns(), s.name(), at).await?;
    Ok(s.respond(StatusCode::OK, &scale, &[]))
}

async fn update_scale(s: &Scope<'_>, content_type: Option<&str>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let opts = s.write_options("UpdateOptions")?;
    let scale = decode_object(content_type, body)?;
    let w = s
        .store
        .write_scale(s.ns(), s.name(), |_| Ok(scale.clone()), opts)
        .await?;
    Ok(s.respond(StatusCode::OK, &w.object, &w.warnings))
}

async fn patch_scale(s: &Scope<'_>, content_type: Option<&str>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let opts = s.write_options("PatchOptions")?;
    let apply = parse_patch(content_type, body, false)?;
    let w = s.store.write_scale(s.ns(), s.name(), apply, opts).await?;
    Ok(s.respond(StatusCode::OK, &w.object, &w.warnings))
}

/// Applies a JSON patch as kube's library (evanphx/json-patch) does: operation by operation, a `test` for `null`
/// passing on a missing path (kube-rs adds its first finalizer with `test /metadata/finalizers null`).
fn json_patch_apply(current: &Value, patch: &json_patch::Patch) -> Result<Value, ApiError> {
    let mut doc = current.clone();
    for op in &patch.0 {
        if let json_patch::PatchOperation::Test(test) = op {
            if test.value.is_null() && doc.pointer(test.path.as_str()).is_none_or(Value::is_null) {
                continue;
            }
        }
        json_patch::patch(&mut doc, std::slice::from_ref(op)).map_err(|e| {
            ApiError::new(
                422,
                "Invalid",
                format!("the server rejected our request due to an error in our request: {e}"),
            )
        })?;
    }
    Ok(doc)
}

/// The media type of a Content-Type, without parameters, in lower case.
fn essence(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// A patch body of one of the served patch types (but apply), as a function of the current object; `strategic`:
/// strategic merge patches are taken too (with the patch metadata of kube's built-in types).
pub fn parse_patch(content_type: Option<&str>, body: &[u8], strategic: bool) -> Result<Box<ApplyPatch>, ApiError> {
    let essence = essence(content_type);
    let apply: Box<ApplyPatch> = match essence.as_str() {
        "application/merge-patch+json" => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            Box::new(move |current: &Value| {
                let mut doc = current.clone();
                json_patch::merge(&mut doc, &patch);
                Ok(doc)
            })
        }
        "application/json-patch+json" => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            Box::new(move |current: &Value| json_patch_apply(current, &patch))
        }
        "application/strategic-merge-patch+json" if strategic => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("a strategic merge patch must be a JSON object"));
            }
            Box::new(move |current: &Value| {
                apimachinery::strategic::apply(current, &patch, &apimachinery::strategic::builtin_lists).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!("the server rejected our request due to an error in our request: {e}"),
                    )
                })
            })
        }
        "application/strategic-merge-patch+json" | "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {essence})"),
            ))
        }
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    Ok(apply)
}

/// Reads DeleteOptions from a body (lenient: an empty body is fine).
pub fn delete_options_body(body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    if body.starts_with(b"k8s\0") {
        return super::protobuf::decode(body);
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("error decoding DeleteOptions: not an object"));
    }
    Ok(value)
}

/// A request's DeleteOptions: its query parameters, overridden by its body's fields, validated as kube's
/// ValidateDeleteOptions (422 Invalid on DeleteOptions.meta.k8s.io).
struct DeleteOptions {
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
    /// `propagationPolicy`, or the deprecated `orphanDependents` (true: Orphan, false: Background).
    propagation: Option<Propagation>,
}

impl Scope<'_> {
    fn delete_options(&self, body: &[u8]) -> Result<DeleteOptions, ApiError> {
        let mut opts = json!({});
        if let Some(v) = self.q("gracePeriodSeconds").filter(|v| !v.is_empty()) {
            let n: i64 = v
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid value for gracePeriodSeconds: {v:?}")))?;
            opts["gracePeriodSeconds"] = json!(n);
        }
        if let Some(v) = self.q("propagationPolicy").filter(|v| !v.is_empty()) {
            opts["propagationPolicy"] = json!(v);
        }
        if let Some(v) = self.bool_param("orphanDependents")? {
            opts["orphanDependents"] = json!(v);
        }
        if let Some(v) = self.q("dryRun").filter(|v| !v.is_empty()) {
            opts["dryRun"] = json!([v]);
        }
        if let Value::Object(body) = delete_options_body(body)? {
            for (k, v) in body {
                if !v.is_null() {
                    opts[k] = v;
                }
            }
        }
        let mut causes = Vec::new();
        let mut unsupported =
            |field: &str, value: &str, supported: &[&str]| causes.push(not_supported(field, value, supported));
        let policy = opts.get("propagationPolicy").and_then(Value::as_str).map(str::to_owned);
        if let Some(p) = &policy {
            if !["Foreground", "Background", "Orphan"].contains(&p.as_str()) {
                unsupported("propagationPolicy", p, &["Foreground", "Background", "Orphan"]);
            }
        }
        let mut dry_run = false;
        for v in opts.get("dryRun").and_then(Value::as_array).into_iter().flatten() {
            match v.as_str() {
                Some("All") => dry_run = true,
                other => unsupported("dryRun", other.unwrap_or(""), &["All"]),
            }
        }
        if let (Some(p), Some(_)) = (&policy, opts.get("orphanDependents").filter(|v| !v.is_null())) {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{p}\": orphanDependents and deletionPropagation cannot be both set"),
                field: "propagationPolicy".into(),
            });
        }
        if let Some(g) = opts.get("gracePeriodSeconds").filter(|v| !v.is_null()) {
            if !g.is_i64() {
                return Err(ApiError::bad_request(format!(
                    "invalid value for gracePeriodSeconds: {g}"
                )));
            }
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "DeleteOptions", "", causes));
        }
        let propagation = match opts.get("orphanDependents").and_then(Value::as_bool) {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => policy.as_deref().and_then(Propagation::parse),
        };
        let pre = opts.get("preconditions");
        let field = |f: &str| pre.and_then(|p| p.get(f)).and_then(Value::as_str).map(str::to_owned);
        Ok(DeleteOptions {
            uid: field("uid"),
            resource_version: field("resourceVersion"),
            dry_run,
            propagation,
        })
    }
}

async fn delete(s: &Scope<'_>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let opts = s.delete_options(body)?;
    let deleted = s
        .store
        .delete(
            s.ns(),
            s.name(),
            opts.uid.as_deref(),
            opts.resource_version.as_deref(),
            opts.dry_run,
            opts.propagation,
        )
        .await?;
    if deleted.pointer("/metadata/deletionTimestamp").is_some() {
        // Marked for deletion (finalizers to run, a namespace turning Terminating): kube answers with the object.
        return Ok(s.respond(StatusCode::OK, &deleted, &[]));
    }
    let uid = deleted
        .get("metadata")
        .and_then(|m| m.get("uid"))
        .cloned()
        .unwrap_or(json!(""));
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": s.name(), "group": s.info.group, "kind": s.info.resource, "uid": uid},
    });
    Ok(s.respond(StatusCode::OK, &status, &[]))
}

async fn delete_collection(s: &Scope<'_>, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let params = s.list_params()?;
    let opts = s.delete_options(body)?;
    let out = s.store.list(s.ns(), &params).await?;
    let mut deleted = Vec::new();
    for item in out.items {
        let name = apimachinery::object::name(&item).to_string();
        let ns = item
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_string);
        match s
            .store
            .delete(ns.as_deref(), &name, None, None, opts.dry_run, opts.propagation)
            .await
        {
            Ok(obj) => deleted.push(obj),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "apiVersion": s.store.api_version(),
        "kind": format!("{}List", s.store.resource.kind),
        "metadata": {"resourceVersion": out.resource_version.to_string()},
        "items": deleted,
    });
    Ok(s.respond(StatusCode::OK, &list, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_managers_come_from_the_parameter_or_the_user_agent() {
        assert_eq!(field_manager(Some("ctl"), "kubectl/v1.37.1 (linux/amd64)"), "ctl");
        assert_eq!(field_manager(None, "kubectl/v1.37.1 (linux/amd64)"), "kubectl");
        assert_eq!(field_manager(Some(""), "curl/8.0"), "curl");
    }

    #[test]
    fn json_patches_test_null_on_missing_paths_as_kube() {
        let patch = |ops: Value| -> json_patch::Patch { serde_json::from_value(ops).expect("patch") };
        let doc = json!({"metadata": {"name": "a"}});
        let added = json_patch_apply(
            &doc,
            &patch(json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}])),
        )
        .expect("test null on a missing path passes");
        assert_eq!(added["metadata"]["finalizers"], json!(["f"]));
        let failed = json_patch_apply(
            &added,
            &patch(json!([{"op": "test", "path": "/metadata/finalizers", "value": null}])),
        )
        .expect_err("the path holds a value");
        assert_eq!(failed.code, 422);
        let missing = json_patch_apply(&doc, &patch(json!([{"op": "remove", "path": "/spec"}])));
        assert_eq!(missing.expect_err("no /spec").code, 422);
    }
}
