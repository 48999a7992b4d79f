//! An HTTP fuzz run: 10,000 malformed or odd requests against the insecure port, from a seeded generator (set
//! `HTTP_FUZZ_SEED` to replay another run, `HTTP_FUZZ_CASES` to change the count).
//!
//! The requests are bad paths (percent-encoding, `..`, empty and very long segments, unicode, unknown tenants),
//! methods, headers (huge, many, duplicated, bad Content-Length and chunked framing, odd media types, bad
//! credentials), bodies (truncated and deeply nested JSON, huge numbers, wrong types, YAML alias bombs, invalid
//! UTF-8), query values and content types. Most go over raw TCP on a few keep-alive connections, so that malformed
//! request lines and framing are possible; requests whose framing is broken go on a connection of their own that
//! the test closes for writing; some well-formed ones go through a normal HTTP client.
//!
//! The server must answer each with a status below 500 or close the connection (a request it cannot parse), never
//! leave a request unanswered; every `Status` it answers is well-formed (`apiVersion: v1`, `code` equal to the
//! HTTP status, `status: Failure` for errors); and at the end it is still alive and serving, with no panic in its
//! log.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::{Server, FLUNDERS_V1ALPHA1};
use serde_json::{json, Value};

#[path = "http_fuzz/cases.rs"]
mod cases;

use cases::{bodies, generate, Case, Transport};

/// How many requests the run sends.
const DEFAULT_CASES: usize = 10_000;
/// How many connections send at once.
const WORKERS: usize = 6;
/// How long a request may wait for its answer (or for the server to close the connection) before it counts as a
/// hang.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);
/// The default seed.
const DEFAULT_SEED: u64 = 0x0F0F_2026_1326;

