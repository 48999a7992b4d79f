#!/usr/bin/env bash
# Builds the example plugins and the server, then serves the examples on the embedded store over HTTPS:
#   plugins in .data/plugins/ (wardle, books, tasks, partial: copied from target/plugins; drop more .wasm files there
#   while it runs), data in .data/ (kept across runs), HTTPS on 127.0.0.1:6443 with the server's own CA under
#   .data/pki/, and .data/admin.kubeconfig for an administrator (system:masters): export KUBECONFIG=.data/admin.kubeconfig
# Extra arguments go to `wasm-apiserver serve` (for example --secure-port 7443, or --insecure-port 8080 for a plain
# HTTP development port on 127.0.0.1 where every request is an administrator).
# Works on a fresh Debian machine with rustup: installs what is missing (protoc, the wasm32-wasip2 target).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v cargo >/dev/null || { echo "cargo is missing: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
# The etcd-client crate's build script needs protoc, even when serving on the embedded store.
if ! command -v protoc >/dev/null; then
    sudo=""
    [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq protobuf-compiler
fi
scripts/build-plugins.sh
cargo build
mkdir -p .data/plugins
for plugin in wardle books tasks partial; do
    # Write beside, then rename: a running server never sees a half-copied file.
    cp "target/plugins/$plugin.wasm" ".data/plugins/.$plugin.wasm.tmp"
    mv ".data/plugins/.$plugin.wasm.tmp" ".data/plugins/$plugin.wasm"
done
port=6443
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[$i]}" in
        --secure-port) port="${args[$((i + 1))]:-$port}" ;;
        --secure-port=*) port="${args[$i]#--secure-port=}" ;;
    esac
done
target/debug/wasm-apiserver kubeconfig --data-dir .data --user admin --group system:masters \
    --server "https://127.0.0.1:$port" -o .data/admin.kubeconfig
echo "kubeconfig for an administrator: export KUBECONFIG=$root/.data/admin.kubeconfig"
exec target/debug/wasm-apiserver serve --plugin-dir .data/plugins --data-dir .data --bind-address 127.0.0.1 "$@"
