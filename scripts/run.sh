#!/usr/bin/env bash
# Builds the example plugins and the server, then serves the plugins on the embedded store:
#   plugins from target/plugins/, data in .data/ (kept across runs), plain HTTP on 127.0.0.1:8080.
# Extra arguments go to `wasm-apiserver serve` (for example --insecure-port 9090).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v cargo >/dev/null || { echo "cargo is missing: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
scripts/build-plugins.sh
cargo build
exec target/debug/wasm-apiserver serve --plugin-dir target/plugins --data-dir .data "$@"
