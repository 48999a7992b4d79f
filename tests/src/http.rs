//! Raw HTTP access to the server under test.

use std::time::Duration;

use anyhow::Context as _;
use reqwest::blocking::Client;
use reqwest::Method;
use serde_json::Value;

use crate::stream::JsonStream;

/// A blocking HTTP client bound to the server's base URL (`http://127.0.0.1:<port>`).
///
/// Every request method panics when the request cannot be sent at all (the server is gone); HTTP error statuses are
/// returned as a [`Reply`] for the test to assert on.
#[derive(Clone)]
pub struct Http {
    client: Client,
    streaming: Client,
    base: String,
}

/// A response: its status code, its body text and, when the body is JSON, the parsed body (else `Value::Null`).
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, or `""`.
    pub content_type: String,
    /// The body as text (lossy UTF-8).
    pub text: String,
    /// The body parsed as JSON, or `Value::Null` when it is not JSON.
    pub json: Value,
}

impl Reply {
    /// Asserts that this is a Kubernetes `Status` failure with the given HTTP code and reason, and returns the Status.
    pub fn assert_status(&self, code: u16, reason: &str) -> &Value {
        assert_eq!(
            self.status, code,
            "expected HTTP {code} {reason}, got {} with body {}",
            self.status, self.text
        );
        let status = &self.json;
        assert_eq!(
            status["kind"], "Status",
            "the error body is not a Status: {}",
            self.text
        );
        assert_eq!(status["apiVersion"], "v1", "Status apiVersion: {}", self.text);
        assert_eq!(status["status"], "Failure", "Status status: {}", self.text);
        assert_eq!(status["reason"], reason, "Status reason: {}", self.text);
        assert_eq!(status["code"], code, "Status code: {}", self.text);
        status
    }

    /// Asserts that the status code is `code` and returns the JSON body.
    pub fn expect(&self, code: u16) -> &Value {
        assert_eq!(
            self.status, code,
            "expected HTTP {code}, got {} with body {}",
            self.status, self.text
        );
        &self.json
    }
}

impl Http {
    /// An HTTPS client for `base` that trusts `ca_pem` and presents `identity` (PEM certificate and key), if any.
    pub fn secure(base: String, ca_pem: &str, identity: Option<&[u8]>) -> Http {
        let build = |timeout: Option<Duration>| {
            let mut builder = Client::builder()
                .use_rustls_tls()
                .tls_built_in_root_certs(false)
                .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("the CA certificate"))
                .timeout(timeout);
            if let Some(identity) = identity {
                builder = builder.identity(reqwest::Identity::from_pem(identity).expect("the client identity"));
            }
            builder.build().expect("build the HTTPS client")
        };
        Http {
            client: build(Some(Duration::from_secs(60))),
            streaming: build(None),
            base,
        }
    }

    /// A client for the server at `base` (no trailing slash).
    pub(crate) fn new(base: String) -> Http {
        let client = Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("build the HTTP client");
        let streaming = Client::builder()
            .timeout(None)
            .build()
            .expect("build the streaming HTTP client");
        Http {
            client,
            streaming,
            base,
        }
    }

    /// The base URL, `http://127.0.0.1:<port>`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The absolute URL of `path` (which starts with `/` and may carry a query).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The underlying client, for requests the helpers do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None, Vec::new())
    }

    /// `GET path` accepting `accept` (for example a Table: `application/json;as=Table;v=v1;g=meta.k8s.io`).
    pub fn get_accepting(&self, path: &str, accept: &str) -> Reply {
        let description = format!("GET {path} ({accept})");
        self.request(Method::GET, path, accept, None, Vec::new())
            .unwrap_or_else(|e| panic!("{description}: {e:#}"))
    }

    /// `POST path` with a JSON body.
    pub fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.send(
            Method::POST,
            path,
            Some("application/json"),
            body.to_string().into_bytes(),
        )
    }

    /// `PUT path` with a JSON body.
    pub fn put_json(&self, path: &str, body: &Value) -> Reply {
        self.send(
            Method::PUT,
            path,
            Some("application/json"),
            body.to_string().into_bytes(),
        )
    }

    /// `PATCH path` with the given patch content type (for example `application/merge-patch+json`).
    pub fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.send(Method::PATCH, path, Some(content_type), body.to_string().into_bytes())
    }

    /// `DELETE path` without a body.
    pub fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, None, Vec::new())
    }

    /// Sends a request and panics if it cannot be sent or its body cannot be read.
    pub fn send(&self, method: Method, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Reply {
        let description = format!("{method} {path}");
        self.try_send(method, path, content_type, body)
            .unwrap_or_else(|e| panic!("{description}: {e:#}"))
    }

    /// Sends a request; an error means no HTTP response was received.
    pub fn try_send(
        &self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> anyhow::Result<Reply> {
        self.request(method, path, "application/json", content_type, body)
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> anyhow::Result<Reply> {
        let mut request = self.client.request(method, self.url(path)).header("Accept", accept);
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type).body(body);
        }
        let response = request.send().context("send the request")?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = response.bytes().context("read the response body")?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Reply {
            status,
            content_type,
            text,
            json,
        })
    }

    /// Starts a streaming `GET path` (a watch) and returns its body as a stream of JSON values, after asserting the
    /// response status is 200.
    pub fn watch(&self, path: &str) -> JsonStream {
        self.watch_accepting(path, "application/json")
    }

    /// Like [`Http::watch`], with an `Accept` header (such as a Table's).
    pub fn watch_accepting(&self, path: &str, accept: &str) -> JsonStream {
        let response = self
            .streaming
            .get(self.url(path))
            .header("Accept", accept)
            .send()
            .unwrap_or_else(|e| panic!("GET {path}: {e:#}"));
        let status = response.status().as_u16();
        if status != 200 {
            let text = response.text().unwrap_or_default();
            panic!("watch GET {path} answered {status}: {text}");
        }
        JsonStream::spawn(response)
    }
}
