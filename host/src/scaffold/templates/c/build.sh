#!/usr/bin/env bash
# Builds the @NAME@ plugin (C) into a WebAssembly component: @NAME@.wasm next to this script, or OUTPUT.wasm.
#
# Usage: ./build.sh [OUTPUT.wasm]      (from any directory)
#
# The work is done by sdk/build-plugin.sh: it installs Debian's clang for wasm32 (as root), cJSON, wasm-tools and
# the WASI adapter when missing, and builds the world of wit/world.wit from the *.c files here, against the contract
# in sdk/wit/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/sdk/build-plugin.sh" --world @WORLD@ "$here" "${1:-$here/@NAME@.wasm}"