/// One parsed response.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// The outcome of reading a response from a buffer.
enum Parsed {
    Complete(Answer, usize),
    Incomplete,
    Malformed(String),
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses one HTTP/1.1 response at the start of `buffer` (for a request with `method`).
fn parse_response(buffer: &[u8], method: &str) -> Parsed {
    let Some(end) = find(buffer, b"\r\n\r\n") else {
        return Parsed::Incomplete;
    };
    let head = String::from_utf8_lossy(&buffer[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Parsed::Malformed(format!("status line {status_line:?}"));
    };
    let Ok(status) = code.parse::<u16>() else {
        return Parsed::Malformed(format!("status line {status_line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Parsed::Malformed(format!("status line {status_line:?}"));
    }
    let mut content_length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Parsed::Malformed(format!("header line {line:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            match value.parse::<usize>() {
                Ok(n) => content_length = Some(n),
                Err(_) => return Parsed::Malformed(format!("content-length {value:?}")),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let start = end + 4;
    if (100..200).contains(&status) {
        return Parsed::Complete(
            Answer {
                status,
                body: Vec::new(),
            },
            start,
        );
    }
    if method == "HEAD" || status == 204 || status == 304 {
        return Parsed::Complete(
            Answer {
                status,
                body: Vec::new(),
            },
            start,
        );
    }
    if chunked {
        let mut body = Vec::new();
        let mut at = start;
        loop {
            let Some(line_end) = find(&buffer[at..], b"\r\n") else {
                return Parsed::Incomplete;
            };
            let size_text = String::from_utf8_lossy(&buffer[at..at + line_end]);
            let size_text = size_text.split(';').next().unwrap_or("").trim();
            let Ok(size) = usize::from_str_radix(size_text, 16) else {
                return Parsed::Malformed(format!("chunk size {size_text:?}"));
            };
            at += line_end + 2;
            if size == 0 {
                // No trailers from this server: the final CRLF.
                if buffer.len() < at + 2 {
                    return Parsed::Incomplete;
                }
                return Parsed::Complete(Answer { status, body }, at + 2);
            }
            if buffer.len() < at + size + 2 {
                return Parsed::Incomplete;
            }
            body.extend_from_slice(&buffer[at..at + size]);
            at += size + 2;
        }
    }
    match content_length {
        Some(n) if buffer.len() >= start + n => Parsed::Complete(
            Answer {
                status,
                body: buffer[start..start + n].to_vec(),
            },
            start + n,
        ),
        Some(_) => Parsed::Incomplete,
        // Neither: the body runs to the close; the caller reads to EOF.
        None => Parsed::Incomplete,
    }
}

/// What went wrong with one case.
type Failure = String;

/// How many answers had each status code (for the run's summary).
static STATUSES: Mutex<std::collections::BTreeMap<u16, usize>> = Mutex::new(std::collections::BTreeMap::new());

/// Checks one answer: no 5xx, and a well-formed Status when the body is one.
fn check_answer(case: &Case, answer: &Answer, failures: &mut Vec<Failure>) {
    *STATUSES.lock().expect("the statuses").entry(answer.status).or_default() += 1;
    if answer.status >= 500 {
        failures.push(format!(
            "{}: answered {} {}",
            case.label,
            answer.status,
            String::from_utf8_lossy(&answer.body[..answer.body.len().min(400)])
        ));
    }
    let Ok(value) = serde_json::from_slice::<Value>(&answer.body) else {
        return;
    };
    if value["kind"] != "Status" {
        return;
    }
    // A success Status (a delete's) may leave `code` out, as kube's registry does.
    let well_formed = value["apiVersion"] == "v1"
        && if answer.status >= 400 {
            value["code"] == answer.status && value["status"] == "Failure" && value["reason"].is_string()
        } else {
            (value["code"].is_null() || value["code"] == answer.status) && value["status"] == "Success"
        };
    if !well_formed {
        failures.push(format!(
            "{}: malformed Status for HTTP {}: {value}",
            case.label, answer.status
        ));
    }
}

/// A keep-alive connection to the server.
struct Connection {
    stream: Option<TcpStream>,
    port: u16,
}

impl Connection {
    fn stream(&mut self) -> std::io::Result<&mut TcpStream> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(("127.0.0.1", self.port))?;
            stream.set_read_timeout(Some(Duration::from_millis(500)))?;
            stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
            stream.set_nodelay(true)?;
            self.stream = Some(stream);
        }
        Ok(self.stream.as_mut().expect("just connected"))
    }
}

/// The status of a response whose head is complete at the start of `buffer`, and whether the server closes the
/// connection after it.
fn head(buffer: &[u8]) -> Option<(u16, bool)> {
    let end = find(buffer, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, head.contains("\r\nconnection: close")))
}

/// How a read of the answers ended.
enum Ending {
    /// The server closed the connection (or reset it).
    Closed,
    /// A complete response is at the start of the buffer (keep-alive), or a watch started streaming.
    Answered,
}

/// Reads from `stream` into `buffer` until `done(buffer)`, the server closes, or the answer deadline passes (an
/// error: a hang).
fn read_until(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    mut done: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<Ending> {
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        if done(buffer) {
            return Ok(Ending::Answered);
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"));
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(Ending::Closed),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(Ending::Closed),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether `buffer` holds what a case waits for: a complete final response, or the head of a watch's 200.
fn answered(case: &Case, buffer: &[u8]) -> bool {
    let mut rest = buffer;
    loop {
        match parse_response(rest, &case.method) {
            Parsed::Complete(answer, used) if (100..200).contains(&answer.status) => rest = &rest[used..],
            Parsed::Complete(..) | Parsed::Malformed(_) => return true,
            Parsed::Incomplete => return case.may_stream && head(rest).is_some_and(|(status, _)| status == 200),
        }
    }
}

/// Checks every response in `buffer`; a last one cut short by the close (or a watch's stream) by its status and
/// what arrived of its body.
fn check_all(case: &Case, buffer: &[u8], failures: &mut Vec<Failure>) {
    let mut rest = buffer;
    // Later answers are to what followed a request whose body ended early: not to the case's method.
    let mut method = case.method.as_str();
    while !rest.is_empty() {
        match parse_response(rest, method) {
            Parsed::Complete(answer, used) => {
                check_answer(case, &answer, failures);
                rest = &rest[used..];
                if answer.status >= 200 {
                    method = "GET";
                }
            }
            Parsed::Incomplete => {
                match head(rest) {
                    Some((status, _)) => {
                        let body = find(rest, b"\r\n\r\n")
                            .map(|end| rest[end + 4..].to_vec())
                            .unwrap_or_default();
                        check_answer(case, &Answer { status, body }, failures);
                    }
                    None => failures.push(format!(
                        "{}: a partial answer: {:?}",
                        case.label,
                        String::from_utf8_lossy(rest)
                    )),
                }
                return;
            }
            Parsed::Malformed(why) => {
                failures.push(format!("{}: malformed answer: {why}", case.label));
                return;
            }
        }
    }
}

/// Sends a well-framed case on the keep-alive connection and checks its response.
fn send_keep_alive(connection: &mut Connection, case: &Case, failures: &mut Vec<Failure>) {
    let started = Instant::now();
    let fresh = connection.stream.is_none();
    let result = (|| -> std::io::Result<(Ending, Vec<u8>)> {
        let stream = connection.stream()?;
        // The server may stop reading a request it refused early: a failed write still lets us read its answer.
        let _ = stream.write_all(&case.raw);
        let mut buffer = Vec::new();
        let read = read_until(stream, &mut buffer, |b| answered(case, b))?;
        Ok((read, buffer))
    })();
    match result {
        // The server closed a kept-alive connection before reading this request: send it again on a new one.
        Ok((Ending::Closed, buffer)) if buffer.is_empty() && !fresh => {
            connection.stream = None;
            send_keep_alive(connection, case, failures);
        }
        Ok((read, buffer)) => {
            check_all(case, &buffer, failures);
            let close = head(&buffer).is_none_or(|(status, close)| close || status == 200 && case.may_stream);
            if matches!(read, Ending::Closed) || close || case.may_stream {
                connection.stream = None;
            }
        }
        Err(e) => {
            failures.push(format!("{}: no answer after {:?}: {e}", case.label, started.elapsed()));
            connection.stream = None;
        }
    }
}

/// Sends a broken case on a connection of its own, closes it for writing, and reads every answer until the
/// server closes it (or a watch starts streaming).
fn send_alone(port: u16, case: &Case, failures: &mut Vec<Failure>) {
    let started = Instant::now();
    let result = (|| -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_millis(500)))?;
        stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        let _ = stream.write_all(&case.raw);
        let _ = stream.shutdown(Shutdown::Write);
        let mut buffer = Vec::new();
        read_until(&mut stream, &mut buffer, |b| {
            case.may_stream && head(b).is_some_and(|(status, _)| status == 200)
        })?;
        Ok(buffer)
    })();
    match result {
        Ok(_) if case.http2 => {}
        Ok(buffer) => check_all(case, &buffer, failures),
        Err(e) => failures.push(format!("{}: no close after {:?}: {e}", case.label, started.elapsed())),
    }
}

/// Sends a case through reqwest.
fn send_client(client: &reqwest::blocking::Client, base: &str, case: &Case, failures: &mut Vec<Failure>) {
    // CONNECT asks a client for a tunnel, not a request.
    let Ok(method) = reqwest::Method::from_bytes(case.method.as_bytes()) else {
        return;
    };
    if method == reqwest::Method::CONNECT {
        return;
    }
    let url = format!(
        "{base}{}",
        if case.target.starts_with('/') {
            &case.target
        } else {
            "/"
        }
    );
    let mut request = client.request(method, &url).body(case.body.clone());
    for (name, value) in &case.headers {
        if name != "Host" {
            request = request.header(name.as_str(), value.as_slice());
        }
    }
    match request.send() {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = if case.may_stream && status == 200 {
                Vec::new()
            } else {
                match response.bytes() {
                    Ok(bytes) => bytes.to_vec(),
                    Err(e) => {
                        failures.push(format!("{}: body of {status} not read: {e}", case.label));
                        return;
                    }
                }
            };
            check_answer(case, &Answer { status, body }, failures);
        }
        // reqwest refuses some URLs and headers itself; only a server that did not answer is a failure.
        Err(e) if e.is_builder() => {}
        // The server answered (and closed the connection) before it read the whole body: fine, as on raw TCP.
        Err(e) => {
            let mut chain = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                chain.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            // The server answered (and closed the connection) before it read the whole body: fine, as on raw TCP.
            // Closing a socket with unread data in it resets the connection, and the reset may overtake the end of
            // the answer (hyper has no lingering close): with a large unread body, a lost answer is tolerated too.
            let reset = case.body.len() > 64 * 1024 && chain.contains("error decoding response body");
            if !chain.contains("error writing a body to connection") && !reset {
                failures.push(format!("{}: {chain}", case.label));
            }
        }
    }
}

#[test]
fn ten_thousand_malformed_requests_get_no_5xx_no_panic_and_no_hang() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz"}}),
    )
    .expect(201);
    let target = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "fuzz-target", "namespace": "default", "labels": {"a": "b"}},
        "spec": {"reference": "x"},
    });
    http.post_json(FLUNDERS_V1ALPHA1, &target).expect(201);

    let seed = std::env::var("HTTP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let count = std::env::var("HTTP_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    // `HTTP_FUZZ_ONLY=<index>` replays one case (printing it) to investigate a failure.
    let only: Option<usize> = std::env::var("HTTP_FUZZ_ONLY").ok().and_then(|s| s.parse().ok());
    let count = if only.is_some() { 1 } else { count };
    let bodies = Arc::new(bodies());
    let next = Arc::new(AtomicUsize::new(0));
    let sent: Arc<[AtomicUsize; 3]> = Arc::new(Default::default());
    let failures = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let port = server.port();
    let base = server.base_url();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (bodies, next, sent) = (bodies.clone(), next.clone(), sent.clone());
            let (failures, base) = (failures.clone(), base.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::builder()
                    .timeout(ANSWER_TIMEOUT)
                    .build()
                    .expect("an HTTP client");
                let mut connection = Connection { stream: None, port };
                let mut found = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        break;
                    }
                    let case = generate(seed, only.unwrap_or(index), &bodies);
                    if only.is_some() {
                        let shown = &case.raw[..case.raw.len().min(2_000)];
                        eprintln!(
                            "{}\n{:?}\n{}",
                            case.label,
                            case.transport,
                            String::from_utf8_lossy(shown)
                        );
                    }
                    sent[case.transport as usize].fetch_add(1, Ordering::Relaxed);
                    match case.transport {
                        Transport::KeepAlive => send_keep_alive(&mut connection, &case, &mut found),
                        Transport::Alone => send_alone(port, &case, &mut found),
                        Transport::Client => send_client(&client, &base, &case, &mut found),
                    }
                }
                failures.lock().expect("the failures").extend(found);
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a fuzz worker");
    }
    let elapsed = started.elapsed();
    let by_transport = |t: Transport| sent[t as usize].load(Ordering::Relaxed);
    eprintln!(
        "http fuzz: {count} requests (seed {seed:#x}; {} keep-alive, {} alone, {} client) in {elapsed:?}",
        by_transport(Transport::KeepAlive),
        by_transport(Transport::Alone),
        by_transport(Transport::Client)
    );
    eprintln!(
        "http fuzz: answers by status: {:?}",
        STATUSES.lock().expect("the statuses")
    );
    let failures = failures.lock().expect("the failures");
    assert!(
        failures.is_empty(),
        "{} of {count} requests failed (seed {seed:#x}):\n{}",
        failures.len(),
        failures.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
    );

    // Still alive and serving.
    assert_eq!(http.get("/readyz").status, 200, "readyz after the fuzz run");
    let after = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "after-fuzz", "namespace": "fuzz"}, "spec": {"reference": "x"},
    });
    http.post_json("/apis/wardle.example.com/v1alpha1/namespaces/fuzz/flunders", &after)
        .expect(201);
    let pid = server.pid().expect("the server runs");
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(!state.contains(") Z "), "the server process is a zombie: {state}");
    let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).take(10).collect();
    assert!(panics.is_empty(), "the server log shows panics:\n{}", panics.join("\n"));
}

