#!/usr/bin/env bash
# Builds the @NAME@ plugin (Go) into a WebAssembly component: @NAME@.wasm next to this script, or OUTPUT.wasm.
#
# Usage: ./build.sh [OUTPUT.wasm]      (from any directory)
#
# The work is done by sdk/build-plugin.sh: it installs wasm-tools and the WASI adapter when missing, runs the unit
# tests (*_test.go, natively; PLUGIN_SKIP_TESTS=1 skips them), and builds the world of wit/world.wit with stock Go
# (GOOS=wasip1), against the contract in sdk/wit/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/sdk/build-plugin.sh" --world @WORLD@ "$here" "${1:-$here/@NAME@.wasm}"
