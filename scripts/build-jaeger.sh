#!/usr/bin/env bash
# Builds Jaeger (the `jaeger` binary of Jaeger v2: an OTLP receiver, storage in memory and the query API, for the
# tracing tests) from its Go module github.com/jaegertracing/jaeger with this machine's Go, and caches the binary: a
# second run prints its path at once. Never downloads a prebuilt binary. Prints the binary's path on stdout
# (progress goes to stderr). The module has replace directives, so it is built as a tool of a module made here
# (`go get -tool`), not with `go install pkg@version`.
#
# Environment: JAEGER_VERSION (default 1.76.0), JAEGER_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/wasm-apiserver).
set -euo pipefail

version="${JAEGER_VERSION:-1.76.0}"
cache="${JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver}"
binary="$cache/jaeger-v$version"
if [[ -x "$binary" ]]; then
    echo "$binary"
    exit 0
fi
command -v go >/dev/null || { echo "go is missing: install Go 1.26 (https://go.dev/dl/)" >&2; exit 1; }

work="$(mktemp -d -t jaeger-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
echo "building jaeger v$version from github.com/jaegertracing/jaeger; this takes several minutes" >&2
started=$(date +%s)
mkdir -p "$cache"
(
    cd "$work"
    go mod init jaeger-build >&2
    go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@v$version" >&2
    CGO_ENABLED=0 go build -trimpath -o "$work/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger >&2
)
mv "$work/jaeger" "$binary"
echo "built $binary in $(( $(date +%s) - started ))s" >&2
echo "$binary"
