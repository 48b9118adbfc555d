//! Host-side bindings of the `pixgw:psp` world (`plugin-sdk/wit/psp.wit`).
//!
//! `http.send` and the `cache` functions are async on the host so that waiting on a PSP or the
//! database parks the call's fiber instead of blocking a tokio worker; the wasm side still sees
//! plain blocking calls.

wasmtime::component::bindgen!({
    path: "../plugin-sdk/wit",
    world: "adapter",
    imports: {
        "pixgw:psp/http.send": async,
        // The cache may read and write the database.
        "pixgw:psp/cache.get": async,
        "pixgw:psp/cache.set": async,
        "pixgw:psp/cache.delete": async,
        default: tracing,
    },
    exports: { default: async },
    additional_derives: [PartialEq],
});

pub use pixgw::psp::http;
pub use pixgw::psp::types;
