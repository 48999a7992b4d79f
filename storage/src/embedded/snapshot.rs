//! Snapshots of the embedded store: everything it holds at one revision, in one file, as `etcdctl snapshot` makes of
//! etcd's.
//!
//! A snapshot is taken in one redb read transaction while the store serves (writes go on; the snapshot is the
//! revision the transaction saw), and restored into a new store directory, which then opens at that revision with
//! the same keys, versions, revision log and compaction revision: watches and lists at revisions after the
//! compaction work there as they did in the original.
//!
//! # Format
//! Integers are little-endian; strings and byte strings are a `u32` length and the bytes.
//! - the magic `WASNAP1\n`;
//! - the header: the revision, the compaction revision and the compaction cursor (`i64` each);
//! - records, each a tag byte and its fields: `C` a live key (key, create revision, mod revision), `H` a version
//!   (key, revision, the encoded version), `L` a log entry (revision, key);
//! - the end: the tag `E`, the record count (`u64`), and the SHA-256 of every byte before the digest.
//!
//! A file that is cut short, changed or not a snapshot is refused with the reason, and a restore writes nothing
//! until the whole file has been read and its digest checked.

use std::io::{Read, Write};
use std::path::Path;

use redb::{ReadableDatabase, ReadableTable};
use sha2::{Digest, Sha256};

use super::{Version, CURRENT, HISTORY, LOG, META, META_COMPACTED, META_COMPACT_CURSOR, META_REVISION};
use crate::Revision;

/// Why a snapshot could not be taken, read or restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file is not a whole, unchanged snapshot.
    #[error("not a usable snapshot: {0}")]
    Damaged(String),
    /// The target directory already holds a store.
    #[error("{0} already holds a store: restore into a new directory")]
    Exists(String),
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(String),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

/// The result of snapshot operations.
pub type Result<T, E = SnapshotError> = std::result::Result<T, E>;

fn store_error(e: impl Into<redb::Error>) -> SnapshotError {
    SnapshotError::Store(e.into().to_string())
}

/// The first bytes of a snapshot.
const MAGIC: &[u8; 8] = b"WASNAP1\n";
const TAG_CURRENT: u8 = b'C';
const TAG_HISTORY: u8 = b'H';
const TAG_LOG: u8 = b'L';
const TAG_END: u8 = b'E';

/// What a snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotStatus {
    /// The store's revision the snapshot was taken at.
    pub revision: Revision,
    /// The compaction revision then (0 when never compacted).
    pub compacted: Revision,
    /// Live keys.
    pub keys: u64,
    /// Versions (live values, older values and deletions not yet compacted).
    pub versions: u64,
    /// The snapshot's size, in bytes.
    pub bytes: u64,
    /// The SHA-256 of the snapshot's content (the digest it ends with), in hex.
    pub hash: String,
}

/// Writes everything, hashing it and counting its bytes.
struct Hashing<W> {
    out: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.hash.update(bytes);
        self.bytes += bytes.len() as u64;
        self.out.write_all(bytes).map_err(write_error)
    }

    fn put_i64(&mut self, n: i64) -> Result<()> {
        self.put(&n.to_le_bytes())
    }

    fn put_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| SnapshotError::Store(format!("a record of {} bytes is too large", bytes.len())))?;
        self.put(&len.to_le_bytes())?;
        self.put(bytes)
    }
}

fn write_error(e: std::io::Error) -> SnapshotError {
    SnapshotError::Io(format!("writing the snapshot: {e}"))
}

