//! The authentication filter (kube's `WithAuthentication`): names the user of every request, or answers 401.
//! On the insecure development port every request is `system:admin` in `system:masters`.

use hyper::HeaderMap;

use super::layer::{pass, Answered, Filtered, Next};
use apimachinery::status::ApiError;
use authn::authenticator::Authenticator;
use authn::{UserInfo, MASTERS_GROUP};
use endpoints::context::Connection;

/// The user of the insecure port.
pub const INSECURE_USER: &str = "system:admin";

/// The request's user, or 401 Unauthorized (the reason is logged, not told to the client, as kube does).
pub async fn authenticate(
    authenticator: &Authenticator,
    tenant: Option<&str>,
    connection: &Connection,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    if connection.insecure {
        return Ok(UserInfo::new(INSECURE_USER, [MASTERS_GROUP]).authenticated());
    }
    authenticator
        .authenticate(tenant, &connection.certificate, headers)
        .await
        .map_err(|why| {
            tracing::debug!(peer = %connection.peer, reason = %why.0, "unauthorized");
            component_base::metrics::metrics().authentication_failures.inc();
            ApiError::new(401, "Unauthorized", "Unauthorized")
        })
}

/// The filter: the request's user, or 401 (written to the audit log as a refusal when auditing).
pub async fn filter(
    authenticator: std::sync::Arc<Authenticator>,
    auditor: Option<std::sync::Arc<audit::Auditor>>,
    mut f: Box<Filtered>,
    next: Next,
) -> Answered {
    let span = tracing::info_span!(target: component_base::trace::TARGET, "authentication");
    let authenticated = tracing::Instrument::instrument(
        authenticate(
            &authenticator,
            f.ctx.info.tenant.as_deref(),
            &f.connection,
            f.req.headers(),
        ),
        span,
    )
    .await;
    match authenticated {
        Ok(user) => f.ctx.user = user,
        Err(e) => {
            if let Some(audit) = auditor.as_ref().and_then(|a| a.begin(&f.ctx)) {
                audit.refused(&f.ctx, e.code);
            }
            return f.answer(endpoints::response::error(&e, None));
        }
    }
    pass(next, f).await
}
