#!/usr/bin/env bash
# Builds the tasks plugin (JavaScript) as a WebAssembly component with componentize-js 0.23.0, with no WASI imports.
#
# Usage: plugins/tasks/build.sh OUTPUT.wasm        (from any directory)
#
# The work is done by guest-sdk/js/build-plugin.sh: it installs the pinned npm packages of package-lock.json with
# `npm ci` when node_modules is missing (Node.js >= 20.19 and npm are the only requirements), runs the unit tests of
# the helper module and of this plugin (PLUGIN_SKIP_TESTS=1 skips them), bundles src/tasks.js with the helper module
# (rolldown), and builds the world `tasks` of wit/world.wit against the contract in <repo>/wit.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTPUT.wasm" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sdk="$here/../../guest-sdk/js"
exec "$sdk/build-plugin.sh" --world tasks --entry src/tasks.js --test-dir "$sdk/test" --test-dir "$here/test" \
    "$here" "$1"
