#!/usr/bin/env bash
# Builds the wardle plugin (Go) as a WebAssembly component with stock Go, wasm-tools and the WASI preview 1
# reactor adapter.
#
# Usage: plugins/wardle-go/build.sh OUTPUT.wasm      (from any directory)
#
# The work is done by guest-sdk/go/build-plugin.sh: it installs wasm-tools and the adapter when missing, runs the
# unit tests of the SDK and of this plugin natively (PLUGIN_SKIP_TESTS=1 skips them), and builds
# the world `wardle` of wit/world.wit against the contract in wit/.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTPUT.wasm" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../../guest-sdk/go/build-plugin.sh" --world wardle "$here" "$1"
