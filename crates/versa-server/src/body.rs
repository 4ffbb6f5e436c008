//! Response bodies: whole buffers for most answers, streams for watches, and the JSON answer
//! helper every layer uses.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};

/// Response bodies: whole buffers now, streams for watches.
pub type Body = BoxBody<Bytes, Infallible>;

/// A response body holding `bytes`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
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
