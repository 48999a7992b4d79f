//! The HTTP API: routing of a request to discovery, OpenAPI, health or a resource handler.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE, ETAG};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

pub mod computed;
pub mod context;
pub mod discovery;
pub mod negotiate;
pub mod openapi;
pub mod protobuf;
pub mod request_info;
pub mod resource;
pub mod response;
pub mod scope;
mod snapshot;
pub mod table;
pub mod token;
pub mod watch;
pub mod wire_list;

pub use token::TenantTokens;

use apimachinery::scheme::GroupInfo;
use loader::PluginDir;
use negotiate::{negotiate, MAX_BODY_BYTES};
use registry::Registry;

use crate::context::RequestContext;
use apimachinery::status::ApiError;
use component_base::metrics::RequestKind;
use response::Body;

/// How long the storage health check waits for the store.
const STORAGE_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The API handler: everything behind the filters.
pub struct Api {
    /// The registry.
    pub registry: Arc<Registry>,
    /// The plugin directory, for load failures in `/readyz?verbose`.
    pub plugins: Option<Arc<PluginDir>>,
    /// What the access reviews consult (the server's authorizer).
    pub access: Option<authz::reviews::Access>,
    /// Resources whose objects are computed on each read rather than stored (a tenant's view of itself).
    pub computed: Option<Arc<dyn builtin::Computed>>,
    /// What takes the bytes PUT to a Plugin's `content` subresource.
    pub uploads: Option<Arc<dyn Uploads>>,
    /// Snapshots of the server's store, served as `GET /snapshot` (at the root only: a snapshot holds every tenant).
    pub snapshots: Option<Arc<dyn Snapshots>>,
    /// The issuer of the tenant's service account tokens (`serviceaccounts/<name>/token`).
    pub service_accounts: Option<TenantTokens>,
    /// The server's authenticator, which TokenReviews ask.
    pub authenticator: Option<Arc<authn::authenticator::Authenticator>>,
}

/// Snapshots of the server's store (the embedded one: etcd has its own, `etcdctl snapshot save`), served as
/// `GET /snapshot` to whoever may get that non-resource URL (cluster-admin, system:masters), streamed as written.
pub trait Snapshots: Send + Sync {
    /// Writes a snapshot of everything the store holds, at the one revision a read of it sees while writes go on,
    /// to `out`. Called on a blocking thread: a write to `out` waits while the client is slow to read.
    fn save(&self, out: &mut dyn std::io::Write) -> Result<(), String>;
}

/// The `content` subresource of Plugin objects (`plugins/<name>/content`): a component's bytes, PUT as
/// `application/wasm`, larger than any object ([`Uploads::max_bytes`]).
pub trait Uploads: Send + Sync {
    /// The most bytes an upload may have (`--plugin-max-upload-bytes`); more is 413.
    fn max_bytes(&self) -> usize;

    /// The group and resource whose `content` subresource it takes.
    fn resource(&self) -> (&str, &str);

    /// Stores the component `body` of the Plugin `name` (its `Content-Type` is `content_type`) and answers with the
    /// Plugin.
    fn put<'a>(
        &'a self,
        name: &'a str,
        content_type: Option<&'a str>,
        body: Bytes,
    ) -> storage::BoxFuture<'a, Result<Value, ApiError>>;
}

/// Whether a request is for the `content` subresource that `uploads` takes.
fn is_upload(info: &request_info::RequestInfo, uploads: &dyn Uploads) -> bool {
    let (group, resource) = uploads.resource();
    info.group == group && info.resource == resource && info.subresource.as_deref() == Some("content")
}

