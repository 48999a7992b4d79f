//! Link options of the server binary.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        // Relative relocations packed as RELR (glibc 2.36, binutils 2.38): the loader reads a few KiB instead of the
        // 2.4 MiB table of ~100,000 entries it used to read at every start, and that stayed resident.
        println!("cargo:rustc-link-arg-bin=wasm-apiserver=-Wl,-z,pack-relative-relocs");
    }
}
