//! Response bodies: whole buffers for most answers, streams for watches, and the JSON answer
//! helper every layer uses.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use tokio::sync::mpsc;

/// Response bodies: whole buffers now, streams for watches.
pub type Body = BoxBody<Bytes, Infallible>;

/// A response body holding `bytes`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A response body of the chunks sent to `rx`'s sender, ending when every sender is gone.
pub fn channel(rx: mpsc::Receiver<Bytes>) -> Body {
    ChannelBody(rx).boxed()
}

/// A response body fed by a channel of chunks.
#[derive(Debug)]
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

/// A JSON response with `code`.
pub fn json_response(code: http::StatusCode, value: &serde_json::Value) -> http::Response<Body> {
    let mut response = http::Response::new(full(serde_json::to_vec(value).unwrap_or_default()));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::header::HeaderValue::from_static("application/json"));
    response
}
