#!/usr/bin/env bash
# Builds `oras` (the ORAS project's OCI artifact client, for the OCI interoperability tests) from its Go module
# oras.land/oras with this machine's Go, and caches the binary: a second run prints its path at once. Never downloads a
# prebuilt binary. Prints the binary's path on stdout (progress goes to stderr).
#
# Environment: ORAS_VERSION (default 1.3.6), ORAS_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/wasm-apiserver).
set -euo pipefail

version="${ORAS_VERSION:-1.3.6}"
cache="${ORAS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver}"
binary="$cache/oras-v$version"
if [[ -x "$binary" ]]; then
    echo "$binary"
    exit 0
fi
command -v go >/dev/null || { echo "go is missing: install Go 1.26 (https://go.dev/dl/)" >&2; exit 1; }

work="$(mktemp -d -t oras-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
echo "building oras v$version from oras.land/oras; this takes a minute or two" >&2
started=$(date +%s)
mkdir -p "$cache"
GOBIN="$work" CGO_ENABLED=0 go install -trimpath "oras.land/oras/cmd/oras@v$version" >&2
mv "$work/oras" "$binary"
echo "built $binary in $(( $(date +%s) - started ))s" >&2
echo "$binary"
