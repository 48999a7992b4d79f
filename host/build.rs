//! Link options of the server binary, and the list of the Go SDK's files that `plugin new --lang go` copies into a
//! project (`$OUT_DIR/go_sdk.rs`: every file under guest-sdk/go, embedded with `include_str!`).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // Relative relocations packed as RELR (glibc 2.36, binutils 2.38): the loader reads a few KiB instead of the
        // 2.4 MiB table of ~100,000 entries it used to read at every start, and that stayed resident.
        println!("cargo:rustc-link-arg-bin=wasm-apiserver=-Wl,-z,pack-relative-relocs");
    }
    go_sdk();
}

/// Writes `$OUT_DIR/go_sdk.rs`: `GO_SDK`, the Go SDK's files as (path under the SDK, content) pairs.
fn go_sdk() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let sdk = manifest.join("../guest-sdk/go");
    println!("cargo:rerun-if-changed={}", sdk.display());
    let mut files = Vec::new();
    walk(&sdk, &sdk, &mut files);
    // The tools shared with the C SDK (wasm-tools and the WASI adapter), as the project's `sdk/component/`.
    let shared = manifest.join("../guest-sdk");
    let component = shared.join("component");
    println!("cargo:rerun-if-changed={}", component.display());
    walk(&shared, &component, &mut files);
    files.sort();
    let mut out = String::from(
        "/// The Go SDK's files (guest-sdk/go, and guest-sdk/component as component/), by path under the SDK.\nconst GO_SDK: &[(&str, &str)] = &[\n",
    );
    for (relative, absolute) in files {
        out.push_str(&format!("    ({relative:?}, include_str!({absolute:?})),\n"));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("go_sdk.rs");
    std::fs::write(dest, out).expect("write go_sdk.rs");
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "target" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            walk(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            let absolute = path.canonicalize().unwrap_or(path.clone());
            files.push((
                relative.to_string_lossy().into_owned(),
                absolute.to_string_lossy().into_owned(),
            ));
        }
    }
}
