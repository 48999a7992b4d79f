//! The HTTP server: listeners (HTTPS on the secure port, plain HTTP on the development port), TLS, the handler
//! chain ([`filters`]), graceful shutdown.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use authn::x509::{CaPool, PeerCertificate};
use endpoints::context::Connection;
use filters::Chain;

pub mod filters;
mod linger;
pub mod pki;
pub mod security;
pub mod tls;

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound listener and how to serve its connections.
pub struct Listener {
    /// The socket.
    pub tcp: TcpListener,
    /// TLS for the secure port; `None` for the insecure development port.
    pub tls: Option<SecurePort>,
    /// How long a client may take to send a request's headers (HTTP/1) before it is disconnected.
    pub header_read_timeout: Duration,
}

/// What the secure port needs beyond the socket: the TLS configuration and the CAs client certificates are
/// checked against, once per connection.
#[derive(Clone)]
pub struct SecurePort {
    /// The TLS acceptor.
    pub acceptor: TlsAcceptor,
    /// CAs whose client certificates authenticate users (x509).
    pub client_ca: Option<CaPool>,
    /// The front proxy's CA (request-header authentication).
    pub proxy_ca: Option<CaPool>,
}

/// The handler chain, once the server has started. The listeners are bound before the tenants and their plugins
/// load (compiling a large guest takes seconds), and until the chain is set every request is answered by
/// [`starting`].
#[derive(Clone, Default)]
pub struct ChainSlot(Arc<std::sync::OnceLock<Arc<Chain>>>);

impl ChainSlot {
    /// Starts serving requests through `chain` (once: a second chain is ignored).
    pub fn set(&self, chain: Arc<Chain>) {
        let _ = self.0.set(chain);
    }

    fn get(&self) -> Option<Arc<Chain>> {
        self.0.get().cloned()
    }
}

/// What a server that is still starting answers, as kube-apiserver does before its start-up is done: `/livez` is
/// ok (the process is alive: a liveness probe must not restart a server busy compiling its plugins), `/readyz` and
/// `/healthz` fail, and every other request gets a 503 ServiceUnavailable `Status` with `Retry-After` (client-go
/// waits and retries it).
pub fn starting(path: &str) -> hyper::Response<endpoints::response::Body> {
    use endpoints::response;
    let endpoint = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    match endpoint {
        "livez" => response::text(hyper::StatusCode::OK, "ok"),
        "readyz" | "healthz" => response::text(
            hyper::StatusCode::INTERNAL_SERVER_ERROR,
            format!("[-]started failed: the tenants and their plugins are loading\n{endpoint} check failed\n"),
        ),
        _ => response::error(
            &apimachinery::status::ApiError::unavailable(
                "the server is starting: the tenants and their plugins are loading",
            ),
            None,
        ),
    }
}

/// Serves every listener until `shutdown` resolves, then stops accepting and lets open connections finish their
/// current request. Requests are answered by [`starting`] until `chain` is set.
pub async fn serve(listeners: Vec<Listener>, chain: ChainSlot, shutdown: impl std::future::Future<Output = ()>) {
    let graceful = Arc::new(GracefulShutdown::new());
    let accepting: Vec<_> = listeners
        .into_iter()
        .map(|listener| tokio::spawn(accept_loop(listener, chain.clone(), graceful.clone())))
        .collect();
    shutdown.await;
    // Dropping the listeners stops accepting.
    for task in &accepting {
        task.abort();
    }
    for task in accepting {
        let _ = task.await;
    }
    // The accept loops held the only other references; connections hold watchers.
    let Ok(graceful) = Arc::try_unwrap(graceful) else {
        return;
    };
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(Duration::from_secs(5)) => {
            tracing::info!("open connections (watches) did not finish within 5s; closing them");
        }
    }
}

async fn accept_loop(listener: Listener, chain: ChainSlot, graceful: Arc<GracefulShutdown>) {
    loop {
        let (stream, peer) = match listener.tcp.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        // As Go's net package does for kube-apiserver: without it, small writes (watch events, a response whose
        // body follows its head) wait for the previous segment's acknowledgement.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, %peer, "cannot set TCP_NODELAY");
        }
        let chain = chain.clone();
        let graceful = graceful.watcher();
        let secure = listener.tls.clone();
        let header_read_timeout = listener.header_read_timeout;
        tokio::spawn(async move {
            match secure {
                Some(secure) => {
                    let Some((tls, certificate)) = handshake(&secure, stream, peer).await else {
                        return;
                    };
                    let connection = Connection {
                        peer,
                        certificate,
                        insecure: false,
                    };
                    serve_connection(tls, connection, chain, graceful, header_read_timeout).await
                }
                None => {
                    let connection = Connection {
                        peer,
                        certificate: PeerCertificate::default(),
                        insecure: true,
                    };
                    serve_connection(stream, connection, chain, graceful, header_read_timeout).await
                }
            }
        });
    }
}

/// The TLS handshake, and what the client certificate proves (verified once for the connection).
async fn handshake(
    secure: &SecurePort,
    stream: TcpStream,
    peer: SocketAddr,
) -> Option<(tokio_rustls::server::TlsStream<TcpStream>, PeerCertificate)> {
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, secure.acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, %peer, "TLS handshake failed");
            return None;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return None;
        }
    };
    let certificate = match tls.get_ref().1.peer_certificates() {
        Some(chain) => PeerCertificate::verify(chain, secure.client_ca.as_ref(), secure.proxy_ca.as_ref()),
        None => PeerCertificate::default(),
    };
    Some((tls, certificate))
}

async fn serve_connection<S>(
    stream: S,
    connection: Connection,
    chain: ChainSlot,
    graceful: Watcher,
    header_read_timeout: Duration,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let peer = connection.peer;
    let connection = Arc::new(connection);
    let service = service_fn(move |req| {
        let chain = chain.get();
        let connection = connection.clone();
        async move {
            Ok::<_, std::convert::Infallible>(match chain {
                Some(chain) => filters::handle(chain, connection, req).await,
                None => starting(req.uri().path()),
            })
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(linger::Lingering::new(stream)), service)
        .into_owned();
    let conn = graceful.watch(conn);
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, %peer, "connection ended with an error");
    }
}
