#!/usr/bin/env bash
# Builds a Python wasm-apiserver plugin as a WebAssembly component with componentize-py, with no WASI imports.
#
# Usage: guest-sdk/python/build-plugin.sh [--world NAME] [--module NAME] [--test-dir DIR]... PLUGIN_DIR OUTPUT.wasm
#
#   PLUGIN_DIR    holds the plugin's Python files (every *.py but test_*.py is bundled, with wasm_apiserver.py) and,
#                 optionally, wit/*.wit: a WIT package with the plugin's own world, which may use the contract
#                 (wasm-apiserver:plugin@0.1.1) as a dependency. Without wit/, the world is one of the contract's
#                 (plugin, crud-plugin, full-plugin). The contract is the wit/ directory next to this script when
#                 there is one (a project made by `wasm-apiserver plugin new` has it in sdk/wit/), else this
#                 repository's wit/.
#   --world       the world to build (default: the name of PLUGIN_DIR).
#   --module      the module componentize-py imports, the one calling wasm_apiserver.export (default: the name of
#                 PLUGIN_DIR).
#   --test-dir    a directory whose test_*.py unit tests run natively before the build, against freshly generated
#                 bindings (default: PLUGIN_DIR; repeatable). Set PLUGIN_SKIP_TESTS=1 to skip them; they are skipped
#                 with a note on Pythons older than 3.11, which cannot import the generated bindings.
#
# componentize-py 0.25.1 is installed into the Python that runs ($PYTHON, else python3) when missing; if that Python
# refuses packages (an "externally managed" system Python), into a virtual environment under ~/.cache/wasm-apiserver.
# OUTPUT is written only when the whole build succeeded.
set -euo pipefail

componentize_py_version=0.25.1
sdk="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -d "$sdk/wit" ]]; then
    contract="$sdk/wit"
else
    contract="$(cd "$sdk/../../wit" && pwd)"
fi

usage() {
    sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2
    exit 2
}

world=""
module=""
test_dirs=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --world) [[ $# -ge 2 ]] || usage; world="$2"; shift 2 ;;
        --module) [[ $# -ge 2 ]] || usage; module="$2"; shift 2 ;;
        --test-dir) [[ $# -ge 2 ]] || usage; test_dirs+=("$(cd "$2" && pwd)"); shift 2 ;;
        -*) usage ;;
        *) break ;;
    esac
done
[[ $# -eq 2 ]] || usage
plugin_dir="$(cd "$1" && pwd)"
output="$2"
name="$(basename "$plugin_dir")"
world="${world:-$name}"
module="${module:-$name}"
[[ ${#test_dirs[@]} -gt 0 ]] || test_dirs=("$plugin_dir")
python="${PYTHON:-python3}"
export PYTHONDONTWRITEBYTECODE=1

# The installed componentize-py version of a Python, or nothing.
installed_version() {
    "$1" -c 'import importlib.metadata as m; print(m.version("componentize-py"))' 2>/dev/null || true
}

if [[ "$(installed_version "$python")" != "$componentize_py_version" ]]; then
    echo "installing componentize-py==$componentize_py_version for $python" >&2
    if ! "$python" -m pip install --quiet --disable-pip-version-check "componentize-py==$componentize_py_version"; then
        venv="${XDG_CACHE_HOME:-$HOME/.cache}/wasm-apiserver/componentize-py-$componentize_py_version"
        echo "pip refused; using the virtual environment $venv" >&2
        [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
        python="$venv/bin/python"
        if [[ "$(installed_version "$python")" != "$componentize_py_version" ]]; then
            "$python" -m pip install --quiet --disable-pip-version-check "componentize-py==$componentize_py_version"
        fi
    fi
fi

# Runs componentize-py through the Python it was installed into (its console script may not be on PATH).
componentize_py() {
    "$python" -c 'import sys; from componentize_py import script; sys.argv[0] = "componentize-py"; sys.exit(script())' "$@"
}

work="$(mktemp -d "${TMPDIR:-/tmp}/python-plugin.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The WIT: the plugin's package with the contract as a dependency, or the contract itself.
if compgen -G "$plugin_dir/wit/*.wit" >/dev/null; then
    mkdir -p "$work/wit/deps/wasm-apiserver-plugin"
    cp "$plugin_dir"/wit/*.wit "$work/wit/"
    cp "$contract"/*.wit "$work/wit/deps/wasm-apiserver-plugin/"
else
    mkdir -p "$work/wit"
    cp "$contract"/*.wit "$work/wit/"
fi

# The Python sources bundled into the component: the plugin's modules and the helper module, nothing else.
mkdir -p "$work/src"
for file in "$plugin_dir"/*.py; do
    case "$(basename "$file")" in test_*) continue ;; esac
    cp "$file" "$work/src/"
done
cp "$sdk/wasm_apiserver.py" "$work/src/"
if [[ ! -f "$work/src/$module.py" ]]; then
    echo "error: $plugin_dir has no $module.py (choose the module with --module)" >&2
    exit 1
fi

if [[ "${PLUGIN_SKIP_TESTS:-}" == 1 ]]; then
    echo "skipping the unit tests (PLUGIN_SKIP_TESTS=1)" >&2
elif ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "skipping the unit tests: the generated bindings need Python 3.11 or later" >&2
else
    componentize_py -d "$work/wit" -w "$world" bindings "$work/bindings" >/dev/null
    for tests in "${test_dirs[@]}"; do
        # Python 3.12+ fails a discovery that finds no test, so directories without tests are skipped.
        compgen -G "$tests/test_*.py" >/dev/null || continue
        PYTHONPATH="$work/bindings:$work/src" "$python" -m unittest discover -s "$tests" -p 'test_*.py'
    done
fi

componentize_py -d "$work/wit" -w "$world" componentize --stub-wasi -p "$work/src" "$module" -o "$work/plugin.wasm" >&2

# A component starts with the wasm magic and the component-model layer: 00 61 73 6d 0d 00 01 00.
header="$(od -An -tx1 -N8 "$work/plugin.wasm" | tr -d ' \n')"
if [[ "$header" != "0061736d0d000100" ]]; then
    echo "error: componentize-py produced no WebAssembly component (header $header)" >&2
    exit 1
fi
mkdir -p "$(dirname "$output")"
cp "$work/plugin.wasm" "$output.tmp.$$"
mv -f "$output.tmp.$$" "$output"
