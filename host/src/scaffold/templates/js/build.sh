#!/usr/bin/env bash
# Builds the @NAME@ plugin (JavaScript) into a WebAssembly component: @NAME@.wasm next to this script, or OUTPUT.wasm.
#
# Usage: ./build.sh [OUTPUT.wasm]      (from any directory)
#
# The work is done by sdk/build-plugin.sh: `npm ci` when node_modules is missing (Node.js >= 20.19 and npm are the
# only requirements), the unit tests in test/ (PLUGIN_SKIP_TESTS=1 skips them), a bundle of src/@NAME@.js with the
# helpers in sdk/ (rolldown), and componentize-js on the world of wit/world.wit against the contract in sdk/wit/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/sdk/build-plugin.sh" --world @WORLD@ --entry src/@NAME@.js --test-dir "$here/test" \
    "$here" "${1:-$here/@NAME@.wasm}"
