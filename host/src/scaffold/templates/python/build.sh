#!/usr/bin/env bash
# Builds the @NAME@ plugin (Python) into a WebAssembly component: @NAME@.wasm next to this script, or OUTPUT.wasm.
#
# Usage: ./build.sh [OUTPUT.wasm]      (from any directory)
#
# The work is done by sdk/build-plugin.sh: it installs componentize-py 0.25.1 when missing, runs the unit tests
# (test_*.py, natively; PLUGIN_SKIP_TESTS=1 skips them), and builds the world of wit/world.wit with @MODULE@.py and
# the helper module sdk/wasm_apiserver.py, against the contract in sdk/wit/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/sdk/build-plugin.sh" --world @WORLD@ --module @MODULE@ "$here" "${1:-$here/@NAME@.wasm}"
