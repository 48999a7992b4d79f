#!/usr/bin/env bash
# Builds `cosign` (Sigstore's signing tool, for the signature interoperability test) from its Go module
# github.com/sigstore/cosign/v3 with this machine's Go, and caches the binary: a second run prints its path at once.
# Never downloads a prebuilt binary. Prints the binary's path on stdout (progress goes to stderr).
#
# Environment: COSIGN_VERSION (default 3.1.2), COSIGN_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/wasm-apiserver).
set -euo pipefail

version="${COSIGN_VERSION:-3.1.2}"
cache="${COSIGN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver}"
binary="$cache/cosign-v$version"
if [[ -x "$binary" ]]; then
    echo "$binary"
    exit 0
fi
command -v go >/dev/null || { echo "go is missing: install Go 1.26 (https://go.dev/dl/)" >&2; exit 1; }

work="$(mktemp -d -t cosign-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
echo "building cosign v$version from github.com/sigstore/cosign/v3; this takes a few minutes" >&2
started=$(date +%s)
mkdir -p "$cache"
GOBIN="$work" CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" "github.com/sigstore/cosign/v3/cmd/cosign@v$version" >&2
mv "$work/cosign" "$binary"
echo "built $binary in $(( $(date +%s) - started ))s" >&2
echo "$binary"
