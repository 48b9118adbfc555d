//! pixgw, the gateway.
//!
//! - [`runtime`]: the sandboxed PSP adapters — wasmtime engine, registry with hot reload, and the
//!   host side of the `pixgw:psp` contract (outbound HTTP, cache, crypto, log).
//! - [`api`]: the HTTP surface, one router per module.
//! - [`config`]: operator settings parsed into types.

pub mod api;
pub mod config;
pub mod runtime;