/// Sends `raw` on `stream` and reads one response (with a Content-Length body); returns its head and body.
fn exchange(stream: &mut TcpStream, raw: &[u8]) -> (String, Vec<u8>) {
    stream.write_all(raw).expect("send the request");
    let mut buffer = Vec::new();
    read_until(stream, &mut buffer, |b| {
        matches!(parse_response(b, "POST"), Parsed::Complete(..))
    })
    .expect("an answer");
    let end = find(&buffer, b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
    (head, buffer[end + 4..].to_vec())
}

#[test]
fn an_answer_that_leaves_the_request_body_unread_closes_the_connection() {
    let server = Server::start(&["wardle"]);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a read timeout");
    // A body the handlers read (a create): the connection carries the next request.
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "kept-alive"}, "spec": {"reference": "x"},
    })
    .to_string();
    let create = format!(
        "POST {FLUNDERS_V1ALPHA1} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{flunder}",
        flunder.len()
    );
    let (head, _) = exchange(&mut stream, create.as_bytes());
    assert!(head.starts_with("http/1.1 201"), "{head}");
    assert!(!head.contains("\r\nconnection: close"), "{head}");
    // A body no handler reads (no such path): the answer says the connection closes, so that a client does not
    // send its next request on it.
    let body = vec![b'x'; 1024 * 1024];
    let mut unread = b"POST /nonesuch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".to_vec();
    unread.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    unread.extend_from_slice(&body);
    let (head, _) = exchange(&mut stream, &unread);
    assert!(head.starts_with("http/1.1 404"), "{head}");
    assert!(head.contains("\r\nconnection: close"), "{head}");
}
