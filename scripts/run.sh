#!/usr/bin/env bash
# Builds the example plugins and the server, then serves the examples on the embedded store:
#   plugins in .data/plugins/ (wardle, books, tasks, partial: copied from target/plugins; drop more .wasm files there
#   while it runs), data in .data/ (kept across runs), plain HTTP on 127.0.0.1:8080.
# Extra arguments go to `wasm-apiserver serve` (for example --insecure-port 9090).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v cargo >/dev/null || { echo "cargo is missing: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
scripts/build-plugins.sh
cargo build
mkdir -p .data/plugins
for plugin in wardle books tasks partial; do
    # Write beside, then rename: a running server never sees a half-copied file.
    cp "target/plugins/$plugin.wasm" ".data/plugins/.$plugin.wasm.tmp"
    mv ".data/plugins/.$plugin.wasm.tmp" ".data/plugins/$plugin.wasm"
done
exec target/debug/wasm-apiserver serve --plugin-dir .data/plugins --data-dir .data "$@"
