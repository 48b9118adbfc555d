//! Host-side bindings of the `pixgw:psp` world (`wit/psp.wit`).
//!
//! `http.send` is async on the host so that waiting on a PSP parks the call's fiber instead of
//! blocking a tokio worker; the wasm side still sees a plain blocking call.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "adapter",
    imports: {
        "pixgw:psp/http.send": async,
        default: tracing,
    },
    exports: { default: async },
    additional_derives: [PartialEq],
});

pub use pixgw::psp::http;
pub use pixgw::psp::types;
