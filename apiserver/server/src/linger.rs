//! A lingering close: when a connection ends, its write side is shut down first (the client sees the response and
//! the end of the stream), then what the client still sends is read and dropped for a short while before the socket
//! closes. Closing a socket while unread bytes are in its receive queue makes the kernel send a reset instead, and a
//! reset can destroy the response the client has not read yet: the case of a request body that no handler read (an
//! error answered before it, such as 404, 403 or 413), whose response says `Connection: close`. Go's server, which
//! kube-apiserver uses, does the same (its `closeWriteAndWait`); Apache and nginx call it a lingering close.

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How long a closing connection reads what its client still sends (Go waits 500 ms).
pub const LINGER: Duration = Duration::from_millis(500);

/// How much a closing connection reads before it closes regardless.
pub const LINGER_BYTES: usize = 4 << 20;

/// A stream whose shutdown is a lingering close.
pub struct Lingering<S> {
    inner: S,
    state: State,
}

enum State {
    Open,
    /// The write side is shut down; reading and dropping until the end of the stream or the deadline.
    Draining {
        deadline: Pin<Box<Sleep>>,
        left: usize,
    },
    Closed,
}

impl<S> Lingering<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Lingering {
            inner,
            state: State::Open,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Lingering<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Lingering<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Open => {
                    let shut = std::task::ready!(Pin::new(&mut this.inner).poll_shutdown(cx));
                    if shut.is_err() {
                        // The peer is gone already: nothing to linger for.
                        this.state = State::Closed;
                        return Poll::Ready(shut);
                    }
                    this.state = State::Draining {
                        deadline: Box::pin(tokio::time::sleep(LINGER)),
                        left: LINGER_BYTES,
                    };
                }
                State::Draining { deadline, left } => {
                    if deadline.as_mut().poll(cx).is_ready() {
                        this.state = State::Closed;
                        continue;
                    }
                    let mut scratch = [0u8; 8192];
                    let mut buf = ReadBuf::new(&mut scratch);
                    match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                        Poll::Pending => return Poll::Pending,
                        // The end of the stream (the client closed too), or an error: done.
                        Poll::Ready(Ok(())) if buf.filled().is_empty() => this.state = State::Closed,
                        Poll::Ready(Err(_)) => this.state = State::Closed,
                        Poll::Ready(Ok(())) => {
                            *left = left.saturating_sub(buf.filled().len());
                            if *left == 0 {
                                this.state = State::Closed;
                            }
                        }
                    }
                }
                State::Closed => return Poll::Ready(Ok(())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test]
    async fn shutdown_reads_what_the_peer_still_sends_until_it_closes() {
        let (client, server) = tokio::io::duplex(1024);
        let mut server = Lingering::new(server);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            // More than the pipe holds: the write completes only because the closing side keeps reading.
            client_write.write_all(&[b'x'; 64 * 1024]).await.unwrap();
            client_write.shutdown().await.unwrap();
        });
        server.write_all(b"answer").await.unwrap();
        server.shutdown().await.unwrap();
        writer.await.unwrap();
        let mut answer = Vec::new();
        client_read.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"answer");
    }

    #[tokio::test]
    async fn shutdown_gives_up_on_a_peer_that_never_closes() {
        let (_client, server) = tokio::io::duplex(1024);
        let mut server = Lingering::new(server);
        let started = std::time::Instant::now();
        // Ends (the test would hang otherwise), and not before the linger time.
        server.shutdown().await.unwrap();
        assert!(started.elapsed() >= LINGER, "{:?}", started.elapsed());
    }
}
