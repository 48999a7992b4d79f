//! A deliberately broken test plugin: a component that exports `wasm-apiserver:plugin/lister@0.1.1` but not
//! `wasm-apiserver:plugin/scheme@0.1.1`, which every plugin must export. `wasm-apiserver plugin check` and the server
//! must refuse it with a message naming the missing interface (see tests/tests/plugin_check.rs). It imports `host` as a
//! real plugin does (the SDK's bindings map it), but exports only `lister`.

use wasm_apiserver_guest::Error;

wasm_apiserver_guest::bindings!(inline: "
    package example:noscheme;

    world noscheme {
        import wasm-apiserver:plugin/host@0.1.1;
        export wasm-apiserver:plugin/lister@0.1.1;
    }
");

use exports::wasm_apiserver::plugin::lister;

/// The plugin: a lister without a scheme.
pub struct NoScheme;

impl lister::Guest for NoScheme {
    fn selectable_fields(_resource: String) -> Vec<String> {
        Vec::new()
    }

    fn get_attrs(_resource: String, _object: String) -> Result<Vec<(String, String)>, Error> {
        Ok(Vec::new())
    }
}

// The exported symbols have names only a wasm linker accepts; native builds leave them out.
#[cfg(target_arch = "wasm32")]
export!(NoScheme);
