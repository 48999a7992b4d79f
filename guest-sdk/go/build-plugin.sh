#!/usr/bin/env bash
# Builds a Go wasm-apiserver plugin as a WebAssembly component with stock Go (GOOS=wasip1, `go:wasmexport`; no
# TinyGo), wasm-tools and the WASI preview 1 reactor adapter.
#
# Usage: guest-sdk/go/build-plugin.sh [--world NAME] PLUGIN_DIR OUTPUT.wasm
#
#   PLUGIN_DIR    a Go module whose package main registers the plugin (guest.Register) and imports
#                 wasm-apiserver.io/guest/bindings/wit_exports, with wit/*.wit: a WIT package with the plugin's own
#                 world, which includes the contract's worlds or interfaces it exports (wasm-apiserver:plugin@0.1.1).
#                 The component exports what that world does, whatever the SDK implements.
#   --world       the world to build (default: the name of PLUGIN_DIR).
#
# First runs the module's Go unit tests natively (PLUGIN_SKIP_TESTS=1 skips them). Installs what is missing:
# wasm-tools (its component commands, from crates.io, pinned) and the adapter (wasmtime 48's, from the crate
# wasi-preview1-component-adapter-provider, by guest-sdk/component/adapter). The Go module proxy must serve
# go.bytecodealliance.org/pkg (its checksum is not in the public checksum database: GONOSUMDB covers it). OUTPUT is
# written only when the whole build succeeded.
set -euo pipefail

sdk="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -d "$sdk/wit" ]]; then
    contract="$sdk/wit"
else
    contract="$(cd "$sdk/../../wit" && pwd)"
fi

usage() {
    sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2
    exit 2
}

world=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --world) [[ $# -ge 2 ]] || usage; world="$2"; shift 2 ;;
        -*) usage ;;
        *) break ;;
    esac
done
[[ $# -eq 2 ]] || usage
plugin_dir="$(cd "$1" && pwd)"
output="$2"
world="${world:-$(basename "$plugin_dir")}"
command -v go >/dev/null || { echo "error: go is missing: install Go 1.25 or later (https://go.dev/dl/)" >&2; exit 1; }
# The bindings' runtime, which the checksum database did not answer for (the committed go.sum files pin it).
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}go.bytecodealliance.org/pkg"

# wasm-tools, the adapter and componentize: in a project made by `plugin new`, sdk/component; here, ../component.
if [[ -d "$sdk/component" ]]; then
    source "$sdk/component/tools.sh"
else
    source "$sdk/../component/tools.sh"
fi

work="$(mktemp -d -t go-plugin.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# The WIT: the plugin's package with the contract as a dependency.
compgen -G "$plugin_dir/wit/*.wit" >/dev/null || { echo "error: $plugin_dir has no wit/*.wit with its world" >&2; exit 1; }
mkdir -p "$work/wit/deps/wasm-apiserver-plugin"
cp "$plugin_dir"/wit/*.wit "$work/wit/"
cp "$contract"/*.wit "$work/wit/deps/wasm-apiserver-plugin/"

if [[ "${PLUGIN_SKIP_TESTS:-}" != 1 ]]; then
    (cd "$sdk" && go test . ./field/ >&2)
    if compgen -G "$plugin_dir/*_test.go" >/dev/null; then
        (cd "$plugin_dir" && go test ./... >&2)
    fi
fi
# The interfaces the world exports, linked in: a hook set whose interface it does not export makes the plugin fail
# to load, saying what to add, instead of never running.
exports="$(world_exports "$work/wit" "$world")"
(cd "$plugin_dir" && GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared \
    -ldflags="-checklinkname=0 -X wasm-apiserver.io/guest/internal/registry.worldExports=$exports" \
    -o "$work/core.wasm" .)
componentize "$work/core.wasm" "$work/wit" "$world" "$output"
