//! Response compression, as kube-apiserver's (APIResponseCompression): a response of at least 128 KiB to a client
//! that accepts gzip is sent gzip-compressed, at the fastest level (large lists are the case; client-go and kubectl
//! ask for gzip). Streams (watches) and small responses go as they are.

use http_body_util::BodyExt;
use hyper::body::Body as _;
use hyper::header::{HeaderMap, HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, VARY};
use hyper::Response;

use endpoints::response::{full, Body};

/// The smallest body compressed (kube's defaultGzipThresholdBytes).
pub const THRESHOLD: u64 = 128 * 1024;

/// Whether the request's `Accept-Encoding` accepts gzip (with a non-zero quality).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(hyper::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            let zero = parts.any(|p| p.strip_prefix("q=").is_some_and(|q| q.parse::<f32>() == Ok(0.0)));
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !zero
        })
}

/// Compresses `resp` when the client accepts gzip and its body is complete and large enough.
pub async fn gzip_if_large(accepts: bool, resp: Response<Body>) -> Response<Body> {
    let size = resp.body().size_hint().exact();
    if !accepts || size.is_none_or(|n| n < THRESHOLD) || resp.headers().contains_key(CONTENT_ENCODING) {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let compressed = tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&bytes).and_then(|()| encoder.finish())
    })
    .await;
    let Ok(Ok(compressed)) = compressed else {
        // Writing to memory does not fail; if it did, the response is lost, and a 500 says so.
        return endpoints::response::error(
            &apimachinery::status::ApiError::internal("compressing the response failed"),
            None,
        );
    };
    parts.headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.append(VARY, HeaderValue::from_static("Accept-Encoding"));
    parts.headers.remove(CONTENT_LENGTH);
    Response::from_parts(parts, full(compressed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(hyper::header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn gzip_is_accepted_unless_its_quality_is_zero() {
        assert!(accepts_gzip(&headers("gzip")));
        assert!(accepts_gzip(&headers("deflate, GZIP;q=0.5")));
        assert!(accepts_gzip(&headers("*")));
        assert!(!accepts_gzip(&headers("gzip;q=0")));
        assert!(!accepts_gzip(&headers("br, deflate")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn large_complete_bodies_are_compressed_and_small_ones_are_not() {
        let large = "x".repeat(THRESHOLD as usize);
        let resp = gzip_if_large(true, Response::new(full(large.clone()))).await;
        assert_eq!(resp.headers()[CONTENT_ENCODING], "gzip");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let mut decoded = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&body[..]), &mut decoded).unwrap();
        assert_eq!(decoded, large);

        let small = gzip_if_large(true, Response::new(full("small"))).await;
        assert!(!small.headers().contains_key(CONTENT_ENCODING));
        let not_accepted = gzip_if_large(false, Response::new(full(large))).await;
        assert!(!not_accepted.headers().contains_key(CONTENT_ENCODING));
    }
}
