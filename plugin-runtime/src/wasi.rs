//! The few WASI functions the sandbox answers, for guests whose language runtime calls them as it starts or runs
//! (Go's runtime reads the clocks and random bytes, asks for its environment and arguments, looks for preopened
//! directories and sets up its standard streams when it starts): the clocks, random bytes, an empty environment, no
//! arguments, no preopened directory, no terminal, an empty standard input, and standard output and error written
//! to the server's log under the plugin's name (standard error at `error`, kept as the call's last error log, so
//! that a Go runtime's fatal message reaches the client's 500), and pollables that are always ready (Go's runtime
//! sleeps as it stops on a fatal panic; a guest's own sleep spins on the clock until its time, against its call's CPU
//! deadline). The clocks read to the microsecond (monotonic) and the millisecond (wall), not finer. Everything else of WASI (files, sockets)
//! traps, as before; a guest that exits (Go's runtime does on a fatal error) traps with that said.
//!
//! They are defined per component beside the traps ([`super::linking`]), matched by interface and function whatever
//! the WASI 0.2 version the component imports (0.2.6 from Rust's standard library, 0.2.12 from wasmtime 48's
//! preview 1 adapter). Rust guests carry these imports too and now get answers where they trapped.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wasmtime::component::{Resource, ResourceAny, Val};
use wasmtime::{AsContextMut as _, StoreContextMut};

use super::host::HostState;

