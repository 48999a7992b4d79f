#!/usr/bin/env bash
# Builds a C wasm-apiserver plugin as a WebAssembly component with clang (wasm32-wasi, WASI libc), wasm-tools and
# the WASI preview 1 reactor adapter.
#
# Usage: guest-sdk/c/build-plugin.sh [--world NAME] PLUGIN_DIR OUTPUT.wasm
#
#   PLUGIN_DIR    the plugin's C files (*.c; the one that defines wa_plugin_definition), and wit/*.wit: a WIT package
#                 with the plugin's own world, which includes the contract's worlds or interfaces it exports
#                 (wasm-apiserver:plugin@0.1.1). The component exports what that world does.
#   --world       the world to build (default: the name of PLUGIN_DIR).
#
# Compiles the plugin with the SDK (wasm_apiserver.c, the bindings in bindings/) and cJSON 1.7.18 (downloaded once
# from the Go module proxy, its SHA-256 checked). Installs what is missing: Debian's clang-19, lld-19,
# libclang-rt-19-dev-wasm32 and wasi-libc (with apt-get, as root), wasm-tools and the adapter (see
# ../component/tools.sh). CC overrides the compiler. OUTPUT is written only when the whole build succeeded.
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

# The compiler and the WASI libc (Debian bookworm's packages).
sysroot=/usr
cc="${CC:-clang-19}"
if ! command -v "$cc" >/dev/null || [[ ! -e "$sysroot/lib/wasm32-wasi/libc.a" ]] \
    || ! compgen -G "/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null; then
    packages=(clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc)
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing ${packages[*]} with apt-get" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >&2
    else
        echo "error: the C toolchain is missing: apt-get install ${packages[*]}" >&2
        exit 1
    fi
fi

# cJSON, the JSON library the SDK hands objects in: a pinned release, through the Go module proxy (which serves any
# tagged GitHub repository as a zip), checked against its SHA-256.
cjson_version=1.7.18
cjson_sha256=011a7f2ffa48409342363826de924f48ecf0874cfa9176177598abe44978c53b
cache="${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver"
cjson="$cache/cjson-$cjson_version"
if [[ ! -s "$cjson/cJSON.c" ]]; then
    mkdir -p "$cache"
    fetched="$(mktemp -d "$cache/.cjson.XXXXXX")"
    curl -sSfL -o "$fetched/cjson.zip" \
        "https://proxy.golang.org/github.com/!dave!gamble/c!j!s!o!n/@v/v$cjson_version.zip"
    echo "$cjson_sha256  $fetched/cjson.zip" | sha256sum -c --quiet - \
        || { echo "error: cJSON $cjson_version's archive has another SHA-256" >&2; exit 1; }
    (cd "$fetched" && python3 -c "import sys, zipfile; zipfile.ZipFile('cjson.zip').extractall('.')")
    mkdir -p "$fetched/out"
    for file in cJSON.c cJSON.h LICENSE; do
        cp "$fetched/github.com/DaveGamble/cJSON@v$cjson_version/$file" "$fetched/out/"
    done
    rm -rf "$cjson"
    mv "$fetched/out" "$cjson"
    rm -rf "$fetched"
fi

# wasm-tools, the adapter and componentize: in a project made by `plugin new`, sdk/component; here, ../component.
if [[ -d "$sdk/component" ]]; then
    source "$sdk/component/tools.sh"
else
    source "$sdk/../component/tools.sh"
fi

work="$(mktemp -d -t c-plugin.XXXXXX)"
trap 'rm -rf "$work"' EXIT
compgen -G "$plugin_dir/wit/*.wit" >/dev/null || { echo "error: $plugin_dir has no wit/*.wit with its world" >&2; exit 1; }
compgen -G "$plugin_dir/*.c" >/dev/null || { echo "error: $plugin_dir has no *.c" >&2; exit 1; }
mkdir -p "$work/wit/deps/wasm-apiserver-plugin"
cp "$plugin_dir"/wit/*.wit "$work/wit/"
cp "$contract"/*.wit "$work/wit/deps/wasm-apiserver-plugin/"

flags=(--target=wasm32-wasi "--sysroot=$sysroot" -O2 -std=c11)
includes=(-I "$sdk" -I "$sdk/bindings" -I "$cjson")
# The interfaces the world exports, compiled into the SDK: a hook set whose interface the world does not export
# makes the plugin fail to load, saying what to add, instead of never running.
exports="$(world_exports "$work/wit" "$world")"
# The plugin's and the SDK's code with warnings as errors; the generated bindings and cJSON as they come.
"$cc" "${flags[@]}" "${includes[@]}" -Wall -Wextra -Werror "-DWA_WORLD_EXPORTS=\"$exports\"" \
    -c "$sdk/wasm_apiserver.c" -o "$work/sdk.o"
"$cc" "${flags[@]}" "${includes[@]}" -c "$sdk/bindings/full_plugin.c" -o "$work/bindings.o"
"$cc" "${flags[@]}" -c "$cjson/cJSON.c" -o "$work/cjson.o"
objects=()
for source in "$plugin_dir"/*.c; do
    object="$work/plugin-$(basename "$source" .c).o"
    "$cc" "${flags[@]}" "${includes[@]}" -Wall -Wextra -Werror -c "$source" -o "$object"
    objects+=("$object")
done
"$cc" "${flags[@]}" -mexec-model=reactor "$work/sdk.o" "$work/bindings.o" "$work/cjson.o" "${objects[@]}" -o "$work/core.wasm"
componentize "$work/core.wasm" "$work/wit" "$world" "$output"
