//! The etcd backend: [`Storage`] on an etcd 3 cluster, through the v3 gRPC API (the `etcd-client` crate).
//!
//! # Keys
//! Every key is stored as the configured prefix ([`EtcdOptions::prefix`], for example `/tenant-x`) followed by the
//! key as the registry gives it (`/registry/<group>/<resource>/...`); keys read back have the prefix removed, so
//! several API servers (or tenants) can share one etcd cluster under different prefixes.
//!
//! # Operations
//! Each operation is one etcd request, atomic on the server:
//! - `create`: `Txn(ModRevision(key) == 0 → Put)`, else [`StorageError::AlreadyExists`];
//! - `update`: `Txn(CreateRevision(key) > 0 ∧ ModRevision(key) == expected → Put(prev_kv), else Get)`, giving
//!   [`StorageError::Conflict`] with the key's actual revision, or [`StorageError::NotFound`];
//! - `delete`: `Txn(ModRevision(key) == expected → Delete(prev_kv), else Get)`, or a plain delete with `prev_kv`;
//! - `list`: a range read at a revision, with a limit; `remaining` comes from etcd's count of the range;
//! - `compact`: a logical (non-physical) compaction, as kube-apiserver's compactor does.
//!
//! Revisions are etcd's own: an empty etcd is at revision 1, and every write to the cluster (under any prefix)
//! takes the next revision.
//!
//! # Failures
//! Every request runs under [`EtcdOptions::request_timeout`], so an unreachable etcd never hangs a caller:
//! connection failures and timeouts are [`StorageError::Unavailable`] (the API answers 503). Within that time a
//! request is sent again, to whichever member the client picks next, when that is safe: always when it never left
//! (its member could not be connected to); for reads and the conditional writes (`create`, `update`, a `delete`
//! with an expected revision) also when its outcome is unknown (a broken connection, a lost leader: etcd's "no
//! leader", "leader changed", "request timed out"). A conditional write is applied at most once, and when the
//! repeat then fails its condition the write checks whether its own earlier attempt was applied: a create or update
//! finding exactly its value (which carries a fresh uid) succeeded; a delete cannot tell and answers
//! [`StorageError::Unavailable`]. So a cluster that loses a member, even its leader, keeps serving. A request
//! that timed out may still have been applied by etcd, as with any etcd client.
//!
//! # Watches
//! See the `watch` submodule: an etcd watch with `prev_kv` and progress notifications that re-establishes itself
//! from the last delivered revision when the connection breaks, so no event is lost or repeated.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::proto::{PbKeyValue, PbResponseHeader, PbTxnOpResponse};
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, Identity, KvClient,
    MaintenanceClient, PutOptions, TlsOptions, Txn, TxnOp, TxnResponse, WatchClient,
};

use crate::{BoxFuture, KeyValue, ListOptions, ListResult, Result, Revision, Storage, StorageError, WatchStream};

mod watch;

#[cfg(test)]
mod test_proxy;
#[cfg(test)]
mod test_server;
#[cfg(test)]
mod tests;

/// The largest gRPC message accepted from etcd (a large list or a batch of large watch events), as kube-apiserver
/// allows.
const MAX_MESSAGE_SIZE: usize = i32::MAX as usize;
/// The HTTP/2 keep-alive ping interval and timeout: a silently dead connection is noticed within their sum.
const KEEP_ALIVE: (Duration, Duration) = (Duration::from_secs(15), Duration::from_secs(10));

/// How to reach etcd (kube-apiserver's `--etcd-*` flags).
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// The client URLs of the etcd members (`--etcd-servers`), such as `http://127.0.0.1:2379`; use `https://`
    /// URLs with TLS.
    pub endpoints: Vec<String>,
    /// Prepended to every key (`--etcd-prefix`): `""`, or a path such as `/tenant-x` (a trailing `/` is ignored).
    pub prefix: String,
    /// The CA bundle that verifies the etcd servers' certificates (`--etcd-cafile`); required with `https://`.
    pub ca_file: Option<PathBuf>,
    /// The client certificate for mutual TLS (`--etcd-certfile`); given together with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (`--etcd-keyfile`); given together with `cert_file`.
    pub key_file: Option<PathBuf>,
    /// How long [`EtcdStorage::connect`] waits for etcd to answer, and the TCP connect timeout.
    pub dial_timeout: Duration,
    /// The deadline of every request (and of establishing a watch).
    pub request_timeout: Duration,
}

