# Sourced by the Go and C SDKs' build-plugin.sh: installs, when missing, what makes a WebAssembly core module a
# component, under ${XDG_CACHE_HOME:-~/.cache}/wasm-apiserver, and sets
#
#   wasm_tools   wasm-tools 1.243.0 with its component commands only (cargo-installed from crates.io, pinned)
#   adapter      wasmtime 48's WASI preview 1 reactor adapter (the bytes the crate
#                wasi-preview1-component-adapter-provider ships, written by ./adapter)
#
# and defines `componentize CORE.wasm WIT_DIR WORLD OUTPUT.wasm`: embeds the world's WIT in the module, makes it a
# component with the adapter, checks the result is one, and writes OUTPUT whole or not at all; and
# `world_exports WIT_DIR WORLD`: the contract's interfaces the world exports, comma-separated (`scheme,defaulter`),
# which the SDKs compare with the hooks a plugin defines.

component_tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wasm_tools_version=1.243.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver"
mkdir -p "$cache"
wasm_tools="$cache/wasm-tools-$wasm_tools_version/bin/wasm-tools"
if [[ ! -x "$wasm_tools" ]]; then
    echo "installing wasm-tools $wasm_tools_version (its component commands) into $cache; this takes a few minutes" >&2
    cargo install --quiet --locked --root "$cache/wasm-tools-$wasm_tools_version" \
        --no-default-features --features component "wasm-tools@$wasm_tools_version" >&2
fi
adapter="$cache/wasi_snapshot_preview1.reactor-48.0.8.wasm"
if [[ ! -s "$adapter" ]]; then
    written="$(mktemp "$cache/.adapter.XXXXXX")"
    cargo run --quiet --release --manifest-path "$component_tools_dir/adapter/Cargo.toml" \
        --target-dir "$cache/adapter-target" > "$written"
    mv "$written" "$adapter"
fi

componentize() {
    local core="$1" wit="$2" world="$3" output="$4"
    local dir
    dir="$(dirname "$core")"
    "$wasm_tools" component embed -w "$world" "$wit" "$core" -o "$dir/embedded.wasm"
    "$wasm_tools" component new "$dir/embedded.wasm" --adapt "wasi_snapshot_preview1=$adapter" -o "$dir/plugin.wasm"
    # A component starts with the wasm magic and the component-model layer: 00 61 73 6d 0d 00 01 00.
    if [[ "$(head -c 8 "$dir/plugin.wasm" | od -An -tx1 | tr -d ' \n')" != "0061736d0d000100" ]]; then
        echo "error: the build did not produce a component" >&2
        return 1
    fi
    mkdir -p "$(dirname "$output")"
    # Renamed into place from the same directory: OUTPUT appears whole or not at all.
    cp "$dir/plugin.wasm" "$output.tmp.$$"
    mv "$output.tmp.$$" "$output"
    echo "built $output ($(wc -c < "$output") bytes)" >&2
}

world_exports() {
    local wit="$1" world="$2"
    local dir
    dir="$(mktemp -d)"
    # A dummy module of the world, made a component: its WIT lists what the world exports, includes resolved.
    "$wasm_tools" component embed -w "$world" --dummy "$wit" -o "$dir/dummy.wasm"
    "$wasm_tools" component new "$dir/dummy.wasm" -o "$dir/component.wasm"
    "$wasm_tools" component wit "$dir/component.wasm" \
        | sed -n 's#^ *export wasm-apiserver:plugin/\([a-z-]*\)@.*;$#\1#p' | paste -sd, -
    rm -rf "$dir"
}
