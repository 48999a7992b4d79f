#!/usr/bin/env bash
# Builds kube-apiserver from the k8s.io/kubernetes Go module (for the aggregation test and side-by-side benchmarks),
# with this machine's Go, and caches the binary: a second run prints its path at once. Never downloads a prebuilt
# binary. Prints the binary's path on stdout (progress goes to stderr).
#
# The k8s.io/kubernetes module refers to its staging modules (k8s.io/api, apimachinery, apiserver, client-go, ...)
# by relative paths; a throwaway module pins each of them to the matching published v0.<minor>.<patch>.
#
# Environment: KUBE_VERSION (default 1.37.2), KUBE_APISERVER_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/wasm-apiserver).
set -euo pipefail

version="${KUBE_VERSION:-1.37.2}"
cache="${KUBE_APISERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver}"
binary="$cache/kube-apiserver-v$version"
if [[ -x "$binary" ]]; then
    echo "$binary"
    exit 0
fi
command -v go >/dev/null || { echo "go is missing: install Go 1.26 (https://go.dev/dl/)" >&2; exit 1; }

staging_version="v0.${version#1.}"
work="$(mktemp -d -t kube-apiserver-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS="-mod=mod"
go mod init kube-apiserver-build >/dev/null 2>&1

# The staging modules, from k8s.io/kubernetes' own go.mod.
gomod="$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
[[ -f "$gomod" ]] || { echo "cannot download k8s.io/kubernetes@v$version" >&2; exit 1; }
staging=$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod")
for module in $staging; do
    go mod edit -replace="$module=$module@$staging_version"
done
go mod edit -require="k8s.io/kubernetes@v$version"
echo "building kube-apiserver v$version (with the staging modules at $staging_version); this takes minutes" >&2
started=$(date +%s)
go get "k8s.io/kubernetes/cmd/kube-apiserver@v$version" >&2
mkdir -p "$cache"
CGO_ENABLED=0 go build -trimpath -o "$binary.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
mv "$binary.tmp" "$binary"
echo "built $binary in $(( $(date +%s) - started ))s" >&2
echo "$binary"