impl Default for EtcdOptions {
    /// A local etcd on its default port, no prefix, no TLS.
    fn default() -> Self {
        EtcdOptions {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: String::new(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            dial_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(15),
        }
    }
}

/// A [`Storage`] backend on etcd 3. See the [module documentation](self).
pub struct EtcdStorage {
    /// The KV client (cheap to clone; clones share the connection).
    kv: KvClient,
    /// The watch client (cheap to clone; clones share the connection).
    watch: WatchClient,
    /// The key prefix, without a trailing `/`.
    prefix: String,
    /// The deadline of each request.
    request_timeout: Duration,
    /// How many members the client sends to (`--etcd-servers`).
    endpoints: usize,
    /// The number of watch tasks running.
    watchers: Arc<AtomicUsize>,
    /// The maintenance client, to ask etcd its version.
    maintenance: MaintenanceClient,
    /// Progress requests: a counter bumped by [`Storage::request_progress`], observed by every watch task.
    progress: tokio::sync::watch::Sender<u64>,
    /// Whether etcd answers progress requests reliably, once known.
    progress_reliable: tokio::sync::OnceCell<bool>,
}

impl std::fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("prefix", &self.prefix)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl EtcdStorage {
    /// Connects to etcd and checks that it answers within [`EtcdOptions::dial_timeout`].
    ///
    /// Fails with [`StorageError::Unavailable`] when etcd cannot be reached, and with [`StorageError::Internal`]
    /// for a bad configuration (no endpoints, unreadable TLS files, TLS with an `http://` URL).
    pub async fn connect(options: EtcdOptions) -> Result<Self> {
        if options.endpoints.is_empty() {
            return Err(StorageError::Internal("no etcd endpoints given".into()));
        }
        // Keep-alive pings only while a stream (a watch) is open: etcd penalises pings on idle connections.
        // Requiring a leader makes a member cut off from its cluster fail requests and end watches, which then
        // move to another member, instead of serving stale data.
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.dial_timeout)
            .with_keep_alive(KEEP_ALIVE.0, KEEP_ALIVE.1)
            .with_keep_alive_while_idle(false)
            .with_require_leader(true);
        if let Some(tls) = tls_options(&options)? {
            connect = connect.with_tls(tls);
        }
        let endpoints = options.endpoints.join(",");
        let client = Client::connect(&options.endpoints, Some(connect))
            .await
            .map_err(|e| match classify(e) {
                Failure::Storage(StorageError::Unavailable(m)) => {
                    StorageError::Unavailable(format!("cannot connect to etcd at {endpoints}: {m}"))
                }
                failure => StorageError::Internal(format!(
                    "invalid etcd configuration for {endpoints}: {}",
                    failure.into_error()
                )),
            })?;
        let store = EtcdStorage {
            kv: client.kv_client().max_decoding_message_size(MAX_MESSAGE_SIZE),
            watch: client.watch_client().max_decoding_message_size(MAX_MESSAGE_SIZE),
            prefix: options.prefix.trim_end_matches('/').to_owned(),
            request_timeout: options.dial_timeout,
            endpoints: options.endpoints.len(),
            watchers: Arc::default(),
            maintenance: client.maintenance_client(),
            progress: tokio::sync::watch::channel(0).0,
            progress_reliable: tokio::sync::OnceCell::new(),
        };
        store.current_revision().await.map_err(|e| match e {
            StorageError::Unavailable(m) => {
                StorageError::Unavailable(format!("etcd at {endpoints} does not answer: {m}"))
            }
            other => other,
        })?;
        Ok(EtcdStorage {
            request_timeout: options.request_timeout,
            ..store
        })
    }

    /// A store on the same etcd connection under another key prefix (replacing this one's), such as one per
    /// tenant.
    pub fn with_prefix(&self, prefix: &str) -> EtcdStorage {
        EtcdStorage {
            kv: self.kv.clone(),
            watch: self.watch.clone(),
            prefix: prefix.trim_end_matches('/').to_owned(),
            request_timeout: self.request_timeout,
            endpoints: self.endpoints,
            watchers: Arc::default(),
            maintenance: self.maintenance.clone(),
            progress: tokio::sync::watch::channel(0).0,
            progress_reliable: self.progress_reliable.clone(),
        }
    }

