#!/usr/bin/env bash
# Builds the widgets plugin (C) as a WebAssembly component with clang, wasm-tools and the WASI preview 1 reactor
# adapter.
#
# Usage: plugins/widgets-c/build.sh OUTPUT.wasm      (from any directory)
#
# The work is done by guest-sdk/c/build-plugin.sh: it installs the C toolchain, cJSON, wasm-tools and the adapter
# when missing, and builds the world `widgets` of wit/world.wit against the contract in wit/.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTPUT.wasm" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../../guest-sdk/c/build-plugin.sh" --world widgets "$here" "$1"