/// Writes a snapshot of `db`, as one read transaction sees it, to `out`.
pub(super) fn save(db: &redb::Database, out: impl Write) -> Result<SnapshotStatus> {
    let txn = db.begin_read().map_err(store_error)?;
    let meta = txn.open_table(META).map_err(store_error)?;
    let counter = |key: &str| -> Result<i64> { Ok(meta.get(key).map_err(store_error)?.map_or(0, |v| v.value())) };
    let revision = counter(META_REVISION)?;
    // A compaction under way (cursor below the compaction revision) is finished by the restored store.
    let compacted = counter(META_COMPACTED)?;
    let cursor = counter(META_COMPACT_CURSOR)?;
    let mut w = Hashing {
        out,
        hash: Sha256::new(),
        bytes: 0,
    };
    w.put(MAGIC)?;
    w.put_i64(revision)?;
    w.put_i64(compacted)?;
    w.put_i64(cursor)?;
    let (mut keys, mut versions, mut records) = (0u64, 0u64, 0u64);
    for entry in txn
        .open_table(CURRENT)
        .map_err(store_error)?
        .iter()
        .map_err(store_error)?
    {
        let (key, value) = entry.map_err(store_error)?;
        let (create, modified) = value.value();
        w.put(&[TAG_CURRENT])?;
        w.put_bytes(key.value().as_bytes())?;
        w.put_i64(create)?;
        w.put_i64(modified)?;
        keys += 1;
        records += 1;
    }
    for entry in txn
        .open_table(HISTORY)
        .map_err(store_error)?
        .iter()
        .map_err(store_error)?
    {
        let (key, value) = entry.map_err(store_error)?;
        let (name, at) = key.value();
        w.put(&[TAG_HISTORY])?;
        w.put_bytes(name.as_bytes())?;
        w.put_i64(at)?;
        w.put_bytes(value.value())?;
        versions += 1;
        records += 1;
    }
    for entry in txn.open_table(LOG).map_err(store_error)?.iter().map_err(store_error)? {
        let (at, key) = entry.map_err(store_error)?;
        w.put(&[TAG_LOG])?;
        w.put_i64(at.value())?;
        w.put_bytes(key.value().as_bytes())?;
        records += 1;
    }
    w.put(&[TAG_END])?;
    w.put(&records.to_le_bytes())?;
    let digest = w.hash.clone().finalize();
    w.out.write_all(&digest).map_err(write_error)?;
    w.out.flush().map_err(write_error)?;
    Ok(SnapshotStatus {
        revision,
        compacted,
        keys,
        versions,
        bytes: w.bytes + digest.len() as u64,
        hash: hex(&digest),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One record of a snapshot.
enum Record {
    Current {
        key: String,
        create: i64,
        modified: i64,
    },
    History {
        key: String,
        revision: i64,
        version: Vec<u8>,
    },
    Log {
        revision: i64,
        key: String,
    },
}

/// A snapshot read whole and checked: its header, records and status.
struct Parsed {
    revision: Revision,
    compacted: Revision,
    cursor: Revision,
    records: Vec<Record>,
    status: SnapshotStatus,
}

fn damaged(why: impl std::fmt::Display) -> SnapshotError {
    SnapshotError::Damaged(why.to_string())
}

/// Reads a snapshot's content front to back.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(|| damaged("it is cut short"))?;
        let slice = self.bytes.get(self.at..end).ok_or_else(|| damaged("it is cut short"))?;
        self.at = end;
        Ok(slice)
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
        self.take(len)
    }

    fn text(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| damaged("a key is not UTF-8"))
    }
}

