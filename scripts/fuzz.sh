#!/usr/bin/env bash
# Runs the coverage-guided fuzz targets of fuzz/ (cargo-fuzz, libFuzzer) for a bounded time each: the label and
# field selector parsers, request info and query parameters, continue tokens, request bodies, and what plugins
# return (objects, validation results and other structured results, plugin info). The bodies of the targets are
# the fuzz-targets crate (fuzz/targets/), which uses the server's crates through their public API.
#
#   scripts/fuzz.sh                    every target for FUZZ_SECONDS (default 20) seconds
#   scripts/fuzz.sh plugin_scheme ...  only these targets
#
# cargo-fuzz needs a nightly toolchain: installed with rustup when missing (minimal profile), and cargo-fuzz with
# `cargo install` when missing. Where either cannot be had, the same targets run on stable Rust instead, on seeded
# mutations of their seeds for the same time each (`fuzz_targets_on_mutated_seeds`, not coverage-guided).
#
# Each target starts from its seeds (fuzz/seeds/<target>/, kept in git) and the corpus of earlier runs
# (fuzz/corpus/<target>/, not kept). A failing input is written to fuzz/artifacts/<target>/ and printed (base64);
# replay it with `cargo +nightly fuzz run --dev -s none <target> <file>` in fuzz/. A crash fails the run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds="${FUZZ_SECONDS:-20}"

stable_fallback() {
    echo "$1: running the fuzz targets on stable Rust (seeded mutations, ${seconds}s a target)"
    FUZZ_MUTATION_SECONDS="$seconds" cargo test -p fuzz-targets fuzz_targets -- --include-ignored
    exit $?
}

if ! command -v rustup >/dev/null; then
    stable_fallback "rustup not found, so no nightly toolchain"
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal || stable_fallback "nightly could not be installed"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    nice -n 5 cargo install cargo-fuzz --locked || stable_fallback "cargo-fuzz could not be installed"
fi
rustup run nightly rustc --version
cargo fuzz --version

cd fuzz
if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# No sanitizer: the server's own code has no unsafe code, and without AddressSanitizer the targets build faster and
# run about twice as fast; panics (failed checks included), aborts, hangs and memory blow-ups are what is found.
start=$SECONDS
nice -n 5 cargo +nightly fuzz build --dev -s none 2>&1 | sed '/^ *Compiling /d'
echo "built the fuzz targets in $((SECONDS - start))s"

out="$(mktemp -t wasm-apiserver-fuzz.XXXXXX)"
trap 'rm -f "$out"' EXIT
failed=()
for target in "${targets[@]}"; do
    printf '\n--> %s (%ss)\n' "$target" "$seconds"
    mkdir -p "corpus/$target"
    # -timeout: an input taking over 10 s is a failure (a hang); -rss_limit_mb: so is one needing over 2 GiB.
    if cargo +nightly fuzz run --dev -s none "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$out" 2>&1; then
        sed -n -E '/^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|peak_rss_mb)/p' "$out"
    else
        tail -n 80 "$out"
        failed+=("$target")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz targets that failed: ${failed[*]} (their inputs are in fuzz/artifacts/)" >&2
    exit 1
fi
echo "every fuzz target ran ${seconds}s without a failure"
