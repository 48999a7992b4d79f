#!/usr/bin/env bash
# Regenerates bindings/ (the Go bindings of the contract's full-plugin world) with wit-bindgen's `go` generator, for
# stock Go (wasip1, `go:wasmexport`). Run it when wit/ changes; the hooks that the exports call are written by hand
# in bindings/export_* (they are not generated). Needs wit-bindgen-cli 0.61.1 (scripts/install-go-toolchain.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
keep="$(mktemp -d)"
trap 'rm -rf "$keep"' EXIT
# The hand-written export packages survive the regeneration.
if compgen -G "bindings/export_*" >/dev/null; then
    cp -r bindings/export_* "$keep/"
fi
rm -rf bindings
wit-bindgen go ../../wit -w full-plugin --out-dir bindings \
    --pkg-name wasm-apiserver.io/guest/bindings --export-pkg-name wasm-apiserver.io/guest/bindings >/dev/null
cp -r "$keep"/export_* bindings/ 2>/dev/null || true
echo "generated $(find bindings -name '*.go' | wc -l) files in bindings/"
