//! Calling admission webhooks (kube's `webhook/mutating` and `webhook/validating` dispatchers): which match a
//! write, the AdmissionReview sent and the answer read, patches, reinvocation, failure policies, and kube's errors:
//!
//! - refused: the webhook's `status` with kube's message, `admission webhook "<name>" denied the request: <message>`
//!   (code 400 unless it gives one of 400 or more);
//! - not reached, timed out or answering nonsense, with `failurePolicy: Fail`: 500 InternalError, `failed calling
//!   webhook "<name>": ...`; with `Ignore`, the write goes on.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::chain::Mutated;
use crate::config::{Endpoint, Webhook};
use crate::request::Request;
use apimachinery::status::ApiError;
use builtin::str_at;
use schema::cel::Bindings;

/// The HTTPS clients of the webhooks, one per CA bundle.
#[derive(Default)]
pub struct Clients(Mutex<ClientMap>);

impl Clients {
    fn get(&self, ca: &[u8]) -> Result<reqwest::Client, String> {
        let mut clients = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = clients.get(ca) {
            return Ok(c.clone());
        }
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false);
        if ca.is_empty() {
            // No caBundle: the system's trust store, as kube's client trusts it then. (None found: no root, and
            // the call fails as kube's does, its certificate signed by an unknown authority.)
            for cert in system_roots() {
                builder = builder.add_root_certificate(cert.clone());
            }
        } else {
            let certs = reqwest::Certificate::from_pem_bundle(ca).map_err(|e| format!("the caBundle: {e}"))?;
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        if clients.len() > 256 {
            clients.clear();
        }
        clients.insert(ca.to_vec(), client.clone());
        Ok(client)
    }
}

/// The system's trust store, read once (its files are read and parsed: not at every new client).
fn system_roots() -> &'static [reqwest::Certificate] {
    static ROOTS: std::sync::LazyLock<Vec<reqwest::Certificate>> = std::sync::LazyLock::new(|| {
        let system = rustls_native_certs::load_native_certs();
        for e in &system.errors {
            tracing::warn!(error = %e, "reading the system's trust store for webhooks without a caBundle");
        }
        system
            .certs
            .iter()
            .filter_map(|der| reqwest::Certificate::from_der(der).ok())
            .collect()
    });
    &ROOTS
}

/// Why a call did not give an answer (kube's `ErrCallingWebhook`): subject to the failure policy.
struct CallError(String);

/// A webhook's answer.
struct Answer {
    allowed: bool,
    status: Value,
    patch: Option<json_patch::Patch>,
    warnings: Vec<String>,
}

/// A webhook's `auditAnnotations` join the request's audit events as `<webhook>/<key>` (kube's keys), whether it
/// allowed the write or not.
fn annotate(w: &Webhook, response: &Value) {
    let Some(annotations) = response.get("auditAnnotations").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in annotations {
        if let Some(value) = value.as_str() {
            component_base::audit::annotate(format!("{}/{key}", w.name), value);
        }
    }
}

/// Whether the webhook applies to the write, and in which version: its rules and selectors, then its match
/// conditions. `Err` is a failure subject to its policy.
async fn applies(w: &Webhook, r: &Request<'_>) -> Result<Option<String>, CallError> {
    let Some(version) = w.constraints.matching_version(r, false) else {
        return Ok(None);
    };
    if !w.constraints.select(r).await.map_err(CallError)? {
        return Ok(None);
    }
    if !w.conditions.is_empty() {
        let (object, old) = r.objects_in(&version).map_err(|e| CallError(e.message))?;
        let mut bindings = Bindings::default();
        bindings.bind("object", object.as_ref().unwrap_or(&Value::Null));
        bindings.bind("oldObject", old.as_ref().unwrap_or(&Value::Null));
        bindings.bind("request", &r.review_request(&version, None, None));
        match crate::config::conditions_hold(&w.conditions, &bindings) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => return Err(CallError(e)),
        }
    }
    Ok(Some(version))
}

