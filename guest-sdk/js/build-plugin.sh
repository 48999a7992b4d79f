#!/usr/bin/env bash
# Builds a JavaScript plugin into a WebAssembly component with componentize-js, with no WASI imports.
#
# Usage: guest-sdk/js/build-plugin.sh --world WORLD --entry FILE [--test-dir DIR]... PLUGIN_DIR OUTPUT.wasm
#
#   PLUGIN_DIR    holds package.json and package-lock.json pinning @bytecodealliance/componentize-js,
#                 @bytecodealliance/preview2-shim and rolldown (see plugins/tasks), and wit/*.wit declaring WORLD
#                 (which includes or exports interfaces of wasm-apiserver:plugin@0.1.1). The contract is the wit/
#                 directory next to this script when there is one (a project made by `wasm-apiserver plugin new`
#                 has it in sdk/wit/), else this repository's wit/.
#   --entry FILE  the plugin's ES module, relative to PLUGIN_DIR; it may import other modules by relative path (such
#                 as this directory's wasm-apiserver.js) and `wasm-apiserver:plugin/host@0.1.1`.
#   --test-dir    a directory of `node --test` unit tests, run before building (PLUGIN_SKIP_TESTS=1 skips them).
#
# Steps: `npm ci` in PLUGIN_DIR when node_modules is missing or older than the lock file (Node.js >= 20.19 and npm
# are the only requirements); the unit tests; a bundle of the entry and its imports into one module with rolldown
# (componentize-js reads one file), led by this directory's host.js so that an exception in a hook is written, with
# its stack, to the server's log; the WIT staged with the contract in deps/; componentize-js with every WASI feature
# disabled; OUTPUT.wasm. Builds of one plugin are serialised with flock(1) on PLUGIN_DIR/.build.lock
# (when flock exists). The intermediate files stay in PLUGIN_DIR/build/ for inspection: componentize-js reads its
# inputs through a WASI filesystem rooted at the current directory, so they must be below it.
set -euo pipefail

usage() {
    echo "usage: $0 --world WORLD --entry FILE [--test-dir DIR]... PLUGIN_DIR OUTPUT.wasm" >&2
    exit 2
}

world=""
entry=""
test_dirs=()
positional=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --world) [[ $# -ge 2 ]] || usage; world="$2"; shift 2 ;;
        --entry) [[ $# -ge 2 ]] || usage; entry="$2"; shift 2 ;;
        --test-dir) [[ $# -ge 2 ]] || usage; test_dirs+=("$(cd "$2" && pwd)"); shift 2 ;;
        -*) usage ;;
        *) positional+=("$1"); shift ;;
    esac
done
[[ -n "$world" && -n "$entry" && ${#positional[@]} -eq 2 ]] || usage

sdk="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
if [[ -d "$sdk/wit" ]]; then
    contract="$sdk/wit"
else
    contract="$(cd "$sdk/../../wit" && pwd)"
fi
plugin_dir="$(cd "${positional[0]}" && pwd)"
output="${positional[1]}"
[[ "$output" = /* ]] || output="$PWD/$output"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "error: building a JavaScript plugin needs Node.js >= 20.19 and npm" >&2
    exit 1
fi
if ! node -e '
    const [major, minor] = process.versions.node.split(".").map(Number);
    process.exit(major > 20 || (major === 20 && minor >= 19) ? 0 : 1);
'; then
    echo "error: building a JavaScript plugin needs Node.js >= 20.19 (found $(node --version))" >&2
    exit 1
fi

cd "$plugin_dir"
# Concurrent builds of one plugin (scripts/build-plugins.sh and a test run, say) would race on node_modules and build/.
if command -v flock >/dev/null; then
    exec 9>.build.lock
    flock 9
fi
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    npm ci --no-audit --no-fund
fi

if [[ "${PLUGIN_SKIP_TESTS:-}" != 1 ]]; then
    for dir in "${test_dirs[@]}"; do
        # The spec reporter says which test failed and why (file, assertion, stack); it is shown whole on a failure
        # and summed up otherwise.
        report="$(mktemp)"
        if ! node --test --test-reporter=spec "$dir" >"$report" 2>&1; then
            cat "$report" >&2
            rm -f "$report"
            echo "error: the unit tests in $dir failed (see above); PLUGIN_SKIP_TESTS=1 builds without them" >&2
            exit 1
        fi
        echo "unit tests in $dir: $(grep -E '^ℹ (pass|fail) ' "$report" | tr '\n' ' ')" >&2
        rm -f "$report"
    done
fi

work=build
rm -rf "$work"
mkdir -p "$work/wit/deps/plugin"
cp wit/*.wit "$work/wit/"
cp "$contract"/*.wit "$work/wit/deps/plugin/"

# Every hook the plugin defines must run: its interface exported by the world.
node "$sdk/check-world.js" "$entry" "$work/wit" "$world"

# The bundle's entry: the plugin's module (its exports are the component's), after host.js, which gives the helpers
# the host's log for the stack traces of exceptions in hooks. (Unit tests under Node.js import the plugin without it.)
main="$work/component-entry.js"
printf 'import %s;\nexport * from %s;\n' \
    "$(node -p 'JSON.stringify(process.argv[1])' "$sdk/host.js")" \
    "$(node -p 'JSON.stringify(process.argv[1])' "$(cd "$(dirname "$entry")" && pwd -P)/$(basename "$entry")")" >"$main"
bundle="$work/$(basename "$entry")"
node_modules/.bin/rolldown "$main" --file "$bundle" --format esm --platform neutral \
    --external 'wasm-apiserver:plugin/host@0.1.1'

node_modules/.bin/componentize-js "$bundle" --wit "$work/wit" --world-name "$world" \
    --disable stdio random clocks http fetch-event -o "$work/$world.wasm"

# A component starts with the wasm magic and the component-model layer: 00 61 73 6d 0d 00 01 00.
header="$(od -An -tx1 -N8 "$work/$world.wasm" | tr -d ' \n')"
if [[ "$header" != "0061736d0d000100" ]]; then
    echo "error: componentize-js produced no WebAssembly component (header $header)" >&2
    exit 1
fi

mkdir -p "$(dirname "$output")"
cp "$work/$world.wasm" "$output"
echo "wrote $output"
