#!/usr/bin/env bash
# Builds the wasm-apiserver image with buildah (Debian's, daemonless; `apt-get install buildah`), from a server
# binary built on this machine and the example plugins of target/plugins.
#
# Usage: deploy/image/build.sh [--binary PATH] [--tag TAG] [--plugins "wardle books tasks partial"] [BUILDAH FLAGS...]
#   --binary   the server (default: target/dist/wasm-apiserver, built with `cargo build --profile dist -p wasm-apiserver`)
#   --tag      the image's name (default: localhost/wasm-apiserver:latest, as the manifests in deploy/ name it)
#   --plugins  which of target/plugins/*.wasm go into /plugins (default: the examples scripts/run.sh serves)
# Other arguments go to buildah before `bud` (such as --root DIR --runroot DIR for a storage of one's own).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
binary="$root/target/dist/wasm-apiserver"
tag="localhost/wasm-apiserver:latest"
plugins="wardle books tasks partial"
buildah_flags=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        --plugins) plugins="$2"; shift 2 ;;
        *) buildah_flags+=("$1"); shift ;;
    esac
done
command -v buildah >/dev/null || { echo "buildah is missing: apt-get install buildah" >&2; exit 1; }
[[ -x "$binary" ]] || { echo "no server at $binary: cargo build --profile dist -p wasm-apiserver" >&2; exit 1; }

context="$(mktemp -d -t wasm-apiserver-image.XXXXXX)"
trap 'rm -rf "$context"' EXIT
mkdir -p "$context/rootfs/usr/local/bin" "$context/rootfs/plugins" "$context/data" "$context/tmp"
cp "$binary" "$context/rootfs/usr/local/bin/wasm-apiserver"
# The shared libraries the binary links, at the paths its loader looks for them.
for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
    mkdir -p "$context/rootfs$(dirname "$lib")"
    cp -L "$lib" "$context/rootfs$lib"
done
for plugin in $plugins; do
    wasm="$root/target/plugins/$plugin.wasm"
    [[ -f "$wasm" ]] || { echo "no plugin $wasm: scripts/build-plugins.sh" >&2; exit 1; }
    cp "$wasm" "$context/rootfs/plugins/"
done
cp "$root/deploy/image/Containerfile" "$context/Containerfile"
# vfs and chroot: no overlay mounts and no runtime needed, so it builds in a container or a CI machine as well.
buildah "${buildah_flags[@]}" --storage-driver vfs bud --isolation chroot --layers=false -t "$tag" -f "$context/Containerfile" "$context" >&2
echo "$tag"