/// Sends the AdmissionReview of the write (its objects `object` and `old`, in `version`) and reads the answer.
async fn call(
    clients: &Clients,
    w: &Webhook,
    r: &Request<'_>,
    version: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<Answer, CallError> {
    let url = match &w.endpoint {
        Endpoint::Url(url) => url,
        Endpoint::Invalid(why) => return Err(CallError(why.clone())),
    };
    let Some(review_version) = w.review_version else {
        return Err(CallError(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
                .into(),
        ));
    };
    let client = clients.get(&w.ca_bundle).map_err(CallError)?;
    let review = json!({
        "apiVersion": format!("admission.k8s.io/{review_version}"),
        "kind": "AdmissionReview",
        "request": r.review_request(version, object, old),
    });
    let failed = |e: &dyn std::fmt::Display| CallError(format!("failed to call webhook: Post {url:?}: {e}"));
    // The time the webhook has, as kube's client tells it: `?timeout=` in whole seconds.
    let mut post = client
        .post(url)
        .query(&[("timeout", format!("{}s", w.timeout.as_secs()))])
        .timeout(w.timeout)
        .json(&review);
    // The webhook's work joins the request's trace (W3C Trace Context), as kube-apiserver's calls do.
    if let Some(traceparent) = component_base::trace::traceparent() {
        post = post.header("traceparent", traceparent);
    }
    let response = post.send().await.map_err(|e| {
        if e.is_timeout() {
            CallError(format!(
                "failed to call webhook: Post {url:?}: context deadline exceeded"
            ))
        } else {
            failed(&error_chain(&e))
        }
    })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| failed(&e))?;
    if !status.is_success() {
        return Err(CallError(format!(
            "received invalid webhook response: the server responded with HTTP status {}",
            status.as_u16()
        )));
    }
    let answer: Value =
        serde_json::from_slice(&body).map_err(|e| CallError(format!("received invalid webhook response: {e}")))?;
    let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent"));
    };
    // kube's VerifyAdmissionResponse: a v1 answer is checked (its uid, its kind, a patch with its type; a validating
    // webhook's may hold no patch); a v1beta1 one is taken as it comes, as kube took them.
    let v1 = review_version == "v1";
    if v1 {
        let uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if uid != r.uid {
            return Err(invalid(&format!("expected response.uid={:?}, got {uid:?}", r.uid)));
        }
        let (api_version, kind) = (str_at(&answer, "/apiVersion"), str_at(&answer, "/kind"));
        if (api_version, kind) != ("admission.k8s.io/v1", "AdmissionReview") {
            return Err(invalid(&format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}",
                group_version_kind(api_version, kind)
            )));
        }
    }
    annotate(w, response);
    let encoded = response.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty());
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    if v1 && !w.mutating {
        if encoded.is_some() {
            return Err(invalid("validating webhook may not return response.patch"));
        }
        if patch_type.is_some() {
            return Err(invalid("validating webhook may not return response.patchType"));
        }
    } else if v1 {
        match (encoded, patch_type) {
            (Some(_), None) => return Err(invalid("webhook returned response.patch but not response.patchType")),
            (None, Some(_)) => return Err(invalid("webhook returned response.patchType but not response.patch")),
            _ => {}
        }
    }
    // (A v1beta1 validating webhook's patch is not read.)
    let patch = match encoded.filter(|_| w.mutating) {
        None => None,
        Some(encoded) => {
            // A v1beta1 answer's patch is a JSON patch whatever it says.
            let patch_type = if v1 {
                patch_type.and_then(Value::as_str).unwrap_or("")
            } else {
                "JSONPatch"
            };
            if patch_type.is_empty() {
                return Err(invalid(&format!(
                    "webhook returned invalid response.patchType of {patch_type:?}"
                )));
            }
            if patch_type != "JSONPatch" {
                return Err(CallError(format!("unsupported patch type {patch_type:?}")));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| CallError(format!("the patch is not base64: {e}")))?;
            Some(serde_json::from_slice(&bytes).map_err(|e| CallError(format!("the patch is not a JSON patch: {e}")))?)
        }
    };
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: response.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings: response
            .get("warnings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(str::to_owned))
            .collect(),
    })
}

