//! Writes wasmtime 48's WASI preview 1 reactor adapter to standard output.

use std::io::Write as _;

fn main() -> std::io::Result<()> {
    std::io::stdout().write_all(wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER)
}
