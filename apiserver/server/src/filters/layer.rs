//! The filters as tower layers. A filter is an async function of the request on its way in ([`Filtered`]) and the
//! rest of the chain ([`Next`]), which gives back the response with the request's context ([`Answered`]); [`filter`]
//! makes it a [`Layer`], and [`endpoint`] is the innermost service, the tenant's API within the request's deadline.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use tower::{Layer, Service};

use endpoints::context::{Connection, RequestContext};
use endpoints::response::Body;

/// A request on its way in: the HTTP request, what the filters learned of it, and its tenant once found.
pub struct Filtered {
    /// The HTTP request (its body unread).
    pub req: Request<Incoming>,
    /// The request info, the user and what the filters noted.
    pub ctx: RequestContext,
    /// The connection it came on.
    pub connection: Arc<Connection>,
    /// The tenant it addresses, once the tenant filter found it.
    pub tenant: Option<Arc<tenants::Tenant>>,
}

impl Filtered {
    /// Answers the request here, with `resp`.
    pub fn answer(self: Box<Self>, resp: Response<Body>) -> Answered {
        Answered { resp, ctx: self.ctx }
    }

    /// The tenant: set by the tenant filter, before every filter that asks for it.
    pub fn tenant(&self) -> Arc<tenants::Tenant> {
        self.tenant
            .clone()
            .expect("the tenant filter runs before the filters that need the tenant")
    }
}

/// A response on its way out, with the request's context for the filters it passes back through.
pub struct Answered {
    /// The response.
    pub resp: Response<Body>,
    /// The request's context, as the filters and the handler left it.
    pub ctx: RequestContext,
}

/// The answer to come of a request.
pub type Answering = Pin<Box<dyn Future<Output = Result<Answered, Infallible>> + Send>>;

/// The rest of the chain, as a filter sees it: a service shared by every request (cloning it is counting a
/// reference, not copying the chain). Requests go through it boxed: each filter passes a pointer on, not the request.
#[derive(Clone)]
pub struct Next(Arc<dyn Fn(Box<Filtered>) -> Answering + Send + Sync>);

impl Next {
    /// The rest of the chain from a service.
    pub fn new<S>(service: S) -> Next
    where
        S: Service<Box<Filtered>, Response = Answered, Error = Infallible, Future = Answering>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        // The services here are always ready (`poll_ready` answers at once), so a call needs no readiness first.
        Next(Arc::new(move |f| service.clone().call(f)))
    }
}

impl Service<Box<Filtered>> for Next {
    type Response = Answered;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, f: Box<Filtered>) -> Answering {
        (self.0)(f)
    }
}

/// Passes the request to the rest of the chain.
pub async fn pass(next: Next, f: Box<Filtered>) -> Answered {
    match (next.0)(f).await {
        Ok(answered) => answered,
        Err(never) => match never {},
    }
}

/// A filter as a [`Layer`].
#[derive(Clone)]
pub struct FilterLayer<F> {
    filter: F,
}

/// Makes an async function of the request and the rest of the chain a [`Layer`].
pub fn filter<F, Fut>(filter: F) -> FilterLayer<F>
where
    F: Fn(Box<Filtered>, Next) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Answered> + Send + 'static,
{
    FilterLayer { filter }
}

impl<F, S> Layer<S> for FilterLayer<F>
where
    F: Clone,
    S: Service<Box<Filtered>, Response = Answered, Error = Infallible, Future = Answering>
        + Clone
        + Send
        + Sync
        + 'static,
{
    type Service = Filter<F>;

    fn layer(&self, inner: S) -> Filter<F> {
        Filter {
            filter: self.filter.clone(),
            next: Next::new(inner),
        }
    }
}

/// A filter in the chain, in front of the rest of it.
#[derive(Clone)]
pub struct Filter<F> {
    filter: F,
    next: Next,
}

impl<F, Fut> Service<Box<Filtered>> for Filter<F>
where
    F: Fn(Box<Filtered>, Next) -> Fut,
    Fut: Future<Output = Answered> + Send + 'static,
{
    type Response = Answered;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, f: Box<Filtered>) -> Answering {
        let answered = (self.filter)(f, self.next.clone());
        Box::pin(async move { Ok(answered.await) })
    }
}

/// The innermost service: the request's tenant's API, within the request's deadline (`limit`, see
/// [`super::timeout`]).
pub fn endpoint(limit: Duration) -> Next {
    Next(Arc::new(move |f: Box<Filtered>| {
        Box::pin(async move {
            let tenant = f.tenant();
            let Filtered { req, ctx, .. } = *f;
            let resp = super::timeout::run(limit, &ctx, tenant.api.serve(req, &ctx)).await;
            Ok(Answered { resp, ctx })
        })
    }))
}