/// An answer kube's `VerifyAdmissionResponse` refuses, as its dispatchers word the failed call.
fn invalid(why: &str) -> CallError {
    CallError(format!("received invalid webhook response: {why}"))
}

/// A group, version and kind as Go's `schema.GroupVersionKind` prints itself (`/v1, Kind=Pod`, `admission.k8s.io/v1,
/// Kind=AdmissionReview`).
fn group_version_kind(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The error and its sources, as Go prints a wrapped error.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// kube's `ToStatusErr`: the refusal of webhook `name`.
fn denied(name: &str, status: &Value) -> ApiError {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = status.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400) as u16;
    let text = match (message, reason) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    };
    let mut e = ApiError::new(code, known_reason(reason), text);
    // The webhook's Status is the answer, as kube's: its details' causes too.
    e.causes = status
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| apimachinery::status::Cause {
            reason: str_at(c, "/reason").to_owned(),
            message: str_at(c, "/message").to_owned(),
            field: str_at(c, "/field").to_owned(),
        })
        .collect();
    e
}

/// A failure to call webhook `name` with `failurePolicy: Fail`.
fn call_failed(name: &str, e: &CallError) -> ApiError {
    ApiError::internal(format!("failed calling webhook {name:?}: {}", e.0))
}

/// The outcome of one webhook by its failure policy: `Ok(None)` when ignored.
fn by_policy<T>(w: &Webhook, outcome: Result<T, CallError>) -> Result<Option<T>, ApiError> {
    match outcome {
        Ok(t) => Ok(Some(t)),
        Err(e) if w.ignore_failures => {
            tracing::warn!(webhook = %w.name, error = %e.0, "failed calling webhook, failing open");
            Ok(None)
        }
        Err(e) => Err(call_failed(&w.name, &e)),
    }
}

/// Runs the matching validating webhooks concurrently; the first refusal (in order) is the answer.
pub(crate) async fn validate(
    clients: &Clients,
    webhooks: &[std::sync::Arc<Webhook>],
    r: &Request<'_>,
) -> Result<Vec<String>, ApiError> {
    let calls = webhooks.iter().map(|w| async move {
        let Some(version) = by_policy(w, applies(w, r).await)?.flatten() else {
            return Ok(Vec::new());
        };
        let (object, old) = r.objects_in(&version)?;
        let Some(answer) = by_policy(w, call(clients, w, r, &version, object.as_ref(), old.as_ref()).await)? else {
            return Ok(Vec::new());
        };
        if !answer.allowed {
            return Err(denied(&w.name, &answer.status));
        }
        Ok(answer.warnings)
    });
    let mut warnings = Vec::new();
    for outcome in futures_util::future::join_all(calls).await {
        warnings.extend(outcome?);
    }
    Ok(warnings)
}

/// Runs the matching mutating webhooks in order on `object`, then once more those with `reinvocationPolicy:
/// IfNeeded` that a later webhook's change followed.
pub(crate) async fn mutate(
    clients: &Clients,
    webhooks: &[std::sync::Arc<Webhook>],
    r: &Request<'_>,
    mut object: Value,
) -> Result<Mutated, ApiError> {
    let mut warnings = Vec::new();
    // For each webhook called: whether the object changed after it was called.
    let mut called: Vec<(usize, bool)> = Vec::new();
    for (i, w) in webhooks.iter().enumerate() {
        if let Some(changed) = mutate_one(clients, w, r, &mut object, &mut warnings).await? {
            if changed {
                for (_, later) in called.iter_mut() {
                    *later = true;
                }
            }
            called.push((i, false));
        }
    }
    let again: Vec<usize> = called
        .iter()
        .filter(|(i, changed_after)| *changed_after && webhooks[*i].reinvoke)
        .map(|(i, _)| *i)
        .collect();
    for i in again {
        mutate_one(clients, &webhooks[i], r, &mut object, &mut warnings).await?;
    }
    Ok(Mutated { object, warnings })
}

