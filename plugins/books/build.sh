#!/usr/bin/env bash
# Builds the books plugin (Python) as a WebAssembly component with componentize-py 0.25.1, with no WASI imports.
#
# Usage: plugins/books/build.sh OUTPUT.wasm      (from any directory)
#
# The work is done by guest-sdk/python/build-plugin.sh: it installs componentize-py when missing, bundles books.py
# with the helper module wasm_apiserver.py, builds the world `books` of wit/world.wit against the contract in wit/,
# and first runs the unit tests of the helper module and of this plugin natively (PLUGIN_SKIP_TESTS=1 skips them).
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTPUT.wasm" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sdk="$here/../../guest-sdk/python"
exec "$sdk/build-plugin.sh" --world books --module books --test-dir "$sdk" --test-dir "$here" "$here" "$1"
