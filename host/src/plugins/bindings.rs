//! Host bindings generated from the WIT contract (`wit/`), world `full-plugin`.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "full-plugin",
});
