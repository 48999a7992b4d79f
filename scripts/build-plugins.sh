#!/usr/bin/env bash
# Builds every Rust plugin crate under plugins/ (each directory with a Cargo.toml) as a WebAssembly component for
# wasm32-wasip2 with the `plugin` profile, in one cargo invocation, and copies each one to target/plugins/<dir>.wasm.
# Every other plugin directory with an executable build.sh (Python, JavaScript, Go, C) is built by running
# `plugins/<dir>/build.sh target/plugins/<dir>.wasm`.
#
# Usage: scripts/build-plugins.sh        (from any directory)
# Honours CARGO_TARGET_DIR for cargo's own output; the components always land in <repo>/target/plugins.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target=wasm32-wasip2
profile=plugin
cargo_target_dir="${CARGO_TARGET_DIR:-$root/target}"
out_dir="$root/target/plugins"

if ! rustup target list --installed | grep -x "$target" >/dev/null; then
    rustup target add "$target"
fi

# The package name declared in a manifest's [package] section.
package_name() {
    awk '
        /^\[/ { in_package = ($0 ~ /^\[package\][[:space:]]*$/) }
        in_package && /^[[:space:]]*name[[:space:]]*=/ {
            sub(/^[^=]*=[[:space:]]*"/, ""); sub(/".*$/, ""); print; exit
        }
    ' "$1"
}

dirs=()
packages=()
for manifest in plugins/*/Cargo.toml; do
    [[ -e "$manifest" ]] || continue
    dir="$(basename "$(dirname "$manifest")")"
    package="$(package_name "$manifest")"
    if [[ -z "$package" ]]; then
        echo "error: no [package] name in $manifest" >&2
        exit 1
    fi
    dirs+=("$dir")
    packages+=("$package")
done

# Non-Rust plugins: their own build.sh, given the output path.
mkdir -p "$out_dir"
for script in plugins/*/build.sh; do
    [[ -x "$script" ]] || continue
    dir="$(basename "$(dirname "$script")")"
    [[ -e "plugins/$dir/Cargo.toml" ]] && continue
    if [[ -e "plugins/$dir/go.mod" ]] && ! command -v go >/dev/null; then
        # The server and the other examples do not need Go; the tests (which do) install nothing and need it.
        echo "skipping plugins/$dir: go is missing (install Go 1.25 or later to build the Go examples)" >&2
        continue
    fi
    if compgen -G "plugins/$dir/*.c" >/dev/null && ! command -v "${CC:-clang-19}" >/dev/null && [[ "$(id -u)" != 0 ]]; then
        # As root, the C SDK's build script installs Debian's clang; otherwise the C examples need it installed.
        echo "skipping plugins/$dir: clang-19 is missing (apt-get install clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc)" >&2
        continue
    fi
    echo "building plugins/$dir with its build.sh"
    "$script" "$out_dir/$dir.wasm"
    size="$(wc -c <"$out_dir/$dir.wasm" | tr -d ' ')"
    printf '%-40s %8d bytes (%d KiB)\n' "target/plugins/$dir.wasm" "$size" $(((size + 1023) / 1024))
done

if [[ ${#packages[@]} -eq 0 ]]; then
    echo "no Rust plugins under plugins/" >&2
    exit 0
fi

cargo_args=(build --profile "$profile" --target "$target")
for package in "${packages[@]}"; do
    cargo_args+=(-p "$package")
done
cargo "${cargo_args[@]}"

mkdir -p "$out_dir"
for i in "${!packages[@]}"; do
    artifact="$cargo_target_dir/$target/$profile/${packages[$i]//-/_}.wasm"
    dest="$out_dir/${dirs[$i]}.wasm"
    if [[ ! -f "$artifact" ]]; then
        echo "error: cargo produced no $artifact" >&2
        exit 1
    fi
    # A component starts with the wasm magic and the component-model layer: 00 61 73 6d 0d 00 01 00.
    header="$(od -An -tx1 -N8 "$artifact" | tr -d ' \n')"
    if [[ "$header" != "0061736d0d000100" ]]; then
        echo "error: $artifact is not a WebAssembly component (header $header)" >&2
        exit 1
    fi
    cp "$artifact" "$dest"
    size="$(wc -c <"$dest" | tr -d ' ')"
    printf '%-40s %8d bytes (%d KiB)\n' "${dest#"$root"/}" "$size" $(((size + 1023) / 1024))
done
