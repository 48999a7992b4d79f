//! The plugin runtime: WebAssembly components that define resource types, run in a sandbox.
//!
//! [`runtime`] holds the engine shared by all plugins and its compile cache ([`cache`]); [`component`] loads one
//! component, links it with the host's imports ([`host`]: logging and declared reads; everything else traps) and
//! detects its verbs from its exports; its instances wait in a [`pool`]; a [`call`] runs in one within the tenant's
//! [`budget`], on the async worker or a lane of the [`fair`] share; [`calls`] are its typed calls, at the edge where
//! the WIT types ([`bindings`], [`contract`]) become the host's ([`apimachinery::plugin`], [`apimachinery::scheme`]).
//!
//! Nothing here knows the registry or storage: the apiserver makes a component the strategy of its types through its
//! own adapter (`loader::component`), and lends it reads through [`apimachinery::plugin::HostReads`].
pub mod bindings;
pub mod budget;
pub mod cache;
pub mod call;
pub mod calls;
pub mod component;
pub mod contract;
pub mod fair;
pub mod file;
pub mod host;
mod keywords;
pub mod linking;
pub mod pool;
pub mod runtime;
#[cfg(test)]
mod testing;
mod wasi;

/// A message on one line, its whitespace runs made single spaces (wasmtime's errors span several lines).
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a client is told of a trap: the root cause on one line, without the wasm backtrace (which goes to the log),
/// and sandbox denials said plainly.
pub(crate) fn client_message(e: &anyhow::Error) -> String {
    let root = e.root_cause().to_string();
    let first = root.lines().next().unwrap_or("").trim().to_string();
    if let Some(rest) = first.strip_prefix("unknown import: ") {
        let import = rest.split(" has not been defined").next().unwrap_or(rest);
        return format!(
            "the plugin called {import}, which the sandbox does not provide (no files, environment or sockets)"
        );
    }
    if first.is_empty() {
        format!("{e}")
    } else {
        first
    }
}

/// Converts a wasmtime result into an anyhow one, with context.
pub fn in_context<T>(r: wasmtime::Result<T>, context: &'static str) -> anyhow::Result<T> {
    r.map_err(|e| anyhow::Error::from(e).context(context))
}
