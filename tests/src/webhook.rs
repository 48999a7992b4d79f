//! A real HTTPS admission webhook server for the tests: a TLS listener on a free loopback port with a self-signed
//! certificate (its PEM is the caBundle), answering each AdmissionReview POSTed to it with what the test's handler
//! returns for its path and request, and keeping every review it received. HTTP/1.1 with keep-alive, one thread per
//! connection.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{json, Value};

/// What the handler answers a review with.
pub enum Verdict {
    /// `allowed: true`, with warnings.
    Allow(Vec<String>),
    /// `allowed: true` with this JSON Patch.
    Patch(Value, Vec<String>),
    /// `allowed: false` with this status message and code.
    Deny(String, u16),
}

type Handler = dyn Fn(&str, &Value) -> Verdict + Send + Sync;

/// The running webhook server; it stops with the test process.
pub struct WebhookServer {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// Its certificate, PEM, as a webhook configuration's `caBundle` wants it (before base64).
    pub ca_pem: String,
    /// Each review received: the path, the query (after `?`, or ""), the review's `request`.
    received: Arc<Mutex<Vec<(String, String, Value)>>>,
}

impl WebhookServer {
    /// Starts the server; `handler` is given the request path and the review's `request`.
    pub fn start(handler: impl Fn(&str, &Value) -> Verdict + Send + Sync + 'static) -> WebhookServer {
        let (config, ca_pem) = self_signed_tls();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let received: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let kept = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (config, handler, kept) = (config.clone(), handler.clone(), kept.clone());
                std::thread::spawn(move || {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let tls = rustls::StreamOwned::new(conn, stream);
                    let mut reader = BufReader::new(tls);
                    while let Some((target, body)) = read_request(&mut reader) {
                        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                        let (path, query) = (path.to_owned(), query.to_owned());
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let request = review.get("request").cloned().unwrap_or(Value::Null);
                        kept.lock().unwrap().push((path.clone(), query, request.clone()));
                        let mut response = json!({"uid": request["uid"], "allowed": true});
                        match handler(&path, &request) {
                            Verdict::Allow(warnings) => response["warnings"] = json!(warnings),
                            Verdict::Patch(patch, warnings) => {
                                response["patchType"] = json!("JSONPatch");
                                response["patch"] =
                                    json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
                                response["warnings"] = json!(warnings);
                            }
                            Verdict::Deny(message, code) => {
                                response["allowed"] = json!(false);
                                response["status"] = json!({"message": message, "code": code});
                            }
                        }
                        let body = json!({
                            "apiVersion": review["apiVersion"],
                            "kind": "AdmissionReview",
                            "response": response,
                        })
                        .to_string();
                        let tls = reader.get_mut();
                        let written = write!(
                            tls,
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if written.and_then(|()| tls.flush()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        WebhookServer { url, ca_pem, received }
    }

    /// The configuration's `caBundle`.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// The reviews received at `path` (the request target without its query), in order.
    pub fn received(&self, path: &str) -> Vec<Value> {
        self.calls(path).into_iter().map(|(_, review)| review).collect()
    }

    /// The queries (after `?`) of the reviews received at `path`, in order.
    pub fn queries(&self, path: &str) -> Vec<String> {
        self.calls(path).into_iter().map(|(query, _)| query).collect()
    }

    /// The query and review of each call at `path`, in order.
    fn calls(&self, path: &str) -> Vec<(String, Value)> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .filter(|(p, _, _)| p == path)
            .map(|(_, query, review)| (query.clone(), review.clone()))
            .collect()
    }
}

/// A TLS server configuration with a new self-signed certificate for 127.0.0.1 and localhost, and the
/// certificate's PEM (what a client trusts).
pub fn self_signed_tls() -> (Arc<rustls::ServerConfig>, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into()),
        )
        .unwrap();
    (Arc::new(config), cert.cert.pem())
}

/// One request of a connection: its target (path and query) and body; `None` at the end of the connection.
fn read_request(reader: &mut impl BufRead) -> Option<(String, Vec<u8>)> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0 {
        return None;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
    Some((path, body))
}
