//! API Priority and Fairness (kube's `WithPriorityAndFairness`): each request is classified by the FlowSchemas
//! into a priority level and a flow (the `flowcontrol` crate), takes its seats there (waiting in its flow's queue
//! while none are free) until its response's body is sent, or answers 429 TooManyRequests with a `Retry-After`.
//! Every response names the schema and level by uid (`X-Kubernetes-PF-FlowSchema-UID`,
//! `X-Kubernetes-PF-PriorityLevel-UID`). A LIST takes a seat per 100 objects of its resource in the watch cache
//! (kube's work estimate, at most 10); other requests one. Watches are classified but take no seat (kube holds a watch's seats while its initial
//! events are sent).

use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue};

use super::layer::{pass, Answered, Filtered, Next};
use apimachinery::status::ApiError;
use endpoints::context::RequestContext;
use flowcontrol::{Classified, Descriptor, PriorityAndFairness};

/// Objects a LIST reads per seat it takes (kube's `objectsPerSeat`).
const OBJECTS_PER_SEAT: usize = 100;
/// The most seats a LIST takes (kube's count-based `maximumListSeatsLimit`).
const MAX_LIST_SEATS: u32 = 10;

static SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
static LEVEL_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

fn classify(apf: &PriorityAndFairness, ctx: &RequestContext) -> Classified {
    let info = &ctx.info;
    let descriptor = Descriptor {
        user: &ctx.user.name,
        groups: &ctx.user.groups,
        resource_request: info.resource_request,
        verb: info.verb,
        api_group: &info.group,
        resource: &info.resource,
        subresource: info.subresource.as_deref().unwrap_or(""),
        namespace: info.namespace.as_deref().unwrap_or(""),
        path: &info.path,
    };
    apf.classify(&descriptor, info.tenant.as_deref().unwrap_or(""))
}

/// The seats a request takes: for a LIST, one per 100 objects it reads (all of its resource's, or its limit's
/// when it sets one and no selector), the count from the tenant's watch cache when it runs (a LIST that starts it
/// takes one seat: the request may yet be refused, and a cache is not started before authorization).
fn width(f: &Filtered) -> u32 {
    let info = &f.ctx.info;
    if info.verb != "list" || info.name.is_some() {
        return 1;
    }
    let Some(cache) = f
        .tenant
        .as_ref()
        .and_then(|t| t.api.registry.running_cache(&info.group, &info.resource))
    else {
        return 1;
    };
    let mut objects = cache.stats().objects;
    let query = &f.ctx.query;
    let selected = ["labelSelector", "fieldSelector"]
        .iter()
        .any(|s| query.get(*s).is_some_and(|v| !v.is_empty()));
    if let Some(limit) = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
    {
        if !selected {
            objects = objects.min(limit);
        }
    }
    (objects.div_ceil(OBJECTS_PER_SEAT) as u32).clamp(1, MAX_LIST_SEATS)
}

fn name_response(answered: &mut Answered, c: &Classified) {
    let headers = answered.resp.headers_mut();
    for (name, uid) in [(&SCHEMA_UID, &c.schema_uid), (&LEVEL_UID, &c.level_uid)] {
        if let Ok(v) = HeaderValue::from_str(uid) {
            headers.insert(name.clone(), v);
        }
    }
}

/// The filter: seats for the request, held until its response, or 429.
pub async fn filter(apf: Arc<PriorityAndFairness>, f: Box<Filtered>, next: Next) -> Answered {
    let c = classify(&apf, &f.ctx);
    let mut answered = if f.ctx.info.long_running() {
        pass(next, f).await
    } else {
        match apf.admit(&c, width(&f)).await {
            // The seats are held until the body is sent, as kube's handler holds them while it writes the body.
            Ok(Some(seat)) => {
                let mut answered = pass(next, f).await;
                answered.resp = answered.resp.map(|body| endpoints::response::guarded(body, seat));
                answered
            }
            Ok(None) => pass(next, f).await,
            Err(refused) => {
                let mut e = ApiError::new(429, "TooManyRequests", "Too many requests, please try again later.");
                e.retry_after = Some(u32::try_from(refused.retry_after).unwrap_or(u32::MAX));
                f.answer(endpoints::response::error(&e, None))
            }
        }
    };
    name_response(&mut answered, &c);
    answered
}