/// Calls one mutating webhook if it applies; returns whether it was called and changed the object.
async fn mutate_one(
    clients: &Clients,
    w: &Webhook,
    r: &Request<'_>,
    object: &mut Value,
    warnings: &mut Vec<String>,
) -> Result<Option<bool>, ApiError> {
    let a = r.attributes.with_object(r.attributes.name, object);
    let current = r.with_attributes(&a);
    let Some(version) = by_policy(w, applies(w, &current).await)?.flatten() else {
        return Ok(None);
    };
    let (converted, old) = current.objects_in(&version)?;
    let Some(answer) = by_policy(
        w,
        call(clients, w, &current, &version, converted.as_ref(), old.as_ref()).await,
    )?
    else {
        return Ok(Some(false));
    };
    if !answer.allowed {
        return Err(denied(&w.name, &answer.status));
    }
    warnings.extend(answer.warnings);
    let Some(patch) = answer.patch else {
        return Ok(Some(false));
    };
    let Some(mut patched) = converted else {
        return Err(call_failed(
            &w.name,
            &CallError("a patch for a write without an object".into()),
        ));
    };
    let before = patched.clone();
    // A patch that does not apply is the webhook's error, whatever its failure policy (as kube's).
    json_patch::patch(&mut patched, &patch.0)
        .map_err(|e| call_failed(&w.name, &CallError(format!("the webhook's patch does not apply: {e}"))))?;
    // Whether it changed is decided before the defaulting, as kube's dispatcher decides it (a patch that changes
    // nothing calls no webhook again); then defaulted in the webhook's version, as kube's defaults what it decodes.
    let changed = patched != before;
    let patched = current.default(patched)?;
    if !changed {
        return Ok(Some(false));
    }
    *object = current.convert(patched, r.attributes.version)?;
    Ok(Some(true))
}

/// The reason of a `Status` given by a webhook, as one of kube's (an unknown one is left empty).
fn known_reason(reason: &str) -> &'static str {
    const REASONS: [&str; 19] = [
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "Timeout",
        "TooManyRequests",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
        "Unknown",
    ];
    REASONS.iter().find(|r| **r == reason).copied().unwrap_or("")
}

/// Clients by CA bundle.
type ClientMap = HashMap<Vec<u8>, reqwest::Client>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_the_webhooks_message_code_known_reason_and_causes() {
        let status = json!({"message": "no", "reason": "Forbidden", "code": 403,
            "details": {"causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "spec.x"}]}});
        let e = denied("w.example.com", &status);
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(e.message, r#"admission webhook "w.example.com" denied the request: no"#);
        assert_eq!(e.causes.len(), 1);
        assert_eq!(
            (
                e.causes[0].reason.as_str(),
                e.causes[0].message.as_str(),
                e.causes[0].field.as_str()
            ),
            ("FieldValueInvalid", "bad", "spec.x")
        );
        // A code below 400 is 400, an unknown reason is left out, no message says so.
        let e = denied("w.example.com", &json!({"reason": "MyOwnReason", "code": 200}));
        assert_eq!((e.code, e.reason), (400, ""));
        assert_eq!(
            e.message,
            r#"admission webhook "w.example.com" denied the request: MyOwnReason"#
        );
        assert!(e.causes.is_empty());
        let e = denied("w.example.com", &Value::Null);
        assert_eq!(
            e.message,
            r#"admission webhook "w.example.com" denied the request without explanation"#
        );
    }
}
