//! A deliberately broken test plugin: a component whose export `wasm-apiserver:plugin/lister@0.1.0` has the
//! contract's name but not its signature (`selectable-fields` returns `u32` instead of `list<string>`), while
//! `wasm-apiserver:plugin/scheme@0.1.0` is exported correctly.
//!
//! It exists so that tests (tests/tests/plugin_check.rs) can check that `wasm-apiserver plugin check` and the server
//! refuse a mistyped export with a message naming the interface (and the offending type), instead of loading it or
//! failing on the first call. The guest SDK cannot build it (its WIT is the real contract), so the crate carries its
//! own doctored copy of part of the contract in `wit/` and uses `wit_bindgen::generate!` directly.

/// The generated bindings. The glue wit-bindgen generates is `unsafe` (the SDK's `bindings!` hides this from plugins);
/// the workspace denies `unsafe_code`, so it is allowed here, for the generated code only.
#[allow(unsafe_code)]
mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "mistyped",
    });

    // The exported symbols have names only a wasm linker accepts; native builds leave them out.
    #[cfg(target_arch = "wasm32")]
    use super::Mistyped;
    #[cfg(target_arch = "wasm32")]
    export!(Mistyped);
}

use bindings::exports::wasm_apiserver::plugin::{lister, scheme};
use bindings::wasm_apiserver::plugin::types::Error;

/// The plugin.
pub struct Mistyped;

impl scheme::Guest for Mistyped {
    fn info() -> scheme::PluginInfo {
        scheme::PluginInfo {
            group: "mistyped.example.com".to_owned(),
            resources: vec![scheme::Resource {
                kind: "Widget".to_owned(),
                plural: "widgets".to_owned(),
                singular: "widget".to_owned(),
                short_names: Vec::new(),
                categories: Vec::new(),
                scope: scheme::Scope::Namespaced,
                versions: vec![scheme::Version {
                    name: "v1".to_owned(),
                    served: true,
                    storage: true,
                    deprecated: false,
                    deprecation_warning: None,
                    schema: r#"{"type":"object"}"#.to_owned(),
                }],
            }],
            reads: Vec::new(),
        }
    }
}

impl lister::Guest for Mistyped {
    fn selectable_fields(_resource: String) -> u32 {
        0
    }

    fn get_attrs(_resource: String, _object: String) -> Result<Vec<(String, String)>, Error> {
        Ok(Vec::new())
    }
}
