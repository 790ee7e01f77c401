//! stdin and stdout as the connection's byte streams, with one difference
//! from the SDK's `Stdio`: the end of stdin is reported as it is read, so a
//! client that closes its input while its own end of stdout is full and
//! unread (it stopped reading) cannot keep alcove waiting to flush output
//! nobody will read (see `acp::run`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use agent_client_protocol::ByteStreams;
use futures::AsyncRead;
use tokio::sync::oneshot;

/// stdin, telling `eof` when it ends.
pub(crate) struct Input {
    inner: blocking::Unblock<io::Stdin>,
    eof: Option<oneshot::Sender<()>>,
}

impl AsyncRead for Input {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &read {
            Poll::Ready(Ok(0)) => !buf.is_empty(),
            Poll::Ready(Err(_)) => true,
            _ => false,
        };
        if ended && let Some(eof) = self.eof.take() {
            let _ = eof.send(());
        }
        read
    }
}

/// The transport, and what says the input ended.
pub(crate) fn transport() -> (
    ByteStreams<blocking::Unblock<io::Stdout>, Input>,
    oneshot::Receiver<()>,
) {
    let (eof, ended) = oneshot::channel();
    let input = Input {
        inner: blocking::Unblock::new(io::stdin()),
        eof: Some(eof),
    };
    (
        ByteStreams::new(blocking::Unblock::new(io::stdout()), input),
        ended,
    )
}
