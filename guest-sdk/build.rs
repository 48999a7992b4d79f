//! Bakes the location of the WIT contract into the SDK's bindings and its `bindings!` macro.
//!
//! `wit_bindgen::generate!` resolves relative paths against the manifest directory of the crate that invokes it (the
//! plugin), so the SDK's macro must name the contract by absolute path. A `macro_rules!` macro cannot compute a string
//! literal, hence this script writes the macro (and the SDK's own bindings) with the path filled in.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// The templates, with `"@WIT_DIR@"` standing for the path of the contract.
const TEMPLATES: [(&str, &str); 2] = [
    ("sdk_bindings.rs", include_str!("src/sdk_bindings.rs.in")),
    ("bindings_macro.rs", include_str!("src/bindings_macro.rs.in")),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let wit_dir = wit_dir(&manifest_dir);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/sdk_bindings.rs.in");
    println!("cargo:rerun-if-changed=src/bindings_macro.rs.in");
    println!("cargo:rerun-if-changed={}", wit_dir.display());

    let wit_literal = format!("{:?}", wit_dir.display().to_string());
    for (name, template) in TEMPLATES {
        let source = template.replace("\"@WIT_DIR@\"", &wit_literal);
        fs::write(out_dir.join(name), source).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
    }
}

/// The contract: `wit/` inside the crate when it is packaged on its own, else the workspace's `wit/`.
fn wit_dir(manifest_dir: &Path) -> PathBuf {
    let own = manifest_dir.join("wit");
    let dir = if own.is_dir() {
        own
    } else {
        manifest_dir.join("..").join("wit")
    };
    dir.canonicalize().unwrap_or(dir)
}