fn header(req: &Request<Incoming>, name: hyper::header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// What answers a served resource's requests, as kube's `APIInstaller` registers each REST storage by the interfaces
/// it implements: the registry's generic store for stored types, and two storages of the server's own kinds.
#[derive(Clone, Copy)]
pub enum RestStorage<'a> {
    /// The registry's generic store: every verb the resource's strategy serves.
    Generic,
    /// Objects computed on each read (the tenants and their usage): `get` and `list`.
    Computed(&'a dyn builtin::Computed),
    /// Reviews answered when created and never stored (the access reviews): `create` only; `None` when the server
    /// has no authorizer to consult.
    Reviews(Option<&'a authz::reviews::Access>),
}

impl Api {
    /// The storage answering requests for a resource of `group`.
    pub fn rest_storage(&self, group: &str, resource: &str) -> RestStorage<'_> {
        if builtin::reviews::is_review(group) {
            RestStorage::Reviews(self.access.as_ref())
        } else if let Some(computed) = self.computed.as_deref().filter(|c| c.serves(group, resource)) {
            RestStorage::Computed(computed)
        } else {
            RestStorage::Generic
        }
    }

    fn groups(&self) -> Vec<GroupInfo> {
        self.registry.apis().group_infos()
    }

    /// Serves one request, after the filters (`ctx` holds its request info and user).
    pub async fn serve(&self, req: Request<Incoming>, ctx: &RequestContext) -> Response<Body> {
        let accept = req.headers().get(ACCEPT).cloned();
        let mut kind = RequestKind::other(req.method());
        let mut resp = match self.route(req, ctx, &mut kind).await {
            Ok(resp) => resp,
            Err(e) => {
                let output = negotiate(accept.as_ref().and_then(|v| v.to_str().ok()), false).ok();
                response::error(&e, output)
            }
        };
        // For the request metrics, recorded when the response is sent.
        resp.extensions_mut().insert(kind);
        resp
    }

    /// Answers a request; sets `kind` when it is a request for a served resource.
    async fn route(
        &self,
        req: Request<Incoming>,
        ctx: &RequestContext,
        kind: &mut RequestKind,
    ) -> Result<Response<Body>, ApiError> {
        let info = &ctx.info;
        let accept = header(&req, ACCEPT).map(str::to_string);
        let method = req.method().clone();
        if !info.resource_request {
            if method != Method::GET {
                return Err(ApiError::path_not_found());
            }
            let segments: Vec<&str> = info.path.split('/').filter(|s| !s.is_empty()).collect();
            if let [endpoint @ ("healthz" | "livez" | "readyz")] = segments.as_slice() {
                return Ok(self.health(endpoint, &ctx.query).await);
            }
            if let (["snapshot"], Some(snapshots)) = (segments.as_slice(), &self.snapshots) {
                return snapshot::serve(snapshots.clone()).await;
            }
            return self
                .non_resource(&segments, accept.as_deref(), req.uri().query())?
                .ok_or_else(ApiError::path_not_found);
        }
        let core = info.api_prefix == "api" && info.group.is_empty();
        if (info.api_prefix != "apis" && !core) || info.parts.len() > 3 || info.name.as_deref() == Some("") {
            return Err(ApiError::path_not_found());
        }
        let subresource = info.subresource.as_deref();
        if self
            .registry
            .serves(&info.group, &info.version, &info.resource, subresource)
        {
            *kind = info.metric_kind(&method);
        }
        let content_type = header(&req, CONTENT_TYPE).map(str::to_string);
        if let Some(uploads) = self.uploads.as_deref().filter(|u| is_upload(info, *u)) {
            // A component, not an object: its own size limit, and not kept for the audit log.
            if info.verb != "update" {
                return Err(ApiError::method_not_allowed(
                    method.as_str(),
                    &info.group,
                    "plugins/content",
                ));
            }
            let name = info.name.as_deref().unwrap_or_default();
            let body = read_body(req, uploads.max_bytes()).await?;
            let plugin = uploads.put(name, content_type.as_deref(), body).await?;
            return Ok(response::object(
                StatusCode::OK,
                negotiate::Output::JSON,
                &plugin,
                false,
            ));
        }
        let body = read_body(req, MAX_BODY_BYTES).await?;
        if let Some(slot) = &ctx.audit_body {
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(body.clone());
            }
        }
        resource::serve(self, ctx, accept.as_deref(), content_type.as_deref(), &method, body).await
    }

    /// Discovery, OpenAPI, version and health.
    fn non_resource(
        &self,
        segments: &[&str],
        accept: Option<&str>,
        query: Option<&str>,
    ) -> Result<Option<Response<Body>>, ApiError> {
        let json = |v: &Value| response::object(StatusCode::OK, negotiate::Output::JSON, v, false);
        let resp = match segments {
            ["healthz", _] | ["livez", _] | ["readyz", _] => response::text(StatusCode::OK, "ok"),
            ["version"] => json(&discovery::version_info()),
            ["metrics"] => {
                self.registry.record_cache_metrics();
                response::text(StatusCode::OK, component_base::metrics::metrics().encode())
            }
            ["api"] => {
                if wants_aggregated(accept) {
                    let groups = self.groups();
                    let core = groups
                        .iter()
                        .find(|g| g.group.is_empty())
                        .ok_or_else(ApiError::path_not_found)?;
                    aggregated(&discovery::aggregated_legacy_discovery(core))
                } else {
                    json(&discovery::api_versions())
                }
            }
            ["api", v] => {
                let groups = self.groups();
                let core = groups
                    .iter()
                    .find(|g| g.group.is_empty())
                    .ok_or_else(ApiError::path_not_found)?;
                json(&discovery::api_resource_list(core, v).ok_or_else(ApiError::path_not_found)?)
            }
            ["apis"] => {
                let groups = self.groups();
                if wants_aggregated(accept) {
                    aggregated(&discovery::aggregated_discovery(&groups))
                } else {
                    json(&discovery::api_group_list(&groups))
                }
            }
            ["apis", g] => {
                let groups = self.groups();
                let group = groups
                    .iter()
                    .find(|x| x.group == *g)
                    .ok_or_else(ApiError::path_not_found)?;
                json(&discovery::api_group(group))
            }
            ["apis", g, v] => {
                let groups = self.groups();
                let group = groups
                    .iter()
                    .find(|x| x.group == *g)
                    .ok_or_else(ApiError::path_not_found)?;
                json(&discovery::api_resource_list(group, v).ok_or_else(ApiError::path_not_found)?)
            }
            ["openapi", "v2"] => {
                // kubectl asks for protobuf only; a stub tells it to rely on server-side field validation.
                if accept.is_some_and(|a| a.contains("protobuf") && !a.contains("json") && !a.contains("*/*")) {
                    let mut resp = Response::new(response::full(openapi::openapi_v2_protobuf_stub()));
                    resp.headers_mut().insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static(openapi::OPENAPI_V2_PROTOBUF_CONTENT_TYPE),
                    );
                    return Ok(Some(resp));
                }
                json(&openapi::openapi_v2(&self.groups()))
            }
            // Service account issuer discovery (kube's `/.well-known/openid-configuration` and its keys), for relying
            // parties that verify the tenant's tokens.
            [".well-known", "openid-configuration"] => {
                let tokens = self.service_accounts.as_ref().ok_or_else(ApiError::path_not_found)?;
                json(
                    &tokens
                        .tokens
                        .discovery(tokens.tenant.as_deref())
                        .ok_or_else(ApiError::path_not_found)?,
                )
            }
            ["openid", "v1", "jwks"] => {
                let tokens = self.service_accounts.as_ref().ok_or_else(ApiError::path_not_found)?;
                let mut resp = json(&tokens.tokens.jwks());
                resp.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/jwk-set+json"));
                resp
            }
            ["openapi", "v3"] => json(self.registry.apis().openapi_v3_root(openapi::openapi_v3_root)),
            ["openapi", "v3", "apis", g, v] => self.openapi_v3(g, v, query)?,
            ["openapi", "v3", "api", v] => self.openapi_v3("", v, query)?,
            _ => return Ok(None),
        };
        Ok(Some(resp))
    }
}