/// How one WASI function answers: the plugin's store, its parameters, its results to fill.
pub(crate) type Answer = fn(StoreContextMut<'_, HostState>, &[Val], &mut [Val]) -> wasmtime::Result<()>;

/// The standard streams, by the representation of their resource.
const STDIN: u32 = 0;
const STDOUT: u32 = 1;
const STDERR: u32 = 2;
/// Every pollable: always ready (a guest's sleep returns at once; nothing in a plugin call is worth waiting for).
const POLLABLE: u32 = 3;
/// How many bytes a write to an output stream may carry.
const WRITE_BUDGET: u64 = 64 << 10;

/// The most random bytes a guest may ask for at once (each crosses as a value of its own).
const MAX_RANDOM_BYTES: u64 = 64 << 10;
/// The clocks' resolution: coarse enough not to time the host's work finely, fine enough for a runtime's scheduler.
const MONOTONIC_RESOLUTION_NANOS: u64 = 1_000;
const WALL_RESOLUTION_NANOS: u32 = 1_000_000;

/// The answer of the WASI function `function` (`wasi:clocks/monotonic-clock#now`: interface without its version,
/// `#`, function), if the sandbox gives one.
pub(crate) fn answer(function: &str) -> Option<Answer> {
    let answer: Answer = match function {
        "wasi:clocks/monotonic-clock#now" => |_, _, out| set(out, Val::U64(monotonic_nanos())),
        "wasi:clocks/monotonic-clock#resolution" => |_, _, out| set(out, Val::U64(MONOTONIC_RESOLUTION_NANOS)),
        "wasi:clocks/wall-clock#now" => |_, _, out| {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            let nanos = now.subsec_nanos() / WALL_RESOLUTION_NANOS * WALL_RESOLUTION_NANOS;
            set(out, datetime(now.as_secs(), nanos))
        },
        "wasi:clocks/wall-clock#resolution" => |_, _, out| set(out, datetime(0, WALL_RESOLUTION_NANOS)),
        "wasi:random/random#get-random-bytes" | "wasi:random/insecure#get-insecure-random-bytes" => |_, params, out| {
            let len = match params.first() {
                Some(Val::U64(len)) => *len,
                _ => wasmtime::bail!("random bytes asked for without a length"),
            };
            if len > MAX_RANDOM_BYTES {
                wasmtime::bail!("the plugin asked for {len} random bytes at once, more than {MAX_RANDOM_BYTES}");
            }
            let mut bytes = vec![0u8; len as usize];
            getrandom::fill(&mut bytes).map_err(|e| wasmtime::format_err!("reading random bytes: {e}"))?;
            set(out, Val::List(bytes.into_iter().map(Val::U8).collect()))
        },
        "wasi:random/random#get-random-u64" | "wasi:random/insecure#get-insecure-random-u64" => {
            |_, _, out| set(out, Val::U64(random_u64()?))
        }
        "wasi:random/insecure-seed#insecure-seed" => {
            |_, _, out| set(out, Val::Tuple(vec![Val::U64(random_u64()?), Val::U64(random_u64()?)]))
        }
        "wasi:cli/environment#get-environment"
        | "wasi:cli/environment#get-arguments"
        | "wasi:filesystem/preopens#get-directories" => |_, _, out| set(out, Val::List(Vec::new())),
        "wasi:cli/environment#initial-cwd"
        | "wasi:cli/terminal-stdin#get-terminal-stdin"
        | "wasi:cli/terminal-stdout#get-terminal-stdout"
        | "wasi:cli/terminal-stderr#get-terminal-stderr" => |_, _, out| set(out, Val::Option(None)),
        "wasi:cli/stdin#get-stdin" => |store, _, out| set(out, stream(store, STDIN)?),
        "wasi:cli/stdout#get-stdout" => |store, _, out| set(out, stream(store, STDOUT)?),
        "wasi:cli/stderr#get-stderr" => |store, _, out| set(out, stream(store, STDERR)?),
        "wasi:io/streams#[method]output-stream.check-write" => {
            |_, _, out| set(out, Val::Result(Ok(Some(Box::new(Val::U64(WRITE_BUDGET))))))
        }
        "wasi:io/streams#[method]output-stream.write"
        | "wasi:io/streams#[method]output-stream.blocking-write-and-flush" => |store, params, out| {
            write(store, params)?;
            set(out, Val::Result(Ok(None)))
        },
        "wasi:io/streams#[method]output-stream.flush" | "wasi:io/streams#[method]output-stream.blocking-flush" => {
            |_, _, out| set(out, Val::Result(Ok(None)))
        }
        "wasi:io/streams#[method]input-stream.read" | "wasi:io/streams#[method]input-stream.blocking-read" => {
            |_, _, out| {
                set(
                    out,
                    Val::Result(Err(Some(Box::new(Val::Variant("closed".to_owned(), None))))),
                )
            }
        }
        "wasi:clocks/monotonic-clock#subscribe-duration"
        | "wasi:clocks/monotonic-clock#subscribe-instant"
        | "wasi:io/streams#[method]output-stream.subscribe"
        | "wasi:io/streams#[method]input-stream.subscribe" => |store, _, out| set(out, stream(store, POLLABLE)?),
        "wasi:io/poll#poll" => |_, params, out| {
            let ready = match params.first() {
                Some(Val::List(pollables)) => (0..pollables.len() as u32).map(Val::U32).collect(),
                _ => Vec::new(),
            };
            set(out, Val::List(ready))
        },
        "wasi:io/poll#[method]pollable.ready" => |_, _, out| set(out, Val::Bool(true)),
        "wasi:io/poll#[method]pollable.block" => |_, _, _| Ok(()),
        "wasi:cli/exit#exit" => |_, params, _| {
            let status = match params.first() {
                Some(Val::Result(Ok(_))) => "success",
                _ => "failure",
            };
            wasmtime::bail!("the plugin exited (exit status: {status}); its runtime ends the instance on a fatal error")
        },
        "wasi:cli/exit#exit-with-code" => |_, params, _| {
            let code = match params.first() {
                Some(Val::U8(code)) => *code,
                _ => 0,
            };
            wasmtime::bail!("the plugin exited (exit code {code}); its runtime ends the instance on a fatal error")
        },
        _ => return None,
    };
    Some(answer)
}

/// Whether the answer of `function` ends the borrows it was given itself (a write converts its stream's borrow to
/// read which stream it is, which ends it); the others' are ended by [`end_borrows`].
pub(crate) fn ends_its_borrows(function: &str) -> bool {
    matches!(
        function,
        "wasi:io/streams#[method]output-stream.write"
            | "wasi:io/streams#[method]output-stream.blocking-write-and-flush"
    )
}

/// Ends the borrows of resources (streams, pollables) a function was given: wasmtime requires it of a host function
/// that takes its parameters as values.
pub(crate) fn end_borrows(mut store: StoreContextMut<'_, HostState>, params: &[Val]) -> wasmtime::Result<()> {
    for param in params {
        match param {
            Val::Resource(resource) if !resource.owned() => resource.resource_drop(&mut store)?,
            Val::List(items) => end_borrows(store.as_context_mut(), items)?,
            _ => {}
        }
    }
    Ok(())
}

/// `function`'s name without its interface's version: `wasi:cli/exit@0.2.6` and `exit` give `wasi:cli/exit#exit`.
pub(crate) fn unversioned(interface: &str, function: &str) -> String {
    let interface = interface.split_once('@').map_or(interface, |(name, _)| name);
    format!("{interface}#{function}")
}

/// A standard stream's resource, or a pollable's.
fn stream(store: StoreContextMut<'_, HostState>, rep: u32) -> wasmtime::Result<Val> {
    let resource = ResourceAny::try_from_resource(Resource::<()>::new_own(rep), store)?;
    Ok(Val::Resource(resource))
}

/// Writes what the plugin wrote to its standard output or error to the log.
fn write(mut store: StoreContextMut<'_, HostState>, params: &[Val]) -> wasmtime::Result<()> {
    let (Some(Val::Resource(stream)), Some(Val::List(bytes))) = (params.first(), params.get(1)) else {
        wasmtime::bail!("a write to a stream without its stream and bytes");
    };
    let rep = Resource::<()>::try_from_resource_any(*stream, &mut store)?.rep();
    let bytes: Vec<u8> = bytes
        .iter()
        .map(|b| match b {
            Val::U8(b) => *b,
            _ => b'?',
        })
        .collect();
    let text = String::from_utf8_lossy(&bytes);
    let text = text.as_ref();
    let state = store.data_mut();
    let plugin = &*state.plugin;
    if rep == STDERR {
        // Kept whole (up to a bound) as the call's last error log, and logged a line at a time: a Go runtime writes
        // its panic in small pieces.
        let room = super::host::LAST_ERROR_LOG_BYTES.saturating_sub(state.stderr.len());
        state.stderr.push_str(prefix(text, room));
        let written = super::one_line(&state.stderr);
        if !written.is_empty() {
            state.last_error_log = Some(written);
        }
        for piece in text.split_inclusive('\n') {
            let room = super::host::STDERR_LINE_BYTES.saturating_sub(state.stderr_line.len());
            state.stderr_line.push_str(prefix(piece, room));
            if piece.ends_with('\n') || state.stderr_line.len() >= super::host::STDERR_LINE_BYTES {
                let line = std::mem::take(&mut state.stderr_line);
                if !line.trim().is_empty() {
                    tracing::error!(plugin, stream = "stderr", "{}", line.trim_end());
                }
            }
        }
    } else if !text.trim().is_empty() {
        tracing::info!(
            plugin,
            stream = "stdout",
            "{}",
            prefix(text.trim_end(), super::host::STDERR_LINE_BYTES)
        );
    }
    Ok(())
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

fn set(out: &mut [Val], value: Val) -> wasmtime::Result<()> {
    match out.first_mut() {
        Some(slot) => {
            *slot = value;
            Ok(())
        }
        None => wasmtime::bail!("a WASI function's result has no place"),
    }
}

/// A WASI `datetime` record.
fn datetime(seconds: u64, nanoseconds: u32) -> Val {
    Val::Record(vec![
        ("seconds".to_owned(), Val::U64(seconds)),
        ("nanoseconds".to_owned(), Val::U32(nanoseconds)),
    ])
}

/// Nanoseconds since the first reading in this process (the monotonic clock's origin is unspecified).
fn monotonic_nanos() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let nanos = ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64;
    nanos / MONOTONIC_RESOLUTION_NANOS * MONOTONIC_RESOLUTION_NANOS
}

fn random_u64() -> wasmtime::Result<u64> {
    getrandom::u64().map_err(|e| wasmtime::format_err!("reading random bytes: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_are_matched_whatever_the_wasi_version() {
        for version in ["0.2.0", "0.2.6", "0.2.12"] {
            let name = unversioned(&format!("wasi:clocks/monotonic-clock@{version}"), "now");
            assert_eq!(name, "wasi:clocks/monotonic-clock#now");
            assert!(answer(&name).is_some());
        }
        assert!(answer("wasi:filesystem/types#open-at").is_none(), "files are not given");
        assert!(answer("wasi:sockets/tcp-create-socket#create-tcp-socket").is_none());
        assert!(answer("wasi:filesystem/types#[method]descriptor.read").is_none());
    }

    #[test]
    fn the_answers_have_their_wasi_types() {
        let runtime = crate::testing::runtime();
        let mut store = wasmtime::Store::new(&runtime.engine, crate::testing::host_state());
        let mut call = |name: &str, params: &[Val]| {
            let mut out = [Val::Bool(false)];
            answer(name).unwrap()(store.as_context_mut(), params, &mut out).map(|()| out[0].clone())
        };
        let a = call("wasi:clocks/monotonic-clock#now", &[]).unwrap();
        let b = call("wasi:clocks/monotonic-clock#now", &[]).unwrap();
        match (a, b) {
            (Val::U64(a), Val::U64(b)) => assert!(b >= a),
            other => panic!("{other:?}"),
        }
        match call("wasi:random/random#get-random-bytes", &[Val::U64(16)]).unwrap() {
            Val::List(bytes) => assert_eq!(bytes.len(), 16),
            other => panic!("{other:?}"),
        }
        let refused = call("wasi:random/random#get-random-bytes", &[Val::U64(u64::MAX)]).unwrap_err();
        assert!(refused.to_string().contains("random bytes at once"), "{refused}");
        assert_eq!(
            call("wasi:cli/environment#get-environment", &[]).unwrap(),
            Val::List(vec![])
        );
        assert_eq!(
            call("wasi:filesystem/preopens#get-directories", &[]).unwrap(),
            Val::List(vec![])
        );
        assert_eq!(
            call("wasi:cli/terminal-stdout#get-terminal-stdout", &[]).unwrap(),
            Val::Option(None)
        );
        let Val::Resource(stderr) = call("wasi:cli/stderr#get-stderr", &[]).unwrap() else {
            panic!("no stream resource")
        };
        let written = call(
            "wasi:io/streams#[method]output-stream.blocking-write-and-flush",
            &[
                Val::Resource(stderr),
                Val::List(b"fatal error: out of memory\n".iter().map(|b| Val::U8(*b)).collect()),
            ],
        );
        assert_eq!(written.unwrap(), Val::Result(Ok(None)));
        let Val::Resource(pollable) = call(
            "wasi:clocks/monotonic-clock#subscribe-duration",
            &[Val::U64(1_000_000_000)],
        )
        .unwrap() else {
            panic!("no pollable")
        };
        let ready = call("wasi:io/poll#poll", &[Val::List(vec![Val::Resource(pollable)])]).unwrap();
        assert_eq!(ready, Val::List(vec![Val::U32(0)]), "a sleep returns at once");
        let closed = call("wasi:io/streams#[method]input-stream.read", &[Val::U64(1)]).unwrap();
        assert!(matches!(closed, Val::Result(Err(_))), "{closed:?}");
        let exited = call("wasi:cli/exit#exit", &[Val::Result(Err(None))]).unwrap_err();
        assert!(exited.to_string().contains("exit status: failure"), "{exited}");
        let _ = call;
        assert_eq!(
            store.data().last_error_log.as_deref(),
            Some("fatal error: out of memory"),
            "what the plugin wrote to its standard error is its last error log"
        );
    }
}
