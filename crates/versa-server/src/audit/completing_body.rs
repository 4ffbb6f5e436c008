//! A watch's answer body, wrapped: when the stream ends (or the body is dropped, the client
//! gone) it writes the request's `ResponseComplete` stage, after the `ResponseStarted` one
//! written when the stream began.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::policy::Stage;
use super::record::Record;
use crate::body::Body;

/// A watch's body: writes `ResponseComplete` when the stream ends or is dropped.
pub(super) struct CompletingBody {
    inner: Body,
    record: Option<Record>,
}

impl CompletingBody {
    /// `inner`, completing `record`'s request when it ends.
    pub(super) fn new(inner: Body, record: Record) -> CompletingBody {
        CompletingBody { inner, record: Some(record) }
    }

    fn complete(&mut self) {
        if let Some(record) = self.record.take()
            && let Some(line) = record.line(Stage::ResponseComplete)
        {
            record.0.sink.send_now(line);
        }
    }
}

impl HttpBody for CompletingBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Infallible>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.complete();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for CompletingBody {
    fn drop(&mut self) {
        self.complete();
    }
}