/// Reads a snapshot's bytes, checking its structure and digest.
fn parse(bytes: &[u8]) -> Result<Parsed> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(damaged("it does not start as a wasm-apiserver snapshot does"));
    }
    if bytes.len() < MAGIC.len() + 32 {
        return Err(damaged("it is cut short"));
    }
    let (content, digest) = bytes.split_at(bytes.len() - 32);
    // The digest first: a damaged file is refused as such, not for whatever its damage looks like.
    if Sha256::digest(content).as_slice() != digest {
        return Err(damaged(
            "its SHA-256 does not match its content (the file is damaged or cut short)",
        ));
    }
    let mut r = Reader {
        bytes: content,
        at: MAGIC.len(),
    };
    let (revision, compacted, cursor) = (r.i64()?, r.i64()?, r.i64()?);
    let mut records = Vec::new();
    let (mut keys, mut versions) = (0u64, 0u64);
    loop {
        match r.take(1)?[0] {
            TAG_CURRENT => {
                let key = r.text()?;
                let (create, modified) = (r.i64()?, r.i64()?);
                keys += 1;
                records.push(Record::Current { key, create, modified });
            }
            TAG_HISTORY => {
                let key = r.text()?;
                let at = r.i64()?;
                let version = r.bytes()?.to_vec();
                Version::decode(&version).map_err(|_| damaged(format!("a version of {key:?} does not decode")))?;
                versions += 1;
                records.push(Record::History {
                    key,
                    revision: at,
                    version,
                });
            }
            TAG_LOG => {
                let at = r.i64()?;
                let key = r.text()?;
                records.push(Record::Log { revision: at, key });
            }
            TAG_END => {
                let count = r.u64()?;
                if count != records.len() as u64 {
                    return Err(damaged(format!("it says {count} records and holds {}", records.len())));
                }
                break;
            }
            other => return Err(damaged(format!("an unknown record tag {other} at byte {}", r.at - 1))),
        }
    }
    if r.at != content.len() {
        return Err(damaged(format!("{} bytes follow its end", content.len() - r.at)));
    }
    Ok(Parsed {
        revision,
        compacted,
        cursor,
        records,
        status: SnapshotStatus {
            revision,
            compacted,
            keys,
            versions,
            bytes: bytes.len() as u64,
            hash: hex(digest),
        },
    })
}

/// What a snapshot file holds, once its structure and digest are checked.
pub fn status(path: &Path) -> Result<SnapshotStatus> {
    Ok(parse(&read(path)?)?.status)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| SnapshotError::Io(format!("reading {}: {e}", path.display())))?;
    Ok(bytes)
}

/// Restores a snapshot file into `dir`, which must hold no store: afterwards the store in `dir` opens at the
/// snapshot's revision with its keys, versions, log and compaction revision. Nothing is written unless the whole
/// file is a valid snapshot.
pub fn restore(path: &Path, dir: &Path) -> Result<SnapshotStatus> {
    let parsed = parse(&read(path)?)?;
    let store = dir.join("store.redb");
    if store.exists() {
        return Err(SnapshotError::Exists(dir.display().to_string()));
    }
    std::fs::create_dir_all(dir).map_err(|e| SnapshotError::Io(format!("cannot create {}: {e}", dir.display())))?;
    let db = redb::Database::create(&store)
        .map_err(|e| SnapshotError::Io(format!("cannot create {}: {e}", store.display())))?;
    let txn = db.begin_write().map_err(store_error)?;
    {
        let mut meta = txn.open_table(META).map_err(store_error)?;
        let mut current = txn.open_table(CURRENT).map_err(store_error)?;
        let mut history = txn.open_table(HISTORY).map_err(store_error)?;
        let mut log = txn.open_table(LOG).map_err(store_error)?;
        meta.insert(META_REVISION, parsed.revision).map_err(store_error)?;
        meta.insert(META_COMPACTED, parsed.compacted).map_err(store_error)?;
        meta.insert(META_COMPACT_CURSOR, parsed.cursor).map_err(store_error)?;
        for record in &parsed.records {
            match record {
                Record::Current { key, create, modified } => {
                    current
                        .insert(key.as_str(), (*create, *modified))
                        .map_err(store_error)?;
                }
                Record::History { key, revision, version } => {
                    history
                        .insert((key.as_str(), *revision), version.as_slice())
                        .map_err(store_error)?;
                }
                Record::Log { revision, key } => {
                    log.insert(*revision, key.as_str()).map_err(store_error)?;
                }
            }
        }
    }
    txn.commit().map_err(store_error)?;
    Ok(parsed.status)
}