impl Api {
    /// A group version's OpenAPI v3 document, with its hash as ETag.
    fn openapi_v3(&self, g: &str, v: &str, query: Option<&str>) -> Result<Response<Body>, ApiError> {
        let json = |v: &Value| response::object(StatusCode::OK, negotiate::Output::JSON, v, false);
        let groups = self.groups();
        let group = groups
            .iter()
            .find(|x| x.group == g)
            .ok_or_else(ApiError::path_not_found)?;
        let (doc, hash) = openapi::openapi_v3_group_version(group, v).ok_or_else(ApiError::path_not_found)?;
        let mut resp = json(&doc);
        if let Ok(etag) = HeaderValue::from_str(&format!("\"{hash}\"")) {
            resp.headers_mut().insert(ETAG, etag);
        }
        let hashed = query.is_some_and(|q| q.contains("hash="));
        let cache = if hashed {
            "public, immutable"
        } else {
            "no-cache, private"
        };
        resp.headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static(cache));
        Ok(resp)
    }

    /// `/healthz`, `/livez`, `/readyz`: "ok", or with `?verbose` each check, and for readyz the plugins that failed
    /// to load (reported, but not counted against readiness: the other plugins keep serving).
    async fn health(&self, endpoint: &str, query: &std::collections::HashMap<String, String>) -> Response<Body> {
        let verbose = query.contains_key("verbose");
        // liveness does not depend on storage (a restart would not fix it); health and readiness do.
        let storage = if endpoint == "livez" {
            Ok(())
        } else {
            match tokio::time::timeout(STORAGE_CHECK_TIMEOUT, self.registry.storage.current_revision()).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {STORAGE_CHECK_TIMEOUT:?}")),
            }
        };
        if storage.is_ok() && !verbose {
            return response::text(StatusCode::OK, "ok");
        }
        let mut out = String::from("[+]ping ok\n[+]log ok\n");
        match &storage {
            Ok(()) if endpoint != "livez" => out.push_str("[+]storage ok\n"),
            Ok(()) => {}
            Err(e) => out.push_str(&format!("[-]storage failed: {e}\n")),
        }
        if endpoint == "readyz" {
            // Each with the content hash of its component, so that hosts sharing a store can be compared.
            let served: Vec<String> = self
                .registry
                .apis()
                .plugins()
                .filter(|p| !p.is_builtin())
                .map(|p| {
                    let hash = self.plugins.as_ref().and_then(|d| d.hash_of(p));
                    match hash {
                        Some(hash) if hash.len() >= 12 => format!("{} (sha256:{})", p.name(), &hash[..12]),
                        _ => p.name().to_string(),
                    }
                })
                .collect();
            out.push_str(&format!(
                "[+]plugins ok ({} served: {})\n",
                served.len(),
                served.join(", ")
            ));
            for f in self.plugins.as_ref().map(|p| p.failures()).unwrap_or_default() {
                let reason = f.reason.replace('\n', " ");
                let what = if f.shadowed_by.is_some() {
                    "is not served"
                } else {
                    "failed to load"
                };
                out.push_str(&format!("[-]plugin/{} {what} (not counted): {reason}\n", f.file));
            }
        }
        if storage.is_ok() {
            out.push_str(&format!("{endpoint} check passed\n"));
            response::text(StatusCode::OK, out)
        } else {
            out.push_str(&format!("{endpoint} check failed\n"));
            response::text(StatusCode::INTERNAL_SERVER_ERROR, out)
        }
    }
}

