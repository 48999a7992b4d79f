#!/usr/bin/env bash
# Measures how fast hosts sharing one etcd converge, the hosting issue's replica targets: two release hosts (A, B) on an
# etcd of their own; each round creates a Tenant through A and times until B serves it (target 2 s), then uploads a
# new version of a Plugin of that tenant through B and times until A serves its digest (target 5 s, the compile cache
# warm from the second round on). Prints a Markdown table of the rounds.
#
# Usage: scripts/replica-latency.sh [ROUNDS]   (default 5; after `cargo build --release -p wasm-apiserver` and
# scripts/build-plugins.sh). Needs etcd, curl and python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${1:-5}"
bin="$root/target/release/wasm-apiserver"
plugins="$root/target/plugins"
work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
wait_for() { # URL: until it answers 200, at most 60 s
    for _ in $(seq 600); do
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" == 200 ]] && return 0
        sleep 0.1
    done
    echo "no answer from $1" >&2
    return 1
}

client="$(free_port)"
peer="$(free_port)"
etcd --name replica-latency --data-dir "$work/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "replica-latency=http://127.0.0.1:$peer" >"$work/etcd.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$client/health"

start_host() { # NAME: starts a host, prints its base URL
    local name="$1" port
    port="$(free_port)"
    mkdir -p "$work/$name/plugins"
    "$bin" serve --plugin-dir "$work/$name/plugins" --data-dir "$work/$name/data" \
        --plugin-cache-dir "$work/cache-$name" --etcd-servers "http://127.0.0.1:$client" \
        --bind-address 127.0.0.1 --insecure-port "$port" --secure-port "$(free_port)" \
        >"$work/$name.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/readyz" >&2
    echo "http://127.0.0.1:$port"
}
a="$(start_host a)"
b="$(start_host b)"
tenants=/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants

echo "| round | Tenant created on A, served by B (ms) | Plugin upgraded on B, served on A (ms) |"
echo "|---|---|---|"
for round in $(seq "$rounds"); do
    t="r$round"
    start="$(now_ms)"
    curl -sf -X POST -H 'Content-Type: application/json' "$a$tenants" \
        -d "{\"apiVersion\":\"tenancy.wasm-apiserver.io/v1alpha1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"$t\"}}" >/dev/null
    until [[ "$(curl -s -o /dev/null -w '%{http_code}' "$b/tenants/$t/api/v1/namespaces")" == 200 ]]; do sleep 0.01; done
    tenant_ms=$(($(now_ms) - start))

    plugins_path="/tenants/$t/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins"
    wait_for "$b$plugins_path" >/dev/null
    curl -sf -X POST -H 'Content-Type: application/json' "$b$plugins_path" \
        -d '{"apiVersion":"tenancy.wasm-apiserver.io/v1alpha1","kind":"Plugin","metadata":{"name":"notes"},"spec":{"source":{"upload":{}}}}' >/dev/null
    curl -sf -X PUT -H 'Content-Type: application/wasm' --data-binary "@$plugins/partial.wasm" \
        "$b$plugins_path/notes/content" >/dev/null
    until curl -s "$a$plugins_path/notes" | grep -q '"phase":"Serving"'; do sleep 0.01; done
    # The upgrade: a new version through B, until A serves its digest.
    digest="sha256:$(sha256sum "$plugins/partial-v2.wasm" | cut -d' ' -f1)"
    start="$(now_ms)"
    curl -sf -X PUT -H 'Content-Type: application/wasm' --data-binary "@$plugins/partial-v2.wasm" \
        "$b$plugins_path/notes/content" >/dev/null
    until curl -s "$a$plugins_path/notes" | python3 -c "
import json, sys
s = json.load(sys.stdin).get('status', {})
sys.exit(0 if s.get('phase') == 'Serving' and s.get('served', {}).get('digest') == '$digest' else 1)"; do
        sleep 0.01
    done
    upgrade_ms=$(($(now_ms) - start))
    echo "| $round | $tenant_ms | $upgrade_ms |"
done
