//! Host bindings generated from the WIT contract (`wit/`), world `host-view` (`full-plugin` with `create-pipeline`).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "host-view",
});
