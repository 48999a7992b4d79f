#!/usr/bin/env bash
# Regenerates bindings/ (the C bindings of the contract's full-plugin world) with wit-bindgen's `c` generator. Run it
# when wit/ changes. Needs wit-bindgen-cli 0.61.1 (`cargo install wit-bindgen-cli@0.61.1`). The world's type object
# (full_plugin_component_type.o) is not kept: build-plugin.sh embeds the plugin's own world instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
wit-bindgen c --world full-plugin "$here/../../wit" --out-dir "$out"
mkdir -p "$here/bindings"
cp "$out/full_plugin.c" "$out/full_plugin.h" "$here/bindings/"