    /// The number of watch tasks running: each lives until its receiver is dropped or its stream has ended.
    pub fn active_watches(&self) -> usize {
        self.watchers.load(Ordering::Acquire)
    }

    /// The etcd key of a storage key.
    fn full_key(&self, key: &str) -> Vec<u8> {
        format!("{}{key}", self.prefix).into_bytes()
    }

    /// Converts an etcd key-value into a storage one, removing the prefix from its key.
    fn key_value(&self, kv: PbKeyValue) -> Result<KeyValue> {
        key_value(&self.prefix, kv)
    }

    /// Runs one etcd request under the request timeout, sending it again (to whichever member the client picks
    /// next) after a failure that allows it, so that a cluster that lost a member but kept its quorum keeps
    /// serving. A request that never left (its member could not be connected to) is always sent again; one that
    /// may have reached etcd only when `repeat` says so. See [`EtcdStorage::call_noting`].
    async fn call<T, F>(&self, repeat: Repeat, request: impl FnMut() -> F) -> Result<T, Failure>
    where
        F: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.call_noting(repeat, &mut false, request).await
    }

    /// [`EtcdStorage::call`], setting `resent` when the request was sent again after an attempt that may have
    /// reached etcd (and been applied): a conditional write that then fails its condition may have succeeded.
    ///
    /// A member that cannot be connected to is skipped at once (a few tries, as the client picks members in
    /// turn); while the cluster elects a leader (etcd answers "no leader", "leader changed" or "request timed
    /// out"), repeatable requests wait with a growing pause, up to the request timeout; other transient failures
    /// are tried a few times.
    async fn call_noting<T, F>(
        &self,
        repeat: Repeat,
        resent: &mut bool,
        mut request: impl FnMut() -> F,
    ) -> Result<T, Failure>
    where
        F: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.request_timeout;
        let (mut unsent, mut failed) = (0usize, 0u32);
        loop {
            let error = match tokio::time::timeout_at(deadline, request()).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(e)) => e,
                Err(_) => {
                    return Err(Failure::Storage(StorageError::Unavailable(format!(
                        "etcd did not answer within {:?}",
                        self.request_timeout
                    ))))
                }
            };
            let kind = failure_kind(&error);
            tracing::debug!(error = %error, ?kind, "etcd request failed");
            let failure = classify(error);
            let pause = match kind {
                FailureKind::NeverSent if unsent < 2 * self.endpoints => {
                    unsent += 1;
                    RETRY_PAUSE
                }
                FailureKind::Election if repeat == Repeat::Safe => {
                    failed += 1;
                    (RETRY_PAUSE * (1 << failed.min(6))).min(MAX_ELECTION_PAUSE)
                }
                FailureKind::Other
                    if repeat == Repeat::Safe
                        && failed < MAX_RETRIES
                        && matches!(failure, Failure::Storage(StorageError::Unavailable(_))) =>
                {
                    failed += 1;
                    RETRY_PAUSE * (1 << failed)
                }
                _ => return Err(failure),
            };
            if tokio::time::Instant::now() + pause >= deadline {
                return Err(failure);
            }
            if kind != FailureKind::NeverSent {
                *resent = true;
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Runs a transaction under the request timeout, sending it again after failures as `repeat` allows (a
    /// conditional transaction cannot be applied twice); `resent` tells the caller to check what happened when
    /// its condition then fails.
    async fn txn(&self, repeat: Repeat, txn: Txn, resent: &mut bool) -> Result<TxnResponse> {
        self.call_noting(repeat, resent, || {
            let (mut kv, txn) = (self.kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
        .map_err(Failure::into_error)
    }

    /// The compaction revision, for the message of a [`StorageError::Compacted`]; `below` is a revision known
    /// to be below it (or `below + 1` is returned when etcd does not tell).
    async fn compaction_revision(&self, below: Revision) -> Revision {
        watch::compaction_revision(self, below).await.unwrap_or(below + 1)
    }

    /// The error for a request at a revision newer than the current one.
    async fn too_large(&self, requested: Revision) -> StorageError {
        match self.current_revision().await {
            Ok(current) => StorageError::TooLargeRevision { requested, current },
            Err(e) => e,
        }
    }
}

/// Builds the TLS settings from the CA, certificate and key files, if any is given.
fn tls_options(options: &EtcdOptions) -> Result<Option<TlsOptions>> {
    let read = |path: &Path| {
        std::fs::read(path)
            .map_err(|e| StorageError::Internal(format!("cannot read etcd TLS file {}: {e}", path.display())))
    };
    let mut tls = TlsOptions::new();
    let mut any = false;
    if let Some(ca) = &options.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        any = true;
    }
    match (&options.cert_file, &options.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
            any = true;
        }
        (None, None) => {}
        _ => {
            return Err(StorageError::Internal(
                "the etcd client certificate and key files must be given together".into(),
            ))
        }
    }
    Ok(any.then_some(tls))
}

/// Converts an etcd key-value into a storage one, removing `prefix` from its key.
/// Whether an etcd server version answers progress requests reliably: 3.4.31+, 3.5.13+, or 3.6 and later.
fn progress_requests_reliable(version: &str) -> bool {
    let mut parts = version.split(['.', '-', '+']).map(|p| p.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

fn key_value(prefix: &str, kv: PbKeyValue) -> Result<KeyValue> {
    Ok(KeyValue {
        key: strip_prefix(prefix, kv.key)?,
        value: kv.value,
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    })
}

/// Removes `prefix` from an etcd key; keys are UTF-8 and lie under the prefix, anything else is an internal
/// error.
fn strip_prefix(prefix: &str, key: Vec<u8>) -> Result<String> {
    let key = String::from_utf8(key)
        .map_err(|e| StorageError::Internal(format!("etcd returned a key that is not UTF-8: {e}")))?;
    match key.strip_prefix(prefix) {
        Some(rest) => Ok(rest.to_owned()),
        None => Err(StorageError::Internal(format!(
            "etcd returned key {key:?} outside the prefix {prefix:?}"
        ))),
    }
}

/// The etcd range `[start, end)` of every key starting with `prefix`, as etcd clients compute it.
fn prefix_range(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    if prefix.is_empty() {
        // Key "\0" with range end "\0": every key.
        return (vec![0], vec![0]);
    }
    let mut end = prefix.to_vec();
    while let Some(&last) = end.last() {
        if last < 0xff {
            if let Some(byte) = end.last_mut() {
                *byte = last + 1;
            }
            return (prefix.to_vec(), end);
        }
        end.pop();
    }
    // The prefix is all 0xff bytes: the range runs to the end of the key space.
    (prefix.to_vec(), vec![0])
}

/// The revision in a response header (0 when etcd sent none).
fn header_revision(header: Option<&PbResponseHeader>) -> Revision {
    header.map_or(0, |h| h.revision)
}

/// A failed etcd request, with the revision errors that need their caller's context.
enum Failure {
    /// The requested revision has been compacted.
    Compacted,
    /// The requested revision is newer than the current one.
    FutureRevision,
    /// Any other failure.
    Storage(StorageError),
}

impl Failure {
    /// The storage error, for requests that name no revision.
    fn into_error(self) -> StorageError {
        match self {
            Failure::Compacted => StorageError::Internal("etcd: revision compacted".into()),
            Failure::FutureRevision => StorageError::Internal("etcd: future revision".into()),
            Failure::Storage(e) => e,
        }
    }
}

/// Whether a request may be sent again when its outcome is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repeat {
    /// A read, or a conditional write whose caller checks what happened: sending it twice does no harm.
    Safe,
    /// A write: only when it certainly never reached etcd.
    IfNotSent,
}

/// How many times [`EtcdStorage::call`] sends a request again after another transient failure, its first pause
/// (doubled each time), and the longest pause while the cluster elects a leader.
const MAX_RETRIES: u32 = 3;
const RETRY_PAUSE: Duration = Duration::from_millis(10);
const MAX_ELECTION_PAUSE: Duration = Duration::from_millis(400);

/// Why a request failed, for deciding whether to send it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FailureKind {
    /// It never left: the client could not connect to the member it picked.
    NeverSent,
    /// The cluster has no leader, or lost it while the request was in flight.
    Election,
    /// Anything else: [`classify`] tells whether it may pass ([`StorageError::Unavailable`]) or is an answer.
    Other,
}

fn failure_kind(error: &etcd_client::Error) -> FailureKind {
    let etcd_client::Error::GRpcStatus(status) = error else {
        return FailureKind::Other;
    };
    let message = status.message();
    if i32::from(status.code()) == 14
        && (message.contains("connect error")
            || message.contains("error trying to connect")
            || message.contains("Connection refused"))
    {
        FailureKind::NeverSent
    } else if message.contains("leader") || message.contains("etcdserver: request timed out") {
        FailureKind::Election
    } else {
        FailureKind::Other
    }
}

/// The gRPC status codes of a failure to reach etcd, an overloaded etcd, or a broken connection: cancelled (1),
/// unknown (2), deadline exceeded (4), resource exhausted (8), aborted (10), internal (13, how tonic reports a
/// broken HTTP/2 stream), unavailable (14).
const TRANSIENT_CODES: [i32; 7] = [1, 2, 4, 8, 10, 13, 14];

/// Classifies an etcd client error: connection problems are [`StorageError::Unavailable`].
fn classify(error: etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match error {
        E::GRpcStatus(status) => {
            let message = status.message();
            if message.contains("required revision has been compacted") {
                return Failure::Compacted;
            }
            if message.contains("required revision is a future revision") {
                return Failure::FutureRevision;
            }
            // Over --max-request-bytes, etcd answers "request is too large"; over that plus gRPC's overhead
            // (512 KiB), its gRPC server refuses the message. Neither is worth a retry.
            if message.contains("request is too large") || message.contains("received message larger than max") {
                return Failure::Storage(StorageError::TooLarge(format!(
                    "etcd: {message} (etcd's --max-request-bytes, 1.5 MiB by default)"
                )));
            }
            let text = format!("etcd: {message} ({:?})", status.code());
            if TRANSIENT_CODES.contains(&i32::from(status.code())) {
                Failure::Storage(StorageError::Unavailable(text))
            } else {
                Failure::Storage(StorageError::Internal(text))
            }
        }
        E::TransportError(e) => Failure::Storage(StorageError::Unavailable(format!("etcd: {e}"))),
        E::IoError(e) => Failure::Storage(StorageError::Unavailable(format!("etcd: {e}"))),
        E::WatchError(e) => Failure::Storage(StorageError::Unavailable(format!("etcd watch: {e}"))),
        other => Failure::Storage(StorageError::Internal(format!("etcd: {other}"))),
    }
}

/// The single response of a transaction branch, or an internal error when etcd sent another shape.
fn only_response(txn: TxnResponse) -> Result<PbTxnOpResponse> {
    txn.0
        .responses
        .into_iter()
        .next()
        .and_then(|op| op.response)
        .ok_or_else(|| StorageError::Internal("etcd transaction without a response".into()))
}

/// An internal error for a transaction response of an unexpected kind.
fn unexpected(what: &str) -> StorageError {
    StorageError::Internal(format!("etcd answered {what} with an unexpected response"))
}

impl Storage for EtcdStorage {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(async move {
            let response = self
                .call(Repeat::Safe, || {
                    let (mut kv, key) = (self.kv.clone(), self.full_key(key));
                    async move { kv.get(key, None).await }
                })
                .await
                .map_err(Failure::into_error)?;
            match response.0.kvs.into_iter().next() {
                Some(found) => self.key_value(found).map(Some),
                None => Ok(None),
            }
        })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            let full_prefix = self.full_key(prefix);
            let (mut start, end) = prefix_range(&full_prefix);
            if let Some(after) = options.start_after.as_deref().filter(|a| *a >= prefix) {
                start = self.full_key(after);
                start.push(0);
            }
            let limit = i64::try_from(options.limit).unwrap_or(i64::MAX);
            let get = GetOptions::new()
                .with_range(end)
                .with_revision(options.revision.max(0))
                .with_limit(limit);
            let request = || {
                let (mut kv, start, get) = (self.kv.clone(), start.clone(), get.clone());
                async move { kv.get(start, Some(get)).await }
            };
            let response = match self.call(Repeat::Safe, request).await {
                Ok(response) => response,
                Err(Failure::Compacted) => {
                    return Err(StorageError::Compacted {
                        requested: options.revision,
                        compacted: self.compaction_revision(options.revision).await,
                    })
                }
                Err(Failure::FutureRevision) => return Err(self.too_large(options.revision).await),
                Err(Failure::Storage(e)) => return Err(e),
            };
            let revision = if options.revision > 0 {
                options.revision
            } else {
                header_revision(response.0.header.as_ref())
            };
            let count = u64::try_from(response.0.count).unwrap_or(0);
            let items = response
                .0
                .kvs
                .into_iter()
                .map(|kv| self.key_value(kv))
                .collect::<Result<Vec<_>>>()?;
            let remaining = count.saturating_sub(items.len() as u64);
            Ok(ListResult {
                items,
                revision,
                remaining,
            })
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            let full = self.full_key(key);
            let txn = Txn::new()
                .when([Compare::mod_revision(full.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(full, value.clone(), None)]);
            let mut resent = false;
            let response = self.txn(Repeat::Safe, txn, &mut resent).await?;
            if !response.succeeded() {
                // A create sent again after an attempt whose outcome was unknown: if the key holds exactly this
                // value (which carries a fresh uid), that attempt was applied and the create succeeded. Both
                // attempts are conditional on the key being absent, so at most one of them was applied.
                if resent {
                    if let Some(kv) = self.get(key).await?.filter(|kv| kv.value == value) {
                        return Ok(kv);
                    }
                }
                return Err(StorageError::AlreadyExists { key: key.to_owned() });
            }
            let revision = header_revision(response.0.header.as_ref());
            Ok(KeyValue {
                key: key.to_owned(),
                value,
                create_revision: revision,
                mod_revision: revision,
            })
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Vec<u8>, expected: Revision) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            let full = self.full_key(key);
            let txn = Txn::new()
                .when([
                    Compare::create_revision(full.clone(), CompareOp::Greater, 0),
                    Compare::mod_revision(full.clone(), CompareOp::Equal, expected),
                ])
                .and_then([TxnOp::put(
                    full.clone(),
                    value.clone(),
                    Some(PutOptions::new().with_prev_key()),
                )])
                .or_else([TxnOp::get(full, None)]);
            let mut resent = false;
            let response = self.txn(Repeat::Safe, txn, &mut resent).await?;
            let succeeded = response.succeeded();
            let revision = header_revision(response.0.header.as_ref());
            match (succeeded, only_response(response)?) {
                (true, PbTxnOpResponse::ResponsePut(put)) => {
                    let prev = put.prev_kv.ok_or_else(|| unexpected("an update"))?;
                    Ok(KeyValue {
                        key: key.to_owned(),
                        value,
                        create_revision: prev.create_revision,
                        mod_revision: revision,
                    })
                }
                (false, PbTxnOpResponse::ResponseRange(range)) => match range.kvs.first() {
                    None => Err(StorageError::NotFound { key: key.to_owned() }),
                    // Sent again after an attempt whose outcome was unknown, and the key holds exactly this value
                    // at a later revision: that attempt was applied (both were conditional on the same revision).
                    Some(current) if resent && current.value == value && current.mod_revision > expected => {
                        Ok(KeyValue {
                            key: key.to_owned(),
                            value,
                            create_revision: current.create_revision,
                            mod_revision: current.mod_revision,
                        })
                    }
                    Some(current) => Err(StorageError::Conflict {
                        key: key.to_owned(),
                        expected,
                        actual: current.mod_revision,
                    }),
                },
                _ => Err(unexpected("an update")),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>> {
        Box::pin(async move {
            let full = self.full_key(key);
            let delete = TxnOp::delete(full.clone(), Some(DeleteOptions::new().with_prev_key()));
            let txn = match expected {
                Some(expected) => Txn::new()
                    .when([Compare::mod_revision(full.clone(), CompareOp::Equal, expected)])
                    .and_then([delete])
                    .or_else([TxnOp::get(full, None)]),
                None => Txn::new().and_then([delete]),
            };
            // An unconditional delete sent twice could delete an object created in between: only if it never left.
            let repeat = match expected {
                Some(_) => Repeat::Safe,
                None => Repeat::IfNotSent,
            };
            let mut resent = false;
            let response = self.txn(repeat, txn, &mut resent).await?;
            let succeeded = response.succeeded();
            if resent && !succeeded {
                return Err(StorageError::Unavailable(format!(
                    "etcd: the delete of {key} was sent again after an attempt whose outcome is unknown (a member \
                     or the leader was lost), and may have been applied"
                )));
            }
            let revision = header_revision(response.0.header.as_ref());
            let not_found = || StorageError::NotFound { key: key.to_owned() };
            match (succeeded, only_response(response)?) {
                (true, PbTxnOpResponse::ResponseDeleteRange(deleted)) => {
                    let prev = deleted.prev_kvs.into_iter().next().ok_or_else(not_found)?;
                    Ok((self.key_value(prev)?, revision))
                }
                (false, PbTxnOpResponse::ResponseRange(range)) => match (range.kvs.first(), expected) {
                    (Some(current), Some(expected)) => Err(StorageError::Conflict {
                        key: key.to_owned(),
                        expected,
                        actual: current.mod_revision,
                    }),
                    _ => Err(not_found()),
                },
                _ => Err(unexpected("a delete")),
            }
        })
    }

    /// Watches from `after` (0 or below: from the current revision). A revision newer than the current one is
    /// allowed: the watch waits for it, as in etcd. Fails with [`StorageError::Compacted`] (when it starts or as
    /// its first item) when `after` is below the compaction revision, and with [`StorageError::Unavailable`] when
    /// etcd cannot be reached to start it.
    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let after = if after <= 0 {
                self.current_revision().await?
            } else {
                after
            };
            let watcher = watch::Watcher::new(self, prefix);
            let stream = watcher.open(after).await?;
            Ok(watcher.spawn(stream, after))
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<Revision>> {
        Box::pin(async move {
            // A linearizable count of one key: the cheapest request whose header has the current revision.
            let response = self
                .call(Repeat::Safe, || {
                    let (mut kv, probe) = (self.kv.clone(), self.full_key("/"));
                    async move { kv.get(probe, Some(GetOptions::new().with_count_only())).await }
                })
                .await
                .map_err(Failure::into_error)?;
            match header_revision(response.0.header.as_ref()) {
                0 => Err(StorageError::Internal("etcd answered without a revision".into())),
                revision => Ok(revision),
            }
        })
    }

    /// Sends a progress request on every watch's stream, if etcd's version answers them reliably: before 3.4.31
    /// and 3.5.13, a requested progress notification could overtake events still queued for the stream, or
    /// never come (etcd-io/etcd#15220, #17557). Kubernetes gates consistent reads from its cache on the same
    /// versions.
    fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            let reliable = self
                .progress_reliable
                .get_or_try_init(|| async {
                    let status = self
                        .call(Repeat::Safe, || {
                            let mut maintenance = self.maintenance.clone();
                            async move { maintenance.status().await }
                        })
                        .await
                        .map_err(Failure::into_error)?;
                    let reliable = progress_requests_reliable(status.version());
                    tracing::info!(
                        version = status.version(),
                        reliable,
                        "etcd version: progress requests {}",
                        if reliable { "used" } else { "not used" }
                    );
                    Ok::<_, StorageError>(reliable)
                })
                .await?;
            if *reliable {
                self.progress.send_modify(|requests| *requests += 1);
            }
            Ok(*reliable)
        })
    }

    fn compact(&self, revision: Revision) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            // Compacting twice at one revision answers "compacted" the second time: safe to repeat.
            let request = || {
                let mut kv = self.kv.clone();
                async move { kv.compact(revision, None).await }
            };
            match self.call(Repeat::Safe, request).await {
                Ok(_) => Ok(()),
                // etcd refuses to compact at or below its compaction revision.
                Err(Failure::Compacted) => Err(StorageError::Compacted {
                    requested: revision,
                    compacted: self.compaction_revision(revision - 1).await,
                }),
                Err(Failure::FutureRevision) => Err(self.too_large(revision).await),
                Err(Failure::Storage(e)) => Err(e),
            }
        })
    }
}
