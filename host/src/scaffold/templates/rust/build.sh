#!/usr/bin/env bash
# Builds the @NAME@ plugin (Rust) into a WebAssembly component: @NAME@.wasm next to this script, or OUTPUT.wasm.
#
# Usage: ./build.sh [OUTPUT.wasm]      (from any directory)
#
# Needs rustup's cargo; adds the wasm32-wasip2 target when it is missing. Builds with the `plugin` profile of
# Cargo.toml (small and fast) into $CARGO_TARGET_DIR, else target/. Unit tests: `cargo test` (natively).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
output="${1:-$here/@NAME@.wasm}"
[[ "$output" = /* ]] || output="$PWD/$output"
target=wasm32-wasip2
profile=plugin
target_dir="${CARGO_TARGET_DIR:-$here/target}"
[[ "$target_dir" = /* ]] || target_dir="$PWD/$target_dir"

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi

cd "$here"
CARGO_TARGET_DIR="$target_dir" cargo build --profile "$profile" --target "$target"

artifact="$target_dir/$target/$profile/@SNAKE@_plugin.wasm"
# A component starts with the wasm magic and the component-model layer: 00 61 73 6d 0d 00 01 00.
header="$(od -An -tx1 -N8 "$artifact" | tr -d ' \n')"
if [[ "$header" != "0061736d0d000100" ]]; then
    echo "error: $artifact is not a WebAssembly component (header $header)" >&2
    exit 1
fi
mkdir -p "$(dirname "$output")"
cp "$artifact" "$output.tmp.$$"
mv -f "$output.tmp.$$" "$output"
echo "wrote $output"
