//! A TCP proxy for tests, between a client and etcd: it can cut the client's connections and refuse new ones,
//! stall them (open but silent, like an unreachable host), or drop etcd's answers (requests are applied, the
//! client hears nothing), while etcd runs on.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A proxy on a free loopback port to one upstream address; it stops on drop.
pub(super) struct Proxy {
    /// The port clients connect to.
    port: u16,
    /// Whether connections are refused, and the tasks serving them.
    state: Arc<Mutex<State>>,
    /// Whether connections are stalled.
    stalled: watch::Sender<bool>,
    /// Whether etcd's answers are dropped.
    muted: watch::Sender<bool>,
    /// The task accepting connections.
    accept: JoinHandle<()>,
}

/// The proxy's mutable state.
#[derive(Default)]
struct State {
    /// Whether new connections are closed at once.
    refusing: bool,
    /// The tasks serving open connections.
    connections: Vec<JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    pub(super) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let state = Arc::new(Mutex::new(State::default()));
        let (stalled, stalled_rx) = watch::channel(false);
        let (muted, muted_rx) = watch::channel(false);
        let shared = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
                if state.refusing {
                    // Dropping the socket closes the connection at once.
                    continue;
                }
                let connection = serve(client, upstream, stalled_rx.clone(), muted_rx.clone());
                state.connections.push(tokio::spawn(connection));
            }
        });
        Proxy {
            port,
            state,
            stalled,
            muted,
            accept,
        }
    }

    /// The URL clients use.
    pub(super) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Closes every open connection (once this returns, nothing more goes through them) and refuses new ones
    /// until [`Proxy::resume`].
    pub(super) async fn cut(&self) {
        let connections = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.refusing = true;
            std::mem::take(&mut state.connections)
        };
        for connection in connections {
            connection.abort();
            // A cancelled task has dropped both sockets once awaited.
            let _ = connection.await;
        }
    }

    /// Stops forwarding: open connections stay open but carry nothing more, and new ones are accepted but never
    /// answered.
    pub(super) fn stall(&self) {
        self.stalled.send_replace(true);
    }

    /// Forwards requests to etcd but drops what etcd sends back, until [`Proxy::resume`].
    pub(super) fn mute_answers(&self) {
        self.muted.send_replace(true);
    }

    /// Accepts and forwards new connections again (stalled connections stay stalled until cut).
    pub(super) fn resume(&self) {
        self.stalled.send_replace(false);
        self.muted.send_replace(false);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).refusing = false;
    }
}

/// Forwards one connection until either side closes it, or holds it silently while the proxy is stalled; drops
/// etcd's bytes while it is muted.
async fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    mut stalled: watch::Receiver<bool>,
    muted: watch::Receiver<bool>,
) {
    if *stalled.borrow_and_update() {
        // Hold the connection open and silent until the task is aborted.
        return std::future::pending::<()>().await;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let ((mut client_read, mut client_write), (mut server_read, mut server_write)) =
        (client.into_split(), server.into_split());
    let answers = async {
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            let n = server_read.read(&mut buffer).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            if !*muted.borrow() {
                client_write.write_all(&buffer[..n]).await?;
            }
        }
    };
    let stall = tokio::select! {
        // Either side closing ends the forwarding; the error does not matter.
        _ = tokio::io::copy(&mut client_read, &mut server_write) => false,
        _ = answers => false,
        changed = stalled.wait_for(|stalled| *stalled) => changed.is_ok(),
    };
    if stall {
        // Keep both sockets open, forwarding nothing, until the task is aborted.
        std::future::pending::<()>().await;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for connection in &state.connections {
            connection.abort();
        }
    }
}