fn wants_aggregated(accept: Option<&str>) -> bool {
    accept.is_some_and(discovery::wants_aggregated_discovery)
}

fn aggregated(doc: &Value) -> Response<Body> {
    let mut resp = response::object(StatusCode::OK, negotiate::Output::JSON, doc, false);
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(discovery::AGGREGATED_DISCOVERY_CONTENT_TYPE),
    );
    resp
}

/// Set, in a request's extensions, once the handlers have read the request body to its end: the server then knows
/// whether the connection can carry another request (an unread body is left in it).
#[derive(Clone, Debug, Default)]
pub struct BodyRead(pub Arc<std::sync::atomic::AtomicBool>);

impl BodyRead {
    /// Whether the body was read to its end.
    pub fn is_read(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Reads a request body, refusing more than `limit` bytes ([`MAX_BODY_BYTES`] for objects) with 413; marks its
/// [`BodyRead`] once read.
async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    if hyper::body::Body::is_end_stream(req.body()) {
        return Ok(Bytes::new());
    }
    let read = req.extensions().get::<BodyRead>().cloned();
    let limited = Limited::new(req.into_body(), limit);
    match limited.collect().await {
        Ok(c) => {
            if let Some(read) = read {
                read.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(c.to_bytes())
        }
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => Err(ApiError::too_large(limit)),
        Err(e) => Err(ApiError::bad_request(format!("reading the request body: {e}"))),
    }
}
